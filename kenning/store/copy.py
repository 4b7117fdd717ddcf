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
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._time import as_utc, to_text
from ..errors import ConflictError, StoreError
from .base import Store, entity_text
from .vectors import from_blob, to_blob

__all__ = ["OWN_TABLES", "CopyReport", "PostgresSide", "SQLiteSide", "Side", "copy_store", "driver_error", "in_order", "side_of",
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
def _values(row: Any) -> tuple:
    return tuple(row.values()) if isinstance(row, dict) else tuple(row)


class Side(ABC):
    """One store seen as tables of rows: its catalog (``Dialect.catalog``), reads on the
    snapshot or the copy's transaction once open (``conn``), else on a connection of its own.
    A backend's side says how it holds a snapshot and writes a batch fast."""

    def __init__(self, store: Any) -> None:
        self.store, self.mark, self.catalog = store, store.dialect.mark, store.dialect.catalog
        self.collate = self.catalog["collate"]  # how text keys sort bytewise
        self.conn: Any = None
        self.types: dict[str, dict[str, str]] = {}

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        if self.conn is not None:
            yield self.conn
        else:
            with self.store._read() as conn:
                yield conn

    def select(self, query: str, args: Sequence[Any] = ()) -> list[tuple]:
        with self._connection() as conn:
            return [_values(r) for r in conn.execute(query, list(args)).fetchall()]

    def tables(self) -> list[str]:
        return [t for (t,) in self.select(self.catalog["tables"]) if t not in OWN_TABLES]

    def columns(self, table: str) -> dict[str, str]:
        return dict(self.select(self.catalog["columns"], [table]))

    def depends_on(self, table: str) -> set[str]:
        return {t for (t,) in self.select(self.catalog["depends_on"], [table])} - {table}

    def primary_key(self, table: str) -> list[str]:
        return [c for (c,) in self.select(self.catalog["primary_key"], [table])]

    def lacks(self, tables: Iterable[str]) -> list[str]:
        """Those of ``tables`` this store has not, once it made those it creates on first use
        (the auth tables: users, keys, grants)."""
        if missing := [t for t in tables if t not in self.tables()]:
            self.store._auth_migrate()
            missing = [t for t in missing if t not in self.tables()]
        return missing

    def count(self, table: str, where: str = "") -> int:
        return int(self.select(f'SELECT count(*) FROM "{table}" {where}')[0][0])

    def embedder(self) -> tuple[str, int] | None:
        with self._connection() as conn:
            return self.store.recorded_embedder(conn)

    def read(self, table: str, columns: Sequence[str], batch: int, where: str = "",
             args: Sequence[Any] = ()) -> Iterator[list[tuple]]:
        names = ", ".join(f'"{c}"' for c in columns)
        with self._connection() as conn:
            cursor = conn.execute(f'SELECT {names} FROM "{table}" {where}', list(args))
            while rows := cursor.fetchmany(batch):
                yield [_values(r) for r in rows]

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one state of the database."""

    @abstractmethod
    def write(self, table: str, columns: Sequence[str], rows: list[tuple], source: dict[str, str]) -> None:
        """Insert ``rows`` (``source``: the types of their columns in the store they come from)."""

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self.store._write() as conn:
            self.conn = conn
            try:
                yield
            finally:
                self.conn = None

    def _converted(self, table: str, columns: Sequence[str], rows: list[tuple], source: dict[str, str],
                   to: Callable[[str, str, Any], Any]) -> list[tuple]:
        """``rows`` in the target columns' types: ``to(target type, source type, value)``."""
        types = self.types[table] = self.types.get(table) or self.columns(table)
        kinds = [(types.get(c, ""), source.get(c, "")) for c in columns]
        return [tuple(None if v is None else to(*k, v) for k, v in zip(kinds, row)) for row in rows]


class SQLiteSide(Side):
    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads see one state of the database: a read transaction on a second connection (WAL
        lets writers go on meanwhile); an in-memory database has only its one connection."""
        path = self.select("PRAGMA database_list")[0][2]
        if not path:
            yield
            return
        conn = sqlite3.connect(Path(path).as_uri() + "?mode=ro", uri=True, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("BEGIN")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot starts here
            self.conn = conn
            yield
        finally:
            self.conn = None
            conn.close()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with super().writing():
            yield
            self._rebuild_fulltext()
        self.store.forget_vector_indexes()

    def write(self, table: str, columns: Sequence[str], rows: list[tuple], source: dict[str, str]) -> None:
        names = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" * len(columns))
        self.conn.executemany(f'INSERT INTO "{table}" ({names}) VALUES ({marks})',
                              self._converted(table, columns, rows, source, _to_sqlite))

    def _rebuild_fulltext(self) -> None:
        from .sqlite.dialect import dataset_token

        # Every row gets its dataset token too: searching a store of several datasets matches
        # on it inside the index.
        db = self.conn
        for table, column in (("chunks", "text"), ("facts", "description")):
            db.execute(f"DELETE FROM {table}_fts")
            db.executemany(
                f"INSERT INTO {table}_fts (rowid, ds, text) VALUES (?, ?, ?)",
                [(r[0], dataset_token(r[1]), r[2]) for r in db.execute(f"SELECT rowid, dataset, {column} FROM {table}")],
            )
        db.execute("DELETE FROM entities_fts")
        db.executemany(
            "INSERT INTO entities_fts (rowid, ds, text) VALUES (?, ?, ?)",
            [(r[0], dataset_token(r[1]), entity_text(r[2], json.loads(r[3]), r[4]))
             for r in db.execute("SELECT rowid, dataset, name, aliases, description FROM entities")],
        )


class PostgresSide(Side):
    def read(self, table: str, columns: Sequence[str], batch: int, where: str = "",
             args: Sequence[Any] = ()) -> Iterator[list[tuple]]:
        """Through a server-side cursor: a table is never held in memory whole."""
        names = ", ".join(f'"{c}"' for c in columns)
        with self._connection() as conn, conn.transaction(), conn.cursor(name=f"kenning_copy_{table}") as cursor:
            cursor.execute(f'SELECT {names} FROM "{table}" {where}', args)
            while rows := cursor.fetchmany(batch):
                yield [_values(r) for r in rows]

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads see one state of the database (one repeatable-read transaction)."""
        with self.store._conn() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            self.conn = conn
            try:
                yield
            finally:
                self.conn = None

    def write(self, table: str, columns: Sequence[str], rows: list[tuple], source: dict[str, str]) -> None:
        names = ", ".join(f'"{c}"' for c in columns)
        values = self._converted(table, columns, rows, source, _to_postgres)  # (reads the catalog first)
        # COPY: one statement per batch, so the statement triggers (full-text statistics) run
        # once per batch, not once per row.
        with self.conn.cursor() as cursor, cursor.copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:
            for row in values:
                copy.write_row(row)


# -- value conversion, by the target column's type ----------------------------------------------
def vector_value(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, (bytes, memoryview)):
        return from_blob(bytes(value))
    if isinstance(value, str):
        return np.asarray(json.loads(value), dtype=np.float32)
    return np.asarray(value, dtype=np.float32)


def _to_sqlite(declared: str, source: str, value: Any) -> Any:
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


def _to_postgres(kind: str, source: str, value: Any) -> Any:
    from .postgres.dialect import json_value, to_vector_text

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


# -- the copy -----------------------------------------------------------------------------------
def driver_error() -> type[Exception]:
    try:
        import psycopg
    except ImportError:
        return sqlite3.Error
    return psycopg.Error


def side_of(store: Store) -> Side:
    from .sqlite.store import SQLiteStore

    if isinstance(store, SQLiteStore):
        return SQLiteSide(store)
    from .postgres.store import PostgresStore

    if isinstance(store, PostgresStore):
        return PostgresSide(store)
    raise StoreError(f"cannot copy a {type(store).__name__}")


def in_order(side: Side, tables: list[str]) -> list[str]:
    """Core tables first, then the rest, each after the tables its foreign keys point to."""
    pending = [t for t in _CORE if t in tables] + sorted(t for t in tables if t not in _CORE)
    done: list[str] = []
    while pending:
        ready = next((t for t in pending if side.depends_on(t) & set(pending) <= set()), pending[0])
        pending.remove(ready)
        done.append(ready)
    return done


def _prepare(src: Side, dst: Side) -> list[str]:
    if any(dst.count(t) for t in _CORE if t in dst.tables()):
        raise ConflictError("the target store is not empty; migrate copies into an empty store")
    tables = src.tables()
    if missing := dst.lacks(tables):
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
    tables = _prepare(src, dst)
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
