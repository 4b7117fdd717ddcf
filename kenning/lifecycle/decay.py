"""Decay: how much a memory's age lowers its recall score.

``0.5 ** (age_days / half_life_days)``, with age measured from the last access or from
creation, softened by access frequency: a memory recalled ``reference_access_count`` times no
longer decays. Retention policies set the half-life; pinned and permanent memories never decay.

``decay_score`` is the memory's current score whatever the ``decay`` setting says (``prune
--min-score`` uses it); ``decay_multiplier`` is what recall applies, 1.0 while decay is off.
"""

from __future__ import annotations

import datetime as dt

from ..models import Memory
from ..settings import Settings

__all__ = ["HALF_LIFE_DAYS", "decay_multiplier", "decay_score", "half_life"]

#: half-life in days per retention policy; None never decays ("standard" uses the setting)
HALF_LIFE_DAYS: dict[str, float | None] = {
    "permanent": None,
    "decision": 365.0,
    "standard": None,  # settings.half_life_days
    "ephemeral": 7.0,
    "session": 1.0,
}


def half_life(retention: str, settings: Settings) -> float | None:
    if retention == "permanent":
        return None
    if retention == "standard":
        return settings.half_life_days
    return HALF_LIFE_DAYS.get(retention, settings.half_life_days)


def decay_score(memory: Memory, settings: Settings, now: dt.datetime) -> float:
    """The memory's decay score in (0, 1], computed even when the ``decay`` setting is off."""
    if memory.pinned:
        return 1.0
    days = half_life(memory.retention, settings)
    if days is None:
        return 1.0
    since = memory.created_at
    if settings.decay_basis == "access" and memory.last_accessed_at is not None:
        since = memory.last_accessed_at
    age_days = max(0.0, (now - since).total_seconds() / 86400.0)
    base = 0.5 ** (age_days / days)
    reinforcement = min(1.0, memory.access_count / settings.reference_access_count)
    return base + (1.0 - base) * reinforcement


def decay_multiplier(memory: Memory, settings: Settings, now: dt.datetime) -> float:
    """What recall multiplies a memory's hits by: 1.0 unless the ``decay`` setting is on."""
    if not settings.decay:
        return 1.0
    return decay_score(memory, settings, now)
