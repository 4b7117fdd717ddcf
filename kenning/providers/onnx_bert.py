"""The encoder layers of a local BERT-family model as an ONNX graph run by onnxruntime.

``kenning.providers.local`` loads a model's safetensors weights into numpy; this module writes
the same transformer layers as an ONNX graph (with the ``onnx`` package, from those arrays, at
load: the model packages ship no ONNX file and nothing is downloaded) and runs it with
onnxruntime, which fuses the attention, the GELU and the layer norms that numpy computes in
several passes over memory. The embedding lookup and the pooling stay in numpy: they are cheap.
Both paths compute the same function; their vectors agree to about 1e-6 (tested).

Install with ``pip install 'kenning[onnx]'`` (``onnxruntime`` and ``onnx``); without them
``LocalEmbedder`` runs the numpy encoder.

``int8=True`` stores the layers' weight matrices as 8-bit integers, one scale per output column
(onnxruntime's dynamic quantization: activations are quantized per product at run time). That
runs about ×2.3 faster per CPU second on these machines, and changes the vectors (cosine to the
float32 vectors about 0.99), so a quantized model has its own name in the store
(``local:<model>:int8``, ``kenning.providers.local``) and exists only in onnxruntime.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .._extras import require

if TYPE_CHECKING:
    from .local import _Weights

__all__ = ["OnnxEncoder", "available", "cache_key", "threads"]

_OPSET = 17  # LayerNormalization
_CONTRIB = "com.microsoft"  # onnxruntime's own operators (Attention)
_T = TypeVar("_T")
_R = TypeVar("_R")


def available() -> bool:
    """Whether onnxruntime imports (the ``onnx`` extra is installed)."""
    try:
        importlib.import_module("onnxruntime")
    except ImportError:
        return False
    return True


def threads() -> int:
    """The cores this process may run on (at most 8: more only pay for the synchronisation on
    these small matrices): passes run side by side on them, or one pass uses them all."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def _graph(weights: _Weights, heads: int, eps: float) -> bytes:
    """The serialized ONNX model: inputs ``x`` (batch, length, width), the embedded and
    normalized tokens, and ``mask`` (batch, length), int32, 1 for tokens and 0 for padding;
    output ``hidden`` (batch, length, width). Each layer's attention is onnxruntime's fused
    ``Attention`` operator (com.microsoft: the query/key/value product, the masked softmax and
    the heads in one kernel; ``QAttention`` once quantized), measured ×1.15 the rate of the same
    steps as plain operators on 256-token texts."""
    onnx = require("onnx", extra="onnx", purpose="the onnxruntime encoder builds its graph with onnx")
    helper, numpy_helper, TensorProto = onnx.helper, onnx.numpy_helper, onnx.TensorProto
    width = weights.word.shape[1]
    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    def node(op: str, inputs: list[str], name: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    half = const("half", np.array(0.5, dtype=np.float32))
    one = const("one", np.array(1.0, dtype=np.float32))
    root2 = const("root2", np.array(np.sqrt(2.0), dtype=np.float32))
    x = "x"
    for n, layer in enumerate(weights.layers):
        p = f"l{n}_"

        def w(key: str, p: str = p, layer: dict[str, Any] = layer) -> str:
            return const(p + "w_" + key, layer[key])

        context = node("Attention", [x, w("qkv"), w("qkv_b"), "mask"], p + "attention", domain=_CONTRIB,
                       num_heads=heads)
        attended = node("Add", [node("MatMul", [context, w("out")], p + "out_mm"), w("out_b")], p + "out")
        x = node("LayerNormalization", [node("Add", [x, attended], p + "res1"),
                                        const(p + "n1w", layer["norm1"][0]), const(p + "n1b", layer["norm1"][1])],
                 p + "norm1", axis=-1, epsilon=eps)
        up = node("Add", [node("MatMul", [x, w("up")], p + "up_mm"), w("up_b")], p + "up")
        erf = node("Erf", [node("Div", [up, root2], p + "up_scaled")], p + "erf")
        gelu = node("Mul", [node("Mul", [up, half], p + "up_half"), node("Add", [erf, one], p + "erf1")], p + "gelu")
        down = node("Add", [node("MatMul", [gelu, w("down")], p + "down_mm"), w("down_b")], p + "down")
        x = node("LayerNormalization", [node("Add", [x, down], p + "res2"),
                                        const(p + "n2w", layer["norm2"][0]), const(p + "n2b", layer["norm2"][1])],
                 p + "norm2", axis=-1, epsilon=eps)
    nodes.append(helper.make_node("Identity", [x], ["hidden"], name="hidden"))
    graph = helper.make_graph(
        nodes, "bert_encoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "length", width]),
         helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "length"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "length", width])],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="kenning", opset_imports=[
        helper.make_opsetid("", _OPSET), helper.make_opsetid(_CONTRIB, 1)])
    model.ir_version = min(model.ir_version, 8)  # what onnxruntime releases of the last years read
    return bytes(model.SerializeToString())


class OnnxEncoder:
    """``encode(x, bias) -> hidden`` through an onnxruntime session over the model's layers.

    The graph is written once per model and kept in ``cache_dir`` (``$XDG_CACHE_HOME/kenning``
    or ``~/.cache/kenning``) under ``key``: later loads read it back with onnxruntime alone,
    without importing the ``onnx`` package (several seconds). A cache that cannot be written
    or read is rebuilt in memory.

    ``workers`` (default: the cores, ``threads()``): with more than one, each forward pass
    runs on one thread and ``map`` runs passes side by side, one per core (onnxruntime
    releases the GIL and its sessions may run from several threads at once): on a call's
    short passes that measured as fast or faster per CPU second than each pass split over the
    cores, with no synchronisation inside a pass (docs/benchmarks.md, "Local embedder,
    faster"). With one worker a pass uses every core."""

    def __init__(self, weights: _Weights, heads: int, eps: float, *, key: str | None = None,
                 cache_dir: Path | None = None, int8: bool = False, workers: int | None = None) -> None:
        ort = require("onnxruntime", extra="onnx", purpose="the onnxruntime encoder needs onnxruntime")
        self.workers = max(1, workers if workers is not None else threads())
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1 if self.workers > 1 else threads()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # warnings about unused initializers are noise here
        # no busy-waiting between operators: on a machine other work shares, spinning threads
        # take the cores that work needs (and measured slower under load)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = functools.partial(ort.InferenceSession, sess_options=options, providers=["CPUExecutionProvider"],
                                    disabled_optimizers=_SLOWER)
        suffix = "-int8" if int8 else ""
        path = (cache_dir or _cache_dir()) / f"{key}-v{_VERSION}{suffix}.onnx" if key else None
        if path is not None and path.is_file():
            try:
                self.session = session(path.read_bytes())
                return
            except Exception:  # noqa: BLE001 - a damaged or foreign file: build the graph again
                pass
        graph = _graph(weights, heads, eps)
        if int8:
            graph = _quantized(graph)
        self.session = session(graph)
        if path is not None:
            _save(path, graph)

    def encode(self, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The last layer's hidden states of ``x`` (batch, length, width); ``mask`` (batch,
        length) is 1 on tokens and 0 on padding."""
        (hidden,) = self.session.run(["hidden"], {"x": x, "mask": np.asarray(mask, dtype=np.int32)})
        return np.asarray(hidden)

    def map(self, fn: Callable[[_T], _R], items: Iterable[_T]) -> list[_R]:
        """``[fn(item) for item in items]``, in order, ``workers`` at a time; the first
        exception ``fn`` raised is raised here (after the passes already started end)."""
        items = list(items)
        if self.workers == 1 or len(items) < 2:
            return [fn(item) for item in items]
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="kenning-onnx")
        return list(self._pool.map(fn, items))


#: onnxruntime rewrites left out: its fused residual + layer norm kernel (SkipLayerNormalization)
#: measured ×1.2-1.4 slower per CPU second on this encoder than the Add and LayerNormalization
#: it replaces (onnxruntime 1.32, int8 and float32; the vectors the same to 1e-6)
_SLOWER = ["SkipLayerNormFusion"]

#: bumped when ``_graph`` writes another graph: older cached files are not read
_VERSION = 2


def _quantized(graph: bytes) -> bytes:
    """``graph`` with its weight products in int8, one scale per output column (per-channel:
    per-tensor scales measured cosine 0.955 to the float vectors, per-channel 0.992)."""
    onnx = require("onnx", extra="onnx", purpose="the int8 encoder builds its graph with onnx")
    quantization = require("onnxruntime.quantization", extra="onnx",
                           purpose="the int8 encoder quantizes its graph with onnxruntime")
    quiet = logging.getLogger()  # the quantizer logs advice on the root logger
    level = quiet.level
    quiet.setLevel(max(level, logging.ERROR))
    try:
        with tempfile.TemporaryDirectory(prefix="kenning-int8-") as folder:
            out = Path(folder) / "int8.onnx"
            # the quantizer infers no types through onnxruntime's own operators: they are float
            quantization.quantize_dynamic(onnx.load_from_string(graph), out, per_channel=True,
                                          weight_type=quantization.QuantType.QInt8,
                                          extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
            return out.read_bytes()
    finally:
        quiet.setLevel(level)


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "kenning"


def _save(path: Path, graph: bytes) -> None:
    """Write atomically (another process may load the same model); a read-only disk is fine."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_bytes(graph)
        os.replace(partial, path)
    except OSError:
        pass


def cache_key(directory: Path, *parts: object) -> str:
    """A name for a model's graph: its weights file (path, size, change time) and ``parts``."""
    weights = directory / "model.safetensors"
    stat = weights.stat()
    said = "|".join(map(str, (weights.resolve(), stat.st_size, stat.st_mtime_ns, *parts)))
    return f"{directory.name}-{hashlib.sha256(said.encode()).hexdigest()[:16]}"
