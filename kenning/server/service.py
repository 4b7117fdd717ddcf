"""The verbs of the facade, checked: every call names its caller, every dataset it touches is
checked against ``Access`` first, and writes to one dataset run one at a time.

The HTTP routes and the MCP tools are thin shells over this class, so the rules are written
once. Each method is one facade call plus its checks.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from .._identity import check_dataset, check_user_name
from ..errors import ConflictError, NotFoundError, PermissionDeniedError, ValidationError
from ..models import (
    CognifyResult,
    ForgetResult,
    Memory,
    MemoryInput,
    Provenance,
    PruneResult,
    RecallResult,
    RememberResult,
    Stats,
    Timeline,
)
from ..requests import DEFAULT_DATASET
from .access import ALL, Access, Principal, auth_store
from .limits import Limiter
from .schemas import AddResult, DatasetInfo, FeedbackResult, GrantInfo, MemoryPage

__all__ = ["Service", "build_service"]


class _Locks:
    """One lock per dataset: writes to a dataset are serialized, datasets run in parallel."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def get(self, dataset: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(dataset, threading.Lock())

    @contextmanager
    def hold(self, datasets: Sequence[str]) -> Iterator[None]:
        # Sorted, so two calls taking several locks never wait on each other in a cycle.
        with ExitStack() as stack:
            for name in sorted(set(datasets)):
                stack.enter_context(self.get(name))
            yield


def _chars(content: Any) -> int:
    """What a write costs against the caller's allowance: its characters."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, MemoryInput):
        return len(content.model_dump_json())
    if isinstance(content, (list, tuple)):
        return sum(_chars(item) for item in content)
    return len(str(content))


class Service:
    def __init__(self, kn: Any, access: Access, writes: Limiter | None = None) -> None:
        self.kn = kn
        self.access = access
        self.writes = writes or Limiter(0, "characters written")
        self.locks = _Locks()

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
    def remember(self, who: Principal, content: Any, *, dataset: str = DEFAULT_DATASET, **kw: Any) -> RememberResult:
        self.access.require_write(who, dataset)
        self.writes.spend(who.name, _chars(content))
        with self.locks.hold([dataset]):
            return self.kn.remember(content, dataset=dataset, **kw)

    def add(self, who: Principal, content: Any, *, dataset: str = DEFAULT_DATASET, **kw: Any) -> AddResult:
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

    def pin(self, who: Principal, memory_id: str, reason: str | None = None) -> Memory:
        memory = self._memory(who, memory_id, "write")
        with self.locks.hold([memory.dataset]):
            return self.kn.pin(memory_id, reason)

    def unpin(self, who: Principal, memory_id: str) -> Memory:
        memory = self._memory(who, memory_id, "write")
        with self.locks.hold([memory.dataset]):
            return self.kn.unpin(memory_id)

    def delete(self, who: Principal, memory_id: str) -> ForgetResult:
        memory = self._memory(who, memory_id, "delete")
        with self.locks.hold([memory.dataset]):
            return self.kn.delete(memory_id)

    def forget(self, who: Principal, memory_id: str | None = None, *, dataset: str | None = None,
               everything: bool = False) -> ForgetResult:
        if sum([memory_id is not None, dataset is not None, everything]) != 1:
            raise ValidationError("give exactly one of memory_id, dataset or everything")
        if memory_id is not None:
            memory = self._memory(who, memory_id, "delete")
            with self.locks.hold([memory.dataset]):
                return self.kn.forget(memory_id)
        if everything:
            if not who.admin:
                raise PermissionDeniedError("only an admin may forget everything")
            with self.locks.hold(self.kn.datasets()):
                return self.kn.forget(everything=True)
        self.access.require(who, dataset, "delete")
        if dataset not in self.kn.datasets():
            return ForgetResult()
        with self.locks.hold([dataset]):
            return self.kn.forget(dataset=dataset)

    def prune(self, who: Principal, *, dataset: str = DEFAULT_DATASET, dry_run: bool = True, **kw: Any) -> PruneResult:
        self.access.require(who, dataset, "read" if dry_run else "delete")
        with self.locks.hold([] if dry_run else [dataset]):
            return self.kn.prune(dataset=dataset, dry_run=dry_run, **kw)

    def improve(self, who: Principal, *, dataset: str = DEFAULT_DATASET) -> Any:
        self.access.require(who, dataset, "write")
        with self.locks.hold([dataset]):
            return self.kn.improve(dataset=dataset)

    def feedback(self, who: Principal, fact_id: str, helpful: bool) -> FeedbackResult:
        """Feedback on a fact the caller may read and write; others' facts are 'not found'."""
        found = self.kn.store.get_facts([fact_id])
        if not found or not self.access.can_read(who, found[0].dataset):
            raise NotFoundError(f"no fact {fact_id!r}")
        self.access.require(who, found[0].dataset, "write")
        return FeedbackResult(fact_id=fact_id, weight=self.kn.feedback(fact_id, helpful=helpful))

    # -- reads -------------------------------------------------------------------------------
    def recall(self, who: Principal, query: str, *, dataset: str = DEFAULT_DATASET, **kw: Any) -> RecallResult:
        self.access.require(who, dataset, "read")
        return self.kn.recall(query, dataset=dataset, **kw)

    def timeline(self, who: Principal, entity: str, *, dataset: str = DEFAULT_DATASET,
                 relation: str | None = None) -> Timeline:
        self.access.require(who, dataset, "read")
        return self.kn.timeline(entity, dataset=dataset, relation=relation)

    def get(self, who: Principal, memory_id: str) -> Memory:
        return self._memory(who, memory_id)

    def provenance(self, who: Principal, memory_id: str) -> Provenance:
        self._memory(who, memory_id)
        return self.kn.provenance(memory_id)

    def chain(self, who: Principal, memory_id: str) -> list[Memory]:
        self._memory(who, memory_id)
        return [m for m in self.kn.chain(memory_id) if self.access.can_read(who, m.dataset)]

    def list(self, who: Principal, *, dataset: str = DEFAULT_DATASET, limit: int = 50, offset: int = 0,
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

    # -- datasets ----------------------------------------------------------------------------
    def datasets(self, who: Principal) -> list[DatasetInfo]:
        names = self.access.readable(who)
        owners = self._owner_names(names)
        return [
            DatasetInfo(name=n, owner=owners.get(n), permissions=_ordered(self.access.permissions(who, n)))
            for n in names
        ]

    def create_dataset(self, who: Principal, name: str) -> DatasetInfo:
        check_dataset(name)
        if self.access.exists(name):
            raise ConflictError(f"dataset name {name!r} is taken")
        if self.access.store is not None:
            record = self.access.store.claim_dataset(name, who.user_id)
            if record.owner_id != who.user_id:
                raise ConflictError(f"dataset name {name!r} is taken")
        return DatasetInfo(name=name, owner=None if who.user_id is None else who.name,
                           permissions=_ordered(ALL))

    def delete_dataset(self, who: Principal, name: str) -> ForgetResult:
        self._require_owner(who, name)
        result = ForgetResult()
        if name in self.kn.datasets():
            with self.locks.hold([name]):
                result = self.kn.forget(dataset=name)
        if self.access.store is not None:
            self.access.store.drop_dataset(name)
        return result

    def grants(self, who: Principal, name: str) -> list[GrantInfo]:
        self.access.require(who, name, "share")
        store = self.access.store
        if store is None:
            return []
        users = {u.id: u.name for u in store.list_users()}
        return [GrantInfo(dataset=name, user=users.get(g.user_id, g.user_id), permissions=_ordered(g.permissions))
                for g in store.grants(name)]

    def grant(self, who: Principal, name: str, user: str, permissions: Sequence[str]) -> GrantInfo:
        """Set ``user``'s permissions on ``name``. Owners and admins grant anything; a holder of
        ``share`` grants at most the ``read`` / ``write`` they hold, and changes no grant that
        carries ``delete`` or ``share``. A name nobody holds yet is answered as any other
        (except to admins): it becomes a user without keys who holds the grant, so the answer
        never tells whether a user exists."""
        check_dataset(name)
        self.access.require(who, name, "share")
        store = self.access.store
        if store is None:
            raise ValidationError("grants need auth: this server runs with --no-auth")
        records = store.dataset_records([name])
        if not records:
            raise ConflictError(
                f"dataset {name!r} was written before auth was on and has no owner record, so a "
                f"grant would not apply: adopt it first with `kenning datasets adopt {name} "
                "[--owner USER]`"
            )
        perms = set(permissions) | {"read"} if permissions else set()
        target = store.find_user(user)
        if not who.admin and records[0].owner_id != who.user_id:
            held = store.user_grants(target.id).get(name, frozenset()) if target else frozenset()
            self._check_delegation(who, name, perms | set(held))
        if target is None:
            if who.admin:
                raise NotFoundError(f"no user {user!r}")
            check_user_name(user)
            if not perms:  # revoking what nobody holds: nothing to record
                return GrantInfo(dataset=name, user=user, permissions=[])
            target = _user_named(store, user)
        grant = store.set_grant(name, target.id, sorted(perms))
        return GrantInfo(dataset=name, user=user, permissions=_ordered(grant.permissions))

    def _check_delegation(self, who: Principal, name: str, perms: set[str]) -> None:
        """A grantor who is neither owner nor admin passes on only what they hold, never
        ``delete`` or ``share``."""
        passable = self.access.permissions(who, name) & {"read", "write"}
        if not perms <= passable:
            extra = ", ".join(_ordered(perms - passable))
            raise PermissionDeniedError(
                f"you may grant only the read and write you hold on {name!r}, not {extra}; "
                "only its owner or an admin grants or changes delete and share"
            )

    def adopt(self, who: Principal, name: str, owner: Principal | None) -> DatasetInfo:
        """Record an owner (or none: admins only, grants apply) for a dataset written before
        auth was on, so that grants on it take effect. Admins only."""
        check_dataset(name)
        store = self.access.store
        if not who.admin or store is None:
            raise PermissionDeniedError("only an admin adopts a dataset")
        if name not in self.kn.datasets():
            raise NotFoundError(f"no dataset {name!r} with memories to adopt")
        if store.dataset_records([name]):
            raise ConflictError(f"dataset {name!r} already has an owner record")
        store.claim_dataset(name, owner.user_id if owner else None)
        return DatasetInfo(name=name, owner=owner.name if owner else None, permissions=_ordered(ALL))

    def _require_owner(self, who: Principal, name: str) -> None:
        self.access.require(who, name, "read")
        if who.admin or self.access.store is None:
            return
        records = self.access.store.dataset_records([name])
        if not records or records[0].owner_id != who.user_id:
            raise PermissionDeniedError(f"only the owner of dataset {name!r} may delete it")

    def _owner_names(self, names: Sequence[str]) -> dict[str, str]:
        store = self.access.store
        if store is None:
            return {}
        users = {u.id: u.name for u in store.list_users()}
        return {r.name: users[r.owner_id] for r in store.dataset_records(names) if r.owner_id in users}


def _user_named(store: Any, name: str) -> Any:
    """The user called ``name``, created without keys if nobody holds the name yet."""
    try:
        return store.create_user(name)
    except ConflictError:  # created meanwhile
        return store.find_user(name)


def build_service(kn: Any, *, auth: bool) -> Service:
    """The checked verbs over ``kn`` with the rate limits of its settings (HTTP and MCP)."""
    settings = kn.settings
    access = Access(auth_store(kn) if auth else None, kn.datasets,
                    Limiter(settings.auth_failures_per_minute, "failed API keys"))
    return Service(kn, access, Limiter(settings.write_chars_per_minute, "characters written"))


def _ordered(perms: frozenset[str] | set[str]) -> list[str]:
    return [p for p in ("read", "write", "delete", "share") if p in perms]


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
