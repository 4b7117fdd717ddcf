"""Which memories ``prune`` removes: pure rules over one memory, no store access.

Order of precedence (the first rule that applies decides):

1. pinned: never pruned;
2. ``processing``: never (a worker holds it);
3. ``retention_until`` set: pruned once it has passed, never before;
4. ``pending``: never (not yet processed; nothing to judge it by);
5. ``permanent``: never; ``decision``: only once superseded;
6. otherwise pruned when any given criterion matches: superseded for longer than
   ``superseded_older_than_days``, created longer ago than ``max_age_days``, or a decay score
   below ``min_score``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from ..errors import ValidationError
from ..models import Memory
from ..settings import Settings
from .decay import decay_score

__all__ = ["PruneCriteria", "prune_reason"]

_DAY = 86400.0


@dataclass(frozen=True)
class PruneCriteria:
    max_age_days: float | None = None
    min_score: float | None = None
    superseded_older_than_days: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_age_days", "superseded_older_than_days"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, float)) or value < 0):
                raise ValidationError(f"{name} must be a number of days >= 0, not {value!r}")
        if self.min_score is not None and (
            not isinstance(self.min_score, (int, float)) or not 0 <= self.min_score <= 1
        ):
            raise ValidationError(f"min_score must be between 0 and 1, not {self.min_score!r}")


def _days(since: dt.datetime, now: dt.datetime) -> float:
    return (now - since).total_seconds() / _DAY


def prune_reason(memory: Memory, criteria: PruneCriteria, settings: Settings, now: dt.datetime) -> str | None:
    """Why ``memory`` would be pruned now (``retention_until`` | ``superseded`` | ``age`` |
    ``score``), or None to keep it."""
    if memory.pinned or memory.status == "processing":
        return None
    if memory.retention_until is not None:
        return "retention_until" if now >= memory.retention_until else None
    if memory.status == "pending" or memory.retention == "permanent":
        return None
    superseded = memory.status == "superseded"
    if memory.retention == "decision" and not superseded:
        return None
    # A superseded memory's updated_at is when it was superseded (recall's grace period
    # counts from it too).
    limit = criteria.superseded_older_than_days
    if limit is not None and superseded and _days(memory.updated_at, now) > limit:
        return "superseded"
    if criteria.max_age_days is not None and _days(memory.created_at, now) > criteria.max_age_days:
        return "age"
    if criteria.min_score is not None and decay_score(memory, settings, now) < criteria.min_score:
        return "score"
    return None
