"""Decay, retention policies, pinning and supersession, through the public facade with a
controllable clock and real SQLite files."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning import Kenning, MemoryInput, ValidationError
from kenning.lifecycle.decay import decay_multiplier, decay_score

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)  # the start of conftest's clock
DAY = dt.timedelta(days=1)


def open_kn(store_url: str, clock, **settings) -> Kenning:
    return Kenning(store_url, clock=clock, **settings)


# -- decay -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("days", "expected"), [(0, 1.0), (30, 0.5 ** (1 / 3)), (60, 0.5 ** (2 / 3)), (90, 0.5)])
def test_decay_values_at_0_30_60_90_days(store_url, clock, days, expected) -> None:
    with open_kn(store_url, clock, decay=True, decay_basis="creation") as kn:
        memory_id = kn.remember("Alice works at Acme.").memory_ids[0]
        clock.advance(days=days)
        memory = kn.get(memory_id)
        assert decay_multiplier(memory, kn.settings, clock()) == pytest.approx(expected)


def test_recall_scores_are_multiplied_by_decay(store_url, clock) -> None:
    with open_kn(store_url, clock, decay=True) as kn:
        kn.remember("Alice works at Acme.", dataset="fresh")
        kn.remember("Alice works at Acme.", dataset="old")
        fresh_hits = {h.text: h.score for h in kn.recall("Where does Alice work?", dataset="fresh").hits}
        clock.advance(days=90)
        old_hits = {h.text: h.score for h in kn.recall("Where does Alice work?", dataset="old").hits}
    assert fresh_hits.keys() == old_hits.keys() and fresh_hits
    for text, score in fresh_hits.items():
        assert old_hits[text] == pytest.approx(score * 0.5)


def test_decay_is_off_by_default(store_url, clock) -> None:
    with open_kn(store_url, clock) as kn:
        memory_id = kn.remember("Alice works at Acme.").memory_ids[0]
        clock.advance(days=365)
        assert decay_multiplier(kn.get(memory_id), kn.settings, clock()) == 1.0
        # the score prune uses still decays
        assert decay_score(kn.get(memory_id), kn.settings, clock()) == pytest.approx(0.5 ** (365 / 90))


def test_recall_records_access_and_access_reinforces(store_url, clock) -> None:
    with open_kn(store_url, clock, decay=True, decay_basis="creation", reference_access_count=4) as kn:
        memory_id = kn.remember("Alice works at Acme.").memory_ids[0]
        clock.advance(days=90)
        kn.recall("Alice")
        memory = kn.get(memory_id)
        assert memory.access_count == 1
        assert memory.last_accessed_at == clock()
        # one access of four: a quarter of the lost score is given back
        assert decay_multiplier(memory, kn.settings, clock()) == pytest.approx(0.5 + 0.5 * 0.25)
        for _ in range(3):
            kn.recall("Alice")
        memory = kn.get(memory_id)
        assert memory.access_count == 4
        clock.advance(days=900)
        assert decay_multiplier(memory, kn.settings, clock()) == pytest.approx(1.0)


def test_decay_basis_access_counts_from_the_last_access(store_url, clock) -> None:
    settings = {"decay": True, "reference_access_count": 1000}
    with open_kn(store_url, clock, decay_basis="access", **settings) as by_access, \
            open_kn(store_url, clock, decay_basis="creation", **settings) as by_creation:
        ids = [kn.remember("Alice works at Acme.", dataset=name).memory_ids[0]
               for kn, name in ((by_access, "a"), (by_creation, "c"))]
        clock.advance(days=60)
        by_access.recall("Alice", dataset="a")
        by_creation.recall("Alice", dataset="c")
        clock.advance(days=30)
        reinforce = 1 / 1000
        a = decay_multiplier(by_access.get(ids[0]), by_access.settings, clock())
        c = decay_multiplier(by_creation.get(ids[1]), by_creation.settings, clock())
        base_a, base_c = 0.5 ** (30 / 90), 0.5
        assert a == pytest.approx(base_a + (1 - base_a) * reinforce)
        assert c == pytest.approx(base_c + (1 - base_c) * reinforce)


@pytest.mark.parametrize(("retention", "days"), [("decision", 365), ("standard", 90), ("ephemeral", 7),
                                                 ("session", 1)])
def test_retention_sets_half_life(store_url, clock, retention, days) -> None:
    with open_kn(store_url, clock, decay=True, decay_basis="creation") as kn:
        memory_id = kn.remember(MemoryInput(topic="Half life", context=retention,
                                            retention=retention)).memory_ids[0]
        clock.advance(days=days)
        assert kn.get(memory_id).retention == retention
        assert decay_multiplier(kn.get(memory_id), kn.settings, clock()) == pytest.approx(0.5)


def test_permanent_and_pinned_never_decay(store_url, clock) -> None:
    with open_kn(store_url, clock, decay=True) as kn:
        permanent = kn.remember(MemoryInput(topic="Constitution", retention="permanent")).memory_ids[0]
        pinned = kn.remember("Bob lives in Paris.").memory_ids[0]
        kn.pin(pinned, "core fact")
        clock.advance(days=3650)
        for memory_id in (permanent, pinned):
            assert decay_multiplier(kn.get(memory_id), kn.settings, clock()) == 1.0
        kn.unpin(pinned)
        assert decay_multiplier(kn.get(pinned), kn.settings, clock()) < 0.001


# -- retention in prune ------------------------------------------------------------------------
def _one_of_each(kn: Kenning) -> dict[str, str]:
    return {
        retention: kn.remember(MemoryInput(topic=f"Policy {retention}", context=f"About {retention}.",
                                           retention=retention)).memory_ids[0]
        for retention in ("permanent", "decision", "standard", "ephemeral", "session")
    }


def test_each_retention_policy_in_prune(store_url, clock) -> None:
    with open_kn(store_url, clock) as kn:
        ids = _one_of_each(kn)
        clock.advance(days=2)
        # 2 days: only the session memory (half-life 1 day, score 0.25) is below 0.3
        assert kn.prune(min_score=0.3).memory_ids == [ids["session"]]
        clock.advance(days=3000)
        result = kn.prune(max_age_days=1, min_score=1.0, superseded_older_than_days=0, dry_run=False)
        assert set(result.memory_ids) == {ids["standard"], ids["ephemeral"], ids["session"]}
        assert {m.id for m in kn.list()} == {ids["permanent"], ids["decision"]}
        # a decision is pruned once superseded
        newer = kn.remember(MemoryInput(topic="Policy decision v2", supersedes=[ids["decision"]],
                                        retention="decision")).memory_ids[0]
        assert kn.prune(superseded_older_than_days=10).memory_ids == []
        clock.advance(days=11)
        assert kn.prune(superseded_older_than_days=10, dry_run=False).memory_ids == [ids["decision"]]
        assert {m.id for m in kn.list()} == {ids["permanent"], newer}


def test_retention_until_overrides_the_policy(store_url, clock) -> None:
    with open_kn(store_url, clock) as kn:
        expiring = kn.remember(MemoryInput(topic="Temporary access", retention="permanent",
                                           retention_until=T0 + 10 * DAY)).memory_ids[0]
        held = kn.remember(MemoryInput(topic="Legal hold", retention="session",
                                       retention_until=T0 + 1000 * DAY)).memory_ids[0]
        clock.advance(days=5)
        assert kn.prune(max_age_days=0, min_score=1.0).memory_ids == []
        clock.advance(days=6)
        # past retention_until: pruned even with no criterion at all
        assert kn.prune().memory_ids == [expiring]
        result = kn.prune(max_age_days=0, min_score=1.0, dry_run=False)
        assert result.memory_ids == [expiring]
        assert kn.get(held).retention == "session"


def test_pinned_survives_everything_but_an_explicit_delete(store_url, clock) -> None:
    with open_kn(store_url, clock, decay=True) as kn:
        memory_id = kn.remember(MemoryInput(topic="Pinned", context="Alice works at Acme.",
                                            retention="session",
                                            retention_until=T0 + DAY)).memory_ids[0]
        pinned = kn.pin(memory_id, "keep")
        assert pinned.pinned and pinned.pin_reason == "keep"
        assert kn.list(pinned=True)[0].id == memory_id
        clock.advance(days=5000)
        result = kn.prune(max_age_days=0, min_score=1.0, superseded_older_than_days=0, dry_run=False)
        assert result.pruned == 0
        assert kn.recall("Alice").hits
        assert kn.delete(memory_id).memory_ids == [memory_id]
        assert kn.list() == []


# -- supersession ------------------------------------------------------------------------------
def test_supersession_marks_and_keeps_old_memory_searchable_during_grace(store_url, clock) -> None:
    with open_kn(store_url, clock, supersession_grace_days=30) as kn:
        old = kn.remember(MemoryInput(topic="Database", decisions=["Use MySQL for storage"])).memory_ids[0]
        clock.advance(days=1)
        new = kn.remember({"topic": "Database", "decisions": ["Use Postgres for storage"],
                           "supersedes": [old], "supersession_reason": "needs pgvector"}).memory_ids[0]
        old_memory, new_memory = kn.get(old), kn.get(new)
        assert old_memory.status == "superseded" and old_memory.superseded_by == new
        assert new_memory.supersedes == [old] and new_memory.supersession_reason == "needs pgvector"
        assert new_memory.status == "active"
        hits = kn.recall("MySQL", search_type="chunks_lexical").hits
        assert [h.memory_ids for h in hits] == [[old]]
        assert hits[0].current is False
        clock.advance(days=31)
        assert kn.recall("MySQL", search_type="chunks_lexical").hits == []
        assert kn.recall("Postgres", search_type="chunks_lexical").hits[0].memory_ids == [new]


def test_superseding_unknown_ids_stores_nothing(store_url, clock) -> None:
    with open_kn(store_url, clock) as kn:
        kn.remember("Alice works at Acme.")
        with pytest.raises(ValidationError, match="mem_missing"):
            kn.remember([MemoryInput(topic="Fine"), MemoryInput(topic="Bad", supersedes=["mem_missing"])])
        assert kn.stats().memories == 1
        other = kn.remember("Bob lives in Paris.", dataset="other").memory_ids[0]
        with pytest.raises(ValidationError):
            kn.remember(MemoryInput(topic="Cross dataset", supersedes=[other]))
        assert kn.get(other).status == "active"


def test_chain_is_oldest_to_newest_from_any_member(store_url, clock) -> None:
    with open_kn(store_url, clock) as kn:
        ids = [kn.remember(MemoryInput(topic="Plan v1")).memory_ids[0]]
        for version in (2, 3):
            clock.advance(days=1)
            ids.append(kn.remember(MemoryInput(topic=f"Plan v{version}", supersedes=[ids[-1]])).memory_ids[0])
        for member in ids:
            assert [m.id for m in kn.chain(member)] == ids
        assert [m.status for m in kn.chain(ids[0])] == ["superseded", "superseded", "active"]
        with pytest.raises(ValidationError, match="already superseded"):
            kn.remember(MemoryInput(topic="Plan v2b", supersedes=[ids[0]]))


def test_deleting_the_superseding_memory_makes_the_old_one_current(store_url, clock) -> None:
    with open_kn(store_url, clock) as kn:
        old = kn.remember(MemoryInput(topic="Editor", decisions=["Use vim"])).memory_ids[0]
        new = kn.remember(MemoryInput(topic="Editor", decisions=["Use emacs"], supersedes=[old])).memory_ids[0]
        kn.delete(new)
        restored = kn.get(old)
        assert restored.status == "active" and restored.superseded_by is None
        assert [m.id for m in kn.chain(old)] == [old]


def test_access_counts_of_many_recalls_are_exact_across_a_reopen(store_url, clock) -> None:
    # 150 recalls: the counts held in memory are written at least twice on the way (every 64
    # recalls) and once on close; none is lost or counted twice, read while open or after
    with open_kn(store_url, clock) as kn:
        alice = kn.remember("Alice works at Acme.").memory_ids[0]
        bob = kn.remember("Bob lives in Paris.").memory_ids[0]
        expected = {alice: [0, None], bob: [0, None]}
        for i in range(150):
            clock.advance(seconds=1)
            found = kn.recall("Alice" if i % 3 else "Bob Paris", search_type="chunks_lexical").hits[0].memory_ids[0]
            expected[found][0] += 1
            expected[found][1] = clock()
        while_open = {m: [kn.get(m).access_count, kn.get(m).last_accessed_at] for m in (alice, bob)}
    with open_kn(store_url, clock) as kn:
        reopened = {m: [kn.get(m).access_count, kn.get(m).last_accessed_at] for m in (alice, bob)}
    assert expected[alice][0] == 100 and expected[bob][0] == 50
    assert while_open == reopened == expected
