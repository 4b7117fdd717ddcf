"""``improve`` and ``feedback``: the memory tidying itself.

``feedback`` changes a fact's weight at once (recall multiplies scores by it). ``improve``
persists what is still pending (session turns added with ``add``), merges duplicate entities,
and fills missing embeddings. Entity merging is deterministic: names that differ only by a
company suffix or leading article, or whose embeddings are at least ``entity_similarity`` alike,
with compatible types. A merge re-points the duplicate's facts and provenance to the entity that
was created first, keeps its name as an alias, and merges facts that became exact repeats.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from .._checks import check_text
from .._identity import check_dataset
from ..errors import NotFoundError, ValidationError
from ..store.base import EntityRow

if TYPE_CHECKING:
    import datetime as dt

    from ..models import CognifyResult
    from ..providers.base import Embedder
    from ..settings import Settings
    from ..store.base import Store

__all__ = ["ImproveMixin", "ImproveResult", "merge_key"]

log = logging.getLogger(__name__)

_SUFFIX = re.compile(
    r"\s+(inc|incorporated|corp|corporation|co|company|ltd|limited|llc|plc|gmbh|ag|sa|group)$"
)
_PAGE = 1000
#: how much one piece of feedback moves a fact's weight, and the bounds of the weight
_UP, _DOWN, _MIN, _MAX = 1.25, 0.8, 0.1, 4.0


class ImproveResult(BaseModel):
    processed: list[str] = Field(default_factory=list)
    failed: dict[str, str] = Field(default_factory=dict)
    entities_merged: dict[str, str] = Field(default_factory=dict)  # duplicate id -> kept id
    facts_merged: list[str] = Field(default_factory=list)
    embeddings_filled: int = 0


def merge_key(normalized: str) -> str:
    """The name two spellings of one organization share: "acme corp" and "acme" -> "acme"."""
    key = normalized
    while True:
        stripped = _SUFFIX.sub("", key)
        if stripped == key or not stripped:
            return key
        key = stripped


def _compatible(a: str, b: str) -> bool:
    return a == b or "concept" in (a, b)


class ImproveMixin:
    settings: Settings
    store: Store
    embedder: Embedder

    if TYPE_CHECKING:
        def now(self) -> dt.datetime: ...
        def cognify(self, **kwargs: object) -> CognifyResult: ...
        def reembed(self, *, missing_only: bool = False, page: int = 512) -> dict[str, int]: ...

    def feedback(self, fact_id: str, *, helpful: bool) -> float:
        """Make a fact rank higher (helpful) or lower in recall; returns its new weight."""
        if not isinstance(helpful, bool):
            raise ValidationError("helpful must be true or false")
        rows = self.store.get_facts([check_text(fact_id, "fact id", max_chars=200)])
        if not rows:
            raise NotFoundError(f"no fact {fact_id!r}")
        weight = min(_MAX, max(_MIN, rows[0].weight * (_UP if helpful else _DOWN)))
        self.store.set_fact_weight(fact_id, weight)
        log.info("feedback", extra={"fact_id": fact_id, "helpful": helpful, "weight": weight})
        return weight

    def improve(self, *, dataset: str = "main") -> ImproveResult:
        check_dataset(dataset)
        result = ImproveResult()
        cognified = self.cognify(dataset=dataset)
        result.processed, result.failed = cognified.processed, cognified.failed
        for drop, keep in self._duplicates(dataset):
            result.facts_merged += self.store.atomic(lambda txn: txn.merge_entities(keep.id, drop.id))
            result.entities_merged[drop.id] = keep.id
        result.embeddings_filled = sum(self.reembed(missing_only=True).values())
        log.info("improved", extra={"dataset": dataset, "processed": len(result.processed),
                                    "entities_merged": len(result.entities_merged),
                                    "facts_merged": len(result.facts_merged),
                                    "embeddings_filled": result.embeddings_filled})
        return result

    def _duplicates(self, dataset: str) -> list[tuple[EntityRow, EntityRow]]:
        """(duplicate, kept) pairs; the kept entity is the older one. Each entity is merged at
        most once per run, so chains resolve over successive runs, never in a cycle."""
        groups: dict[str, list[EntityRow]] = {}
        after = None
        while page := self.store.entity_rows(dataset, after, _PAGE):
            for row in page:
                groups.setdefault(merge_key(row.normalized), []).append(row)
            after = page[-1].id
        pairs, used = [], set()
        for rows in groups.values():
            rows.sort(key=lambda r: (r.created_at, r.id))
            for row in rows[1:]:
                if _compatible(rows[0].type, row.type):
                    pairs.append((row, rows[0]))
                    used |= {row.id, rows[0].id}
        pairs += self._similar(dataset, [r for rows in groups.values() for r in rows], used)
        return pairs

    def _similar(self, dataset: str, rows: list[EntityRow], used: set[str]) -> list[tuple[EntityRow, EntityRow]]:
        by_id = {r.id: r for r in rows}
        pairs = []
        for row in sorted(rows, key=lambda r: (r.created_at, r.id)):
            if row.id in used or row.embedding is None:
                continue
            for hit in self.store.vector(dataset, "entity", row.embedding, 3):
                other = by_id.get(hit.id)
                if other is None or other.id == row.id or other.id in used:
                    continue
                if hit.score >= self.settings.entity_similarity and _compatible(row.type, other.type):
                    keep, drop = sorted((row, other), key=lambda r: (r.created_at, r.id))
                    pairs.append((drop, keep))
                    used |= {row.id, other.id}
                    break
        return pairs
