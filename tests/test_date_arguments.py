"""One date parser for every date argument on every surface (issue 15 item 4, issue 12 item 9):
the same forms are accepted for valid_at, as_of, known_at and retention_until, phrases are read
against the engine's clock, and dates outside the range give a typed error, never a traceback."""

from __future__ import annotations

import datetime as dt
import json

import anyio
import httpx
import pytest
from click.testing import CliRunner

from kenning import Kenning
from kenning.cli import cli
from kenning.errors import ValidationError

UTC = dt.timezone.utc
EDGES = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"]


def day(year: int, month: int = 1, date: int = 1) -> dt.datetime:
    return dt.datetime(year, month, date, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2024-06-01", day(2024, 6, 1)), ("2024-06", day(2024, 6, 1)), ("2024", day(2024)),
     ("June 2024", day(2024, 6, 1)), ("last year", day(2019)), ("last week", day(2020, 6, 8)),
     ("3 days ago", day(2020, 6, 15)), ("2024-06-01T12:00:00+02:00", dt.datetime(2024, 6, 1, 10, tzinfo=UTC))],
)
def test_every_date_argument_reads_the_same_forms_against_the_engine_clock(tmp_path, clock, text, expected):
    clock.set("2020-06-18T09:00:00")
    with Kenning(str(tmp_path / "d.db"), clock=clock) as kn:
        mid = kn.remember("Alice works at Acme.", valid_at=text).memory_ids[0]
        assert kn.get(mid).valid_at == expected
        result = kn.recall("Alice", as_of=text, known_at=text)
        assert (result.as_of, result.known_at) == (expected, expected)
        assert kn.update(mid, retention_until=text).retention_until == expected
        assert kn.add("Bob lives in Paris.", valid_at=text) and kn.remember(
            "Bob lives in Paris.", valid_at=text, dry_run=True).dry_run


def test_structured_retention_until_uses_the_same_parser(tmp_path, clock):
    clock.set("2020-06-18T09:00:00")
    with Kenning(str(tmp_path / "d.db"), clock=clock) as kn:
        mid = kn.remember({"topic": "Use SQLite", "retention_until": "next year"}).memory_ids[0]
        assert kn.get(mid).retention_until == day(2021)


@pytest.mark.parametrize("value", [*EDGES, "soonish", "2024-13", 5, ""])
def test_bad_dates_are_validation_errors_naming_the_argument(tmp_path, value):
    with Kenning(str(tmp_path / "d.db")) as kn:
        mid = kn.remember("Alice works at Acme.").memory_ids[0]
        for name, call in [
            ("valid_at", lambda: kn.remember("Carol lives in Rome.", valid_at=value)),
            ("valid_at", lambda: kn.remember("Carol lives in Rome.", valid_at=value, dry_run=True)),
            ("as_of", lambda: kn.recall("Alice", as_of=value)),
            ("known_at", lambda: kn.recall("Alice", known_at=value)),
            ("retention_until", lambda: kn.update(mid, retention_until=value)),
        ]:
            with pytest.raises(ValidationError) as info:
                call()
            assert name in info.value.message
        assert kn.stats().memories == 1  # nothing was stored by a rejected call


@pytest.mark.parametrize("value", [dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=14)))])
def test_edge_datetime_objects_are_validation_errors(tmp_path, value):
    with Kenning(str(tmp_path / "d.db")) as kn, pytest.raises(ValidationError, match="outside"):
        kn.recall("Alice", as_of=value)


@pytest.mark.parametrize("edge", EDGES)
def test_cli_edge_dates_exit_1_without_traceback(tmp_path, edge):
    db = str(tmp_path / "c.db")
    for args in (["remember", "Alice works at Acme.", "--valid-at", edge],
                 ["recall", "Alice", "--as-of", edge], ["recall", "Alice", "--known-at", edge]):
        result = CliRunner().invoke(cli, ["--db", db, *args])
        assert result.exit_code == 1, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert "outside the supported range" in result.output


def test_cli_reads_partial_and_natural_dates(tmp_path):
    db = str(tmp_path / "c.db")
    result = CliRunner().invoke(cli, ["--db", db, "remember", "Alice works at Acme.", "--valid-at", "2024-06"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["--db", db, "recall", "Alice", "--as-of", "June 2024", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["as_of"].startswith("2024-06-01T00:00:00")


def test_http_edge_and_partial_dates(tmp_path):
    pytest.importorskip("fastapi")
    from tests.server_util import running

    with running(str(tmp_path / "h.db"), auth=False) as (_kn, base), httpx.Client(base_url=base) as c:
        for edge in EDGES:
            for path, body in (("/v1/remember", {"content": "Alice works at Acme.", "valid_at": edge}),
                               ("/v1/recall", {"query": "Alice", "as_of": edge}),
                               ("/v1/recall", {"query": "Alice", "known_at": edge})):
                resp = c.post(path, json=body)
                assert resp.status_code == 422, resp.text
                assert resp.json()["error"]["code"] == "validation_error"
        resp = c.post("/v1/remember", json={"content": "Alice works at Acme.", "valid_at": "2024-06"})
        assert resp.status_code == 200, resp.text
        mid = resp.json()["memory_ids"][0]
        resp = c.patch(f"/v1/memories/{mid}", json={"retention_until": "June 2030"})
        assert resp.status_code == 200, resp.text
        assert resp.json()["retention_until"].startswith("2030-06-01")
        resp = c.post("/v1/recall", json={"query": "Alice", "as_of": 1700000000})
        assert resp.status_code == 422  # a number is not one of the documented forms


def test_mcp_edge_dates_are_typed_errors(tmp_path):
    pytest.importorskip("mcp")
    from kenning.mcp import build_server
    from kenning.mcp.server import ToolError

    with Kenning(str(tmp_path / "m.db")) as kn:
        server = build_server(kn, auth=False)

        async def main() -> str:
            with pytest.raises(ToolError) as info:
                await server.call_tool("recall", {"query": "Alice", "as_of": EDGES[0]})
            return str(info.value)

        assert "validation_error" in anyio.run(main)
