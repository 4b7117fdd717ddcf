"""Tiny random BERT-family models written to disk, and a plain reference forward pass.

``write_model`` writes what a real sentence-transformers or cross-encoder directory holds
(``config.json``, ``model.safetensors``, ``tokenizer.json``, optionally ``1_Pooling`` and
``config_sentence_transformers.json``), so tests load it through kenning's real loading code.
``reference_hidden`` recomputes the encoder the slow, obvious way (one text at a time, one head
at a time, exact erf), independent of kenning's batched numpy runtime.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["WORDS", "reference_hidden", "reference_logits", "write_model"]

WORDS = (
    "alice bob works at acme lives in paris berlin the who where does what query passage "
    "represent this sentence for searching relevant passages likes tea coffee"
).split()
WIDTH, HEADS, LAYERS, INNER, POSITIONS = 16, 2, 2, 32, 64


def _tokenizer(roberta: bool) -> Any:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    specials = ["<s>", "<pad>", "</s>", "<unk>"] if roberta else ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    vocab = {token: i for i, token in enumerate([*specials, *WORDS, ":"])}
    unk = "<unk>" if roberta else "[UNK]"
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token=unk))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    cls, sep = ("<s>", "</s>") if roberta else ("[CLS]", "[SEP]")
    pair = f"{cls} $A {sep} {sep} $B:1 {sep}:1" if roberta else f"{cls} $A {sep} $B:1 {sep}:1"
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=pair, special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])]
    )
    return tokenizer


def write_model(directory: Path, *, kind: str = "bert", head: bool = False, pooling: str | None = "cls",
                prompts: dict[str, str] | None = None, seed: int = 0) -> Path:
    """A random model of ``kind`` (``bert`` or ``xlm-roberta``) in ``directory``; ``head`` adds a
    one-logit sequence-classification head (a cross-encoder)."""
    roberta = kind != "bert"
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(roberta)
    tokenizer.save(str(directory / "tokenizer.json"))
    vocab = tokenizer.get_vocab_size()

    def rand(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.5, size=shape).astype(np.float32)

    root = ("roberta." if roberta else "bert.") if head else ""
    t: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": rand(vocab, WIDTH),
        "embeddings.position_embeddings.weight": rand(POSITIONS, WIDTH),
        "embeddings.token_type_embeddings.weight": rand(1 if roberta else 2, WIDTH),
        "embeddings.LayerNorm.weight": 1 + rand(WIDTH) / 5, "embeddings.LayerNorm.bias": rand(WIDTH) / 5,
    }
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for name, shape in (("attention.self.query", (WIDTH, WIDTH)), ("attention.self.key", (WIDTH, WIDTH)),
                            ("attention.self.value", (WIDTH, WIDTH)), ("attention.output.dense", (WIDTH, WIDTH)),
                            ("intermediate.dense", (INNER, WIDTH)), ("output.dense", (WIDTH, INNER))):
            t[p + name + ".weight"], t[p + name + ".bias"] = rand(*shape), rand(shape[0]) / 5
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + name + ".weight"], t[p + name + ".bias"] = 1 + rand(WIDTH) / 5, rand(WIDTH) / 5
    tensors = {root + k: v for k, v in t.items()}
    if head and roberta:
        tensors |= {"classifier.dense.weight": rand(WIDTH, WIDTH), "classifier.dense.bias": rand(WIDTH),
                    "classifier.out_proj.weight": rand(1, WIDTH), "classifier.out_proj.bias": rand(1)}
    elif head:
        tensors |= {"bert.pooler.dense.weight": rand(WIDTH, WIDTH), "bert.pooler.dense.bias": rand(WIDTH),
                    "classifier.weight": rand(1, WIDTH), "classifier.bias": rand(1)}
    from safetensors.numpy import save_file

    save_file(tensors, str(directory / "model.safetensors"))
    config = {"model_type": kind, "hidden_size": WIDTH, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS,
              "intermediate_size": INNER, "max_position_embeddings": POSITIONS, "layer_norm_eps": 1e-12,
              "vocab_size": vocab, "pad_token_id": 1 if roberta else 0, "type_vocab_size": 1 if roberta else 2}
    if head:
        config |= {"num_labels": 1, "id2label": {"0": "LABEL_0"}}
    (directory / "config.json").write_text(json.dumps(config))
    if pooling:
        (directory / "1_Pooling").mkdir(exist_ok=True)
        (directory / "1_Pooling" / "config.json").write_text(json.dumps(
            {"word_embedding_dimension": WIDTH, "pooling_mode_cls_token": pooling == "cls",
             "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": pooling == "max"}))
    if prompts is not None:
        (directory / "config_sentence_transformers.json").write_text(json.dumps({"prompts": prompts}))
    return directory


def _norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / math.sqrt(x.var() + 1e-12) * w + b


def reference_hidden(directory: Path, text: str | tuple[str, str]) -> np.ndarray:
    """Hidden states (tokens x width) of one text or pair, computed plainly."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    config = json.loads((directory / "config.json").read_text())
    roberta = config["model_type"] != "bert"
    encoding = Tokenizer.from_file(str(directory / "tokenizer.json")).encode(*([text] if isinstance(text, str) else text))
    raw = load_file(str(directory / "model.safetensors"))
    prefix = next(p for p in ("bert.", "roberta.", "") if p + "embeddings.word_embeddings.weight" in raw)
    w = {k[len(prefix):]: v.astype(np.float64) for k, v in raw.items() if k.startswith(prefix)}
    offset = 2 if roberta else 0
    types = [0 if roberta else t for t in encoding.type_ids]
    x = np.stack([
        _norm(w["embeddings.word_embeddings.weight"][i] + w["embeddings.position_embeddings.weight"][offset + n]
              + w["embeddings.token_type_embeddings.weight"][types[n]],
              w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        for n, i in enumerate(encoding.ids)
    ])
    size = WIDTH // HEADS
    erf = np.vectorize(math.erf)
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."

        def lin(v: np.ndarray, name: str) -> np.ndarray:
            return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q, k, v = (lin(x, f"attention.self.{n}") for n in ("query", "key", "value"))
        context = np.zeros_like(x)
        for h in range(HEADS):
            s = slice(h * size, (h + 1) * size)
            scores = q[:, s] @ k[:, s].T / math.sqrt(size)
            attn = np.exp(scores - scores.max(axis=1, keepdims=True))
            context[:, s] = (attn / attn.sum(axis=1, keepdims=True)) @ v[:, s]
        x = np.stack([_norm(r, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
                      for r in x + lin(context, "attention.output.dense")])
        up = lin(x, "intermediate.dense")
        x = np.stack([_norm(r, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
                      for r in x + lin(0.5 * up * (1 + erf(up / math.sqrt(2))), "output.dense")])
    return x


def reference_logits(directory: Path, query: str, document: str) -> float:
    """The one logit of a tiny cross-encoder for (query, document)."""
    from safetensors.numpy import load_file

    raw = {k: v.astype(np.float64) for k, v in load_file(str(directory / "model.safetensors")).items()}
    first = reference_hidden(directory, (query, document))[0]
    if "classifier.weight" in raw:
        pooled = np.tanh(raw["bert.pooler.dense.weight"] @ first + raw["bert.pooler.dense.bias"])
        return float((raw["classifier.weight"] @ pooled + raw["classifier.bias"])[0])
    dense = np.tanh(raw["classifier.dense.weight"] @ first + raw["classifier.dense.bias"])
    return float((raw["classifier.out_proj.weight"] @ dense + raw["classifier.out_proj.bias"])[0])
