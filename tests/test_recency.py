"""Recall answers "now" questions with the newest evidence (issue 23 item 3): a passage hit is
``current`` when nothing later supersedes what it states; for a present-tense question about a
state the later of two passages answering it leads, even when extraction found nothing; past
and ``as_of`` questions keep their answers."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning import Kenning
from kenning.models import Fact, Memory, Usage
from kenning.pipeline.extract import Extraction, Extractor
from kenning.search.recency import asked_topics, asks_now, passage_current, topics_of

UTC = dt.timezone.utc


class NothingFound(Extractor):
    """An extractor that reads no fact in anything: recall has only the passages."""

    def extract(self, chunks: list[str], *, reference_time: dt.datetime, usage: Usage,
                speaker: str | None = None, addressee: str | None = None) -> Extraction:
        return Extraction()


@pytest.fixture
def bare(tmp_path, clock):  # noqa: ANN001, ANN201
    clock.set("2025-01-01")
    with Kenning(str(tmp_path / "bare.db"), extractor=NothingFound(), clock=clock) as kn:
        yield kn


def _said(kn: Kenning, user: str, session: str, day: str, *turns: str) -> None:
    kn.remember([{"role": "user", "content": t, "created_at": day} for t in turns], user=user, session=session)


def _first(hits: list, *values: str):  # noqa: ANN202
    return next(h for h in hits if any(v in h.text for v in values))


def test_a_later_passage_answering_the_same_question_leads_without_any_fact(bare: Kenning) -> None:
    _said(bare, "Lena", "l1", "2022-03-01T10:00:00Z", "I'm based in Bristol these days.", "I love long walks.")
    _said(bare, "Lena", "l2", "2023-09-01T10:00:00Z", "We relocated to Cardiff over the summer.")
    hits = bare.recall("Where does Lena live?", user="Lena").hits
    first = _first(hits, "Bristol", "Cardiff")
    assert "Cardiff" in first.text and first.current
    old = _first(hits, "Bristol")
    assert not old.current and old.superseded_by == first.memory_ids[0]
    assert hits.index(first) < hits.index(old)


def test_a_change_that_names_the_old_value_answers_the_same_question(bare: Kenning) -> None:
    _said(bare, "Kofi", "k1", "2021-05-01T10:00:00Z", "My daily ride is a Vespa scooter.")
    _said(bare, "Kofi", "k2", "2022-05-01T10:00:00Z", "I sold the Vespa and got a Honda.")
    hits = bare.recall("What scooter does Kofi ride?", user="Kofi").hits
    assert "Honda" in _first(hits, "Vespa", "Honda").text


def test_as_of_and_past_questions_are_not_answered_with_the_newest(bare: Kenning) -> None:
    _said(bare, "Lena", "l1", "2022-03-01T10:00:00Z", "I live in Bristol.")
    _said(bare, "Lena", "l2", "2023-09-01T10:00:00Z", "I moved to Cardiff.")
    then = bare.recall("Where did Lena live?", user="Lena", as_of="2022-06-01").hits
    assert "Bristol" in _first(then, "Bristol", "Cardiff").text
    assert _first(then, "Bristol").current and not _first(then, "Cardiff").current  # not said yet then
    assert not asks_now("Where did Lena live in 2022?") and asks_now("Where does Lena live?")


def test_another_persons_change_supersedes_nothing_of_theirs(bare: Kenning) -> None:
    _said(bare, "Ana", "a1", "2024-01-02T08:00:00Z", "My sister Carla lives in Seville.")
    _said(bare, "Ana", "a2", "2024-06-02T08:00:00Z", "I moved to Porto in May.")
    hits = bare.recall("Where does Carla live?", user="Ana").hits
    seville = _first(hits, "Seville", "Porto")
    assert "Seville" in seville.text and seville.current


def test_a_passage_that_only_adds_supersedes_nothing(bare: Kenning) -> None:
    _said(bare, "Kim", "k1", "2023-01-01T10:00:00Z", "I play tennis on Sundays.")
    _said(bare, "Kim", "k2", "2023-06-01T10:00:00Z", "I also started chess lessons.")
    hits = bare.recall("What sport does Kim play?", user="Kim").hits
    assert _first(hits, "tennis").current


def test_a_plan_neither_leads_nor_sets_the_present_aside(bare: Kenning) -> None:
    _said(bare, "Kofi", "k1", "2021-01-01T10:00:00Z", "I live in Accra with my brother.")
    _said(bare, "Kofi", "k2", "2022-06-01T10:00:00Z", "I'm thinking of moving to Toronto next year, nothing decided.")
    hits = bare.recall("Where does Kofi live?", user="Kofi").hits
    first = _first(hits, "Accra", "Toronto")
    assert "Accra" in first.text and first.current


def test_a_bank_is_one_value_at_a_time(bare: Kenning) -> None:
    _said(bare, "Tariq", "t1", "2021-03-01T10:00:00Z", "My bank is HSBC, the branch on the high street.")
    _said(bare, "Tariq", "t2", "2022-03-01T10:00:00Z", "I moved my account over to Nationwide.")
    hits = bare.recall("Which bank is Tariq with?", user="Tariq").hits
    assert "Nationwide" in _first(hits, "HSBC", "Nationwide").text
    assert {"bank", "dentist", "pet", "language"} <= set().union(*(topics_of(w) for w in
                                                                   ("bank", "dentist", "dog", "language")))


def test_a_passage_is_about_whom_its_facts_are_about(kn: Kenning) -> None:
    # "New car: a Hyundai Kona" says no "I"; the fact its memory states is Oscar's
    kn.remember([{"role": "user", "content": "I'm Oscar and I drive a Ford Focus.", "created_at": "2020-08-01T10:00:00Z"},
                 {"role": "assistant", "content": "Reliable car.", "created_at": "2020-08-01T10:00:00Z"}],
                user="Oscar", session="o1")
    _said(kn, "Oscar", "o2", "2022-08-01T10:00:00Z", "The Focus finally broke down for good.", "New car: a Hyundai Kona.")
    hits = kn.recall("What car does Oscar drive?", user="Oscar").hits
    assert "Kona" in _first(hits, "Focus", "Kona").text


def test_a_change_said_by_what_happened_to_the_old_value_answers_the_same_question(bare: Kenning) -> None:
    _said(bare, "Gideon", "g1", "2020-07-07T10:00:00Z", "FYI, I drive a Subaru Outback.")
    _said(bare, "Gideon", "g2", "2022-10-13T10:00:00Z", "Somebody totaled the Outback. I picked up a Ford Maverick.")
    hits = bare.recall("What does Gideon drive these days?", user="Gideon").hits
    assert "Maverick" in _first(hits, "Subaru", "Maverick").text


def test_a_question_with_no_auxiliary_asks_for_what_the_possessive_owns() -> None:
    assert asks_now("Who provides Gideon's internet?")
    assert asked_topics("Who provides Gideon's internet?") == {"provider"}


def test_a_passage_whose_fact_a_later_memory_closed_is_not_current(kn: Kenning, clock) -> None:  # noqa: ANN001
    clock.set("2025-01-01")
    kn.remember("Alice works at Acme.", valid_at="2023-01-01")
    kn.remember("Alice left Acme and joined Globex.", valid_at="2024-03-01")
    acme = next(h for h in kn.recall("Acme", search_type="chunks").hits if h.text == "Alice works at Acme.")
    assert not acme.current
    then = next(h for h in kn.recall("Acme", search_type="chunks", as_of="2023-06-01").hits
                if h.text == "Alice works at Acme.")
    assert then.current  # it held then


def _memory(said: str) -> Memory:
    at = dt.datetime.fromisoformat(said).replace(tzinfo=UTC)
    return Memory(id="m", dataset="main", kind="note", content="x", content_hash="h", valid_at=at, status="active",
                  created_at=at, updated_at=at)


def _fact(valid: str, invalid: str | None = None) -> Fact:
    def at(day: str | None) -> dt.datetime | None:
        return day and dt.datetime.fromisoformat(day).replace(tzinfo=UTC)

    return Fact(id="f", dataset="main", source_id="a", source="Alice", relation="works_at", target_id="b",
                target="Acme", description="x", valid_at=at(valid), invalid_at=at(invalid), created_at=at(valid),
                expired_at=at(invalid))


def test_what_current_means_for_a_passage() -> None:
    now = dt.datetime(2025, 1, 1, tzinfo=UTC)
    memory = _memory("2023-01-01")
    assert passage_current(memory, [_fact("2023-01-01")], now)
    assert not passage_current(memory, [_fact("2023-01-01", "2024-01-01")], now)  # ended since it was said
    assert passage_current(memory, [_fact("2020-01-01", "2022-06-01")], now)  # it said what had ended
    assert passage_current(memory, [_fact("2023-01-01", "2024-01-01")], dt.datetime(2023, 6, 1, tzinfo=UTC))
    assert not passage_current(memory.model_copy(update={"status": "superseded"}), [], now)
    assert topics_of("my favourite band") == {"favourite:band"} and topics_of("I moved") == {"home"}


def test_allergies_finds_allergic(kn: Kenning) -> None:
    from kenning.search.variants import variants

    kn.remember("Sam is allergic to peanuts.")
    kn.remember("Sam likes long walks.")
    hits = kn.recall("What allergies does Sam have?", search_type="chunks_lexical").hits
    assert hits and "allergic" in hits[0].text
    assert "allergic" in variants("allergies") and "biology" in variants("biological") and variants("tea") == []
    assert "activist" not in variants("activity")
