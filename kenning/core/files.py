"""Files and folders remembered (docs/files.md).

Each file is one memory: its text as ``kenning.files`` reads it, its ``source`` the path relative
to the folder given (the file's name when given alone), its metadata the file's ``format``
(which turns on structure-aware chunks with locations) and the ``folder`` it was read from.
A folder remembered again is compared with what the store holds for that folder
(``kenning.files.plan_sync``): only added and changed files are processed, a changed file's new
memory supersedes its old one, and with ``sync`` the memories of files deleted from the folder
are forgotten. A file that cannot be read or stored is reported by name; the others are
remembered.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .._checks import check_metadata, check_text
from .._identity import check_dataset
from ..dates import parse_when
from ..pipeline.authority import check_origin, lowest
from ..errors import KenningError, NotFoundError, ValidationError
from ..requests import KIND_CHARS
from ..files import FileDocument, Matcher, SyncPlan, check_file_options, plan_sync, read_paths
from ..models import FileFailure, FilesSummary, RememberResult
from ..store.base import Store
from .lifecycle import Lifecycle
from .writing import Writing

__all__ = ["FOLDER", "FORMAT", "Files"]

#: the metadata keys of a file's memory (merged over the caller's metadata)
FORMAT, FOLDER = "format", "folder"
Stored = tuple[str, str, str]  # (source, memory id, content hash)


@dataclass
class _Group:
    """Documents read from one place: a folder (``whole``: a file missing from it was deleted),
    a file given alone, or the uploads of one folder (``whole``; ``folder`` None when unnamed)."""

    folder: str | None
    documents: list[FileDocument]
    failed: list[FileFailure]
    whole: bool


@dataclass
class _Job:
    """One call's options, and what it has done so far."""

    dataset: str
    kind: str
    valid_at: dt.datetime | str | None
    metadata: dict[str, Any]
    force: bool
    dry_run: bool
    sync: bool
    progress: Callable[[int], None]
    out: RememberResult = field(default_factory=lambda: RememberResult(files=FilesSummary()))
    #: who said it: a document, or lower (kenning.pipeline.authority)
    origin: str = "document"


class Files:
    def __init__(self, store: Store, writing: Writing, lifecycle: Lifecycle) -> None:
        self.store, self.writing, self.lifecycle = store, writing, lifecycle

    def remember(
        self,
        content: Any,
        *,
        dataset: str,
        kind: str,
        source: str | None,
        valid_at: dt.datetime | str | None,
        metadata: dict[str, Any] | None,
        force: bool,
        dry_run: bool,
        include: Sequence[str] | None,
        exclude: Sequence[str] | None,
        sync: bool,
        origin: str | None,
        progress: Callable[[int], None] | None = None,
    ) -> RememberResult:
        """Remember files and folders (``content``: Paths or Documents); see the module doc."""
        if source is not None:
            raise ValidationError("source is each file's own path when remembering files: leave source out")
        if metadata is not None and not isinstance(metadata, dict):
            raise ValidationError(f"metadata must be a JSON object, not {type(metadata).__name__}")
        # every option checked before any file is read, remembered or forgotten
        check_dataset(dataset)
        check_text(kind, "kind", max_chars=KIND_CHARS)
        check_metadata(metadata)
        valid_at = parse_when(valid_at, self.writing.now(), "valid_at")
        check_file_options(content, sync=sync)
        job = _Job(dataset, kind, valid_at, dict(metadata or {}), force, dry_run, sync,
                   progress or (lambda n: None))
        job.origin = cast(str, lowest(["document", check_origin(origin)]))  # a file is a document (authority.py)
        job.out.dry_run = dry_run
        groups = _read(content, include or (), exclude or ())
        keep = {doc.content_hash for group in groups for doc in group.documents}
        for group in groups:
            self._group(group, self.store.file_memories(dataset, folder=group.folder or ""), keep, job)
        return job.out

    def _group(self, group: _Group, stored: list[Stored], keep: set[str], job: _Job) -> None:
        summary = job.out.files
        assert summary is not None
        summary.failed += group.failed
        job.progress(len(group.failed))
        if not group.whole:  # a file given alone: only its own memories are compared
            sources = {doc.source for doc in group.documents}
            stored = [row for row in stored if row[0] in sources]
        plan = plan_sync(group.documents, stored)
        if job.sync and group.whole:
            # before the files are remembered: a deleted file's content may live on in another
            # file of the folder, which then gets a memory of its own
            self._remove(plan, {f.source for f in group.failed}, job)
        known = {row[1] for row in stored}
        hashes = {memory_id: content_hash for _, memory_id, content_hash in stored}
        current = {(source, content_hash): memory_id for source, memory_id, content_hash in stored}
        resumed = self._unfinished(group.documents, plan.unchanged, current)
        todo = ({doc.source for doc in plan.added + plan.changed} | resumed
                | (set(plan.unchanged) if job.force else set()))
        # a resumed file beside an older version of itself was changed when its run was killed
        changed = {doc.source for doc in plan.changed} | {s for s in resumed if plan.stale.get(s)}
        for doc in group.documents:
            memory_id = current.get((doc.source, doc.content_hash))
            if doc.source in todo:
                memory_id = self._one(doc, group.folder, job)
                if memory_id is None:
                    job.progress(1)
                    continue
            fresh = (doc.source in todo and memory_id not in job.out.skipped
                     and (memory_id not in known or doc.source in resumed))
            (summary.changed if doc.source in changed else summary.added if fresh else summary.unchanged
             ).append(doc.source)
            # older versions of this file, unless another file of these folders still holds them
            old = [m for m in plan.stale.get(doc.source, []) if hashes.get(m) not in keep and m != memory_id]
            if memory_id is not None and old and not job.dry_run:
                self.writing.supersede(memory_id, job.dataset, old)
            job.progress(1)

    def _unfinished(self, documents: list[FileDocument], unchanged: list[str],
                    current: dict[tuple[str, str], str]) -> set[str]:
        """The unchanged files whose memory was never finished: still ``pending``, or
        ``processing`` under a claim (a run killed mid-file strands one so). Remembering them
        again takes the claim over when its owner is gone or its lease ran out, and processes
        it; a live worker's claim is left to that worker (the file is then ``unchanged``)."""
        same = set(unchanged)
        ids = {current[(d.source, d.content_hash)]: d.source for d in documents
               if d.source in same and (d.source, d.content_hash) in current}
        if not ids:
            return set()
        return {ids[m.id] for m in self.store.get_memories(list(ids)) if m.status in ("pending", "processing")}

    def _one(self, doc: FileDocument, folder: str | None, job: _Job) -> str | None:
        """Remember one file; its memory id, or None (reported as failed)."""
        summary = job.out.files
        assert summary is not None
        mark = {FORMAT: doc.format} | ({FOLDER: folder} if folder is not None else {})
        try:
            result = self.writing.remember(doc.text, dataset=job.dataset, kind=job.kind, source=doc.source,
                                           valid_at=job.valid_at, metadata=job.metadata | mark,
                                           force=job.force, dry_run=job.dry_run, origin=job.origin)
        except KenningError as exc:
            summary.failed.append(FileFailure(source=doc.source, error=f"{doc.source}: {exc.message}"))
            return None
        job.out.add(result)
        if result.errors:
            summary.failed.append(FileFailure(source=doc.source, error=f"{doc.source}: " + "; ".join(
                e.split(": ", 1)[-1] for e in result.errors)))
            return None
        return result.memory_ids[0] if result.memory_ids else ""

    def _remove(self, plan: SyncPlan, unreadable: set[str], job: _Job) -> None:
        """Forget the memories of files deleted from the folder (not of files it failed to read)."""
        summary = job.out.files
        assert summary is not None
        for source in plan.removed:
            if source in unreadable:
                continue
            if not job.dry_run:
                for memory_id in plan.stale[source]:
                    with contextlib.suppress(NotFoundError):  # forgotten meanwhile: as good
                        self.lifecycle.delete(memory_id)
            summary.removed.append(source)


def _read(content: Any, include: Sequence[str], exclude: Sequence[str]) -> list[_Group]:
    """Read every path given (a missing one is a ValidationError before anything is stored)."""
    items = list(content) if isinstance(content, (list, tuple)) else [content]
    paths = [Path(item) for item in items if not isinstance(item, FileDocument)]
    for path in paths:
        if not path.exists():
            raise ValidationError(f"no such file or folder: {path}", path=str(path))
    groups = []
    matcher = Matcher(exclude, include)
    uploads = [item for item in items if isinstance(item, FileDocument) and matcher.selected(item.source)]
    for folder in dict.fromkeys(d.folder for d in uploads):  # uploads: one group per folder named
        groups.append(_Group(folder, [d for d in uploads if d.folder == folder], [], whole=True))
    for path in paths:
        read = read_paths(path, include=include, exclude=exclude)
        base = path if path.is_dir() else path.parent
        failed = [FileFailure(source=str(e.details.get("path", path.name)), error=e.message) for e in read.errors]
        groups.append(_Group(str(base.resolve()), read.documents, failed, whole=path.is_dir()))
    return groups
