"""One request model per verb: the parameter names, types, defaults, limits and words of every
verb, written once.

``Kenning`` and ``AsyncKenning`` take their signatures and docstrings from these models; the
HTTP routes use them as request bodies and query parameters (so OpenAPI shows them); the MCP
tools take their names and input schemas from them; the CLI options are checked against them
(``tests/test_parity.py``). Adding a parameter to a verb is one field here, plus the engine
argument that receives it.

Dates (``valid_at``, ``as_of``, ``known_at``, ``retention_until``) are kept as given: the engine
reads them with the one date parser (``kenning.dates``) against its own clock.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator
from pydantic.json_schema import SkipJsonSchema

from ._identity import DATASET_PATTERN, DEFAULT_DATASET, ID_CHARS
from .errors import ValidationError
from .models import FactInput, MemoryInput, MemoryKind, MemoryStatus, Message, Origin, Retention
from .dates import ACCEPTED_FORMS

__all__ = [
    "DATASET_PATTERN",
    "DEFAULT_DATASET",
    "ID_CHARS",
    "ORDERS",
    "SEARCH_TYPES",
    "VERBS",
    "AddRequest",
    "ChainRequest",
    "CognifyRequest",
    "ContextRequest",
    "DatasetsRequest",
    "DeleteRequest",
    "FeedbackRequest",
    "ForgetRequest",
    "GetRequest",
    "ImproveRequest",
    "ListRequest",
    "PinRequest",
    "ProvenanceRequest",
    "PruneRequest",
    "RecallRequest",
    "RememberRequest",
    "SessionsRequest",
    "StatsRequest",
    "TimelineRequest",
    "UnpinRequest",
    "UpdateRequest",
    "VerbRequest",
]

#: the orders ``list`` sorts by
ORDERS = ("created_at", "updated_at", "access_count", "last_accessed_at")
MAX_ITEMS = 1000
#: the limits the models state and the engine checks for a Python call: written once, here
KIND_CHARS, SOURCE_CHARS, NAME_CHARS, QUERY_CHARS = 64, 2000, 1000, 10_000
MAX_TOP_K, MAX_DEPTH, MAX_NEIGHBORS, MAX_PAGE, MAX_OFFSET = 1000, 5, 10, 10_000, 10**9
MIN_TOKENS, MAX_TOKENS = 50, 100_000
#: the longest date text (``valid_at`` …) and the longest name of a choice (``search_type``) read
DATE_CHARS, CHOICE_CHARS = 100, 64

Dataset = Annotated[str, Field(pattern=DATASET_PATTERN, description="Dataset name.")]
MemoryId = Annotated[str, Field(min_length=1, max_length=ID_CHARS, description="A memory id.")]
#: a date as text in any form the date parser reads, or a datetime (never a number)
When = Annotated[str, Field(max_length=DATE_CHARS)] | Annotated[dt.datetime, Strict()]
Content = str | MemoryInput | Message | FactInput
Metadata = Annotated[dict[str, Any], Field(
    description="A JSON object: string keys, at most 16 levels deep, 1,000 keys and 64 KiB as "
    "JSON, finite numbers only.",
)]
#: files and folders to remember: a ``Path`` (Python and the CLI; no transport reads the
#: server's own files, so no JSON schema shows it: HTTP uploads to ``/v1/remember/file``)
Files = SkipJsonSchema[Path]
Globs = Annotated[list[Annotated[str, Field(min_length=1, max_length=1000)]], Field(max_length=100)]
#: recall's search types: kenning.search.recall.SEARCH_TYPES (its lanes, answer modes and
#: ``auto``), written out here so that the request models, and the CLI's options built from
#: them, load without the search engine, numpy and the store (tests/test_imports.py checks
#: that the two stay equal)
SEARCH_TYPES = (
    "hybrid", "chunks", "chunks_lexical", "temporal", "facts", "entities", "graph",
    "graph_completion", "rag_completion", "auto",
)  # fmt: skip
SearchType = Literal[SEARCH_TYPES]  # type: ignore[valid-type]
Days = Annotated[float, Field(ge=0, le=1e6)]
Scope = Annotated[str, Field(min_length=1, max_length=ID_CHARS)]
Filters = Annotated[dict[str, Any], Field(
    description='Metadata conditions, all of which must hold: {"key": value} (equality), '
    '{"key": {"in": [..]}}, {"key": {"gte": 2, "lte": 5}} (numbers or ISO dates); dotted keys reach '
    "into nested objects.",
)]


def _scope(what: str) -> Any:
    return Field(default=None, description=what)


def _json_object(value: Any) -> Any:
    """A JSON object given as text (a query string carries ``filters`` so) read as an object."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a JSON object: {exc.msg}") from None
    return value


def _when(what: str) -> Any:
    return Field(default=None, description=f"{what}: {ACCEPTED_FORMS}")


class VerbRequest(BaseModel):
    """A verb's arguments. ``positional`` names the fields a Python call may pass by position;
    ``partial``: only the fields given are passed on (``update``). ``progress``: the Python verb
    also takes ``progress``, a callback called with the number of memories (files, for
    ``remember`` of files and folders) just processed (no
    request field: it never crosses a wire, and a remote call does not call it)."""

    # built when defined, unlike the result models (``models._Model``): FastAPI wraps a request
    # body's model in a TypeAdapter of its own, where a deferred build makes pydantic warn
    model_config = ConfigDict(extra="forbid")
    positional: ClassVar[tuple[str, ...]] = ()
    partial: ClassVar[bool] = False
    progress: ClassVar[bool] = False

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of the verb's call (of a partial verb: only those given)."""
        names = self.model_fields_set if self.partial else type(self).model_fields
        return {name: getattr(self, name) for name in names}

    @classmethod
    def defaults(cls, **given: Any) -> dict[str, Any]:
        """The keyword arguments of a call that gives only ``given``: the model's defaults
        under them, for code that calls an engine verb itself (the engine declares no
        default of its own; ``tests/test_parity.py``). Not validated: the callee checks."""
        return {name: field.default for name, field in cls.model_fields.items() if not field.is_required()} | given


_CONTENT = ("Text, a structured memory, chat messages, or a list of them (one list is one episode); or "
            "known facts: a list of {source, relation, target, valid_at?, invalid_at?, description?} "
            "records, stored as one memory and resolved without extraction.")


class _Write(VerbRequest):
    positional = ("content",)
    content: Content | Annotated[list[Content], Field(max_length=MAX_ITEMS)] = Field(
        description=_CONTENT)
    dataset: Dataset = DEFAULT_DATASET
    kind: Annotated[str, Field(min_length=1, max_length=KIND_CHARS)] = "knowledge"
    source: Annotated[str, Field(max_length=SOURCE_CHARS)] | None = Field(None, description="Where it came from.")
    valid_at: When | None = _when("When it happened (default: now)")
    metadata: Metadata | None = None
    user: Scope | None = _scope("The user these memories belong to (the speaker of role-user messages).")
    agent: Scope | None = _scope("The agent these memories belong to (the speaker of role-assistant messages).")
    session: Scope | None = _scope("The conversation these messages continue.")
    origin: Origin | None = Field(None, description=(
        "Who said it (docs/security.md): user (the user's own words), api (this caller: the default "
        "for text), agent, tool (a tool's output) or document. Chat messages take it from their role "
        "and files are document; a given origin only lowers those."))

    @field_validator("content", mode="before")
    @classmethod
    def _content_shape(cls, value: Any) -> Any:
        # One sentence instead of an error per branch of the union.
        if not isinstance(value, (str, dict, list, tuple, MemoryInput, Message, FactInput, os.PathLike)):
            raise ValueError("content must be text, a structured memory (an object with a topic), "
                             "chat messages ({role, content}), known facts ({source, relation, target}) "
                             "or a list of them")
        from .pipeline.known import is_known, read_records
        from .pipeline.messages import is_messages, read_messages

        items = value if isinstance(value, (list, tuple)) else [value]
        if is_known(items):  # the engine's checks: each surface names the bad record alike
            try:
                read_records(items, now=dt.datetime.now(dt.timezone.utc))
            except ValidationError as exc:
                raise ValueError(exc.message) from None
            return value
        if is_messages(value):  # the engine's checks, so each surface names the bad message alike
            try:
                read_messages(value if isinstance(value, (list, tuple)) else [value], now=dt.datetime.now(dt.timezone.utc))
            except ValidationError as exc:
                raise ValueError(exc.message) from None
        return value


class RememberRequest(_Write):
    """Store and process now: a string, a structured memory, chat messages (``{"role",
    "content", "name"?, "created_at"?}``, each kept as a ``message`` memory with its speaker),
    or a list of them; or known facts (``{"source", "relation", "target", "valid_at"?,
    "invalid_at"?, "description"?}`` records, kept as one ``facts`` memory and resolved like
    extracted facts without extraction: docs/known-facts.md). ``user``, ``agent`` and
    ``session`` scope what is stored. ``force``
    reprocesses content seen before; ``dry_run`` estimates model calls and tokens without
    storing or calling anything. A ``pathlib.Path`` (or a list of them) remembers files and
    folders, one memory per file (docs/files.md): ``include`` and ``exclude`` pick a folder's
    files, a folder remembered again processes only changed files, and ``sync`` forgets the
    memories of files deleted from it."""

    content: Content | Files | Annotated[list[Content | Files], Field(max_length=MAX_ITEMS)] = Field(  # type: ignore[assignment]  # widened: files too
        description=_CONTENT)
    force: bool = False
    dry_run: bool = False
    include: Globs | None = Field(None, description="Files and folders: remember only the files these globs match.")
    exclude: Globs | None = Field(None, description="Files and folders: skip what these .gitignore-style patterns match.")
    sync: bool = Field(False, description="Files and folders: forget the memories of files deleted from the folder.")
    progress = True


class AddRequest(_Write):
    """Store as ``pending`` without processing; ``cognify`` processes later. Returns the ids."""


class CognifyRequest(VerbRequest):
    """Process every pending memory (failed ones too with ``retry_failed``)."""

    dataset: Dataset | None = Field(None, description="Only this dataset (None: every dataset).")
    force: bool = False
    retry_failed: bool = False
    progress = True


class RecallRequest(VerbRequest):
    """Hybrid search over chunks, facts and entities; no model call unless ``answer``.
    ``as_of`` asks about another time than now, ``known_at`` answers with what was believed
    then; ``neighbors=N`` attaches the N turns before and after each hit in its episode.
    ``user``, ``agent``, ``session`` and metadata ``filters`` narrow the evidence; with a
    ``session`` its latest messages come back too, processed or not."""

    positional = ("query",)
    query: Annotated[str, Field(min_length=1, max_length=QUERY_CHARS)]
    dataset: Dataset = DEFAULT_DATASET
    search_type: SearchType | None = Field("hybrid", description="Lanes to search (auto: a rule-based router picks).")
    top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K)] = 10
    depth: Annotated[int, Field(ge=0, le=MAX_DEPTH, description="Graph expansion hops.")] = 1
    as_of: When | None = _when("Answer about this valid time")
    known_at: When | None = _when("Answer with what was believed at this time")
    answer: bool = Field(False, description="Ask the configured model for an answer (one call).")
    explain: bool = Field(False, description="Say which lanes ranked each hit where.")
    neighbors: Annotated[int, Field(ge=0, le=MAX_NEIGHBORS, description="Turns to attach on each side of every hit.")] = 0
    user: Scope | None = _scope("Only what this user's memories state.")
    agent: Scope | None = _scope("Only what this agent's memories state.")
    session: Scope | None = _scope("Only this session's memories.")
    filters: Filters | None = None

    _filters_json = field_validator("filters", mode="before")(_json_object)


class TimelineRequest(VerbRequest):
    """An entity's facts in time order, open and closed, with what superseded what."""

    positional = ("entity",)
    entity: Annotated[str, Field(min_length=1, max_length=NAME_CHARS)]
    dataset: Dataset = DEFAULT_DATASET
    relation: Annotated[str, Field(max_length=ID_CHARS)] | None = Field(None, description="Only facts with this relation.")


class StatsRequest(VerbRequest):
    """Counts of memories, chunks, entities and facts (every dataset when none is named)."""

    positional = ("dataset",)
    dataset: Dataset | None = None


class _One(VerbRequest):
    positional: ClassVar[tuple[str, ...]] = ("memory_id",)
    memory_id: MemoryId


class GetRequest(_One):
    """One stored memory by id."""


class DeleteRequest(_One):
    """Hard-delete one memory, with garbage collection of what only it stated."""


class ProvenanceRequest(_One):
    """The entities and facts a memory states."""


class UnpinRequest(_One):
    """Undo ``pin``: the memory decays and may be pruned again."""


class ChainRequest(_One):
    """The supersession chain a memory belongs to, oldest to newest."""


class PinRequest(_One):
    """Pin a memory: it never decays and is never pruned."""

    positional = ("memory_id", "reason")
    reason: Annotated[str, Field(max_length=SOURCE_CHARS)] | None = None


class ListRequest(VerbRequest):
    """Stored memories, newest first, a page at a time; ``user``, ``agent``, ``session`` and
    metadata ``filters`` narrow them."""

    dataset: Dataset | None = DEFAULT_DATASET
    kind: MemoryKind | None = None
    status: MemoryStatus | None = None
    retention: Retention | None = None
    pinned: bool | None = Field(None, description="Only pinned (true) or unpinned (false) memories.")
    order_by: Literal[ORDERS] = "created_at"  # type: ignore[valid-type]
    descending: bool = True
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = 50
    offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0
    user: Scope | None = _scope("Only what this user's memories state.")
    agent: Scope | None = _scope("Only what this agent's memories state.")
    session: Scope | None = _scope("Only this session's memories.")
    filters: Filters | None = None

    _filters_json = field_validator("filters", mode="before")(_json_object)


class UpdateRequest(_One):
    """Change only the given fields; new content is re-extracted and the old version's
    entities and facts that nothing else states are removed."""

    partial = True
    content: Annotated[str, Field(min_length=1)] | None = None
    topic: Annotated[str, Field(min_length=1)] | None = None
    context: str | None = None
    decisions: list[str] | None = None
    rationale: list[str] | None = None
    metadata: Metadata | None = None
    source: str | None = None
    kind: Annotated[str, Field(min_length=1, max_length=KIND_CHARS)] | None = None
    valid_at: When | None = _when("The memory's reference time")
    retention: Retention | None = None
    retention_until: When | None = _when("Prunable after this time (None clears it)")


class ForgetRequest(VerbRequest):
    """Hard-delete one memory, a whole dataset, everything, or what one ``user``'s memories
    stated (in ``dataset``, default ``main``): exactly one of them."""

    positional = ("memory_id",)
    memory_id: MemoryId | None = None
    dataset: Dataset | None = None
    everything: bool = False
    user: Scope | None = _scope("Forget this user's memories (and what only they stated).")


class PruneRequest(VerbRequest):
    """Remove what has decayed, aged out or been superseded; ``dry_run`` (the default) only
    reports what a real run would remove."""

    dataset: Dataset = DEFAULT_DATASET
    max_age_days: Days | None = Field(None, description="Created longer ago than this.")
    min_score: Days | None = Field(None, description="Decay score below this.")
    superseded_older_than_days: Days | None = Field(None, description="Superseded longer ago than this.")
    dry_run: bool = True


class DatasetsRequest(VerbRequest):
    """The names of the datasets that hold memories."""


class FeedbackRequest(VerbRequest):
    """Tell kenning a recalled fact helped (or did not): it ranks higher (or lower) from now
    on. Returns the fact's new weight."""

    positional = ("fact_id",)
    fact_id: Annotated[str, Field(min_length=1, max_length=ID_CHARS)]
    helpful: bool


class ImproveRequest(VerbRequest):
    """Tidy a dataset: process pending memories (such as session turns added with ``add``;
    only that session's with ``session``), merge duplicate entities, and fill missing
    embeddings."""

    dataset: Dataset = DEFAULT_DATASET
    session: Scope | None = _scope("Process only this session's pending messages.")


class ContextRequest(VerbRequest):
    """The block an agent puts in its prompt: current facts with the dates they hold since,
    the entities they concern, the session's latest messages and (with a ``query``) the
    recalled evidence, within ``max_tokens``. A closed fact is never shown as current."""

    positional = ("query",)
    query: Annotated[str, Field(min_length=1, max_length=QUERY_CHARS)] | None = None
    dataset: Dataset = DEFAULT_DATASET
    user: Scope | None = _scope("What this user's memories state (all of them in the dataset, whatever the session).")
    agent: Scope | None = _scope("What this agent's memories state.")
    session: Scope | None = _scope("Show this session's latest messages (it does not narrow the knowledge).")
    max_tokens: Annotated[int, Field(ge=MIN_TOKENS, le=MAX_TOKENS)] = 1500
    exclude_flagged: bool = Field(True, description=(
        "Leave out instruction-shaped memories, facts and evidence (they address the model; "
        "docs/security.md)."))


class SessionsRequest(VerbRequest):
    """The conversations of a dataset (of one ``user`` or ``agent``), latest first."""

    dataset: Dataset = DEFAULT_DATASET
    user: Scope | None = None
    agent: Scope | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = 50
    offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0


#: every verb of the facade and its request model, in the order the docs list them
VERBS: dict[str, type[VerbRequest]] = {
    "remember": RememberRequest, "add": AddRequest, "cognify": CognifyRequest,
    "recall": RecallRequest, "timeline": TimelineRequest, "stats": StatsRequest,
    "get": GetRequest, "list": ListRequest, "update": UpdateRequest, "delete": DeleteRequest,
    "forget": ForgetRequest, "provenance": ProvenanceRequest, "pin": PinRequest,
    "unpin": UnpinRequest, "chain": ChainRequest, "prune": PruneRequest,
    "datasets": DatasetsRequest, "feedback": FeedbackRequest, "improve": ImproveRequest,
    "context": ContextRequest, "sessions": SessionsRequest,
}
