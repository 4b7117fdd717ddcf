"""prune: criteria, dry run equal to the real run, paging, validation."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from kenning import Kenning, MemoryInput, ValidationError



def table_counts(db: str) -> dict[str, int]:
    """Row counts of every SQLite table, read without kenning (the dry-run test is SQLite only
    for that reason; the dry run itself is backend-independent: it only reads)."""
    con = sqlite3.connect(db)
    try:
        tables = ("memories", "chunks", "entities", "facts", "fact_memories", "entity_memories",
                  "chunks_fts", "facts_fts", "entities_fts")
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    finally:
        con.close()


def test_dry_run_changes_nothing_and_equals_the_real_run(tmp_path, clock) -> None:
    db = str(tmp_path / "kn.db")
    with Kenning(db, clock=clock) as kn:
        old = kn.remember(["Alice works at Acme. Dave owns Zeppelin.", "Bob lives in Paris."])
        note = kn.remember(MemoryInput(topic="Session note", context="Erin knows Frank.",
                                       retention="session")).memory_ids[0]
        clock.advance(days=100)
        kept = kn.remember("Alice works at Acme. Carol lives in Rome.").memory_ids[0]
        before, memories_before = table_counts(db), kn.list(limit=100)

        dry = kn.prune(max_age_days=50)
        assert dry.dry_run and dry.evaluated == 4 and dry.pruned == 3
        assert table_counts(db) == before
        assert kn.list(limit=100) == memories_before

        real = kn.prune(max_age_days=50, dry_run=False)
        assert real.dry_run is False
        assert real.model_dump(exclude={"dry_run"}) == dry.model_dump(exclude={"dry_run"})
        assert set(real.memory_ids) == {*old.memory_ids, note}
        # the fact and entities the kept memory states as well survive
        survivors = kn.provenance(kept)
        assert {e.name for e in survivors.entities} == {"Alice", "Acme", "Carol", "Rome"}
        assert not {e.id for e in survivors.entities} & set(real.entity_ids)
        assert not {f.id for f in survivors.facts} & set(real.fact_ids)
        assert len(real.fact_ids) == 3  # Dave owns, Bob lives in, Erin knows
        assert [m.id for m in kn.list()] == [kept]
        assert kn.prune(max_age_days=50).pruned == 0


def test_min_score_uses_decay_even_when_recall_decay_is_off(store_url, clock) -> None:
    with Kenning(store_url, clock=clock, half_life_days=10) as kn:
        stale = kn.remember("Alice works at Acme.").memory_ids[0]
        clock.advance(days=20)  # score 0.25
        fresh = kn.remember("Bob lives in Paris.").memory_ids[0]
        assert kn.prune(min_score=0.2).memory_ids == []
        assert kn.prune(min_score=0.3).memory_ids == [stale]
        kn.recall("Alice works at Acme", search_type="chunks_lexical")  # access resets the age
        assert kn.prune(min_score=0.3).memory_ids == []
        assert [m.id for m in kn.list()] == [fresh, stale]


def test_superseded_older_than(store_url, clock) -> None:
    with Kenning(store_url, clock=clock) as kn:
        old = kn.remember(MemoryInput(topic="Cache", decisions=["Use memcached"])).memory_ids[0]
        clock.advance(days=5)
        new = kn.remember(MemoryInput(topic="Cache", decisions=["Use Redis"], supersedes=[old])).memory_ids[0]
        clock.advance(days=5)
        assert kn.prune(superseded_older_than_days=7).pruned == 0
        clock.advance(days=3)
        result = kn.prune(superseded_older_than_days=7, dry_run=False)
        assert result.memory_ids == [old]
        assert [m.id for m in kn.chain(new)] == [new]


def test_pending_and_pinned_memories_are_not_pruned(store_url, clock) -> None:
    with Kenning(store_url, clock=clock) as kn:
        pending = kn.add("Alice works at Acme.")[0]
        pinned = kn.remember("Bob lives in Paris.").memory_ids[0]
        kn.pin(pinned)
        clock.advance(days=1000)
        result = kn.prune(max_age_days=1, min_score=1.0, dry_run=False)
        assert result.evaluated == 2 and result.pruned == 0
        assert {m.id for m in kn.list()} == {pending, pinned}


def test_prune_pages_through_many_memories(store_url, clock) -> None:
    with Kenning(store_url, clock=clock) as kn:
        kn.remember([f"Note number {i} about nothing." for i in range(1203)])
        clock.advance(days=10)
        dry = kn.prune(max_age_days=5)
        assert dry.evaluated == 1203 and dry.pruned == 1203 and len(set(dry.memory_ids)) == 1203
        real = kn.prune(max_age_days=5, dry_run=False)
        assert real.memory_ids == dry.memory_ids
        assert kn.stats().memories == 0


def test_prune_only_touches_its_dataset(store_url, clock) -> None:
    with Kenning(store_url, clock=clock) as kn:
        other = kn.remember("Alice works at Acme.", dataset="other").memory_ids[0]
        clock.advance(days=10)
        assert kn.prune(max_age_days=1, dry_run=False).evaluated == 0
        assert kn.get(other).dataset == "other"
        assert kn.prune(dataset="other", max_age_days=1).memory_ids == [other]


@pytest.mark.parametrize("kwargs", [{"max_age_days": -1}, {"min_score": 1.5},
                                    {"superseded_older_than_days": -0.5}, {"dataset": "no such!"}])
def test_prune_validates_its_arguments(store_url, kwargs) -> None:
    with Kenning(store_url) as kn, pytest.raises(ValidationError):
        kn.prune(**kwargs)


def _hold_write_lock(store_url: str):  # noqa: ANN202
    """Another session holding the store's write lock (SQLite) or an exclusive lock on every
    table prune would write (PostgreSQL); returns a function that releases it."""
    if store_url.startswith("sqlite"):
        con = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)
        con.execute("BEGIN IMMEDIATE")
    else:
        import psycopg

        con = psycopg.connect(store_url)
        con.execute("LOCK TABLE memories, chunks, entities, facts, fact_memories, entity_memories"
                    " IN EXCLUSIVE MODE")
    return lambda: (con.rollback(), con.close())


def test_dry_run_only_reads(store_url, clock) -> None:
    """A dry run answers while another writer holds the store: it takes no write lock."""
    with Kenning(store_url, clock=clock) as kn:
        kn.remember(["Alice works at Acme.", "Bob lives in Paris.", "Carol knows Alice."])
        clock.advance(days=10)
        expected = len(kn.list())
        release = _hold_write_lock(store_url)
        results = []
        worker = threading.Thread(target=lambda: results.append(kn.prune(max_age_days=5)))
        try:
            worker.start()
            worker.join(5)
            assert results and results[0].pruned == expected
        finally:
            release()
            worker.join()


def test_dry_run_equals_the_real_run_over_shared_provenance(store_url, clock) -> None:
    """Facts and entities stated by pruned and kept memories, repeated facts and entities that
    only die once a later memory of the run is removed: the dry run names exactly the records
    the real run deletes, in the same order."""
    with Kenning(store_url, clock=clock) as kn:
        kn.remember(["Alice works at Acme. Bob works at Acme.", "Alice works at Acme.",
                     "Dana lives in Oslo.", "Erin knows Dana. Bob likes jazz."])
        clock.advance(days=10)
        kn.remember(["Bob likes jazz. Frank lives in Oslo.", "Gina knows Erin."])
        clock.advance(days=10)
        dry = kn.prune(max_age_days=15)
        assert dry.pruned == 4 and dry.fact_ids and dry.entity_ids
        real = kn.prune(max_age_days=15, dry_run=False)
        assert real.model_dump(exclude={"dry_run"}) == dry.model_dump(exclude={"dry_run"})
