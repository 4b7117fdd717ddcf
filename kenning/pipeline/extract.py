"""What an extractor returns, and the base class both extractors (offline, LLM) extend."""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ..errors import ModelResponseError
from ..models import Usage
from .llm_resolve import CandidateFact

__all__ = [
    "Document",
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
    ``changes`` marks a new value stated as a change ("I switched to coffee", "I live in Lyon
    now"): it ends the subject's open value of the same slot (``changes.py``).
    """

    source: str
    relation: str
    target: str
    sentence: str
    valid_at: dt.datetime | None = None
    invalid_at: dt.datetime | None = None
    ends: bool = False
    changes: bool = False


class Extraction(BaseModel):
    entities: list[ExtractedEntity] = Field(default_factory=list)
    facts: list[ExtractedFact] = Field(default_factory=list)


class Document(BaseModel):
    """One memory as ``extract_many`` sees it: who said it ("I") and to whom ("you"), if known."""

    chunks: list[str]
    reference_time: dt.datetime
    speaker: str | None = None
    addressee: str | None = None
    #: the turns of its conversation before it, "Speaker: text" lines: read for references
    #: ("yes, that one"), never extracted from (a model extractor shows them; others may ignore them)
    context: str | None = None


class Extractor(ABC):
    """Turns chunks of one memory into entities and facts.

    ``reference_time`` is the memory's reference time: relative dates ("last year") are resolved
    against it. Model calls and tokens spent are added to ``usage``. ``speaker`` is who said the
    text ("I", "me", "my"), ``addressee`` who was spoken to ("you"); the pipeline passes them
    only when the memory names them (``process.speakers_of``). An extractor that ``judges`` is
    shown the live stored facts a text names (``known``) and says which of them each new fact
    repeats or ends; one that does not is never given them. The batch methods loop over the
    single ones unless an extractor can do better.
    """

    #: shown the stored facts a text names, it judges new facts against them
    judges: bool = False

    @abstractmethod
    def extract(
        self, chunks: list[str], *, reference_time: dt.datetime, usage: Usage,
        speaker: str | None = None, addressee: str | None = None,
    ) -> Extraction:
        """The entities and facts of one memory's chunks."""

    def extract_many(
        self, documents: list[Document], *, usage: Usage, known: Sequence[CandidateFact] = ()
    ) -> list[Extraction | ModelResponseError]:
        """One result per document, in order; a document whose answer was unreadable gets its error."""
        out: list[Extraction | ModelResponseError] = []
        for document in documents:
            try:
                voices = {k: v for k in ("speaker", "addressee") if (v := getattr(document, k)) is not None}
                out.append(self.extract(document.chunks, reference_time=document.reference_time, usage=usage,
                                        **voices))
            except ModelResponseError as exc:
                out.append(exc)
        return out

    def groupable(self, chunks: list[str]) -> int | None:
        """Tokens a memory adds to a call shared with others, or None when it goes alone."""
        return None

    def estimate_many(self, documents: list[Document], known: Sequence[CandidateFact] = ()) -> Usage:
        """What ``extract_many`` would spend, without calling anything (nothing, here)."""
        return Usage()
