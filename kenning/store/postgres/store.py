"""The PostgreSQL store: the SQLite schema on native types, pgvector (HNSW, cosine) for the vector
lane, generated ``tsvector`` columns with GIN indexes and BM25 (``lexical``) for the
lexical lane, a connection pool.

Concurrency across processes and machines:

- each write plan is one transaction; its :class:`Txn` primitives take a per-dataset advisory
  transaction lock the first time they touch a dataset, so writers of one dataset apply their
  plans one after the other and never both create the same entity or fact (the unique
  constraints on ``(dataset, normalized)`` and ``(dataset, content_hash)`` back this up);
- ``claim`` picks memories with ``FOR UPDATE SKIP LOCKED``, so parallel workers never process
  the same memory;
- migrations run under an advisory lock (see ``schema``).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg.types.string import StrDumperUnknown
from psycopg_pool import ConnectionPool, PoolTimeout

from ..._time import as_utc
from ...errors import ConfigurationError, EmbedderMismatchError, StoreError
from ...models import Entity, Fact, Memory, Stats, Usage
from ..auth import AuthDialect, AuthStore
from ..base import (
    ChunkRow, ClaimFilter, EntityRow, FactRow, MemoryFilter, Scored, Store, Txn, location_from, location_json,
    retry_transient,
)
from .lexical import bm25
from ..scopes import ScopeReads
from .scope import memory_where
from .schema import (
    BOOTSTRAP,
    LOCK_DATASET,
    LOCK_SCHEMA,
    PG_MIGRATIONS,
    VECTOR_TABLES,
    vector_steps,
)

__all__ = ["PostgresStore", "from_vector_text", "redact", "to_vector_text"]

log = logging.getLogger(__name__)

_JSON_FIELDS = frozenset(("decisions", "rationale", "metadata", "supersedes", "usage", "aliases"))
_TIME_FIELDS = (
    "valid_at", "retention_until", "last_accessed_at", "created_at", "updated_at", "processed_at",
)
_ORDER = {"created_at", "updated_at", "access_count", "last_accessed_at"}
_MEMORY_COLUMNS = (
    "id, dataset, kind, content, topic, context, decisions, rationale, metadata, source, "
    "content_hash, valid_at, status, error, retention, retention_until, pinned, pin_reason, "
    "access_count, last_accessed_at, supersedes, superseded_by, supersession_reason, "
    'created_at, updated_at, processed_at, usage, episode, position, "user", agent, session, role, speaker,'
    " origin, flags"
)
_FACT_COLUMNS = (
    "id, dataset, source_id, relation, target_id, description, valid_at, invalid_at, created_at,"
    " expired_at, superseded_by, memory_id, weight"
)
_ENTITY_COLUMNS = "id, dataset, name, normalized, type, description, aliases, created_at"
#: the text each kind of record is embedded from
_EMBED_TEXT = {"chunk": "text", "entity": "name", "fact": "description"}
#: the lexical lane ORs at most this many terms
_MAX_TERMS = 64
#: the HNSW candidate list is set per store (``hnsw_ef_search``); iterative scans extend it when
#: the dataset filter drops rows
_SESSION_SETUP = "SET TIME ZONE 'UTC'; SET hnsw.iterative_scan = relaxed_order; SET hnsw.ef_search = {:d}"


# -- values ------------------------------------------------------------------------------------
class _NulFreeStr(StrDumperUnknown):
    """PostgreSQL text cannot hold NUL; it is stored as U+FFFD instead of failing the write."""

    def dump(self, obj: str) -> bytes:
        return super().dump(obj.replace("\x00", "\ufffd") if "\x00" in obj else obj)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    return value


def _json(value: Any) -> Jsonb:
    import json

    return Jsonb(_scrub(value), dumps=lambda obj: json.dumps(obj, default=str))


def to_vector_text(vector: np.ndarray | None) -> str | None:
    """A vector as a pgvector text literal ('[1,2,3]'); sent as ``%s::vector``."""
    if vector is None:
        return None
    return "[" + ",".join(map(str, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def from_vector_text(text: str | None) -> np.ndarray | None:
    if text is None:
        return None
    return np.array(text[1:-1].split(","), dtype=np.float32)


def _db_value(name: str, value: Any) -> Any:
    if name == "flags":
        return ",".join(value) or None
    if name in _JSON_FIELDS:
        return _json(value)
    return value


#: SQLSTATEs of a transaction the server aborted only because of a concurrent one: run again
_TRANSIENT = {"40P01": "a deadlock with a concurrent operation", "40001": "a conflict with a concurrent operation"}
_TIMEOUTS = {"55P03": "a lock timeout", "57014": "a statement timeout or cancellation"}


def _store_error(exc: psycopg.Error) -> StoreError:
    """A psycopg error as a StoreError a client may see: the SQLSTATE and what it means, never
    the server's message, whose detail names backend pids, relations and key values."""
    state = exc.sqlstate or ""
    if state in _TRANSIENT:
        reason, transient = _TRANSIENT[state], True
    elif state in _TIMEOUTS:
        reason, transient = _TIMEOUTS[state], False
    elif isinstance(exc, psycopg.OperationalError) and not state:
        reason, transient = "the connection failed", False
    else:
        reason, transient = type(exc).__name__, False
    log.warning("postgresql error", extra={"sqlstate": state or None, "error_type": type(exc).__name__})
    message = f"PostgreSQL failed ({reason}" + (f", SQLSTATE {state})" if state else ")")
    return StoreError(message, sqlstate=state or None, transient=transient)


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)


def _memory(row: dict[str, Any]) -> Memory:
    data = dict(row)
    for name in _TIME_FIELDS:
        data[name] = as_utc(data[name])
    return Memory(**data)


def _chunk_row(row: dict[str, Any]) -> ChunkRow:
    fields = dict(row)
    return ChunkRow(**{**fields, "location": location_from(fields["location"])})


def _fact_row(row: dict[str, Any]) -> FactRow:
    return FactRow(
        id=row["id"], dataset=row["dataset"], source_id=row["source_id"], relation=row["relation"],
        target_id=row["target_id"], description=row["description"], valid_at=as_utc(row["valid_at"]),
        invalid_at=as_utc(row["invalid_at"]), created_at=as_utc(row["created_at"]),
        expired_at=as_utc(row["expired_at"]), superseded_by=row["superseded_by"],
        memory_id=row["memory_id"], weight=row["weight"],
    )


def _entity_row(row: dict[str, Any]) -> EntityRow:
    return EntityRow(
        id=row["id"], dataset=row["dataset"], name=row["name"], normalized=row["normalized"],
        type=row["type"], description=row["description"], aliases=list(row["aliases"]),
        created_at=as_utc(row["created_at"]),
    )


def _fact(row: dict[str, Any], memory_ids: list[str]) -> Fact:
    return Fact(
        id=row["id"], dataset=row["dataset"], source_id=row["source_id"], source=row["source_name"],
        relation=row["relation"], target_id=row["target_id"], target=row["target_name"],
        description=row["description"], valid_at=as_utc(row["valid_at"]),
        invalid_at=as_utc(row["invalid_at"]), created_at=as_utc(row["created_at"]),
        expired_at=as_utc(row["expired_at"]), superseded_by=row["superseded_by"],
        weight=row["weight"], memory_ids=memory_ids,
    )


def _marks(query: str) -> str:
    """SQL written with ``?`` placeholders (``ScopeReads``, ``scope.py``) in psycopg's style;
    such SQL holds no literal ``?`` or ``%``."""
    return query.replace("?", "%s")


def _ordered(by_id: dict[str, Any], ids: Sequence[str]) -> list[Any]:
    return [by_id[i] for i in ids if i in by_id]


# -- queries shared by the store and its transactions --------------------------------------------
def _update(conn: psycopg.Connection, table: str, row_id: str, fields: dict[str, Any]) -> None:
    if not fields:
        return
    sets = sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(k)) for k in fields)
    conn.execute(
        sql.SQL("UPDATE {} SET {} WHERE id = %s").format(sql.Identifier(table), sets),
        [*(_db_value(k, v) for k, v in fields.items()), row_id],
    )


def _find_entities(conn: psycopg.Connection, dataset: str, normalized: Sequence[str]) -> dict[str, EntityRow]:
    keys = list(dict.fromkeys(normalized))
    if not keys:
        return {}
    rows = conn.execute(
        f"SELECT {_ENTITY_COLUMNS} FROM entities WHERE dataset = %s AND normalized = ANY(%s)",
        (dataset, keys),
    ).fetchall()
    return {r["normalized"]: _entity_row(r) for r in rows}


def _live_facts(
    conn: psycopg.Connection, dataset: str, source_id: str, target_id: str, relation: str, by_target: bool
) -> list[FactRow]:
    by_target_clause = " OR (target_id = %(t)s AND relation = %(r)s)" if by_target else ""
    rows = conn.execute(
        f"SELECT {_FACT_COLUMNS} FROM facts WHERE dataset = %(d)s AND expired_at IS NULL AND ("
        " (source_id = %(s)s AND relation = %(r)s)"
        " OR (source_id = %(s)s AND target_id = %(t)s) OR (source_id = %(t)s AND target_id = %(s)s)"
        f"{by_target_clause}) ORDER BY valid_at, id",
        {"d": dataset, "s": source_id, "t": target_id, "r": relation},
    ).fetchall()
    return [_fact_row(r) for r in rows]


def _fact_rows(conn: psycopg.Connection, ids: Sequence[str]) -> list[FactRow]:
    if not ids:
        return []
    rows = conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE id = ANY(%s)", (list(ids),)).fetchall()
    return _ordered({r["id"]: _fact_row(r) for r in rows}, ids)


class _PgTxn(Txn):
    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self._locked: set[str] = set()
        #: (table, id) -> dataset of the rows this transaction has read or written: a row's
        #: dataset never changes, so locking it again costs no query
        self._datasets: dict[tuple[str, str], str] = {}

    def _lock(self, dataset: str) -> None:
        """Serialize writers of one dataset until this transaction ends."""
        if dataset not in self._locked:
            self.conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(current_schema() || '/' || %s))", (LOCK_DATASET, dataset)
            )
            self._locked.add(dataset)

    def _lock_row(self, table: str, row_id: str) -> None:
        """Take the dataset lock of the row before touching it: every writer of a dataset takes
        that lock before any row lock, so two writers never wait for each other's rows."""
        if (table, row_id) not in self._datasets:
            row = self.conn.execute(
                sql.SQL("SELECT dataset FROM {} WHERE id = %s").format(sql.Identifier(table)), (row_id,)
            ).fetchone()
            if row is None:
                return
            self._datasets[(table, row_id)] = row["dataset"]
        self._lock(self._datasets[(table, row_id)])

    def _seen(self, table: str, rows: Sequence[EntityRow | FactRow]) -> None:
        self._datasets.update(((table, r.id), r.dataset) for r in rows)

    def _lock_memory(self, memory_id: str) -> None:
        self._lock_row("memories", memory_id)

    # -- memories ----------------------------------------------------------------------------
    def claim_state(self, memory_id: str) -> tuple[str, str | None] | None:
        self._lock_memory(memory_id)
        row = self.conn.execute(
            "SELECT status, claimed_by FROM memories WHERE id = %s FOR UPDATE", (memory_id,)).fetchone()
        return (row["status"], row["claimed_by"]) if row else None

    def lock_memories(self, memory_ids: Sequence[str]) -> list[Memory]:
        ids = sorted(set(memory_ids))
        if not ids:
            return []
        # The dataset locks first, as every writer takes them, then the rows in one order.
        for row in self.conn.execute("SELECT DISTINCT dataset FROM memories WHERE id = ANY(%s) ORDER BY dataset",
                                     (ids,)).fetchall():
            self._lock(row["dataset"])
        rows = self.conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ANY(%s) ORDER BY id FOR UPDATE", (ids,)).fetchall()
        self._datasets.update((("memories", r["id"]), r["dataset"]) for r in rows)
        return _ordered({r["id"]: _memory(r) for r in rows}, memory_ids)

    def update_memory(self, memory_id: str, fields: dict[str, Any]) -> None:
        self._lock_memory(memory_id)
        _update(self.conn, "memories", memory_id, fields)

    def insert_chunks(self, rows: Sequence[ChunkRow]) -> None:
        if not rows:
            return
        self._lock(rows[0].dataset)
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO chunks (id, memory_id, dataset, position, text, token_count, embedding, location)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s::vector, %s::jsonb)",
                [(r.id, r.memory_id, r.dataset, r.position, r.text, r.token_count,
                  to_vector_text(r.embedding), location_json(r.location)) for r in rows],
            )

    def delete_chunks(self, memory_id: str) -> None:
        self._lock_memory(memory_id)
        self.conn.execute("DELETE FROM chunks WHERE memory_id = %s", (memory_id,))

    # -- entities ----------------------------------------------------------------------------
    def find_entities(self, dataset: str, normalized: Sequence[str]) -> dict[str, EntityRow]:
        self._lock(dataset)
        found = _find_entities(self.conn, dataset, normalized)
        self._seen("entities", list(found.values()))
        return found

    def insert_entity(self, row: EntityRow) -> None:
        self._lock(row.dataset)
        self._seen("entities", [row])
        self.conn.execute(
            "INSERT INTO entities (id, dataset, name, normalized, type, description, aliases,"
            " embedding, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s::vector, %s)",
            (row.id, row.dataset, row.name, row.normalized, row.type, row.description,
             _json(row.aliases), to_vector_text(row.embedding), row.created_at),
        )

    def update_entity(self, entity_id: str, fields: dict[str, Any]) -> None:
        # The full-text column is generated, so there is nothing else to keep current.
        if not fields:
            return
        self._lock_row("entities", entity_id)
        _update(self.conn, "entities", entity_id, fields)

    def link_entity(self, entity_id: str, memory_id: str) -> None:
        self.conn.execute(
            "INSERT INTO entity_memories (entity_id, memory_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (entity_id, memory_id),
        )

    # -- facts -------------------------------------------------------------------------------
    def live_facts_touching(self, dataset: str, source_id: str, target_id: str, relation: str,
                            by_target: bool = False) -> list[FactRow]:
        self._lock(dataset)
        rows = _live_facts(self.conn, dataset, source_id, target_id, relation, by_target)
        self._seen("facts", rows)
        return rows

    def get_fact_rows(self, fact_ids: Sequence[str]) -> list[FactRow]:
        return _fact_rows(self.conn, fact_ids)

    def insert_fact(self, row: FactRow) -> None:
        self._lock(row.dataset)
        self._seen("facts", [row])
        self.conn.execute(
            "INSERT INTO facts (id, dataset, source_id, relation, target_id, description, valid_at,"
            " invalid_at, created_at, expired_at, superseded_by, memory_id, embedding, weight)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector, %s)",
            (row.id, row.dataset, row.source_id, row.relation, row.target_id, row.description,
             row.valid_at, row.invalid_at, row.created_at, row.expired_at, row.superseded_by,
             row.memory_id, to_vector_text(row.embedding), row.weight),
        )

    def close_fact(self, fact_id: str, *, invalid_at, expired_at, superseded_by) -> None:
        self._lock_row("facts", fact_id)
        self.conn.execute(
            "UPDATE facts SET invalid_at = %s, expired_at = %s, superseded_by = %s WHERE id = %s",
            (invalid_at, expired_at, superseded_by, fact_id),
        )

    def link_fact(self, fact_id: str, memory_id: str) -> None:
        self.conn.execute(
            "INSERT INTO fact_memories (fact_id, memory_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (fact_id, memory_id),
        )

    def memory_source(self, memory_id: str) -> tuple[str | None, str | None]:
        row = self.conn.execute('SELECT origin, "user" FROM memories WHERE id = %s', (memory_id,)).fetchone()
        return (row["origin"], row["user"]) if row else (None, None)

    def fact_sources(self, fact_ids: Sequence[str]) -> dict[str, list[tuple[str | None, str | None]]]:
        out: dict[str, list[tuple[str | None, str | None]]] = {i: [] for i in fact_ids}
        rows = self.conn.execute(
            'SELECT fm.fact_id, m.origin, m."user" FROM fact_memories fm JOIN memories m ON m.id = fm.memory_id'
            " WHERE fm.fact_id = ANY(%s)", (list(fact_ids),),
        ).fetchall() if fact_ids else []
        for row in rows:
            out[row["fact_id"]].append((row["origin"], row["user"]))
        return out

    def entity_names(self, entity_ids: Sequence[str]) -> dict[str, list[str]]:
        rows = self.conn.execute("SELECT id, name, aliases FROM entities WHERE id = ANY(%s)", (list(entity_ids),))
        return {r["id"]: [r["name"], *r["aliases"]] for r in rows}

    def move_entity(self, drop_id: str, keep_id: str) -> None:
        self._lock_row("entities", keep_id)
        q = self.conn.execute
        q("UPDATE facts SET source_id = %s WHERE source_id = %s", (keep_id, drop_id))
        q("UPDATE facts SET target_id = %s WHERE target_id = %s", (keep_id, drop_id))
        q("INSERT INTO entity_memories (entity_id, memory_id) SELECT %s, memory_id FROM entity_memories"
          " WHERE entity_id = %s ON CONFLICT DO NOTHING", (keep_id, drop_id))
        q("DELETE FROM entity_memories WHERE entity_id = %s", (drop_id,))
        q("DELETE FROM entities WHERE id = %s", (drop_id,))

    def reopen_twins(self, entity_id: str) -> None:
        self.conn.execute(
            "UPDATE facts SET invalid_at = NULL, expired_at = NULL, superseded_by = NULL"
            " WHERE (source_id = %(e)s OR target_id = %(e)s) AND superseded_by IN (SELECT g.id FROM facts g"
            " WHERE g.source_id = facts.source_id AND g.relation = facts.relation"
            " AND g.target_id = facts.target_id)", {"e": entity_id})

    def live_facts_of(self, entity_id: str) -> list[tuple[str, str, str, str]]:
        rows = self.conn.execute(
            "SELECT id, source_id, relation, target_id FROM facts WHERE expired_at IS NULL"
            " AND invalid_at IS NULL AND (source_id = %(e)s OR target_id = %(e)s)"
            " ORDER BY created_at, id", {"e": entity_id})
        return [(r["id"], r["source_id"], r["relation"], r["target_id"]) for r in rows]

    def fold_facts(self, pairs: Sequence[tuple[str, str]]) -> None:
        if not pairs:
            return
        drops, keeps = [d for d, _ in pairs], [k for _, k in pairs]
        q = self.conn.execute
        q("INSERT INTO fact_memories (fact_id, memory_id) SELECT p.keep, m.memory_id"
          " FROM unnest(%s::text[], %s::text[]) AS p(drop_id, keep) JOIN fact_memories m ON m.fact_id = p.drop_id"
          " ON CONFLICT DO NOTHING", (drops, keeps))
        q("UPDATE facts SET superseded_by = p.keep FROM unnest(%s::text[], %s::text[]) AS p(drop_id, keep)"
          " WHERE facts.superseded_by = p.drop_id", (drops, keeps))
        q("DELETE FROM facts WHERE id = ANY(%s)", (drops,))

    # -- garbage collection ------------------------------------------------------------------
    def drop_links(self, memory_id: str) -> tuple[list[str], list[str]]:
        self._lock_memory(memory_id)
        q = self.conn.execute
        fact_ids = [r["fact_id"] for r in q(
            "DELETE FROM fact_memories WHERE memory_id = %s RETURNING fact_id", (memory_id,))]
        entity_ids = [r["entity_id"] for r in q(
            "DELETE FROM entity_memories WHERE memory_id = %s RETURNING entity_id", (memory_id,))]
        return fact_ids, entity_ids

    def unstated_facts(self, fact_ids: Sequence[str]) -> list[str]:
        return [r["id"] for r in self.conn.execute(
            "SELECT id FROM unnest(%s::text[]) AS id WHERE NOT EXISTS"
            " (SELECT 1 FROM fact_memories WHERE fact_id = id)", (list(fact_ids),))]

    def facts_closed_by(self, fact_ids: Sequence[str]) -> list[FactRow]:
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM facts WHERE superseded_by = ANY(%s) AND expired_at IS NOT NULL"
            " ORDER BY created_at, id", (list(fact_ids),)).fetchall()
        return [_fact_row(r) for r in rows]

    def slot_facts(self, dataset: str, relation: str, entity_id: str, by_source: bool) -> list[FactRow]:
        column = sql.Identifier("source_id" if by_source else "target_id")
        rows = self.conn.execute(
            sql.SQL("SELECT {} FROM facts WHERE dataset = %s AND relation = %s AND {} = %s").format(
                sql.SQL(_FACT_COLUMNS), column), (dataset, relation, entity_id)).fetchall()
        return [_fact_row(r) for r in rows]

    def delete_facts(self, fact_ids: Sequence[str]) -> None:
        self.conn.execute("DELETE FROM facts WHERE id = ANY(%s)", (list(fact_ids),))

    def delete_orphans(self, entity_ids: Sequence[str]) -> list[str]:
        return [r["id"] for r in self.conn.execute(
            "DELETE FROM entities e WHERE id = ANY(%s)"
            " AND NOT EXISTS (SELECT 1 FROM entity_memories m WHERE m.entity_id = e.id)"
            " AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.source_id = e.id)"
            " AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.target_id = e.id) RETURNING id",
            (list(entity_ids),))]

    def delete_memory(self, memory_id: str) -> None:
        self._lock_memory(memory_id)
        self.delete_chunks(memory_id)
        self.conn.execute("DELETE FROM memories WHERE id = %s", (memory_id,))


def _configure(conn: psycopg.Connection, hnsw_ef_search: int) -> None:
    conn.adapters.register_dumper(str, _NulFreeStr)
    conn.execute(_SESSION_SETUP.format(int(hnsw_ef_search)))


def _conninfo(url: str) -> str:
    if url.startswith("postgresql+psycopg://"):
        return "postgresql://" + url[len("postgresql+psycopg://"):]
    return url


def _probe(url: str, timeout: float) -> None:
    """One direct connection before the pool opens: an unreachable server is a one-line error
    at once, not the pool's retries (and their logged tracebacks) until it gives up."""
    try:
        psycopg.connect(_conninfo(url), connect_timeout=max(1, int(min(timeout, 10)))).close()
    except psycopg.OperationalError as exc:
        reason = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise StoreError(f"cannot connect to PostgreSQL at {redact(url)}: {reason}") from None


_AUTH = AuthDialect(
    mark="%s", types={"bool": "BOOLEAN", "false": "FALSE", "time": "TIMESTAMPTZ", "perms": "TEXT[]",
                      "table_options": ""},
    lock="SELECT pg_advisory_xact_lock(hashtext('kenning_auth_schema'))",
)


class PostgresStore(AuthStore, ScopeReads, Store):
    auth_dialect = _AUTH

    def __init__(self, url: str, *, pool_size: int = 4, timeout: float = 30.0, hnsw_ef_search: int = 100) -> None:
        self.url = url
        self._dimension: int | None = None
        self._local = threading.local()
        _probe(url, timeout)
        self._pool = ConnectionPool(
            _conninfo(url), min_size=1, max_size=max(1, pool_size), timeout=timeout,
            kwargs={"autocommit": True, "row_factory": dict_row},
            configure=lambda conn: _configure(conn, hnsw_ef_search),
            open=False, name="kenning",
        )
        try:
            self._pool.open(wait=True, timeout=min(timeout, 15.0))
        except PoolTimeout as exc:
            self._pool.close()
            raise StoreError(f"cannot connect to PostgreSQL at {redact(url)}") from exc
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise

    # -- connections -------------------------------------------------------------------------
    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection]:
        current = getattr(self._local, "txn", None)
        if current is not None:
            # Reads made inside a write transaction on the same thread see its changes, as with
            # SQLite's single connection, and do not take a second connection from the pool.
            yield current
            return
        try:
            with self._pool.connection() as conn:
                try:
                    yield conn
                except psycopg.Error:
                    # A connection that saw an error is not trusted again: a failed pipeline
                    # leaves psycopg's prepared-statement cache out of step with the server, and
                    # every later statement on it would fail. Closed, the pool replaces it.
                    conn.close()
                    raise
        except PoolTimeout as exc:
            raise StoreError(
                "no PostgreSQL connection became free in time; raise KENNING_POOL_SIZE"
            ) from exc
        except psycopg.Error as exc:
            raise _store_error(exc) from exc

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection]:
        with self._conn() as conn, conn.transaction():
            yield conn

    def _auth_read(self) -> AbstractContextManager[psycopg.Connection]:
        return self._conn()

    def _auth_write(self) -> AbstractContextManager[psycopg.Connection]:
        return self._write()

    # -- lifecycle ---------------------------------------------------------------------------
    def _migrate(self) -> None:
        with self._conn() as conn:
            if self._schema_version(conn) >= len(PG_MIGRATIONS):
                return
            self._ensure_extension(conn)
            while True:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
                    conn.execute(BOOTSTRAP)
                    version = self._schema_version(conn)
                    if version >= len(PG_MIGRATIONS):
                        return
                    for statement in PG_MIGRATIONS[version]:
                        conn.execute(statement)
                    conn.execute("INSERT INTO kenning_schema (version) VALUES (%s)", (version + 1,))
                log.info("migrated store", extra={"schema_version": version + 1})

    @staticmethod
    def _schema_version(conn: psycopg.Connection) -> int:
        missing = "SELECT to_regclass(format('%I.kenning_schema', current_schema())) IS NULL AS missing"
        if conn.execute(missing).fetchone()["missing"]:
            return 0
        return conn.execute("SELECT coalesce(max(version), 0) AS v FROM kenning_schema").fetchone()["v"]

    def _ensure_extension(self, conn: psycopg.Connection) -> None:
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            raise ConfigurationError(
                "kenning needs the pgvector extension in this database; ask an administrator to run"
                f" CREATE EXTENSION vector (it failed: {exc})"
            ) from exc

    def check_embedder(self, name: str, dimension: int) -> None:
        with self._conn() as conn:
            stored = self._read_embedder(conn)
            if stored is None or not self._vectors_ready(conn, stored[1]):
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
                    conn.execute(
                        "INSERT INTO meta VALUES ('embedder', %s), ('embedder_dimension', %s)"
                        " ON CONFLICT DO NOTHING",
                        (name, str(dimension)),
                    )
                    stored = self._read_embedder(conn)
                    self._prepare_vectors(conn, stored[1])
        if stored != (name, dimension):
            raise EmbedderMismatchError(
                f"this store's vectors come from embedder {stored[0]!r} ({stored[1]} dimensions), not"
                f" {name!r} ({dimension}); open it with the embedder it was built with, or re-embed it"
                f" with the new one: kenning --db {redact(self.url)} reembed",
                stored=stored[0],
                requested=name,
            )
        self._dimension = dimension

    def set_embedder(self, name: str, dimension: int) -> None:
        """Record a new embedder (used by re-embedding, which rewrites every vector)."""
        with self._write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
            conn.execute(
                "INSERT INTO meta VALUES ('embedder', %s), ('embedder_dimension', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (name, str(dimension)),
            )
            self._prepare_vectors(conn, dimension)
        self._dimension = dimension

    @staticmethod
    def _read_embedder(conn: psycopg.Connection) -> tuple[str, int] | None:
        rows = {r["key"]: r["value"] for r in conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('embedder', 'embedder_dimension')")}
        if len(rows) < 2:
            return None
        return rows["embedder"], int(rows["embedder_dimension"])

    @staticmethod
    def _vector_columns(conn: psycopg.Connection) -> dict[str, tuple[int, bool]]:
        """table -> (the embedding column's dimension, -1 if untyped; whether it is indexed)."""
        rows = conn.execute(
            "SELECT c.relname AS t, a.atttypmod AS n,"
            " to_regclass(format('%I.%I', current_schema(), c.relname || '_embedding_hnsw')) IS NOT NULL"
            " AS indexed FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
            " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
            " AND c.relname IN ('chunks', 'facts', 'entities') AND a.attname = 'embedding'"
        ).fetchall()
        return {r["t"]: (r["n"], r["indexed"]) for r in rows}

    def _vectors_ready(self, conn: psycopg.Connection, dimension: int) -> bool:
        return all(c == (dimension, True) for c in self._vector_columns(conn).values())

    def _prepare_vectors(self, conn: psycopg.Connection, dimension: int) -> None:
        """Type the vector columns for ``dimension`` and build their HNSW indexes, unless rows of
        another dimension are still there (a re-embedding in progress)."""
        for table, (typmod, _) in self._vector_columns(conn).items():
            if typmod != dimension and conn.execute(
                sql.SQL("SELECT 1 FROM {} WHERE embedding IS NOT NULL AND vector_dims(embedding) <> %s"
                        " LIMIT 1").format(sql.Identifier(table)), (dimension,)
            ).fetchone():
                log.warning("vectors of another dimension remain", extra={"table": table})
                continue
            for statement in vector_steps(table, dimension, typmod):
                conn.execute(statement)

    def close(self) -> None:
        self._pool.close()

    def scrub(self) -> None:
        """Nothing to do from here: deleted rows are invisible at once, and their bytes stay in
        table pages until VACUUM reuses them and in the WAL and backups until those are
        recycled; docs/postgres.md says what an operator runs to erase them."""

    @contextmanager
    def transaction(self) -> Iterator[Txn]:
        # Pipelined: statements whose results nobody reads (inserts, links, updates) go out
        # without waiting for their answers, so a write plan costs a round trip per read and
        # one for its commit, not one per statement. An error surfaces at the next read or at
        # the commit, and rolls the whole transaction back as before.
        with self._conn() as conn, conn.pipeline(), conn.transaction():
            outer, self._local.txn = getattr(self._local, "txn", None), conn
            try:
                yield _PgTxn(conn)
            finally:
                self._local.txn = outer

    # -- memories ----------------------------------------------------------------------------
    def insert_memory(self, memory: Memory, owner: str | None = None) -> tuple[str, bool]:
        return self.insert_memories([memory], owner)[0]

    def insert_memories(self, memories: Sequence[Memory], owner: str | None = None) -> list[tuple[str, bool]]:
        if not memories:
            return []
        names = [n for n in Memory.model_fields if n != "error"]
        # Each memory is one statement, its own transaction (the dataset row, then the memory
        # unless its content is stored already), all sent in one pipeline.
        insert = sql.SQL(
            "WITH ds AS (INSERT INTO datasets (name, created_at) VALUES (%s, %s) ON CONFLICT DO NOTHING)"
            " INSERT INTO memories ({}, claimed_by) VALUES ({}, %s)"
            " ON CONFLICT (dataset, content_hash) DO NOTHING RETURNING id"
        ).format(sql.SQL(", ").join(map(sql.Identifier, names)), sql.SQL(", ").join(sql.Placeholder() * len(names)))
        rows = []
        for memory in memories:
            data = memory.model_dump()
            rows.append([memory.dataset, memory.created_at, *(_db_value(n, data[n]) for n in names), owner])
        with self._conn() as conn, conn.cursor() as cur:
            cur.executemany(insert, rows, returning=True)
            created = []
            while True:
                created.append(cur.fetchone() is not None)
                if not cur.nextset():
                    break
            keys = [(m.dataset, m.content_hash) for m, new in zip(memories, created) if not new]
            stored = {}
            if keys:
                stored = {(r["dataset"], r["content_hash"]): r["id"] for r in conn.execute(
                    "SELECT id, dataset, content_hash FROM memories WHERE (dataset, content_hash) IN"
                    " (SELECT * FROM unnest(%s::text[], %s::text[]))", ([k[0] for k in keys], [k[1] for k in keys]))}
        return [(m.id, True) if new else (stored[(m.dataset, m.content_hash)], False)
                for m, new in zip(memories, created)]

    def get_memories(self, ids: Sequence[str]) -> list[Memory]:
        if not ids:
            return []
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ANY(%s)", (list(ids),)).fetchall()
        return _ordered({r["id"]: _memory(r) for r in rows}, ids)

    def memory_by_hash(self, dataset: str, content_hash: str) -> Memory | None:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE dataset = %s AND content_hash = %s",
                (dataset, content_hash),
            ).fetchone()
        return _memory(row) if row else None

    def _scope_where(self, flt: MemoryFilter, alias: str = "") -> tuple[list[str], list[Any]]:
        return memory_where(flt, alias)

    def _scope_rows(self, query: str, args: Sequence[Any]) -> list[dict[str, Any]]:
        with self._conn() as conn:
            return conn.execute(_marks(query), list(args)).fetchall()

    @staticmethod
    def _where(flt: MemoryFilter) -> tuple[sql.Composable, list[Any]]:
        clauses, args = memory_where(flt)
        if not clauses:
            return sql.SQL(""), args
        return sql.SQL(_marks(" WHERE " + " AND ".join(clauses))), args

    def list_memories(self, flt: MemoryFilter) -> list[Memory]:
        if flt.order_by not in _ORDER:
            raise ValueError(f"cannot order by {flt.order_by!r}")
        where, args = self._where(flt)
        # NULLs sort as the smallest value, as in SQLite.
        direction = sql.SQL("DESC NULLS LAST" if flt.descending else "ASC NULLS FIRST")
        query = sql.SQL("SELECT {} FROM memories{} ORDER BY {} {}, id {} LIMIT %s OFFSET %s").format(
            sql.SQL(_MEMORY_COLUMNS), where, sql.Identifier(flt.order_by), direction,
            sql.SQL("DESC" if flt.descending else "ASC"),
        )
        with self._conn() as conn:
            rows = conn.execute(query, [*args, flt.limit, flt.offset]).fetchall()
        return [_memory(r) for r in rows]

    def file_memories(self, dataset: str, prefix: str = "", folder: str | None = None) -> list[tuple[str, str, str]]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT source, id, content_hash FROM memories WHERE dataset = %s AND source IS NOT NULL"
                " AND left(source, %s) = %s AND status <> 'superseded' AND metadata ? 'format'"
                " AND (%s::text IS NULL OR coalesce(metadata ->> 'folder', '') = %s)"
                " ORDER BY source, created_at, id", (dataset, len(prefix), prefix, folder, folder)).fetchall()
        return [(r["source"], r["id"], r["content_hash"]) for r in rows]

    def count_memories(self, flt: MemoryFilter) -> int:
        where, args = self._where(flt)
        with self._conn() as conn:
            return conn.execute(sql.SQL("SELECT count(*) AS n FROM memories") + where, args).fetchone()["n"]

    def set_status(self, memory_id: str, status: str, error: str | None, at: dt.datetime) -> None:
        self.update_memory(memory_id, {"status": status, "error": error, "updated_at": at})

    def update_memory(self, memory_id: str, fields: dict[str, Any]) -> None:
        with self._write() as conn:
            _update(conn, "memories", memory_id, fields)

    def claim(self, owner: str, at: dt.datetime, flt: ClaimFilter) -> list[Memory]:
        where = ["(status = ANY(%(statuses)s) OR (status = 'processing'"
                 " AND (updated_at < %(stale)s OR claimed_by = ANY(%(dead)s))))"]
        if flt.dataset is not None:
            where.append("dataset = %(dataset)s")
        if flt.ids is not None:
            where.append("id = ANY(%(ids)s)")
        if flt.after is not None:
            where.append("(created_at, id) > (%(after_at)s, %(after_id)s)")
        # Locked rows belong to another worker's claim: skip them rather than wait and re-take.
        query = (
            f"WITH picked AS (SELECT {_MEMORY_COLUMNS} FROM memories WHERE {' AND '.join(where)}"
            " ORDER BY created_at, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED),"
            " done AS (UPDATE memories m SET status = 'processing', claimed_by = %(owner)s, updated_at = %(at)s"
            " FROM picked WHERE m.id = picked.id)"
            " SELECT * FROM picked ORDER BY created_at, id"
        )
        after_at, after_id = flt.after or (None, None)
        args = {"statuses": list(flt.statuses), "stale": flt.stale_before, "dead": list(flt.dead_owners),
                "dataset": flt.dataset, "ids": list(flt.ids or []), "after_at": after_at, "after_id": after_id,
                "limit": flt.limit, "owner": owner, "at": at}
        with self._write() as conn:
            rows = conn.execute(query, args).fetchall()
        return [_memory(r).model_copy(update={"status": "processing"}) for r in rows]

    def renew_claims(self, owner: str, at: dt.datetime) -> None:
        with self._write() as conn:
            # SKIP LOCKED: a row a writer holds is being committed or deleted; waiting for it
            # while holding the others could deadlock with that writer.
            conn.execute("UPDATE memories SET updated_at = %s WHERE id IN (SELECT id FROM memories"
                         " WHERE claimed_by = %s AND status = 'processing' FOR NO KEY UPDATE SKIP LOCKED)",
                         (at, owner))

    def claim_owners(self, dataset: str | None) -> list[str]:
        query = "SELECT DISTINCT claimed_by FROM memories WHERE claimed_by IS NOT NULL AND status = 'processing'"
        with self._conn() as conn:
            rows = conn.execute(query + (" AND dataset = %s" if dataset else ""), [dataset] if dataset else [])
            return [r["claimed_by"] for r in rows]

    # -- graph reads -------------------------------------------------------------------------
    def find_entities(self, dataset: str, normalized: Sequence[str]) -> dict[str, EntityRow]:
        with self._conn() as conn:
            return _find_entities(conn, dataset, normalized)

    @staticmethod
    def _provenance(table: str, column: str, alias: str) -> sql.Composable:
        """The memory ids a record was stated by, in order, as a column of the record's row."""
        return sql.SQL("array(SELECT memory_id FROM {t} WHERE {col} = {a}.id ORDER BY memory_id) AS memory_ids").format(
            t=sql.Identifier(table), col=sql.Identifier(column), a=sql.Identifier(alias))

    def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        if not ids:
            return []
        query = sql.SQL("SELECT {}, {} FROM entities e WHERE id = ANY(%s)").format(
            sql.SQL(_ENTITY_COLUMNS), self._provenance("entity_memories", "entity_id", "e"))
        with self._conn() as conn:
            rows = conn.execute(query, (list(ids),)).fetchall()
        by_id = {
            r["id"]: Entity(
                id=r["id"], dataset=r["dataset"], name=r["name"], type=r["type"],
                description=r["description"], aliases=list(r["aliases"]),
                created_at=as_utc(r["created_at"]), memory_ids=r["memory_ids"],
            )
            for r in rows
        }
        return _ordered(by_id, ids)

    def get_facts(self, ids: Sequence[str]) -> list[Fact]:
        if not ids:
            return []
        columns = ", ".join(f"f.{c.strip()}" for c in _FACT_COLUMNS.split(","))
        query = sql.SQL(
            "SELECT {}, s.name AS source_name, t.name AS target_name, {} FROM facts f"
            " JOIN entities s ON s.id = f.source_id JOIN entities t ON t.id = f.target_id WHERE f.id = ANY(%s)"
        ).format(sql.SQL(columns), self._provenance("fact_memories", "fact_id", "f"))
        with self._conn() as conn:
            rows = conn.execute(query, (list(ids),)).fetchall()
        return _ordered({r["id"]: _fact(r, r["memory_ids"]) for r in rows}, ids)

    def get_chunks(self, ids: Sequence[str]) -> list[ChunkRow]:
        if not ids:
            return []
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT id, memory_id, dataset, position, text, token_count, location FROM chunks WHERE id = ANY(%s)",
                (list(ids),),
            ).fetchall()
        return _ordered({r["id"]: _chunk_row(r) for r in rows}, ids)

    def live_facts_touching(self, dataset: str, source_id: str, target_id: str, relation: str,
                            by_target: bool = False) -> list[FactRow]:
        with self._conn() as conn:
            return _live_facts(conn, dataset, source_id, target_id, relation, by_target)

    def entity_facts(self, entity_id: str, relation: str | None = None) -> list[Fact]:
        query = "SELECT id FROM facts WHERE (source_id = %s OR target_id = %s)"
        args: list[Any] = [entity_id, entity_id]
        if relation:
            query += " AND relation = %s"
            args.append(relation)
        with self._conn() as conn:
            ids = [r["id"] for r in conn.execute(query + " ORDER BY valid_at, created_at, id", args)]
        return self.get_facts(ids)

    def memory_chunks(self, memory_id: str) -> list[ChunkRow]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT id, memory_id, dataset, position, text, token_count, location FROM chunks"
                " WHERE memory_id = %s ORDER BY position", (memory_id,)).fetchall()
        return [_chunk_row(r) for r in rows]

    def memory_graph(self, memory_id: str) -> tuple[list[str], list[str]]:
        with self._conn() as conn:
            entities = [r["entity_id"] for r in conn.execute(
                "SELECT entity_id FROM entity_memories WHERE memory_id = %s ORDER BY entity_id", (memory_id,))]
            facts = [r["fact_id"] for r in conn.execute(
                "SELECT fact_id FROM fact_memories WHERE memory_id = %s ORDER BY fact_id", (memory_id,))]
        return entities, facts

    # -- search lanes ------------------------------------------------------------------------
    def lexical(self, dataset: str, kind: str, terms: Sequence[str], limit: int) -> list[Scored]:
        terms = [t for t in terms if t and t.strip()][:_MAX_TERMS]
        if not terms or limit <= 0:
            return []
        with self._conn() as conn:
            rows = bm25(conn, VECTOR_TABLES[kind], dataset, terms, limit)
        return [Scored(kind, row_id, score) for row_id, score in rows]

    def vector(self, dataset: str, kind: str, query: np.ndarray, limit: int) -> list[Scored]:
        if limit <= 0:
            return []
        table = sql.Identifier(VECTOR_TABLES[kind])
        with self._conn() as conn:
            if not np.any(query):
                # Cosine distance to a zero vector is undefined; every row scores 0, as in SQLite.
                rows = conn.execute(sql.SQL(
                    "SELECT id, 1.0 AS distance FROM {} WHERE dataset = %s AND embedding IS NOT NULL"
                    " ORDER BY id LIMIT %s").format(table), (dataset, limit)).fetchall()
            else:
                vec = to_vector_text(query)
                rows = conn.execute(sql.SQL(
                    "SELECT id, embedding <=> %s::vector AS distance FROM {} WHERE dataset = %s"
                    " AND embedding IS NOT NULL ORDER BY embedding <=> %s::vector LIMIT %s").format(table),
                    (vec, dataset, vec, limit)).fetchall()
        scored = [Scored(kind, r["id"], _similarity(r["distance"])) for r in rows]
        # An iterative index scan returns rows in a relaxed order.
        return sorted(scored, key=lambda s: -s.score)

    def neighbors(self, dataset: str, entity_ids: Sequence[str], limit: int) -> list[FactRow]:
        if not entity_ids:
            return []
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_FACT_COLUMNS} FROM facts WHERE dataset = %(d)s"
                " AND (source_id = ANY(%(ids)s) OR target_id = ANY(%(ids)s))"
                " ORDER BY expired_at IS NOT NULL, valid_at DESC, id LIMIT %(n)s",
                {"d": dataset, "ids": list(entity_ids), "n": limit},
            ).fetchall()
        return [_fact_row(r) for r in rows]

    def memory_neighbors(self, memory_ids: Sequence[str], window: int) -> list[tuple[str, str, int]]:
        if not memory_ids or window < 1:
            return []
        with self._conn() as conn:
            # Each memory's neighbours through the (episode, position) index; OFFSET 0 keeps the
            # planner from flattening the lateral join into a hash join over every memory
            # (episodes are few and long, so their statistics say an episode is not selective).
            rows = conn.execute(
                "SELECT m.id AS of_id, n.id AS id, n.position - m.position AS offset FROM memories m,"
                " LATERAL (SELECT n.id, n.position FROM memories n WHERE n.episode = m.episode"
                " AND n.position BETWEEN m.position - %(w)s AND m.position + %(w)s AND n.dataset = m.dataset"
                " AND n.id <> m.id OFFSET 0) n"
                " WHERE m.id = ANY(%(ids)s) AND m.episode IS NOT NULL",
                {"w": window, "ids": list(memory_ids)},
            ).fetchall()
        return [(r["of_id"], r["id"], r["offset"]) for r in rows]

    def record_access(self, dataset, memory_ids, entity_ids, fact_ids, at) -> None:
        # Writers of the dataset hold its advisory lock exclusively and take row locks in any
        # order; counting accesses under the shared lock never waits on a row a writer holds
        # while the writer waits for a row locked here (the deadlock forget and recall had).
        # Recalls share the lock and lock rows in id order, table by table, so they never
        # deadlock with each other.
        # One pipeline: the transaction, its lock and its updates go out together, one round trip.
        def once() -> None:
            with self._conn() as conn, conn.pipeline(), conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock_shared(%s, hashtext(current_schema() || '/' || %s))",
                             (LOCK_DATASET, dataset))
                for table, ids in (("memories", memory_ids), ("entities", entity_ids), ("facts", fact_ids)):
                    if ids:
                        conn.execute(sql.SQL(
                            "UPDATE {t} SET access_count = access_count + 1, last_accessed_at = %s"
                            " WHERE id IN (SELECT id FROM {t} WHERE id = ANY(%s) ORDER BY id FOR NO KEY UPDATE)"
                        ).format(t=sql.Identifier(table)), (at, sorted(set(ids))))

        retry_transient(once)

    def entity_rows(self, dataset: str, after_id: str | None, limit: int) -> list[EntityRow]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_ENTITY_COLUMNS}, embedding::text AS vector FROM entities"
                " WHERE dataset = %s AND id > %s ORDER BY id LIMIT %s",
                (dataset, after_id or "", limit),
            ).fetchall()
        out = []
        for r in rows:
            row = _entity_row(r)
            row.embedding = from_vector_text(r["vector"])
            out.append(row)
        return out

    def set_fact_weight(self, fact_id: str, weight: float) -> None:
        with self._write() as conn:
            conn.execute("UPDATE facts SET weight = %s WHERE id = %s", (weight, fact_id))

    # -- embeddings --------------------------------------------------------------------------
    def texts_to_embed(self, kind, after_id, limit, missing_only=False) -> list[tuple[str, str]]:
        where = [sql.SQL("id > %s")] if after_id else []
        if missing_only:
            where.append(sql.SQL("embedding IS NULL"))
        clause = (sql.SQL(" WHERE ") + sql.SQL(" AND ").join(where)) if where else sql.SQL("")
        query = sql.SQL("SELECT id, {} AS text FROM {}{} ORDER BY id LIMIT %s").format(
            sql.Identifier(_EMBED_TEXT[kind]), sql.Identifier(VECTOR_TABLES[kind]), clause)
        with self._conn() as conn:
            rows = conn.execute(query, ([after_id] if after_id else []) + [limit]).fetchall()
        return [(r["id"], r["text"]) for r in rows]

    def set_embeddings(self, kind: str, rows: Sequence[tuple[str, np.ndarray]]) -> None:
        if not rows:
            return
        table = VECTOR_TABLES[kind]
        with self._write() as conn:
            typmod, _ = self._vector_columns(conn)[table]
            if typmod >= 0 and any(len(v) != typmod for _, v in rows):
                # Re-embedding to another dimension: the column is untyped (and unindexed) until
                # every vector has the new size; check_embedder / set_embedder type it again.
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
                conn.execute(f"DROP INDEX IF EXISTS {table}_embedding_hnsw")
                conn.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector")
            with conn.cursor() as cur:
                cur.executemany(
                    sql.SQL("UPDATE {} SET embedding = %s::vector WHERE id = %s").format(sql.Identifier(table)),
                    [(to_vector_text(v), i) for i, v in rows],
                )

    # -- bookkeeping -------------------------------------------------------------------------
    def stats(self, dataset: str | None) -> Stats:
        where = "WHERE dataset = %(d)s" if dataset else ""
        args = {"d": dataset}
        with self._conn() as conn:
            q = lambda text: conn.execute(text, args).fetchone()  # noqa: E731
            mem = q("SELECT count(*) AS n, count(*) FILTER (WHERE status IN ('pending', 'processing')) AS pending,"
                    " count(*) FILTER (WHERE status = 'failed') AS failed, max(processed_at) AS last"
                    f" FROM memories {where}")
            chunks = q(f"SELECT count(*) AS n FROM chunks {where}")["n"]
            entities = q(f"SELECT count(*) AS n FROM entities {where}")["n"]
            facts = q("SELECT count(*) AS n, count(*) FILTER (WHERE expired_at IS NULL AND invalid_at IS NULL)"
                      f" AS live FROM facts {where}")
            totals = conn.execute(
                f"SELECT u.key, sum(u.value::numeric) AS total FROM memories, jsonb_each_text(usage) u {where}"
                " GROUP BY u.key", args).fetchall()
            embedder = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        usage = Usage(**{
            r["key"]: float(r["total"]) if r["key"] == "seconds" else int(r["total"])
            for r in totals if r["key"] in Usage.model_fields
        })
        return Stats(
            dataset=dataset, memories=mem["n"], pending=mem["pending"], failed=mem["failed"], chunks=chunks,
            entities=entities, facts=facts["n"], facts_live=facts["live"], facts_closed=facts["n"] - facts["live"],
            datasets=self.datasets() if dataset is None else [dataset],
            last_processed_at=as_utc(mem["last"]), usage=usage, embedder=embedder["value"] if embedder else None,
        )

    def datasets(self) -> list[str]:
        with self._conn() as conn:
            return [r["name"] for r in conn.execute("SELECT name FROM datasets ORDER BY name")]


def _similarity(distance: float | None) -> float:
    if distance is None or math.isnan(distance):
        return 0.0
    return 1.0 - float(distance)
