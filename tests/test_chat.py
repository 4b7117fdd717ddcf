"""Agent memory the way agents talk (issue 16), through the verbs: ``remember(messages, user=,
agent=, session=)``, scoped ``recall`` / ``list`` / ``forget`` with metadata ``filters``,
sessions (``recall(session=)``, ``sessions``, ``improve(session=)``) and ``context``; on both
stores, with and without a model (the fake OpenAI server), and the typed errors of bad input
on every surface (Python, HTTP, MCP, CLI)."""

from __future__ import annotations

import json
import re

import anyio
import httpx
import pytest
from click.testing import CliRunner

from kenning import Kenning, Message
from kenning.cli import cli
from kenning.errors import ValidationError
from tests.fakeopenai import FakeOpenAI

CHAT = [
    {"role": "user", "content": "I moved to Paris.", "created_at": "2023-12-20T09:00:00Z"},
    {"role": "assistant", "content": "How do you like it?"},
    {"role": "user", "content": "I joined Globex in March."},
]


def _facts(kn: Kenning, **scope: object) -> set[tuple[str, str, str]]:
    """The facts a scope's memories state, current or not."""
    context = kn.context(**scope, max_tokens=100_000)
    return {(f.source, f.relation, f.target) for f in context.facts + context.history}


# -- messages in --------------------------------------------------------------------------------
def test_a_chat_becomes_ordered_message_memories_and_first_person_facts_of_the_speaker(kn: Kenning, clock) -> None:  # noqa: ANN001
    result = kn.remember(CHAT, user="Alice", agent="Ken", session="s1")
    assert result.errors == [] and len(result.memory_ids) == 3
    stored = sorted(kn.list(session="s1"), key=lambda m: m.position)
    assert [(m.kind, m.role, m.speaker, m.position, m.user, m.agent) for m in stored] == [
        ("message", "user", "Alice", 0, "Alice", "Ken"),
        ("message", "assistant", "Ken", 1, "Alice", "Ken"),
        ("message", "user", "Alice", 2, "Alice", "Ken"),
    ]
    assert stored[0].valid_at.isoformat().startswith("2023-12-20T09:00")
    assert stored[1].valid_at == clock()  # no created_at: the call's time
    assert {("Alice", "lives_in", "Paris"), ("Alice", "works_at", "Globex")} <= _facts(kn, user="Alice")
    # the next call continues the session's positions (one Message is a chat of one turn)
    kn.remember(Message(role="user", content="I live in Lyon now."), user="Alice", session="s1")
    assert max(m.position for m in kn.list(session="s1")) == 3
    assert ("Alice", "lives_in", "Lyon") in _facts(kn, user="Alice")


def test_the_same_words_of_two_users_are_two_memories(kn: Kenning) -> None:
    first = kn.remember("I like green tea.", user="alice")
    second = kn.remember("I like green tea.", user="bob")
    again = kn.remember("I like green tea.", user="alice")
    assert first.memory_ids != second.memory_ids and again.memory_ids == first.memory_ids
    assert [m.user for m in kn.list(user="bob")] == ["bob"]


def test_with_a_model_one_call_reads_the_turns_with_their_speakers(tmp_path, fake_openai: FakeOpenAI) -> None:  # noqa: ANN001
    def answer(request: dict) -> dict:  # the fact of the first turn (the document that says Paris)
        text = request["messages"][-1]["content"]
        first = re.search(r'<document id="(\w+)"[^>]*>\nAlice: I moved to Paris', text).group(1)
        return {"documents": [{"document": first, "entities": [], "facts": [
            {"source": "Alice", "relation": "lives_in", "target": "Paris", "sentence": "I moved to Paris.",
             "valid_at": None, "invalid_at": None, "ends": False}]}]}

    fake_openai.chat_responder = answer
    with Kenning(str(tmp_path / "m.db"), llm="gpt-4o-mini", llm_base_url=fake_openai.base_url,
                 llm_api_key="sk-test", embedder="openai:text-embedding-3-small", embedding_dimensions=64) as kn:
        result = kn.remember(CHAT, user="Alice", agent="Ken", session="s1")
        assert result.errors == [] and result.facts_created == 1
        calls = [r for r in fake_openai.chat_requests]
        assert len(calls) == 1  # the three turns share one extraction call
        sent = json.dumps(calls[0].json)
        assert "Alice: I moved to Paris." in sent and "Ken: How do you like it?" in sent
        assert "Alice: I joined Globex in March." in sent
        assert ("Alice", "lives_in", "Paris") in _facts(kn, user="Alice")
        assert "<context>" not in sent  # the session's first turns: nothing before them
        # a follow-up turn is shown the turns before it, to read, not to extract from
        fake_openai.chat_responder = lambda request: {"entities": [], "facts": []}
        kn.remember([{"role": "user", "content": "Yes, the one near the station."}], user="Alice", session="s1")
        follow_up = fake_openai.chat_requests[-1].json["messages"]
        assert ("<context>\nAlice: I moved to Paris.\nKen: How do you like it?\nAlice: I joined Globex in March."
                "\n</context>\n<document") in follow_up[-1]["content"]
        assert "extract nothing that only the context states" in follow_up[0]["content"]


# -- scopes and filters -------------------------------------------------------------------------
def test_recall_and_list_narrow_to_a_user_session_and_metadata(kn: Kenning) -> None:
    kn.remember([{"role": "user", "content": "I live in Paris."}], user="alice", session="a1",
                metadata={"channel": "web", "priority": 3})
    kn.remember([{"role": "user", "content": "I live in Rome."}], user="bob", session="b1",
                metadata={"channel": "sms", "priority": 1})
    everyone = {h.text for h in kn.recall("where does who live", top_k=20).hits}
    assert any("Paris" in t for t in everyone) and any("Rome" in t for t in everyone)
    for scope in ({"user": "alice"}, {"session": "a1"}, {"filters": {"channel": "web"}},
                  {"filters": {"priority": {"gte": 2}}}, {"filters": {"channel": {"in": ["web", "x"]}}}):
        texts = {h.text for h in kn.recall("where does who live", top_k=20, **scope).hits}
        assert texts and not any("Rome" in t for t in texts), scope
        assert {m.user for m in kn.list(**scope)} == {"alice"}, scope
    with pytest.raises(ValidationError, match="operator"):
        kn.recall("live", filters={"priority": {"gt": 1}})
    with pytest.raises(ValidationError, match="operator"):
        kn.list(filters={"priority": {"gt": 1}})


def test_forget_a_user_removes_what_only_their_messages_stated(kn: Kenning) -> None:
    kn.remember([{"role": "user", "content": "I live in Paris."}], user="Alice", session="a1")
    kn.remember([{"role": "user", "content": "I live in Rome."}, {"role": "user", "content": "Alice lives in Paris."}],
                user="Bob", session="b1")
    result = kn.forget(user="Bob")
    assert len(result.memory_ids) == 2 and result.fact_ids
    assert kn.list(user="Bob") == [] and [s.id for s in kn.sessions()] == ["a1"]
    assert _facts(kn) == {("Alice", "lives_in", "Paris")}  # also stated by Alice's own turn: kept
    assert kn.list(user="Alice")
    with pytest.raises(ValidationError, match="exactly one"):
        kn.forget("mem_x", user="Bob")


# -- sessions -----------------------------------------------------------------------------------
def test_a_sessions_latest_turns_are_there_before_extraction_and_improve_processes_one_session(kn: Kenning) -> None:
    kn.remember(CHAT[:2], user="Alice", agent="Ken", session="s1")
    kn.add([{"role": "user", "content": "I joined Globex in March."}], user="Alice", session="s1")
    kn.add([{"role": "user", "content": "I live in Rome."}], user="Bob", session="s2")
    result = kn.recall("Globex", session="s1")
    assert [m.content for m in result.messages] == [m["content"] for m in CHAT]
    assert result.messages[-1].status == "pending"
    context = kn.context(session="s1")
    assert "Alice: I joined Globex in March." in context.text  # pending, yet in the prompt
    assert [(s.id, s.user, s.messages) for s in kn.sessions(user="Alice")] == [("s1", "Alice", 3)]
    assert {s.id for s in kn.sessions()} == {"s1", "s2"}
    improved = kn.improve(session="s1")
    assert len(improved.processed) == 1
    assert [m.status for m in kn.list(session="s2")] == ["pending"]  # another session waits
    assert ("Alice", "works_at", "Globex") in _facts(kn, session="s1")


# -- context ------------------------------------------------------------------------------------
def test_context_shows_the_new_fact_as_current_the_old_one_as_history_within_its_budget(kn: Kenning, clock) -> None:  # noqa: ANN001
    kn.remember([{"role": "user", "content": "I live in Paris."}], user="Alice", session="s1")
    clock.advance(days=30)
    kn.remember([{"role": "user", "content": "I live in Lyon now."}], user="Alice", session="s1")
    context = kn.context("where does Alice live?", user="Alice", session="s1")
    current = context.text.split("# Entities")[0]
    assert "Alice lives in Lyon (since" in current and "Paris" not in current
    assert [f.target for f in context.history] == ["Paris"]
    assert context.evidence and context.tokens <= context.max_tokens == 1500
    small = kn.context("where does Alice live?", user="Alice", session="s1", max_tokens=60)
    assert small.tokens <= 60 and small.omitted > 0
    assert "Lyon" in small.text  # current facts come first
    with pytest.raises(ValidationError, match="max_tokens"):
        kn.context(max_tokens=5)


# -- bad input, every surface -------------------------------------------------------------------
BAD = [
    ([{"role": "user"}], "messages[0] has no content"),
    ([{"role": "robot", "content": "hi"}], "messages[0] has role 'robot'"),
    ([{"role": "user", "content": "hi"}, {"role": "user", "content": "x", "created_at": "the other day-ish"}],
     "messages[1].created_at"),
]


@pytest.mark.parametrize(("messages", "words"), BAD)
def test_bad_messages_are_typed_errors_in_python_and_the_cli(tmp_path, messages, words) -> None:  # noqa: ANN001
    db = str(tmp_path / "m.db")
    with Kenning(db) as kn:
        with pytest.raises(ValidationError, match=words.replace("[", r"\[").replace("]", r"\]")):
            kn.remember(messages, user="alice")
        assert kn.list() == []  # nothing stored
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(messages))
    result = CliRunner().invoke(cli, ["--db", db, "remember", "--messages", str(chat)])
    assert result.exit_code == 1 and words in result.output


def test_bad_input_is_a_validation_error_over_http_and_mcp(tmp_path) -> None:  # noqa: ANN001
    pytest.importorskip("fastapi")
    pytest.importorskip("mcp")
    from kenning.mcp import build_server
    from kenning.mcp.server import ToolError
    from tests.server_util import running

    with running(str(tmp_path / "h.db"), auth=False) as (kn, base):
        for messages, words in BAD:
            resp = httpx.post(f"{base}/v1/remember", json={"content": messages, "user": "alice"})
            assert resp.status_code == 422 and words in resp.json()["error"]["message"], resp.text
        resp = httpx.post(f"{base}/v1/recall", json={"query": "x", "filters": {"a": {"near": 1}}})
        assert resp.status_code == 422 and "operator" in resp.json()["error"]["message"], resp.text
        resp = httpx.get(f"{base}/v1/memories", params={"filters": json.dumps({"a": {"near": 1}})})
        assert resp.status_code == 422 and "operator" in resp.json()["error"]["message"], resp.text
        server = build_server(kn, auth=False)

        async def error(tool: str, args: dict) -> dict:
            with pytest.raises(ToolError) as info:
                await server.call_tool(tool, args)
            text = str(info.value)
            return json.loads(text[text.index("{"):])["error"]

        async def refused(args: dict) -> str:
            with pytest.raises(ToolError) as info:  # the SDK checks a tool's arguments first
                await server.call_tool("remember", args)
            return str(info.value)

        for messages, words in BAD:
            assert words in anyio.run(refused, {"content": messages})
        found = anyio.run(error, "recall", {"query": "x", "filters": {"a": {"near": 1}}})
        assert found["code"] == "validation_error" and "operator" in found["message"]


# -- the surfaces -------------------------------------------------------------------------------
def test_http_mcp_and_cli_remember_a_chat_and_give_context_and_sessions(tmp_path) -> None:  # noqa: ANN001
    pytest.importorskip("fastapi")
    pytest.importorskip("mcp")
    from kenning.mcp import build_server
    from tests.server_util import running

    with running(str(tmp_path / "h.db"), auth=False) as (kn, base):
        resp = httpx.post(f"{base}/v1/remember", json={"content": CHAT, "user": "Alice", "session": "s1"})
        assert resp.status_code == 200 and len(resp.json()["memory_ids"]) == 3, resp.text
        resp = httpx.post(f"{base}/v1/context", json={"query": "Where does Alice live?", "user": "Alice",
                                                      "session": "s1"})
        assert resp.status_code == 200 and "Alice lives in Paris" in resp.json()["text"], resp.text
        resp = httpx.get(f"{base}/v1/sessions", params={"user": "Alice"})
        assert [s["id"] for s in resp.json()] == ["s1"]
        server = build_server(kn, auth=False)

        async def call(tool: str, args: dict) -> dict:
            return (await server.call_tool(tool, args)).structured_content

        anyio.run(call, "remember", {"content": [{"role": "user", "content": "I live in Rome."}],
                                     "user": "Bob", "session": "s2"})
        assert "Bob lives in Rome" in anyio.run(call, "context", {"user": "Bob"})["text"]
        assert anyio.run(call, "forget", {"user": "Bob"})["memory_ids"]
    db = str(tmp_path / "c.db")
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(CHAT))
    runner = CliRunner()
    out = runner.invoke(cli, ["--db", db, "remember", "--messages", str(chat), "--user", "Alice", "--session", "s1"])
    assert out.exit_code == 0 and "remembered 3 memories" in out.output, out.output
    out = runner.invoke(cli, ["--db", db, "context", "--user", "Alice", "--session", "s1"])
    assert out.exit_code == 0 and "Alice lives in Paris" in out.output and "# Recent messages" in out.output
    out = runner.invoke(cli, ["--db", db, "sessions", "--user", "Alice"])
    assert out.exit_code == 0 and out.output.startswith("s1  3 messages")
    out = runner.invoke(cli, ["--db", db, "memories", "list", "--session", "s1", "--filters", '{"x": 1}'])
    assert out.exit_code == 0 and out.output == ""
    out = runner.invoke(cli, ["--db", db, "recall", "Paris", "--user", "Alice", "--filters", "{nope"])
    assert out.exit_code == 1 and "--filters is not JSON" in out.output
    out = runner.invoke(cli, ["--db", db, "forget", "--user", "Alice", "--yes"])
    assert out.exit_code == 0 and "forgot 3 memories" in out.output


def test_the_remote_client_speaks_the_chat_verbs(tmp_path, clock) -> None:  # noqa: ANN001
    pytest.importorskip("fastapi")
    from kenning.server import create_app
    from tests.server_util import serve

    with Kenning(str(tmp_path / "r.db"), clock=clock) as kn, serve(create_app(kn, auth=False)) as base, \
            Kenning(base, remote_retries=0) as remote:
        remote.remember(CHAT, user="Alice", agent="Ken", session="s1", metadata={"channel": "web"})
        remote.add([{"role": "user", "content": "I live in Rome."}], user="Bob", session="s2",
                   metadata={"channel": "sms"})
        assert [s.id for s in remote.sessions(user="Alice")] == ["s1"]
        assert {m.user for m in remote.list(filters={"channel": {"in": ["sms"]}})} == {"Bob"}
        assert remote.recall("Paris", session="s1").messages[-1].content == CHAT[-1]["content"]
        assert "Alice lives in Paris" in remote.context("Where does Alice live?", user="Alice").text
        assert remote.improve(session="s2").processed
        assert len(remote.forget(user="Bob").memory_ids) == 1
        with pytest.raises(ValidationError, match="operator"):
            remote.recall("x", filters={"a": {"near": 1}})
        with pytest.raises(ValidationError, match="has no content"):
            remote.remember([{"role": "user"}])


def test_the_readme_chat_example_runs_offline(capsys) -> None:  # noqa: ANN001
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## Chat agents", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - the documented example, as written
    out = capsys.readouterr().out
    assert "# Facts valid now" in out and "- Alice lives in Paris (since 2021-01-01)" in out
    assert "Alice: I live in Lyon now." in out  # pending, already in the block
    assert "('Alice', 'lives_in', 'Lyon')" in out and "[('s1', 4)]" in out


def test_files_take_no_chat_scope(tmp_path) -> None:  # noqa: ANN001
    from pathlib import Path

    note = tmp_path / "note.txt"
    note.write_text("Alice works at Acme.")
    with Kenning(str(tmp_path / "f.db")) as kn:
        with pytest.raises(ValidationError, match="user scope text and chat messages, not files"):
            kn.remember(Path(note), user="alice")
        assert kn.remember(Path(note)).memory_ids  # unscoped, as before


def test_turns_added_at_once_to_one_session_take_distinct_positions(kn: Kenning) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def say(i: int) -> None:
        kn.add([{"role": "user", "content": f"turn {i}"}, {"role": "assistant", "content": f"reply {i}"}],
               user="alice", session="s1")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(say, range(12)))
    positions = sorted(m.position for m in kn.list(session="s1", limit=100))
    assert positions == list(range(24))
