"""Zip bombs (issue 24, item 7): a DOCX, PPTX or XLSX whose parts expand past the limits is
refused from its central directory before any converter expands it, and one whose directory
lies about the sizes is stopped by the bounded streaming read."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import httpx
import pytest

from kenning import Kenning
from kenning.errors import FileReadError
from kenning.files import read_document
from kenning.files._archive import MAX_EXPANDED_BYTES, RATIO_FLOOR

from .test_files import make_docx, make_pptx, make_xlsx

MAKERS = {"docx": make_docx, "pptx": make_pptx, "xlsx": make_xlsx}


def _with_part(data: bytes, size: int, part: str = "word/media/bomb.xml") -> bytes:
    """``data`` (a real office file) with one more part of ``size`` zero bytes, deflated."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item))
        info = zipfile.ZipInfo(part)
        info.compress_type = zipfile.ZIP_DEFLATED
        with dst.open(info, "w", force_zip64=True) as stream:
            block = bytes(2**20)
            for _ in range(size // len(block)):
                stream.write(block)
    return out.getvalue()


def _lie(data: bytes, part: str, size: int) -> bytes:
    """The archive with ``part``'s declared size in the central directory set to ``size``."""
    raw = bytearray(data)
    at = raw.rfind(b"PK\x01\x02" + b"", 0)
    while at != -1:
        name_len = struct.unpack_from("<H", raw, at + 28)[0]
        if raw[at + 46:at + 46 + name_len].decode() == part:
            struct.pack_into("<I", raw, at + 24, size)  # uncompressed size
            extra = struct.unpack_from("<H", raw, at + 30)[0]
            start = at + 46 + name_len
            block = raw[start:start + extra]
            if block[:2] == b"\x01\x00":  # zip64: its sizes hold the real values
                struct.pack_into("<Q", raw, start + 4, size)
            return bytes(raw)
        at = raw.rfind(b"PK\x01\x02", 0, at)
    raise AssertionError(part)


@pytest.mark.parametrize("fmt", sorted(MAKERS))
def test_an_archive_expanding_past_the_limit_is_refused_from_its_directory(fmt: str) -> None:
    bomb = _with_part(MAKERS[fmt](), MAX_EXPANDED_BYTES + 2**20)
    assert len(bomb) < 2 * 2**20  # about a megabyte that would expand to over 256 MiB
    with pytest.raises(FileReadError, match=f"bomb.{fmt}: the archive declares 25[78] MiB.*zip bomb"):
        read_document(bomb, f"bomb.{fmt}")


def test_a_ratio_past_the_limit_is_refused_under_the_size_limit() -> None:
    bomb = _with_part(make_docx(), RATIO_FLOOR + 8 * 2**20)  # 24 MiB from ~50 KB: ratio ~500
    with pytest.raises(FileReadError, match="100× its size.*zip bomb"):
        read_document(bomb, "ratio.docx")
    # the same part at a modest size is an ordinary file
    assert "Handbook" in read_document(_with_part(make_docx(), 2 * 2**20), "fine.docx").text


def test_a_lying_directory_is_stopped_by_the_streaming_read() -> None:
    bomb = _lie(_with_part(make_docx(), 64 * 2**20), "word/media/bomb.xml", 1000)
    with zipfile.ZipFile(io.BytesIO(bomb)) as archive:  # the directory now claims a small part
        assert sum(m.file_size for m in archive.infolist()) < 1_000_000
    with pytest.raises(FileReadError, match="bomb.xml"):
        read_document(bomb, "liar.docx")


def test_an_uploaded_bomb_is_a_failed_file_not_an_exhausted_server(tmp_path: Path) -> None:
    from kenning.server import create_app

    from .server_util import serve

    bomb = _with_part(make_xlsx(), MAX_EXPANDED_BYTES + 2**20, "xl/worksheets/sheet9.xml")
    with Kenning(str(tmp_path / "k.db")) as kn, serve(create_app(kn, auth=False)) as base:
        files = [("file", ("bomb.xlsx", bomb, "application/octet-stream")),
                 ("file", ("ok.docx", make_docx(), "application/octet-stream"))]
        resp = httpx.post(f"{base}/v1/remember/file", files=files, data={"dataset": "up"})
        assert resp.status_code == 200, resp.text
        summary = resp.json()["files"]
        assert summary["added"] == ["ok.docx"]
        assert [f["source"] for f in summary["failed"]] == ["bomb.xlsx"] and "zip bomb" in summary["failed"][0]["error"]
