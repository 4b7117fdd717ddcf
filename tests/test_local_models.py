"""Local models on tiny random BERTs written by the test: pooling, prefixes, hub-cache lookup,
the RoBERTa family and cross-encoder scores, each against a plain reference forward pass."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

from kenning.errors import ConfigurationError  # noqa: E402
from kenning.models import Usage  # noqa: E402
from kenning.providers.hashing import HashingEmbedder  # noqa: E402
from kenning.providers.local import LocalEmbedder  # noqa: E402
from kenning.providers.rerank import LocalCrossEncoder  # noqa: E402

from .fakehub import FakeHub  # noqa: E402
from .tinybert import reference_hidden, reference_logits, write_model  # noqa: E402

TEXTS = ["alice works at acme", "bob lives in paris", "who", "the coffee bob likes at the acme in berlin"]
BGE_QUERY = "Represent this sentence for searching relevant passages: "


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An empty Hugging Face cache that refuses downloads."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hub"


@pytest.mark.parametrize("pooling", ["cls", "mean", "max"])
def test_pooling_follows_the_model_config(tmp_path, pooling):
    directory = write_model(tmp_path / f"tiny-{pooling}", pooling=pooling)
    embedder = LocalEmbedder(str(directory))
    assert embedder.pooling == pooling and embedder.dimension == 16
    got = embedder.embed(TEXTS)
    for text, vector in zip(TEXTS, got):
        hidden = reference_hidden(directory, text)
        pooled = {"cls": hidden[0], "mean": hidden.mean(axis=0), "max": hidden.max(axis=0)}[pooling]
        assert np.allclose(vector, unit(pooled), atol=1e-4)


def test_batched_padded_forward_equals_one_text_at_a_time(tmp_path):
    embedder = LocalEmbedder(str(write_model(tmp_path / "tiny", pooling="mean")))
    texts = [" ".join(["alice"] * (i % 9 + 1)) + " works at acme" for i in range(40)]
    one_by_one = np.vstack([embedder.embed([t]) for t in texts])
    usage = Usage()
    together = embedder.embed(texts, usage)
    assert np.allclose(one_by_one, together, atol=1e-5)
    assert usage.embedding_calls == 1 and usage.embedded_texts == 40


def test_query_and_document_prefixes_by_model_family(tmp_path):
    plain = LocalEmbedder(str(write_model(tmp_path / "plain-tiny")))
    e5 = LocalEmbedder(str(write_model(tmp_path / "e5-tiny")))
    bge = LocalEmbedder(str(write_model(tmp_path / "bge-tiny-en-v1.5")))
    gte = LocalEmbedder(str(write_model(tmp_path / "gte-tiny")))
    text = ["alice works at acme"]
    assert (e5.query_prefix, e5.document_prefix) == ("query: ", "passage: ")
    assert np.allclose(e5.embed_query(text), plain.embed(["query: alice works at acme"]), atol=1e-6)
    assert np.allclose(e5.embed(text), plain.embed(["passage: alice works at acme"]), atol=1e-6)
    assert (bge.query_prefix, bge.document_prefix) == (BGE_QUERY, "")
    assert np.allclose(bge.embed_query(text), plain.embed([BGE_QUERY + text[0]]), atol=1e-6)
    assert np.allclose(bge.embed(text), plain.embed(text), atol=1e-6)
    assert not np.allclose(bge.embed_query(text), bge.embed(text), atol=1e-3)
    for same in (gte, plain):
        assert np.array_equal(same.embed_query(text), same.embed(text))


def test_prompts_shipped_with_the_model_win(tmp_path):
    prompts = {"query": "who: ", "document": "the "}
    shipped = LocalEmbedder(str(write_model(tmp_path / "e5-custom", prompts=prompts)))
    assert (shipped.query_prefix, shipped.document_prefix) == ("who: ", "the ")


def test_every_embedder_has_a_query_form():
    hashing = HashingEmbedder()
    texts = ["where does alice work", "alice works at acme"]
    assert np.array_equal(hashing.embed_query(texts), hashing.embed(texts))


def test_a_model_in_the_hub_cache_is_found_by_its_id(tmp_path, hub):
    snapshot = hub / "models--BAAI--bge-tiny-en" / "snapshots" / "0123abcd"
    write_model(snapshot, pooling="cls")
    embedder = LocalEmbedder("BAAI/bge-tiny-en")
    assert embedder.directory == snapshot and embedder.name == "local:bge-tiny-en"
    assert embedder.pooling == "cls" and embedder.query_prefix == BGE_QUERY
    got = embedder.embed(["bob lives in paris"])[0]
    assert np.allclose(got, unit(reference_hidden(snapshot, "bob lives in paris")[0]), atol=1e-4)


def test_a_model_missing_offline_is_a_clear_error(hub):
    with pytest.raises(ConfigurationError, match="BAAI/bge-small-en-v1.5.*HF_HUB_OFFLINE"):
        LocalEmbedder("BAAI/bge-small-en-v1.5")


def test_unsupported_models_are_refused(tmp_path):
    directory = write_model(tmp_path / "tiny")
    (directory / "config.json").write_text('{"model_type": "gpt2", "hidden_size": 16}')
    with pytest.raises(ConfigurationError, match="BERT-family"):
        LocalEmbedder(str(directory))
    two = write_model(tmp_path / "two")
    (two / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}')
    with pytest.raises(ConfigurationError, match="pooling"):
        LocalEmbedder(str(two))


def test_xlm_roberta_encoders_count_positions_from_the_padding_id(tmp_path):
    directory = write_model(tmp_path / "multilingual-e5-tiny", kind="xlm-roberta", pooling="mean")
    embedder = LocalEmbedder(str(directory))
    assert embedder.document_prefix == "passage: "
    got = embedder.embed(["bob lives in paris"])[0]
    expected = reference_hidden(directory, "passage: bob lives in paris").mean(axis=0)
    assert np.allclose(got, unit(expected), atol=1e-4)


@pytest.mark.parametrize("kind", ["bert", "xlm-roberta"])
def test_cross_encoder_scores_pairs_with_its_classification_head(tmp_path, kind):
    directory = write_model(tmp_path / "tiny-reranker", kind=kind, head=True, pooling=None)
    reranker = LocalCrossEncoder(str(directory))
    query = "where does alice work"
    scores = reranker.score(query, TEXTS)
    expected = [1 / (1 + np.exp(-reference_logits(directory, query, t))) for t in TEXTS]
    assert np.allclose(scores, expected, atol=1e-4)
    assert reranker.score(query, []) == []


def test_an_encoder_without_a_head_is_not_a_cross_encoder(tmp_path):
    with pytest.raises(ConfigurationError, match="not a cross-encoder"):
        LocalCrossEncoder(str(write_model(tmp_path / "tiny")))


def _load_in_a_fresh_process(spec: str, env: dict[str, str], code: str) -> subprocess.CompletedProcess:
    # huggingface_hub reads HF_ENDPOINT when it is imported: a fresh process takes the fake hub's
    script = f"from kenning.providers.local import LocalEmbedder\ne = LocalEmbedder({spec!r})\n{code}"
    return subprocess.run([sys.executable, "-c", script], env={**os.environ, **env, "HF_HUB_DISABLE_PROGRESS_BARS": "1"},
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_hub_id_not_on_the_machine_is_downloaded_on_first_use(tmp_path):
    repo = write_model(tmp_path / "repo", pooling="cls")
    (repo / "pytorch_model.bin").write_bytes(b"torch weights the runtime never reads")
    (repo / "onnx").mkdir()
    (repo / "onnx" / "model.onnx").write_bytes(b"onnx weights")
    cache = tmp_path / "cache"
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "0"}
    with FakeHub("BAAI/bge-tiny-en", repo) as hub:
        env["HF_ENDPOINT"] = hub.endpoint
        done = _load_in_a_fresh_process("BAAI/bge-tiny-en", env, "print(e.name, e.pooling, e.directory)")
        assert done.returncode == 0, done.stderr
        fetched = {r.split(" ", 1)[1] for r in hub.requests if r.startswith("GET /BAAI/bge-tiny-en/resolve/")}
    name, pooling, directory = done.stdout.split()
    assert (name, pooling) == ("local:bge-tiny-en", "cls") and directory.startswith(str(cache))
    assert {f.rsplit("/", 1)[-1] for f in fetched} == {"model.safetensors", "tokenizer.json", "config.json"}
    assert not any("onnx" in f or ".bin" in f for f in fetched)  # only what the runtime reads
    # the second use finds it in the cache, with the hub gone and downloads refused
    again = _load_in_a_fresh_process("BAAI/bge-tiny-en", {**env, "HF_HUB_OFFLINE": "1"}, "print(e.name)")
    assert again.returncode == 0 and again.stdout.strip() == "local:bge-tiny-en", again.stderr


def test_a_hub_id_the_hub_does_not_know_is_a_clear_error(tmp_path):
    with FakeHub("BAAI/bge-tiny-en", write_model(tmp_path / "repo")) as hub:
        env = {"HF_HUB_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub.endpoint}
        done = _load_in_a_fresh_process("someone/missing-model", env, "")
    assert done.returncode != 0
    assert "ConfigurationError" in done.stderr and "could not be downloaded" in done.stderr
    assert "someone/missing-model" in done.stderr
