"""The store interface: a few role interfaces (memories, graph, search, admin; auth in
``auth.py``) composed into :class:`Store`. Both implementations (SQLite, PostgreSQL) run the
SQL written once in ``sql.py`` over their dialect; nothing outside ``kenning.store`` knows
which one it talks to.

Reads are plain methods. Writes go through :meth:`Store.transaction`, which yields a
:class:`Txn` of small primitives; :func:`kenning.pipeline.commit.apply_plan` drives them, so the
rules about what a write means are written once for every backend.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from ..errors import StoreError
from ..models import Entity, Fact, Location, Memory, Session, Stats
from .filters import Condition, parse_filters

__all__ = [
    "AdminStore",
    "ChunkRow",
    "ClaimFilter",
    "EntityRow",
    "FactRow",
    "GraphStore",
    "MemoryFilter",
    "MemoryStore",
    "Scored",
    "SearchStore",
    "Store",
    "Txn",
    "retry_transient",
]

T = TypeVar("T")

#: runs of a transaction the database aborted to resolve a conflict with a concurrent one
_ATTEMPTS = 5


def retry_transient(run: Callable[[], T]) -> T:
    """``run()``, run again when it raised a ``StoreError`` marked ``transient`` (the database
    aborted the transaction only to break a deadlock with a concurrent one), after a short wait
    with jitter so that the two sides do not collide again. ``run`` must be safe to repeat: it
    opens its own transaction and reads what it needs inside it."""
    for attempt in range(_ATTEMPTS):
        try:
            return run()
        except StoreError as exc:
            if not exc.details.get("transient") or attempt == _ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0.01, 0.05) * 2**attempt)
    raise AssertionError("unreachable")


@dataclass
class ChunkRow:
    id: str
    memory_id: str
    dataset: str
    position: int
    text: str
    token_count: int
    embedding: np.ndarray | None = None
    #: where the chunk sits in its file (a document read by kenning.files); None for plain text
    location: Location | None = None


def location_json(location: Location | None) -> str | None:
    """A chunk's location as stored (a JSON object, or NULL)."""
    return location.model_dump_json(exclude_defaults=True) if location is not None else None


def location_from(value: Any) -> Location | None:
    """A stored location (JSON text, or the dict a JSONB column reads as) as a ``Location``."""
    if value is None:
        return None
    return Location.model_validate_json(value) if isinstance(value, str) else Location.model_validate(value)


@dataclass
class EntityRow:
    id: str
    dataset: str
    name: str
    normalized: str
    type: str
    description: str = ""
    aliases: list[str] = field(default_factory=list)
    embedding: np.ndarray | None = None
    created_at: dt.datetime | None = None


@dataclass
class FactRow:
    id: str
    dataset: str
    source_id: str
    relation: str
    target_id: str
    description: str
    valid_at: dt.datetime
    invalid_at: dt.datetime | None
    created_at: dt.datetime
    expired_at: dt.datetime | None = None
    superseded_by: str | None = None
    memory_id: str | None = None
    embedding: np.ndarray | None = None
    weight: float = 1.0


@dataclass(frozen=True)
class Scored:
    """A search-lane candidate: record kind, id and the lane's own score (higher is better)."""

    kind: str
    id: str
    score: float


@dataclass
class ClaimFilter:
    """Which memories a worker claims. ``processing`` memories are claimed again when their
    lease ran out (last renewed before ``stale_before``) or their owner is in ``dead_owners``."""

    statuses: Sequence[str]
    stale_before: dt.datetime
    dataset: str | None = None
    ids: Sequence[str] | None = None
    dead_owners: Sequence[str] = ()
    #: only memories after this (created_at, id), in that order: a run's cursor
    after: tuple[dt.datetime, str] | None = None
    limit: int | None = None


@dataclass
class MemoryFilter:
    """Which memories a read selects. ``user``, ``agent`` and ``session`` scope memories inside
    a dataset; ``filters`` are metadata conditions (a filter expression given here is parsed by
    :func:`~kenning.store.filters.parse_filters`, so a bad one raises ``ValidationError``)."""

    dataset: str | None = None
    kind: str | None = None
    status: str | None = None
    retention: str | None = None
    pinned: bool | None = None
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    filters: tuple[Condition, ...] = ()
    order_by: str = "created_at"
    descending: bool = True
    limit: int = 50
    offset: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.filters, tuple):
            self.filters = parse_filters(self.filters)


class Txn(ABC):
    """What a write transaction offers (written once in :class:`kenning.store.sql.SQLTxn`)."""

    # memories
    @abstractmethod
    def claim_state(self, memory_id: str) -> tuple[str, str | None] | None:
        """(status, claim owner) of a memory, locked until the transaction ends; None if it no longer exists."""
    @abstractmethod
    def lock_memories(self, memory_ids: Sequence[str]) -> list[Memory]:
        """The memories that still exist, read and locked until the transaction ends: no other
        writer changes them meanwhile (a pin made while a prune page is deleted waits for it)."""
    @abstractmethod
    def update_memory(self, memory_id: str, fields: dict[str, Any]) -> None: ...
    @abstractmethod
    def insert_chunks(self, rows: Sequence[ChunkRow]) -> None: ...
    @abstractmethod
    def delete_chunks(self, memory_id: str) -> None: ...
    @abstractmethod
    def delete_memory(self, memory_id: str) -> None: ...

    # entities
    @abstractmethod
    def find_entities(self, dataset: str, normalized: Sequence[str]) -> dict[str, EntityRow]: ...
    @abstractmethod
    def insert_entity(self, row: EntityRow) -> None: ...
    @abstractmethod
    def update_entity(self, entity_id: str, fields: dict[str, Any]) -> None: ...
    @abstractmethod
    def link_entity(self, entity_id: str, memory_id: str) -> None: ...

    # facts
    @abstractmethod
    def live_facts_touching(self, dataset: str, source_id: str, target_id: str, relation: str,
                            by_target: bool = False) -> list[FactRow]:
        """Open (not expired) facts with the same source and relation or the same two endpoints
        (either direction); with ``by_target`` also those with the same target and relation."""
    @abstractmethod
    def get_fact_rows(self, fact_ids: Sequence[str]) -> list[FactRow]: ...
    @abstractmethod
    def insert_fact(self, row: FactRow) -> None: ...
    @abstractmethod
    def close_fact(self, fact_id: str, *, invalid_at: dt.datetime | None, expired_at: dt.datetime | None,
                   superseded_by: str | None) -> None: ...
    @abstractmethod
    def link_fact(self, fact_id: str, memory_id: str) -> None: ...

    # authority (kenning.pipeline.authority): what the supersession guard weighs
    @abstractmethod
    def memory_source(self, memory_id: str) -> tuple[str | None, str | None]:
        """(origin, user) of a memory; (None, None) if it does not exist."""
    @abstractmethod
    def fact_sources(self, fact_ids: Sequence[str]) -> dict[str, list[tuple[str | None, str | None]]]:
        """(origin, user) of each memory that states each fact."""

    @abstractmethod
    def entity_names(self, entity_ids: Sequence[str]) -> dict[str, list[str]]:
        """Each existing entity's name followed by its aliases."""

    # the graph rules that are not SQL
    @abstractmethod
    def merge_entities(self, keep_id: str, drop_id: str) -> list[str]:
        """Fold ``drop_id`` into ``keep_id``: facts, provenance, name as alias; live facts that
        became exact repeats are merged into the oldest. Returns the merged-away fact ids."""
    @abstractmethod
    def unlink_memory(self, memory_id: str) -> tuple[list[str], list[str]]:
        """Drop a memory's provenance links; delete facts and entities nothing else states.
        Facts closed by a deleted fact are decided again without it (``SQLTxn.reopen_closed``):
        the knowledge that closed them is gone. Returns (entity_ids, fact_ids) deleted, each sorted."""


class MemoryStore(ABC):
    """Memories: their rows, their lifecycle and claims, scopes and sessions, and the write
    transaction every change of the graph goes through."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Txn]: ...

    def atomic(self, work: Callable[[Txn], T]) -> T:
        """``work(txn)`` in one transaction, run again if the database aborted it to break a
        deadlock (see :func:`retry_transient`); the caller sees that only if it keeps happening."""

        def once() -> T:
            with self.transaction() as txn:
                return work(txn)

        return retry_transient(once)

    def write_group(self) -> AbstractContextManager[None]:
        """Writes this thread makes inside may share one commit, each still all or nothing
        (a savepoint); a store that gains nothing from it runs them as they come. Raises
        ``StoreError`` when the shared commit fails: then nothing made inside was written.
        Only for writes that wait for no model or network call (the lock is held)."""
        return nullcontext()

    def bulk_load(self, count: int) -> AbstractContextManager[None]:
        """``count`` memories are processed inside, one after the other (``remember`` of a
        list): a store may defer index upkeep to the end, as long as every read inside still
        sees every committed row. A store that gains nothing from it does nothing."""
        return nullcontext()

    @abstractmethod
    def insert_memories(self, memories: Sequence[Memory], owner: str | None = None) -> list[tuple[str, bool]]:
        """Insert memories (claimed by ``owner`` when given), in order, in one go: (id, True)
        for each new one; a memory whose content (dataset, content_hash) is stored already, or
        came earlier in the list, gives (that memory's id, False)."""
    @abstractmethod
    def get_memories(self, ids: Sequence[str]) -> list[Memory]: ...
    @abstractmethod
    def memory_by_hash(self, dataset: str, content_hash: str) -> Memory | None: ...
    @abstractmethod
    def list_memories(self, flt: MemoryFilter) -> list[Memory]: ...
    @abstractmethod
    def file_memories(self, dataset: str, prefix: str = "", folder: str | None = None) -> list[tuple[str, str, str]]:
        """(source, memory id, content hash) of the memories read from files (``metadata``
        has a ``format``) whose source starts with ``prefix``, superseded ones left out, by
        source: what folder sync (kenning.files.plan_sync) compares a folder with. ``folder``:
        only those whose ``metadata.folder`` is this (``""``: those read with no folder, uploads)."""
    @abstractmethod
    def update_memory(self, memory_id: str, fields: dict[str, Any]) -> None:
        """Change a memory's columns (lifecycle fields, status) in their own transaction."""
    @abstractmethod
    def claim(self, owner: str, at: dt.datetime, flt: ClaimFilter) -> list[Memory]:
        """Mark the matching memories ``processing`` by ``owner`` (one worker wins each) and
        return them, oldest first, at most ``flt.limit``."""
    @abstractmethod
    def renew_claims(self, owner: str, at: dt.datetime) -> None:
        """Extend the lease of every memory ``owner`` holds (``updated_at = at``)."""
    @abstractmethod
    def claim_owners(self, dataset: str | None) -> list[str]:
        """The owners of the claims on ``processing`` memories."""
    @abstractmethod
    def in_scope(self, kind: str, ids: Sequence[str], flt: MemoryFilter) -> list[str]:
        """The ids among ``ids`` (in their order) of ``kind`` records (memory | chunk | fact |
        entity) that a memory ``flt`` selects is or states: a chunk's memory, any memory in a
        fact's or entity's provenance. Recall's lanes narrow their candidates with it."""
    @abstractmethod
    def facts_stated(self, flt: MemoryFilter) -> list[Fact]:
        """Facts (open and closed) with a memory ``flt`` selects in their provenance: open ones
        first, then the latest valid; at most ``flt.limit``."""
    @abstractmethod
    def session_messages(self, dataset: str, session: str, last: int, before: int | None = None) -> list[Memory]:
        """The last ``last`` memories of a session (any status), oldest first; with ``before``,
        the last ones at positions before it (the turns that precede a message)."""
    @abstractmethod
    def sessions(self, flt: MemoryFilter) -> list[Session]:
        """The sessions of the memories ``flt`` selects (its dataset, user, agent...), the one
        with the latest message first; ``flt.limit``/``offset`` page them."""


class GraphStore(ABC):
    """Entities, facts and chunks, read outside a transaction."""

    @abstractmethod
    def find_entities(self, dataset: str, normalized: Sequence[str]) -> dict[str, EntityRow]: ...
    @abstractmethod
    def get_entities(self, ids: Sequence[str]) -> list[Entity]: ...
    @abstractmethod
    def get_facts(self, ids: Sequence[str]) -> list[Fact]: ...
    @abstractmethod
    def get_chunks(self, ids: Sequence[str]) -> list[ChunkRow]: ...
    @abstractmethod
    def chunk_owners(self, ids: Sequence[str]) -> dict[str, str]:
        """The memory each chunk belongs to, by chunk id (ids not found left out), without the text."""
    @abstractmethod
    def live_facts_touching(self, dataset: str, source_id: str, target_id: str, relation: str,
                            by_target: bool = False) -> list[FactRow]: ...
    @abstractmethod
    def entity_facts(self, entity_id: str, relation: str | None = None) -> list[Fact]:
        """Every fact (open and closed) with the entity at either end."""
    @abstractmethod
    def memory_chunks(self, memory_id: str) -> list[ChunkRow]:
        """A memory's chunks in position order (without vectors)."""
    @abstractmethod
    def memory_graph(self, memory_id: str) -> tuple[list[str], list[str]]:
        """Provenance the other way: (entity_ids, fact_ids) a memory states."""
    @abstractmethod
    def memory_facts(self, memory_ids: Sequence[str]) -> dict[str, list[str]]:
        """The fact ids each memory states (sorted, as ``memory_graph`` gives them), for many
        memories in one read; every memory asked about is a key."""
    @abstractmethod
    def entity_rows(self, dataset: str, after_id: str | None, limit: int) -> list[EntityRow]:
        """A page of a dataset's entities (with embeddings), ordered by id."""
    @abstractmethod
    def set_fact_weight(self, fact_id: str, weight: float) -> None:
        """Set the feedback weight recall multiplies a fact's score by."""


class SearchStore(ABC):
    """The lanes recall searches, and what it records of the search."""

    @abstractmethod
    def lexical(self, dataset: str, kind: str, terms: Sequence[str], limit: int) -> list[Scored]:
        """Full-text search of ``kind`` (chunk | fact | entity) for any of ``terms``."""
    @abstractmethod
    def vector(self, dataset: str, kind: str, query: np.ndarray, limit: int) -> list[Scored]: ...
    @abstractmethod
    def neighbors(self, dataset: str, entity_ids: Sequence[str], limit: int) -> list[FactRow]:
        """Facts with any of ``entity_ids`` at either end (one hop)."""
    @abstractmethod
    def memory_neighbors(self, memory_ids: Sequence[str], window: int) -> list[tuple[str, str, int]]:
        """(memory id, neighbour id, offset) for the memories at most ``window`` positions away
        in the same episode, for each of ``memory_ids``."""
    @abstractmethod
    def record_access(self, dataset: str, memory_ids: Sequence[str], entity_ids: Sequence[str],
                      fact_ids: Sequence[str], at: dt.datetime) -> None: ...


class AdminStore(ABC):
    """The store itself: its embedder and vectors, counts, datasets, closing and scrubbing."""

    url: str

    @abstractmethod
    def check_embedder(self, name: str, dimension: int) -> None:
        """Record the embedder on first use; raise EmbedderMismatchError if it differs."""
    @abstractmethod
    def set_embedder(self, name: str, dimension: int) -> None:
        """Record the embedder the stored vectors come from."""
    @abstractmethod
    def texts_to_embed(self, kind: str, after_id: str | None, limit: int, missing_only: bool = False) -> list[tuple[str, str]]:
        """(id, text) of ``kind`` records ordered by id, for (re-)embedding page by page."""
    @abstractmethod
    def set_embeddings(self, kind: str, rows: Sequence[tuple[str, np.ndarray]]) -> None:
        """Replace the vectors of the given records (one transaction)."""
    @abstractmethod
    def stats(self, dataset: str | None) -> Stats: ...
    @abstractmethod
    def datasets(self) -> list[str]: ...
    @abstractmethod
    def close(self) -> None: ...
    @abstractmethod
    def scrub(self) -> None:
        """Make deleted content unrecoverable from the store's own files, as far as the backend
        allows (``forget`` calls it before it returns)."""


class Store(MemoryStore, GraphStore, SearchStore, AdminStore):
    """A dataset-partitioned memory store, composed of its roles. Implementations are thread-safe."""
