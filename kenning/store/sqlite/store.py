"""The embedded store: one SQLite file (WAL), FTS5 for the lexical lane, vectors as BLOBs in the
rows and, per dataset and kind, an HNSW index saved beside the file (``vectors.py``).

One connection guarded by a lock; writes run inside ``BEGIN IMMEDIATE`` so a second process
waits for the first instead of failing. Triggers append every vector change to ``vector_log``;
an index replays the log after its stamp, so another process's commits cost a catch-up of the
rows they changed, never a rebuild.
"""


from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import math
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import StoreError
from ..base import FACT_COLUMNS, FactRow, Scored, Txn, entity_text
from ..sql import KIND_TABLE, Store, row_dict
from ..vectors import FORMAT, AnnIndex, IndexFiles, build, calibrate
from .dialect import SQLITE, dataset_token
from .schema import SQLITE_MIGRATIONS

__all__ = ["SQLiteStore", "SQLiteTxn"]

log = logging.getLogger(__name__)

#: a vector index is saved when this many of its rows changed (or a quarter of it)
_SAVE_ROWS = 20_000
#: an index that changed by more rows than this is saved at close, however large it is
_CLOSE_SAVE_ROWS = 2_000
#: digests of saved index files a database accepts per kind and dataset (the newest ones)
_ACCEPTED = 8
#: vectors logged between two maintenance passes at ingest
_MAINTAIN_ROWS = 1024
#: SQLite's default: a checkpoint once the write-ahead log holds this many pages
_WAL_PAGES = 1000
#: a search term in more rows than this is dropped while a rarer term remains
_COMMON_ROWS = 5000
#: past this many matching rows, only rows holding one of the rarest terms are ranked...
_SCORED_ROWS = 1000
#: ...in a table of more rows than this (a smaller one ranks every row it matches), where a
#: term in more than one row in ``_COMMON_SHARE`` (but at least ``_SCORED_ROWS``) is common too
_BOUNDED_FROM_ROWS = 5000
_COMMON_SHARE = 5
#: a term left out as common still scores the rows holding a kept one when it is in fewer than
#: one row in this many
_JOIN_SHARE = 20
#: where the rarest terms' rows are fewer than asked for, the rest come from this many times
#: as many of the newest rows holding the other terms
_FILL = 4
#: how much of the database file reads map (SQLite caps it near 2 GiB)
_MMAP_BYTES = 1 << 30
#: a dataset with fewer full-text rows than this is searched with its token in the query...
_SMALL_DATASET = 5000
#: ...a larger one without, fetching this many times the rows asked for, then keeping its own
_OVERFETCH = 4
#: how long a term's row count is reused
_COUNTS_SECONDS = 60.0
#: chunks whose memories the full-text lane remembers (``chunk_owners``), at most
_OWNERS = 20_000
#: the ``rank`` of every full-text table (schema.py: the ``ds`` column weighs 0)
_RANK = "bm25({table}_fts, 0.0, 1.0)"
#: the meta keys holding, for one kind and dataset, the digests of the index files saved and
#: how far ``vector_log`` was trimmed
_FILES_KEY, _TRIM_KEY = "vector_files {} {}", "vector_log_trimmed {} {}"


def _marks(n: int) -> str:
    return ",".join("?" * n)


class SQLiteTxn(Txn):
    """The shared primitives on the store's one connection (``BEGIN IMMEDIATE``: no other writer
    runs, so nothing needs locking), keeping the FTS5 tables in step with their rows."""

    store: SQLiteStore

    def _index(self, table: str, cursor: Any, dataset: str, text: str) -> None:
        self.conn.execute(f"INSERT INTO {table}_fts (rowid, ds, text) VALUES (?, ?, ?)",
                          (cursor.lastrowid, dataset_token(dataset), text))

    def _reindex_entity(self, entity_id: str) -> None:
        row = self.conn.execute("SELECT rowid, name, aliases, description FROM entities WHERE id = ?", (entity_id,)).fetchone()
        text = entity_text(row["name"], json.loads(row["aliases"]), row["description"])
        self.conn.execute("UPDATE entities_fts SET text = ? WHERE rowid = ?", (text, row["rowid"]))
        self.store._fts_changed.add("entities")

    def _delete_rows(self, table: str, where: str, args: Sequence[Any]) -> None:
        """Delete rows with their full-text rows. Their terms stay in the index's older segments
        until the index is rewritten (:meth:`SQLiteStore.scrub`), so the table is noted."""
        for row in self.conn.execute(f"SELECT rowid FROM {table} WHERE {where}", list(args)).fetchall():
            self.conn.execute(f"DELETE FROM {table}_fts WHERE rowid = ?", (row[0],))
            self.store._fts_changed.add(table)
        self.conn.execute(f"DELETE FROM {table} WHERE {where}", list(args))


def _quoted(term: str) -> str:
    """A term as one FTS5 string (inner quotes doubled): user text is never read as FTS5 syntax
    (NEAR, *, column filters, parentheses)."""
    return '"' + term.replace('"', '""') + '"'


def _any_of(terms: Sequence[str]) -> str:
    return " OR ".join(_quoted(t) for t in terms)


def _rarest(terms: list[str], counts: dict[str, int], limit: int) -> list[str] | None:
    """When the terms match more than ``_SCORED_ROWS`` rows: the rarest ones, leaving at least
    one, up to four times ``limit`` rows and never past ``_SCORED_ROWS`` (possibly none, or
    fewer rows than ``limit``: the caller fills the rest); None when every matching row is
    ranked."""
    present = sorted((t for t in terms if counts[t]), key=lambda t: counts[t])
    if sum(counts[t] for t in present) <= _SCORED_ROWS:
        return None
    rare, rows = [], 0
    for term in present[:-1]:
        if rows + counts[term] > _SCORED_ROWS:
            break
        rare.append(term)
        rows += counts[term]
        if rows >= 4 * limit:
            break
    return rare


def _dataset_phrase(dataset: str) -> str:
    """The full-text query phrase that matches a dataset's rows."""
    return f'ds : "{dataset_token(dataset)}"'


class SQLiteStore(Store):
    dialect = SQLITE

    def __init__(self, path: str, *, timeout: float = 30.0) -> None:
        self.url = f"sqlite:///{path}"
        self.path = self._shown = path
        try:
            if path != ":memory:":
                Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open SQLite database at {path}: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        super().__init__(self._lock)
        #: full-text tables with deleted or changed rows since the last scrub
        self._fts_changed: set[str] = set()
        #: a write group's transaction is open (on the thread holding the lock)
        self._grouped = False
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            # Deleted content is overwritten with zeros, not left in free pages.
            self._db.execute("PRAGMA secure_delete = ON")
            self._db.execute("PRAGMA busy_timeout = %d" % int(timeout * 1000))
            if path != ":memory:":
                self._db.execute("PRAGMA journal_mode = WAL")
                self._db.execute("PRAGMA synchronous = NORMAL")
                # Reads map the file instead of copying pages through SQLite's small cache: a
                # fifth less CPU per recall at 100k (one-off: docs/benchmarks.md). Mapped pages are the
                # kernel's page cache, shared and reclaimable, not this process's own memory.
                self._db.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
            self._migrate()
        except (sqlite3.DatabaseError, StoreError) as exc:  # not a database, corrupt, read-only, locked
            self._db.close()
            raise StoreError(f"cannot use SQLite database at {path}: {exc}") from exc
        self._fingerprint: str | None = None
        self._anns: dict[tuple[str, str], AnnIndex] = {}
        self._maintained = self._head()  # log position the indexes were last maintained to
        self._files = IndexFiles(path) if path != ":memory:" else None
        self._checkpointer: threading.Thread | None = None
        self._counts: dict[tuple[str, str], int] = {}  # (table, term) -> rows holding it
        self._shares: dict[tuple[str, str], float] = {}  # (table, dataset) -> its share of fetched rows
        self._counts_since = time.monotonic()
        self._owners: tuple[tuple[int, int], dict[str, str]] = ((-1, -1), {})  # (_stamp, chunk -> memory) seen

    # -- lifecycle ---------------------------------------------------------------------------
    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        for number, statements in enumerate(SQLITE_MIGRATIONS[version:], start=version + 1):
            with self._write() as db:
                # Another process may have migrated while we waited for the lock.
                if db.execute("PRAGMA user_version").fetchone()[0] < number:
                    for sql in statements:
                        db.execute(sql)
                    db.execute(f"PRAGMA user_version = {number}")
                    log.info("migrated store", extra={"schema_version": number})

    def set_embedder(self, name: str, dimension: int) -> None:
        super().set_embedder(name, dimension)
        self.forget_vector_indexes()

    def close(self) -> None:
        with self._lock:
            try:
                self.flush_access()
                self._save_changed_indexes()
            finally:
                if self._checkpointer is not None:
                    self._checkpointer.join()
                self._db.close()

    def scrub(self) -> None:
        """Leave no deleted text in the database files: rewrite the full-text indexes that had
        rows deleted (FTS5 keeps a deleted row's terms in older segments until a merge; this
        SQLite has no FTS5 'secure-delete'), then checkpoint the WAL into the database and
        truncate it. Freed pages are already zeroed (``secure_delete``). The WAL cannot be
        truncated while another connection reads an older snapshot; it is then truncated by
        the next scrub or checkpoint. The saved vector indexes are rewritten first
        (``_scrub_vectors``)."""
        with self._lock:
            self._scrub_vectors()
            for table in sorted(self._fts_changed):
                with self._write():
                    self._db.execute(f"INSERT INTO {table}_fts ({table}_fts) VALUES ('optimize')")
            self._fts_changed.clear()
            if self._checkpointer is not None:  # the access counts' checkpoint would make this one busy
                self._checkpointer.join()
            busy = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            log.info("wal not truncated: another connection is reading")

    def _scrub_vectors(self) -> None:
        """Leave no deleted row's vector in ``<db>.vectors/``: every index whose rows changed
        since its file was saved is caught up; one that lost rows is saved again at once
        (``AnnIndex.wipe`` overwrites their slots) or, emptied, has its files deleted. Files
        of another embedder and temporary files of killed saves are deleted too."""
        if self._files is None:
            return
        self._files.sweep(self._fingerprinted())
        if self._fingerprint is None:
            return
        pairs = {tuple(r) for r in self._db.execute("SELECT DISTINCT kind, dataset FROM vector_log")}
        pairs |= {key for key, index in self._anns.items() if index.removed}
        for kind, dataset in sorted(pairs):
            if (kind, dataset) not in self._anns and self._files.latest(self._prefix(kind, dataset)) is None:
                continue  # nothing of it on disk
            index = self._ann(kind, dataset)
            if index is not None and (index.removed or not len(index)):
                self._save(kind, dataset, index)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; inside a write group, a savepoint of the group's."""
        with self._lock:
            grouped = self._grouped
            try:
                self._db.execute("SAVEPOINT write" if grouped else "BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreError(f"database is busy: {exc}") from exc
            try:
                yield self._db
            except BaseException:
                for undo in ("ROLLBACK TO write", "RELEASE write") if grouped else ("ROLLBACK",):
                    self._db.execute(undo)
                raise
            self._db.execute("RELEASE write" if grouped else "COMMIT")

    @contextmanager
    def write_group(self) -> Iterator[None]:
        """Writes of this thread inside share one transaction, each in its own savepoint (all
        or nothing, as alone): a commit costs far more than a memory's inserts (every page
        they touched, full-text segments included, is written to the WAL again at each
        commit). The lock is held throughout, so a group must be short. If the database is
        busy, the writes run alone as they come."""
        with self._lock:
            if self._grouped:
                yield
                return
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:
                yield
                return
            self._grouped = True
            try:
                yield
                self._db.execute("COMMIT")
            except BaseException as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                self._anns.clear()  # they may hold rows of the transaction undone
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"writes not committed: {exc}") from exc
                raise
            finally:
                self._grouped = False
        self._maintain()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._db

    @contextmanager
    def transaction(self) -> Iterator[Txn]:
        with self._lock:
            with self._write() as db:
                yield SQLiteTxn(self, db)
            if not self._grouped:  # a group maintains the indexes once it has committed
                self._maintain()

    # -- search lanes ------------------------------------------------------------------------
    def lexical(self, dataset: str, kind: str, terms: Sequence[str], limit: int) -> list[Scored]:
        """BM25 over the full-text rows, ranking a bounded set of them (FTS5 ranks every row a
        query matches, which is most of its cost at scale): terms too common to rank by are left
        out, or only score the rows of a kept term when they still tell rows apart; past
        ``_SCORED_ROWS`` matches in a large table only the rarest terms' rows are ranked, each
        with its full score, and a short list is filled from the rows holding the other terms.
        docs/architecture.md, "The SQLite full-text lane at scale", has each rule."""
        if not terms:
            return []
        table = KIND_TABLE[kind]
        with self._lock:
            counts = self._term_counts(table, terms)
            rows = self._table_rows(table)
            large = rows > _BOUNDED_FROM_ROWS
            common = min(_COMMON_ROWS, max(_SCORED_ROWS, rows // _COMMON_SHARE)) if large else _COMMON_ROWS
            kept = [t for t in terms if counts[t] < common] or list(terms)
            # Too common to rank by, not so common they tell nothing (a first name among a
            # million rows): they score the rows that hold a kept term and one of them.
            joined = [t for t in terms if t not in kept and counts[t] * _JOIN_SHARE < rows]
            rare = _rarest(kept, counts, limit) if large else None
            lead = kept if rare is None else rare
            others = [t for t in kept if t not in lead] + joined
            matches = [f"({_any_of(lead)}) AND ({_any_of(others)})"] if lead and others else []
            matches += [_any_of(lead)] if lead else []
            best: dict[str, float] = {}
            for match in matches:
                for item_id, score in self._ranked(table, dataset, f"text : ({match})", limit):
                    best[item_id] = max(best.get(item_id, 0.0), score)
            # Too few rows hold a rare term: the rest hold only the other terms (so their score
            # for those is their full score), first the rows holding all of them, then the best
            # of the newest rows holding any.
            fills = [(" AND ".join(map(_quoted, others)), 0)] if len(others) > 1 else []
            for match, newest in [*fills, (_any_of(others), _FILL * limit)] if rare is not None else ():
                if len(best) >= limit:
                    break
                for item_id, score in self._ranked(table, dataset, f"text : ({match})", limit, newest):
                    best.setdefault(item_id, score)
        ranked = sorted(best.items(), key=lambda pair: -pair[1])[:limit]
        return [Scored(kind, item_id, score) for item_id, score in ranked]

    def _ranked(self, table: str, dataset: str, match: str, limit: int, newest: int = 0) -> list[tuple[str, float]]:
        """The ``limit`` best rows of ``dataset`` for a full-text query by BM25: of all rows the
        query matches, or of the ``newest`` of them. A dataset's token in the query costs a walk
        over all of that dataset's rows, which at 100k rows was most of the query; so where the
        dataset is not small, the query runs without it and fetches more rows (as many as the
        dataset's share of the rows fetched last time asks for, at most ``_OVERFETCH`` times as
        many): when ``limit`` of them are the dataset's, they are its best ``limit``, ranked as
        with the token (the ``ds`` column weighs 0). Only when they are not does the query run
        again with the token. A small dataset alone in its table needs no token either."""
        # The rank the migration configured, called by name: FTS5's own ``ORDER BY rank`` sorts
        # every match in a statement of its own, which cost 0.68 ms beside 0.43 ms for SQLite's
        # sorter (217 of 817 long turns; the same rows in the same order, ties included)
        score = "rank" if newest else _RANK.format(table=table)
        sql = (f"SELECT r.id, r.dataset, f.score FROM (SELECT rowid, {score} AS score FROM {table}_fts WHERE"
               f" {table}_fts MATCH ? ORDER BY {'rowid DESC' if newest else 'score'} LIMIT ?) f"
               f" JOIN {table} r ON r.rowid = f.rowid")

        owned = table == "chunks"  # the chunks' memories, read with them, spare ``chunk_owners`` a read
        if owned:
            sql = sql.replace("f.score FROM", "f.score, r.memory_id FROM", 1)

        def run(query: str, fetch: int) -> tuple[int, list[tuple[str, float]]]:
            rows = self._db.execute(sql, (query, fetch)).fetchall()
            mine = sorted(((r[0], -r[2]) for r in rows if r[1] == dataset), key=lambda pair: -pair[1])
            if owned and rows:
                self._seen_owners((r[0], r[3]) for r in rows)
            return len(rows), mine

        token = _dataset_phrase(dataset) + " AND "
        if (rows := self._dataset_rows(table, dataset)) < _SMALL_DATASET:
            if rows == self._table_rows(table):  # the table holds this dataset alone: no token
                fetched, mine = run(match, newest or limit)
                if len(mine) == fetched:  # (counted a while ago: another dataset may have come)
                    return mine[:limit]
            return run(token + match, newest or limit)[1][:limit]
        share = self._shares.get((table, dataset), 1.0)  # of the rows fetched last time
        fetch = newest or min(limit * _OVERFETCH, math.ceil(limit * 1.25 / share))
        fetched, mine = run(match, fetch)
        if fetched >= fetch and not newest:
            self._shares[(table, dataset)] = max(len(mine) / fetched, 1 / _OVERFETCH)
        if len(mine) >= limit or fetched < fetch:
            return mine[:limit]
        return run(token + match, newest or limit)[1][:limit]

    def _stamp(self) -> tuple[int, int]:
        """What every write changes: another connection's commit (``data_version``) or a row this
        connection changed (``total_changes``)."""
        return self._db.execute("PRAGMA data_version").fetchone()[0], self._db.total_changes

    def _seen_owners(self, pairs: Iterator[tuple[str, str]]) -> None:
        """Remember chunks' memories as read now; forgotten at the next write (or past ``_OWNERS``)."""
        stamp = self._stamp()
        seen = self._owners[1] if self._owners[0] == stamp and len(self._owners[1]) < _OWNERS else {}
        seen.update(pairs)
        self._owners = (stamp, seen)

    def _known_owners(self, ids: Sequence[str]) -> dict[str, str]:
        with self._lock:
            stamp, seen = self._owners
            if not seen or stamp != self._stamp():
                return {}
            return {i: seen[i] for i in ids if i in seen}

    def _dataset_rows(self, table: str, dataset: str) -> int:
        """The dataset's full-text rows, counted up to ``_SMALL_DATASET`` and reused like term
        counts."""
        key = (table, "\0" + dataset)
        if key not in self._counts:
            self._counts[key] = self._db.execute(
                f"SELECT count(*) FROM (SELECT rowid FROM {table}_fts WHERE {table}_fts MATCH ? LIMIT ?)",
                (_dataset_phrase(dataset), _SMALL_DATASET)).fetchone()[0]
        return self._counts[key]

    def _table_rows(self, table: str) -> int:
        """About how many rows the table holds (its highest rowid), reused like term counts."""
        key = (table, "")
        if key not in self._counts:
            self._counts[key] = self._db.execute(f"SELECT coalesce(max(rowid), 0) FROM {table}").fetchone()[0]
        return self._counts[key]

    def _term_counts(self, table: str, terms: Sequence[str]) -> dict[str, int]:
        """Rows holding each term, counted up to ``_COMMON_ROWS``, over every dataset (as BM25's
        idf counts them). Kept for ``_COUNTS_SECONDS``: a count only chooses which terms are
        ranked, never a score."""
        now = time.monotonic()
        if now - self._counts_since > _COUNTS_SECONDS or len(self._counts) > 50_000:
            self._counts, self._counts_since = {}, now
        sql = (f"SELECT count(*), min(rowid) FROM (SELECT rowid FROM {table}_fts WHERE {table}_fts MATCH ?"
               " ORDER BY rowid DESC LIMIT ?)")
        out = {}
        for term in terms:
            if (table, term) not in self._counts:
                count, lowest = self._db.execute(sql, ("text : " + _quoted(term), _COMMON_ROWS)).fetchone()
                if count >= _COMMON_ROWS:  # past the cap: estimated from the newest rows' density
                    top = max(self._table_rows(table), lowest)
                    count = max(count, count * top // max(top - lowest + 1, 1))
                self._counts[(table, term)] = count
            out[term] = self._counts[(table, term)]
        return out

    def vector(self, dataset: str, kind: str, query: np.ndarray, limit: int) -> list[Scored]:
        with self._lock:
            index = self._ann(kind, dataset)
            found = index.search(np.asarray(query, dtype=np.float32), limit) if index is not None else []
            if not found:
                return []
            ids = dict(self._db.execute(
                f"SELECT rowid, id FROM {KIND_TABLE[kind]} WHERE rowid IN ({_marks(len(found))})",
                [key for key, _ in found],
            ).fetchall())
        return [Scored(kind, ids[key], score) for key, score in found if key in ids]

    def neighbors(self, dataset: str, entity_ids: Sequence[str], limit: int) -> list[FactRow]:
        # The first ``limit`` facts of all the entities are among each entity's first ``limit``,
        # read in that order from an index (schema.py): a hub's thousands of facts are not read.
        first = " UNION ALL ".join(
            f"SELECT * FROM (SELECT rowid, expired_at IS NULL, valid_at FROM facts INDEXED BY facts_{end}_time WHERE"
            f" {end}_id = ? AND dataset = ? ORDER BY expired_at IS NULL DESC, valid_at DESC, rowid DESC LIMIT ?)"
            for end in ("source", "target"))
        with self._lock:
            keys = {key for e in entity_ids for key in self._db.execute(first, (e, dataset, limit) * 2)}
            rowids = [key[0] for key in sorted(keys, key=lambda key: (key[1], key[2], key[0]), reverse=True)[:limit]]
            rows = self._db.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE rowid IN ({_marks(len(rowids))})"
                                    " ORDER BY expired_at IS NOT NULL, valid_at DESC, rowid DESC", rowids).fetchall()
        return [self.dialect.fact_row(r) for r in map(row_dict, rows)]

    def memory_neighbors(self, memory_ids: Sequence[str], window: int) -> list[tuple[str, str, int]]:
        if not memory_ids or window < 1:
            return []
        sql = (
            "SELECT m.id AS of_id, n.id AS id, n.position - m.position AS offset FROM memories m"
            " JOIN memories n ON n.episode = m.episode AND n.dataset = m.dataset"
            " AND n.position BETWEEN m.position - ? AND m.position + ?"
            f" AND n.id <> m.id WHERE m.id IN ({_marks(len(memory_ids))}) AND m.episode IS NOT NULL"
        )
        with self._lock:
            rows = self._db.execute(sql, [window, window, *memory_ids]).fetchall()
        return [(r["of_id"], r["id"], r["offset"]) for r in rows]

    def _write_access(self, pending: dict[tuple[str, str], tuple[int, dt.datetime, str]]) -> None:
        """The commit does not copy the write-ahead log into the database file, which for the
        thousand-odd rows of 64 recalls took ~0.2 s of a recall at 50k (the p99): a thread does
        that on a connection of its own (a passive checkpoint, blocking no reader or writer);
        docs/benchmarks.md "Scale"."""
        later = self.path != ":memory:" and not self._grouped
        if later:
            self._db.execute("PRAGMA wal_autocheckpoint = 0")
        try:
            super()._write_access(pending)
        finally:
            if later:
                self._db.execute(f"PRAGMA wal_autocheckpoint = {_WAL_PAGES}")
        if later:
            self._checkpoint_later()

    def _checkpoint_later(self) -> None:
        """Copy the write-ahead log into the database file on another thread and connection
        once it holds ``_WAL_PAGES`` pages (what SQLite's own checkpoint after a commit would
        do, off the recall that flushed); one at a time, waited for on close."""
        if self._checkpointer is not None and self._checkpointer.is_alive():
            return

        def run() -> None:
            try:
                with closing(sqlite3.connect(self.path, timeout=1.0, isolation_level=None, check_same_thread=False)) as conn:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:  # busy or gone: the next commit's checkpoint does it
                log.debug("access-count checkpoint skipped: %s", exc)

        try:
            pages = Path(self.path + "-wal").stat().st_size // self._db.execute("PRAGMA page_size").fetchone()[0]
        except OSError:
            return
        if pages >= _WAL_PAGES:
            self._checkpointer = threading.Thread(target=run, name="kenning-checkpoint", daemon=True)
            self._checkpointer.start()

    def set_embeddings(self, kind: str, rows: Sequence[tuple[str, np.ndarray]]) -> None:
        super().set_embeddings(kind, rows)
        self._maintain()

    # -- vector index ------------------------------------------------------------------------
    def forget_vector_indexes(self) -> None:
        """Drop the indexes held in memory and the embedder they were checked against (after a
        new embedder is recorded, or a bulk copy); saved files are looked up again on next use."""
        with self._lock:
            self._anns.clear()
            self._fingerprint = None

    def _fingerprinted(self) -> str | None:
        """What the index files are tied to (the store, the embedder, the file format), read once
        an embedder is recorded; None before."""
        if self._fingerprint is None:
            rows = dict(self._db.execute(
                "SELECT key, value FROM meta WHERE key IN ('embedder', 'embedder_dimension', 'store_id')"
            ).fetchall())
            if "embedder_dimension" in rows:
                self._dimension = int(rows["embedder_dimension"])
                text = "|".join([rows.get("store_id", ""), rows.get("embedder", ""), rows["embedder_dimension"], FORMAT])
                self._fingerprint = hashlib.sha1(text.encode()).hexdigest()[:12]
        return self._fingerprint

    def _ann(self, kind: str, dataset: str) -> AnnIndex | None:
        """The index of one kind in one dataset, opened or built and caught up with the log."""
        if self._fingerprinted() is None:
            return None
        with self._snapshot():  # the trim mark and the log rows read together
            head = self._head()
            index = self._anns.get((kind, dataset))
            if index is None:
                index = self._open_ann(kind, dataset, head)
            if index.stamp > head:  # the database is older than the index: a restored backup
                index = self._build_ann(kind, dataset, head, "index newer than the database")
            elif index.stamp < head:
                # Another process saved a newer file and trimmed the log rows this index still
                # needed: map that file (or rebuild, if it is gone or unreadable).
                if index.stamp < self._trimmed(kind, dataset):
                    log.info("vector index reloaded: log trimmed past it", extra={"kind": kind, "dataset": dataset})
                    index = self._open_ann(kind, dataset, head)
                self._catch_up(index, kind, dataset, head)
        self._anns[(kind, dataset)] = index
        if self._db.in_transaction:  # a file must never cover rows that may yet be rolled back
            return index
        if index.unsaved >= max(_SAVE_ROWS, len(index) // 4) or (
                index.unsaved and index.path is None and self._files is not None):
            self._save(kind, dataset, index)
        return index

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One read transaction (outside a write): every read inside sees the same commit."""
        if self._db.in_transaction:
            yield
            return
        self._db.execute("BEGIN")
        try:
            yield
        finally:
            self._db.execute("COMMIT")

    def _head(self) -> int:
        """The last log position ever given (kept by AUTOINCREMENT when the log is trimmed)."""
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'").fetchone()
        return row[0] if row else 0

    def _maintain(self) -> None:
        """After a commit: once ``_MAINTAIN_ROWS`` vectors were logged since the last time, add
        them to the indexes of their kind and dataset, so the first query after an ingest does
        not build a graph. The rest is caught up by the next search. The write has committed:
        an index that fails here is logged and left to the next search."""
        with self._lock:
            try:
                if (head := self._head()) - self._maintained >= _MAINTAIN_ROWS:
                    for kind, dataset in self._db.execute("SELECT DISTINCT kind, dataset FROM vector_log"
                                                          " WHERE seq > ? AND seq <= ?", (self._maintained, head)).fetchall():
                        self._ann(kind, dataset)
                    self._maintained = head
            except (OSError, RuntimeError, sqlite3.Error) as exc:
                log.warning("vector index maintenance failed", extra={"error": str(exc)})

    def _save_changed_indexes(self) -> None:
        """On close: catch up the indexes this process changed and save those that have no file
        yet or changed by a sixteenth or by ``_CLOSE_SAVE_ROWS`` rows since, so the next
        process replays little (each replayed row is an insertion into the graph: 62,000 of
        them, a sixteenth of a million, would take its first search tens of seconds). Smaller
        changes stay in the log; mapped indexes are left as they are."""
        if self._files is None:
            return
        for kind, dataset in [key for key, index in self._anns.items() if not index.mapped]:
            index = self._ann(kind, dataset)
            if index is None or not index.unsaved:
                continue
            if index.path is None or index.unsaved > min(len(index) // 16, _CLOSE_SAVE_ROWS):
                self._save(kind, dataset, index)
        self._anns.clear()

    def _prefix(self, kind: str, dataset: str) -> str:
        return IndexFiles.prefix(kind, dataset, self._fingerprint or "")

    def _accepted(self, kind: str, dataset: str) -> list[str]:
        """The digests of the index files this database saved for a kind and dataset, newest
        last (a few, for the processes still mapping an older one)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (_FILES_KEY.format(kind, dataset),)).fetchone()
        return json.loads(row[0]) if row else []

    def _accept(self, kind: str, dataset: str, digest: str) -> None:
        """Record a file's digest before it takes its final name (so a reader never finds a
        file its database does not know): in the write under way, or in a write of its own."""
        with nullcontext() if self._db.in_transaction else self._write():
            digests = [d for d in self._accepted(kind, dataset) if d != digest][-(_ACCEPTED - 1):]
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                             (_FILES_KEY.format(kind, dataset), json.dumps([*digests, digest])))

    def _trimmed(self, kind: str, dataset: str) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (_TRIM_KEY.format(kind, dataset),)).fetchone()
        return int(row[0]) if row else 0

    def _open_ann(self, kind: str, dataset: str, head: int) -> AnnIndex:
        files = self._files.saved(self._prefix(kind, dataset)) if self._files else []
        if not files:
            return self._build_ann(kind, dataset, head, "no saved index")
        accepted = set(self._accepted(kind, dataset))
        saved = next((f for f in files if f[3] in accepted), None)
        if saved is None:
            # No file this database saved: it was restored from a backup beside a newer
            # folder, or the two diverged. Replaying the log onto such a file gives wrong rows.
            return self._build_ann(kind, dataset, head, "index not saved by this database")
        path, stamp, breadth, digest = saved
        base = IndexFiles.open(path, self._dimension or 0, digest)
        if base is None:
            path.unlink(missing_ok=True)
            return self._build_ann(kind, dataset, head, "saved index unreadable")
        if stamp < self._trimmed(kind, dataset):
            return self._build_ann(kind, dataset, head, "log trimmed past the saved index")
        return AnnIndex(self._dimension or 0, stamp, base, breadth, path)

    def _build_ann(self, kind: str, dataset: str, head: int, reason: str) -> AnnIndex:
        """Every stored vector of the kind in the dataset, read after ``head`` was: rows written
        since are read again by the next catch-up, which is harmless."""
        dim = self._dimension or 0
        index = build(dim, np.zeros(0, np.uint64), np.zeros((0, dim), np.float32))
        cursor = self._db.execute(
            f"SELECT rowid, embedding FROM {KIND_TABLE[kind]} WHERE dataset = ? AND embedding IS NOT NULL",
            (dataset,),
        )
        while batch := [r for r in cursor.fetchmany(50_000) if len(r[1]) == 4 * dim]:
            keys = np.fromiter((r[0] for r in batch), dtype=np.uint64, count=len(batch))
            index.add(keys, np.frombuffer(b"".join(r[1] for r in batch), np.float32).reshape(-1, dim), threads=0)
        log.info("vector index built from rows",
                 extra={"kind": kind, "rows": len(index), "reason": reason, "stamp": head})
        ann = AnnIndex(dim, head, index, calibrate(index))
        ann.unsaved = len(index)
        return ann

    def _save(self, kind: str, dataset: str, ann: AnnIndex) -> None:
        """Calibrate, save atomically, then trim the log rows of this kind and dataset the file
        covers. A store in memory, or whose directory refuses the file, keeps the index in
        memory; a file at least as new as this index (another process's) is left as it is."""
        if self._files is None:
            ann.calibrate()
            ann.unsaved = 0
            return
        prefix = self._prefix(kind, dataset)
        if not len(ann):  # nothing to save, and no file may keep the rows removed
            self._files.drop(prefix, ann.stamp)
            ann.unsaved = ann.removed = 0
            return
        newest = self._files.latest(prefix)
        if newest is not None and newest[1] >= ann.stamp and newest[0] != ann.path:
            return
        ann.wipe()  # no removed row's vector goes into the file
        ann.calibrate()
        try:
            ann.path = self._files.save(ann.index, prefix, ann.stamp, ann.breadth,
                                        lambda digest: self._accept(kind, dataset, digest))
        except (OSError, RuntimeError, sqlite3.Error) as exc:
            log.warning("vector index not saved", extra={"kind": kind, "error": str(exc)})
            return
        ann.unsaved = 0
        if not self._db.in_transaction:
            with self._write():
                self._db.execute("DELETE FROM vector_log WHERE kind = ? AND dataset = ? AND seq <= ?",
                                 (kind, dataset, ann.stamp))
                self._db.execute(
                    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE"
                    " SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                    (_TRIM_KEY.format(kind, dataset), str(ann.stamp)))

    def _catch_up(self, index: AnnIndex, kind: str, dataset: str, head: int) -> None:
        """Replay the log after the index's stamp: rows that still have a vector in the dataset
        are (re)added, the others removed."""
        table = KIND_TABLE[kind]
        changed = [r[0] for r in self._db.execute(
            "SELECT DISTINCT row_id FROM vector_log WHERE seq > ? AND seq <= ? AND kind = ? AND dataset = ?",
            (index.stamp, head, kind, dataset),
        )]
        for start in range(0, len(changed), 500):
            ids = changed[start : start + 500]
            rows = self._db.execute(
                f"SELECT rowid, embedding FROM {table} WHERE rowid IN ({_marks(len(ids))})"
                " AND dataset = ? AND embedding IS NOT NULL",
                [*ids, dataset],
            ).fetchall()
            alive = {r[0]: r[1] for r in rows if len(r[1]) == 4 * index.dimension}
            index.remove([i for i in ids if i not in alive])
            if alive:
                vectors = np.frombuffer(b"".join(alive.values()), np.float32).reshape(-1, index.dimension)
                index.upsert(list(alive), vectors)
        index.stamp = head

