"""Public data models. Pure pydantic: no database or network methods on them."""

from __future__ import annotations

import copy
import datetime as dt
import functools
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

__all__ = [
    "AddResult",
    "Chunk",
    "CognifyResult",
    "Context",
    "Entity",
    "Fact",
    "FactInput",
    "FeedbackResult",
    "FileFailure",
    "FilesSummary",
    "ForgetResult",
    "Hit",
    "ImproveResult",
    "Location",
    "Memory",
    "MemoryInput",
    "MemoryPage",
    "Message",
    "Neighbor",
    "Provenance",
    "PruneResult",
    "RecallResult",
    "RememberResult",
    "Session",
    "Stats",
    "Timeline",
    "Usage",
]

Retention = Literal["permanent", "decision", "standard", "ephemeral", "session"]
MemoryStatus = Literal["pending", "processing", "active", "failed", "superseded"]
#: the kinds of memory (``session``: turns that ``improve`` persists into the graph; ``facts``:
#: known facts remembered as records, kenning.pipeline.known)
MemoryKind = Literal["knowledge", "note", "episode", "message", "session", "facts"]
HitKind = Literal["fact", "entity", "chunk", "memory"]
#: who speaks a message (the OpenAI chat roles)
Role = Literal["user", "assistant", "system", "tool"]
#: who said a memory, highest authority first (``kenning.pipeline.authority``, docs/security.md):
#: the user in their own turn, an API caller, the agent, a tool's output, a file or upload
Origin = Literal["user", "api", "agent", "tool", "document"]


class _Model(BaseModel):
    # defer_build: each model's validator is built on its first use, not at ``import kenning``
    # (building all of them costs ~0.2 s, and most processes use a few)
    model_config = ConfigDict(extra="forbid", defer_build=True)


_M = TypeVar("_M", bound=BaseModel)


def stored(model: type[_M], values: dict[str, Any]) -> _M:
    """A record read back from kenning's own store, built without validating it again: its
    values were validated on the way in and the store's dialect gives them back as their types
    (what the model's validators would make of them, too). A field missing from ``values``
    takes its default. A third of the cost of validating (a recall reads a hundred memories)."""
    names, defaults = _fields(model)
    if len(values) == len(names):  # every field (in the model's order, as validation leaves them)
        fields = {name: values[name] for name in names}
        given = set(names)
    else:
        fields = {name: values[name] if name in values else default() for name, default in defaults}
        given = {name for name in values if name in fields}
    record = model.__new__(model)
    object.__setattr__(record, "__dict__", fields)
    object.__setattr__(record, "__pydantic_fields_set__", given)
    object.__setattr__(record, "__pydantic_extra__", None)
    object.__setattr__(record, "__pydantic_private__", None)
    return record


@functools.cache
def _fields(model: type[BaseModel]) -> tuple[tuple[str, ...], tuple[tuple[str, Callable[[], Any]], ...]]:
    """A model's field names, and each field's default as validation gives it (a new one from its
    factory, a copy of a mutable value; ``FieldInfo.get_default`` reads the factory's signature
    on every call, a third of a millisecond per record)."""
    return tuple(model.__pydantic_fields__), tuple((name, _default(info)) for name, info in model.__pydantic_fields__.items())


def _default(info: FieldInfo) -> Callable[[], Any]:
    if info.default_factory is not None:
        return cast(Callable[[], Any], info.default_factory)
    value = info.default
    if value is PydanticUndefined:
        def missing() -> Any:
            raise TypeError(f"a required field is missing ({info})")
        return missing
    if isinstance(value, (str, int, float, bool, type(None))):
        return lambda: value
    return lambda: copy.deepcopy(value)


class Usage(_Model):
    """Model calls and tokens spent (estimated where a provider does not report them)."""

    chat_calls: int = 0
    embedding_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedded_texts: int = 0
    seconds: float = 0.0

    def add(self, other: Usage) -> None:
        for name in type(self).model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class MemoryInput(_Model):
    """A structured memory: what was decided about a topic, and why."""

    topic: str
    context: str = ""
    decisions: list[str] = Field(default_factory=list)
    rationale: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None
    retention: Retention = "standard"
    #: any form the date parser reads (kenning.dates.ACCEPTED_FORMS)
    retention_until: dt.datetime | Annotated[str, Field(max_length=100)] | None = None
    supersedes: list[str] = Field(default_factory=list)
    supersession_reason: str | None = None

    @field_validator("topic")
    @classmethod
    def _topic_not_empty(cls, value: str) -> str:
        if not value or not value.strip():
            raise ValueError("topic must not be empty")
        return value.strip()

    @field_validator("decisions", "rationale")
    @classmethod
    def _no_empty_items(cls, value: list[str]) -> list[str]:
        items = [item.strip() for item in value]
        if any(not item for item in items):
            raise ValueError("items must not be empty strings")
        return items

    def render(self) -> str:
        """The text that is chunked, extracted and searched for this memory."""
        lines = [f"{self.topic}."]
        if self.context.strip():
            lines.append(self.context.strip())
        lines.extend(f"Decision: {item}" for item in self.decisions)
        lines.extend(f"Rationale: {item}" for item in self.rationale)
        return "\n".join(lines)


class Message(_Model):
    """One chat turn as input (the OpenAI chat shape): ``name`` is the speaker when it is not
    the call's user (role ``user``) or agent (role ``assistant``); ``created_at`` is when it was
    said, in any form the date parser reads."""

    role: Role
    content: str
    name: str | None = Field(default=None, max_length=200)
    created_at: dt.datetime | dt.date | Annotated[str, Field(max_length=100)] | None = None


#: a date given by a caller: a datetime, a date, or text in any form the date parser reads
_Given = dt.datetime | dt.date | Annotated[str, Field(max_length=100)]


# A known fact (kenning.pipeline.known, docs/known-facts.md): ``invalid_at`` not after
# ``valid_at`` is a ValidationError; ``invalid_at`` alone says the relation ended then (it closes
# the open matching fact). The docstring is the JSON schema's description: plain words, short.
class FactInput(_Model):
    """A known fact, stored as given without extraction: source, relation, target, optional dates and sentence."""

    source: Annotated[str, Field(min_length=1, max_length=1000, description="The subject entity's name.")]
    relation: Annotated[str, Field(min_length=1, max_length=200, description="The relation, e.g. works_at.")]
    target: Annotated[str, Field(min_length=1, max_length=1000, description="The object entity's name.")]
    valid_at: _Given | None = Field(None, description="When it began to hold (default: the call's valid_at).")
    invalid_at: _Given | None = Field(None, description="When it stopped holding; alone: the relation ended then.")
    description: Annotated[str, Field(max_length=2000)] | None = Field(
        None, description="Its sentence (default: source relation target).")


class Memory(_Model):
    """A stored input: the raw content, kept, and its lifecycle state."""

    id: str
    dataset: str
    kind: str
    content: str
    topic: str | None = None
    context: str | None = None
    decisions: list[str] = Field(default_factory=list)
    rationale: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None
    content_hash: str
    valid_at: dt.datetime
    status: MemoryStatus
    error: str | None = None
    retention: Retention = "standard"
    retention_until: dt.datetime | None = None
    pinned: bool = False
    pin_reason: str | None = None
    access_count: int = 0
    last_accessed_at: dt.datetime | None = None
    supersedes: list[str] = Field(default_factory=list)
    superseded_by: str | None = None
    supersession_reason: str | None = None
    created_at: dt.datetime
    updated_at: dt.datetime
    processed_at: dt.datetime | None = None
    #: the group this memory arrived in (one ``remember``/``add`` call of several items) and its
    #: place there: recall scores and shows neighbouring turns of the same episode
    episode: str | None = None
    position: int | None = None
    #: scopes inside the dataset: the user and agent a memory concerns, the conversation it is from
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    #: a message's role and its speaker (the name of the entity first-person statements mean)
    role: Role | None = None
    speaker: str | None = None
    #: model calls, tokens and seconds spent processing this memory
    usage: Usage = Field(default_factory=Usage)
    #: who said it, set by the surface that took it in and never raised (docs/security.md)
    origin: Origin = "api"
    #: why its text is instruction-shaped (it addresses the model), if it is: flagged, not obeyed
    flags: list[str] = Field(default_factory=list)

    @field_validator("origin", mode="before")
    @classmethod
    def _stored_origin(cls, value: Any) -> Any:
        return "api" if value is None else value  # a row imported from a file that predates origins

    @field_validator("flags", mode="before")
    @classmethod
    def _stored_flags(cls, value: Any) -> Any:
        if value is None:
            return []
        return [f for f in value.split(",") if f] if isinstance(value, str) else value  # stored as "a,b"


class Entity(_Model):
    id: str
    dataset: str
    name: str
    type: str
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    created_at: dt.datetime
    memory_ids: list[str] = Field(default_factory=list)
    #: the lowest authority among the memories that name it (None: not read)
    origin: Origin | None = None
    #: every memory that names it is instruction-shaped
    flagged: bool = False


class Fact(_Model):
    """An edge between two entities with its sentence and two timelines."""

    id: str
    dataset: str
    source_id: str
    source: str
    relation: str
    target_id: str
    target: str
    description: str
    valid_at: dt.datetime
    invalid_at: dt.datetime | None = None
    created_at: dt.datetime
    expired_at: dt.datetime | None = None
    superseded_by: str | None = None
    weight: float = 1.0
    memory_ids: list[str] = Field(default_factory=list)
    #: the lowest authority among the memories that state it (None: not read)
    origin: Origin | None = None
    #: instruction-shaped: its sentence or a memory that states it addresses the model
    flagged: bool = False
    #: live facts it contradicts that neither could close (a lower authority or another user's
    #: claim): competing claims, both kept (docs/security.md)
    competing: list[str] = Field(default_factory=list)


class FileFailure(_Model):
    """A file that was not remembered, and why (one line that names it)."""

    source: str
    error: str


class FilesSummary(_Model):
    """What remembering files or folders did, by file (``source``): ``added`` files had no
    memory yet; ``changed`` ones got a new memory that supersedes the old; ``unchanged`` ones
    were skipped (content hash already stored); ``removed`` ones were deleted from their
    folder and their memories forgotten (``sync``); ``failed`` ones could not be read or
    stored (the rest were)."""

    added: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    failed: list[FileFailure] = Field(default_factory=list)

    def __str__(self) -> str:
        return (f"{len(self.added)} added, {len(self.changed)} changed, {len(self.unchanged)} unchanged, "
                f"{len(self.removed)} removed, {len(self.failed)} failed")


class RememberResult(_Model):
    memory_ids: list[str] = Field(default_factory=list)
    entities_created: int = 0
    facts_created: int = 0
    facts_invalidated: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    #: processed memories from which no fact was extracted (offline: configure a model)
    no_facts: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    dry_run: bool = False
    #: files and folders remembered: what happened to each file (None for text)
    files: FilesSummary | None = None

    def add(self, other: RememberResult) -> None:
        """Count ``other`` (the result of another part of the same work) in this one."""
        for name in ("memory_ids", "facts_invalidated", "skipped", "no_facts", "errors"):
            getattr(self, name).extend(getattr(other, name))
        self.entities_created += other.entities_created
        self.facts_created += other.facts_created
        self.usage.add(other.usage)
        if other.files is not None:
            self.files = self.files or FilesSummary()
            for name in FilesSummary.model_fields:
                getattr(self.files, name).extend(getattr(other.files, name))


class CognifyResult(_Model):
    processed: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    failed: dict[str, str] = Field(default_factory=dict)
    #: processed memories from which no fact was extracted (offline: configure a model)
    no_facts: list[str] = Field(default_factory=list)
    entities_created: int = 0
    facts_created: int = 0
    facts_invalidated: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)


class Neighbor(_Model):
    """A memory next to a hit's memory in the same episode (the turn before or after it)."""

    memory_id: str
    offset: int
    text: str
    valid_at: dt.datetime


class Location(_Model):
    """Where a chunk sits in its document, read from the text itself (docs/files.md): the PDF
    page, the slide, the spreadsheet sheet and the headings above it. ``str()`` gives the
    citation form: ``p. 12 › Results``."""

    page: int | None = None
    slide: int | None = None
    sheet: str | None = None
    headings: list[str] = Field(default_factory=list)

    def __str__(self) -> str:
        parts = [f"p. {self.page}" if self.page else "", f"slide {self.slide}" if self.slide else "",
                 f"sheet {self.sheet}" if self.sheet else "", *self.headings]
        return " › ".join(p for p in parts if p)


class Hit(_Model):
    """One recall result: one piece of evidence (a memory) in its best form (the fact it states
    that the query asks about, or its matching passage). Facts carry their timelines; every hit
    names its memories; ``support`` names the memory's other records that matched."""

    kind: HitKind
    id: str
    text: str
    score: float
    lanes: list[str] = Field(default_factory=list)
    memory_ids: list[str] = Field(default_factory=list)
    current: bool = True
    #: a fact's source entity; a chunk or memory hit's memory's ``source`` (the file it was read from)
    source: str | None = None
    relation: str | None = None
    target: str | None = None
    valid_at: dt.datetime | None = None
    invalid_at: dt.datetime | None = None
    created_at: dt.datetime | None = None
    expired_at: dt.datetime | None = None
    superseded_by: str | None = None
    explanation: str | None = None
    support: list[str] = Field(default_factory=list)
    neighbors: list[Neighbor] = Field(default_factory=list)
    #: where the hit's passage sits in its file (page, slide, sheet, headings); the file is the
    #: memory's ``source``
    location: Location | None = None
    #: the lowest authority among the hit's memories, and why its text is instruction-shaped
    #: (the flags of its memories and of its own text; empty: not flagged)
    origin: Origin | None = None
    flags: list[str] = Field(default_factory=list)
    #: for a fact: live facts it competes with (see ``Fact.competing``)
    competing: list[str] = Field(default_factory=list)
    #: who said it: the speaker of the hit's (first) memory when it is a message (its time is
    #: ``valid_at``)
    speaker: str | None = None


class RecallResult(_Model):
    query: str
    dataset: str
    search_type: str
    hits: list[Hit] = Field(default_factory=list)
    as_of: dt.datetime | None = None
    known_at: dt.datetime | None = None
    answer: str | None = None
    citations: list[str] = Field(default_factory=list)
    memories: list[Memory] = Field(default_factory=list)
    #: with ``session``: its latest messages, oldest first, processed or not
    messages: list[Memory] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0


class Timeline(_Model):
    entity: Entity
    facts: list[Fact] = Field(default_factory=list)


class Stats(_Model):
    dataset: str | None = None
    memories: int = 0
    pending: int = 0
    failed: int = 0
    chunks: int = 0
    entities: int = 0
    facts: int = 0
    facts_live: int = 0
    facts_closed: int = 0
    datasets: list[str] = Field(default_factory=list)
    last_processed_at: dt.datetime | None = None
    usage: Usage = Field(default_factory=Usage)
    embedder: str | None = None


class PruneResult(_Model):
    dry_run: bool
    evaluated: int = 0
    pruned: int = 0
    memory_ids: list[str] = Field(default_factory=list)
    entity_ids: list[str] = Field(default_factory=list)
    fact_ids: list[str] = Field(default_factory=list)


class ForgetResult(_Model):
    """What a hard delete removed: the memories, and the entities and facts nothing else stated."""

    memory_ids: list[str] = Field(default_factory=list)
    entity_ids: list[str] = Field(default_factory=list)
    fact_ids: list[str] = Field(default_factory=list)


class Chunk(_Model):
    """A searchable piece of a memory's text, in order."""

    id: str
    position: int
    text: str
    token_count: int
    location: Location | None = None


class Provenance(_Model):
    """A memory's chunks and its graph: the entities and facts it states."""

    memory_id: str
    chunks: list[Chunk] = Field(default_factory=list)
    entities: list[Entity] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)


class TransferResult(_Model):
    """What ``export`` wrote or ``import_`` loaded (docs/export.md)."""

    datasets: list[str]
    vectors: bool
    #: the embedder (name, dimension) the file's vectors came from
    embedder: tuple[str, int] | None = None
    #: table -> rows written (export) or inserted (import)
    rows: dict[str, int] = Field(default_factory=dict)
    #: table -> rows the store held already, identical, so skipped (import)
    skipped: dict[str, int] = Field(default_factory=dict)
    #: whether the file's users, dataset owners and grants were applied (import ``accounts``)
    accounts: bool = False
    #: table -> account rows of the file left out because ``accounts`` was not asked (import)
    ignored: dict[str, int] = Field(default_factory=dict)
    #: the users the import created, and those of them that are admins (import ``accounts``)
    users: list[str] = Field(default_factory=list)
    admins: list[str] = Field(default_factory=list)


class AddResult(_Model):
    """What ``add`` stored (over HTTP; the Python verb returns the ids)."""

    memory_ids: list[str]


class MemoryPage(_Model):
    """One page of a memory listing; ``next_offset`` asks for the next page (None: last page)."""

    items: list[Memory]
    limit: int
    offset: int
    next_offset: int | None = None


class FeedbackResult(_Model):
    """A fact's new weight after ``feedback`` (over HTTP; the Python verb returns the weight)."""

    fact_id: str
    weight: float


class ImproveResult(_Model):
    """What ``improve`` did: memories processed or failed, entities and facts merged, embeddings filled."""

    processed: list[str] = Field(default_factory=list)
    failed: dict[str, str] = Field(default_factory=dict)
    entities_merged: dict[str, str] = Field(default_factory=dict)  # duplicate id -> kept id
    facts_merged: list[str] = Field(default_factory=list)
    embeddings_filled: int = 0


class Session(_Model):
    """A conversation: the messages stored with one ``session`` id in a dataset."""

    id: str
    dataset: str
    user: str | None = None
    agent: str | None = None
    #: when its first and last messages were said (their ``valid_at``)
    first_at: dt.datetime
    last_at: dt.datetime
    messages: int = 0


class Context(_Model):
    """The block an agent puts in its prompt: ``text``, rendered within ``max_tokens``, and the
    parts it shows. ``facts`` are current at ``as_of`` unless listed in ``history`` (closed:
    never presented as current); ``plans`` are current intentions ("plans to move to Toronto"),
    kept apart from the facts so the planned value never reads as the current one;
    ``messages`` are the session's latest turns, oldest first."""

    text: str
    tokens: int = 0
    max_tokens: int
    as_of: dt.datetime
    facts: list[Fact] = Field(default_factory=list)
    plans: list[Fact] = Field(default_factory=list)
    history: list[Fact] = Field(default_factory=list)
    entities: list[Entity] = Field(default_factory=list)
    messages: list[Memory] = Field(default_factory=list)
    evidence: list[Hit] = Field(default_factory=list)
    #: parts left out to stay within the budget
    omitted: int = 0
    #: instruction-shaped parts left out (``exclude_flagged``)
    excluded: int = 0
