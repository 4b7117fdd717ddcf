"""The PostgreSQL schema: the shared tables and steps (``kenning/store/schema.py``) with native
types. Timestamps are ``timestamptz``, JSON is ``jsonb``, flags are ``boolean``, vectors are
pgvector ``vector`` columns and full text is a generated ``tsvector`` column with a GIN index.

Memories, entities and facts leave a fifth of each page free (``fillfactor = 80``): recall bumps
their access counters, and with room on the page PostgreSQL updates a row in place (a HOT
update) instead of adding entries to every index, the HNSW one included.

Ids and dataset names use the "C" collation, so ``ORDER BY id`` sorts the way SQLite does
whatever the database's locale.

Vector columns are created untyped; the embedding dimension is only known when the store
learns its embedder (``check_embedder``), and then :func:`vector_steps` types the columns as
``vector(n)`` and builds their HNSW indexes (cosine). Migrations are numbered; each runs with its
bookkeeping row in ``kenning_schema`` in one transaction, under an advisory lock, so several
processes may open a fresh database at once.
"""

from __future__ import annotations

from ..schema import shared_steps
from .dialect import POSTGRES

__all__ = [
    "BOOTSTRAP", "LOCK_DATASET", "LOCK_SCHEMA", "PG_MIGRATIONS", "TS_CONFIG", "vector_steps",
]

#: first key of the two-key advisory locks kenning takes (the second is 0 or a dataset hash)
LOCK_SCHEMA = 0x4B454E  # "KEN"
LOCK_DATASET = 0x4B454F

_ID = 'TEXT COLLATE "C"'

#: the text search configuration of the ``tsv`` columns and of query terms (see ``_LEXICAL``)
TS_CONFIG = "kenning_english"

BOOTSTRAP = (
    "CREATE TABLE IF NOT EXISTS kenning_schema ("
    " version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
)


def _tsv(table: str, config: str) -> str:
    """A row's searchable text as a ``tsvector`` in the text search configuration ``config``."""
    if table == "entities":
        return (f"to_tsvector('{config}'::regconfig, name) || jsonb_to_tsvector('{config}'::regconfig, aliases,"
                f" '[\"string\"]') || to_tsvector('{config}'::regconfig, description)")
    return f"to_tsvector('{config}'::regconfig, {'text' if table == 'chunks' else 'description'})"


#: the first ``tsv`` columns (English configuration), replaced by the lexical lane's migration
_STEPS = shared_steps(POSTGRES, {f"tsv_{table}": f",\n    tsv tsvector GENERATED ALWAYS AS ({_tsv(table, 'english')}) STORED"
                                 for table in ("chunks", "entities", "facts")})

# -- migration: the lexical lane ranks like SQLite's FTS5 (Okapi BM25) ---------------------------
# FTS5's ``porter unicode61`` keeps every word (stop words too) and splits hyphenated words into
# their parts, and its bm25() counts every token in a row's length. ``kenning_english`` does the
# same with PostgreSQL's parser: the english Snowball stemmer without a stop-word list, and no
# lexeme for a hyphenated whole ("well-known" gives "well" and "known"), so the number of
# positions in a ``tsv`` is the row's length in tokens.
_TSV = {table: _tsv(table, TS_CONFIG) for table in ("chunks", "facts", "entities")}

#: one statement trigger per event (PostgreSQL allows transition tables on one event only); an
#: entity's text changes by UPDATE too, seen by a row trigger on the columns its tsv reads. The
#: rows per lexeme (the migration after) are counted by the same function, replaced:
#: ``_stats_function(lexemes=True)``.
_STATS_FUNCTION = """
{create} FUNCTION kenning_lexical_stats() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        INSERT INTO lexical_stats AS s (tbl, dataset, rows, tokens)
        VALUES (TG_TABLE_NAME, NEW.dataset, 0, NEW.tsv_len - OLD.tsv_len)
        ON CONFLICT (tbl, dataset) DO UPDATE SET tokens = s.tokens + excluded.tokens;{row}
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO lexical_stats AS s (tbl, dataset, rows, tokens)
        SELECT TG_TABLE_NAME, dataset, count(*), sum(tsv_len) FROM new_rows GROUP BY dataset
        ON CONFLICT (tbl, dataset) DO UPDATE SET rows = s.rows + excluded.rows, tokens = s.tokens + excluded.tokens;{insert}
    ELSE
        UPDATE lexical_stats s SET rows = s.rows - d.rows, tokens = s.tokens - d.tokens
        FROM (SELECT dataset, count(*) AS rows, sum(tsv_len) AS tokens
              FROM old_rows GROUP BY dataset) d
        WHERE s.tbl = TG_TABLE_NAME AND s.dataset = d.dataset;{delete}
    END IF;
    RETURN NULL;
END $$"""
_LEXEME_COUNTS = {
    "row": """
        INSERT INTO lexeme_stats AS s (tbl, lexeme, dataset, rows)
        SELECT TG_TABLE_NAME, l, NEW.dataset, 1 FROM unnest(tsvector_to_array(NEW.tsv)) AS l
        WHERE l <> ALL (tsvector_to_array(OLD.tsv)) ORDER BY l
        ON CONFLICT (tbl, lexeme, dataset) DO UPDATE SET rows = s.rows + 1;
        UPDATE lexeme_stats s SET rows = s.rows - 1
        WHERE s.tbl = TG_TABLE_NAME AND s.dataset = OLD.dataset
          AND s.lexeme = ANY (tsvector_to_array(OLD.tsv)) AND s.lexeme <> ALL (tsvector_to_array(NEW.tsv));""",
    "insert": """
        INSERT INTO lexeme_stats AS s (tbl, lexeme, dataset, rows)
        SELECT TG_TABLE_NAME, l, dataset, count(*) FROM new_rows, unnest(tsvector_to_array(tsv)) AS l
        GROUP BY l, dataset ORDER BY l, dataset
        ON CONFLICT (tbl, lexeme, dataset) DO UPDATE SET rows = s.rows + excluded.rows;""",
    "delete": """
        UPDATE lexeme_stats s SET rows = s.rows - d.rows
        FROM (SELECT l, dataset, count(*) AS rows FROM old_rows, unnest(tsvector_to_array(tsv)) AS l
              GROUP BY l, dataset) d
        WHERE s.tbl = TG_TABLE_NAME AND s.lexeme = d.l AND s.dataset = d.dataset;""",
}


def _stats_function(lexemes: bool) -> str:
    if lexemes:
        return _STATS_FUNCTION.format(create="CREATE OR REPLACE", **_LEXEME_COUNTS)
    return _STATS_FUNCTION.format(create="CREATE", row="", insert="", delete="")


def _lexical_steps(table: str) -> list[str]:
    trigger = "EXECUTE FUNCTION kenning_lexical_stats()"
    steps = [
        f"ALTER TABLE {table} DROP COLUMN tsv",
        # tsv_len is the row's length in tokens (a generated column cannot read another one)
        f"ALTER TABLE {table} ADD COLUMN tsv tsvector GENERATED ALWAYS AS ({_TSV[table]}) STORED,"
        f" ADD COLUMN tsv_len integer GENERATED ALWAYS AS (kenning_tsv_length({_TSV[table]})) STORED",
        f"CREATE INDEX {table}_tsv ON {table} USING gin (tsv)",
        f"CREATE TRIGGER {table}_stats_insert AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows"
        f" FOR EACH STATEMENT {trigger}",
        f"CREATE TRIGGER {table}_stats_delete AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows"
        f" FOR EACH STATEMENT {trigger}",
        f"INSERT INTO lexical_stats (tbl, dataset, rows, tokens) SELECT '{table}', dataset, count(*),"
        f" sum(tsv_len) FROM {table} GROUP BY dataset",
    ]
    if table == "entities":
        steps.append(
            "CREATE TRIGGER entities_stats_update AFTER UPDATE OF name, aliases, description ON entities"
            f" FOR EACH ROW WHEN (OLD.tsv_len IS DISTINCT FROM NEW.tsv_len) {trigger}"
        )
    return steps


_LEXICAL = [
    f"CREATE TEXT SEARCH DICTIONARY {TS_CONFIG}_stem (TEMPLATE = snowball, LANGUAGE = english)",
    f"CREATE TEXT SEARCH CONFIGURATION {TS_CONFIG} (COPY = english)",
    f"ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG} ALTER MAPPING FOR asciiword, word, hword_asciipart,"
    f" hword_part WITH {TS_CONFIG}_stem",
    f"ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG} DROP MAPPING FOR asciihword, hword, numhword",
    # A row's length in tokens: a lexeme without positions (none here) counts once.
    "CREATE FUNCTION kenning_tsv_length(tsvector) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE"
    " AS 'SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest($1)'",
    # Rows and tokens per table and dataset, kept by triggers, for BM25's average row length.
    f"CREATE TABLE lexical_stats (tbl TEXT NOT NULL, dataset {_ID} NOT NULL, rows BIGINT NOT NULL,"
    " tokens BIGINT NOT NULL, PRIMARY KEY (tbl, dataset))",
    _stats_function(lexemes=False),
    *(step for table in _TSV for step in _lexical_steps(table)),
]


# -- migration: rows per lexeme, so a term's row count n is read, not counted -------------------
# FTS5 keeps each term's document count in its index; here ``lexeme_stats`` keeps it per table,
# dataset and lexeme, by the same triggers as ``lexical_stats`` (a row's dataset in the key:
# writers of one dataset already take turns, so writers of two never wait for the same row).
# The entities' update trigger now fires on any change of the text, not only of its length.
_LEXEMES = [
    f"CREATE TABLE lexeme_stats (tbl TEXT NOT NULL, lexeme TEXT NOT NULL, dataset {_ID} NOT NULL,"
    " rows BIGINT NOT NULL, PRIMARY KEY (tbl, lexeme, dataset))",
    _stats_function(lexemes=True),
    "DROP TRIGGER entities_stats_update ON entities",
    "CREATE TRIGGER entities_stats_update AFTER UPDATE OF name, aliases, description ON entities"
    " FOR EACH ROW WHEN (OLD.tsv IS DISTINCT FROM NEW.tsv) EXECUTE FUNCTION kenning_lexical_stats()",
    *(f"INSERT INTO lexeme_stats (tbl, lexeme, dataset, rows) SELECT '{table}', l, dataset, count(*)"
      f" FROM {table}, unnest(tsvector_to_array(tsv)) AS l GROUP BY l, dataset" for table in _TSV),
]


PG_MIGRATIONS: list[list[str]] = [
    [*_STEPS["core"], *(f"CREATE INDEX {table}_tsv ON {table} USING gin (tsv)" for table in ("chunks", "entities", "facts"))],
    _STEPS["episodes"],
    _STEPS["claims"],
    _LEXICAL,
    _STEPS["locations"],
    [
        *_STEPS["scopes"],
        # A metadata value as an instant when it is an ISO date, else NULL (a filter on dates
        # must not fail on a value that is not one, nor read 'now' or 'today' as one).
        "CREATE FUNCTION kenning_iso_time(value text) RETURNS timestamptz LANGUAGE plpgsql STABLE"
        " SET search_path FROM CURRENT AS $$ BEGIN"
        " IF value IS NULL OR value !~ '^\\d{4}-\\d{2}-\\d{2}' THEN RETURN NULL; END IF;"
        " RETURN value::timestamptz; EXCEPTION WHEN others THEN RETURN NULL; END $$",
    ],
    _LEXEMES,
    _STEPS["authority"],
]


def vector_steps(table: str, dimension: int, typmod: int) -> list[str]:
    """Statements that give ``table.embedding`` the type ``vector(dimension)`` and its HNSW
    index. ``typmod`` is the column's current dimension (-1 when untyped)."""
    index = f"{table}_embedding_hnsw"
    steps = []
    if typmod != dimension:
        steps += [
            f"DROP INDEX IF EXISTS {index}",
            f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({int(dimension)})",
        ]
    steps.append(f"CREATE INDEX IF NOT EXISTS {index} ON {table} USING hnsw (embedding vector_cosine_ops)")
    return steps
