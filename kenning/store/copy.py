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

import datetime as dt
import json
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._time import to_text
from ..errors import ConflictError, StoreError
from .base import Store, entity_text, quoted

__all__ = ["KINDS", "OWN_TABLES", "CopyReport", "PostgresSide", "SQLiteSide", "Side", "copy_store", "driver_errors",
           "in_order", "side_of"]

_CORE = ("datasets", "memories", "chunks", "entities", "facts", "fact_memories", "entity_memories")
_VECTOR_TABLES = ("chunks", "entities", "facts")
#: bookkeeping each store keeps for itself (the embedder record is carried separately; the
#: full-text statistics and the vector change log are kept by the target's triggers)
OWN_TABLES = {"meta", "kenning_schema", "lexical_stats", "lexeme_stats", "vector_log"}
#: columns whose values are not plain text or numbers (a test checks these against PostgreSQL's
#: column types, so a new column of such a type cannot be forgotten here)
KINDS: dict[tuple[str, str], str] = {
    **{("memories", c): "json" for c in ("decisions", "rationale", "metadata", "supersedes", "usage")},
    ("entities", "aliases"): "json",
    ("chunks", "location"): "json",
    ("memories", "pinned"): "bool",
    ("auth_users", "admin"): "bool",
    ("auth_grants", "permissions"): "list",
    **{(t, "embedding"): "vector" for t in ("chunks", "entities", "facts")},
}


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
    Rows come and go in one plain form whatever the backend (:meth:`rows`, :meth:`stored`).
    A backend's side says how it holds a snapshot and writes a batch fast."""

    def __init__(self, store: Any) -> None:
        store.flush_access()  # the access counts a recall buffered are rows to read too
        self.store, self.d = store, store.dialect
        self.mark, self.catalog = self.d.mark, self.d.catalog
        self.collate = self.catalog["collate"]  # how text keys sort bytewise
        self.conn: Any = None

    def _connection(self) -> AbstractContextManager[Any]:
        return nullcontext(self.conn) if self.conn is not None else self.store._read()

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

    def check_columns(self, table: str, names: Iterable[str]) -> None:
        """StoreError if this store's ``table`` lacks any of the columns ``names``."""
        if lost := set(names) - set(self.columns(table)):
            raise StoreError(f"the {table} table of the target store lacks columns {', '.join(sorted(lost))};"
                             " upgrade kenning there first")

    def count(self, table: str, where: str = "") -> int:
        return int(self.select(f'SELECT count(*) FROM "{table}" {where}')[0][0])

    def embedder(self) -> tuple[str, int] | None:
        return self.store.recorded_embedder(self.conn)

    def rows(self, table: str, columns: Sequence[str], batch: int, where: str = "",
             args: Sequence[Any] = ()) -> Iterator[list[list[Any]]]:
        """The rows of ``table`` (``where``: a clause, its ``args``) ``batch`` at a time, in the plain form."""
        kinds = [KINDS.get((table, c)) for c in columns]
        with self._cursor(table) as cursor:
            cursor.execute(f'SELECT {quoted(columns)} FROM "{table}" {where}', list(args))
            while rows := cursor.fetchmany(batch):
                yield [[self.plain(k, v) for k, v in zip(kinds, _values(row))] for row in rows]

    @contextmanager
    def _cursor(self, table: str) -> Iterator[Any]:
        with self._connection() as conn:
            yield conn.cursor()

    def plain(self, kind: str | None, value: Any) -> Any:
        """A stored value in the plain form: times as fixed-width text, JSON parsed, flags as
        booleans, lists sorted, vectors as float32 arrays (``kind``: its column's ``KINDS``)."""
        if value is None:
            return None
        if kind == "vector":
            return self.d.vector_out(value)
        if kind == "json":
            return json.loads(value) if isinstance(value, str) else value
        if kind == "bool":
            return bool(value)
        if kind == "list":
            return sorted(self.d.perms_out(value))
        return to_text(value) if isinstance(value, dt.datetime) else value

    def stored(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[tuple]:
        """Plain rows as this store holds them."""
        d, kinds = self.d, [KINDS.get((table, c)) for c in columns]
        spell = {"vector": d.vector_in, "json": d.json_in, "bool": d.bool_in, "list": d.perms_in}
        return [tuple(v if v is None or k not in spell else spell[k](v) for k, v in zip(kinds, row)) for row in rows]

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one state of the database."""

    @abstractmethod
    def write(self, table: str, columns: Sequence[str], rows: list[list[Any]]) -> None:
        """Insert ``rows`` (in the plain form)."""

    @contextmanager
    def _on(self, conn: Any) -> Iterator[None]:
        """Reads and writes inside run on ``conn``."""
        self.conn = conn
        try:
            yield
        finally:
            self.conn = None

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self.store._write() as conn, self._on(conn):
            yield


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
        with closing(conn), self._on(conn):
            conn.execute("BEGIN")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot starts here
            yield

    @contextmanager
    def writing(self) -> Iterator[None]:
        with super().writing():
            yield
            self._rebuild_fulltext()
        self.store.forget_vector_indexes()

    def write(self, table: str, columns: Sequence[str], rows: list[list[Any]]) -> None:
        self.conn.executemany(f'INSERT INTO "{table}" ({quoted(columns)}) VALUES ({", ".join("?" * len(columns))})',
                              self.stored(table, columns, rows))

    def _rebuild_fulltext(self) -> None:
        from .sqlite.dialect import dataset_token

        # Every row gets its dataset token too: searching a store of several datasets matches
        # on it inside the index.
        texts: dict[str, tuple[str, Callable[[Any], str]]] = {
            "chunks": ("text", lambda r: r["text"]), "facts": ("description", lambda r: r["description"]),
            "entities": ("name, aliases, description",
                         lambda r: entity_text(r["name"], json.loads(r["aliases"]), r["description"]))}
        for table, (columns, text) in texts.items():
            self.conn.execute(f"DELETE FROM {table}_fts")
            rows = self.conn.execute(f"SELECT rowid, dataset, {columns} FROM {table}")
            self.conn.executemany(f"INSERT INTO {table}_fts (rowid, ds, text) VALUES (?, ?, ?)",
                                  [(r["rowid"], dataset_token(r["dataset"]), text(r)) for r in rows])


class PostgresSide(Side):
    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.filled: list[str] = []  # the tables written to, in order

    @contextmanager
    def _cursor(self, table: str) -> Iterator[Any]:
        """A server-side cursor: a table is never held in memory whole."""
        with self._connection() as conn, conn.transaction(), conn.cursor(name=f"kenning_copy_{table}") as cursor:
            yield cursor

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads see one state of the database (one repeatable-read transaction)."""
        with self.store._conn() as conn, conn.transaction(), self._on(conn):
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield

    @contextmanager
    def writing(self) -> Iterator[None]:
        self.filled.clear()
        with super().writing():
            yield
            # The planner's statistics of the tables just filled: until autovacuum gathers
            # them, a copied store's queries are planned as if its tables were empty.
            if self.filled:
                self.conn.execute(f"ANALYZE {quoted(self.filled)}")

    def write(self, table: str, columns: Sequence[str], rows: list[list[Any]]) -> None:
        # COPY: one statement per batch, so the statement triggers (full-text statistics) run
        # once per batch, not once per row.
        if table not in self.filled:
            self.filled.append(table)
        with self.conn.cursor() as cursor, cursor.copy(f'COPY "{table}" ({quoted(columns)}) FROM STDIN') as copy:
            for row in self.stored(table, columns, rows):
                copy.write_row(row)


# -- the copy -----------------------------------------------------------------------------------
def driver_errors(integrity: bool = False) -> tuple[type[Exception], ...]:
    """What the database drivers raise (with ``integrity``: for a broken constraint), with the
    errors of bad values a copy or an import can meet."""
    errors = (sqlite3.IntegrityError,) if integrity else (KeyError, TypeError, ValueError, sqlite3.Error)
    try:
        import psycopg
    except ImportError:
        return errors
    return (*errors, psycopg.errors.IntegrityError if integrity else psycopg.Error)


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


def copy_store(
    source: Store, target: Store, *, batch: int = 1000, progress: Callable[[str, int], None] | None = None
) -> CopyReport:
    """Copy everything in ``source`` into the empty ``target`` and compare counts."""
    src, dst = side_of(source), side_of(target)
    if any(dst.count(t) for t in _CORE if t in dst.tables()):
        raise ConflictError("the target store is not empty; migrate copies into an empty store")
    tables = in_order(src, src.tables())
    if missing := dst.lacks(tables):
        raise StoreError(f"the target store has no table {', '.join(missing)}; upgrade kenning there first")
    for table in tables:
        dst.check_columns(table, src.columns(table))
    report = CopyReport(embedder=src.embedder())
    stored = dst.embedder()
    if report.embedder and stored and stored != report.embedder:
        raise ConflictError(f"the target records embedder {stored[0]!r}, the source {report.embedder[0]!r}")
    try:
        with dst.writing():
            for table in tables:
                columns = list(src.columns(table))
                for rows in src.rows(table, columns, batch):
                    dst.write(table, columns, rows)
                    if progress:
                        progress(table, len(rows))
    except driver_errors() as exc:
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
