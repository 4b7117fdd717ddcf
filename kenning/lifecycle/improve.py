"""The rules of ``improve`` and ``feedback``: the memory tidying itself.

``feedback`` changes a fact's weight at once (recall multiplies scores by it). ``improve``
persists what is still pending (session turns added with ``add``), merges duplicate entities,
and fills missing embeddings. Entity merging is deterministic: names that differ only by a
company suffix or leading article, or whose embeddings are at least ``entity_similarity`` alike,
with compatible types. A merge re-points the duplicate's facts and provenance to the entity that
was created first, keeps its name as an alias, and merges facts that became exact repeats.
"""

from __future__ import annotations

import re
from collections.abc import Callable


from ..store.base import EntityRow, Scored

__all__ = ["duplicate_pairs", "feedback_weight", "merge_key"]

_SUFFIX = re.compile(
    r"\s+(inc|incorporated|corp|corporation|co|company|ltd|limited|llc|plc|gmbh|ag|sa|group)$"
)
#: how much one piece of feedback moves a fact's weight, and the bounds of the weight
_UP, _DOWN, _MIN, _MAX = 1.25, 0.8, 0.1, 4.0


def feedback_weight(weight: float, helpful: bool) -> float:
    """A fact's weight after one piece of feedback."""
    return min(_MAX, max(_MIN, weight * (_UP if helpful else _DOWN)))


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


def duplicate_pairs(
    rows: list[EntityRow], near: Callable[[EntityRow], list[Scored]], similarity: float
) -> list[tuple[EntityRow, EntityRow]]:
    """(duplicate, kept) pairs; the kept entity is the older one. Each entity is merged at
    most once per run, so chains resolve over successive runs, never in a cycle. ``near``
    gives an entity's nearest entities by embedding."""
    groups: dict[str, list[EntityRow]] = {}
    for row in rows:
        groups.setdefault(merge_key(row.normalized), []).append(row)
    pairs, used = [], set()
    for group in groups.values():
        group.sort(key=lambda r: (r.created_at, r.id))
        for row in group[1:]:
            if _compatible(group[0].type, row.type):
                pairs.append((row, group[0]))
                used |= {row.id, group[0].id}
    return pairs + _similar(rows, near, similarity, used)


def _similar(rows: list[EntityRow], near: Callable[[EntityRow], list[Scored]], similarity: float,
             used: set[str]) -> list[tuple[EntityRow, EntityRow]]:
    by_id = {r.id: r for r in rows}
    pairs = []
    for row in sorted(rows, key=lambda r: (r.created_at, r.id)):
        if row.id in used or row.embedding is None:
            continue
        for hit in near(row):
            other = by_id.get(hit.id)
            if other is None or other.id == row.id or other.id in used:
                continue
            if hit.score >= similarity and _compatible(row.type, other.type):
                keep, drop = sorted((row, other), key=lambda r: (r.created_at, r.id))
                pairs.append((drop, keep))
                used |= {row.id, other.id}
                break
    return pairs
