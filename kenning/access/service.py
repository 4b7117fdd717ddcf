"""The verbs of the facade, checked: every call names its caller, every dataset it touches is
checked against ``Access`` first, and writes to one dataset run one at a time. Each verb takes
its request model's fields as keywords (``kenning.requests``) and passes on those it does not
check, so a new parameter needs no edit here.

The HTTP routes and the MCP tools are thin shells over this class, so the rules are written
once. Each method is one facade call plus its checks.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, cast

from .accounts import Accounts, DatasetLocks
from .limits import Limiter
from .rules import Access, Principal
from ..client import Kenning
from ..errors import FileReadError, NotFoundError, PermissionDeniedError, ValidationError
from ..dates import parse_user_datetime
from ..files import FileDocument, check_sync_folder, read_document
from ..models import (
    AddResult,
    CognifyResult,
    Context,
    FeedbackResult,
    FileFailure,
    ForgetResult,
    Memory,
    MemoryInput,
    MemoryPage,
    Provenance,
    PruneResult,
    RecallResult,
    RememberResult,
    Session,
    Stats,
    Timeline,
)
from .._checks import check_text
from ..requests import DEFAULT_DATASET, SOURCE_CHARS

__all__ = ["Service", "build_service"]


def _chars(content: Any) -> int:
    """What a write costs against the caller's allowance: its characters."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, MemoryInput):
        return len(content.model_dump_json())
    if isinstance(content, FileDocument):
        return len(content.text)
    if isinstance(content, (list, tuple)):
        return sum(_chars(item) for item in content)
    return len(str(content))


class Service:
    """The verbs as a caller may use them: each checks the caller's permission, spends its
    allowance and holds the dataset's lock, then calls the engine. A verb takes its validated
    request's arguments (``kenning.requests``: the server's and the MCP tools' bodies) and
    declares no default of its own."""

    def __init__(self, kn: Kenning, access: Access, writes: Limiter | None = None) -> None:
        self.kn = kn
        self.access = access
        self.writes = writes or Limiter(0, "characters written")
        self.locks = DatasetLocks()
        #: datasets, grants, users and keys: the same checks, the same locks
        self.accounts = Accounts(kn, access, self.locks)

    # -- helpers -----------------------------------------------------------------------------
    def _memory(self, who: Principal, memory_id: str, permission: str = "read") -> Memory:
        """A memory the caller may see; another dataset's memory is 'not found', not 'denied'."""
        try:
            memory = self.kn.get(memory_id)
        except NotFoundError:
            memory = None
        if memory is None or not self.access.can_read(who, memory.dataset):
            raise NotFoundError(f"no memory {memory_id!r}")
        self.access.require(who, memory.dataset, permission)
        return memory

    # -- writes ------------------------------------------------------------------------------
    def remember(self, who: Principal, content: Any, *, dataset: str, **kw: Any) -> RememberResult:
        if any(isinstance(c, os.PathLike) for c in (content if isinstance(content, list) else [content])):
            # a caller of the server never makes it read its own files (docs/files.md)
            raise ValidationError("the server does not read paths on its machine: upload files to /v1/remember/file")
        self.access.require_write(who, dataset)
        self.writes.spend(who.name, _chars(content))
        with self.locks.hold([dataset]):
            return self.kn.remember(content, dataset=dataset, **kw)

    def remember_uploads(self, who: Principal, uploads: list[tuple[str, bytes]], *, folder: str | None = None,
                         dataset: str, **kw: Any) -> RememberResult:
        """Uploaded files (name, bytes), read as the formats their names say and remembered as
        files of ``folder``; one that cannot be read is listed in ``files.failed``, and when
        none can be, the first one's FileReadError is raised."""
        self.access.require_write(who, dataset)  # before any file is converted
        check_sync_folder(folder, sync=bool(kw.get("sync")))  # the engine's rule, before any file is read
        for name, _ in uploads:
            check_text(name, "file name", max_chars=SOURCE_CHARS)
        if kw.get("valid_at") is not None:
            parse_user_datetime(kw["valid_at"], name="valid_at")  # checked again by the engine
        documents, failed = [], []
        for name, data in uploads:
            try:
                documents.append(replace(read_document(data, name), folder=folder))
            except FileReadError as exc:
                failed.append(FileFailure(source=name, error=exc.message))
        if not documents:
            raise FileReadError(failed[0].error, path=failed[0].source)
        result = self.remember(who, documents, dataset=dataset, **kw)
        if result.files is not None:
            result.files.failed[:0] = failed
        return result

    def add(self, who: Principal, content: Any, *, dataset: str, **kw: Any) -> AddResult:
        self.access.require_write(who, dataset)
        self.writes.spend(who.name, _chars(content))
        with self.locks.hold([dataset]):
            return AddResult(memory_ids=self.kn.add(content, dataset=dataset, **kw))

    def cognify(self, who: Principal, dataset: str | None = None, **kw: Any) -> CognifyResult:
        if dataset is not None or not self.access.enabled or who.admin:
            if dataset is not None:
                self.access.require(who, dataset, "write")
            with self.locks.hold([dataset] if dataset else self.kn.datasets()):
                return self.kn.cognify(dataset=dataset, **kw)
        total = CognifyResult()
        for name in self.access.readable(who):
            if "write" in self.access.permissions(who, name):
                with self.locks.hold([name]):
                    _merge(total, self.kn.cognify(dataset=name, **kw))
        return total

    def update(self, who: Principal, memory_id: str, **changes: Any) -> Memory:
        memory = self._memory(who, memory_id, "write")
        self.writes.spend(who.name, _chars([str(v) for v in changes.values()]))
        with self.locks.hold([memory.dataset]):
            return self.kn.update(memory_id, **changes)

    def pin(self, who: Principal, memory_id: str, **kw: Any) -> Memory:
        memory = self._memory(who, memory_id, "write")
        with self.locks.hold([memory.dataset]):
            return self.kn.pin(memory_id, **kw)

    def unpin(self, who: Principal, memory_id: str) -> Memory:
        memory = self._memory(who, memory_id, "write")
        with self.locks.hold([memory.dataset]):
            return self.kn.unpin(memory_id)

    def delete(self, who: Principal, memory_id: str) -> ForgetResult:
        memory = self._memory(who, memory_id, "delete")
        with self.locks.hold([memory.dataset]):
            return self.kn.delete(memory_id)

    def forget(self, who: Principal, memory_id: str | None = None, *, dataset: str | None = None,
               everything: bool = False, user: str | None = None) -> ForgetResult:
        if sum([memory_id is not None, dataset is not None and user is None, everything, user is not None]) != 1:
            raise ValidationError("give exactly one of memory_id, dataset, everything or user (with its dataset)")
        if user is not None:
            dataset = dataset or DEFAULT_DATASET
            self.access.require(who, dataset, "delete")
            with self.locks.hold([dataset]):
                return self.kn.forget(dataset=dataset, user=user)
        if memory_id is not None:
            memory = self._memory(who, memory_id, "delete")
            with self.locks.hold([memory.dataset]):
                return self.kn.forget(memory_id)
        if everything:
            if not who.admin:
                raise PermissionDeniedError("only an admin may forget everything")
            with self.locks.hold(self.kn.datasets()):
                return self.kn.forget(everything=True)
        dataset = cast(str, dataset)  # the one argument left given (checked above)
        self.access.require(who, dataset, "delete")
        with self.locks.hold([dataset]):  # an unknown dataset: NotFoundError (404)
            return self.kn.forget(dataset=dataset)

    def prune(self, who: Principal, *, dataset: str, dry_run: bool, **kw: Any) -> PruneResult:
        self.access.require(who, dataset, "read" if dry_run else "delete")
        with self.locks.hold([] if dry_run else [dataset]):
            return self.kn.prune(dataset=dataset, dry_run=dry_run, **kw)

    def improve(self, who: Principal, *, dataset: str, **kw: Any) -> Any:
        self.access.require(who, dataset, "write")
        with self.locks.hold([dataset]):
            return self.kn.improve(dataset=dataset, **kw)

    def feedback(self, who: Principal, fact_id: str, **kw: Any) -> FeedbackResult:
        """Feedback on a fact the caller may read and write; others' facts are 'not found'."""
        found = self.kn.store.get_facts([fact_id])
        if not found or not self.access.can_read(who, found[0].dataset):
            raise NotFoundError(f"no fact {fact_id!r}")
        self.access.require(who, found[0].dataset, "write")
        return FeedbackResult(fact_id=fact_id, weight=self.kn.feedback(fact_id, **kw))

    # -- reads -------------------------------------------------------------------------------
    def recall(self, who: Principal, query: str, *, dataset: str, **kw: Any) -> RecallResult:
        self.access.require(who, dataset, "read")
        return self.kn.recall(query, dataset=dataset, **kw)

    def timeline(self, who: Principal, entity: str, *, dataset: str, **kw: Any) -> Timeline:
        self.access.require(who, dataset, "read")
        return self.kn.timeline(entity, dataset=dataset, **kw)

    def context(self, who: Principal, query: str | None = None, *, dataset: str,
                **kw: Any) -> Context:
        self.access.require(who, dataset, "read")
        return self.kn.context(query, dataset=dataset, **kw)

    def sessions(self, who: Principal, *, dataset: str, **kw: Any) -> list[Session]:
        self.access.require(who, dataset, "read")
        return self.kn.sessions(dataset=dataset, **kw)

    def get(self, who: Principal, memory_id: str) -> Memory:
        return self._memory(who, memory_id)

    def provenance(self, who: Principal, memory_id: str) -> Provenance:
        self._memory(who, memory_id)
        return self.kn.provenance(memory_id)

    def chain(self, who: Principal, memory_id: str) -> list[Memory]:
        self._memory(who, memory_id)
        return [m for m in self.kn.chain(memory_id) if self.access.can_read(who, m.dataset)]

    def list(self, who: Principal, *, dataset: str, limit: int, offset: int,
             **filters: Any) -> MemoryPage:
        self.access.require(who, dataset, "read")
        items = self.kn.list(dataset=dataset, limit=limit, offset=offset, **filters)
        following = offset + limit if len(items) == limit else None
        return MemoryPage(items=items, limit=limit, offset=offset, next_offset=following)

    def stats(self, who: Principal, dataset: str | None = None) -> Stats:
        if dataset is not None:
            self.access.require(who, dataset, "read")
            return self.kn.stats(dataset)
        if who.admin or not self.access.enabled:
            return self.kn.stats(None)
        existing = set(self.kn.datasets())
        mine = self.access.readable(who)
        total = Stats(datasets=mine)
        for name in mine:
            if name in existing:
                _add_stats(total, self.kn.stats(name))
        return total


def build_service(kn: Kenning, *, auth: bool) -> Service:
    """The checked verbs over ``kn`` with the rate limits of its settings (HTTP and MCP)."""
    return Service(kn, Access.of(kn, auth=auth),
                   Limiter(kn.settings.write_chars_per_minute, "characters written"))


def _merge(total: CognifyResult, part: CognifyResult) -> None:
    total.processed += part.processed
    total.skipped += part.skipped
    total.failed.update(part.failed)
    total.entities_created += part.entities_created
    total.facts_created += part.facts_created
    total.facts_invalidated += part.facts_invalidated
    total.usage.add(part.usage)


def _add_stats(total: Stats, part: Stats) -> None:
    for name in ("memories", "pending", "failed", "chunks", "entities", "facts", "facts_live", "facts_closed"):
        setattr(total, name, getattr(total, name) + getattr(part, name))
    total.usage.add(part.usage)
    total.embedder = total.embedder or part.embedder
    if part.last_processed_at and (total.last_processed_at is None or part.last_processed_at > total.last_processed_at):
        total.last_processed_at = part.last_processed_at
