"""What an extractor returns, and the interface both extractors (offline, LLM) implement."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from pydantic import BaseModel, Field

from ..models import Usage

__all__ = [
    "ENTITY_TYPES",
    "ExtractedEntity",
    "ExtractedFact",
    "Extraction",
    "Extractor",
]

ENTITY_TYPES = ("person", "organization", "place", "technology", "concept", "event", "date")


class ExtractedEntity(BaseModel):
    name: str
    type: str = "concept"
    description: str = ""


class ExtractedFact(BaseModel):
    """An edge stated by the text.

    ``valid_at``/``invalid_at`` are only the dates the *text* states (None when it states none);
    the pipeline fills ``valid_at`` from the memory's reference time. ``ends`` marks a sentence
    that states an ending ("Alice left Acme in June 2024"): it closes the matching live fact.
    """

    source: str
    relation: str
    target: str
    sentence: str
    valid_at: dt.datetime | None = None
    invalid_at: dt.datetime | None = None
    ends: bool = False


class Extraction(BaseModel):
    entities: list[ExtractedEntity] = Field(default_factory=list)
    facts: list[ExtractedFact] = Field(default_factory=list)


class Extractor(Protocol):
    """Turns chunks of one memory into entities and facts.

    ``reference_time`` is the memory's reference time: relative dates ("last year") are resolved
    against it. Model calls and tokens spent are added to ``usage``.
    """

    def extract(self, chunks: list[str], *, reference_time: dt.datetime, usage: Usage) -> Extraction: ...
