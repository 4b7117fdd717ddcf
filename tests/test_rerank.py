"""The reranking stage: the remote /rerank client against a fake endpoint, its error paths,
``rerank_hits``, and recall with a reranker configured (and with one that is down)."""

from __future__ import annotations

import socket

import pytest

from kenning import Kenning
from kenning.errors import ConfigurationError, ModelError, ModelResponseError
from kenning.models import Hit
from kenning.providers.rerank import HttpReranker, LocalCrossEncoder, Reranker
from kenning.search.rerank import rerank_hits

from .fakererank import FakeRerank, fake_rerank, overlap_score  # noqa: F401  (fixture)

DOCS = ["Paris is in France.", "Alice works at Acme in Berlin.", "Bob likes tea."]
TURNS = [
    "Bob: I adopted a cat last spring.",
    "Alice: my sister moved to Lisbon.",
    "Bob: the weather was awful all week.",
    "Alice: I started working at Acme as a designer.",
    "Bob: we watched a movie about sailing.",
]


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/rerank"


def test_remote_reranker_sends_the_shared_request_shape(fake_rerank):
    reranker = HttpReranker(fake_rerank.url, model="rerank-v3.5", api_key="sk-secret-key")
    scores = reranker.score("where does Alice work", DOCS)
    assert scores == [overlap_score("where does Alice work", d) for d in DOCS]
    assert scores[1] > scores[0] and scores[1] > scores[2]
    sent = fake_rerank.requests[-1]
    assert sent == {"model": "rerank-v3.5", "query": "where does Alice work", "documents": DOCS, "top_n": 3}
    assert fake_rerank.headers[-1]["Authorization"] == "Bearer sk-secret-key"
    assert "sk-secret" not in repr(reranker)
    reranker.close()


def test_remote_reranker_reads_a_bare_list_with_score(fake_rerank):
    fake_rerank.enqueue(body=[{"index": 1, "score": 0.9}, {"index": 0, "score": 0.2}])  # TEI's answer
    assert HttpReranker(fake_rerank.url).score("q", ["a", "b"]) == [0.2, 0.9]


@pytest.mark.parametrize("body", [
    "not json at all",
    {"data": []},
    {"results": [{"index": 0, "relevance_score": 0.5}]},  # one of two texts scored
    {"results": [{"index": 5, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.1}]},
    {"results": [{"index": 0, "relevance_score": "high"}, {"index": 1, "relevance_score": 0.1}]},
])
def test_a_malformed_answer_is_a_response_error(fake_rerank, body):
    fake_rerank.enqueue(body=body)
    with pytest.raises(ModelResponseError):
        HttpReranker(fake_rerank.url).score("q", ["a", "b"])


def test_server_errors_are_retried_then_reported(fake_rerank):
    fake_rerank.enqueue(status=503, body={"error": "busy"})
    assert HttpReranker(fake_rerank.url, backoff=0.01).score("alice", ["alice", "bob"]) == [1.0, 0.0]
    fake_rerank.enqueue(status=401, body={"error": "bad key sk-secret-key"})
    with pytest.raises(ModelError, match="HTTP 401") as caught:
        HttpReranker(fake_rerank.url, api_key="sk-secret-key").score("alice", ["alice"])
    assert "sk-secret-key" not in str(caught.value)
    assert len(fake_rerank.requests) == 3  # 503 retried once; 401 not retried


def test_an_endpoint_that_is_down_is_a_model_error():
    with pytest.raises(ModelError, match="rerank call failed"):
        HttpReranker(closed_port_url(), max_retries=1, backoff=0.01).score("q", ["a"])


class Reverse(Reranker):
    """Scores later texts higher: an order nothing else would produce."""

    name = "reverse"

    def score(self, query: str, documents: list[str]) -> list[float]:
        return [float(i) for i in range(len(documents))]


def test_rerank_hits_reorders_the_first_n_and_keeps_the_rest():
    hits = [Hit(kind="chunk", id=f"c{i}", text=f"text {i}", score=1.0 - i / 10, lanes=["lexical"]) for i in range(5)]
    out = rerank_hits(Reverse(), "q", hits, top_n=3)
    assert [h.id for h in out] == ["c2", "c1", "c0", "c3", "c4"]
    assert [h.score for h in out[:3]] == [2.0, 1.0, 0.0]
    assert all(h.lanes == ["lexical", "rerank"] for h in out[:3]) and out[3].lanes == ["lexical"]
    assert out[3].score == hits[3].score and hits[0].lanes == ["lexical"]  # inputs untouched
    assert rerank_hits(Reverse(), "q", [], top_n=3) == []


def test_recall_puts_the_rerankers_choice_first(tmp_path, fake_rerank):
    question = "where is Alice working as a designer at Acme"
    with Kenning(str(tmp_path / "plain.db")) as kn:
        kn.remember(TURNS)
        plain = kn.recall(question, search_type="chunks", top_k=2)
    with Kenning(str(tmp_path / "reranked.db"), reranker=fake_rerank.url, rerank_top_n=5) as kn:
        kn.remember(TURNS)
        result = kn.recall(question, search_type="chunks", top_k=2)
    assert len(result.hits) == 2 and all("rerank" in h.lanes for h in result.hits)
    assert result.hits[0].text == TURNS[3]
    assert result.hits[0].score == pytest.approx(overlap_score(question, TURNS[3]))
    assert {m.id for m in result.memories} == {m for h in result.hits for m in h.memory_ids}
    assert len(fake_rerank.requests[-1]["documents"]) == 5  # more than top_k were reranked
    assert all("rerank" not in h.lanes for h in plain.hits)


def test_recall_keeps_the_fused_order_when_the_reranker_is_down(tmp_path):
    path = str(tmp_path / "k.db")
    with Kenning(path) as kn:
        kn.remember(TURNS)
        plain = kn.recall("Alice Acme designer", search_type="chunks", top_k=3)
    with Kenning(path, reranker=closed_port_url(), llm_max_retries=0) as kn:
        result = kn.recall("Alice Acme designer", search_type="chunks", top_k=3)
    assert result.hits and [h.id for h in result.hits] == [h.id for h in plain.hits]
    assert all("rerank" not in h.lanes for h in result.hits)


def test_reranker_setting_is_checked(tmp_path):
    with pytest.raises(ConfigurationError, match="unknown reranker"):
        Kenning(str(tmp_path / "x.db"), reranker="cohere")
    with Kenning(str(tmp_path / "y.db")) as kn:
        assert kn.settings.reranker is None and kn._engine.reranker is None  # off by default


def test_recall_with_a_local_cross_encoder_from_settings(tmp_path):
    pytest.importorskip("tokenizers")
    from .tinybert import write_model

    model = write_model(tmp_path / "tiny-reranker", head=True, pooling=None)
    cross = LocalCrossEncoder(str(model))
    question = "where does alice work"
    with Kenning(str(tmp_path / "k.db"), reranker=f"local:{model}", rerank_top_n=5) as kn:
        assert kn._engine.reranker.name == "local:tiny-reranker"
        kn.remember(TURNS)
        hits = kn.recall(question, search_type="chunks", top_k=5).hits
    assert hits and all("rerank" in h.lanes for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert [h.score for h in hits] == pytest.approx(cross.score(question, [h.text for h in hits]), abs=1e-6)
