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

The SQL it shares with SQLite is in ``kenning/store/sql.py``; its spelling in ``dialect.py``.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.abc import Buffer
from psycopg.rows import dict_row
from psycopg.types.string import StrDumperUnknown
from psycopg_pool import ConnectionPool, PoolTimeout

from ...errors import ConfigurationError, StoreError
from ..base import FACT_COLUMNS, FactRow, Scored, Txn
from ..sql import KIND_TABLE, Store
from .dialect import POSTGRES, to_vector_text
from .lexical import bm25
from .schema import BOOTSTRAP, LOCK_DATASET, LOCK_SCHEMA, PG_MIGRATIONS, vector_steps

__all__ = ["PostgresStore", "redact"]

log = logging.getLogger(__name__)

_Conn = psycopg.Connection[dict[str, Any]]

#: a ``bulk_load`` of at least this many memories builds the HNSW index of each of these tables
#: at its end when the table holds no more rows than memories to load (entities keep theirs:
#: resolving each new entity searches them)
_BULK_MIN = 200
_BULK_TABLES = ("chunks", "facts")
_BULK_BUILD_MEMORY = "256MB"
#: the lexical lane ORs at most this many terms
_MAX_TERMS = 64
#: the HNSW candidate list is set per store (``hnsw_ef_search``); iterative scans extend it when
#: the dataset filter drops rows
_SESSION_SETUP = "SET TIME ZONE 'UTC'; SET hnsw.iterative_scan = relaxed_order; SET hnsw.ef_search = {:d}"


# -- values ------------------------------------------------------------------------------------
class _NulFreeStr(StrDumperUnknown):
    """PostgreSQL text cannot hold NUL; it is stored as U+FFFD instead of failing the write."""

    def dump(self, obj: str) -> Buffer | None:
        return super().dump(obj.replace("\x00", "\ufffd") if "\x00" in obj else obj)


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


class PostgresTxn(Txn):
    """The shared primitives on one pipelined connection; each takes a per-dataset advisory
    transaction lock the first time it touches a dataset."""

    def __init__(self, store: PostgresStore, conn: _Conn) -> None:
        super().__init__(store, conn)
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

    def _seen(self, table: str, rows: Sequence[Any]) -> None:
        self._datasets.update(((table, r.id), r.dataset) for r in rows)


def _configure(conn: psycopg.Connection[Any], hnsw_ef_search: int) -> None:
    conn.adapters.register_dumper(str, _NulFreeStr)
    conn.execute(_SESSION_SETUP.format(int(hnsw_ef_search)))


def _conninfo(url: str) -> str:
    return "postgresql://" + url.removeprefix("postgresql+psycopg://") if url.startswith("postgresql+psycopg://") else url


def _probe(url: str, timeout: float) -> None:
    """One direct connection before the pool opens: an unreachable server is a one-line error
    at once, not the pool's retries (and their logged tracebacks) until it gives up."""
    try:
        psycopg.connect(_conninfo(url), connect_timeout=max(1, int(min(timeout, 10)))).close()
    except psycopg.OperationalError as exc:
        reason = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise StoreError(f"cannot connect to PostgreSQL at {redact(url)}: {reason}") from None


class PostgresStore(Store):
    dialect = POSTGRES

    def __init__(self, url: str, *, pool_size: int = 4, timeout: float = 30.0, hnsw_ef_search: int = 100) -> None:
        super().__init__()
        self.url, self._shown = url, redact(url)
        self._local = threading.local()
        _probe(url, timeout)
        self._pool: ConnectionPool[Any] = ConnectionPool(
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
    def _conn(self) -> Iterator[_Conn]:
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
    def _write(self) -> Iterator[_Conn]:
        with self._conn() as conn, conn.transaction():
            yield conn

    _read = _conn
    #: each memory (and dataset row) ``insert_memories`` inserts is its own transaction, all sent
    #: in one pipeline: concurrent writers never deadlock
    _inserting = _conn

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
    def _schema_version(conn: _Conn) -> int:
        missing = "SELECT to_regclass(format('%I.kenning_schema', current_schema())) IS NULL AS missing"
        if conn.execute(missing).fetchall()[0]["missing"]:
            return 0
        return int(conn.execute("SELECT coalesce(max(version), 0) AS v FROM kenning_schema").fetchall()[0]["v"])

    def _ensure_extension(self, conn: _Conn) -> None:
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

    def _vectors_ready(self, dimension: int) -> bool:
        with self._conn() as conn:
            return all(c == (dimension, True) for c in self._vector_columns(conn).values())

    def _record_embedder(self, conn: Any, name: str, dimension: int, *, replace: bool) -> None:
        """The record, then the vector columns typed and indexed for the recorded dimension."""
        conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
        super()._record_embedder(conn, name, dimension, replace=replace)
        self._prepare_vectors(conn, (self.recorded_embedder(conn) or (name, dimension))[1])

    @staticmethod
    def _vector_columns(conn: _Conn) -> dict[str, tuple[int, bool]]:
        """table -> (the embedding column's dimension, -1 if untyped; whether it is indexed)."""
        rows = conn.execute(
            "SELECT c.relname AS t, a.atttypmod AS n,"
            " to_regclass(format('%I.%I', current_schema(), c.relname || '_embedding_hnsw')) IS NOT NULL"
            " AS indexed FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
            " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
            " AND c.relname IN ('chunks', 'facts', 'entities') AND a.attname = 'embedding'"
        ).fetchall()
        return {r["t"]: (r["n"], r["indexed"]) for r in rows}

    def _prepare_vectors(self, conn: _Conn, dimension: int) -> None:
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
        try:
            self.flush_access()
        finally:
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
                yield PostgresTxn(self, conn)
            finally:
                self._local.txn = outer

    @contextmanager
    def bulk_load(self, count: int) -> Iterator[None]:
        """A large load into a small table builds that table's HNSW index at the end, not row
        by row: building it over every row costs far less than maintaining it insert by insert
        (pgvector), the largest cost of ingest. Meanwhile the vector lane scans that table
        exactly, so every committed row is found. A crash leaves the index missing; opening
        the store builds it again (``check_embedder``)."""
        dropped = self._drop_small_indexes(count) if count >= _BULK_MIN and self._dimension else []
        try:
            yield
        finally:
            if dropped:
                self._build_indexes()

    def _drop_small_indexes(self, count: int) -> list[str]:
        """Drop the HNSW index of each bulk table holding at most ``count`` rows; the tables
        whose index it dropped. A reader holding a table keeps its index (no wait)."""
        dropped = []
        for table in _BULK_TABLES:
            try:
                with self._write() as conn:
                    conn.execute("SET LOCAL lock_timeout = '1s'")
                    conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
                    if self._vector_columns(conn).get(table) != (self._dimension, True):
                        continue
                    rows = conn.execute(sql.SQL("SELECT count(*) AS n FROM (SELECT 1 FROM {} LIMIT %s) t").format(
                        sql.Identifier(table)), (count + 1,)).fetchall()[0]["n"]
                    if rows > count:
                        continue
                    conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(f"{table}_embedding_hnsw")))
                    dropped.append(table)
            except StoreError as exc:
                log.info("bulk load keeps the index", extra={"table": table, "error": exc.message})
        return dropped

    def _build_indexes(self) -> None:
        try:
            with self._write() as conn:
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
                conn.execute(f"SET LOCAL maintenance_work_mem = '{_BULK_BUILD_MEMORY}'")
                if self._dimension:
                    self._prepare_vectors(conn, self._dimension)
        except StoreError as exc:
            # The rows are committed and found by an exact scan; the next open builds the index.
            log.warning("index build after a bulk load failed", extra={"error": exc.message})

    # -- search lanes ------------------------------------------------------------------------
    @property
    def concurrent_reads(self) -> bool:
        """Recall may read on several pooled connections at once (not inside a transaction,
        whose reads must see its writes)."""
        return getattr(self._local, "txn", None) is None

    def lexical(self, dataset: str, kind: str, terms: Sequence[str], limit: int) -> list[Scored]:
        terms = [t for t in terms if t and t.strip()][:_MAX_TERMS]
        if not terms or limit <= 0:
            return []
        with self._conn() as conn:
            rows = bm25(conn, KIND_TABLE[kind], dataset, terms, limit)
        return [Scored(kind, row_id, score) for row_id, score in rows]

    def vector(self, dataset: str, kind: str, query: np.ndarray, limit: int) -> list[Scored]:
        if limit <= 0:
            return []
        table = sql.Identifier(KIND_TABLE[kind])
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
                f"SELECT {FACT_COLUMNS} FROM facts WHERE dataset = %(d)s"
                " AND (source_id = ANY(%(ids)s) OR target_id = ANY(%(ids)s))"
                " ORDER BY expired_at IS NOT NULL, valid_at DESC, id LIMIT %(n)s",
                {"d": dataset, "ids": list(entity_ids), "n": limit},
            ).fetchall()
        return [self.dialect.fact_row(r) for r in rows]

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

    def _lock_shared(self, conn: _Conn, datasets: list[str]) -> None:
        """Writers of a dataset hold its advisory lock exclusively and take row locks in any
        order; counting accesses under the shared lock never waits on a row a writer holds while
        the writer waits for a row locked here (the deadlock forget and recall had)."""
        for dataset in datasets:
            conn.execute("SELECT pg_advisory_xact_lock_shared(%s, hashtext(current_schema() || '/' || %s))",
                         (LOCK_DATASET, dataset))

    def _fit_vectors(self, conn: _Conn, table: str, dimensions: set[int]) -> None:
        typmod, _ = self._vector_columns(conn)[table]
        if typmod >= 0 and dimensions - {typmod}:
            # Re-embedding to another dimension: the column is untyped (and unindexed) until
            # every vector has the new size; check_embedder / set_embedder type it again.
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
            conn.execute(f"DROP INDEX IF EXISTS {table}_embedding_hnsw")
            conn.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector")


def _similarity(distance: float | None) -> float:
    if distance is None or math.isnan(distance):
        return 0.0
    return 1.0 - float(distance)
