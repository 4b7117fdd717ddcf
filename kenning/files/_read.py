"""Files and folders as documents: walk, match, read, convert. A file that cannot be read gets a
one-line FileReadError naming it, collected beside the documents; the rest are read."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._checks import nfc
from .._identity import content_hash
from ..errors import FileReadError, ValidationError
from ._convert import convert, format_of

__all__ = ["DEFAULT_EXCLUDE", "FileDocument", "ReadResult", "Matcher", "find_files", "is_files", "read_document",
           "read_paths"]

#: skipped unless an include or ``!pattern`` names them: hidden files and folders (.git, .venv …)
DEFAULT_EXCLUDE = (".*",)
#: a file larger than this is an error rather than a memory (bytes)
MAX_FILE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class FileDocument:
    """A file as a memory-to-be: ``source`` is its path relative to the folder given (the file
    name for a single file), ``text`` what the chunker reads, ``content_hash`` the memory's
    content identity (kenning._identity.content_hash of ``text``)."""

    source: str
    text: str
    content_hash: str
    format: str
    #: the folder an upload belongs to (``/v1/remember/file``'s ``folder``): sync compares it
    #: with earlier uploads of that folder only; None for a file read here (its folder is known)
    folder: str | None = None


@dataclass
class ReadResult:
    documents: list[FileDocument] = field(default_factory=list)
    errors: list[FileReadError] = field(default_factory=list)


def read_document(data: bytes, name: str, format: str | None = None) -> FileDocument:
    """One file's bytes (an upload) as a document; ``format`` defaults to what the name says.
    Raises FileReadError when the file cannot be read, ValidationError when it holds no text."""
    format = format or format_of(name)
    text = nfc(convert(data, name, format).strip())  # composed Unicode, as every text kenning takes
    if not text:
        raise FileReadError(f"{name}: no text in the file", path=name)
    return FileDocument(source=name, text=text, content_hash=content_hash(text), format=format)


def read_paths(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> ReadResult:
    """Files and folders (recursive) as documents, sorted by source. In a folder, ``include``
    globs keep only the files they match, and ``exclude`` patterns (``.gitignore`` syntax, with
    the folder's own ``.gitignore`` and DEFAULT_EXCLUDE before them) drop files and folders.
    A path given directly is always read. A path that does not exist is a ValidationError."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    result = ReadResult()
    for item in items:
        for file, source in find_files(item, include=include, exclude=exclude):
            try:
                result.documents.append(_read(file, source))
            except FileReadError as exc:
                result.errors.append(exc)
    result.documents.sort(key=lambda d: d.source)
    return result


def find_files(
    path: str | os.PathLike, *, include: Sequence[str] = (), exclude: Sequence[str] = ()
) -> list[tuple[Path, str]]:
    """The files ``read_paths`` reads from one file or folder, with their sources, unread."""
    path = Path(path)
    if path.is_dir():
        matcher = Matcher([*DEFAULT_EXCLUDE, *_gitignore(path), *exclude], include)
        return [(f, f.relative_to(path).as_posix()) for f in _walk(path, matcher)]
    if path.exists() or path.is_symlink():
        return [(path, path.name)]
    raise ValidationError(f"no such file or folder: {path}", path=str(path))


def is_files(content: object) -> bool:
    """Whether ``content`` names files (``Path``s, or ``FileDocument``s read from uploads) rather
    than text; a list that mixes them with text is a ValidationError."""
    items = content if isinstance(content, (list, tuple)) else [content]
    files = [isinstance(item, (os.PathLike, FileDocument)) for item in items]
    if any(files) and not all(files):
        raise ValidationError("content mixes files (Path) with text: remember them in separate calls")
    return bool(files) and all(files)


def _read(file: Path, source: str) -> FileDocument:
    try:
        if file.stat().st_size > MAX_FILE_BYTES:
            raise FileReadError(f"{source}: larger than {MAX_FILE_BYTES // 2**20} MiB", path=source)
        data = file.read_bytes()
    except OSError as exc:
        raise FileReadError(f"{source}: cannot read ({exc.strerror or exc})", path=source) from None
    return read_document(data, source)


def _walk(root: Path, matcher: Matcher) -> Iterable[Path]:
    for folder, dirs, names in os.walk(root, onerror=None):
        here = Path(folder)
        rel = here.relative_to(root).as_posix()
        prefix = "" if rel == "." else rel + "/"
        dirs[:] = sorted(d for d in dirs if not matcher.excluded(prefix + d, is_dir=True))
        for name in sorted(names):
            if matcher.selected(prefix + name):
                yield here / name


def _gitignore(root: Path) -> list[str]:
    """The folder's ``.gitignore`` lines; a line that is not a valid pattern is skipped, as git
    does (a pattern the caller gives is checked: a ValidationError names it)."""
    try:
        lines = (root / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if _valid(line)]


def _valid(line: str) -> bool:
    try:
        _compile(line)
    except ValidationError:
        return False
    return True


class Matcher:
    """``.gitignore``-style patterns over paths relative to a folder: ``#`` comments, ``!``
    re-includes, a trailing ``/`` for folders only, a ``/`` inside anchors the pattern at the
    folder, ``*`` ``?`` ``[…]`` within a name and ``**`` across folders; the last match wins.
    ``include`` globs (same syntax) keep only the files they match."""

    def __init__(self, exclude: Sequence[str], include: Sequence[str] = ()) -> None:
        self._exclude = [p for p in (_compile(line) for line in exclude) if p is not None]
        self._include = [p for p in (_compile(line) for line in include) if p is not None]

    def excluded(self, path: str, is_dir: bool = False) -> bool:
        verdict = False
        for negate, dir_only, regex in self._exclude:
            if (is_dir or not dir_only) and regex.fullmatch(path):
                verdict = not negate
        return verdict

    def selected(self, path: str) -> bool:
        if self.excluded(path):
            return False
        return not self._include or any(r.fullmatch(path) and not neg for neg, _, r in self._include)


def _compile(line: str) -> tuple[bool, bool, re.Pattern[str]] | None:
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    line = line[1:] if negate else line
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    anchored = "/" in line
    line = line.lstrip("/")
    out, i = [], 0
    while i < len(line):
        if line.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif line.startswith("**", i):
            out.append(".*")
            i += 2
        elif line[i] == "*":
            out.append("[^/]*")
            i += 1
        elif line[i] == "?":
            out.append("[^/]")
            i += 1
        elif line[i] == "[" and (end := line.find("]", i + 1)) > i:
            body = line[i + 1 : end]
            negated = body.startswith(("!", "^"))
            body = "".join(c if c == "-" else re.escape(c) for c in (body[1:] if negated else body))
            out.append("[" + ("^" if negated else "") + body + "]")
            i = end + 1
        else:
            out.append(re.escape(line[i]))
            i += 1
    try:
        return negate, dir_only, re.compile(("" if anchored else "(?:.*/)?") + "".join(out))
    except re.error as exc:  # a range such as [z-a]
        raise ValidationError(f"pattern {line!r} is not a valid glob: {exc}") from None
