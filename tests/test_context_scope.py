"""Context is about the user, not only the session (issue 23 item 1): ``context(query, user=U,
session=S)`` shows what is known about U from all of U's memories in the dataset, and S's latest
turns; ``session`` narrows the messages, not the knowledge. The same on every surface."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner

from kenning import AsyncKenning, Kenning
from kenning.cli import cli
from kenning.pipeline.extract import Extraction, Extractor
from kenning.pipeline.offline import OfflineExtractor

FIRST = [{"role": "user", "content": "I live in Madrid and I work at Telefonica.", "created_at": "2023-01-10T09:00:00Z"},
         {"role": "assistant", "content": "Noted!", "created_at": "2023-01-10T09:00:05Z"}]
OTHER = [{"role": "user", "content": "I live in Oslo.", "created_at": "2023-01-11T09:00:00Z"}]


def _setup(kn: Kenning) -> None:
    kn.remember(FIRST, user="Priya", agent="Ken", session="p1")
    kn.remember(OTHER, user="Bob", agent="Ken", session="b1")


def test_a_new_session_knows_what_the_user_said_before(kn: Kenning) -> None:
    _setup(kn)
    ctx = kn.context("Where does Priya live?", user="Priya", session="never-seen")
    assert ctx.text, "a new session's context knows the user"
    assert any(f.target == "Madrid" for f in ctx.facts)
    assert "Madrid" in ctx.text and "(since 2023-01-10)" in ctx.text
    assert ctx.evidence and all("Oslo" not in h.text for h in ctx.evidence)
    assert ctx.messages == [] and "# Recent messages" not in ctx.text  # none for a new session
    assert "Oslo" not in ctx.text  # another user's knowledge stays out


def test_the_session_narrows_the_messages_not_the_knowledge(kn: Kenning) -> None:
    _setup(kn)
    kn.remember([{"role": "user", "content": "I joined Globex in March.", "created_at": "2023-04-01T09:00:00Z"}],
                user="Priya", session="p2")
    ctx = kn.context(user="Priya", session="p2", max_tokens=100_000)
    assert {f.target for f in ctx.facts} >= {"Madrid", "Globex"}  # p1's knowledge too
    assert [f.target for f in ctx.history] == ["Telefonica"]  # closed by the later turn
    assert [m.content for m in ctx.messages] == ["I joined Globex in March."]  # p2's turns only
    assert "Noted!" not in ctx.text
    # without a query, without a user: the session's turns and the dataset's knowledge
    assert {"Oslo", "Madrid"} <= {f.target for f in kn.context(session="p2", max_tokens=100_000).facts}


def test_the_agent_scope_selects_knowledge_the_same_way(kn: Kenning) -> None:
    _setup(kn)
    kn.remember("I live in Lima.", user="Zoe", agent="Other")
    by_ken = kn.context("Where do they live?", agent="Ken", session="new", max_tokens=100_000)
    assert {"Madrid", "Oslo"} <= {f.target for f in by_ken.facts} and "Lima" not in by_ken.text
    assert "Lima" in kn.context(agent="Other").text
    assert "Oslo" not in kn.context(user="Priya", agent="Ken", max_tokens=100_000).text


def test_every_surface_gives_a_new_session_the_users_knowledge(tmp_path) -> None:  # noqa: ANN001
    pytest.importorskip("fastapi")
    pytest.importorskip("mcp")
    from kenning.mcp import build_server
    from tests.server_util import running

    ask = {"query": "Where does Priya live?", "user": "Priya", "session": "fresh"}
    with running(str(tmp_path / "s.db"), auth=False) as (kn, base):
        _setup(kn)
        resp = httpx.post(f"{base}/v1/context", json=ask)
        assert resp.status_code == 200 and "Madrid" in resp.json()["text"], resp.text
        resp = httpx.post(f"{base}/v1/context", json={**ask, "agent": "Other"})
        assert resp.status_code == 200 and "Madrid" not in resp.json()["text"], resp.text
        with Kenning(base, remote_retries=0) as remote:
            assert "Madrid" in remote.context(ask["query"], user="Priya", session="fresh").text
            assert "Madrid" in remote.context(ask["query"], user="Priya", agent="Ken", session="fresh").text
        server = build_server(kn, auth=False)

        async def call() -> str:
            result = await server.call_tool("context", ask)
            content = result[0] if isinstance(result, tuple) else getattr(result, "content", result)
            return content[0].text

        assert "Madrid" in anyio.run(call)
    db = str(tmp_path / "c.db")
    with Kenning(db) as kn:
        _setup(kn)
    out = CliRunner().invoke(cli, ["--db", db, "context", "Where does Priya live?", "--user", "Priya",
                                   "--session", "fresh"])
    assert out.exit_code == 0 and "Madrid" in out.output, out.output
    out = CliRunner().invoke(cli, ["--db", db, "context", "--agent", "Other"])
    assert out.exit_code == 0 and "Madrid" not in out.output, out.output

    async def run() -> str:
        async with AsyncKenning(db) as akn:
            return (await akn.context("Where does Priya live?", user="Priya", session="fresh")).text

    assert "Madrid" in anyio.run(run)


class MissesChanges(Extractor):
    """The offline extractor, except that it reads nothing in a "Quick update": a change
    statement extraction missed."""

    def __init__(self) -> None:
        self.offline = OfflineExtractor()

    def extract(self, chunks: list[str], **kw: Any) -> Extraction:
        if any("update" in chunk for chunk in chunks):
            return Extraction()
        return self.offline.extract(chunks, **kw)


def test_a_fact_a_later_statement_changed_is_history_even_unextracted(tmp_path, clock) -> None:  # noqa: ANN001
    clock.set("2025-01-01")
    kn = Kenning(str(tmp_path / "m.db"), extractor=MissesChanges(), clock=clock)
    kn.remember([{"role": "user", "content": "I live in Madrid.", "created_at": "2024-01-05T10:00:00Z"},
                 {"role": "user", "content": "I work at Acme.", "created_at": "2024-01-05T10:01:00Z"}],
                user="Priya", session="p1")
    kn.remember([{"role": "user", "content": "Quick update: I relocated to Porto in August.",
                  "created_at": "2024-09-01T10:00:00Z"},
                 {"role": "user", "content": "I started a new project at work.", "created_at": "2024-09-01T10:01:00Z"}],
                user="Priya", session="p2")
    ctx = kn.context("Where does Priya live?", user="Priya", session="p3")
    assert "Porto" in ctx.text
    assert all("Madrid" not in f"{f.description} {f.target}" for f in ctx.facts)
    assert any(f.target == "Madrid" for f in ctx.history)
    assert "a later statement on 2024-09-01 says it changed" in ctx.text
    assert "Madrid" not in ctx.text.split("# History")[0]  # neither as a fact nor as an entity
    work = kn.context("Where does Priya work?", user="Priya", session="p3")
    assert any(f.target == "Acme" for f in work.facts)  # a new project at work changes no employer
    kn.close()


def test_the_docs_life_changes_example_prints_what_the_page_shows(capsys) -> None:  # noqa: ANN001
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "conversations.md").read_text()
    section = page.split("## A user's life changes", 1)[1].split("\n## ", 1)[0]
    blocks: list[tuple[str, list[str]]] = []
    inside = False
    for line in section.splitlines():
        if line.startswith("```"):
            if not inside:
                blocks.append((line[3:], []))
            inside = not inside
        elif inside:
            blocks[-1][1].append(line)
    code = "\n".join(next(lines for lang, lines in blocks if lang == "python"))
    shown = ["\n".join(lines) for lang, lines in blocks if lang == ""]
    exec(compile(code, "docs/conversations.md", "exec"), {})  # noqa: S102 - the documented example, as written
    printed = [part.strip("\n") for part in capsys.readouterr().out.split("----\n")]

    def sections(block: str) -> list[tuple[str, ...]]:  # facts of one memory tie: any order
        return [tuple(sorted(part.splitlines())) for part in block.split("\n\n")]

    assert [sections(b) for b in printed] == [sections(b) for b in shown]
    before, after, first = printed
    assert "“Priya lives in Madrid” (since 2024-01-10)" in before.split("# Entities")[0]
    assert "Madrid" not in after.split("# History")[0] and "Porto" in first
