"""The public API, once embedded and once through ``kenning serve``: every test that takes the
``api`` fixture runs against ``Kenning(path)`` and against ``Kenning("http://127.0.0.1:…",
api_key=…)`` speaking to a real uvicorn server on 127.0.0.1 (``tests/server_util.py``) over the
same kind of store, with the same clock. The remote client's own behaviour (typed errors for
the server's codes, retries, timeouts) follows."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

pytest.importorskip("fastapi")

from kenning import (
    AsyncKenning,
    AuthenticationError,
    ConfigurationError,
    ForgetResult,
    Kenning,
    Memory,
    MemoryInput,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    RecallResult,
    StoreError,
    ValidationError,
)
from kenning.remote import ROUTES
from kenning.requests import VERBS, VerbRequest
from kenning.server import create_app
from tests.server_util import add_user, free_port, serve

DAY = dt.timedelta(days=1)


@contextmanager
def served(path: str, clock, *, admin: bool = True, **settings) -> Iterator[tuple[Kenning, str, str]]:  # noqa: ANN001
    """A ``Kenning`` on ``path`` behind a real server with auth on; yields (kn, base URL, a key)."""
    with Kenning(path, clock=clock, **settings) as kn:
        key = add_user(kn, "alice", admin=admin)
        with serve(create_app(kn, auth=True)) as base:
            yield kn, base, key


@pytest.fixture(params=["embedded", "remote"])
def api(request, tmp_path, clock) -> Iterator[Kenning]:  # noqa: ANN001
    """The facade, embedded or remote: the same verbs must give the same results."""
    path = str(tmp_path / "api.db")
    if request.param == "embedded":
        with Kenning(path, clock=clock) as kn:
            yield kn
        return
    with served(path, clock) as (_, base, key), Kenning(base, api_key=key, remote_retries=0) as kn:
        yield kn


# -- the verbs, both ways --------------------------------------------------------------------
def test_remember_recall_get_list_stats_timeline_datasets(api: Kenning) -> None:
    result = api.remember("Alice works at Acme since 2020.", valid_at="2024-01-01")
    api.remember("Bob lives in Paris.", dataset="other")
    assert result.facts_created == 1 and len(result.memory_ids) == 1
    [memory_id] = result.memory_ids
    recalled = api.recall("Where does Alice work?", top_k=3)
    assert isinstance(recalled, RecallResult)
    hit = recalled.hits[0]
    assert (hit.kind, hit.text, hit.target, hit.memory_ids) == ("fact", "Alice works at Acme since 2020.",
                                                                "Acme", [memory_id])
    assert hit.valid_at == dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    memory = api.get(memory_id)
    assert isinstance(memory, Memory) and memory.content == "Alice works at Acme since 2020."
    assert memory.valid_at == dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    assert [m.id for m in api.list()] == [memory_id]
    assert api.list(dataset="other", kind="note") == []
    stats = api.stats("main")
    assert (stats.memories, stats.facts, stats.entities) == (1, 1, 2)
    assert api.stats().memories == 2
    timeline = api.timeline("Alice")
    assert timeline.entity.name == "Alice" and [f.target for f in timeline.facts] == ["Acme"]
    assert sorted(api.datasets()) == ["main", "other"]


def test_update_provenance_chain_and_supersession(api: Kenning, clock) -> None:  # noqa: ANN001
    old = api.remember(MemoryInput(topic="Editor", decisions=["Use vim"])).memory_ids[0]
    clock.advance(days=1)
    new = api.remember({"topic": "Editor", "decisions": ["Use emacs"], "supersedes": [old]}).memory_ids[0]
    assert [m.id for m in api.chain(old)] == [old, new]
    assert api.get(old).status == "superseded"
    mid = api.remember("Carol lives in Rome.").memory_ids[0]
    assert {e.name for e in api.provenance(mid).entities} == {"Carol", "Rome"}
    updated = api.update(mid, content="Carol lives in Madrid.", metadata={"team": "core"})
    assert updated.content == "Carol lives in Madrid." and updated.metadata == {"team": "core"}
    assert {e.name for e in api.provenance(mid).entities} == {"Carol", "Madrid"}
    assert api.update(mid, valid_at=dt.datetime(2023, 5, 1, tzinfo=dt.UTC)).valid_at.year == 2023
    assert api.update(mid, valid_at=dt.date(2022, 5, 1)).valid_at == dt.datetime(2022, 5, 1, tzinfo=dt.UTC)


def test_pin_unpin_prune(api: Kenning, clock) -> None:  # noqa: ANN001
    kept = api.remember("Dave manages the Berlin office.").memory_ids[0]
    gone = api.remember("Erin likes tea.").memory_ids[0]
    pinned = api.pin(kept, "keep")
    assert pinned.pinned and pinned.pin_reason == "keep"
    assert [m.id for m in api.list(pinned=True)] == [kept]
    clock.advance(days=400)
    assert api.prune(max_age_days=30).memory_ids == [gone]  # dry run by default
    assert api.get(gone).status == "active"
    result = api.prune(max_age_days=30, dry_run=False)
    assert (result.dry_run, result.memory_ids) == (False, [gone])
    assert api.unpin(kept).pinned is False
    assert api.prune(max_age_days=30).memory_ids == [kept]


def test_add_cognify_improve_feedback(api: Kenning, clock) -> None:  # noqa: ANN001
    ids = api.add(["Alice likes jazz.", "Alice likes tea."])
    assert len(ids) == 2 and api.get(ids[0]).status == "pending"
    assert sorted(api.cognify().processed) == sorted(ids)
    api.add("Bob lives in Oslo.", dataset="later")
    improved = api.improve(dataset="later")
    assert len(improved.processed) == 1
    hits = api.recall("What does Alice like?", search_type="facts").hits
    weight = api.feedback(hits[1].id, helpful=True)
    assert isinstance(weight, float) and weight > 1
    again = api.recall("What does Alice like?", search_type="facts").hits
    assert again[0].id == hits[1].id


def test_forget_and_delete(api: Kenning) -> None:
    one = api.remember("Frank lives in Lyon.").memory_ids[0]
    two = api.remember("Grace lives in Oslo.").memory_ids[0]
    api.remember("Henry lives in Kyiv.", dataset="scratch")
    assert api.delete(one).memory_ids == [one]
    forgotten = api.forget(two)
    assert isinstance(forgotten, ForgetResult) and forgotten.memory_ids == [two] and len(forgotten.fact_ids) == 1
    assert len(api.forget(dataset="scratch").memory_ids) == 1
    assert api.datasets() in ([], ["main"], ["main", "scratch"])  # the server lists owned, empty datasets
    assert api.stats().memories == 0
    api.remember("Ivan lives in Toronto.")
    assert len(api.forget(everything=True).memory_ids) == 1


def test_typed_errors_are_the_same(api: Kenning) -> None:
    with pytest.raises(NotFoundError, match="mem_missing"):
        api.get("mem_missing")
    with pytest.raises(NotFoundError):
        api.pin("mem_missing")
    with pytest.raises(ValidationError, match="exactly one"):
        api.forget()
    with pytest.raises(ValidationError, match="mem_missing"):  # the engine's own check, behind a 422
        api.remember(MemoryInput(topic="Bad", supersedes=["mem_missing"]))
    with pytest.raises(ValidationError):
        api.recall("x", top_k=0)
    with pytest.raises(ValidationError):
        api.remember("Alice.", valid_at="not a date at all")
    assert api.stats().memories == 0  # nothing stored by the refused calls


def test_async_facade_both_ways(api: Kenning) -> None:
    url, key = api.settings.db, api.settings.api_key  # the same store or server

    async def run() -> tuple[list[str], str]:
        async with AsyncKenning(url, api_key=key.get_secret_value() if key else None) as akn:
            ids = (await akn.remember("Alice works at Acme.", dataset="async")).memory_ids
            results = await asyncio.gather(*(akn.recall("Alice", dataset="async") for _ in range(4)))
            with pytest.raises(NotFoundError):
                await akn.get("mem_missing")
            return ids, results[-1].hits[0].target

    ids, target = asyncio.run(run())
    assert len(ids) == 1 and target == "Acme"


# -- the remote client itself ----------------------------------------------------------------
def test_every_verb_has_a_route_the_server_serves(tmp_path) -> None:  # noqa: ANN001
    assert set(ROUTES) == set(VERBS.values())
    with Kenning(str(tmp_path / "spec.db")) as kn:
        spec = create_app(kn, auth=False).openapi()
    for model, route in ROUTES.items():
        assert route.method.lower() in spec["paths"][route.path], (model.__name__, route)


def test_wrong_key_missing_key_and_other_users(tmp_path, clock) -> None:  # noqa: ANN001
    with served(str(tmp_path / "keys.db"), clock, admin=False) as (kn, base, key):
        with Kenning(base, api_key=key) as alice:
            mid = alice.remember("Alice works at Acme.", dataset="alices").memory_ids[0]
        for wrong in ("kn_wrong", None):
            with Kenning(base, api_key=wrong) as client, pytest.raises(AuthenticationError) as caught:
                client.stats()
            assert caught.value.details["status"] == 401
        bob_key = add_user(kn, "bob")
        with Kenning(base, api_key=bob_key) as bob:
            with pytest.raises(NotFoundError):  # another user's memory is "not found"
                bob.get(mid)
            with pytest.raises(PermissionDeniedError, match="admin"):
                bob.forget(everything=True)
            assert bob.datasets() == []


def test_the_cli_speaks_to_a_server(tmp_path, clock, monkeypatch) -> None:  # noqa: ANN001
    from click.testing import CliRunner

    from kenning.cli import cli

    with served(str(tmp_path / "cli.db"), clock) as (kn, base, key):
        monkeypatch.setenv("KENNING_API_KEY", key)
        runner = CliRunner()
        assert runner.invoke(cli, ["--db", base, "remember", "Alice works at Acme."]).exit_code == 0
        recalled = runner.invoke(cli, ["--db", base, "recall", "Where does Alice work?"])
        assert "Alice works at Acme." in recalled.output
        assert kn.stats().memories == 1  # stored by the server
        monkeypatch.setenv("KENNING_API_KEY", "kn_wrong")
        refused = runner.invoke(cli, ["--db", base, "stats"])
        assert refused.exit_code == 1 and "invalid or revoked API key" in refused.output


def test_rate_limit_carries_retry_after(tmp_path, clock) -> None:  # noqa: ANN001
    with served(str(tmp_path / "rate.db"), clock, write_chars_per_minute=30) as (_, base, key):
        with Kenning(base, api_key=key) as client:
            client.remember("Alice works at Acme.")
            with pytest.raises(RateLimitedError) as caught:
                client.remember("Bob works at Initech in Lyon.")
    assert caught.value.details["retry_after"] >= 1


def test_a_remote_kenning_takes_no_collaborators_and_has_no_store(tmp_path, clock, monkeypatch) -> None:  # noqa: ANN001
    with pytest.raises(ConfigurationError, match="clock"):
        Kenning("http://127.0.0.1:9", clock=clock)
    monkeypatch.setenv("KENNING_DB", "http://127.0.0.1:9/")
    monkeypatch.setenv("KENNING_API_KEY", "kn_secret")
    with Kenning() as kn:  # the db setting names a server
        assert kn.settings.api_key.get_secret_value() == "kn_secret"
        with pytest.raises(ConfigurationError, match="no local store"):
            kn.store  # noqa: B018
        assert "kn_secret" not in repr(kn.settings)


def test_what_a_remote_kenning_cannot_do_is_a_typed_error(tmp_path, clock) -> None:  # noqa: ANN001
    with served(str(tmp_path / "limits.db"), clock) as (_, base, key), Kenning(base, api_key=key) as client:
        with pytest.raises(ValidationError, match="dataset: None cannot be sent"):
            client.list(dataset=None)  # every dataset at once: embedded only
        unrouted = type("ContextRequest", (VerbRequest,), {"__doc__": "A verb without a route."})
        with pytest.raises(ConfigurationError, match="ContextRequest has no HTTP route"):
            client._remote.call(unrouted, {})
        with pytest.raises(ConfigurationError, match="beside the server"):
            Kenning.reembed(base)


def test_an_answer_in_another_shape_is_a_typed_error() -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = b'{"memories": "not this version"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # noqa: ANN002
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with Kenning(f"http://127.0.0.1:{server.server_port}") as client:
            with pytest.raises(ConfigurationError, match="another kenning version"):
                client.stats()
            with pytest.raises(ConfigurationError, match="another kenning version"):
                client.list()
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()


@contextmanager
def dropping_server() -> Iterator[tuple[str, list[int]]]:
    """A TCP server that accepts each connection and closes it without answering; yields its
    URL and the list of connections it accepted."""
    sock = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []
    stop = threading.Event()

    def loop() -> None:
        sock.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            accepted.append(1)
            conn.recv(65536)
            conn.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join(5)
        sock.close()


def test_a_dropped_connection_is_retried_for_idempotent_verbs_only() -> None:
    with dropping_server() as (url, accepted), Kenning(url, remote_retries=2) as client:
        with pytest.raises(StoreError, match="after 3 attempts") as caught:
            client.get("mem_1")
        assert (len(accepted), caught.value.details["attempts"]) == (3, 3)
        with pytest.raises(StoreError, match="after 3 attempts"):
            client.recall("Alice")  # a POST, but a read
        accepted.clear()
        with pytest.raises(StoreError) as caught:
            client.remember("Alice works at Acme.")  # the server may have stored it: not resent
        assert (len(accepted), caught.value.details["attempts"]) == (1, 1)


def test_a_refused_connection_is_retried_until_the_server_is_up(tmp_path, clock) -> None:  # noqa: ANN001
    import uvicorn

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with Kenning(url, remote_retries=1) as client:
        with pytest.raises(StoreError, match="ConnectError.*after 2 attempts"):
            client.remember("Alice works at Acme.")  # nothing was sent: safe to retry any verb
    with Kenning(str(tmp_path / "late.db"), clock=clock) as kn:
        server = uvicorn.Server(uvicorn.Config(create_app(kn, auth=False), host="127.0.0.1", port=port,
                                               log_level="warning"))
        thread = threading.Thread(target=lambda: (time.sleep(0.4), server.run()), daemon=True)
        thread.start()
        try:
            with Kenning(url, remote_retries=6) as client:
                result = client.remember("Alice works at Acme.")  # refused at first, then served
                assert client.get(result.memory_ids[0]).content == "Alice works at Acme."
        finally:
            server.should_exit = True
            thread.join(10)


def test_a_silent_server_times_out_without_retrying() -> None:
    sock = socket.create_server(("127.0.0.1", 0))  # accepts (the kernel's backlog) and never answers
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with Kenning(url, remote_timeout=0.3, remote_retries=3) as client:
            with pytest.raises(StoreError, match="no answer within 0.3 s") as caught:
                client.get("mem_1")
            assert caught.value.details["attempts"] == 1  # a timeout is not retried
    finally:
        sock.close()
