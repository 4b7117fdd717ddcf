"""What an extractor returns, and the interface both extractors (offline, LLM) implement."""

from __future__ import annotations

import datetime as dt
import re
from typing import Protocol

from pydantic import BaseModel, Field

from ..models import Usage

__all__ = [
    "ENTITY_TYPES",
    "ExtractedEntity",
    "ExtractedFact",
    "Extraction",
    "Extractor",
    "normalize_name",
    "normalize_relation",
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
    against it. Model calls and tokens spent are added to ``usage``. ``speaker`` is who said the
    text ("I", "me", "my"), ``addressee`` who was spoken to ("you"); the pipeline passes them
    only when the memory names them (``process.speakers_of``).
    """

    def extract(
        self, chunks: list[str], *, reference_time: dt.datetime, usage: Usage,
        speaker: str | None = None, addressee: str | None = None,
    ) -> Extraction: ...


_POSSESSIVE = re.compile(r"['’]s\b")
_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


def normalize_name(name: str) -> str:
    """Key under which entity names are resolved: case, whitespace, punctuation, possessives."""
    text = _POSSESSIVE.sub("", name.casefold())
    text = _NON_WORD.sub(" ", text).strip()
    if text.startswith("the "):
        text = text[4:]
    return text


def normalize_relation(relation: str) -> str:
    text = _NON_WORD.sub("_", relation.strip().casefold()).strip("_")
    return text or "related_to"
