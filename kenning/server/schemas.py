"""Request and response bodies of the HTTP API that are not the library's own models.

Field names and defaults are those of the Python API (``Kenning``), so a call reads the same
in every surface. Pure pydantic: the MCP server uses these too.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..access import DatasetInfo, GrantInfo, Permission
from ..models import Memory, MemoryInput
from ..pipeline.dates import ACCEPTED_FORMS

__all__ = [
    "AddResult",
    "CognifyRequest",
    "DatasetCreate",
    "DatasetInfo",
    "ErrorBody",
    "ErrorResponse",
    "ForgetRequest",
    "GrantInfo",
    "GrantRequest",
    "Health",
    "MemoryPage",
    "MemoryUpdate",
    "PinRequest",
    "PruneRequest",
    "RecallRequest",
    "RememberRequest",
    "WhoAmI",
]

#: the dataset-name rule of ``kenning.engine`` (1-128 letters, digits, '_', '-' or '.')
DATASET_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$"
Dataset = Annotated[str, Field(pattern=DATASET_PATTERN, description="Dataset name.")]
MemoryId = Annotated[str, Field(min_length=1, max_length=200)]
#: empty text is refused by the engine, with the message every surface gives ("content is empty")
Content = str | MemoryInput
#: a date in any form the one date parser reads (kenning.pipeline.dates), parsed by the engine
Instant = Annotated[str, Field(max_length=100, description=ACCEPTED_FORMS)]
SearchType = Annotated[str, Field(
    max_length=64,
    description="hybrid (default), chunks, chunks_lexical, facts, entities, graph, temporal, "
    "graph_completion, rag_completion or auto (a rule-based router picks).",
)]
Metadata = Annotated[dict[str, Any], Field(
    description="A JSON object: string keys, at most 16 levels deep, 1,000 keys and 64 KiB as "
    "JSON, finite numbers only (NaN / Infinity: 422).",
)]
MAX_ITEMS = 1000


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(_Body):
    code: str = Field(description="Stable machine-readable code, e.g. not_found.")
    message: str


class ErrorResponse(_Body):
    """Every error the API returns has this shape."""

    error: ErrorBody


class Health(_Body):
    status: Literal["ok"] = "ok"
    version: str
    auth: bool


class WhoAmI(_Body):
    name: str
    admin: bool
    auth: bool


class RememberRequest(_Body):
    content: Content | Annotated[list[Content], Field(max_length=MAX_ITEMS)]
    dataset: Dataset = "main"
    kind: Annotated[str, Field(min_length=1, max_length=64)] = "knowledge"
    source: Annotated[str, Field(max_length=2000)] | None = None
    valid_at: Instant | None = None
    metadata: Metadata | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _content_shape(cls, value: Any) -> Any:
        # One sentence instead of an error per branch of the union.
        if not isinstance(value, (str, dict, list, MemoryInput)):
            raise ValueError("content must be text, a structured memory (an object with a topic) or a list of them")
        return value


class RememberNow(RememberRequest):
    force: bool = False


class AddResult(_Body):
    memory_ids: list[str]


class CognifyRequest(_Body):
    dataset: Dataset | None = Field(default=None, description="None: every dataset you may write.")
    force: bool = False
    retry_failed: bool = False


class RecallRequest(_Body):
    query: Annotated[str, Field(min_length=1, max_length=10_000)]
    dataset: Dataset = "main"
    search_type: SearchType | None = "hybrid"
    top_k: Annotated[int, Field(ge=1, le=1000)] = 10
    depth: Annotated[int, Field(ge=0, le=5)] = 1
    as_of: Instant | None = None
    known_at: Instant | None = None
    answer: bool = False
    explain: bool = False
    neighbors: Annotated[int, Field(ge=0, le=10, description="Turns to attach on each side of every hit.")] = 0


class MemoryPage(_Body):
    """One page of a memory listing; ``next_offset`` asks for the next page (None: last page)."""

    items: list[Memory]
    limit: int
    offset: int
    next_offset: int | None = None


class MemoryUpdate(_Body):
    """Fields to change; only those sent are changed."""

    content: Annotated[str, Field(min_length=1)] | None = None
    topic: Annotated[str, Field(min_length=1)] | None = None
    context: str | None = None
    decisions: list[str] | None = None
    rationale: list[str] | None = None
    metadata: Metadata | None = None
    source: str | None = None
    kind: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    valid_at: Instant | None = None
    retention: Literal["permanent", "decision", "standard", "ephemeral", "session"] | None = None
    retention_until: Instant | None = None


class PinRequest(_Body):
    reason: Annotated[str, Field(max_length=2000)] | None = None


class ForgetRequest(_Body):
    """Exactly one of ``memory_id``, ``dataset`` or ``everything``."""

    memory_id: MemoryId | None = None
    dataset: Dataset | None = None
    everything: bool = False


class PruneRequest(_Body):
    dataset: Dataset = "main"
    max_age_days: Annotated[float, Field(ge=0, le=1e6)] | None = None
    min_score: Annotated[float, Field(ge=0, le=1e6)] | None = None
    superseded_older_than_days: Annotated[float, Field(ge=0, le=1e6)] | None = None
    dry_run: bool = True


class ImproveRequest(_Body):
    dataset: Dataset = "main"


class FeedbackRequest(_Body):
    fact_id: Annotated[str, Field(min_length=1, max_length=200)]
    helpful: bool


class FeedbackResult(_Body):
    fact_id: str
    weight: float


class DatasetCreate(_Body):
    name: Dataset


class GrantRequest(_Body):
    permissions: list[Permission] = Field(
        description="The permissions to hold from now on (read is always included); "
        "an empty list revokes the grant."
    )
