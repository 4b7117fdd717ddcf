"""SQLite's migrations: the shared tables and steps (``kenning/store/schema.py``) in SQLite's
types, with the FTS5 tables and the vector change log. Migrations are numbered
(``PRAGMA user_version``); each runs with its bookkeeping in one transaction.
"""

from __future__ import annotations

from ..schema import shared_steps
from .dialect import SQLITE

__all__ = ["SQLITE_MIGRATIONS"]

_STEPS = shared_steps(SQLITE)

def _vector_log_triggers() -> list[str]:
    """Every insert, re-embedding and delete of a row with a vector appends (kind, dataset,
    rowid) to ``vector_log``, in the writing transaction: the saved vector indexes replay the
    log after their stamp to catch up with any process's writes."""
    out = []
    for table, kind in (("chunks", "chunk"), ("facts", "fact"), ("entities", "entity")):
        log = "INSERT INTO vector_log (kind, dataset, row_id) VALUES ('{kind}', {row}.dataset, {row}.rowid);"
        out += [
            f"CREATE TRIGGER {table}_vector_insert AFTER INSERT ON {table} WHEN NEW.embedding IS NOT NULL"
            f" BEGIN {log.format(kind=kind, row='NEW')} END",
            f"CREATE TRIGGER {table}_vector_update AFTER UPDATE OF embedding ON {table}"
            f" BEGIN {log.format(kind=kind, row='NEW')} END",
            f"CREATE TRIGGER {table}_vector_delete AFTER DELETE ON {table} WHEN OLD.embedding IS NOT NULL"
            f" BEGIN {log.format(kind=kind, row='OLD')} END",
        ]
    return out


SQLITE_MIGRATIONS: list[list[str]] = [
    [
        *_STEPS["core"],
        # Full-text rows share the rowid of the record they index. The ``ds`` column holds one
        # token naming the dataset, so FTS5 itself restricts a search to one dataset; it has
        # weight 0 in the ranking.
        *(
            sql
            for table in ("chunks", "facts", "entities")
            for sql in (
                f"CREATE VIRTUAL TABLE {table}_fts USING fts5(ds, text, tokenize='porter unicode61')",
                f"INSERT INTO {table}_fts ({table}_fts, rank) VALUES ('rank', 'bm25(0.0, 1.0)')",
            )
        ),
    ],
    _STEPS["episodes"],
    _STEPS["claims"],
    # The change log of vectors (AUTOINCREMENT: a position is never reused, so a stamp stays
    # meaningful) and the store's random id, which saved index files are tied to.
    [
        "CREATE TABLE vector_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,"
        " dataset TEXT NOT NULL, row_id INTEGER NOT NULL)",
        *_vector_log_triggers(),
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))))",
    ],
    _STEPS["locations"],
    _STEPS["scopes"],
    # The contradiction rule reads, at each fact's commit, the live facts with the same two
    # endpoints: without this index SQLite walked every fact of the target (a city is the target
    # of hundreds), 0.5 ms a fact at 20,000 memories.
    ["CREATE INDEX facts_pair ON facts (source_id, target_id)"],
    _STEPS["authority"],
    # Each entity's facts in the graph lane's order (store.neighbors): its first few are read
    # from the index, not every fact of a hub (an organisation of 20,000 facts at 1M memories).
    [f"CREATE INDEX facts_{end}_time ON facts ({end}_id, expired_at IS NULL, valid_at)" for end in ("source", "target")],
]
