"""A write plan with several facts on one slot is applied as the same facts one plan at a time
would be: each fact of a plan sees the ones before it (the guard for any batching of a plan's
writes: docs/benchmarks.md, "SQLite and PostgreSQL side by side")."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from kenning import Kenning
from kenning.models import Memory
from kenning.pipeline.commit import EntityDraft, FactDraft, WritePlan, apply_plan, new_id
from kenning.pipeline.temporal import RelationRules

UTC = dt.UTC
NOW = dt.datetime(2025, 1, 1, tzinfo=UTC)


def d(year: int) -> dt.datetime:
    return dt.datetime(year, 1, 1, tzinfo=UTC)


def _entities() -> list[EntityDraft]:
    return [EntityDraft(key=k, name=k.title(), type="person" if k == "alice" else "organization")
            for k in ("alice", "acme", "globex", "initech")]


def _facts() -> list[FactDraft]:
    # out of order on purpose: Initech (2022) first, then Acme (2018) arriving late, then
    # Globex (2020) between them, then an ending of Initech; and ceo_of (one holder per target)
    return [
        FactDraft("alice", "works_at", "initech", "Alice works at Initech", valid_at=d(2022), dated=True),
        FactDraft("alice", "works_at", "acme", "Alice works at Acme", valid_at=d(2018), dated=True),
        FactDraft("alice", "works_at", "globex", "Alice works at Globex", valid_at=d(2020), dated=True),
        FactDraft("alice", "works_at", "initech", "Alice left Initech", valid_at=d(2024), invalid_at=d(2024),
                  ends=True),
        FactDraft("acme", "ceo_of", "globex", "Acme runs Globex", valid_at=d(2019), dated=True),
        FactDraft("initech", "ceo_of", "globex", "Initech runs Globex", valid_at=d(2021), dated=True),
        FactDraft("alice", "works_at", "globex", "Alice works at Globex", valid_at=d(2020), dated=True),
    ]


def _memory(kn: Kenning, text: str) -> str:
    store = kn._engine.store
    memory = Memory(id=new_id("mem"), dataset="main", content=text, content_hash=new_id("h"), created_at=NOW,
                    updated_at=NOW, status="processing", kind="text", valid_at=NOW)
    [(memory_id, _)] = store.insert_memories([memory])
    return memory_id


def _apply(kn: Kenning, facts: list[FactDraft]) -> None:
    store = kn._engine.store
    memory_id = _memory(kn, " / ".join(f.description for f in facts))
    plan = WritePlan(memory_id=memory_id, dataset="main", now=NOW, entities=_entities(), facts=facts)
    store.atomic(lambda txn: apply_plan(txn, plan, RelationRules()))


def _graph(kn: Kenning) -> list[tuple[Any, ...]]:
    """Every fact by content: (source, relation, target, text, valid, invalid, expired?, superseded by whose text)."""
    facts = kn.timeline("Alice").facts + kn.timeline("Globex").facts
    by_id = {f.id: f for f in facts}
    rows = {(f.source, f.relation, f.target, f.description, f.valid_at, f.invalid_at, f.expired_at is not None,
             by_id[f.superseded_by].description if f.superseded_by in by_id else f.superseded_by)
            for f in facts}
    return sorted(rows, key=repr)


def test_a_plan_of_many_facts_on_one_slot_writes_what_one_plan_per_fact_writes(store_url: str, tmp_path: Path) -> None:
    with Kenning(store_url) as kn:
        _apply(kn, _facts())
        together = _graph(kn)
    if store_url.startswith("sqlite"):
        separate_url = f"sqlite:///{tmp_path}/separate.db"
    else:
        from tests.pg import pg_url

        separate_url = pg_url()
    with Kenning(separate_url) as kn:
        for fact in _facts():
            _apply(kn, [fact])
        separate = _graph(kn)
    assert together == separate
    # the rule ran: the late, older values were stored closed, the ending closed Initech
    assert ("Initech", d(2024)) in {(r[2], r[5]) for r in together if r[1] == "works_at"}
    assert sum(r[6] for r in together) >= 2
