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

__all__ = ["BOOTSTRAP", "LOCK_DATASET", "LOCK_SCHEMA", "PG_MIGRATIONS", "VECTOR_TABLES", "vector_steps"]

#: first key of the two-key advisory locks kenning takes (the second is 0 or a dataset hash)
LOCK_SCHEMA = 0x4B454E  # "KEN"
LOCK_DATASET = 0x4B454F

#: tables with an ``embedding`` column, by record kind
VECTOR_TABLES = {"chunk": "chunks", "fact": "facts", "entity": "entities"}

_ID = 'TEXT COLLATE "C"'

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
