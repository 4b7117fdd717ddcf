"""Ranking of user–assistant chats (kenning/search/chat.py): the user's own statements answer
questions about the user, the assistant's turns answer questions about its earlier answers,
request words stay out of the full-text query, and sessions take turns in the ranking."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning import Kenning
from kenning.models import Hit
from kenning.search import chat

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize("question, expected", [
    ("What breed is my dog?", "user"),
    ("Where did I buy my new bookshelf from?", "user"),
    ("In our previous chat, you suggested a few options. Can you remind me?", "assistant"),
    ("I remember you told me to dilute tea tree oil. What ratio was it?", "assistant"),
    ("What was the name of the hiking trail you recommended?", "assistant"),
    ("Where does Alice live?", None),
])
def test_focus_reads_whose_turns_answer(question, expected):
    assert chat.focus(question) == expected


def test_request_words_leave_a_question_about_the_user_but_not_too_many():
    assert chat.lexical_terms("Can you recommend some accessories for my phone?",
                              ["recommend", "accessories", "phone"]) == ["accessories", "phone"]
    # too few terms would be left: all stay
    assert chat.lexical_terms("Any tips for my garden?", ["tips", "garden"]) == ["tips", "garden"]
    # not about the user: untouched
    assert chat.lexical_terms("Which tips did you suggest last time?", ["tips", "suggest", "last", "time"]) == [
        "tips", "suggest", "last", "time"]


def _hit(hit_id: str, score: float) -> Hit:
    return Hit(kind="chunk", id=hit_id, text=hit_id, score=score)


def test_diversify_lets_sessions_take_turns():
    hits = [_hit("a1", 1.0), _hit("a2", 0.9), _hit("a3", 0.8), _hit("b1", 0.7), _hit("x", 0.1)]
    episode = {"a1": "A", "a2": "A", "a3": "A", "b1": "B"}
    out = chat.diversify(hits, lambda h: episode.get(h.id), 0.5)
    assert [h.id for h in out] == ["a1", "b1", "a2", "a3", "x"]
    assert out[2].score == pytest.approx(0.45) and out[3].score == pytest.approx(0.2)
    assert [h.id for h in chat.diversify(hits, lambda h: episode.get(h.id), 0.0)] == ["a1", "a2", "a3", "b1", "x"]


_LONG_REPLY = ("Some breeds suit a small flat better than others. A pug is a calm little dog, a greyhound "
               "sleeps most of the day, and whatever the breed, a dog needs daily walks and a quiet corner. "
               "Ask a breeder or a shelter which dog breed fits your hours: each breed has its needs.")


def _chat_store(kn: Kenning) -> None:
    kn.remember([{"role": "assistant", "content": _LONG_REPLY}], session="s1", valid_at=NOW)
    kn.remember([{"role": "user", "content": "We adopted my first dog, a beagle puppy: a lovely breed."},
                 {"role": "assistant", "content": "Congratulations! Beagles are friendly."}],
                session="s2", valid_at=NOW)
    kn.remember([{"role": "user", "content": "Give me a hiking trail near Zaragoza."},
                 {"role": "assistant", "content": "Try the GR-90 trail through the Moncayo park."}],
                session="s3", valid_at=NOW)


def _first(kn: Kenning, question: str) -> str:
    return kn.recall(question, top_k=5).hits[0].text


def test_the_users_own_statement_answers_a_question_about_the_user():
    with Kenning(":memory:", clock=lambda: NOW) as kn:
        _chat_store(kn)
        assert "beagle" in _first(kn, "What breed is my dog?")


def test_the_assistants_earlier_answer_answers_a_question_about_it():
    with Kenning(":memory:", clock=lambda: NOW) as kn:
        _chat_store(kn)
        assert "GR-90" in _first(kn, "What was the hiking trail you recommended near Zaragoza?")



def test_a_question_about_the_assistants_answer_lifts_the_reply_that_says_it_not_its_neighbours() -> None:
    # The user's turn in s1 matches best; the assistant's "Sure, happy to help" beside it only
    # borrows that score. Asked what the assistant recommended, the role weight lifts a reply's
    # own words: the reply that names the trail ranks above the reply that borrowed.
    kn = Kenning(":memory:", clock=lambda: NOW)
    kn.remember([{"role": "user", "content": "I'm visiting Denver in July and I love hiking: mountain trails with views near Denver."},
                 {"role": "assistant", "content": "Sure, happy to help with that! Let me know your dates."}],
                session="s1", valid_at="2024-05-01")
    kn.remember([{"role": "user", "content": "Thanks, that sounds good."},
                 {"role": "assistant", "content": "For views, I recommend the Royal Arch trail; it is a steep but short hike."}],
                session="s2", valid_at="2024-05-02")
    hits = kn.recall("Which trail near Denver did you recommend for views?", top_k=5).hits
    assert "Royal Arch" in hits[0].text
    # a question about the user still lets the user's turn take what its reply lends it
    hits = kn.recall("Which trails near Denver do I love?", top_k=5).hits
    assert hits[0].text.startswith("User: I'm visiting Denver")


def test_longmemeval_format_assistant_question_finds_the_reply_that_answers_first() -> None:
    # the same mechanism through the evaluation path: a LongMemEval-format question (fixture of
    # our own), each session remembered as a chat, the engine clock at the question date
    from pathlib import Path

    from kenning.eval.datasets import load
    from kenning.eval.run import DATASET, _ingest, ranked_keys

    folder = Path(__file__).resolve().parent / "fixtures" / "longmemeval_assistant"
    collection = load("longmemeval", folder)[0]
    question = collection.questions[0]
    with Kenning(":memory:", clock=lambda: collection.now) as kn:
        keys = _ingest(kn, collection)
        hits = kn.recall(question.text, dataset=DATASET, top_k=10).hits
    assert ranked_keys(hits, keys)[0] in question.gold == ("answer_tiny_a:1",)
