"""The PostgreSQL schema: the same tables and columns as SQLite (``schema.py``), with native
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

_MEMORIES = f"""
CREATE TABLE memories (
    id {_ID} PRIMARY KEY,
    dataset {_ID} NOT NULL,
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    topic TEXT,
    context TEXT,
    decisions JSONB NOT NULL DEFAULT '[]',
    rationale JSONB NOT NULL DEFAULT '[]',
    metadata JSONB NOT NULL DEFAULT '{{}}',
    source TEXT,
    content_hash TEXT NOT NULL,
    valid_at TIMESTAMPTZ NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    retention TEXT NOT NULL DEFAULT 'standard',
    retention_until TIMESTAMPTZ,
    pinned BOOLEAN NOT NULL DEFAULT false,
    pin_reason TEXT,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TIMESTAMPTZ,
    supersedes JSONB NOT NULL DEFAULT '[]',
    superseded_by {_ID},
    supersession_reason TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    processed_at TIMESTAMPTZ,
    usage JSONB NOT NULL DEFAULT '{{}}',
    UNIQUE (dataset, content_hash)
) WITH (fillfactor = 80)"""

_CHUNKS = f"""
CREATE TABLE chunks (
    id {_ID} PRIMARY KEY,
    memory_id {_ID} NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    dataset {_ID} NOT NULL,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    embedding vector,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED
)"""

_ENTITIES = f"""
CREATE TABLE entities (
    id {_ID} PRIMARY KEY,
    dataset {_ID} NOT NULL,
    name TEXT NOT NULL,
    normalized TEXT NOT NULL,
    type TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    aliases JSONB NOT NULL DEFAULT '[]',
    embedding vector,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (
        to_tsvector('english'::regconfig, name)
        || jsonb_to_tsvector('english'::regconfig, aliases, '["string"]')
        || to_tsvector('english'::regconfig, description)) STORED,
    UNIQUE (dataset, normalized)
) WITH (fillfactor = 80)"""

_FACTS = f"""
CREATE TABLE facts (
    id {_ID} PRIMARY KEY,
    dataset {_ID} NOT NULL,
    source_id {_ID} NOT NULL REFERENCES entities(id),
    relation TEXT NOT NULL,
    target_id {_ID} NOT NULL REFERENCES entities(id),
    description TEXT NOT NULL,
    valid_at TIMESTAMPTZ NOT NULL,
    invalid_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    expired_at TIMESTAMPTZ,
    superseded_by {_ID},
    memory_id {_ID},
    embedding vector,
    weight DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TIMESTAMPTZ,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, description)) STORED
) WITH (fillfactor = 80)"""

# -- migration: the lexical lane ranks like SQLite's FTS5 (Okapi BM25) ---------------------------
# FTS5's ``porter unicode61`` keeps every word (stop words too) and splits hyphenated words into
# their parts, and its bm25() counts every token in a row's length. ``kenning_english`` does the
# same with PostgreSQL's parser: the english Snowball stemmer without a stop-word list, and no
# lexeme for a hyphenated whole ("well-known" gives "well" and "known"), so the number of
# positions in a ``tsv`` is the row's length in tokens.
_TSV = {
    "chunks": f"to_tsvector('{TS_CONFIG}'::regconfig, text)",
    "facts": f"to_tsvector('{TS_CONFIG}'::regconfig, description)",
    "entities": (
        f"to_tsvector('{TS_CONFIG}'::regconfig, name)"
        f" || jsonb_to_tsvector('{TS_CONFIG}'::regconfig, aliases, '[\"string\"]')"
        f" || to_tsvector('{TS_CONFIG}'::regconfig, description)"
    ),
}

#: one statement trigger per event (PostgreSQL allows transition tables on one event only); an
#: entity's text changes by UPDATE too, seen by a row trigger on the columns its tsv reads
_STATS_FUNCTION = """
CREATE FUNCTION kenning_lexical_stats() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        INSERT INTO lexical_stats AS s (tbl, dataset, rows, tokens)
        VALUES (TG_TABLE_NAME, NEW.dataset, 0, NEW.tsv_len - OLD.tsv_len)
        ON CONFLICT (tbl, dataset) DO UPDATE SET tokens = s.tokens + excluded.tokens;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO lexical_stats AS s (tbl, dataset, rows, tokens)
        SELECT TG_TABLE_NAME, dataset, count(*), sum(tsv_len) FROM new_rows GROUP BY dataset
        ON CONFLICT (tbl, dataset) DO UPDATE SET rows = s.rows + excluded.rows, tokens = s.tokens + excluded.tokens;
    ELSE
        UPDATE lexical_stats s SET rows = s.rows - d.rows, tokens = s.tokens - d.tokens
        FROM (SELECT dataset, count(*) AS rows, sum(tsv_len) AS tokens
              FROM old_rows GROUP BY dataset) d
        WHERE s.tbl = TG_TABLE_NAME AND s.dataset = d.dataset;
    END IF;
    RETURN NULL;
END $$"""


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
    _STATS_FUNCTION,
    *(step for table in _TSV for step in _lexical_steps(table)),
]


# -- migration: rows per lexeme, so a term's row count n is read, not counted -------------------
# FTS5 keeps each term's document count in its index; here ``lexeme_stats`` keeps it per table,
# dataset and lexeme, by the same triggers as ``lexical_stats`` (a row's dataset in the key:
# writers of one dataset already take turns, so writers of two never wait for the same row).
# The entities' update trigger now fires on any change of the text, not only of its length.
_LEXEME_FUNCTION = """
CREATE OR REPLACE FUNCTION kenning_lexical_stats() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        INSERT INTO lexical_stats AS s (tbl, dataset, rows, tokens)
        VALUES (TG_TABLE_NAME, NEW.dataset, 0, NEW.tsv_len - OLD.tsv_len)
        ON CONFLICT (tbl, dataset) DO UPDATE SET tokens = s.tokens + excluded.tokens;
        INSERT INTO lexeme_stats AS s (tbl, lexeme, dataset, rows)
        SELECT TG_TABLE_NAME, l, NEW.dataset, 1 FROM unnest(tsvector_to_array(NEW.tsv)) AS l
        WHERE l <> ALL (tsvector_to_array(OLD.tsv)) ORDER BY l
        ON CONFLICT (tbl, lexeme, dataset) DO UPDATE SET rows = s.rows + 1;
        UPDATE lexeme_stats s SET rows = s.rows - 1
        WHERE s.tbl = TG_TABLE_NAME AND s.dataset = OLD.dataset
          AND s.lexeme = ANY (tsvector_to_array(OLD.tsv)) AND s.lexeme <> ALL (tsvector_to_array(NEW.tsv));
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO lexical_stats AS s (tbl, dataset, rows, tokens)
        SELECT TG_TABLE_NAME, dataset, count(*), sum(tsv_len) FROM new_rows GROUP BY dataset
        ON CONFLICT (tbl, dataset) DO UPDATE SET rows = s.rows + excluded.rows, tokens = s.tokens + excluded.tokens;
        INSERT INTO lexeme_stats AS s (tbl, lexeme, dataset, rows)
        SELECT TG_TABLE_NAME, l, dataset, count(*) FROM new_rows, unnest(tsvector_to_array(tsv)) AS l
        GROUP BY l, dataset ORDER BY l, dataset
        ON CONFLICT (tbl, lexeme, dataset) DO UPDATE SET rows = s.rows + excluded.rows;
    ELSE
        UPDATE lexical_stats s SET rows = s.rows - d.rows, tokens = s.tokens - d.tokens
        FROM (SELECT dataset, count(*) AS rows, sum(tsv_len) AS tokens
              FROM old_rows GROUP BY dataset) d
        WHERE s.tbl = TG_TABLE_NAME AND s.dataset = d.dataset;
        UPDATE lexeme_stats s SET rows = s.rows - d.rows
        FROM (SELECT l, dataset, count(*) AS rows FROM old_rows, unnest(tsvector_to_array(tsv)) AS l
              GROUP BY l, dataset) d
        WHERE s.tbl = TG_TABLE_NAME AND s.lexeme = d.l AND s.dataset = d.dataset;
    END IF;
    RETURN NULL;
END $$"""

_LEXEMES = [
    f"CREATE TABLE lexeme_stats (tbl TEXT NOT NULL, lexeme TEXT NOT NULL, dataset {_ID} NOT NULL,"
    " rows BIGINT NOT NULL, PRIMARY KEY (tbl, lexeme, dataset))",
    _LEXEME_FUNCTION,
    "DROP TRIGGER entities_stats_update ON entities",
    "CREATE TRIGGER entities_stats_update AFTER UPDATE OF name, aliases, description ON entities"
    " FOR EACH ROW WHEN (OLD.tsv IS DISTINCT FROM NEW.tsv) EXECUTE FUNCTION kenning_lexical_stats()",
    *(f"INSERT INTO lexeme_stats (tbl, lexeme, dataset, rows) SELECT '{table}', l, dataset, count(*)"
      f" FROM {table}, unnest(tsvector_to_array(tsv)) AS l GROUP BY l, dataset" for table in _TSV),
]


PG_MIGRATIONS: list[list[str]] = [
    [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        f"CREATE TABLE datasets (name {_ID} PRIMARY KEY, owner_id TEXT, created_at TIMESTAMPTZ NOT NULL)",
        _MEMORIES,
        "CREATE INDEX memories_status ON memories (dataset, status)",
        "CREATE INDEX memories_created ON memories (dataset, created_at)",
        _CHUNKS,
        "CREATE INDEX chunks_memory ON chunks (memory_id)",
        "CREATE INDEX chunks_tsv ON chunks USING gin (tsv)",
        _ENTITIES,
        "CREATE INDEX entities_tsv ON entities USING gin (tsv)",
        _FACTS,
        "CREATE INDEX facts_source ON facts (source_id, relation)",
        "CREATE INDEX facts_target ON facts (target_id, relation)",
        "CREATE INDEX facts_superseded ON facts (superseded_by)",
        "CREATE INDEX facts_tsv ON facts USING gin (tsv)",
        f"""CREATE TABLE fact_memories (
            fact_id {_ID} NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
            memory_id {_ID} NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            PRIMARY KEY (fact_id, memory_id))""",
        "CREATE INDEX fact_memories_memory ON fact_memories (memory_id)",
        f"""CREATE TABLE entity_memories (
            entity_id {_ID} NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            memory_id {_ID} NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            PRIMARY KEY (entity_id, memory_id))""",
        "CREATE INDEX entity_memories_memory ON entity_memories (memory_id)",
    ],
    [
        "ALTER TABLE memories ADD COLUMN episode TEXT",
        "ALTER TABLE memories ADD COLUMN position INTEGER",
        "CREATE INDEX memories_episode ON memories (episode, position)",
    ],
    [
        # Who holds a ``processing`` claim (``host/pid/token``): a claim whose owner process is
        # gone is taken over at once. Cleared when processing ends, so the index stays small.
        "ALTER TABLE memories ADD COLUMN claimed_by TEXT",
        "CREATE INDEX memories_claims ON memories (claimed_by) WHERE claimed_by IS NOT NULL",
    ],
    _LEXICAL,
    # Where each chunk of a document read from a file sits in it (page, slide, sheet, headings);
    # NULL for plain text (kenning.files, docs/files.md).
    [
        "ALTER TABLE chunks ADD COLUMN location JSONB",
        # folder sync reads a dataset's memories by source prefix (Store.file_memories)
        "CREATE INDEX memories_source ON memories (dataset, source) WHERE source IS NOT NULL",
    ],
    [
        # Scopes and messages: the user, agent and session a memory belongs to inside its
        # dataset, and a message's role and speaker. Partial indexes: unscoped memories cost
        # them nothing.
        *(f'ALTER TABLE memories ADD COLUMN "{name}" TEXT' for name in ("user", "agent", "session", "role", "speaker")),
        'CREATE INDEX memories_user ON memories (dataset, "user", created_at) WHERE "user" IS NOT NULL',
        "CREATE INDEX memories_agent ON memories (dataset, agent, created_at) WHERE agent IS NOT NULL",
        "CREATE INDEX memories_session ON memories (dataset, session, position) WHERE session IS NOT NULL",
        # A metadata value as an instant when it is an ISO date, else NULL (a filter on dates
        # must not fail on a value that is not one, nor read 'now' or 'today' as one).
        "CREATE FUNCTION kenning_iso_time(value text) RETURNS timestamptz LANGUAGE plpgsql STABLE"
        " SET search_path FROM CURRENT AS $$ BEGIN"
        " IF value IS NULL OR value !~ '^\\d{4}-\\d{2}-\\d{2}' THEN RETURN NULL; END IF;"
        " RETURN value::timestamptz; EXCEPTION WHEN others THEN RETURN NULL; END $$",
    ],
    _LEXEMES,
    [
        # Authority (kenning.pipeline.authority, docs/security.md): who said each memory, and
        # why its text is instruction-shaped ("a,b"; NULL: not flagged). Memories stored before
        # get the origin their surface would give now; flags come when they are processed again.
        "ALTER TABLE memories ADD COLUMN origin TEXT",
        "ALTER TABLE memories ADD COLUMN flags TEXT",
        "UPDATE memories SET origin = CASE role WHEN 'user' THEN 'user' WHEN 'assistant' THEN 'agent'"
        " WHEN 'tool' THEN 'tool' WHEN 'system' THEN 'api' ELSE CASE WHEN metadata->>'format' IS NOT NULL"
        " THEN 'document' ELSE 'api' END END",
    ],
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
