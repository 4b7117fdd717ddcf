"""improve (pending turns, duplicate entities, missing embeddings) and feedback."""

from __future__ import annotations

import sqlite3

import pytest

from kenning import Kenning, NotFoundError, ValidationError
from kenning.lifecycle.improve import merge_key


def test_merge_key_strips_company_suffixes() -> None:
    assert merge_key("acme corp") == merge_key("acme inc") == merge_key("acme") == "acme"
    assert merge_key("corp") == "corp"


def test_improve_merges_spellings_of_one_entity(kn: Kenning, clock) -> None:  # noqa: ANN001
    kn.remember("Alice works at Acme Corp.")
    clock.advance(days=1)
    kn.remember("Bob works at Acme Inc.")
    clock.advance(days=1)
    kn.remember("Carol works at Acme Inc.")
    before = kn.stats()
    result = kn.improve()
    assert len(result.entities_merged) == 1
    after = kn.stats()
    assert after.entities == before.entities - 1 and after.facts == before.facts
    timeline = kn.timeline("Acme Corp")
    assert "Acme Inc" in timeline.entity.aliases
    assert {f.source for f in timeline.facts} == {"Alice", "Bob", "Carol"}
    assert len(timeline.entity.memory_ids) == 3
    assert kn.improve().entities_merged == {}  # nothing left to merge


def test_improve_merges_facts_that_became_repeats(kn: Kenning, clock) -> None:  # noqa: ANN001
    first = kn.remember("Alice works at Acme Corp.")
    clock.advance(days=1)
    second = kn.remember("Alice works at Acme.")
    assert kn.stats().facts == 2
    result = kn.improve()
    assert len(result.facts_merged) == 1
    [fact] = kn.timeline("Alice", relation="works_at").facts
    assert sorted(fact.memory_ids) == sorted(first.memory_ids + second.memory_ids)
    kn.forget(first.memory_ids[0])  # the merged fact survives while a memory states it
    assert kn.timeline("Alice", relation="works_at").facts[0].id == fact.id


def test_improve_processes_pending_turns_and_fills_embeddings(kn: Kenning) -> None:
    kn.add(["Alice: I moved to Lisbon in 2023.", "Bob lives in Oslo."], kind="session")
    assert kn.recall("Oslo", search_type="facts").hits == []
    result = kn.improve()
    assert len(result.processed) == 2 and result.embeddings_filled == 0
    assert kn.recall("Who lives in Oslo?").hits[0].target == "Oslo"


def test_improve_fills_missing_embeddings(tmp_path) -> None:  # noqa: ANN001
    # SQLite only: the test erases vectors through a raw connection to the file.
    path = str(tmp_path / "k.db")
    with Kenning(path) as kn:
        kn.remember("Bob lives in Oslo.")
    raw = sqlite3.connect(path)
    raw.execute("UPDATE facts SET embedding = NULL")
    raw.commit()
    raw.close()
    with Kenning(path) as kn:
        assert kn.improve().embeddings_filled == 1
        assert "vector" in kn.recall("Bob Oslo", search_type="facts").hits[0].lanes


def test_feedback_moves_a_fact_in_recall(kn: Kenning) -> None:
    kn.remember(["Alice likes jazz.", "Alice likes tea."])
    hits = kn.recall("What does Alice like?", search_type="facts").hits
    second = hits[1]
    for _ in range(3):
        kn.feedback(second.id, helpful=True)
    assert kn.recall("What does Alice like?", search_type="facts").hits[0].id == second.id
    weight = kn.feedback(second.id, helpful=False)
    assert 1.0 < weight < 1.25 ** 3
    with pytest.raises(NotFoundError):
        kn.feedback("fct_missing", helpful=True)
    with pytest.raises(ValidationError):
        kn.feedback(second.id, helpful="yes")  # type: ignore[arg-type]
