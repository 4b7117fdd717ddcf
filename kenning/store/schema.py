"""The tables and the migration steps both backends share, written once in their dialect's column
types (``Dialect.types``: ids, JSON, times, flags, vectors). This schema is a public contract:
tools may read it directly.

Each backend numbers its migrations from these steps and its own (``sqlite/schema.py``: the
full-text tables and the vector change log; ``postgres/schema.py``: generated ``tsvector``
columns, BM25 statistics, per-table storage options).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .sql import Dialect

__all__ = ["shared_steps"]

# {id}, {json}, {time}, {bool}, {false}, {vector}, {real}: spelled by the dialect; {fill}: the
# storage options of the tables whose rows recall updates; {tsv_<table>}: a backend's own columns
_CORE = [
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE datasets (name {id} PRIMARY KEY, owner_id TEXT, created_at {time} NOT NULL)",
    """
CREATE TABLE memories (
    id {id} PRIMARY KEY,
    dataset {id} NOT NULL,
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    topic TEXT,
    context TEXT,
    decisions {json} NOT NULL DEFAULT '[]',
    rationale {json} NOT NULL DEFAULT '[]',
    metadata {json} NOT NULL DEFAULT '{{}}',
    source TEXT,
    content_hash TEXT NOT NULL,
    valid_at {time} NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    retention TEXT NOT NULL DEFAULT 'standard',
    retention_until {time},
    pinned {bool} NOT NULL DEFAULT {false},
    pin_reason TEXT,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at {time},
    supersedes {json} NOT NULL DEFAULT '[]',
    superseded_by {id},
    supersession_reason TEXT,
    created_at {time} NOT NULL,
    updated_at {time} NOT NULL,
    processed_at {time},
    usage {json} NOT NULL DEFAULT '{{}}',
    UNIQUE (dataset, content_hash)
){fill}""",
    "CREATE INDEX memories_status ON memories (dataset, status)",
    "CREATE INDEX memories_created ON memories (dataset, created_at)",
    """
CREATE TABLE chunks (
    id {id} PRIMARY KEY,
    memory_id {id} NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    dataset {id} NOT NULL,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    embedding {vector}{tsv_chunks}
)""",
    "CREATE INDEX chunks_memory ON chunks (memory_id)",
    """
CREATE TABLE entities (
    id {id} PRIMARY KEY,
    dataset {id} NOT NULL,
    name TEXT NOT NULL,
    normalized TEXT NOT NULL,
    type TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    aliases {json} NOT NULL DEFAULT '[]',
    embedding {vector},
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at {time},
    created_at {time} NOT NULL{tsv_entities},
    UNIQUE (dataset, normalized)
){fill}""",
    """
CREATE TABLE facts (
    id {id} PRIMARY KEY,
    dataset {id} NOT NULL,
    source_id {id} NOT NULL REFERENCES entities(id),
    relation TEXT NOT NULL,
    target_id {id} NOT NULL REFERENCES entities(id),
    description TEXT NOT NULL,
    valid_at {time} NOT NULL,
    invalid_at {time},
    created_at {time} NOT NULL,
    expired_at {time},
    superseded_by {id},
    memory_id {id},
    embedding {vector},
    weight {real} NOT NULL DEFAULT 1.0,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at {time}{tsv_facts}
){fill}""",
    "CREATE INDEX facts_source ON facts (source_id, relation)",
    "CREATE INDEX facts_target ON facts (target_id, relation)",
    "CREATE INDEX facts_superseded ON facts (superseded_by)",
    """CREATE TABLE fact_memories (
            fact_id {id} NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
            memory_id {id} NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            PRIMARY KEY (fact_id, memory_id)){table_options}""",
    "CREATE INDEX fact_memories_memory ON fact_memories (memory_id)",
    """CREATE TABLE entity_memories (
            entity_id {id} NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            memory_id {id} NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            PRIMARY KEY (entity_id, memory_id)){table_options}""",
    "CREATE INDEX entity_memories_memory ON entity_memories (memory_id)",
]


def shared_steps(dialect: Dialect, columns: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """The shared statements of each migration step in ``dialect``'s types; ``columns``: a
    backend's own columns appended to a table (``tsv_chunks``, ``tsv_entities``, ``tsv_facts``)."""
    names = {"tsv_chunks": "", "tsv_entities": "", "tsv_facts": "", **(columns or {})}
    fmt = dialect.json_text.format(column="metadata", key="format")
    return {
        "core": [sql.format(**dialect.types, **names) for sql in _CORE],
        # Episodes: the memories of one remember/add call of several items, in order. Recall
        # reads a hit's neighbours (position +-1) through this index.
        "episodes": [
            "ALTER TABLE memories ADD COLUMN episode TEXT",
            "ALTER TABLE memories ADD COLUMN position INTEGER",
            "CREATE INDEX memories_episode ON memories (episode, position)",
        ],
        # Who holds a ``processing`` claim (``host/pid/token``): a claim whose owner process is
        # gone is taken over at once. Cleared when processing ends, so the index stays small.
        "claims": [
            "ALTER TABLE memories ADD COLUMN claimed_by TEXT",
            "CREATE INDEX memories_claims ON memories (claimed_by) WHERE claimed_by IS NOT NULL",
        ],
        # Where each chunk of a document read from a file sits in it (page, slide, sheet,
        # headings), as a JSON object; NULL for plain text (kenning.files, docs/files.md).
        "locations": [
            f"ALTER TABLE chunks ADD COLUMN location {dialect.types['json']}",
            # folder sync reads a dataset's memories by source prefix (Store.file_memories)
            "CREATE INDEX memories_source ON memories (dataset, source) WHERE source IS NOT NULL",
        ],
        # Scopes and messages: the user, agent and session a memory belongs to inside its
        # dataset, and a message's role and speaker. Partial indexes: memories without a scope
        # cost them nothing.
        "scopes": [
            *(f'ALTER TABLE memories ADD COLUMN "{name}" TEXT' for name in ("user", "agent", "session", "role", "speaker")),
            'CREATE INDEX memories_user ON memories (dataset, "user", created_at) WHERE "user" IS NOT NULL',
            "CREATE INDEX memories_agent ON memories (dataset, agent, created_at) WHERE agent IS NOT NULL",
            "CREATE INDEX memories_session ON memories (dataset, session, position) WHERE session IS NOT NULL",
        ],
        # Authority (kenning.pipeline.authority, docs/security.md): who said each memory, and
        # why its text is instruction-shaped ("a,b": names from kenning.pipeline.instructions.FLAGS;
        # NULL: not flagged). Memories stored before are given the origin their surface would
        # give now; their flags are found when they are processed again.
        "authority": [
            "ALTER TABLE memories ADD COLUMN origin TEXT",
            "ALTER TABLE memories ADD COLUMN flags TEXT",
            "UPDATE memories SET origin = CASE role WHEN 'user' THEN 'user' WHEN 'assistant' THEN 'agent'"
            f" WHEN 'tool' THEN 'tool' WHEN 'system' THEN 'api' ELSE CASE WHEN {fmt}"
            " IS NOT NULL THEN 'document' ELSE 'api' END END",
        ],
    }
