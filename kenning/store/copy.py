"""Copy a whole store into another, across backends (``kenning migrate``).

Every table is copied row for row (memories with their lifecycle fields, chunks, entities, facts
with both timelines, provenance links, vectors, datasets, and any table both stores have, such
as the auth tables), in foreign-key order, inside one transaction of the target. Search indexes
are derived, not copied: the SQLite full-text tables are rebuilt from the rows, PostgreSQL's are
generated columns, and the HNSW indexes are built once the vectors are in. The embedder record
goes along, and the row and vector counts of both stores are compared at the end.

The two sides (``SQLiteSide``, ``PostgresSide``) are shared with ``portable.py``, which writes
the same rows to a file and reads them back (``kenning export`` / ``kenning import``).

This module reads both backends' tables directly, which only code inside ``kenning.store`` may.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._time import as_utc, to_text
from ..errors import ConflictError, StoreError
from .base import Store
from .vectors import from_blob, to_blob

__all__ = ["OWN_TABLES", "CopyReport", "PostgresSide", "SQLiteSide", "copy_store", "driver_error", "in_order", "side_of",
           "vector_value"]

_CORE = ("datasets", "memories", "chunks", "entities", "facts", "fact_memories", "entity_memories")
_VECTOR_TABLES = ("chunks", "entities", "facts")
#: bookkeeping each store keeps for itself (the embedder record is carried separately; the
#: full-text statistics and the vector change log are kept by the target's triggers)
OWN_TABLES = {"meta", "kenning_schema", "lexical_stats", "lexeme_stats", "vector_log"}


@dataclass
class CopyReport:
    #: table (or ``table.embedding`` for vector counts) -> (rows in source, rows in target)
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    embedder: tuple[str, int] | None = None

    @property
    def mismatches(self) -> list[str]:
        return [name for name, (a, b) in self.counts.items() if a != b]

    @property
    def ok(self) -> bool:
        return not self.mismatches


# -- the two backends, seen as tables of rows ---------------------------------------------------
class SQLiteSide:
    mark, collate = "?", ""  # a parameter; how text keys sort bytewise (BINARY is the default)

    def __init__(self, store: Any) -> None:
        self.store, self.db = store, store._db
        self.types: dict[str, dict[str, str]] = {}

    def tables(self) -> list[str]:
        rows = self.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        return [r[0] for r in rows if "_fts" not in r[0] and r[0] not in OWN_TABLES]

    def columns(self, table: str) -> dict[str, str]:
        return {r["name"]: (r["type"] or "").upper() for r in self.db.execute(f'PRAGMA table_info("{table}")')}

    def depends_on(self, table: str) -> set[str]:
        return {r["table"] for r in self.db.execute(f'PRAGMA foreign_key_list("{table}")')} - {table}

    def primary_key(self, table: str) -> list[str]:
        rows = sorted((r["pk"], r["name"]) for r in self.db.execute(f'PRAGMA table_info("{table}")') if r["pk"])
        return [name for _, name in rows]

    def select(self, query: str, args: Sequence[Any] = ()) -> list[tuple]:
        with self.store._lock:
            return [tuple(r) for r in self.db.execute(query, args).fetchall()]

    def count(self, table: str, where: str = "") -> int:
        return self.db.execute(f'SELECT count(*) FROM "{table}" {where}').fetchone()[0]

    def embedder(self) -> tuple[str, int] | None:
        return self.store.recorded_embedder(self.db)

    def read(self, table: str, columns: Sequence[str], batch: int, where: str = "",
             args: Sequence[Any] = ()) -> Iterator[list[tuple]]:
        names = ", ".join(f'"{c}"' for c in columns)
        with self.store._lock:
            cursor = self.db.execute(f'SELECT {names} FROM "{table}" {where}', args)
            while rows := cursor.fetchmany(batch):
                yield [tuple(r) for r in rows]

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads see one state of the database: a read transaction on a second connection (WAL
        lets writers go on meanwhile); an in-memory database has only its one connection."""
        path = self.db.execute("PRAGMA database_list").fetchone()[2]
        if not path:
            yield
            return
        conn = sqlite3.connect(Path(path).as_uri() + "?mode=ro", uri=True, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("BEGIN")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot starts here
            self.db = conn
            yield
        finally:
            self.db = self.store._db
            conn.close()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self.store._write():
            yield
            self._rebuild_fulltext()
        self.store.forget_vector_indexes()

    def write(self, table: str, columns: Sequence[str], rows: list[tuple], source: dict[str, str]) -> None:
        types = self.types[table] = self.types.get(table) or self.columns(table)
        convert = [_to_sqlite(types.get(c, ""), source.get(c, "")) for c in columns]
        names = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" * len(columns))
        self.db.executemany(
            f'INSERT INTO "{table}" ({names}) VALUES ({marks})',
            [tuple(f(v) for f, v in zip(convert, row)) for row in rows],
        )

    def _rebuild_fulltext(self) -> None:
        from .sql import entity_text
        from .sqlite.dialect import dataset_token

        # Every row gets its dataset token too: searching a store of several datasets matches
        # on it inside the index.
        for table, column in (("chunks", "text"), ("facts", "description")):
            self.db.execute(f"DELETE FROM {table}_fts")
            self.db.executemany(
                f"INSERT INTO {table}_fts (rowid, ds, text) VALUES (?, ?, ?)",
                [(r[0], dataset_token(r[1]), r[2])
                 for r in self.db.execute(f"SELECT rowid, dataset, {column} FROM {table}")],
            )
        self.db.execute("DELETE FROM entities_fts")
        self.db.executemany(
            "INSERT INTO entities_fts (rowid, ds, text) VALUES (?, ?, ?)",
            [(r[0], dataset_token(r[1]), entity_text(r[2], json.loads(r[3]), r[4]))
             for r in self.db.execute("SELECT rowid, dataset, name, aliases, description FROM entities")],
        )


class PostgresSide:
    mark, collate = "%s", ' COLLATE "C"'

    def __init__(self, store: Any) -> None:
        self.store = store
        self._conn: Any = None
        self.types: dict[str, dict[str, str]] = {}

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        if self._conn is not None:  # inside writing(): the copy's own transaction
            yield self._conn
        else:
            with self.store._conn() as conn:
                yield conn

    def _all(self, query: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._connection() as conn:
            return conn.execute(query, args).fetchall()

    def tables(self) -> list[str]:
        rows = self._all(
            "SELECT table_name AS t FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        )
        return [r["t"] for r in rows if r["t"] not in OWN_TABLES]

    def columns(self, table: str) -> dict[str, str]:
        rows = self._all(
            "SELECT column_name AS c, data_type AS d, udt_name AS u FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = %s AND is_generated = 'NEVER'"
            " ORDER BY ordinal_position",
            (table,),
        )
        return {r["c"]: (r["u"] if r["d"] == "USER-DEFINED" else r["d"]) for r in rows}

    def depends_on(self, table: str) -> set[str]:
        rows = self._all(
            "SELECT confrelid::regclass::text AS t FROM pg_constraint"
            " WHERE contype = 'f' AND conrelid = to_regclass(%s)",
            (table,),
        )
        return {r["t"] for r in rows} - {table}

    def primary_key(self, table: str) -> list[str]:
        rows = self._all(
            "SELECT a.attname AS c FROM pg_index i JOIN pg_attribute a"
            " ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
            " WHERE i.indrelid = to_regclass(%s) AND i.indisprimary"
            " ORDER BY array_position(i.indkey::int2[], a.attnum)",
            (table,),
        )
        return [r["c"] for r in rows]

    def select(self, query: str, args: Sequence[Any] = ()) -> list[tuple]:
        return [tuple(r.values()) for r in self._all(query, args)]

    def count(self, table: str, where: str = "") -> int:
        return self._all(f'SELECT count(*) AS n FROM "{table}" {where}')[0]["n"]

    def embedder(self) -> tuple[str, int] | None:
        with self._connection() as conn:
            return self.store.recorded_embedder(conn)

    def read(self, table: str, columns: Sequence[str], batch: int, where: str = "",
             args: Sequence[Any] = ()) -> Iterator[list[tuple]]:
        names = ", ".join(f'"{c}"' for c in columns)
        with self._connection() as conn, conn.transaction(), conn.cursor(name=f"kenning_copy_{table}") as cursor:
            cursor.execute(f'SELECT {names} FROM "{table}" {where}', args)
            while rows := cursor.fetchmany(batch):
                yield [tuple(r[c] for c in columns) for r in rows]

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads see one state of the database (one repeatable-read transaction)."""
        with self.store._conn() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            self._conn = conn
            try:
                yield
            finally:
                self._conn = None

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self.store._write() as conn:
            self._conn = conn
            try:
                yield
            finally:
                self._conn = None

    def write(self, table: str, columns: Sequence[str], rows: list[tuple], source: dict[str, str]) -> None:
        types = self.types[table] = self.types.get(table) or self.columns(table)
        convert = [_to_postgres(types.get(c, "")) for c in columns]
        names = ", ".join(f'"{c}"' for c in columns)
        # COPY: one statement per batch, so the statement triggers (full-text statistics) run
        # once per batch, not once per row.
        with self._conn.cursor() as cursor, cursor.copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:
            for row in rows:
                copy.write_row(tuple(f(v) for f, v in zip(convert, row)))


# -- value conversion, by the target column's type ----------------------------------------------
def vector_value(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, (bytes, memoryview)):
        return from_blob(bytes(value))
    if isinstance(value, str):
        return np.asarray(json.loads(value), dtype=np.float32)
    return np.asarray(value, dtype=np.float32)


def _to_sqlite(declared: str, source: str) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        if declared == "BLOB":
            return to_blob(vector_value(value))
        if source == "ARRAY":  # a PostgreSQL text[] is a comma list in SQLite (auth_grants)
            return ",".join(sorted(value))
        if isinstance(value, bool):
            return int(value)
        if hasattr(value, "isoformat") and hasattr(value, "tzinfo"):
            return to_text(value)
        if isinstance(value, (list, dict)):
            return json.dumps(value, default=str)
        return value

    return convert


def _to_postgres(kind: str) -> Callable[[Any], Any]:
    from .postgres.dialect import json_value, to_vector_text

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if kind == "vector":
            return to_vector_text(vector_value(value))
        if kind == "timestamp with time zone":
            return as_utc(value)
        if kind in ("jsonb", "json"):
            return json_value(json.loads(value) if isinstance(value, str) else value)
        if kind == "boolean":
            return bool(value)
        if kind == "ARRAY" and isinstance(value, str):
            return [item for item in value.split(",") if item]
        return value

    return convert


# -- the copy -----------------------------------------------------------------------------------
def driver_error() -> type[Exception]:
    try:
        import psycopg
    except ImportError:
        return sqlite3.Error
    return psycopg.Error


def side_of(store: Store) -> SQLiteSide | PostgresSide:
    from .sqlite.store import SQLiteStore

    if isinstance(store, SQLiteStore):
        return SQLiteSide(store)
    from .postgres.store import PostgresStore

    if isinstance(store, PostgresStore):
        return PostgresSide(store)
    raise StoreError(f"cannot copy a {type(store).__name__}")


def in_order(side: SQLiteSide | PostgresSide, tables: list[str]) -> list[str]:
    """Core tables first, then the rest, each after the tables its foreign keys point to."""
    pending = [t for t in _CORE if t in tables] + sorted(t for t in tables if t not in _CORE)
    done: list[str] = []
    while pending:
        ready = next((t for t in pending if side.depends_on(t) & set(pending) <= set()), pending[0])
        pending.remove(ready)
        done.append(ready)
    return done


def _prepare(src: Any, dst: Any, target: Store) -> list[str]:
    if any(dst.count(t) for t in _CORE if t in dst.tables()):
        raise ConflictError("the target store is not empty; migrate copies into an empty store")
    tables = src.tables()
    missing = [t for t in tables if t not in dst.tables()]
    create_auth = getattr(target, "_auth_migrate", None)
    if missing and create_auth is not None:
        create_auth()  # tables a store creates on first use (users, keys, grants)
        missing = [t for t in tables if t not in dst.tables()]
    if missing:
        raise StoreError(f"the target store has no table {', '.join(missing)}; upgrade kenning there first")
    for table in tables:
        lost = set(src.columns(table)) - set(dst.columns(table))
        if lost:
            raise StoreError(f"the target's {table} table lacks columns {', '.join(sorted(lost))}")
    return in_order(src, tables)


def copy_store(
    source: Store, target: Store, *, batch: int = 1000, progress: Callable[[str, int], None] | None = None
) -> CopyReport:
    """Copy everything in ``source`` into the empty ``target`` and compare counts."""
    src, dst = side_of(source), side_of(target)
    tables = _prepare(src, dst, target)
    report = CopyReport(embedder=src.embedder())
    stored = dst.embedder()
    if report.embedder and stored and stored != report.embedder:
        raise ConflictError(f"the target records embedder {stored[0]!r}, the source {report.embedder[0]!r}")
    try:
        with dst.writing():
            for table in tables:
                source_types = src.columns(table)
                columns = list(source_types)
                for rows in src.read(table, columns, batch):
                    dst.write(table, columns, rows, source_types)
                    if progress:
                        progress(table, len(rows))
    except (KeyError, TypeError, ValueError, sqlite3.Error, driver_error()) as exc:
        raise StoreError(f"the copy failed and was rolled back: {type(exc).__name__}: {exc}") from exc
    if report.embedder:
        target.set_embedder(*report.embedder)  # records it and builds the vector indexes
    for table in tables:
        report.counts[table] = (src.count(table), dst.count(table))
    for table in _VECTOR_TABLES:
        if table in tables:
            where = "WHERE embedding IS NOT NULL"
            report.counts[f"{table}.embedding"] = (src.count(table, where), dst.count(table, where))
    return report
