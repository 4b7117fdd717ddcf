"""``kenning memories …``, ``kenning prune`` and ``kenning forget`` over a real SQLite file."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kenning import Kenning, MemoryInput
from kenning.cli import cli



@pytest.fixture
def db(tmp_path) -> str:
    return str(tmp_path / "kn.db")


@pytest.fixture
def ids(db) -> dict[str, str]:
    with Kenning(db) as kn:
        plain = kn.remember("Alice works at Acme.").memory_ids[0]
        old = kn.remember(MemoryInput(topic="Queue", decisions=["Use Redis"])).memory_ids[0]
        new = kn.remember(MemoryInput(topic="Queue", decisions=["Use Kafka"], supersedes=[old])).memory_ids[0]
        scratch = kn.remember("Bob lives in Paris.", dataset="scratch").memory_ids[0]
    return {"plain": plain, "old": old, "new": new, "scratch": scratch}


def run(db: str, *args: str, input: str | None = None, ok: bool = True):
    result = CliRunner().invoke(cli, ["--db", db, *args], input=input)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def run_json(db: str, *args: str):
    return json.loads(run(db, *args, "--json").stdout)


def test_list_and_show(db, ids) -> None:
    listed = run_json(db, "memories", "list")
    assert {m["id"] for m in listed} == {ids["plain"], ids["old"], ids["new"]}
    assert [m["id"] for m in run_json(db, "memories", "list", "--status", "superseded")] == [ids["old"]]
    assert run_json(db, "memories", "list", "--dataset", "scratch")[0]["id"] == ids["scratch"]
    text = run(db, "memories", "list").output
    assert ids["plain"] in text and "superseded" in text
    shown = run_json(db, "memories", "show", ids["plain"])
    assert shown["memory"]["content"] == "Alice works at Acme."
    assert {e["name"] for e in shown["provenance"]["entities"]} == {"Alice", "Acme"}
    human = run(db, "memories", "show", ids["plain"]).output
    assert "Alice works at Acme." in human and "works_at" in human


def test_update_pin_unpin_chain(db, ids) -> None:
    updated = run_json(db, "memories", "update", ids["plain"], "--content", "Alice works at Globex.",
                       "--metadata", '{"team": "core"}', "--retention", "ephemeral")
    assert updated["content"] == "Alice works at Globex." and updated["metadata"] == {"team": "core"}
    assert updated["retention"] == "ephemeral"
    structured = run_json(db, "memories", "update", ids["new"], "--decision", "Use NATS",
                          "--decision", "Keep Kafka for replay")
    assert structured["decisions"] == ["Use NATS", "Keep Kafka for replay"]
    pinned = run_json(db, "memories", "pin", ids["plain"], "--reason", "audit")
    assert pinned["pinned"] and pinned["pin_reason"] == "audit"
    assert "unpinned" in run(db, "memories", "unpin", ids["plain"]).output
    assert [m["id"] for m in run_json(db, "memories", "chain", ids["new"])] == [ids["old"], ids["new"]]


def test_delete_and_forget(db, ids) -> None:
    deleted = run_json(db, "memories", "delete", ids["plain"])
    assert deleted["memory_ids"] == [ids["plain"]] and len(deleted["entity_ids"]) == 2
    refused = run(db, "forget", "--dataset", "scratch", input="n\n", ok=False)
    assert refused.exit_code != 0
    assert run_json(db, "memories", "list", "--dataset", "scratch")
    assert "forgot 1 memory, " in run(db, "forget", "--dataset", "scratch", input="y\n").output
    assert run_json(db, "memories", "list", "--dataset", "scratch") == []
    assert run(db, "forget", ids["new"], input="n\n", ok=False).exit_code != 0  # asks, like --dataset
    assert ids["new"] in {m["id"] for m in run_json(db, "memories", "list")}
    forgot = run_json(db, "forget", ids["new"], "--yes")
    assert forgot["memory_ids"] == [ids["new"]]
    run(db, "forget", "--everything", "--yes")
    assert run_json(db, "memories", "list") == []


def test_prune_dry_run_then_apply(db, ids) -> None:
    dry = run_json(db, "prune", "--superseded-older-than-days", "0")
    assert dry["dry_run"] and dry["memory_ids"] == [ids["old"]]
    assert "would remove 1 memory, " in run(db, "prune", "--superseded-older-than-days", "0").output
    assert len(run_json(db, "memories", "list")) == 3
    applied = run_json(db, "prune", "--superseded-older-than-days", "0", "--apply")
    assert applied["dry_run"] is False and applied["memory_ids"] == dry["memory_ids"]
    assert len(run_json(db, "memories", "list")) == 2


def test_errors_are_clean(db, ids) -> None:
    for args in (["memories", "show", "mem_missing"], ["memories", "delete", "mem_missing"],
                 ["memories", "pin", "mem_missing"], ["memories", "update", ids["plain"], "--topic", "x"],
                 ["memories", "update", ids["plain"]], ["memories", "update", ids["plain"], "--metadata", "{"],
                 ["forget"], ["forget", ids["plain"], "--everything"]):
        result = run(db, *args, ok=False)
        assert result.exit_code == 1, args
        assert result.output.startswith("error: ") and "Traceback" not in result.output, args
    assert "no memory 'mem_missing'" in run(db, "memories", "show", "mem_missing", ok=False).output
