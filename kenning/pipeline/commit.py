"""A write plan, and the one function that applies it inside a store transaction.

Everything slow (model calls, embeddings) happened before the plan was made; applying it only
reads and writes rows, so the transaction is short. The rules that need the *current* state
(exact repeats, the contradiction rule) run here, inside the transaction, so two writers can
never both believe they created the same fact.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..store.base import ChunkRow, EntityRow, FactRow, Txn
from .authority import guard_supersession
from .changes import changed_by, ended_by
from .temporal import Interval, RelationRules, decide

__all__ = ["CommitOutcome", "EntityDraft", "FactDraft", "WritePlan", "apply_plan", "new_id"]


def new_id(prefix: str) -> str:
    """``<prefix>_`` and 24 hex digits: the time in milliseconds (11 digits, good until the
    year 2527), then 52 random bits. Ids made later sort later, so a primary-key index grows at
    its end instead of at a random page: ingest into SQLite writes a third fewer pages a commit
    (docs/benchmarks.md). Ids made in one millisecond differ in their random part."""
    return f"{prefix}_{time.time_ns() // 1_000_000:011x}{os.urandom(7).hex()[:13]}"


@dataclass
class EntityDraft:
    key: str  # normalized name
    name: str
    type: str
    description: str = ""
    embedding: np.ndarray | None = None
    #: an existing entity this name was resolved to by similarity or by the model
    resolved_id: str | None = None


@dataclass
class FactDraft:
    source_key: str
    relation: str
    target_key: str
    description: str
    valid_at: dt.datetime
    invalid_at: dt.datetime | None = None
    #: the text states an ending ("Alice left Acme"): close the matching live fact
    ends: bool = False
    #: the text stated when it started (otherwise valid_at is the memory's reference time)
    dated: bool = False
    #: a new value stated as a change ("switched to coffee"): ends the open value of its slot
    changes: bool = False
    embedding: np.ndarray | None = None
    #: model verdicts, by stored fact id
    duplicate_of: str | None = None
    contradicts: list[str] = field(default_factory=list)


@dataclass
class WritePlan:
    memory_id: str
    dataset: str
    now: dt.datetime
    chunks: list[ChunkRow] = field(default_factory=list)
    entities: list[EntityDraft] = field(default_factory=list)
    facts: list[FactDraft] = field(default_factory=list)
    memory_fields: dict[str, Any] = field(default_factory=dict)
    #: the memory was processed before (force / update): drop its old graph first
    replace: bool = False


@dataclass
class CommitOutcome:
    entities_created: list[str] = field(default_factory=list)
    facts_created: list[str] = field(default_factory=list)
    facts_invalidated: list[str] = field(default_factory=list)
    facts_merged: list[str] = field(default_factory=list)


def apply_plan(txn: Txn, plan: WritePlan, rules: RelationRules) -> CommitOutcome:
    out = CommitOutcome()
    guarded = guard_supersession(txn, plan.memory_id)  # closes respect authority and scope (authority.py)
    txn = guarded
    if plan.replace:
        txn.unlink_memory(plan.memory_id)
        txn.delete_chunks(plan.memory_id)
    txn.insert_chunks(plan.chunks)
    ids = _write_entities(txn, plan, out)
    for draft in plan.facts:
        _write_fact(txn, plan, draft, ids, rules, out)
    txn.update_memory(plan.memory_id, plan.memory_fields)
    out.facts_invalidated = [i for i in out.facts_invalidated if i not in guarded.refused]
    return out


def _write_entities(txn: Txn, plan: WritePlan, out: CommitOutcome) -> dict[str, str]:
    existing = txn.find_entities(plan.dataset, [d.key for d in plan.entities])
    ids: dict[str, str] = {}
    for draft in plan.entities:
        row = existing.get(draft.key)
        if row is not None:
            ids[draft.key] = row.id
            _enrich(txn, row, draft)
        elif draft.resolved_id is not None:
            ids[draft.key] = draft.resolved_id
            txn.update_entity(draft.resolved_id, {})  # keeps the full-text row current
        else:
            entity_id = new_id("ent")
            txn.insert_entity(
                EntityRow(
                    id=entity_id, dataset=plan.dataset, name=draft.name, normalized=draft.key,
                    type=draft.type, description=draft.description, embedding=draft.embedding,
                    created_at=plan.now,
                )
            )
            ids[draft.key] = entity_id
            out.entities_created.append(entity_id)
        txn.link_entity(ids[draft.key], plan.memory_id)
    return ids


def _enrich(txn: Txn, row: EntityRow, draft: EntityDraft) -> None:
    """Fill what the stored entity lacks; never overwrite what it has."""
    changes: dict[str, Any] = {}
    if row.type == "concept" and draft.type != "concept":
        changes["type"] = draft.type
    if not row.description and draft.description:
        changes["description"] = draft.description
    if draft.name != row.name and draft.name not in row.aliases:
        changes["aliases"] = [*row.aliases, draft.name]
    if changes:
        txn.update_entity(row.id, changes)


def _write_fact(
    txn: Txn, plan: WritePlan, draft: FactDraft, ids: dict[str, str], rules: RelationRules,
    out: CommitOutcome,
) -> None:
    source_id, target_id = ids[draft.source_key], ids[draft.target_key]
    if draft.relation in rules.single_target:
        candidates = txn.live_facts_touching(plan.dataset, source_id, target_id, draft.relation, by_target=True)
    else:
        candidates = txn.live_facts_touching(plan.dataset, source_id, target_id, draft.relation)
    repeat = _repeat_of(candidates, source_id, draft, target_id)
    if repeat is None and draft.duplicate_of:
        repeat = next((c for c in txn.get_fact_rows([draft.duplicate_of]) if c.expired_at is None), None)
    if repeat is not None:
        txn.link_fact(repeat.id, plan.memory_id)
        out.facts_merged.append(repeat.id)
        if draft.invalid_at is not None and repeat.invalid_at is None and draft.invalid_at > repeat.valid_at:
            txn.close_fact(repeat.id, invalid_at=draft.invalid_at, expired_at=plan.now, superseded_by=None)
            out.facts_invalidated.append(repeat.id)
        return
    if draft.ends:
        _write_ending(txn, plan, draft, source_id, target_id, out)
        return

    fact = FactRow(
        id=new_id("fct"), dataset=plan.dataset, source_id=source_id, relation=draft.relation,
        target_id=target_id, description=draft.description, valid_at=draft.valid_at,
        invalid_at=draft.invalid_at, created_at=plan.now, memory_id=plan.memory_id,
        embedding=draft.embedding,
    )
    conflicting = [
        c for c in candidates
        if c.relation == draft.relation
        and rules.contradicts(draft.relation, source_id, target_id, c.source_id, c.target_id)
    ]
    known = {c.id for c in conflicting}
    conflicting += [c for c in txn.get_fact_rows(draft.contradicts) if c.expired_at is None and c.id not in known]
    # "switched to coffee" (a change), "got an iPhone 14" (a phone is held one at a time): the
    # open value of the same slot ends here
    known = {c.id for c in conflicting}
    single = rules.contradicts(draft.relation, source_id, target_id, source_id, "")
    conflicting += [c for c in changed_by(txn, plan.dataset, source_id, target_id, draft.relation, single,
                                          draft.changes, draft.description) if c.id not in known]
    closes = []
    for old in conflicting:
        decision = decide(
            Interval(fact.id, fact.valid_at, fact.invalid_at), Interval(old.id, old.valid_at, old.invalid_at),
            plan.now,
        )
        if decision is None:
            continue
        if decision.fact_id == fact.id:
            # An older fact arrived late: it is stored already closed at the newer one's start
            # (a close of the new fact always has an end: the older one's start).
            end = decision.invalid_at
            if end is not None and (fact.invalid_at is None or end < fact.invalid_at):
                fact.invalid_at = end
                fact.superseded_by = decision.superseded_by
            fact.expired_at = plan.now
        else:
            closes.append(decision)
    txn.insert_fact(fact)
    txn.link_fact(fact.id, plan.memory_id)
    out.facts_created.append(fact.id)
    for decision in closes:
        txn.close_fact(
            decision.fact_id, invalid_at=decision.invalid_at, expired_at=decision.expired_at,
            superseded_by=decision.superseded_by,
        )
        out.facts_invalidated.append(decision.fact_id)


def _repeat_of(candidates: list[FactRow], source_id: str, draft: FactDraft, target_id: str) -> FactRow | None:
    """A live, still-open fact with the same source, relation and target."""
    if draft.ends:
        return None
    for c in candidates:
        if (c.source_id, c.relation, c.target_id) == (source_id, draft.relation, target_id) and c.invalid_at is None:
            return c
    return None


def _write_ending(
    txn: Txn, plan: WritePlan, draft: FactDraft, source_id: str, target_id: str, out: CommitOutcome
) -> None:
    """"Alice left Acme in June 2024": close the matching live fact at the stated date."""
    end = draft.invalid_at or draft.valid_at
    candidates = txn.live_facts_touching(plan.dataset, source_id, target_id, draft.relation)
    for c in candidates:
        if (c.source_id, c.relation, c.target_id) == (source_id, draft.relation, target_id) and (
            c.invalid_at is None or c.invalid_at > end
        ):
            if end > c.valid_at:
                txn.close_fact(c.id, invalid_at=end, expired_at=plan.now, superseded_by=None)
                out.facts_invalidated.append(c.id)
            txn.link_fact(c.id, plan.memory_id)
            out.facts_merged.append(c.id)
            return
    others = ended_by(txn, plan.dataset, source_id, target_id, draft.relation, end, draft.changes)
    for c in others:  # "broke up" ends "engaged to"; "gave up coffee" ends "drinks coffee"
        _close_at(txn, plan, c, end, out)
    if others:
        return
    # Nothing to close: keep what the text says only when it also says when the relation began;
    # an ending of an unknown start would be an empty interval, and none is ever stored.
    if not (draft.dated and draft.valid_at < end):
        return
    start = draft.valid_at
    fact = FactRow(
        id=new_id("fct"), dataset=plan.dataset, source_id=source_id, relation=draft.relation,
        target_id=target_id, description=draft.description, valid_at=start, invalid_at=end,
        created_at=plan.now, memory_id=plan.memory_id, embedding=draft.embedding,
    )
    txn.insert_fact(fact)
    txn.link_fact(fact.id, plan.memory_id)
    out.facts_created.append(fact.id)


def _close_at(txn: Txn, plan: WritePlan, row: FactRow, end: dt.datetime, out: CommitOutcome) -> None:
    """Close an open fact at ``end``; one that began at or after ``end`` is no longer believed
    (expired) instead, so no interval ever ends where it starts."""
    if end > row.valid_at:
        txn.close_fact(row.id, invalid_at=end, expired_at=plan.now, superseded_by=None)
    else:
        txn.close_fact(row.id, invalid_at=row.invalid_at, expired_at=plan.now, superseded_by=None)
    txn.link_fact(row.id, plan.memory_id)
    out.facts_invalidated.append(row.id)
