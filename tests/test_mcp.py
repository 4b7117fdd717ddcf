"""The MCP server, driven by the SDK's own client: over stdio (``python -m kenning mcp`` in a
subprocess) and over streamable HTTP (the same server on a loopback port)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from kenning import Kenning

TOOLS = {"remember", "add", "cognify", "recall", "forget", "timeline", "get", "list", "stats",
         "update", "delete", "provenance", "pin", "unpin", "chain", "prune", "datasets", "improve",
         "feedback"}
ROOT = str(Path(__file__).resolve().parents[1])


def _data(result: Any) -> Any:
    structured = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    if structured is not None:
        return structured.get("result", structured) if set(structured) == {"result"} else structured
    return json.loads(result.content[0].text)


def _is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


async def _exercise(session: ClientSession, dataset: str) -> dict[str, Any]:
    """Call every tool once; return what each answered."""
    await session.initialize()
    listed = {t.name for t in (await session.list_tools()).tools}
    assert TOOLS <= listed, TOOLS - listed
    out: dict[str, Any] = {}

    async def call(name: str, **args: Any) -> Any:
        result = await session.call_tool(name, args)
        assert not _is_error(result), (name, result.content)
        out[name] = _data(result)
        return out[name]

    mid = (await call("remember", content="Alice works at Acme since 2020.", dataset=dataset))["memory_ids"][0]
    hits = (await call("recall", query="Where does Alice work?", dataset=dataset))["hits"]
    assert any("Acme" in h["text"] for h in hits)
    assert (await call("timeline", entity="Alice", dataset=dataset))["facts"]
    assert (await call("get", memory_id=mid))["id"] == mid
    assert [m["id"] for m in (await call("list", dataset=dataset))["items"]] == [mid]
    assert (await call("stats", dataset=dataset))["memories"] == 1
    assert (await call("pin", memory_id=mid, reason="keep"))["pinned"] is True
    assert (await call("unpin", memory_id=mid))["pinned"] is False
    assert [m["id"] for m in await call("chain", memory_id=mid)] == [mid]
    assert (await call("provenance", memory_id=mid))["memory_id"] == mid
    assert "Beta" in (await call("update", memory_id=mid, content="Alice works at Beta."))["content"]
    assert (await call("prune", dataset=dataset))["dry_run"] is True
    assert "entities_merged" in await call("improve", dataset=dataset)
    fresh = (await call("recall", query="Where does Alice work?", dataset=dataset))["hits"]
    fact = next(h for h in fresh if h["kind"] == "fact")["id"]
    assert (await call("feedback", fact_id=fact, helpful=True))["weight"] > 1.0
    other = (await call("remember", content="Bob lives in Paris.", dataset=dataset))["memory_ids"][0]
    assert (await call("delete", memory_id=other))["memory_ids"] == [other]
    assert (await call("forget", memory_id=mid))["memory_ids"] == [mid]
    missing = await session.call_tool("get", {"memory_id": mid})
    assert _is_error(missing) and "not_found" in missing.content[0].text
    return out


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KENNING_")}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def _stdio(db: str, *tools: str, **env: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "kenning", "--db", db, "mcp", *tools],
                                 env=_env(**env))


def test_every_tool_over_stdio(tmp_path):
    db = str(tmp_path / "mcp.db")

    async def main() -> None:
        async with stdio_client(_stdio(db, "--tools", "all")) as (read, write), ClientSession(read, write) as session:
            await _exercise(session, "agent")

    anyio.run(main)
    with Kenning(db) as kn:
        assert kn.stats("agent").memories == 0


def test_stdio_key_scopes_datasets(tmp_path):
    from tests.server_util import add_user

    db = str(tmp_path / "scoped.db")
    with Kenning(db) as kn:
        alice, bob = add_user(kn, "alice"), add_user(kn, "bob")
        kn.remember("Alice hid the key under the mat.", dataset="private")
    with Kenning(db) as kn:
        from kenning.access import auth_store

        auth_store(kn).claim_dataset("private", auth_store(kn).find_user("alice").id)

    async def main(key: str) -> tuple[bool, str]:
        params = _stdio(db, KENNING_API_KEY=key)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("recall", {"query": "key mat", "dataset": "private"})
            return _is_error(result), result.content[0].text

    failed, text = anyio.run(main, bob)
    assert failed and "not_found" in text and "mat" not in text
    failed, text = anyio.run(main, alice)
    assert not failed and "mat" in text


def test_every_tool_over_streamable_http(tmp_path):
    httpx2 = pytest.importorskip("httpx2")
    from mcp.client.streamable_http import streamable_http_client

    from kenning.mcp import build_server
    from tests.server_util import add_user, serve

    kn = Kenning(str(tmp_path / "http.db"))
    key = add_user(kn, "agent")
    app = build_server(kn, auth=True, tools="all").streamable_http_app()
    try:
        with serve(app) as base:
            async def main(headers: dict[str, str]) -> None:
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=30) as client,
                    streamable_http_client(f"{base}/mcp", http_client=client) as streams,
                    ClientSession(streams[0], streams[1]) as session,
                ):
                    await _exercise(session, "agent-ds")

            anyio.run(main, {"Authorization": f"Bearer {key}"})
            with pytest.raises(BaseException):  # noqa: B017 - no key: every tool call fails
                anyio.run(main, {})
    finally:
        kn.close()


def test_stdio_answers_a_sessions_piped_calls_in_order(tmp_path):
    """A client that sends calls without waiting reads its own writes: the recall sent after
    two remembers sees both (issue 15 item 8)."""
    db = str(tmp_path / "order.db")

    async def main() -> list[Any]:
        results: dict[int, Any] = {}
        calls = [("remember", {"content": "Alice works at Acme."}),
                 ("remember", {"content": "Bob lives in Paris."}),
                 ("recall", {"query": "Where does Alice work? Where does Bob live?", "search_type": "facts"})]
        async with stdio_client(_stdio(db, "--tools", "all")) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def one(i: int, name: str, args: dict) -> None:
                results[i] = await session.call_tool(name, args)

            async with anyio.create_task_group() as tg:
                for i, (name, args) in enumerate(calls):
                    tg.start_soon(one, i, name, args)
                    await anyio.sleep(0)  # sent in this order, without waiting for answers
        return [results[i] for i in range(len(calls))]

    *_, recall = anyio.run(main)
    assert not _is_error(recall), recall.content
    targets = {h["target"] for h in _data(recall)["hits"] if h["kind"] == "fact"}
    assert {"Acme", "Paris"} <= targets, targets
