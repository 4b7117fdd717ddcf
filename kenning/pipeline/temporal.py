"""The bi-temporal contradiction rule (docs/architecture.md, "The contradiction rule"), as pure functions.

Valid time is the half-open interval ``[valid_at, invalid_at)``; ``None`` as an end is open.
A new fact N that contradicts a live fact O:
- periods that do not overlap: nothing changes;
- O started before N: O is closed at N's start (``invalid_at = N.valid_at``,
  ``expired_at = now``, ``superseded_by = N``);
- O started when N did (two values stated for one instant, as in one turn): N wins and O is
  expired with its valid time left as it was (``expired_at = now``, ``superseded_by = N``), so
  no interval ever ends where it starts;
- O started after N (an older fact arrived late): N is stored already closed at O's start
  (``invalid_at = O.valid_at``, ``expired_at = now``, ``superseded_by = O``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from ..text import normalize_relation

__all__ = [
    "SINGLE_VALUED",
    "SINGLE_VALUED_PREFIXES",
    "SINGLE_VALUED_TARGET",
    "Close",
    "RelationRules",
    "decide",
    "overlaps",
]

#: Relations that hold one value per subject at a time: a new value closes the old one.
SINGLE_VALUED = frozenset(
    {
        "works_at", "works_for", "employed_by", "employer", "lives_in", "resides_in", "based_in",
        "married_to", "spouse_of", "has_role", "role_at", "title", "ceo_of", "located_in",
        "headquartered_in", "reports_to", "status", "age", "has_age", "engaged_to", "dating",
        # everyday statements (offline extractor): one current value each
        "partner_of", "prefers", "has_diet", "born_in", "born_on",
        # whom or what one has one of ("my doctor is Dr. Patel", "I bank with Barclays")
        "has_doctor", "has_dentist", "has_therapist", "has_vet", "has_landlord", "has_hairdresser",
        "has_optician", "has_physio", "has_accountant", "has_lawyer", "has_trainer", "banks_with",
        "supports",
    }
)
#: Relation families that are single-valued by prefix: a favourite of each kind
#: (favourite_book, favourite_colour …) is one at a time.
SINGLE_VALUED_PREFIXES = ("favourite_", "favorite_")
#: Relations that hold one subject per object at a time ("Carol is the CEO of Acme" ends Bob's term).
SINGLE_VALUED_TARGET = frozenset({"ceo_of"})


@dataclass(frozen=True)
class Close:
    """Set these closing fields on ``fact_id`` (``None`` leaves that side alone)."""

    fact_id: str
    invalid_at: dt.datetime | None
    expired_at: dt.datetime
    superseded_by: str


def overlaps(
    a_start: dt.datetime, a_end: dt.datetime | None, b_start: dt.datetime, b_end: dt.datetime | None
) -> bool:
    """Whether two half-open intervals share an instant (open ends reach forever)."""
    return (a_end is None or b_start < a_end) and (b_end is None or a_start < b_end)


@dataclass(frozen=True)
class Interval:
    id: str
    valid_at: dt.datetime
    invalid_at: dt.datetime | None


def decide(new: Interval, old: Interval, now: dt.datetime) -> Close | None:
    """What the rule does for a new fact against one live fact it contradicts."""
    if not overlaps(new.valid_at, new.invalid_at, old.valid_at, old.invalid_at):
        return None
    if old.valid_at == new.valid_at:
        # both from the same instant (two values in one turn): the later statement wins, the
        # earlier is no longer believed; an interval ending where it starts is never stored
        return Close(old.id, old.invalid_at, now, new.id)
    if old.valid_at < new.valid_at:
        return Close(old.id, new.valid_at, now, new.id)
    return Close(new.id, old.valid_at, now, old.id)


class RelationRules:
    """Which relations are single-valued: data, extensible by settings."""

    def __init__(self, extra_single_valued: Iterable[str] = ()) -> None:
        self.single = SINGLE_VALUED | {normalize_relation(r) for r in extra_single_valued}
        self.single_target = SINGLE_VALUED_TARGET

    def contradicts(
        self, relation: str, source_id: str, target_id: str, other_source: str, other_target: str
    ) -> bool:
        """Whether a new (source, relation, target) contradicts a live fact with the same
        relation and the given endpoints."""
        single = relation in self.single or relation.startswith(SINGLE_VALUED_PREFIXES)
        if single and source_id == other_source and target_id != other_target:
            return True
        return relation in self.single_target and target_id == other_target and source_id != other_source
