"""The framework-neutral surface: ``kn.tools()`` / ``kn.call_tool()`` (embedded, async and
remote, from the request models), the ``with_memory`` decorator, and the optional-dependency
errors (a missing package is a ConfigurationError naming the extra)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from kenning import AsyncKenning, ConfigurationError, Kenning, ValidationError
from kenning.integrations.agent import with_memory
from kenning.requests import VERBS

ROOT = Path(__file__).resolve().parents[1]


def test_tools_are_openai_function_definitions_from_the_request_models(kn):
    lean = kn.tools()
    assert 1 <= len(lean) <= 8
    assert {d["function"]["name"] for d in lean} >= {"remember", "recall", "context", "timeline", "forget"}
    full = kn.tools("all")
    assert [d["function"]["name"] for d in full] == list(VERBS)
    for d in full:
        assert d["type"] == "function" and d["function"]["description"]
        props = d["function"]["parameters"]["properties"]
        for name, schema in props.items():
            assert schema.get("description"), (d["function"]["name"], name)  # every parameter described
            assert set(props) <= set(VERBS[d["function"]["name"]].model_fields)  # the model's names only
        words = json.dumps(d)
        assert "pathlib" not in words and "``" not in words and "include" not in props and "sync" not in props
    recall = next(d for d in full if d["function"]["name"] == "recall")["function"]["parameters"]
    assert recall["properties"]["top_k"]["default"] == VERBS["recall"].model_fields["top_k"].default
    assert recall["required"] == ["query"]
    assert [d["function"]["name"] for d in kn.tools("recall, timeline")] == ["recall", "timeline"]
    with pytest.raises(ValidationError, match="unknown tool profile"):
        kn.tools("everything")


def test_call_tool_runs_a_models_call_and_checks_its_arguments(kn):
    said = kn.call_tool("remember", json.dumps({"content": "Ivan works at Globex.", "user": "ivan"}))
    assert said.startswith("Remembered 1 memory")
    text = kn.call_tool("recall", {"query": "Where does Ivan work?", "top_k": 5})
    assert "Ivan works at Globex." in text and "current" in text and "mem_" in text
    data = kn.call_tool("recall", {"query": "Where does Ivan work?"}, format="json")
    assert data["hits"][0]["text"] == "Ivan works at Globex."
    for bad, words in [({"query": "x", "lanes": "all"}, "unknown argument 'lanes'"),
                       ({"query": "x", "top_k": 0}, "top_k"), ({}, "query"),
                       ("not json", "not JSON")]:
        with pytest.raises(ValidationError, match=words):
            kn.call_tool("recall", bad)
    with pytest.raises(ValidationError, match="unknown argument 'everything'"):
        kn.call_tool("forget", {"everything": True})  # no tool wipes every dataset
    with pytest.raises(ValidationError, match="unknown tool"):
        kn.call_tool("drop_tables", {})


def test_async_and_remote_clients_have_the_same_tools(tmp_path):
    pytest.importorskip("fastapi")
    from tests.server_util import running

    async def main() -> str:
        async with AsyncKenning(str(tmp_path / "a.db")) as akn:
            with Kenning(":memory:") as other:
                assert await akn.tools("all") == other.tools("all")
            await akn.call_tool("remember", {"content": "Judy lives in Bern."})
            return await akn.call_tool("recall", {"query": "Where does Judy live?"})

    assert "Judy lives in Bern." in anyio.run(main)
    with running(str(tmp_path / "r.db"), auth=False) as (_kn, base):
        with Kenning(base) as remote:
            remote.call_tool("remember", {"content": "Ken lives in Oslo."})
            assert "Ken lives in Oslo." in remote.call_tool("recall", {"query": "Where does Ken live?"})
            with pytest.raises(ValidationError, match="unknown argument"):
                remote.call_tool("recall", {"query": "x", "bogus": 1})


def test_with_memory_gives_context_and_records_turns_with_a_session(kn):
    seen: list[str] = []

    @with_memory(kn, user="lena", session="chat-1")
    def reply(message: str, *, memory: str) -> str:
        seen.append(memory)
        return "Noted." if "moved" in message else f"You live in {'Vienna' if 'Vienna' in memory else '?'}."

    assert reply("I moved to Vienna in May.") == "Noted."
    assert reply("Where do I live?") == "You live in Vienna."
    assert "Vienna" not in seen[0] and "Vienna" in seen[1]
    turns = sorted(kn.list(session="chat-1"), key=lambda m: m.position)
    assert [m.role for m in turns] == ["user", "assistant", "user", "assistant"]
    assert {m.user for m in turns} == {"lena"}


def test_with_memory_without_a_session_and_async_with_a_per_call_user(kn):
    @with_memory(kn)
    async def reply(message: str, *, memory: str) -> str:
        return "Your pet is Tom." if "Tom" in memory else "ok"

    assert anyio.run(lambda: reply("I have a cat named Tom.", user="mia")) == "ok"
    assert anyio.run(lambda: reply("What pet do I have?", user="mia")) == "Your pet is Tom."
    assert {m.session for m in kn.list(user="mia")} == {None}
    with pytest.raises(ValidationError, match="message as text"):
        anyio.run(lambda: reply(None, user="mia"))


def _without(modules: list[str], code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a Python where ``modules`` cannot be imported (None in sys.modules)."""
    block = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", block + code], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize(("modules", "code", "extra"), [
    (["httpx"], "from kenning import Kenning; Kenning('http://127.0.0.1:9')", "remote"),
    (["mcp"], "from kenning.mcp import build_server", "mcp"),
    (["fastapi"], "from kenning.server import create_app", "server"),
    (["psycopg"], "from kenning import Kenning; Kenning('postgresql://x@127.0.0.1:9/x')", "postgres"),
    (["langgraph", "langgraph.store", "langgraph.store.base"], "import kenning.integrations.langgraph", "langgraph"),
    (["agents"], "import kenning.integrations.openai_agents", "openai-agents"),
    (["pydantic_ai"], "import kenning.integrations.pydantic_ai", "pydantic-ai"),
])
def test_a_missing_optional_package_names_its_extra(modules, code, extra):
    run = _without(modules, "from kenning import ConfigurationError\ntry:\n    " + code.replace("; ", "\n    ")
                   + "\nexcept ConfigurationError as exc:\n    print('CONFIG', exc.details['extra'], exc)\n")
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith(f"CONFIG {extra} ") and f"pip install 'kenning[{extra}]'" in run.stdout


def test_the_cli_names_the_extra_too():
    run = _without(["httpx"], "from kenning.cli import main; import sys; sys.argv=['kenning','--db','http://127.0.0.1:9','stats']; main()")
    assert run.returncode == 1 and "pip install 'kenning[remote]'" in run.stderr and "Traceback" not in run.stderr


def test_configuration_error_is_exported():
    assert issubclass(ConfigurationError, Exception)
