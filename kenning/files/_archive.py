"""Zip bombs refused before a converter expands them: DOCX, PPTX and XLSX are zip archives,
and a 1 MB file can hold gigabytes of XML that the converter libraries would unpack and parse
in memory.

Two guards, both before any converter sees the bytes:

1. the central directory: at most ``MAX_MEMBERS`` members, ``MAX_EXPANDED_BYTES`` in all as
   the archive declares them, and (past ``RATIO_FLOOR`` bytes) no more than ``MAX_RATIO``
   times the archive's own size;
2. a bounded streaming read of every member (``CHUNK`` bytes at a time, nothing kept), since
   the declared sizes can lie: a member that yields more than it declared, or more than the
   limits allow in all, stops the read at once. Python's zipfile also stops a member at its
   declared size and then fails its checksum, which this turns into the same FileReadError.

The converters then read only archives whose expanded size is known and bounded.
"""

from __future__ import annotations

import io
import zipfile

from ..errors import FileReadError

__all__ = ["MAX_EXPANDED_BYTES", "MAX_MEMBERS", "MAX_RATIO", "check_archive"]

#: the most an archive may expand to, in all (bytes)
MAX_EXPANDED_BYTES = 256 * 1024 * 1024
#: the most an archive may expand to, as a multiple of its own size (past ``RATIO_FLOOR``)
MAX_RATIO = 100
#: expansions up to this size are allowed whatever their ratio (a small, very regular XML)
RATIO_FLOOR = 16 * 1024 * 1024
MAX_MEMBERS = 10_000
CHUNK = 1024 * 1024


def _limit(size: int) -> int:
    return min(MAX_EXPANDED_BYTES, max(RATIO_FLOOR, size * MAX_RATIO))


def _mib(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB"


def check_archive(data: bytes, name: str, format: str) -> None:
    """Raise FileReadError (naming ``name``) unless ``data`` is a zip archive whose members
    expand, really and as declared, within the limits of this module."""
    limit = _limit(len(data))
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise FileReadError(f"{name}: cannot read {format.upper()} (not a zip archive: {exc})", path=name) from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise FileReadError(f"{name}: {len(members):,} parts in the archive, over the limit of"
                                f" {MAX_MEMBERS:,}; refused as a possible zip bomb", path=name)
        declared = sum(m.file_size for m in members)
        if declared > limit:
            raise FileReadError(_refusal(name, declared, len(data), "declares"), path=name)
        seen = 0
        for member in members:
            got = 0
            try:
                with archive.open(member) as stream:
                    while chunk := stream.read(CHUNK):
                        got += len(chunk)
                        seen += len(chunk)
                        if got > member.file_size or seen > limit:
                            raise FileReadError(_refusal(name, seen, len(data), "expands past"), path=name)
            except FileReadError:
                raise
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
                # a lying size stops the member early and fails its checksum; damage does too
                raise FileReadError(f"{name}: cannot read {format.upper()} (part {member.filename!r}:"
                                    f" {exc})", path=name) from None


def _refusal(name: str, size: int, packed: int, verb: str) -> str:
    return (f"{name}: the archive {verb} {_mib(size)} expanded from {packed / 2**20:,.1f} MiB, over the limit"
            f" of {_mib(_limit(packed))} ({MAX_RATIO}× its size, at least {_mib(RATIO_FLOOR)}, at most"
            f" {_mib(MAX_EXPANDED_BYTES)});"
            " refused as a possible zip bomb")
