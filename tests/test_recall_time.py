"""Questions that name a distance back ("a week ago", "in the past three months") and general
terms of two words ("a life event"): the window they name, the words left out of the full-text
query, and the kinds a general term also searches (kenning/search/when.py, lexicon.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning import Kenning
from kenning.search.lexicon import kinds
from kenning.search.variants import with_variants
from kenning.search.when import query_window, time_words

NOW = dt.datetime(2023, 6, 22, 18, 30, tzinfo=dt.UTC)


def _at(day: str) -> dt.datetime:
    return dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC)


@pytest.mark.parametrize(("question", "inside", "outside"), [
    ("What did I do a week ago?", "2023-06-15T10:00", "2023-06-20T10:00"),
    ("What did I do a week ago?", "2023-06-14T12:00", "2023-06-12T10:00"),
    ("Who did I meet three days ago?", "2023-06-19T12:00", "2023-06-21T12:00"),
    ("What did I buy 2 weeks ago?", "2023-06-07T12:00", "2023-06-15T12:00"),
    ("What did I plan a couple of months ago?", "2023-04-10T12:00", "2023-06-01T12:00"),
    ("Where was I a few weeks ago?", "2023-05-25T12:00", "2023-06-20T12:00"),
    ("How many ceremonies have I attended in the past three months?", "2023-04-01T12:00", "2023-03-01T12:00"),
    ("What did I cook over the last 10 days?", "2023-06-22T09:00", "2023-06-05T12:00"),
])
def test_a_distance_back_names_a_window(question: str, inside: str, outside: str) -> None:
    window = query_window(question, NOW)
    assert window is not None
    assert window.contains(_at(inside)) and not window.contains(_at(outside))


def test_how_many_days_ago_asks_for_a_distance_and_names_no_window() -> None:
    assert query_window("How many days ago did I attend the service?", NOW) is None
    assert query_window("How long ago was her birthday?", NOW) is None


def test_the_words_of_a_distance_back_are_its_time_words() -> None:
    assert time_words("What did I do a week ago?", NOW) == {"a", "week", "ago"}
    assert time_words("How many ceremonies in the past three months?", NOW) == {"past", "three", "months"}
    assert time_words("What did I do last week?", NOW) == set()  # a calendar period: left as it is
    assert time_words("What did Evan start a few years ago?", NOW) == set()
    # an absolute date names the window: "the last two weeks" stay words
    assert time_words("Where was Dave in the last two weeks of August 2023?", NOW) == set()


def test_a_general_term_of_two_words_searches_its_kinds() -> None:
    assert {"wedding", "graduation", "funeral"} <= set(kinds("life event")) and kinds("life events")
    assert kinds("event") == () and kinds("life") == ()
    terms = with_variants(["life", "event", "relatives"])
    assert {"wedding", "cousin"} <= set(terms) and terms[:3] == ["life", "event", "relatives"]
    assert "wedding" not in with_variants(["event", "life"])  # the words in the term's order only


@pytest.fixture
def kn(store_url):
    with Kenning(store_url, clock=lambda: NOW) as k:
        yield k


def test_a_life_event_question_finds_the_wedding(kn: Kenning) -> None:
    kn.remember([{"role": "user", "content": "I was a bridesmaid at my cousin's wedding, it was lovely."}],
                session="s1", valid_at=_at("2023-06-15T10:00"))
    kn.remember([{"role": "user", "content": "My life has been busy, there is an event at work every day."}],
                session="s2", valid_at=_at("2023-06-15T11:00"))
    kn.remember([{"role": "user", "content": "Planning a dinner party with my relatives for next month."}],
                session="s3", valid_at=_at("2023-06-15T12:00"))
    top = kn.recall("Which life event of a relative did I go to?", search_type="chunks_lexical").hits[0]
    assert "wedding" in top.text


def test_a_week_ago_prefers_what_was_said_then_and_does_not_search_its_words(kn: Kenning) -> None:
    kn.remember([{"role": "user", "content": "I went to a concert of a jazz band with Sam."}],
                session="then", valid_at=_at("2023-06-15T10:00"))
    kn.remember([{"role": "user", "content": "Two weeks ago I went to a rock concert, a week ago I stayed home."}],
                session="other", valid_at=_at("2023-05-01T10:00"))
    kn.remember([{"role": "user", "content": "I'd like to see a concert some day."}],
                session="later", valid_at=_at("2023-06-21T10:00"))
    hits = kn.recall("Which concert did I go to a week ago?", search_type="chunks_lexical").hits
    assert "jazz" in hits[0].text


def test_a_distance_back_outside_every_memory_is_searched_as_words(kn: Kenning) -> None:
    # the chat is years older than the clock: "two weeks ago" is the text's own phrase
    kn.remember("Evan: I started hiking two weeks ago, every Sunday.", valid_at=_at("2019-03-01T10:00"))
    kn.remember("Evan: I started a new job at the bakery.", valid_at=_at("2019-03-05T10:00"))
    hits = kn.recall("What did Evan start two weeks ago?", search_type="chunks_lexical").hits
    assert "hiking" in hits[0].text
