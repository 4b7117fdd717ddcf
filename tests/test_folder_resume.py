"""A folder ``remember -f`` killed mid-file (issue 24, item 6) strands that file's memory in
``processing`` under a dead owner; running the same command again finishes it (and says so)
instead of calling every file unchanged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from kenning import Kenning
from kenning.cli import cli


def _folder(root: Path) -> Path:
    folder = root / "notes"
    folder.mkdir()
    for i, text in enumerate(["Alice works at Acme.", "Bob lives in Paris.", "Carol plays chess."]):
        (folder / f"{i}.txt").write_text(text)
    return folder


def _kill_remember(store_url: str, folder: Path) -> None:
    """``kenning remember -f folder`` in its own process, killed -9 while the first file it
    processes waits on the (slow) model."""
    from tests.fakeopenai import FakeOpenAI

    with FakeOpenAI(latency=60) as slow:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "KENNING_LLM": "m",
               "KENNING_LLM_BASE_URL": slow.base_url, "KENNING_LLM_API_KEY": "k", "KENNING_LLM_MAX_RETRIES": "0"}
        child = subprocess.Popen([sys.executable, "-m", "kenning", "--db", store_url, "remember", "-f", str(folder)],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not slow.chat_requests:  # the first file is stored and waits on the model
            assert child.poll() is None and time.monotonic() < deadline, "the child never got there"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()


def test_a_killed_folder_remember_is_finished_by_running_it_again(store_url: str, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    _kill_remember(store_url, folder)
    with Kenning(store_url) as kn:
        stranded = kn.list(status="processing")
        assert [m.source for m in stranded] == ["0.txt"]
    result = CliRunner().invoke(cli, ["--db", store_url, "remember", "-f", str(folder)])
    assert result.exit_code == 0, result.output
    assert "files: 3 added, 0 changed, 0 unchanged, 0 removed, 0 failed" in result.stdout
    with Kenning(store_url) as kn:
        assert {m.source: m.status for m in kn.list()} == {"0.txt": "active", "1.txt": "active", "2.txt": "active"}
        assert kn.recall("Where does Alice work?", search_type="chunks").hits[0].text == "Alice works at Acme."
    result = CliRunner().invoke(cli, ["--db", store_url, "remember", "-f", str(folder)])
    assert "files: 0 added, 0 changed, 3 unchanged, 0 removed, 0 failed" in result.stdout


def test_a_killed_change_is_finished_and_supersedes_the_old_version(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'k.db'}"
    folder = _folder(tmp_path)
    with Kenning(store_url) as kn:
        kn.remember(folder)
        old = next(m.id for m in kn.list() if m.source == "0.txt")
    (folder / "0.txt").write_text("Alice works at Globex.")
    _kill_remember(store_url, folder)  # the changed file's new memory is stranded
    result = CliRunner().invoke(cli, ["--db", store_url, "remember", "-f", str(folder)])
    assert result.exit_code == 0, result.output
    assert "files: 0 added, 1 changed, 2 unchanged, 0 removed, 0 failed" in result.stdout
    with Kenning(store_url) as kn:
        assert kn.get(old).status == "superseded" and not kn.list(status="processing")
        assert "Alice works at Globex." in [h.text for h in kn.recall("Globex", search_type="chunks").hits]
