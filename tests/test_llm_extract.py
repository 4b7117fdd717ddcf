"""The LLM extractor and the tolerant JSON reader, through the real client and the fake server."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from kenning.errors import ConfigurationError, ModelResponseError
from kenning.models import Usage
from kenning.providers.jsonparse import find_json_object, parse_model, strip_reasoning
from kenning.dates import absolute_date
from kenning.pipeline.llm_extract import EXTRACTION_SCHEMA, LLMExtractor
from kenning.providers.openai_compat import OpenAIChat
from tests.fakeopenai import FakeOpenAI


UTC = dt.timezone.utc
REFERENCE = dt.datetime(2025, 3, 14, 9, 30, tzinfo=UTC)
GOOD = {
    "entities": [
        {"name": "Alice Martin", "type": "Person", "description": "engineer"},
        {"name": "Acme Corp", "type": "organization", "description": "a company"},
    ],
    "facts": [
        {
            "source": "Alice Martin",
            "relation": "Works At",
            "target": "Acme Corp",
            "sentence": "Alice Martin works at Acme Corp.",
            "valid_at": "2024-06",
            "invalid_at": None,
            "ends": False,
        },
        {
            "source": "Alice Martin",
            "relation": "lives_in",
            "target": "Berlin",
            "sentence": "Alice Martin lives in Berlin.",
            "valid_at": "sometime",
            "invalid_at": "2020-01-01",
            "ends": False,
        },
    ],
}
DOC_100_TOKENS = (
    "Alice Martin joined Acme Corp as a senior engineer in June 2024, after four years at Globex "
    "in Munich. She moved to Berlin last year and now leads the payments team, which ships the "
    "Ledger service used by most Acme customers. Her manager is Bob Stone, who founded the Berlin "
    "office in 2019. Alice left the Globex board in January. "
    "Next spring she plans to open a second office in Lisbon with Carol Diaz, the new CFO."
)


def extractor(server: FakeOpenAI, **options) -> LLMExtractor:
    chat = OpenAIChat("test-model", server.base_url, "sk-test", max_retries=0)
    return LLMExtractor(chat, **options)


def test_extraction_success_in_one_call(fake_openai):
    fake_openai.enqueue_chat(GOOD)
    usage = Usage()
    result = extractor(fake_openai).extract(["Alice works at Acme."], reference_time=REFERENCE, usage=usage)
    assert usage.chat_calls == 1
    names = {(e.name, e.type) for e in result.entities}
    assert names == {("Alice Martin", "person"), ("Acme Corp", "organization"), ("Berlin", "concept")}
    works, lives = result.facts
    assert (works.source, works.relation, works.target) == ("Alice Martin", "works_at", "Acme Corp")
    assert works.valid_at == dt.datetime(2024, 6, 1, tzinfo=UTC)
    assert lives.valid_at is None and lives.invalid_at == dt.datetime(2020, 1, 1, tzinfo=UTC)
    request = fake_openai.chat_requests[0].json
    assert request["response_format"]["json_schema"]["schema"] == EXTRACTION_SCHEMA
    prompt = request["messages"][1]["content"]
    assert "2025-03-14 09:30 UTC, Friday" in prompt and "Alice works at Acme." in prompt


def test_prompt_is_short(fake_openai):
    """Tokens are a measured cost: < 600 prompt tokens (schema included) for a 100-token doc."""
    fake_openai.enqueue_chat({"entities": [], "facts": []})
    usage = Usage()
    assert 90 <= -(-len(DOC_100_TOKENS) // 4) <= 110
    extractor(fake_openai).extract([DOC_100_TOKENS], reference_time=REFERENCE, usage=usage)
    assert usage.prompt_tokens < 600, usage.prompt_tokens
    estimate = extractor(fake_openai).estimate([DOC_100_TOKENS], REFERENCE)
    assert estimate.chat_calls == 1
    assert abs(estimate.prompt_tokens - usage.prompt_tokens) <= 10
    assert len(fake_openai.chat_requests) == 1  # estimate made no call


def test_malformed_json_is_corrected_on_the_one_retry(fake_openai):
    fake_openai.enqueue_chat('{"entities": [ {"name": "Alice"')
    fake_openai.enqueue_chat(GOOD)
    usage = Usage()
    result = extractor(fake_openai).extract(["text"], reference_time=REFERENCE, usage=usage)
    assert len(result.facts) == 2
    assert usage.chat_calls == 2
    retry = fake_openai.chat_requests[1].json["messages"]
    assert retry[2] == {"role": "assistant", "content": '{"entities": [ {"name": "Alice"'}
    assert "invalid" in retry[3]["content"] and "no JSON object" in retry[3]["content"]


def test_an_empty_answer_is_retried_once(fake_openai):
    fake_openai.enqueue_chat("")
    fake_openai.enqueue_chat(GOOD)
    usage = Usage()
    result = extractor(fake_openai).extract(["text"], reference_time=REFERENCE, usage=usage)
    assert usage.chat_calls == 2 and len(result.facts) == 2
    retry = fake_openai.chat_requests[1].json["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "user"]
    assert "no content" in retry[2]["content"]


def test_schema_error_is_fed_back(fake_openai):
    broken = {"entities": [], "facts": [{"source": "A", "relation": "knows", "sentence": "A knows B."}]}
    fake_openai.enqueue_chat(broken)
    fake_openai.enqueue_chat(GOOD)
    extractor(fake_openai).extract(["text"], reference_time=REFERENCE, usage=Usage())
    feedback = fake_openai.chat_requests[1].json["messages"][3]["content"]
    assert "facts.0.target" in feedback and "Field required" in feedback


def test_malformed_twice_raises_model_response_error(fake_openai):
    fake_openai.enqueue_chat("I cannot do that.")
    fake_openai.enqueue_chat("[1, 2, 3]")
    fake_openai.enqueue_chat(GOOD)  # a third answer must not be asked for
    usage = Usage()
    with pytest.raises(ModelResponseError, match="failed twice"):
        extractor(fake_openai).extract(["text"], reference_time=REFERENCE, usage=usage)
    assert len(fake_openai.chat_requests) == 2 and usage.chat_calls == 2


def test_think_blocks_and_code_fences_are_parsed(fake_openai):
    wrapped = (
        '<think>The user wants {"entities": []}... let me think.</think>\n'
        "Here is the graph:\n```json\n" + json.dumps(GOOD) + "\n```\nHope it helps!"
    )
    fake_openai.enqueue_chat(wrapped)
    usage = Usage()
    result = extractor(fake_openai).extract(["text"], reference_time=REFERENCE, usage=usage)
    assert usage.chat_calls == 1 and len(result.facts) == 2


def test_dates_are_tolerant_and_inverted_intervals_dropped(fake_openai):
    answer = {
        "entities": [],
        "facts": [
            {
                "source": "Bob",
                "relation": "leads",
                "target": "Team",
                "sentence": "Bob leads Team.",
                "valid_at": "2024-05-01T10:00:00Z",
                "invalid_at": "2023-01-01",
                "ends": False,
            },
            {
                "source": "Bob",
                "relation": "left",
                "target": "Globex",
                "sentence": "Bob left Globex.",
                "valid_at": None,
                "invalid_at": "January 2025",
                "ends": True,
            },
            {
                "source": "Bob",
                "relation": "is",
                "target": "bob",
                "sentence": "self loop",
                "valid_at": None,
                "invalid_at": None,
                "ends": False,
            },
        ],
    }
    fake_openai.enqueue_chat(answer)
    result = extractor(fake_openai).extract(["t"], reference_time=REFERENCE, usage=Usage())
    leads, left = result.facts
    assert leads.valid_at == dt.datetime(2024, 5, 1, 10, tzinfo=UTC) and leads.invalid_at is None
    assert left.ends is True and left.invalid_at == dt.datetime(2025, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024", dt.datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-06", dt.datetime(2024, 6, 1, tzinfo=UTC)),
        ("2024-06-15", dt.datetime(2024, 6, 15, tzinfo=UTC)),
        ("2024-06-15T12:00:00+02:00", dt.datetime(2024, 6, 15, 10, tzinfo=UTC)),
        ("June 15, 2024", dt.datetime(2024, 6, 15, tzinfo=UTC)),
        (2021, dt.datetime(2021, 1, 1, tzinfo=UTC)),
        ("2024-13-01", None),
        ("March 2020", dt.datetime(2020, 3, 1, tzinfo=UTC)),
        ("last year", None),  # a phrase names no date without a reference time
        ("June 15", None),
        ("now", None),
        ("unknown", None),
        ("", None),
        (None, None),
        (True, None),
    ],
)
def test_a_models_date_names_its_year(value, expected):
    assert absolute_date(value) == expected


def test_chunks_share_one_call_and_overlap_is_sent_once(fake_openai):
    fake_openai.enqueue_chat(GOOD)
    usage = Usage()
    chunks = [
        "Alice joined Acme in 2024. She leads the payments team in Berlin today.",
        "leads the payments team in Berlin today. Bob founded the office.",
        "Carol reviews the budget.",
    ]
    extractor(fake_openai).extract(chunks, reference_time=REFERENCE, usage=usage)
    assert usage.chat_calls == 1
    text = fake_openai.chat_requests[0].json["messages"][1]["content"]
    assert text.count("payments team") == 1
    assert "Bob founded the office." in text and "Carol reviews the budget." in text


def test_long_memories_are_split_across_calls_and_merged(fake_openai):
    first = {
        "entities": [{"name": "Alice", "type": "person", "description": ""}],
        "facts": [
            {
                "source": "Alice",
                "relation": "knows",
                "target": "Bob",
                "sentence": "Alice knows Bob.",
                "valid_at": None,
                "invalid_at": None,
                "ends": False,
            }
        ],
    }
    second = {
        "entities": [{"name": "alice", "type": "person", "description": "x"}],
        "facts": [
            {
                "source": "Alice",
                "relation": "knows",
                "target": "Bob",
                "sentence": "Alice knows Bob.",
                "valid_at": None,
                "invalid_at": None,
                "ends": False,
            },
            {
                "source": "Bob",
                "relation": "likes",
                "target": "Tea",
                "sentence": "Bob likes tea.",
                "valid_at": None,
                "invalid_at": None,
                "ends": False,
            },
        ],
    }
    fake_openai.enqueue_chat(first)
    fake_openai.enqueue_chat(second)
    usage = Usage()
    chunks = ["a" * 400, "b" * 400]
    result = extractor(fake_openai, max_call_tokens=150).extract(
        chunks, reference_time=REFERENCE, usage=usage
    )
    assert usage.chat_calls == 2
    assert [len(r.json["messages"][1]["content"]) > 400 for r in fake_openai.chat_requests] == [True, True]
    assert sorted(e.name for e in result.entities) == ["Alice", "Bob", "Tea"]
    assert len(result.facts) == 2


def test_graph_model_and_prompt_shape_the_instructions(fake_openai):
    graph_model = json.dumps(
        {
            "entity_types": ["drug", {"name": "gene", "description": "a human gene"}],
            "relation_types": ["inhibits"],
        }
    )
    ex = extractor(fake_openai, graph_model=graph_model, prompt="Ignore dosage information.")
    fake_openai.enqueue_chat(GOOD)
    ex.extract(["text"], reference_time=REFERENCE, usage=Usage())
    system = fake_openai.chat_requests[0].json["messages"][0]["content"]
    assert "drug, gene (a human gene), concept" in system
    assert "prefer: inhibits" in system
    assert system.endswith("Ignore dosage information.")
    with pytest.raises(ConfigurationError):
        extractor(fake_openai, graph_model="{not json")
    with pytest.raises(ConfigurationError):
        extractor(fake_openai, graph_model='{"entity_types": [3]}')


def test_empty_chunks_make_no_call(fake_openai):
    result = extractor(fake_openai).extract(["", "  "], reference_time=REFERENCE, usage=Usage())
    assert result.entities == [] and result.facts == []
    assert fake_openai.requests == []


# -- jsonparse ------------------------------------------------------------------------------------


def test_strip_reasoning_handles_closed_and_unopened_blocks():
    assert strip_reasoning("<think>x</think> {}") == "{}"
    assert strip_reasoning('reasoning without opener</think>\n{"a": 1}') == '{"a": 1}'
    assert strip_reasoning("<THINKING>\nx\n</THINKING>ok") == "ok"


def test_find_json_object_skips_prose_and_fences():
    assert find_json_object('Sure! {"a": {"b": [1, 2]}} trailing') == {"a": {"b": [1, 2]}}
    assert find_json_object('```\n{"a": 1}\n```') == {"a": 1}
    assert find_json_object('set {x} then {"a": 2}') == {"a": 2}
    with pytest.raises(ModelResponseError, match="no JSON object"):
        find_json_object("nothing here")


def test_parse_model_reports_validation_errors():
    from pydantic import BaseModel

    class Thing(BaseModel):
        count: int

    assert parse_model('{"count": 3}', Thing).count == 3
    with pytest.raises(ModelResponseError, match="count: "):
        parse_model('{"count": "many"}', Thing)


def test_transport_failures_are_not_retried_by_the_extractor(fake_openai):
    from kenning.errors import ModelError

    fake_openai.enqueue_chat(status=503)
    fake_openai.enqueue_chat(GOOD)
    with pytest.raises(ModelError) as caught:
        extractor(fake_openai).extract(["text"], reference_time=REFERENCE, usage=Usage())
    assert not isinstance(caught.value, ModelResponseError)
    assert len(fake_openai.chat_requests) == 1  # max_retries=0 in this client: one attempt
