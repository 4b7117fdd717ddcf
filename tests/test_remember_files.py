"""Files and folders through every surface: ``kn.remember(Path)``, ``kenning remember -f``,
``POST /v1/remember/file`` and MCP; folder sync (added / changed / unchanged / removed), per-file
failures, page citations on hits. Real files are built here (helpers in test_files.py)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest
from click.testing import CliRunner

from kenning import AsyncKenning, Kenning
from kenning.cli import cli
from kenning.errors import NotFoundError, ValidationError
from kenning.models import Location

from .test_files import HTML, REPORT_PAGES, make_docx, make_pdf, with_pypdf

QUESTION = "How many contracts did the Lisbon office close?"


def make_folder(root: Path) -> Path:
    """A folder of documents in several formats, a sub-folder, and four files that cannot be read."""
    folder = root / "docs"
    (folder / "notes").mkdir(parents=True)
    (folder / "report.pdf").write_bytes(with_pypdf(make_pdf(REPORT_PAGES), outline=[("Results", 1)]))
    (folder / "handbook.docx").write_bytes(make_docx())
    (folder / "guide.html").write_text(HTML, encoding="utf-8")
    (folder / "notes" / "windows.txt").write_bytes("Zoë runs the Porto depot.".encode("utf-16"))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj garbage\n%%EOF")
    (folder / "locked.pdf").write_bytes(with_pypdf(make_pdf(REPORT_PAGES), password="s3cret"))
    (folder / "photo.bin").write_bytes(bytes(range(256)) * 8)
    (folder / "gone.txt").symlink_to(folder / "nowhere.txt")
    return folder


READABLE = ["guide.html", "handbook.docx", "notes/windows.txt", "report.pdf"]
UNREADABLE = {"broken.pdf", "gone.txt", "locked.pdf", "photo.bin"}


def test_a_folder_is_remembered_and_recalled_with_page_citations(store_url: str, tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    with Kenning(store_url) as kn:
        result = kn.remember(folder)
        files = result.files
        assert files is not None and sorted(files.added) == READABLE
        assert files.changed == files.unchanged == files.removed == []
        failed = {f.source: f.error for f in files.failed}
        assert set(failed) == UNREADABLE
        assert failed["locked.pdf"] == "locked.pdf: PDF is password-protected"
        assert all(error.startswith(source + ": ") and "\n" not in error for source, error in failed.items())
        assert len(set(result.memory_ids)) == 4 and result.errors == []

        found = kn.recall(QUESTION, search_type="chunks")
        top = found.hits[0]
        memory = next(m for m in found.memories if m.id == top.memory_ids[0])
        assert "42 contracts" in top.text and top.location == Location(page=2, headings=["Results"])
        assert f"{memory.source} {top.location}" == "report.pdf p. 2 › Results"
        assert memory.metadata["format"] == "pdf" and memory.metadata["folder"] == str(folder.resolve())
        sources = {m.source for m in kn.list(limit=10)}
        assert sources == set(READABLE)
        porto = kn.recall("Who runs the Porto depot?", search_type="chunks").hits[0]
        assert "Zoë runs the Porto depot." in porto.text


def test_folder_sync_processes_only_what_changed(store_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "alice.md").write_text("# Staff\n\nAlice works at Acme.")
    (folder / "bob.md").write_text("# Staff\n\nBob lives in Paris.")
    (folder / "carol.md").write_text("# Staff\n\nCarol works at Initech.")
    with Kenning(store_url) as kn:
        first = kn.remember(folder).files
        assert first is not None and first.added == ["alice.md", "bob.md", "carol.md"]
        old = {m.source: m.id for m in kn.list()}

        again = kn.remember(folder)
        assert again.files is not None and again.files.unchanged == ["alice.md", "bob.md", "carol.md"]
        assert again.memory_ids == [] and again.usage.embedded_texts == 0  # nothing processed

        (folder / "alice.md").write_text("# Staff\n\nAlice works at Globex.")
        (folder / "carol.md").unlink()
        (folder / "dave.md").write_text("# Staff\n\nDave lives in Rome.")
        plain = kn.remember(folder).files  # without sync a deleted file's memory stays
        assert plain is not None and (plain.added, plain.changed, plain.unchanged, plain.removed) == (
            ["dave.md"], ["alice.md"], ["bob.md"], [])
        assert kn.get(old["carol.md"]).status == "active"
        superseded = kn.get(old["alice.md"])
        assert superseded.status == "superseded"
        new_alice = next(m for m in kn.list() if m.source == "alice.md" and m.status == "active")
        assert superseded.superseded_by == new_alice.id

        synced = kn.remember(folder, sync=True).files
        assert synced is not None and synced.removed == ["carol.md"]
        assert synced.unchanged == ["alice.md", "bob.md", "dave.md"] and synced.added == synced.changed == []
        with pytest.raises(NotFoundError):
            kn.get(old["carol.md"])
        assert all("Initech" not in h.text for h in kn.recall("Carol Initech").hits)
        top = kn.recall("Where does Alice work?").hits[0]
        assert "Globex" in top.text and top.current


def test_a_deleted_file_whose_copy_remains_keeps_its_content(store_url: str, tmp_path: Path) -> None:
    """Identical files are one memory (content identity); the copy counts as unchanged, and
    when the original is deleted the copy gets a memory of its own."""
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "a.md").write_text("Erin works at Hooli.")
    (folder / "copy.md").write_text("Erin works at Hooli.")
    with Kenning(store_url) as kn:
        files = kn.remember(folder).files
        assert files is not None and (files.added, files.unchanged) == (["a.md"], ["copy.md"])
        (folder / "a.md").unlink()
        files = kn.remember(folder, sync=True).files
        assert files is not None and (files.removed, files.added) == (["a.md"], ["copy.md"])
        assert [m.source for m in kn.list()] == ["copy.md"]
        files = kn.remember(folder, sync=True).files
        assert files is not None and files.unchanged == ["copy.md"] and files.removed == []


def test_two_folders_in_one_dataset_do_not_sync_each_other_away(store_url: str, tmp_path: Path) -> None:
    for name, text in [("team-a", "Frank works at Umbrella."), ("team-b", "Grace works at Cyberdyne.")]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "notes.md").write_text(text)
    with Kenning(store_url) as kn:
        kn.remember(tmp_path / "team-a", sync=True)
        files = kn.remember(tmp_path / "team-b", sync=True).files
        assert files is not None and files.added == ["notes.md"] and files.removed == []
        files = kn.remember(tmp_path / "team-a", sync=True).files
        assert files is not None and files.unchanged == ["notes.md"] and files.removed == []
        assert sorted(m.content for m in kn.list()) == ["Frank works at Umbrella.", "Grace works at Cyberdyne."]
        a = str((tmp_path / "team-a").resolve())
        assert [s for s, _, _ in kn.store.file_memories("main", folder=a)] == ["notes.md"]
        assert len(kn.store.file_memories("main")) == 2 and kn.store.file_memories("main", folder="") == []


def test_a_file_that_cannot_be_read_now_is_not_removed(tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "data.json").write_text('{"owner": "Heidi"}')
    with Kenning(str(tmp_path / "k.db")) as kn:
        kn.remember(folder)
        (folder / "data.json").write_text('{"owner": ')  # broken mid-edit
        files = kn.remember(folder, sync=True).files
        assert files is not None and files.removed == [] and [f.source for f in files.failed] == ["data.json"]
        assert kn.stats().memories == 1


def test_include_exclude_and_single_files(tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    (folder / "drafts").mkdir(parents=True)
    (folder / "keep.md").write_text("Ivan works at Stark.")
    (folder / "skip.txt").write_text("Judy works at Wayne.")
    (folder / "drafts" / "wip.md").write_text("Mallory works at Oscorp.")
    with Kenning(str(tmp_path / "k.db")) as kn:
        files = kn.remember(folder, include=["*.md"], exclude=["drafts/"]).files
        assert files is not None and files.added == ["keep.md"]
        files = kn.remember([folder / "skip.txt", folder / "drafts" / "wip.md"]).files
        assert files is not None and files.added == ["skip.txt", "wip.md"]
        # a file given alone is never "the whole folder": sync removes nothing beside it
        files = kn.remember(folder / "skip.txt", sync=True).files
        assert files is not None and files.unchanged == ["skip.txt"] and files.removed == []
        assert kn.stats().memories == 3


def test_a_string_stays_text_and_bad_file_calls_store_nothing(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("Niaj works at Soylent.")
    with Kenning(str(tmp_path / "k.db")) as kn:
        memory_id = kn.remember(str(tmp_path / "notes.md")).memory_ids[0]
        assert kn.get(memory_id).content == str(tmp_path / "notes.md")
        bad = [
            lambda: kn.remember("some text", include=["*.md"]),
            lambda: kn.remember("some text", sync=True),
            lambda: kn.remember([tmp_path / "notes.md", "text"]),
            lambda: kn.remember(tmp_path / "notes.md", source="other.md"),
            lambda: kn.remember([tmp_path / "notes.md", tmp_path / "missing"]),
        ]
        for call in bad:
            with pytest.raises(ValidationError):
                call()
        assert kn.stats().memories == 1


def test_dry_run_progress_and_async(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    with Kenning(str(tmp_path / "k.db")) as kn:
        estimate = kn.remember(folder, dry_run=True)
        assert estimate.dry_run and estimate.files is not None and sorted(estimate.files.added) == READABLE
        assert kn.stats().memories == 0
        done: list[int] = []
        kn.remember(folder, progress=done.append)
        assert sum(done) == len(READABLE) + len(UNREADABLE)

    async def remember() -> list[str]:
        kn = AsyncKenning(str(tmp_path / "k.db"))
        try:
            return (await kn.remember(folder)).files.unchanged
        finally:
            await kn.close()

    assert sorted(anyio.run(remember)) == READABLE


# -- the CLI ---------------------------------------------------------------------------------------

def _cli(db: str, *args: str, code: int = 0):
    result = CliRunner().invoke(cli, ["--db", db, *args])
    assert result.exit_code == code, result.output
    return result


def test_cli_remembers_a_folder_prints_the_summary_and_cites_pages(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    db = str(tmp_path / "k.db")
    out = _cli(db, "remember", "-f", str(folder), code=1)  # some files failed: exit 1, the rest stored
    assert "files: 4 added, 0 changed, 0 unchanged, 0 removed, 4 failed" in out.stdout
    assert "failed: locked.pdf: PDF is password-protected" in out.stderr
    assert "failed: photo.bin: binary file, not text" in out.stderr
    assert "remembering: 8 files in" in out.stderr  # not a terminal: one summary line, no bar
    out = _cli(db, "remember", "-f", str(folder), "--exclude", "*.bin", "--exclude", "gone.txt",
               "--exclude", "broken.pdf", "--exclude", "locked.pdf")
    assert "files: 0 added, 0 changed, 4 unchanged, 0 removed, 0 failed" in out.stdout
    (folder / "guide.html").unlink()
    out = _cli(db, "remember", "-f", str(folder), "--glob", "*.pdf", "--glob", "*.docx", "--glob", "*.txt",
               "--sync", "--json", code=1)
    files = json.loads(out.stdout)["files"]
    assert files["removed"] == ["guide.html"] and sorted(files["unchanged"]) == ["handbook.docx", "notes/windows.txt", "report.pdf"]
    out = _cli(db, "recall", QUESTION, "--type", "chunks")
    assert "report.pdf p. 2 › Results" in out.stdout
    _cli(db, "remember", "text", "--sync", code=1)  # --sync applies to --file


# -- HTTP and MCP ----------------------------------------------------------------------------------

def test_uploads_over_http(tmp_path: Path) -> None:
    from .server_util import serve

    from kenning.server import create_app

    pdf = with_pypdf(make_pdf(REPORT_PAGES), outline=[("Results", 1)])
    with Kenning(str(tmp_path / "k.db")) as kn, serve(create_app(kn, auth=False)) as base:
        files = [("file", ("q3/report.pdf", pdf, "application/pdf")),
                 ("file", ("handbook.docx", make_docx(), "application/octet-stream")),
                 ("file", ("photo.bin", bytes(range(256)) * 8, "application/octet-stream"))]
        resp = httpx.post(f"{base}/v1/remember/file", files=files, data={"dataset": "up", "folder": "f"})
        assert resp.status_code == 200, resp.text
        summary = resp.json()["files"]
        assert sorted(summary["added"]) == ["handbook.docx", "q3/report.pdf"]
        assert summary["failed"] == [{"source": "photo.bin", "error": "photo.bin: binary file, not text"}]
        resp = httpx.post(f"{base}/v1/recall", json={"query": QUESTION, "dataset": "up", "search_type": "chunks"})
        top = resp.json()["hits"][0]
        assert top["location"] == {"page": 2, "slide": None, "sheet": None, "headings": ["Results"]}
        # again with sync, the docx left out: it is forgotten, the PDF unchanged
        resp = httpx.post(f"{base}/v1/remember/file", files=files[:1],
                          data={"dataset": "up", "sync": "true", "folder": "f"})
        summary = resp.json()["files"]
        assert (summary["unchanged"], summary["removed"]) == (["q3/report.pdf"], ["handbook.docx"])
        # paths are never read on the server's machine
        resp = httpx.post(f"{base}/v1/remember", json={"content": "x", "dataset": "up", "sync": True})
        assert resp.status_code == 422


def test_the_server_never_reads_its_own_paths(tmp_path: Path) -> None:
    from kenning.access.service import build_service

    secret = tmp_path / "secret.txt"
    secret.write_text("The vault code is 0000.")
    with Kenning(str(tmp_path / "k.db")) as kn:
        service = build_service(kn, auth=False)
        with pytest.raises(ValidationError, match="does not read paths"):
            service.remember(service.access.authenticate(None), secret, dataset="main")
        pytest.importorskip("mcp")
        from kenning.mcp import build_server

        server = build_server(kn, auth=False)
        anyio.run(lambda: server.call_tool("remember", {"content": str(secret)}))
        assert [m.content for m in kn.list()] == [str(secret)]  # the path as text, the file unread


def test_the_answer_prompt_names_file_and_page(tmp_path: Path, fake_openai) -> None:
    from kenning.pipeline.offline import OfflineExtractor
    from kenning.providers.openai_compat import OpenAIChat

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "report.pdf").write_bytes(with_pypdf(make_pdf(REPORT_PAGES), outline=[("Results", 1)]))
    chat = OpenAIChat("test-model", fake_openai.base_url, "sk-test", max_retries=0)
    with Kenning(str(tmp_path / "k.db"), llm=chat, extractor=OfflineExtractor()) as kn:
        kn.remember(folder)
        fake_openai.enqueue_chat({"answer": "42 (report.pdf p. 2)", "citations": ["f1"]})
        result = kn.recall(QUESTION, search_type="chunks", answer=True, top_k=1)
    user = fake_openai.chat_requests[0].json["messages"][1]["content"]
    assert user.splitlines()[1].startswith("f1 (report.pdf p. 2 › Results; ")
    assert result.answer == "42 (report.pdf p. 2)"


def test_a_remote_kenning_uploads_files_from_its_own_machine(tmp_path: Path, clock) -> None:  # noqa: ANN001
    from .test_remote import served

    folder = make_folder(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "report.pdf").write_bytes(make_pdf([["Another report", "Olivia leads the Faro office."]]))
    with served(str(tmp_path / "k.db"), clock) as (kn, base, key), Kenning(base, api_key=key) as remote:
        files = remote.remember(folder).files
        assert files is not None and sorted(files.added) == READABLE
        assert {f.source for f in files.failed} == UNREADABLE
        assert remote.remember(other, sync=True).files.added == ["report.pdf"]
        (folder / "guide.html").unlink()
        files = remote.remember(folder, sync=True, exclude=["*.bin", "gone.txt", "broken.pdf", "locked.pdf"]).files
        assert files is not None and files.removed == ["guide.html"] and files.failed == []
        assert sorted(files.unchanged) == ["handbook.docx", "notes/windows.txt", "report.pdf"]
        memories = kn.list(limit=10)  # the server's store: the other folder's report.pdf is still there
        assert sorted(m.source for m in memories) == ["handbook.docx", "notes/windows.txt", "report.pdf", "report.pdf"]
        assert {m.metadata["folder"] for m in memories} == {str(folder.resolve()), str(other.resolve())}
        hit = remote.recall(QUESTION, search_type="chunks").hits[0]
        assert str(hit.location) == "p. 2 › Results"
        with pytest.raises(ValidationError):
            remote.remember(folder / "missing.pdf")
        out = CliRunner().invoke(cli, ["--db", base, "remember", "-f", str(other)], env={"KENNING_API_KEY": key})
        assert out.exit_code == 0 and "files: 0 added, 0 changed, 1 unchanged" in out.stdout
