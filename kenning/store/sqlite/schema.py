"""The relational schema, shared in spirit by every backend. This documented schema is a
public contract (docs/schema.md): tools may read it directly.

Migrations are numbered; each runs with its bookkeeping in one transaction.
"""

from __future__ import annotations

__all__ = ["SQLITE_MIGRATIONS"]

_MEMORIES = """
CREATE TABLE memories (
    id TEXT PRIMARY KEY,
    dataset TEXT NOT NULL,
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    topic TEXT,
    context TEXT,
    decisions TEXT NOT NULL DEFAULT '[]',
    rationale TEXT NOT NULL DEFAULT '[]',
    metadata TEXT NOT NULL DEFAULT '{}',
    source TEXT,
    content_hash TEXT NOT NULL,
    valid_at TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    retention TEXT NOT NULL DEFAULT 'standard',
    retention_until TEXT,
    pinned INTEGER NOT NULL DEFAULT 0,
    pin_reason TEXT,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT,
    supersedes TEXT NOT NULL DEFAULT '[]',
    superseded_by TEXT,
    supersession_reason TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    processed_at TEXT,
    usage TEXT NOT NULL DEFAULT '{}',
    UNIQUE (dataset, content_hash)
)"""

_CHUNKS = """
CREATE TABLE chunks (
    id TEXT PRIMARY KEY,
    memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    dataset TEXT NOT NULL,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    embedding BLOB
)"""

_ENTITIES = """
CREATE TABLE entities (
    id TEXT PRIMARY KEY,
    dataset TEXT NOT NULL,
    name TEXT NOT NULL,
    normalized TEXT NOT NULL,
    type TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    aliases TEXT NOT NULL DEFAULT '[]',
    embedding BLOB,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (dataset, normalized)
)"""

_FACTS = """
CREATE TABLE facts (
    id TEXT PRIMARY KEY,
    dataset TEXT NOT NULL,
    source_id TEXT NOT NULL REFERENCES entities(id),
    relation TEXT NOT NULL,
    target_id TEXT NOT NULL REFERENCES entities(id),
    description TEXT NOT NULL,
    valid_at TEXT NOT NULL,
    invalid_at TEXT,
    created_at TEXT NOT NULL,
    expired_at TEXT,
    superseded_by TEXT,
    memory_id TEXT,
    embedding BLOB,
    weight REAL NOT NULL DEFAULT 1.0,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT
)"""

SQLITE_MIGRATIONS: list[list[str]] = [
    [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE datasets (name TEXT PRIMARY KEY, owner_id TEXT, created_at TEXT NOT NULL)",
        _MEMORIES,
        "CREATE INDEX memories_status ON memories (dataset, status)",
        "CREATE INDEX memories_created ON memories (dataset, created_at)",
        _CHUNKS,
        "CREATE INDEX chunks_memory ON chunks (memory_id)",
        _ENTITIES,
        _FACTS,
        "CREATE INDEX facts_source ON facts (source_id, relation)",
        "CREATE INDEX facts_target ON facts (target_id, relation)",
        "CREATE INDEX facts_superseded ON facts (superseded_by)",
        """CREATE TABLE fact_memories (
            fact_id TEXT NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
            memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            PRIMARY KEY (fact_id, memory_id)) WITHOUT ROWID""",
        "CREATE INDEX fact_memories_memory ON fact_memories (memory_id)",
        """CREATE TABLE entity_memories (
            entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            PRIMARY KEY (entity_id, memory_id)) WITHOUT ROWID""",
        "CREATE INDEX entity_memories_memory ON entity_memories (memory_id)",
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
    [
        # Episodes: the memories of one remember/add call of several items, in order. Recall
        # reads a hit's neighbours (position +-1) through this index.
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


# The change log of vectors (AUTOINCREMENT: a position is never reused, so a stamp stays
# meaningful) and the store's random id, which saved index files are tied to.
SQLITE_MIGRATIONS.append([
    "CREATE TABLE vector_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,"
    " dataset TEXT NOT NULL, row_id INTEGER NOT NULL)",
    *_vector_log_triggers(),
    "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))))",
])


# Where each chunk of a document read from a file sits in it (page, slide, sheet, headings), as
# a JSON object; NULL for plain text (kenning.files, docs/files.md).
SQLITE_MIGRATIONS.append([
    "ALTER TABLE chunks ADD COLUMN location TEXT",
    # folder sync reads a dataset's memories by source prefix (Store.file_memories)
    "CREATE INDEX memories_source ON memories (dataset, source) WHERE source IS NOT NULL",
])


# Scopes and messages: the user, agent and session a memory belongs to inside its dataset, and a
# message's role and speaker. Partial indexes: memories without a scope cost them nothing.
SQLITE_MIGRATIONS.append([
    *(f'ALTER TABLE memories ADD COLUMN "{name}" TEXT' for name in ("user", "agent", "session", "role", "speaker")),
    'CREATE INDEX memories_user ON memories (dataset, "user", created_at) WHERE "user" IS NOT NULL',
    'CREATE INDEX memories_agent ON memories (dataset, agent, created_at) WHERE agent IS NOT NULL',
    'CREATE INDEX memories_session ON memories (dataset, session, position) WHERE session IS NOT NULL',
])


# The contradiction rule reads, at each fact's commit, the live facts with the same two
# endpoints: without this index SQLite walked every fact of the target (a city is the target
# of hundreds), 0.5 ms a fact at 20,000 memories.
SQLITE_MIGRATIONS.append([
    "CREATE INDEX facts_pair ON facts (source_id, target_id)",
])


# Authority (kenning.pipeline.authority, docs/security.md): who said each memory, and why its
# text is instruction-shaped ("a,b": names from kenning.pipeline.instructions.FLAGS; NULL: not
# flagged). Memories stored before are given the origin their surface would give now; their
# flags are found when they are processed again.
SQLITE_MIGRATIONS.append([
    "ALTER TABLE memories ADD COLUMN origin TEXT",
    "ALTER TABLE memories ADD COLUMN flags TEXT",
    "UPDATE memories SET origin = CASE role WHEN 'user' THEN 'user' WHEN 'assistant' THEN 'agent'"
    " WHEN 'tool' THEN 'tool' WHEN 'system' THEN 'api' ELSE CASE WHEN json_extract(metadata, '$.format')"
    " IS NOT NULL THEN 'document' ELSE 'api' END END",
])
