"""Uploads and folders refuse bad options before anything is read or forgotten (issue 24,
items 8 and 10): a sync without a folder, an unreadable ``valid_at``, an over-long file name."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from kenning import Kenning
from kenning.errors import ValidationError
from kenning.server import create_app

from .server_util import serve


def _up(base: str, names: list[str], **data: str) -> httpx.Response:
    files = [("file", (n, f"{n} says Alice likes tea number {i}.".encode(), "text/plain")) for i, n in enumerate(names)]
    return httpx.post(f"{base}/v1/remember/file", files=files, data={"dataset": "up", **data})


def _sources(kn: Kenning) -> list[str]:
    return sorted(m.source or "" for m in kn.list(dataset="up"))


def test_a_sync_upload_without_a_folder_is_refused_and_forgets_nothing(tmp_path: Path) -> None:
    with Kenning(str(tmp_path / "k.db")) as kn, serve(create_app(kn, auth=False)) as base:
        assert _up(base, ["a.txt"]).status_code == 200
        assert _up(base, ["b.txt"]).status_code == 200
        resp = _up(base, ["c.txt"], sync="true")
        assert resp.status_code == 422 and "sync needs a folder" in resp.json()["error"]["message"]
        assert _sources(kn) == ["a.txt", "b.txt"]  # nothing forgotten, nothing stored
        # with a folder, a sync compares that folder's uploads only
        assert _up(base, ["x.txt", "y.txt"], folder="docs").status_code == 200
        resp = _up(base, ["x.txt"], folder="docs", sync="true")
        assert resp.status_code == 200 and resp.json()["files"]["removed"] == ["y.txt"]
        assert _sources(kn) == ["a.txt", "b.txt", "x.txt"]
    # the same rule for uploads given to Python as documents
    from dataclasses import replace

    from kenning.files import read_document

    with Kenning(str(tmp_path / "k.db")) as kn:
        doc = read_document(b"Carol likes coffee.", "c.txt")
        with pytest.raises(ValidationError, match="sync needs a folder"):
            kn.remember(doc, dataset="up", sync=True)
        assert kn.remember(replace(doc, folder="docs2"), dataset="up", sync=True).files.added == ["c.txt"]


def test_an_invalid_valid_at_on_an_upload_is_refused_up_front(tmp_path: Path) -> None:
    with Kenning(str(tmp_path / "k.db")) as kn, serve(create_app(kn, auth=False)) as base:
        assert _up(base, ["x.txt", "y.txt"], folder="docs").status_code == 200
        resp = _up(base, ["x.txt", "z.txt"], folder="docs", sync="true", valid_at="the twelfth of never")
        assert resp.status_code == 422 and "valid_at" in resp.json()["error"]["message"]
        assert _sources(kn) == ["x.txt", "y.txt"]  # the sync removed nothing, z.txt is not stored


def test_an_invalid_valid_at_on_a_folder_is_a_validation_error(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("Alice likes tea.")
    (folder / "b.txt").write_text("Bob likes coffee.")
    with Kenning(str(tmp_path / "k.db")) as kn:
        kn.remember(folder, dataset="up")
        (folder / "b.txt").unlink()
        (folder / "c.txt").write_text("Carol likes juice.")
        with pytest.raises(ValidationError, match="valid_at"):
            kn.remember(folder, dataset="up", sync=True, valid_at="not a date")
        assert _sources(kn) == ["a.txt", "b.txt"]
        with pytest.raises(ValidationError, match="kind"):
            kn.remember(folder, dataset="up", kind="")


@pytest.mark.parametrize("length", [2500, 5000])
def test_an_over_long_upload_file_name_is_422(tmp_path: Path, length: int) -> None:
    with Kenning(str(tmp_path / "k.db")) as kn, serve(create_app(kn, auth=False)) as base:
        resp = _up(base, ["a" * length + ".txt"])
        assert resp.status_code == 422, resp.text
        assert resp.json()["error"]["code"] == "validation_error" and "2000" in resp.json()["error"]["message"]
        assert kn.datasets() == []
