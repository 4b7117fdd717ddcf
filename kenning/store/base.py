"""The store interface: the role interfaces (memories, search, admin; auth in ``auth.py``)
that :class:`Store` (``sql.py``) composes, the row and filter records, and :class:`Txn`, the
write transaction's primitives, which :func:`kenning.pipeline.commit.apply_plan` drives: the
rules about what a write means are written once for both backends, whose dialects spell the
SQL. Nothing outside ``kenning.store`` knows which backend it talks to.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

import numpy as np

from ..errors import StoreError
from ..models import Location, Memory
from .filters import Condition, parse_filters

__all__ = [
    "CHUNK_COLUMNS",
    "ENTITY_COLUMNS",
    "FACT_COLUMNS",
    "MEMORY_COLUMNS",
    "AdminStore",
    "ChunkRow",
    "ClaimFilter",
    "EntityRow",
    "FactRow",
    "MemoryFilter",
    "MemoryStore",
    "Scored",
    "SearchStore",
    "Store",
    "Txn",
    "columns",
    "entity_text",
    "ordered",
    "quoted",
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


def ordered(by_id: Mapping[str, Any], ids: Sequence[str]) -> list[Any]:
    """The values of ``by_id`` in the order of ``ids`` (ids not found left out)."""
    return [by_id[i] for i in ids if i in by_id]


@functools.cache
def columns(record: type) -> tuple[str, ...]:
    """The columns a record (a dataclass named after its table's columns) is read from: its
    fields but the vector, which only the vector lane reads."""
    return tuple(f.name for f in fields(record) if f.name != "embedding")


def quoted(names: Iterable[str]) -> str:
    """Column names as a list in SQL, each quoted (``user`` is a keyword)."""
    return ", ".join(f'"{name}"' for name in names)


#: what a memory, a fact row (or a Fact), an entity row and a chunk row are read from
MEMORY_COLUMNS = quoted(Memory.model_fields)
FACT_COLUMNS: str = ", ".join(columns(FactRow))
ENTITY_COLUMNS: str = ", ".join(columns(EntityRow))
CHUNK_COLUMNS: str = ", ".join(columns(ChunkRow))


class Txn:
    """What a write transaction offers: its primitives on ``conn``, over the store's dialect. A
    backend's subclass fills the hooks below (locks, and keeping a full-text index in step)."""

    def __init__(self, store: Store, conn: Any) -> None:
        self.store, self.conn, self.d = store, conn, store.dialect

    def _q(self, query: str, args: Sequence[Any] = ()) -> Any:
        return self.conn.execute(self.d.sql(query), list(args))

    def _all(self, query: str, args: Sequence[Any] = ()) -> list[Any]:
        return list(self._q(query, args).fetchall())

    def _ids(self, query: str, column: str, ids: Sequence[str], args: Sequence[Any] = ()) -> list[str]:
        """The ``id`` column of ``query`` (``{ids}``: ``column`` is one of ``ids``)."""
        clause, more = self.d.any_of(column, ids)
        return [r["id"] for r in self._all(query.format(ids=clause), [*more, *args])]

    # -- hooks -----------------------------------------------------------------------------------
    def _lock(self, dataset: str) -> None:
        """Serialize writers of ``dataset`` until the transaction ends."""

    def _lock_row(self, table: str, row_id: str) -> None:
        """Take the lock of the dataset of a row before touching it."""

    def _seen(self, table: str, rows: Sequence[Any]) -> None:
        """Rows whose dataset is now known to this transaction."""

    def _index(self, table: str, cursor: Any, dataset: str, text: str) -> None:
        """The row ``cursor`` inserted into ``table`` holds ``text`` to search."""

    def _reindex_entity(self, entity_id: str) -> None:
        """The entity's searchable text (name, aliases, description) changed."""

    def _delete_rows(self, table: str, where: str, args: Sequence[Any]) -> None:
        self._q(f"DELETE FROM {table} WHERE {where}", args)

    def _delete(self, table: str, ids: Sequence[str]) -> None:
        if ids:
            self._delete_rows(table, *self.d.any_of("id", ids))

    def _update(self, table: str, row_id: str, fields: dict[str, Any]) -> None:
        if fields:
            sets = ", ".join(f'"{k}" = ?' for k in fields)
            self._q(f"UPDATE {table} SET {sets} WHERE id = ?", [*(self.d.value(k, v) for k, v in fields.items()), row_id])

    # -- memories --------------------------------------------------------------------------------
    def claim_state(self, memory_id: str) -> tuple[str, str | None] | None:
        """(status, claim owner) of a memory, locked until the transaction ends; None if it no longer exists."""
        self._lock_row("memories", memory_id)
        rows = self._all(f"SELECT status, claimed_by FROM memories WHERE id = ?{self.d.for_update}", [memory_id])
        return (rows[0]["status"], rows[0]["claimed_by"]) if rows else None

    def lock_memories(self, memory_ids: Sequence[str]) -> list[Memory]:
        """The memories that still exist, read and locked until the transaction ends: no other
        writer changes them meanwhile (a pin made while a prune page is deleted waits for it)."""
        ids = sorted(set(memory_ids))
        if not ids:
            return []
        clause, args = self.d.any_of("id", ids)
        if self.d.for_update:  # the dataset locks first, as every writer takes them, then the rows in one order
            for row in self._all(f"SELECT DISTINCT dataset FROM memories WHERE {clause} ORDER BY dataset", args):
                self._lock(row["dataset"])
        memories = self.store._memories(f"WHERE {clause} ORDER BY id{self.d.for_update}", args, self.conn)
        self._seen("memories", memories)
        return ordered({m.id: m for m in memories}, memory_ids)

    def update_memory(self, memory_id: str, fields: dict[str, Any]) -> None:
        self._lock_row("memories", memory_id)
        self._update("memories", memory_id, fields)

    def _insert(self, table: str, row: ChunkRow | EntityRow | FactRow, text: str) -> None:
        """Insert a record (its fields are the table's columns) and index ``text`` to search."""
        values = vars(row)
        marks = {"embedding": self.d.vector_mark, "location": self.d.json_mark}
        cur = self._q(f"INSERT INTO {table} ({', '.join(values)}) VALUES ({', '.join(marks.get(c, '?') for c in values)})",
                      [self.d.value(c, v) for c, v in values.items()])
        self._index(table, cur, row.dataset, text)

    def insert_chunks(self, rows: Sequence[ChunkRow]) -> None:
        for row in rows:
            self._lock(row.dataset)
            self._insert("chunks", row, row.text)

    def delete_chunks(self, memory_id: str) -> None:
        self._lock_row("memories", memory_id)
        self._delete_rows("chunks", "memory_id = ?", [memory_id])

    # -- entities --------------------------------------------------------------------------------
    def find_entities(self, dataset: str, normalized: Sequence[str]) -> dict[str, EntityRow]:
        self._lock(dataset)
        found = self.store.find_entities(dataset, normalized, self.conn)
        self._seen("entities", list(found.values()))
        return found

    def insert_entity(self, row: EntityRow) -> None:
        self._lock(row.dataset)
        self._seen("entities", [row])
        self._insert("entities", row, entity_text(row.name, row.aliases, row.description))

    def update_entity(self, entity_id: str, fields: dict[str, Any]) -> None:
        if fields:
            self._lock_row("entities", entity_id)
            self._update("entities", entity_id, fields)
            self._reindex_entity(entity_id)

    def link_entity(self, entity_id: str, memory_id: str) -> None:
        self._link("entity", "VALUES (?, ?)", [entity_id, memory_id])

    def _link(self, kind: str, rows: str, args: Sequence[Any]) -> None:
        """Add provenance rows (``rows``: the (record id, memory id) pairs, as VALUES or a SELECT)."""
        self._q(f"INSERT INTO {kind}_memories ({kind}_id, memory_id) {rows} ON CONFLICT DO NOTHING", args)

    def entity_names(self, entity_ids: Sequence[str]) -> dict[str, list[str]]:
        """Each existing entity's name followed by its aliases."""
        clause, args = self.d.any_of("id", entity_ids)
        rows = self._all(f"SELECT id, name, aliases FROM entities WHERE {clause}", args)
        return {r["id"]: [r["name"], *self.d.json_out(r["aliases"])] for r in rows}

    # -- facts -----------------------------------------------------------------------------------
    def live_facts_touching(self, dataset: str, source_id: str, target_id: str, relation: str,
                            by_target: bool = False) -> list[FactRow]:
        """Open (not expired) facts with the same source and relation or the same two endpoints
        (either direction); with ``by_target`` also those with the same target and relation."""
        self._lock(dataset)
        rows = self.store.live_facts_touching(dataset, source_id, target_id, relation, by_target, self.conn)
        self._seen("facts", rows)
        return rows

    def get_fact_rows(self, fact_ids: Sequence[str]) -> list[FactRow]:
        if not fact_ids:
            return []
        clause, args = self.d.any_of("id", fact_ids)
        return ordered({r.id: r for r in self._facts(clause, args)}, fact_ids)

    def _facts(self, where: str, args: Sequence[Any]) -> list[FactRow]:
        return [self.d.fact_row(r) for r in self._all(f"SELECT {FACT_COLUMNS} FROM facts WHERE {where}", args)]

    def insert_fact(self, row: FactRow) -> None:
        self._lock(row.dataset)
        self._seen("facts", [row])
        self._insert("facts", row, row.description)

    def close_fact(self, fact_id: str, *, invalid_at: dt.datetime | None, expired_at: dt.datetime | None,
                   superseded_by: str | None) -> None:
        self._lock_row("facts", fact_id)
        self._q("UPDATE facts SET invalid_at = ?, expired_at = ?, superseded_by = ? WHERE id = ?",
                [self.d.time_in(invalid_at), self.d.time_in(expired_at), superseded_by, fact_id])

    def link_fact(self, fact_id: str, memory_id: str) -> None:
        self._link("fact", "VALUES (?, ?)", [fact_id, memory_id])

    def memory_source(self, memory_id: str) -> tuple[str | None, str | None]:
        """(origin, user) of a memory; (None, None) if it does not exist."""
        rows = self._all('SELECT origin, "user" FROM memories WHERE id = ?', [memory_id])
        return (rows[0]["origin"], rows[0]["user"]) if rows else (None, None)

    def fact_sources(self, fact_ids: Sequence[str]) -> dict[str, list[tuple[str | None, str | None]]]:
        """(origin, user) of each memory that states each fact."""
        out: dict[str, list[tuple[str | None, str | None]]] = {i: [] for i in fact_ids}
        if fact_ids:
            clause, args = self.d.any_of("p.fact_id", fact_ids)
            for row in self._all('SELECT p.fact_id, m.origin, m."user" FROM fact_memories p'
                                 f" JOIN memories m ON m.id = p.memory_id WHERE {clause}", args):
                out[row["fact_id"]].append((row["origin"], row["user"]))
        return out

    # -- the graph rules that are not SQL --------------------------------------------------------
    def merge_entities(self, keep_id: str, drop_id: str) -> list[str]:
        """Fold ``drop_id`` into ``keep_id``: facts, provenance, name as alias; live facts that
        became exact repeats are merged into the oldest. Returns the merged-away fact ids."""
        names = self.entity_names([keep_id, drop_id])
        if keep_id not in names or drop_id not in names:
            return []
        (keep, *aliases), dropped = names[keep_id], names[drop_id]
        aliases += [n for n in dict.fromkeys(dropped) if n != keep and n not in aliases]
        self._lock_row("entities", keep_id)
        self._q("UPDATE facts SET source_id = ? WHERE source_id = ?", [keep_id, drop_id])
        self._q("UPDATE facts SET target_id = ? WHERE target_id = ?", [keep_id, drop_id])
        self._link("entity", "SELECT ?, memory_id FROM entity_memories WHERE entity_id = ?", [keep_id, drop_id])
        self._q("DELETE FROM entity_memories WHERE entity_id = ?", [drop_id])
        self._delete("entities", [drop_id])
        self.update_entity(keep_id, {"aliases": aliases})
        # A fact closed only because its now-identical twin arrived was never contradicted.
        self._q("UPDATE facts SET invalid_at = NULL, expired_at = NULL, superseded_by = NULL"
                " WHERE (source_id = ? OR target_id = ?) AND superseded_by IN (SELECT g.id FROM facts g"
                " WHERE g.source_id = facts.source_id AND g.relation = facts.relation"
                " AND g.target_id = facts.target_id)", [keep_id, keep_id])
        first: dict[tuple[str, str, str], str] = {}
        repeats = []
        # the open facts touching the entity, oldest first
        for r in self._all("SELECT id, source_id, relation, target_id FROM facts WHERE expired_at IS NULL"
                           " AND invalid_at IS NULL AND (source_id = ? OR target_id = ?) ORDER BY created_at, id",
                           [keep_id, keep_id]):
            keeper = first.setdefault((r["source_id"], r["relation"], r["target_id"]), r["id"])
            if keeper != r["id"]:
                repeats.append((r["id"], keeper))
        # each repeat's provenance, and what it superseded, go to its keeper
        for drop, keeper in repeats:
            self._link("fact", "SELECT ?, memory_id FROM fact_memories WHERE fact_id = ?", [keeper, drop])
            self._q("UPDATE facts SET superseded_by = ? WHERE superseded_by = ?", [keeper, drop])
        self._delete("facts", [drop for drop, _ in repeats])
        return [fact_id for fact_id, _ in repeats]

    def unlink_memory(self, memory_id: str) -> tuple[list[str], list[str]]:
        """Drop a memory's provenance links; delete facts and entities nothing else states.
        Facts closed by a deleted fact are decided again without it (``reopen_closed``): the
        knowledge that closed them is gone. Returns (entity_ids, fact_ids) deleted, each sorted."""
        self._lock_row("memories", memory_id)
        fact_ids, entity_ids = ([r["id"] for r in self._all(f"DELETE FROM {kind}_memories WHERE memory_id = ?"
                                                          f" RETURNING {kind}_id AS id", [memory_id])]
                                for kind in ("fact", "entity"))
        dead_facts = sorted(self._ids("SELECT id FROM facts WHERE {ids} AND NOT EXISTS"
                                      " (SELECT 1 FROM fact_memories m WHERE m.fact_id = facts.id)", "id", fact_ids))
        if dead_facts:
            self.reopen_closed(dead_facts)
            self._delete("facts", dead_facts)
        # the entities no memory names and no fact uses any more
        dead_entities = self._ids("SELECT id FROM entities e WHERE {ids}"
                                  " AND NOT EXISTS (SELECT 1 FROM entity_memories m WHERE m.entity_id = e.id)"
                                  " AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.source_id = e.id)"
                                  " AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.target_id = e.id)",
                                  "id", entity_ids) if entity_ids else []
        self._delete("entities", dead_entities)
        return sorted(dead_entities), dead_facts

    def reopen_closed(self, dead: Sequence[str]) -> None:
        """The facts the ``dead`` facts closed, re-decided without them: a fact ``O`` closed by
        a dead fact is closed again at the start of the next later fact of its relation (or the
        dead fact's) in the same slot (same source, or same target when the dead fact shared
        only that), superseded by it; only with no later fact left is it open again. So
        deleting the middle of Acme (2020) -> Globex (2021) -> Initech (2022) leaves Acme
        closed at 2022, never a second open value beside Initech."""
        gone = set(dead)
        closers = {row.id: row for row in self.get_fact_rows(list(dead))}
        clause, args = self.d.any_of("superseded_by", dead)
        for old in self._facts(f"{clause} AND expired_at IS NOT NULL ORDER BY created_at, id", args):
            if old.id in gone:
                continue
            closer = closers.get(old.superseded_by or "")
            later = None
            if closer is not None and (closer.source_id == old.source_id or closer.target_id == old.target_id):
                by_source = closer.source_id == old.source_id
                anchor, column = (old.source_id, "source_id") if by_source else (old.target_id, "target_id")
                rank = (old.valid_at, old.created_at, old.id)
                # every fact (open and closed) of the slot, of its relation and the dead fact's:
                # a change statement may close a fact of another relation of the same family,
                # and its successors share its relation
                slot = {f.id: f for relation in dict.fromkeys((old.relation, closer.relation))
                        for f in self._facts(f"dataset = ? AND relation = ? AND {column} = ?",
                                             [old.dataset, relation, anchor])}
                later = min((
                    f for f in slot.values()
                    if f.id not in gone and f.id != old.id
                    and (f.target_id != old.target_id if by_source else f.source_id != old.source_id)
                    and (f.valid_at, f.created_at, f.id) > rank
                    and (f.invalid_at is None or f.invalid_at > f.valid_at)  # an empty interval holds no value
                ), key=lambda f: (f.valid_at, f.created_at, f.id), default=None)
            if later is not None:
                self.close_fact(old.id, invalid_at=later.valid_at, expired_at=old.expired_at,
                                superseded_by=later.id)
            else:
                self.close_fact(old.id, invalid_at=None, expired_at=None, superseded_by=None)

    def delete_memory(self, memory_id: str) -> None:
        self.delete_chunks(memory_id)
        self._q("DELETE FROM memories WHERE id = ?", [memory_id])


def entity_text(name: str, aliases: Sequence[str], description: str) -> str:
    """What an entity is searched by."""
    return " ".join([name, *aliases, description])


class MemoryStore(ABC):
    """Memories: the write transaction every change of the graph goes through (the reads, the
    inserts and the claims are ``Store``'s, in ``sql.py``)."""

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


class SearchStore(ABC):
    """The lanes recall searches (what it records of a search, the access counts, is written
    once in ``sql.py``)."""

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


class AdminStore(ABC):
    """The store itself: closing and scrubbing (its embedder and vectors are written once, in ``sql.py``)."""

    url: str

    @abstractmethod
    def close(self) -> None: ...
    @abstractmethod
    def scrub(self) -> None:
        """Make deleted content unrecoverable from the store's own files, as far as the backend
        allows (``forget`` calls it before it returns)."""


# The store every part is given is the SQL layer over these roles (both backends are one):
# imported last, as it builds on everything above.
from .sql import Store  # noqa: E402
