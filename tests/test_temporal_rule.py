"""The contradiction rule (docs/architecture.md, "The contradiction rule") branch by branch, as a pure function, and through the
write path with hand-made extractions so every boundary is exercised exactly."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning import Kenning
from kenning.pipeline.extract import ExtractedEntity, ExtractedFact, Extraction, Extractor
from kenning.pipeline.temporal import Close, Interval, RelationRules, decide, overlaps

UTC = dt.timezone.utc
NOW = dt.datetime(2030, 1, 1, tzinfo=UTC)


def d(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def iv(name: str, start: str, end: str | None = None) -> Interval:
    return Interval(name, d(start), d(end) if end else None)


# -- the pure rule --------------------------------------------------------------------------

def test_old_started_before_new_is_closed_at_new_start() -> None:
    assert decide(iv("N", "2024-03-01"), iv("O", "2023-01-01"), NOW) == Close("O", d("2024-03-01"), NOW, "N")


def test_equal_starts_expire_the_old_fact_without_an_empty_interval() -> None:
    # two values for one instant: the newer statement wins; the old one is no longer believed,
    # and its valid time is not closed where it starts (no zero-length fact, issue 23)
    assert decide(iv("N", "2023-01-01"), iv("O", "2023-01-01"), NOW) == Close("O", None, NOW, "N")


def test_late_arriving_older_fact_is_stored_closed() -> None:
    assert decide(iv("N", "2020-01-01"), iv("O", "2023-01-01"), NOW) == Close("N", d("2023-01-01"), NOW, "O")


def test_touching_intervals_do_not_overlap() -> None:
    assert decide(iv("N", "2022-01-01"), iv("O", "2020-01-01", "2022-01-01"), NOW) is None
    assert decide(iv("N", "2020-01-01", "2022-01-01"), iv("O", "2022-01-01"), NOW) is None


def test_disjoint_periods_change_nothing() -> None:
    assert decide(iv("N", "2010-01-01", "2012-01-01"), iv("O", "2020-01-01"), NOW) is None


def test_open_ends_overlap_everything_after_their_start() -> None:
    assert overlaps(d("2020-01-01"), None, d("2099-01-01"), None)
    assert not overlaps(d("2020-01-01"), d("2021-01-01"), d("2021-01-01"), None)
    assert overlaps(d("2020-01-01"), d("2021-01-01"), d("2020-12-31"), d("2020-12-31T00:00:01"))


def test_relation_classes_are_data_and_extensible() -> None:
    rules = RelationRules(["Favourite Color"])
    assert rules.contradicts("works_at", "alice", "globex", "alice", "acme")
    assert not rules.contradicts("works_at", "alice", "acme", "bob", "acme")  # another subject
    assert not rules.contradicts("likes", "alice", "jazz", "alice", "rock")  # multi-valued
    assert rules.contradicts("favourite_color", "alice", "red", "alice", "blue")
    assert rules.contradicts("ceo_of", "carol", "acme", "bob", "acme")  # one CEO per company


# -- through the write path -----------------------------------------------------------------

class Scripted(Extractor):
    """An extractor that returns the facts a test scripts, keyed by memory text."""

    def __init__(self) -> None:
        self.facts: dict[str, list[ExtractedFact]] = {}

    def say(self, text: str, *facts: tuple) -> str:  # noqa: ANN001
        self.facts[text] = [
            ExtractedFact(source=s, relation=r, target=t, sentence=text,
                          valid_at=d(v) if v else None, invalid_at=d(i) if i else None, ends=bool(e))
            for s, r, t, v, i, e in (f + (None,) * (6 - len(f)) for f in facts)
        ]
        return text

    def extract(self, chunks, *, reference_time, usage) -> Extraction:  # noqa: ANN001
        facts = self.facts[" ".join(chunks)]
        names = {f.source for f in facts} | {f.target for f in facts}
        return Extraction(entities=[ExtractedEntity(name=n) for n in sorted(names)], facts=facts)


@pytest.fixture
def scripted() -> Scripted:
    return Scripted()


@pytest.fixture
def tk(store_url: str, clock, scripted: Scripted):  # noqa: ANN001, ANN201
    with Kenning(store_url, clock=clock, extractor=scripted) as k:
        yield k


def facts_of(kn: Kenning, entity: str) -> dict[str, object]:
    return {f.target: f for f in kn.timeline(entity).facts}


def test_new_value_closes_the_old_one(tk: Kenning, scripted: Scripted, clock) -> None:  # noqa: ANN001
    tk.remember(scripted.say("a1", ("Alice", "works_at", "Acme")), valid_at="2023-01-01")
    clock.set("2024-03-05")
    result = tk.remember(scripted.say("a2", ("Alice", "works_at", "Globex")), valid_at="2024-03-01")
    facts = facts_of(tk, "Alice")
    acme, globex = facts["Acme"], facts["Globex"]
    assert result.facts_invalidated == [acme.id]
    assert acme.invalid_at == d("2024-03-01") and acme.expired_at == clock.now
    assert acme.superseded_by == globex.id
    assert globex.invalid_at is None and globex.expired_at is None
    assert acme.description == "a1" and acme.valid_at == d("2023-01-01")  # nothing else rewritten


def test_late_arriving_older_fact_through_remember(tk: Kenning, scripted: Scripted, clock) -> None:  # noqa: ANN001
    tk.remember(scripted.say("b1", ("Alice", "lives_in", "Berlin")), valid_at="2022-01-01")
    result = tk.remember(scripted.say("b2", ("Alice", "lives_in", "Paris", "2019-01-01")), valid_at="2024-01-01")
    facts = facts_of(tk, "Alice")
    assert result.facts_invalidated == []
    paris, berlin = facts["Paris"], facts["Berlin"]
    assert paris.invalid_at == d("2022-01-01") and paris.expired_at == clock.now
    assert berlin.invalid_at is None and berlin.expired_at is None
    now_hits = tk.recall("Alice lives", search_type="facts").hits
    assert [h.target for h in now_hits if h.current] == ["Berlin"]
    assert tk.recall("Alice lives", as_of="2020-06-01", search_type="facts").hits[0].target == "Paris"


def test_disjoint_stated_periods_both_stay(tk: Kenning, scripted: Scripted) -> None:
    tk.remember(scripted.say("c1", ("Alice", "works_at", "Acme", "2015-01-01", "2017-01-01")))
    result = tk.remember(scripted.say("c2", ("Alice", "works_at", "Globex", "2018-01-01")))
    assert result.facts_invalidated == []
    facts = facts_of(tk, "Alice")
    assert facts["Acme"].invalid_at == d("2017-01-01") and facts["Acme"].expired_at is None
    assert facts["Globex"].invalid_at is None


def test_touching_periods_only_the_successor_is_valid_at_the_boundary(tk: Kenning, scripted: Scripted) -> None:
    tk.remember(scripted.say("t1", ("Alice", "works_at", "Acme", "2019-01-01")))
    tk.remember(scripted.say("t2", ("Alice", "works_at", "Globex", "2021-01-01")))
    at = tk.recall("Alice works", as_of="2021-01-01T00:00:00Z", search_type="facts").hits
    current = [h.target for h in at if h.current]
    assert current == ["Globex"]
    before = tk.recall("Alice works", as_of="2020-12-31T23:59:59Z", search_type="facts").hits
    assert [h.target for h in before if h.current] == ["Acme"]


def test_missing_dates_fall_back_to_the_reference_time(tk: Kenning, scripted: Scripted) -> None:
    tk.remember(scripted.say("m1", ("Alice", "works_at", "Acme")), valid_at="2020-05-05")
    fact = facts_of(tk, "Alice")["Acme"]
    assert fact.valid_at == d("2020-05-05") and fact.invalid_at is None


def test_an_end_not_after_the_start_is_dropped(tk: Kenning, scripted: Scripted) -> None:
    tk.remember(scripted.say("e1", ("Alice", "likes", "Jazz", "2020-01-01", "2019-01-01")))
    assert facts_of(tk, "Alice")["Jazz"].invalid_at is None


def test_multi_valued_relations_accumulate(tk: Kenning, scripted: Scripted) -> None:
    tk.remember(scripted.say("l1", ("Alice", "likes", "Jazz")))
    result = tk.remember(scripted.say("l2", ("Alice", "likes", "Rock")))
    assert result.facts_invalidated == []
    assert all(f.invalid_at is None for f in tk.timeline("Alice").facts)


def test_unrelated_fact_about_the_same_subject_is_never_closed(tk: Kenning, scripted: Scripted) -> None:
    tk.remember(scripted.say("u1", ("Alice", "likes", "Jazz"), ("Alice", "works_at", "Acme")))
    tk.remember(scripted.say("u2", ("Alice", "works_at", "Globex")), valid_at="2030-01-01")
    facts = facts_of(tk, "Alice")
    assert facts["Jazz"].invalid_at is None and facts["Jazz"].expired_at is None
    assert facts["Acme"].invalid_at is not None


def test_stated_ending_closes_the_matching_fact_with_that_date(tk: Kenning, scripted: Scripted) -> None:
    tk.remember(scripted.say("s1", ("Alice", "works_at", "Acme", "2019-01-01")))
    result = tk.remember(scripted.say("s2", ("Alice", "works_at", "Acme", None, "2024-06-01", True)))
    fact = facts_of(tk, "Alice")["Acme"]
    assert result.facts_invalidated == [fact.id] and result.facts_created == 0
    assert fact.invalid_at == d("2024-06-01") and fact.superseded_by is None
    assert len(fact.memory_ids) == 2  # the ending is provenance too


def test_exact_repeat_extends_provenance_only(tk: Kenning, scripted: Scripted) -> None:
    first = tk.remember(scripted.say("r1", ("Alice", "works_at", "Acme")))
    second = tk.remember(scripted.say("r2", ("Alice", "works_at", "Acme")))
    assert second.facts_created == 0 and second.facts_invalidated == []
    [fact] = tk.timeline("Alice").facts
    assert sorted(fact.memory_ids) == sorted(first.memory_ids + second.memory_ids)


def test_a_fact_can_end_and_become_true_again(tk: Kenning, scripted: Scripted) -> None:
    tk.remember(scripted.say("x1", ("Alice", "lives_in", "Paris", "2010-01-01")))
    tk.remember(scripted.say("x2", ("Alice", "lives_in", "Rome", "2015-01-01")))
    tk.remember(scripted.say("x3", ("Alice", "lives_in", "Paris", "2020-01-01")))
    paris = [f for f in tk.timeline("Alice").facts if f.target == "Paris"]
    assert len(paris) == 2
    assert paris[0].invalid_at == d("2015-01-01") and paris[1].invalid_at is None
    rome = [f for f in tk.timeline("Alice").facts if f.target == "Rome"][0]
    assert rome.invalid_at == d("2020-01-01")


def test_known_at_sees_what_was_believed_then(tk: Kenning, scripted: Scripted, clock) -> None:  # noqa: ANN001
    clock.set("2023-01-01")
    tk.remember(scripted.say("k1", ("Alice", "works_at", "Acme")), valid_at="2023-01-01")
    clock.set("2024-03-01")
    tk.remember(scripted.say("k2", ("Alice", "works_at", "Globex")), valid_at="2024-03-01")
    then = tk.recall("Alice works", known_at="2023-06-01", search_type="facts").hits
    assert [h.target for h in then] == ["Acme"] and then[0].current
    now = tk.recall("Alice works", search_type="facts").hits
    assert now[0].target == "Globex" and now[0].current
    assert [h.current for h in now if h.target == "Acme"] == [False]
