"""The SQL both stores run, written once over a small :class:`Dialect`.

Every statement here is written with ``?`` placeholders; the dialect spells them for its driver
(``%s`` for psycopg), says how a list of ids is passed (``IN (?, ?)`` or ``= ANY(?)``), how
times, JSON, vectors and booleans are stored and read back, how a metadata filter condition is
compiled and how tables are typed. :class:`Store` holds the reads, inserts, claims and access
counts (the write primitives, :class:`kenning.store.base.Txn`, run over the same dialect); a
backend (``sqlite/store.py``, ``postgres/store.py``) supplies its connections (``_read``,
``_write``, ``transaction``), the hooks its indexes and locks need, and what only it can do
well: the search lanes, vectors and migrations.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .._time import as_utc
from ..errors import EmbedderMismatchError
from ..models import Entity, Fact, Location, Memory, Session, Stats, Usage, stored
from ..requests import ORDERS  # the orders ``list_memories`` accepts
from .auth import AuthStore
from .base import (CHUNK_COLUMNS, ENTITY_COLUMNS, FACT_COLUMNS, MEMORY_COLUMNS, AdminStore, ChunkRow, ClaimFilter,
                   EntityRow, FactRow, MemoryFilter, MemoryStore, SearchStore, Txn, columns, ordered, quoted,
                   retry_transient)
from .filters import Condition

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "EMBED_TEXT", "KIND_TABLE", "Dialect", "Store",
]

#: the table of each kind of searchable record
KIND_TABLE = {"chunk": "chunks", "fact": "facts", "entity": "entities"}
#: the text each kind of record is embedded from
EMBED_TEXT = {"chunk": "text", "entity": "name", "fact": "description"}
_MEMORY_JSON = ("decisions", "rationale", "metadata", "supersedes", "usage")
_JSON_FIELDS = frozenset((*_MEMORY_JSON, "aliases"))
_FACT_TIMES = ("valid_at", "invalid_at", "created_at", "expired_at")
_MEMORY_TIMES = ("valid_at", "retention_until", "last_accessed_at", "created_at", "updated_at", "processed_at")
_TIMES = frozenset((*_MEMORY_TIMES, "invalid_at", "expired_at", "revoked_at"))
#: how each kind of record reaches the memories that state it (``in_scope``)
_REACH = {
    "memory": "SELECT m.id AS id FROM memories m WHERE {ids}",
    "chunk": "SELECT r.id AS id FROM chunks r JOIN memories m ON m.id = r.memory_id WHERE {ids}",
    "fact": "SELECT DISTINCT p.fact_id AS id FROM fact_memories p JOIN memories m ON m.id = p.memory_id WHERE {ids}",
    "entity": "SELECT DISTINCT p.entity_id AS id FROM entity_memories p JOIN memories m ON m.id = p.memory_id"
              " WHERE {ids}",
}
#: facts with the names of their two ends
_NAMED_FACTS = (f"SELECT {', '.join('f.' + c for c in FACT_COLUMNS.split(', '))}, s.name AS source_name,"
                " t.name AS target_name FROM facts f JOIN entities s ON s.id = f.source_id JOIN entities t ON t.id = f.target_id")
_REACH_ID = {"memory": "m.id", "chunk": "r.id", "fact": "p.fact_id", "entity": "p.entity_id"}
_BATCH = 500
#: buffered access counts are written after this many recalls, or this many seconds
_ACCESS_FLUSH_CALLS, _ACCESS_FLUSH_SECONDS = 64, 5.0
#: the memory columns a ``MemoryFilter`` compares by equality
_SCOPE_COLUMNS = ("dataset", "kind", "status", "retention", "pinned", "user", "agent", "session")
R = TypeVar("R", bound="DataclassInstance")


def _same(value: Any) -> Any:
    return value


def _and(clauses: Sequence[str], lead: str) -> str:
    return lead + " AND ".join(clauses) if clauses else ""


def row_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row as a dict: a ``sqlite3.Row`` (keys, and values when iterated) by position, since
    ``dict(row)`` looks each of its names up by a scan of the columns (18 of the 24 us of
    reading a memory's 36 columns)."""
    if isinstance(row, dict):
        return dict(row)
    return dict(zip(row.keys(), row))


@dataclass(frozen=True)
class Dialect:
    """How one backend spells what the shared SQL leaves open."""

    #: the driver's parameter mark
    mark: str
    #: a metadata filter condition as (SQL over the given metadata column, its arguments)
    condition: Callable[[Condition, str], tuple[str, list[Any]]]
    time_in: Callable[[dt.datetime | None], Any] = _same
    time_out: Callable[[Any], Any] = as_utc
    json_in: Callable[[Any], Any] = _same
    json_out: Callable[[Any], Any] = _same
    bool_in: Callable[[bool], Any] = bool
    vector_in: Callable[[np.ndarray | None], Any] = _same
    vector_out: Callable[[Any], np.ndarray | None] = _same
    #: a parameter that holds a vector, a JSON text; how a vector is selected
    vector_mark: str = "?"
    json_mark: str = "?"
    vector_select: str = "embedding"
    #: a JSON object's member as text: ``{column}`` and ``{key}`` are filled in
    json_text: str = ""
    #: appended to a read that locks the rows it returns until the transaction ends; and to
    #: one that leaves out the rows another transaction locked (``{}``: the lock's strength)
    for_update: str = ""
    skip_locked: str = ""
    #: a list of ids goes as one array parameter (``= ANY(?)``) rather than a mark per id
    arrays: bool = False
    #: column types of the tables (kenning/store/schema.py, kenning.store.auth), the
    #: permissions' spelling, and the statement that serializes the auth tables' creation
    types: dict[str, str] = field(default_factory=dict)
    auth_lock: str | None = None
    #: what ``kenning.store.copy`` reads of the catalog (in the driver's marks): ``tables``,
    #: ``columns`` (name, type), ``depends_on`` (tables a foreign key names), ``primary_key``;
    #: and ``collate``, how text keys sort bytewise in an ORDER BY
    catalog: dict[str, str] = field(default_factory=dict)
    perms_in: Callable[[list[str]], Any] = _same
    perms_out: Callable[[Any], frozenset[str]] = frozenset

    def sql(self, text: str) -> str:
        """A statement written with ``?`` marks in the driver's marks (it holds no other ``?``)."""
        return text if self.mark == "?" else text.replace("?", self.mark)

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """(``column`` is one of ``values``, its arguments)."""
        if self.arrays:
            return f"{column} = ANY(?)", [list(values)]
        return f"{column} IN ({', '.join('?' * len(values))})", list(values)

    def value(self, name: str, value: Any) -> Any:
        """A column's value as stored."""
        if name == "flags":
            return ",".join(value) or None
        if name in _JSON_FIELDS:
            return self.json_in(value)
        if name == "embedding":
            return self.vector_in(value)
        if name == "location":
            return value.model_dump_json(exclude_defaults=True) if value is not None else None  # a JSON object
        if isinstance(value, dt.datetime):
            return self.time_in(value)
        return self.bool_in(value) if isinstance(value, bool) else value

    def read(self, name: str, value: Any) -> Any:
        """A stored column's value as a record holds it (a time, parsed JSON, a location, a flag,
        a set of permissions)."""
        if value is None:
            return None
        if name in _TIMES:
            return self.time_out(value)
        if name in _JSON_FIELDS:
            return self.json_out(value)
        if name == "location":
            # JSON text, or the dict a JSONB column reads as
            return Location.model_validate_json(value) if isinstance(value, str) else Location.model_validate(value)
        if name == "permissions":
            return self.perms_out(value)
        return bool(value) if name in ("pinned", "admin") else value

    def memory_where(self, flt: MemoryFilter, alias: str = "") -> tuple[list[str], list[Any]]:
        """(clauses to AND, their arguments) selecting the memories ``flt`` selects: its scope
        columns by equality, its metadata conditions by ``condition``."""
        col = f"{alias}." if alias else ""
        clauses, args = [], []
        for name in _SCOPE_COLUMNS:
            if (value := getattr(flt, name)) is not None:
                clauses.append(f'{col}"{name}" = ?')
                args.append(self.bool_in(value) if name == "pinned" else value)
        for cond in flt.filters:
            clause, more = self.condition(cond, f"{col}metadata")
            clauses.append(clause)
            args += more
        return clauses, args

    # -- rows as records -------------------------------------------------------------------------
    def memory(self, row: Mapping[str, Any]) -> Memory:
        data = row_dict(row)
        for name in _MEMORY_JSON:
            value = data[name]
            # most rows hold the empty defaults: not parsed (a fifth of reading a memory)
            data[name] = [] if value == "[]" else {} if value == "{}" else self.json_out(value)
        for name in _MEMORY_TIMES:
            data[name] = self.time_out(data[name])
        data["pinned"] = bool(data["pinned"])
        # what the model's validators do on the way in; the rest is as written (models.stored)
        data["usage"] = Usage.model_validate(data["usage"])
        data["origin"] = Memory._stored_origin(data["origin"])
        data["flags"] = Memory._stored_flags(data["flags"])
        return stored(Memory, data)

    def record(self, record: type[R], row: Mapping[str, Any]) -> R:
        """A row as a record (a dataclass named after the columns, ``kenning.store.base.columns``),
        its values read back."""
        return record(**{c: self.read(c, row[c]) for c in columns(record)})

    def fact_row(self, row: Mapping[str, Any]) -> FactRow:
        return self.record(FactRow, row)

    def entity(self, row: Mapping[str, Any], memory_ids: list[str]) -> Entity:
        fields = {k: v for k, v in vars(self.record(EntityRow, row)).items() if k not in ("normalized", "embedding")}
        return Entity(**fields, memory_ids=memory_ids)


class Store(AuthStore, MemoryStore, SearchStore, AdminStore):
    """A dataset-partitioned memory store, thread-safe: the reads both backends share, over the
    roles each fills (``base.py``) and the connections it gives (as ``AuthStore`` says)."""

    dialect: Dialect
    #: the embedder the vectors come from (once checked), and the store as messages name it
    _dimension: int | None = None
    _shown: str

    def __init__(self, lock: Any = None) -> None:
        #: access counts not yet written, (table, id) -> (count, last access, dataset), guarded
        #: by ``lock`` (SQLite's one lock: a read and a flush never interleave)
        self._access: dict[tuple[str, str], tuple[int, dt.datetime, str]] = {}
        self._access_lock = lock or threading.RLock()
        self._access_calls, self._access_since = 0, time.monotonic()

    def _rows(self, query: str, args: Sequence[Any] = (), conn: Any = None) -> list[Any]:
        """The rows of a read, on ``conn`` (a connection ``_read`` gave) or a connection of its own."""
        with nullcontext(conn) if conn is not None else self._read() as own:
            return list(own.execute(self.dialect.sql(query), list(args)).fetchall())

    def _change(self, query: str, args: Sequence[Any] = ()) -> None:
        with self._write() as conn:
            conn.execute(self.dialect.sql(query), list(args))

    # -- graph reads a transaction runs too, on its ``conn`` -------------------------------------
    def find_entities(self, dataset: str, normalized: Sequence[str], conn: Any = None) -> dict[str, EntityRow]:
        keys = list(dict.fromkeys(normalized))
        if not keys:
            return {}
        clause, args = self.dialect.any_of("normalized", keys)
        rows = self._rows(f"SELECT {ENTITY_COLUMNS} FROM entities WHERE dataset = ? AND {clause}", [dataset, *args], conn)
        return {r["normalized"]: self.dialect.record(EntityRow, r) for r in rows}

    def live_facts_touching(self, dataset: str, source_id: str, target_id: str, relation: str,
                            by_target: bool = False, conn: Any = None) -> list[FactRow]:
        # one branch per index (facts_source, facts_pair twice): the rows are compared, never embedded
        select = f"SELECT {FACT_COLUMNS} FROM facts WHERE"
        live = "AND dataset = ? AND expired_at IS NULL"
        query = (f"{select} source_id = ? AND relation = ? {live} UNION {select} source_id = ? AND target_id = ? {live}"
                 f" UNION {select} source_id = ? AND target_id = ? {live}")
        args = [source_id, relation, dataset, source_id, target_id, dataset, target_id, source_id, dataset]
        if by_target:
            query += f" UNION {select} target_id = ? AND relation = ? {live}"
            args += [target_id, relation, dataset]
        return [self.dialect.fact_row(r) for r in self._rows(f"SELECT * FROM ({query}) u ORDER BY valid_at, id", args, conn)]

    # -- access counts -----------------------------------------------------------------------------
    def record_access(self, dataset: str, memory_ids: Sequence[str], entity_ids: Sequence[str],
                      fact_ids: Sequence[str], at: dt.datetime) -> None:
        """Counted in memory and written every ``_ACCESS_FLUSH_CALLS`` recalls, every
        ``_ACCESS_FLUSH_SECONDS`` and on close: one write per recall cost 0.8 ms at 100k on
        SQLite, 1.3 ms on PostgreSQL. Reads of memories in this process add the counts not yet
        written (``_memories``); listing memories by access, export and copy write them first."""
        with self._access_lock:
            for table, ids in (("memories", memory_ids), ("entities", entity_ids), ("facts", fact_ids)):
                for item_id in ids:
                    count = self._access.get((table, item_id), (0,))[0]
                    self._access[(table, item_id)] = (count + 1, at, dataset)
            self._access_calls += 1
            if self._access_calls >= _ACCESS_FLUSH_CALLS or time.monotonic() - self._access_since >= _ACCESS_FLUSH_SECONDS:
                self.flush_access()

    def flush_access(self) -> None:
        """Write the buffered access counts, committed at once (the counts are exact on return)."""
        with self._access_lock:
            pending, self._access = self._access, {}
            self._access_calls, self._access_since = 0, time.monotonic()
            if pending:
                retry_transient(lambda: self._write_access(pending))

    def _write_access(self, pending: dict[tuple[str, str], tuple[int, dt.datetime, str]]) -> None:
        """One statement per table, its rows in id order: concurrent flushes lock rows in one order."""
        d = self.dialect
        with self._write() as conn:
            self._lock_shared(conn, sorted({dataset for _, _, dataset in pending.values()}))
            for table in ("memories", "entities", "facts"):
                rows = sorted((i, n, d.time_in(at)) for (t, i), (n, at, _) in pending.items() if t == table)
                conn.cursor().executemany(d.sql(
                    f"UPDATE {table} SET access_count = access_count + ?, last_accessed_at ="
                    " CASE WHEN last_accessed_at >= ? THEN last_accessed_at ELSE ? END WHERE id = ?"),
                    [(n, at, at, i) for i, n, at in rows])

    def _lock_shared(self, conn: Any, datasets: list[str]) -> None:
        """Hold these datasets' writers off until the transaction ends (they may still read)."""

    # -- memories --------------------------------------------------------------------------------
    def _memories(self, where: str, args: Sequence[Any], conn: Any = None) -> list[Memory]:
        """The memories a read selects, with the access counts not yet written."""
        memories = [self.dialect.memory(r) for r in self._rows(f"SELECT {MEMORY_COLUMNS} FROM memories {where}", args, conn)]
        for memory in memories:
            if (access := self._access.get(("memories", memory.id))) is not None:
                memory.access_count += access[0]
                if memory.last_accessed_at is None or access[1] > memory.last_accessed_at:
                    memory.last_accessed_at = access[1]
        return memories

    def get_memories(self, ids: Sequence[str]) -> list[Memory]:
        if not ids:
            return []
        clause, args = self.dialect.any_of("id", ids)
        with self._read() as conn:
            return ordered({m.id: m for m in self._memories(f"WHERE {clause}", args, conn)}, ids)

    def memory_by_hash(self, dataset: str, content_hash: str) -> Memory | None:
        with self._read() as conn:
            return next(iter(self._memories("WHERE dataset = ? AND content_hash = ?", [dataset, content_hash], conn)), None)

    def list_memories(self, flt: MemoryFilter) -> list[Memory]:
        if flt.order_by not in ORDERS:
            raise ValueError(f"cannot order by {flt.order_by!r}")
        if flt.order_by in ("access_count", "last_accessed_at"):
            self.flush_access()
        clauses, args = self.dialect.memory_where(flt)
        # NULLs sort as the smallest value
        direction = "DESC" if flt.descending else "ASC"
        nulls = "NULLS LAST" if flt.descending else "NULLS FIRST"
        with self._read() as conn:
            return self._memories(f"{_and(clauses, 'WHERE ')} ORDER BY \"{flt.order_by}\" {direction} {nulls},"
                                  f" id {direction} LIMIT ? OFFSET ?", [*args, flt.limit, flt.offset], conn)

    def insert_memories(self, memories: Sequence[Memory], owner: str | None = None) -> list[tuple[str, bool]]:
        """Insert memories (claimed by ``owner`` when given), in order, in one go: (id, True)
        for each new one; a memory whose content (dataset, content_hash) is stored already, or
        came earlier in the list, gives (that memory's id, False). Each is one statement
        (``ON CONFLICT … DO NOTHING``), run in ``_inserting``; the stored ids are read back."""
        names, d = [n for n in Memory.model_fields if n != "error"], self.dialect
        datasets = {m.dataset: d.time_in(m.created_at) for m in reversed(memories)}  # each one's first
        stored: dict[tuple[str, str], str] = {}
        with self._inserting() as conn:
            conn.cursor().executemany(d.sql("INSERT INTO datasets (name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING"),
                                      sorted(datasets.items()))
            conn.cursor().executemany(d.sql(
                f"INSERT INTO memories ({quoted(names)}, claimed_by) VALUES ({', '.join('?' * (len(names) + 1))})"
                " ON CONFLICT (dataset, content_hash) DO NOTHING"),
                [[*(d.value(n, v) for n, v in m.model_dump(exclude={"error"}).items()), owner] for m in memories])
            for dataset in datasets:
                hashes = list(dict.fromkeys(m.content_hash for m in memories if m.dataset == dataset))
                for start in range(0, len(hashes), _BATCH):
                    clause, args = d.any_of("content_hash", hashes[start:start + _BATCH])
                    stored.update(((dataset, r["content_hash"]), r["id"]) for r in self._rows(
                        f"SELECT id, content_hash FROM memories WHERE dataset = ? AND {clause}", [dataset, *args], conn))
        seen: set[tuple[str, str]] = set()
        out = []
        for memory in memories:
            key = (memory.dataset, memory.content_hash)
            out.append((stored[key], stored[key] == memory.id and key not in seen))
            seen.add(key)
        return out

    def _inserting(self) -> AbstractContextManager[Any]:
        """The connection ``insert_memories`` runs on: one write transaction, unless a backend says otherwise."""
        return self._write()

    def file_memories(self, dataset: str, prefix: str = "", folder: str | None = None) -> list[tuple[str, str, str]]:
        """(source, memory id, content hash) of the memories read from files (``metadata``
        has a ``format``) whose source starts with ``prefix``, superseded ones left out, by
        source: what folder sync (kenning.files.plan_sync) compares a folder with. ``folder``:
        only those whose ``metadata.folder`` is this (``""``: those read with no folder, uploads)."""
        fmt, sub = (self.dialect.json_text.format(column="metadata", key=k) for k in ("format", "folder"))
        rows = self._rows(
            "SELECT source, id, content_hash FROM memories WHERE dataset = ? AND source IS NOT NULL"
            f" AND substr(source, 1, ?) = ? AND status <> 'superseded' AND {fmt} IS NOT NULL"
            f" AND (CAST(? AS TEXT) IS NULL OR coalesce({sub}, '') = ?) ORDER BY source, created_at, id",
            [dataset, len(prefix), prefix, folder, folder])
        return [(r["source"], r["id"], r["content_hash"]) for r in rows]

    def update_memory(self, memory_id: str, fields: dict[str, Any]) -> None:
        """Change a memory's columns (lifecycle fields, status) in their own transaction."""
        with self._write() as conn:
            Txn(self, conn)._update("memories", memory_id, fields)

    def _claimable(self, flt: ClaimFilter) -> tuple[str, list[Any]]:
        """(the condition on the memories a claim may take, its arguments)."""
        d = self.dialect
        statuses, args = d.any_of("status", flt.statuses)
        stranded = ["updated_at < ?"]
        args.append(d.time_in(flt.stale_before))
        if flt.dead_owners:
            dead, more = d.any_of("claimed_by", flt.dead_owners)
            stranded.append(dead)
            args += more
        where = [f"({statuses} OR (status = 'processing' AND ({' OR '.join(stranded)})))"]
        if flt.dataset is not None:
            where.append("dataset = ?")
            args.append(flt.dataset)
        if flt.ids is not None:
            ids, more = d.any_of("id", flt.ids)
            where.append(ids)
            args += more
        if flt.after is not None:
            where.append("(created_at, id) > (?, ?)")
            args += [d.time_in(flt.after[0]), flt.after[1]]
        return " AND ".join(where), args

    def claim(self, owner: str, at: dt.datetime, flt: ClaimFilter) -> list[Memory]:
        """Mark the matching memories ``processing`` by ``owner`` (one worker wins each) and
        return them, oldest first, at most ``flt.limit``."""
        where, args = self._claimable(flt)
        query = f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY created_at, id"
        if flt.limit is not None:
            query += " LIMIT ?"
            args.append(flt.limit)
        with self._write() as conn:
            # Rows another worker's claim has locked are skipped, not waited for and taken again.
            rows = conn.execute(self.dialect.sql(query + self.dialect.skip_locked.format("UPDATE")), args).fetchall()
            if rows:
                ids, more = self.dialect.any_of("id", [r["id"] for r in rows])
                conn.execute(self.dialect.sql(f"UPDATE memories SET status = 'processing', claimed_by = ?, updated_at = ?"
                                              f" WHERE {ids}"), [owner, self.dialect.time_in(at), *more])
        return [self.dialect.memory(r).model_copy(update={"status": "processing"}) for r in rows]

    def renew_claims(self, owner: str, at: dt.datetime) -> None:
        """Extend the lease of every memory ``owner`` holds (``updated_at = at``)."""
        # Rows a writer has locked are being committed or deleted: waiting for one while holding
        # the others could deadlock with that writer.
        self._change("UPDATE memories SET updated_at = ? WHERE id IN (SELECT id FROM memories WHERE claimed_by = ?"
                     f" AND status = 'processing'{self.dialect.skip_locked.format('NO KEY UPDATE')})",
                     [self.dialect.time_in(at), owner])

    def claim_owners(self, dataset: str | None) -> list[str]:
        """The owners of the claims on ``processing`` memories."""
        query = "SELECT DISTINCT claimed_by FROM memories WHERE claimed_by IS NOT NULL AND status = 'processing'"
        return [r["claimed_by"] for r in self._rows(query + (" AND dataset = ?" if dataset else ""),
                                                    [dataset] if dataset else [])]

    # -- scopes and sessions ---------------------------------------------------------------------
    def in_scope(self, kind: str, ids: Sequence[str], flt: MemoryFilter) -> list[str]:
        """The ids among ``ids`` (in their order) of ``kind`` records (memory | chunk | fact |
        entity) that a memory ``flt`` selects is or states: a chunk's memory, any memory in a
        fact's or entity's provenance. Recall's lanes narrow their candidates with it."""
        clauses, args = self.dialect.memory_where(flt, "m")
        unique = list(dict.fromkeys(ids))
        found: set[str] = set()
        for start in range(0, len(unique), _BATCH):
            clause, part = self.dialect.any_of(_REACH_ID[kind], unique[start : start + _BATCH])
            query = _REACH[kind].format(ids=clause) + _and(clauses, " AND ")
            found.update(r["id"] for r in self._rows(query, [*part, *args]))
        return [i for i in ids if i in found]

    def facts_stated(self, flt: MemoryFilter) -> list[Fact]:
        """Facts (open and closed) with a memory ``flt`` selects in their provenance: open ones
        first, then the latest valid; at most ``flt.limit``."""
        clauses, args = self.dialect.memory_where(flt, "m")
        query = (
            "SELECT f.id AS id FROM facts f WHERE f.id IN (SELECT p.fact_id FROM fact_memories p"
            f" JOIN memories m ON m.id = p.memory_id{_and(clauses, ' WHERE ')})"
            " ORDER BY (f.expired_at IS NOT NULL OR f.invalid_at IS NOT NULL), f.valid_at DESC, f.id LIMIT ? OFFSET ?"
        )
        return self.get_facts([r["id"] for r in self._rows(query, [*args, flt.limit, flt.offset])])

    def session_messages(self, dataset: str, session: str, last: int, before: int | None = None) -> list[Memory]:
        """The last ``last`` memories of a session (any status), oldest first; with ``before``,
        the last ones at positions before it (the turns that precede a message)."""
        # A message without a position (none is stored so) sorts last in both databases.
        query = (
            "SELECT id FROM memories WHERE dataset = ? AND session = ?" + (" AND position < ?" if before is not None else "")
            + " ORDER BY position IS NULL, position DESC, valid_at DESC, created_at DESC, id DESC LIMIT ?"
        )
        args = [dataset, session, *([before] if before is not None else []), max(0, last)]
        return self.get_memories([r["id"] for r in self._rows(query, args)][::-1])

    def sessions(self, flt: MemoryFilter) -> list[Session]:
        """The sessions of the memories ``flt`` selects (its dataset, user, agent...), the one
        with the latest message first; ``flt.limit``/``offset`` page them."""
        clauses, args = self.dialect.memory_where(flt)
        query = (
            'SELECT session, dataset, min("user") AS "user", min(agent) AS agent, min(valid_at) AS first_at,'
            " max(valid_at) AS last_at, count(*) AS messages FROM memories"
            f" WHERE {' AND '.join([*clauses, 'session IS NOT NULL'])}"
            " GROUP BY dataset, session ORDER BY last_at DESC, dataset, session LIMIT ? OFFSET ?"
        )
        return [
            Session(id=r["session"], dataset=r["dataset"], user=r["user"], agent=r["agent"],
                    first_at=self.dialect.time_out(r["first_at"]),
                    last_at=self.dialect.time_out(r["last_at"]), messages=r["messages"])
            for r in self._rows(query, [*args, flt.limit, flt.offset])
        ]

    # -- graph reads: entities, facts and chunks, outside a transaction --------------------------
    def _provenance(self, conn: Any, kind: str, ids: Sequence[str], *, of_memories: bool = False) -> dict[str, list[str]]:
        """The memory ids each record (of ``kind`` entity or fact) was stated by, or with
        ``of_memories`` the record ids each memory states; each list sorted, every id a key."""
        out: dict[str, list[str]] = {i: [] for i in ids}
        if not out:
            return out
        key, value = ("memory_id", f"{kind}_id") if of_memories else (f"{kind}_id", "memory_id")
        clause, args = self.dialect.any_of(key, list(out))
        for r in self._rows(f"SELECT {key}, {value} FROM {kind}_memories WHERE {clause} ORDER BY {key}, {value}", args, conn):
            out[r[key]].append(r[value])
        return out

    def _stated(self, kind: str, select: str, column: str, ids: Sequence[str], record: Callable[..., Any]) -> list[Any]:
        """The records of ``kind`` (entity | fact) with these ids, in their order, each with the
        memories that state it."""
        if not ids:
            return []
        clause, args = self.dialect.any_of(column, ids)
        with self._read() as conn:
            rows = self._rows(f"{select} WHERE {clause}", args, conn)
            prov = self._provenance(conn, kind, ids)
        return ordered({r["id"]: record(r, prov[r["id"]]) for r in rows}, ids)

    def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        return self._stated("entity", f"SELECT {ENTITY_COLUMNS} FROM entities", "id", ids, self.dialect.entity)

    def get_facts(self, ids: Sequence[str]) -> list[Fact]:
        return self._stated("fact", _NAMED_FACTS, "f.id", ids, self._stored_fact)

    def _stored_fact(self, row: Mapping[str, Any], memory_ids: list[str]) -> Fact:
        """A fact row with its ends' names as a Fact, not validated again (``models.stored``)."""
        data = row_dict(row)
        for name in _FACT_TIMES:
            data[name] = self.dialect.time_out(data[name])
        del data["memory_id"]
        data["source"], data["target"] = data.pop("source_name"), data.pop("target_name")
        data["memory_ids"] = list(memory_ids)
        return stored(Fact, data)

    # the memories that state each fact (as ``get_facts`` gives them), by fact id, without the
    # facts; recall votes with these and reads the facts of the memories that rank
    def fact_owners(self, ids: Sequence[str]) -> dict[str, list[str]]:
        with self._read() as conn:
            return {f: m for f, m in self._provenance(conn, "fact", list(dict.fromkeys(ids))).items() if m}

    def get_chunks(self, ids: Sequence[str]) -> list[ChunkRow]:
        if not ids:
            return []
        clause, args = self.dialect.any_of("id", ids)
        rows = self._rows(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE {clause}", args)
        return ordered({row["id"]: self.dialect.record(ChunkRow, row) for row in map(row_dict, rows)}, ids)

    # the memory each chunk belongs to, by chunk id (ids not found left out), without the text
    def chunk_owners(self, ids: Sequence[str]) -> dict[str, str]:
        if not ids:
            return {}
        unique = list(dict.fromkeys(ids))
        owners = self._known_owners(unique)
        if missing := [i for i in unique if i not in owners]:
            clause, args = self.dialect.any_of("id", missing)
            owners.update((r["id"], r["memory_id"]) for r in self._rows(f"SELECT id, memory_id FROM chunks WHERE {clause}", args))
        return owners

    def _known_owners(self, ids: Sequence[str]) -> dict[str, str]:
        """The memories of those of these chunks a backend read since its last write (the
        full-text lane reads them with the chunks it finds)."""
        return {}

    def entity_facts(self, entity_id: str, relation: str | None = None) -> list[Fact]:
        """Every fact (open and closed) with the entity at either end."""
        query = "SELECT id FROM facts WHERE (source_id = ? OR target_id = ?)" + (" AND relation = ?" if relation else "")
        rows = self._rows(query + " ORDER BY valid_at, created_at, id", [entity_id, entity_id, *([relation] if relation else [])])
        return self.get_facts([r["id"] for r in rows])

    def memory_chunks(self, memory_id: str) -> list[ChunkRow]:
        """A memory's chunks in position order (without vectors)."""
        rows = self._rows(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE memory_id = ? ORDER BY position", [memory_id])
        return [self.dialect.record(ChunkRow, r) for r in rows]

    def memory_graph(self, memory_id: str) -> tuple[list[str], list[str]]:
        """Provenance the other way: (entity_ids, fact_ids) a memory states."""
        with self._read() as conn:
            entities, facts = (self._provenance(conn, kind, [memory_id], of_memories=True)[memory_id]
                               for kind in ("entity", "fact"))
        return entities, facts

    def memory_facts(self, memory_ids: Sequence[str]) -> dict[str, list[str]]:
        """The fact ids each memory states (sorted, as ``memory_graph`` gives them), for many
        memories in one read; every memory asked about is a key."""
        with self._read() as conn:
            return self._provenance(conn, "fact", memory_ids, of_memories=True)

    def entity_rows(self, dataset: str, after_id: str | None, limit: int) -> list[EntityRow]:
        """A page of a dataset's entities (with embeddings), ordered by id."""
        rows = self._rows(f"SELECT {ENTITY_COLUMNS}, {self.dialect.vector_select} AS vector FROM entities"
                          " WHERE dataset = ? AND id > ? ORDER BY id LIMIT ?", [dataset, after_id or "", limit])
        return [replace(self.dialect.record(EntityRow, r), embedding=self.dialect.vector_out(r["vector"])) for r in rows]

    def set_fact_weight(self, fact_id: str, weight: float) -> None:
        """Set the feedback weight recall multiplies a fact's score by."""
        self._change("UPDATE facts SET weight = ? WHERE id = ?", [weight, fact_id])

    # -- the embedder record -------------------------------------------------------------------
    def recorded_embedder(self, conn: Any = None) -> tuple[str, int] | None:
        """(name, dimension) of the embedder the stored vectors come from; None before the first."""
        rows = {r["key"]: r["value"] for r in self._rows(
            "SELECT key, value FROM meta WHERE key IN ('embedder', 'embedder_dimension')", (), conn)}
        return (rows["embedder"], int(rows["embedder_dimension"])) if len(rows) == 2 else None

    def check_embedder(self, name: str, dimension: int) -> None:
        """Record the embedder on first use; raise EmbedderMismatchError if it differs."""
        stored = self.recorded_embedder()
        if stored is None or not self._vectors_ready(stored[1]):
            with self._write() as conn:
                self._record_embedder(conn, name, dimension, replace=False)
                stored = self.recorded_embedder(conn) or (name, dimension)  # both rows are there now
        if stored != (name, dimension):
            raise EmbedderMismatchError(
                f"this store's vectors come from embedder {stored[0]!r} ({stored[1]} dimensions), not"
                f" {name!r} ({dimension}); open it with the embedder it was built with, or re-embed it"
                f" with the new one: kenning --db {self._shown} reembed",
                stored=stored[0], requested=name,
            )
        self._dimension = dimension

    def set_embedder(self, name: str, dimension: int) -> None:
        """Record a new embedder (used by re-embedding, which rewrites every vector)."""
        with self._write() as conn:
            self._record_embedder(conn, name, dimension, replace=True)
        self._dimension = dimension

    def _record_embedder(self, conn: Any, name: str, dimension: int, *, replace: bool) -> None:
        """Record the embedder: a new one (``replace``) or the first (one recorded already is kept)."""
        then = "DO UPDATE SET value = excluded.value" if replace else "DO NOTHING"
        conn.execute(self.dialect.sql("INSERT INTO meta (key, value) VALUES ('embedder', ?), ('embedder_dimension', ?)"
                                      f" ON CONFLICT (key) {then}"), [name, str(dimension)])

    def _vectors_ready(self, dimension: int) -> bool:
        """Whether the vectors of ``dimension`` need nothing more than the embedder's record."""
        return True

    # -- embeddings and bookkeeping --------------------------------------------------------------
    def set_embeddings(self, kind: str, rows: Sequence[tuple[str, np.ndarray]]) -> None:
        """Replace the vectors of the given records (one transaction)."""
        table, d = KIND_TABLE[kind], self.dialect
        with self._write() as conn:
            self._fit_vectors(conn, table, {len(v) for _, v in rows})
            conn.cursor().executemany(d.sql(f"UPDATE {table} SET embedding = {d.vector_mark} WHERE id = ?"),
                                      [(d.vector_in(v), i) for i, v in rows])

    def _fit_vectors(self, conn: Any, table: str, dimensions: set[int]) -> None:
        """Make ``table``'s vector column take vectors of these ``dimensions``."""

    def texts_to_embed(self, kind: str, after_id: str | None, limit: int, missing_only: bool = False) -> list[tuple[str, str]]:
        """(id, text) of ``kind`` records ordered by id, for (re-)embedding page by page."""
        where = (["id > ?"] if after_id else []) + (["embedding IS NULL"] if missing_only else [])
        rows = self._rows(f"SELECT id, {EMBED_TEXT[kind]} AS text FROM {KIND_TABLE[kind]}{_and(where, ' WHERE ')}"
                          " ORDER BY id LIMIT ?", [*([after_id] if after_id else []), limit])
        return [(r["id"], r["text"]) for r in rows]

    def stats(self, dataset: str | None) -> Stats:
        where, args = ("WHERE dataset = ?", [dataset]) if dataset else ("", [])
        and_ = "AND" if dataset else "WHERE"
        with self._read() as conn:
            mem = self._rows("SELECT count(*) AS n, count(CASE WHEN status IN ('pending', 'processing') THEN 1 END)"
                             " AS pending, count(CASE WHEN status = 'failed' THEN 1 END) AS failed,"
                             f" max(processed_at) AS last FROM memories {where}", args, conn)[0]
            chunks, entities = (self._rows(f"SELECT count(*) AS n FROM {t} {where}", args, conn)[0]["n"]
                                for t in ("chunks", "entities"))
            facts = self._rows("SELECT count(*) AS n, count(CASE WHEN expired_at IS NULL AND invalid_at IS NULL THEN 1 END)"
                               f" AS live FROM facts {where}", args, conn)[0]
            usage = Usage()
            for r in self._rows(f"SELECT usage FROM memories {where} {and_} usage <> '{{}}'", args, conn):
                usage.add(Usage(**self.dialect.json_out(r["usage"])))
            embedder = self._rows("SELECT value FROM meta WHERE key = 'embedder'", (), conn)
        return Stats(
            dataset=dataset, memories=mem["n"], pending=mem["pending"], failed=mem["failed"], chunks=chunks,
            entities=entities, facts=facts["n"], facts_live=facts["live"], facts_closed=facts["n"] - facts["live"],
            datasets=self.datasets() if dataset is None else [dataset], last_processed_at=self.dialect.time_out(mem["last"]),
            usage=usage, embedder=embedder[0]["value"] if embedder else None,
        )

    def datasets(self) -> list[str]:
        return [r["name"] for r in self._rows("SELECT name FROM datasets ORDER BY name")]


def json_text(value: Any) -> str:
    """A JSON value as text (values JSON has no type for, such as datetimes, as strings)."""
    return json.dumps(value, default=str)
