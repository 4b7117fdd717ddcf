"""The context block an agent puts in its prompt, rendered within a token budget.
:func:`build_context` reads a scope's parts from the store; :func:`render_context` (pure)
decides what fits and how it reads.

Zep's ``memory.context`` is the reference: every fact carries its validity dates, and a fact is
shown as current only if it is valid at ``as_of`` and kenning has not closed it. Closed facts,
and facts that begin later, go under a separate heading with their periods, never as current.

Sections, in the order they are written::

    # Facts valid now (since when)
    # Plans: intended, not yet true (since when)
    # Entities
    # History: facts not valid now (their periods)
    # Recent messages
    # Relevant memories

A plan ("I'm thinking of moving to Toronto") holds now as a plan, not as the state it names:
it has its own section, so a reader never takes the planned city for the current one.

Within the budget the parts are taken by priority: current facts, then plans, then the latest
messages, then the recalled evidence, then the entities, then history; a part that does not fit is left
out (``Context.omitted`` counts them) and smaller ones after it may still fit. Token counts are
the offline estimate the chunker uses (``count_tokens``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import TypeVar

from ..models import Context, Entity, Fact, Hit, Memory
from ..pipeline.authority import annotate, may_change, note, screen
from ..pipeline.chunk import count_tokens
from ..pipeline.instructions import HEADER, neutral, quote
from ..pipeline.temporal import RelationRules
from ..store.base import MemoryFilter, Store
from .recency import contradicted

__all__ = ["build_context", "fact_is_current", "render_context"]

#: how many facts, entities and recent messages ``build_context`` reads at most
FACTS, ENTITIES, MESSAGES = 50, 20, 10

#: the longest a message or evidence line is shown, in characters
_LINE_CHARS = 500
_HEADINGS = {
    "facts": "# Facts valid now (since when)",
    "plans": "# Plans: intended, not yet true (since when)",
    "entities": "# Entities",
    "history": "# History: facts not valid now (their periods)",
    "messages": "# Recent messages",
    "evidence": "# Relevant memories",
}
_PERSONAL = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|we|our|us|you|your|yours)\b", re.IGNORECASE)
_PRIORITY = ("facts", "plans", "messages", "evidence", "entities", "history")
#: relations that state an intention: current as intentions, never as the state they name
_PLANS = frozenset({"plans"})
_T = TypeVar("_T")


def build_context(
    store: Store,
    scope: MemoryFilter,
    *,
    as_of: dt.datetime,
    max_tokens: int,
    evidence: Sequence[Hit] = (),
    last_messages: int = MESSAGES,
    exclude_flagged: bool = True,
    rules: RelationRules | None = None,
) -> Context:
    """The context of a scope (its ``dataset`` is required): the facts stated by the memories
    its ``user``, ``agent``, ``kind`` and ``filters`` select (open ones first) — not only its
    ``session``'s: the session narrows the messages, not the knowledge —, the entities those
    facts concern, the last messages of its ``session`` (stored ones, processed or not) and
    ``evidence`` the caller recalled, rendered."""
    dataset = _dataset_of(scope)
    # the session narrows the messages only
    knowledge = MemoryFilter(dataset=dataset, kind=scope.kind, user=scope.user, agent=scope.agent,
                             filters=scope.filters, limit=FACTS)
    facts = store.facts_stated(knowledge)
    messages = store.session_messages(dataset, scope.session, last_messages) if scope.session else []
    said = {m.id: m for m in store.get_memories(list(dict.fromkeys(h.memory_ids[0] for h in evidence
                                                                   if h.memory_ids)))}
    annotate(store, facts, (), rules or RelationRules())  # origins, flags, competing claims
    # only a passage that may reach the block, from a source that could close the fact, may
    # show it as changed: instruction-shaped text and a tool's output cannot move it to History
    trusted = screen([], [], [], evidence)[3] if exclude_flagged else list(evidence)
    changed = contradicted([f for f in facts if fact_is_current(f, as_of)], trusted, said, as_of, may_change)
    # the entities of what holds: the ends of closed facts and plans are named by their lines,
    # and listed alone they would read as current ("Toronto" after the move to Montreal)
    holding = [f for f in facts if fact_is_current(f, as_of) and f.id not in changed and f.relation not in _PLANS]
    ends = list(dict.fromkeys(e for f in holding for e in (f.source_id, f.target_id)))[:ENTITIES]
    entities = store.get_entities(ends)
    annotate(store, (), entities)
    parts = screen(facts, entities, messages, evidence) if exclude_flagged else (facts, entities, messages, evidence, 0)
    context = render_context(as_of=as_of, max_tokens=max_tokens, facts=parts[0], entities=parts[1],
                             messages=parts[2], evidence=parts[3], changed=changed)
    context.excluded = parts[4]
    return context


def _dataset_of(flt: MemoryFilter) -> str:
    if flt.dataset is None:
        raise ValueError("a context is built inside one dataset")
    return flt.dataset


def fact_is_current(fact: Fact, as_of: dt.datetime) -> bool:
    """Valid at ``as_of`` and not closed by kenning by then."""
    if fact.expired_at is not None and fact.expired_at <= as_of:
        return False
    return fact.valid_at <= as_of and (fact.invalid_at is None or as_of < fact.invalid_at)


def render_context(
    *,
    as_of: dt.datetime,
    max_tokens: int,
    facts: Sequence[Fact] = (),
    entities: Sequence[Entity] = (),
    messages: Sequence[Memory] = (),
    evidence: Sequence[Hit] = (),
    changed: Mapping[str, dt.datetime] | None = None,
) -> Context:
    """``facts`` best first (current and closed alike: they are sorted out here), ``messages``
    oldest first, ``evidence`` best first. ``changed``: open facts that a later statement
    says have changed (``recency.contradicted``), and when it was said: shown as history."""
    changed = changed or {}
    history = [f for f in facts if not fact_is_current(f, as_of) or f.id in changed]
    current = [(f"- {_short(_said(f.description, f))} ({_noted(_since(f), f)})", f)
               for f in (_own_words(f, history) for f in facts if fact_is_current(f, as_of) and f.id not in changed)]
    candidates: dict[str, list[tuple[str, object]]] = {
        "facts": [(line, f) for line, f in current if f.relation not in _PLANS],
        "plans": [(line, f) for line, f in current if f.relation in _PLANS],
        "history": [(f"- {_short(_said(f.description, f))} ({_noted(_period(f, changed.get(f.id)), f)})", f)
                    for f in history],
        "entities": [(_entity_line(e), e) for e in entities],
        # the latest messages matter most: taken newest first, written oldest first
        "messages": [(_message_line(m), m) for m in reversed(messages)],
        "evidence": [(_evidence_line(h, as_of, changed.get(h.id) if h.kind == "fact" else None), h)
                     for h in evidence],
    }
    chosen, used, omitted = _fit(candidates, max_tokens - count_tokens(HEADER))
    chosen["messages"].reverse()
    blocks = [
        "\n".join([_HEADINGS[name], *(line for line, _ in chosen[name])])
        for name in _HEADINGS if chosen[name]
    ]
    blocks = [HEADER, *blocks] if blocks else blocks  # what follows is data (pipeline/instructions.py)
    return Context(
        text="\n\n".join(blocks), tokens=used + (count_tokens(HEADER) if blocks else 0), max_tokens=max_tokens,
        as_of=as_of, omitted=omitted,
        facts=_chosen(chosen["facts"], Fact), plans=_chosen(chosen["plans"], Fact),
        history=_chosen(chosen["history"], Fact),
        entities=_chosen(chosen["entities"], Entity), messages=_chosen(chosen["messages"], Memory),
        evidence=_chosen(chosen["evidence"], Hit),
    )


def _chosen(lines: list[tuple[str, object]], kind: type[_T]) -> list[_T]:
    """The items behind the lines a section kept (each section holds one kind)."""
    return [item for _, item in lines if isinstance(item, kind)]


def _fit(
    candidates: dict[str, list[tuple[str, object]]], budget: int
) -> tuple[dict[str, list[tuple[str, object]]], int, int]:
    """Lines taken by section priority while the total stays within ``budget`` tokens; a
    section's heading counts once it has a line. Blank lines between sections cost nothing."""
    chosen: dict[str, list[tuple[str, object]]] = {name: [] for name in _HEADINGS}
    used = omitted = 0
    for name in _PRIORITY:
        heading = count_tokens(_HEADINGS[name])
        for line, item in candidates[name]:
            cost = count_tokens(line) + (0 if chosen[name] else heading)
            if used + cost > budget:
                omitted += 1
                continue
            chosen[name].append((line, item))
            used += cost
    return chosen, used, omitted


def _own_words(fact: Fact, history: Sequence[Fact]) -> Fact:
    """A current fact as shown: a sentence that also stated a fact that no longer holds ("My
    sister Carla lives in Seville", once Carla has moved) would state it as current, so the
    fact is written by its ends instead ("Carla sister of Ana"), in the block and in
    ``Context.facts``."""
    said = fact.description.strip().casefold()
    if not (fact.source and fact.relation and fact.target) or all(h.description.strip().casefold() != said
                                                                    for h in history):
        return fact
    return fact.model_copy(update={"description": f"{fact.source} {fact.relation.replace('_', ' ')} {fact.target}"})


def _said(sentence: str, fact: Fact | Hit) -> str:
    """A fact's sentence, unless it speaks in the first or second person ("I moved to Paris",
    said by Alice): out of its turn "I" names nobody, so the fact's ends are written instead."""
    if not _PERSONAL.search(sentence) or not (fact.source and fact.relation and fact.target):
        return sentence
    return f"{fact.source} {fact.relation.replace('_', ' ')} {fact.target}"


def _day(value: dt.datetime) -> str:
    return value.date().isoformat()


def _since(fact: Fact) -> str:
    return f"since {_day(fact.valid_at)}"


def _period(fact: Fact, changed: dt.datetime | None = None) -> str:
    if changed is not None:
        return f"since {_day(fact.valid_at)}; a later statement on {_day(changed)} says it changed"
    end = fact.invalid_at or fact.expired_at
    return f"{_day(fact.valid_at)} to {_day(end)}" if end else f"from {_day(fact.valid_at)}, not begun yet"


def _entity_line(entity: Entity) -> str:
    """Name, type and other names. Not the description: it is undated, often the sentence that
    first named the entity ("Alice lives in Lyon"), and would state a closed fact as current."""
    aliases = f", also {', '.join(entity.aliases[:5])}" if entity.aliases else ""
    return f"- {neutral(entity.name)} ({neutral(entity.type + aliases)})"


def _message_line(memory: Memory) -> str:
    speaker = memory.speaker or memory.role or "unknown"
    return f"[{memory.valid_at.strftime('%Y-%m-%d %H:%M')}] {neutral(speaker)}: {_short(memory.content)}"


def _evidence_line(hit: Hit, as_of: dt.datetime, changed: dt.datetime | None = None) -> str:
    """A recalled fact says whether it still holds (or that a later statement says it
    changed); a passage says when it was said, and that a later one supersedes it."""
    if hit.kind == "fact" and hit.valid_at is not None:
        end = hit.invalid_at or hit.expired_at
        if changed is not None:
            later = f"since {_day(hit.valid_at)}; a later statement on {_day(changed)} says it changed"
            return f"- {_short(_said(hit.text, hit))} ({_noted(later, hit)})"
        if hit.current and (end is None or end > as_of) and hit.valid_at <= as_of:
            return f"- {_short(_said(hit.text, hit))} ({_noted(f'since {_day(hit.valid_at)}', hit)})"
        period = f"{_day(hit.valid_at)} to {_day(end)}" if end else f"from {_day(hit.valid_at)}"
        return f"- {_short(_said(hit.text, hit))} ({_noted(f'not valid now: {period}', hit)})"
    said = _day(hit.valid_at) if hit.valid_at else ""
    if not hit.current and hit.valid_at is not None:
        said += "; superseded by a later statement"
    when = _noted(said, hit)
    return f"- {_short(hit.text)}" + (f" ({when})" if when else "")


def _short(text: str) -> str:
    """Stored text on one line, quoted as data (``instructions.quote``), cut to a line's length."""
    text = " ".join(text.split())
    return quote(text if len(text) <= _LINE_CHARS else text[: _LINE_CHARS - 1] + "…")


def _noted(what: str, record: Fact | Hit) -> str:
    """A line's parenthesis: its dates, then who said it and whether it competes (authority.py)."""
    return "; ".join(p for p in (what, note(record)) if p)
