"""The lean MCP surface an agent sees, through the SDK's own client: the default tool list and its
size, descriptions and annotations, the version, compact bounded results with the structured
result beside them, unknown arguments refused, the stdio key checked on every call, and the
Claude Code / Claude Desktop setup of docs/integrations.md started as configured."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from click.testing import CliRunner
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import kenning
from kenning import Kenning
from kenning.cli import cli
from kenning.requests import VERBS

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TOOLS_CHARS = 8000
RECALL_TOP5_BYTES = 3 * 1024


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KENNING_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env | extra


def _params(args: list[str], **env: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "kenning", *args], env=_env(**env))


async def _session(params: StdioServerParameters, body: Any) -> Any:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        return await body(session, init)


def _text(result: Any) -> str:
    return result.content[0].text


def _wire(tools: list[Any]) -> str:
    return json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools])


LONG = [
    f"Meeting notes {i}: " + " ".join(
        f"The team discussed the {topic} migration for project Falcon, its budget of {i * 1000} euros, the "
        f"deadline in week {i + 10}, and who owns the rollout plan." for topic in ("database", "network", "storage"))
    * 4 for i in range(8)
]


def test_the_default_tools_are_few_small_described_and_annotated(tmp_path):
    db = str(tmp_path / "lean.db")
    with Kenning(db) as kn:
        for text in LONG:
            kn.remember(text)

    async def body(session: ClientSession, init: Any) -> dict[str, Any]:
        tools = (await session.list_tools()).tools
        recall = await session.call_tool("recall", {"query": "What is the budget of the Falcon migration?",
                                                    "top_k": 5})
        return {"init": init, "tools": tools, "recall": recall}

    out = anyio.run(_session, _params(["--db", db, "mcp"]), body)
    tools = {t.name: t for t in out["tools"]}
    assert out["init"].server_info.version == kenning.__version__ != ""
    assert len(tools) <= 8 and {"remember", "recall", "context", "timeline", "forget"} <= set(tools)
    size = len(_wire(out["tools"]))
    print(f"default tool list: {len(tools)} tools, {size} characters of JSON")
    assert size <= DEFAULT_TOOLS_CHARS
    for name, tool in tools.items():
        schema = tool.input_schema
        for param, spec in schema["properties"].items():
            assert spec.get("description"), (name, param)
        words = json.dumps(schema) + tool.description
        assert not re.search(r"pathlib|``|\bPath\b|\binclude\b|\bexclude\b|\bsync\b|None\b", words), (name, words)
        assert tool.annotations is not None and tool.annotations.read_only_hint is not None
    assert tools["recall"].annotations.read_only_hint is True
    assert tools["forget"].annotations.destructive_hint is True
    assert tools["remember"].annotations.read_only_hint is False
    assert tools["remember"].annotations.destructive_hint is False
    assert "messages" in tools["remember"].input_schema["properties"]["content"]["description"]

    recall = out["recall"]
    text = _text(recall)
    print(f"top-5 recall: {len(text.encode())} bytes of text, "
          f"{len(json.dumps(recall.structured_content).encode())} bytes structured")
    assert len(text.encode()) <= RECALL_TOP5_BYTES
    assert text.count("\n1. ") + text.count("\n5. ") == 2 and "budget" in text and "mem_" in text
    assert len(recall.structured_content["hits"]) == 5  # the whole result, for clients that want it
    assert recall.structured_content["hits"][0]["memory_ids"][0] in text


def test_the_full_profile_and_a_named_list(tmp_path):
    db = str(tmp_path / "full.db")

    async def names(session: ClientSession, init: Any) -> list[str]:
        return [t.name for t in (await session.list_tools()).tools]

    assert set(anyio.run(_session, _params(["--db", db, "mcp", "--tools", "all"]), names)) == set(VERBS)
    assert anyio.run(_session, _params(["--db", db, "mcp", "--tools", "recall,stats"]), names) == ["recall", "stats"]
    result = CliRunner().invoke(cli, ["--db", db, "mcp", "--tools", "nope"])
    assert result.exit_code == 1 and "unknown tool profile 'nope'" in result.output


def test_an_unknown_argument_is_a_validation_error_like_http(tmp_path):
    db = str(tmp_path / "args.db")

    async def body(session: ClientSession, init: Any) -> list[Any]:
        return [await session.call_tool("recall", {"query": "x", "top": 5}),
                await session.call_tool("remember", {"content": "x", "include": ["*.md"]}),
                await session.call_tool("recall", {"query": "x", "top_k": "many"})]

    for result in anyio.run(_session, _params(["--db", db, "mcp"]), body):
        assert result.is_error
        error = json.loads(_text(result)[_text(result).index("{"):])["error"]
        assert error["code"] == "validation_error", error
    unknown = anyio.run(_session, _params(["--db", db, "mcp"]), body)[0]
    assert "unknown argument 'top'" in _text(unknown) and "top_k" in _text(unknown)


def test_a_revoked_key_stops_an_open_stdio_session(tmp_path):
    from kenning.store.auth import shown_prefix
    from tests.server_util import add_user

    db = str(tmp_path / "revoke.db")
    with Kenning(db) as kn:
        key = add_user(kn, "agent", admin=True)

    async def body(session: ClientSession, init: Any) -> tuple[Any, Any]:
        before = await session.call_tool("remember", {"content": "Olga works at Umbrella."})
        revoked = CliRunner().invoke(cli, ["--db", db, "keys", "revoke", shown_prefix(key)])
        assert revoked.exit_code == 0, revoked.output
        after = await session.call_tool("recall", {"query": "Where does Olga work?"})
        return before, after

    before, after = anyio.run(_session, _params(["--db", db, "mcp"], KENNING_API_KEY=key), body)
    assert not before.is_error, _text(before)
    assert after.is_error and "authentication_error" in _text(after) and "Umbrella" not in _text(after)


def _snippet(doc: str, fence: str, marker: str) -> str:
    blocks = re.findall(rf"```{fence}\n(.+?)\n```", doc, re.S)
    return next(b for b in blocks if marker in b)


def test_the_documented_claude_setup_starts_and_serves(tmp_path):
    """docs/integrations.md's `claude mcp add` line and `mcpServers` JSON name the same command;
    started as configured (the `kenning` script run as `python -m kenning`), the real MCP client
    initializes, lists the lean tools and calls one."""
    doc = (ROOT / "docs" / "integrations.md").read_text()
    line = _snippet(doc, "bash", "claude mcp add").strip().splitlines()[-1]
    config = json.loads(_snippet(doc, "json", "mcpServers"))["mcpServers"]["kenning"]
    added = line.split(" -- ", 1)[1].split()
    assert [config["command"], *config["args"]] == added and added[0] == "kenning"
    db = str(tmp_path / "claude.db")
    args = [db if a.endswith(".db") else a for a in config["args"]]
    params = StdioServerParameters(command=sys.executable, args=["-m", "kenning", *args],
                                   env=_env(**config.get("env", {})))

    async def body(session: ClientSession, init: Any) -> tuple[list[str], str]:
        names = [t.name for t in (await session.list_tools()).tools]
        await session.call_tool("remember", {"content": "Pat prefers tabs.", "user": "pat"})
        return names, _text(await session.call_tool("context", {"user": "pat"}))

    names, context = anyio.run(_session, params, body)
    assert init_ok(names) and "Pat prefers tabs" in context


def init_ok(names: list[str]) -> bool:
    return "recall" in names and len(names) <= 8
