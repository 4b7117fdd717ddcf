"""Model-assisted resolution through the real client: one call, labels mapped back, no call when
there is nothing to ask."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning.errors import ModelResponseError
from kenning.models import Usage
from kenning.pipeline.llm_resolve import (
    CandidateFact,
    EntityQuestion,
    NewFact,
    Verdicts,
    resolve_with_model,
)
from kenning.providers.openai_compat import OpenAIChat
from tests.fakeopenai import FakeOpenAI


UTC = dt.timezone.utc
NEW = [
    NewFact(
        source="Alice",
        relation="works_at",
        target="Beta",
        sentence="Alice works at Beta.",
        valid_at=dt.datetime(2025, 1, 1, tzinfo=UTC),
    ),
    NewFact(source="Alice", relation="lives_in", target="Paris", sentence="Alice lives in Paris."),
]
CANDIDATES = [
    CandidateFact(
        id="fact-0001-acme",
        source="Alice",
        relation="works_at",
        target="Acme",
        sentence="Alice works at Acme.",
        valid_at=dt.datetime(2020, 1, 1, tzinfo=UTC),
    ),
    CandidateFact(
        id="fact-0002-paris",
        source="Alice",
        relation="lives_in",
        target="Paris",
        sentence="Alice is living in Paris.",
    ),
]
QUESTIONS = [
    EntityQuestion(
        name="Bob",
        type="person",
        options=[("ent-bob-smith", "Bob Smith", "person"), ("ent-bob-jones", "Bob Jones", "person")],
    ),
    EntityQuestion(name="ACME Inc", type="organization", options=[("ent-acme", "Acme", "organization")]),
]


def chat(server: FakeOpenAI) -> OpenAIChat:
    return OpenAIChat("test-model", server.base_url, "sk-test", max_retries=0)


def test_no_candidates_and_no_questions_make_no_call(fake_openai):
    usage = Usage()
    assert resolve_with_model(chat(fake_openai), NEW, [], usage) == Verdicts()
    assert resolve_with_model(chat(fake_openai), [], CANDIDATES, usage) == Verdicts()
    assert fake_openai.requests == [] and usage.chat_calls == 0


def test_verdicts_are_mapped_back_and_invented_labels_dropped(fake_openai):
    fake_openai.enqueue_chat(
        {
            "duplicates": [
                {"new": "n2", "stored": "c2"},
                {"new": "n7", "stored": "c1"},
                {"new": "n1", "stored": "c9"},
            ],
            "contradictions": [
                {"new": "n1", "stored": ["c1", "c3", "fact-0002-paris"]},
                {"new": "n2", "stored": ["c2"]},  # already a duplicate: not also a contradiction
                {"new": "x", "stored": ["c1"]},
            ],
            "entities": [
                {"question": "q1", "match": "e2"},
                {"question": "q2", "match": "e1"},  # e1 is an option of q1, not of q2
                {"question": "q3", "match": "e3"},
            ],
        }
    )
    usage = Usage()
    verdicts = resolve_with_model(chat(fake_openai), NEW, CANDIDATES, usage, QUESTIONS)
    assert verdicts.duplicates == {1: "fact-0002-paris"}
    assert verdicts.contradictions == {0: ["fact-0001-acme"]}
    assert verdicts.entity_matches == {0: "ent-bob-jones"}
    assert usage.chat_calls == 1 and len(fake_openai.chat_requests) == 1


def test_prompt_uses_short_labels_not_store_ids(fake_openai):
    fake_openai.enqueue_chat({"duplicates": [], "contradictions": [], "entities": []})
    resolve_with_model(chat(fake_openai), NEW, CANDIDATES, Usage(), QUESTIONS)
    request = fake_openai.chat_requests[0].json
    prompt = request["messages"][1]["content"]
    assert "n1 [works_at] Alice works at Beta. (2025-01-01 to now)" in prompt
    assert "c1 [works_at] Alice works at Acme. (2020-01-01 to now)" in prompt
    assert 'q2 "ACME Inc" (organization): e3 "Acme" (organization)' in prompt
    assert "fact-0001" not in prompt and "ent-bob" not in prompt
    assert set(request["response_format"]["json_schema"]["schema"]["properties"]) == {
        "duplicates",
        "contradictions",
        "entities",
    }


def test_entity_questions_alone_ask_only_about_entities(fake_openai):
    fake_openai.enqueue_chat(
        {"entities": [{"question": "q2", "match": "e3"}, {"question": "q1", "match": None}]}
    )
    verdicts = resolve_with_model(chat(fake_openai), NEW, [], Usage(), QUESTIONS)
    assert verdicts == Verdicts(entity_matches={1: "ent-acme"})
    request = fake_openai.chat_requests[0].json
    assert set(request["response_format"]["json_schema"]["schema"]["properties"]) == {"entities"}
    assert "New facts" not in request["messages"][1]["content"]


def test_lenient_label_forms_are_accepted(fake_openai):
    fake_openai.enqueue_chat({"duplicates": [{"new": 1, "stored": "C2"}], "contradictions": "none"})
    verdicts = resolve_with_model(chat(fake_openai), NEW, CANDIDATES, Usage())
    assert verdicts.duplicates == {0: "fact-0002-paris"} and verdicts.contradictions == {}


def test_an_answer_without_json_is_a_model_response_error(fake_openai):
    fake_openai.enqueue_chat("No duplicates here.")
    with pytest.raises(ModelResponseError):
        resolve_with_model(chat(fake_openai), NEW, CANDIDATES, Usage())
    assert len(fake_openai.chat_requests) == 1
