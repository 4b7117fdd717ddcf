"""Answers with citations: one call, labels in the prompt, only given ids cited."""

from __future__ import annotations

import datetime as dt

import pytest

from kenning.errors import ModelNotConfiguredError, ModelResponseError
from kenning.models import Usage
from kenning.providers.openai_compat import OpenAIChat
from kenning.search.answer import NO_MEMORIES, AnswerFact, answer_question
from tests.fakeopenai import FakeOpenAI


UTC = dt.timezone.utc
NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
FACTS = [
    AnswerFact(
        id="fact-acme",
        sentence="Alice works at Acme.",
        valid_at=dt.datetime(2020, 1, 1, tzinfo=UTC),
        invalid_at=dt.datetime(2025, 1, 1, tzinfo=UTC),
        current=False,
        memory_ids=["mem-1"],
    ),
    AnswerFact(
        id="fact-beta",
        sentence="Alice works at Beta.",
        valid_at=dt.datetime(2025, 1, 1, tzinfo=UTC),
        current=True,
        memory_ids=["mem-2", "mem-1"],
    ),
    AnswerFact(id="fact-tea", sentence="Alice likes tea.", memory_ids=["mem-3"]),
]


def chat(server: FakeOpenAI) -> OpenAIChat:
    return OpenAIChat("test-model", server.base_url, "sk-test", max_retries=0)


def test_answer_cites_only_given_ids(fake_openai):
    fake_openai.enqueue_chat(
        {"answer": "Alice works at Beta.", "citations": ["f2", "f9", "m3", "m7", "fact-acme", 4]}
    )
    usage = Usage()
    answer, citations = answer_question(chat(fake_openai), "Where does Alice work?", FACTS, NOW, usage)
    assert answer == "Alice works at Beta."
    assert citations == ["fact-beta", "mem-2", "mem-1", "mem-3"]
    assert usage.chat_calls == 1 and len(fake_openai.chat_requests) == 1


def test_prompt_carries_timelines_current_time_and_labels(fake_openai):
    fake_openai.enqueue_chat({"answer": "x", "citations": []})
    answer_question(chat(fake_openai), "Where does Alice work?", FACTS, NOW, Usage())
    system, user = (m["content"] for m in fake_openai.chat_requests[0].json["messages"])
    assert "2025-06-01 12:00 UTC" in system
    assert "f1 (2020-01-01 to 2025-01-01, no longer true; m1) Alice works at Acme." in user
    assert "f2 (2025-01-01 to now, true now; m2, m1) Alice works at Beta." in user
    assert "f3 (m3) Alice likes tea." in user
    assert user.endswith("Question: Where does Alice work?")
    assert "fact-" not in user and "mem-" not in user


def test_no_facts_means_no_call(fake_openai):
    assert answer_question(chat(fake_openai), "q", [], NOW, Usage()) == (NO_MEMORIES, [])
    assert fake_openai.requests == []


def test_no_model_is_a_clear_error():
    with pytest.raises(ModelNotConfiguredError, match="KENNING_LLM"):
        answer_question(None, "q", FACTS, NOW, Usage())


def test_prose_answer_from_a_server_without_structured_output(fake_openai):
    fake_openai.enqueue_chat("<think>hmm</think>Alice works at Beta.")
    assert answer_question(chat(fake_openai), "q", FACTS, NOW, Usage()) == ("Alice works at Beta.", [])


def test_json_without_answer_is_an_error(fake_openai):
    fake_openai.enqueue_chat({"citations": ["f1"]})
    with pytest.raises(ModelResponseError):
        answer_question(chat(fake_openai), "q", FACTS, NOW, Usage())
