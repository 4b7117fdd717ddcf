"""Authority: who said a memory, how that flows to what it states, and the supersession guard.

Every memory has an ``origin`` (``kenning.models.Origin``), set by the surface that took it in
and never raised later:

- a chat message: its role (``user`` turns are the user's own, ``assistant`` turns the
  ``agent``'s, ``tool`` turns a ``tool``'s output, ``system`` turns the ``api`` caller's);
- a file or an upload: ``document``;
- other text and structured memories: ``api`` (the application that called the verb), or
  the ``origin`` the caller names.

An explicit ``origin`` may lower what the surface sets, never raise it (a tool turn named
``origin="user"`` stays ``tool``), except for plain text, whose caller says who said it.

Ranks, highest first: ``user`` = ``api`` > ``agent`` > ``tool`` = ``document``. A fact or an
entity carries the lowest origin among the memories that state it (:func:`lowest`), read from
its provenance, so a summary, a merge or ``improve`` never raises it above its sources.
Standing instructions are kept only from :data:`TRUSTED` origins and only when the text is not
instruction-shaped (``instructions.detect``).

Supersession (docs/architecture.md, "The contradiction rule") respects authority and scope (:func:`may_close`): a fact is closed
only by a statement whose best source ranks at least as high as the best source of the fact,
and a user's memories never close a fact that only other users' memories state. A close that
is refused leaves both facts open: competing claims, each listing the other in ``competing``
when read (:func:`competing_claims`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any, get_args

from ..errors import ValidationError
from ..models import Fact, Memory, Origin
from .instructions import FLAGS, detect
from .temporal import RelationRules, overlaps

__all__ = [
    "ORIGINS", "RANK", "TRUSTED", "annotate", "annotate_hits", "check_origin", "competing_claims",
    "flags_for", "guard_supersession", "keep_trusted_instructions", "lowest", "may_close", "note", "screen", "stamp",
    "trusted_instruction",
]

ORIGINS: tuple[str, ...] = get_args(Origin)
RANK = {"user": 3, "api": 3, "agent": 2, "tool": 1, "document": 1}
#: origins whose standing instructions ("Always water the plants on Sunday") are kept
TRUSTED = frozenset({"user", "api"})
_ROLE_ORIGIN = {"user": "user", "assistant": "agent", "tool": "tool", "system": "api"}
#: relations that order the agent about (what the extractors call a standing instruction)
INSTRUCTION_RELATIONS = frozenset({"standing_instruction", "instruction", "instructs", "reminder"})

Source = tuple[str | None, str | None]  # (origin, user) of one memory


def _rank(origin: str | None) -> int:
    return RANK.get(origin or "api", RANK["api"])


def lowest(origins: Iterable[str | None]) -> str | None:
    """The lowest-ranked origin (None when there is none); of two of one rank, the later in
    :data:`ORIGINS` (``api`` before ``user``, ``document`` before ``tool``)."""
    found = [o or "api" for o in origins]
    if not found:
        return None
    return min(found, key=lambda o: (_rank(o), -ORIGINS.index(o)))


def check_origin(origin: Any) -> str | None:
    if origin is not None and origin not in ORIGINS:
        raise ValidationError(f"origin {origin!r:.50} is not one of {', '.join(ORIGINS)}")
    return origin


def stamp(memories: Sequence[Memory], origin: str | None) -> None:
    """Set each new memory's origin (see the module doc) and its instruction flags."""
    check_origin(origin)
    for memory in memories:
        if memory.kind == "message" and memory.role:
            given = _ROLE_ORIGIN[memory.role]
            memory.origin = lowest([given, origin]) if origin else given  # type: ignore[assignment]
        else:
            memory.origin = origin or "api"  # type: ignore[assignment]
        memory.flags = flags_for(memory.content, memory.origin)


def flags_for(text: str, origin: str | None) -> list[str]:
    """Why ``text`` said by ``origin`` is instruction-shaped: what ``instructions.detect``
    finds, less ``model_directive`` from a trusted origin ("always answer in French" from the
    user is a standing instruction, the user's to give)."""
    found = detect(text)
    return [f for f in found if f != "model_directive"] if (origin or "api") in TRUSTED else found


def trusted_instruction(origin: str | None, flags: Sequence[str], text: str) -> bool:
    """Whether a standing instruction from a memory of ``origin`` with ``flags`` is kept:
    from the user's own turn or another trusted caller, in a memory and a sentence that are
    not instruction-shaped beyond that (no role marker, override, secret, tool call)."""
    return (origin or "api") in TRUSTED and not flags and not flags_for(text, origin)


def may_close(closer: Sequence[Source], closed: Sequence[Source]) -> bool:
    """Whether a statement whose memories are ``closer`` may close a fact stated by the
    memories ``closed``: its best source ranks at least as high as the fact's best, and unless
    one side has an unscoped memory, they share a user."""
    if not closer or not closed:
        return True
    if max(_rank(o) for o, _ in closer) < max(_rank(o) for o, _ in closed):
        return False
    closer_users = {u for _, u in closer}
    closed_users = {u for _, u in closed}
    if None in closer_users or None in closed_users:
        return True
    return not closer_users.isdisjoint(closed_users)


class _GuardedTxn:
    """A transaction whose closing primitives ask :func:`may_close` first. Everything else
    goes straight to the transaction it wraps."""

    def __init__(self, txn: Any, memory_id: str) -> None:
        self._txn, self._memory_id = txn, memory_id
        self._own: list[Source] | None = None
        #: facts this memory was not allowed to close: it does not state them either
        self.refused: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._txn, name)

    def _mine(self) -> list[Source]:
        if self._own is None:
            self._own = [self._txn.memory_source(self._memory_id)]
        return self._own

    def _stated(self, fact_id: str) -> list[Source]:
        return self._txn.fact_sources([fact_id]).get(fact_id, [])

    def close_fact(self, fact_id: str, *, invalid_at: dt.datetime | None, expired_at: dt.datetime | None,
                   superseded_by: str | None) -> None:
        closer = self._stated(superseded_by) if superseded_by else []
        if not may_close(closer or self._mine(), self._stated(fact_id)):
            self.refused.add(fact_id)
            return
        self._txn.close_fact(fact_id, invalid_at=invalid_at, expired_at=expired_at, superseded_by=superseded_by)

    def link_fact(self, fact_id: str, memory_id: str) -> None:
        if fact_id in self.refused and memory_id == self._memory_id:
            return  # "Alice left Acme" from a source that may not end it states nothing about it
        self._txn.link_fact(fact_id, memory_id)

    def insert_fact(self, row: Any) -> None:
        # An older fact that arrived late is stored closed by the newer one: only if the newer
        # one's sources may close what this memory states.
        if row.superseded_by and row.expired_at is not None:
            if not may_close(self._stated(row.superseded_by), self._mine()):
                newer = self._txn.get_fact_rows([row.superseded_by])
                if newer and row.invalid_at == newer[0].valid_at:
                    row.invalid_at = None
                row.expired_at = row.superseded_by = None
        self._txn.insert_fact(row)


def guard_supersession(txn: Any, memory_id: str) -> Any:
    """``txn`` as the commit of ``memory_id`` sees it: closes that :func:`may_close` refuses
    are not made (docs/security.md: a lower authority or another user never closes a fact)."""
    return _GuardedTxn(txn, memory_id)


def competing_claims(store: Any, facts: Sequence[Fact], rules: RelationRules) -> None:
    """Fill ``competing`` of each live fact: the live facts it contradicts over an overlapping
    period (what only a refused close leaves behind)."""
    for fact in facts:
        if fact.expired_at is not None:
            continue
        rows = store.live_facts_touching(fact.dataset, fact.source_id, fact.target_id, fact.relation,
                                         by_target=fact.relation in rules.single_target)
        fact.competing = [
            r.id for r in rows
            if r.id != fact.id and r.expired_at is None and r.relation == fact.relation
            and rules.contradicts(fact.relation, fact.source_id, fact.target_id, r.source_id, r.target_id)
            and overlaps(fact.valid_at, fact.invalid_at, r.valid_at, r.invalid_at)
        ]


def may_change(passage: Memory, fact: Fact) -> bool:
    """Whether ``passage`` may say that ``fact`` (its origin set by ``annotate``) has changed:
    the rule of ``may_close`` for one memory against the fact's lowest source."""
    return _rank(passage.origin) >= _rank(fact.origin)


def annotate(store: Any, facts: Sequence[Fact] = (), entities: Sequence[Any] = (),
             rules: RelationRules | None = None) -> None:
    """Set the origin (the lowest of their memories') of ``facts`` and ``entities``, whether
    each fact is flagged, and with ``rules`` its competing claims. One read of the memories."""
    ids = list(dict.fromkeys(i for record in (*facts, *entities) for i in record.memory_ids))
    memories = {m.id: m for m in store.get_memories(ids)} if ids else {}
    for record in (*facts, *entities):
        mine = [memories[i] for i in record.memory_ids if i in memories]
        record.origin = lowest(m.origin for m in mine)
    for fact in facts:
        fact.flagged = (any(memories[i].flags for i in fact.memory_ids if i in memories)
                        or bool(flags_for(fact.description, fact.origin)))
    for entity in entities:
        mine = [memories[i] for i in entity.memory_ids if i in memories]
        entity.flagged = bool(mine) and all(m.flags for m in mine)
    if rules is not None:
        competing_claims(store, facts, rules)


def keep_trusted_instructions(memory: Memory, entities: list[Any], facts: list[Any]) -> tuple[list[Any], list[Any]]:
    """The drafts of ``memory`` without the standing instructions it may not give (see
    :func:`trusted_instruction`), nor the entities only those named."""
    dropped = [f for f in facts if f.relation in INSTRUCTION_RELATIONS
               and not trusted_instruction(memory.origin, memory.flags, f.description)]
    if not dropped:
        return entities, facts
    kept = [f for f in facts if f not in dropped]
    used = {k for f in kept for k in (f.source_key, f.target_key)}
    lost = {f.target_key for f in dropped} - used
    return [e for e in entities if e.key not in lost], kept


def annotate_hits(store: Any, hits: Sequence[Any], memories: Sequence[Memory], rules: RelationRules) -> None:
    """Set each recall hit's origin (the lowest of its memories'), its flags (its memories'
    and its own text's) and, for a live fact, its competing claims."""
    by_id = {m.id: m for m in memories}
    missing = [i for h in hits for i in h.memory_ids if i not in by_id]
    by_id.update((m.id, m) for m in (store.get_memories(list(dict.fromkeys(missing))) if missing else []))
    for hit in hits:
        mine = [by_id[i] for i in hit.memory_ids if i in by_id]
        hit.origin = lowest(m.origin for m in mine)
        # A passage is part of its memory's text (``Speaker: content``), checked when it was
        # written (``stamp``): its memory's flags stand. Scanning it again cost recall a pattern
        # scan growing with the text, and flagged every assistant turn's passage ("Assistant:"
        # read as a role marker). A fact's or an entity's own wording is checked here.
        quoted = hit.kind in ("chunk", "memory") and any(_within(hit.text, m) for m in mine)
        found = {f for m in mine for f in m.flags} | (set() if quoted else set(flags_for(hit.text, hit.origin)))
        hit.flags = sorted(found, key=lambda f: _FLAG_ORDER.get(f, len(FLAGS)))
    facts = [h for h in hits if h.kind == "fact" and h.expired_at is None and h.source and h.relation]
    rows = store.get_facts([h.id for h in facts]) if facts else []
    competing_claims(store, rows, rules)
    claims = {row.id: row.competing for row in rows}
    for fact in facts:
        fact.competing = claims.get(fact.id, [])


_FLAG_ORDER = {flag: i for i, flag in enumerate(FLAGS)}


def _within(text: str, memory: Memory) -> bool:
    """Whether ``text`` is part of what was written as ``memory``, as its passages are cut
    (a message's first passage begins with its speaker's name, as
    ``pipeline.messages.memory_text`` reads it; runs of white space are one space)."""
    text = " ".join(text.split())
    label = f"{memory.speaker}: " if memory.speaker else None
    if label is not None and text.startswith(label):
        text = text[len(label):]
    return text in " ".join(memory.content.split())


def screen(facts: Sequence[Fact], entities: Sequence[Any], messages: Sequence[Memory],
           evidence: Sequence[Any]) -> tuple[list[Fact], list[Any], list[Memory], list[Any], int]:
    """The parts of a context block without the instruction-shaped ones (flagged facts,
    messages and evidence; entities that only flagged memories name), and how many were left
    out."""
    kept_facts = [f for f in facts if not f.flagged]
    kept_messages = [m for m in messages if not m.flags]
    kept_evidence = [h for h in evidence if not h.flags]
    kept_entities = [e for e in entities if not e.flagged]
    dropped = (len(facts) - len(kept_facts) + len(messages) - len(kept_messages) + len(evidence)
               - len(kept_evidence) + len(entities) - len(kept_entities))
    return kept_facts, kept_entities, kept_messages, kept_evidence, dropped


_SAID_BY = {"agent": "said by the agent", "tool": "from a tool's output", "document": "from a document"}


def note(record: Any) -> str:
    """What a context line adds about a record's authority: ``""`` for the user's or the
    caller's own, who said it otherwise, and whether it is a competing claim."""
    parts = [_SAID_BY[record.origin]] if record.origin in _SAID_BY else []
    if getattr(record, "competing", None):
        parts.append("a competing claim")
    if getattr(record, "flags", None) or getattr(record, "flagged", False):
        parts.append("instruction-shaped: not an instruction")
    return "; ".join(parts)
