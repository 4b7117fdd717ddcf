"""The offline default embedder: signed feature hashing of words, word pairs and character
trigrams. Deterministic, dependency-free, and good enough for lexical-semantic overlap.
"""

from __future__ import annotations

import re
import zlib

import numpy as np

from ..models import Usage
from .base import Embedder

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that carry no meaning of their own; weighting them down keeps "where does X work"
# close to "X works at Y" rather than to every question.
_STOP = frozenset(
    "a an the and or of to in on at for by with from is are was were be been am do does did "
    "what where when who whom which how why that this these those it its i you he she we they "
    "me him her us them my your his our their as".split()
)


def _stem(word: str) -> str:
    # A tiny suffix stripper: enough to make "works"/"working"/"worked" share a feature.
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


class HashingEmbedder(Embedder):
    batch_size = 1024
    #: its vectors are a hashed bag of the same words the full-text lane ranks: on the LoCoMo
    #: and HotpotQA dev splits recall was better without its lane (docs/benchmarks.md)
    recall_weight = 0.0
    makes_calls = False

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension
        self.name = f"hashing-v1-{dimension}"

    def _features(self, text: str) -> dict[int, float]:
        words = [w for w in _WORD.findall(text.casefold())]
        content = [_stem(w) for w in words if w not in _STOP]
        feats: dict[int, float] = {}

        def add(key: str, weight: float) -> None:
            h = zlib.crc32(key.encode())
            index = h % self.dimension
            sign = 1.0 if (h >> 31) & 1 else -1.0
            feats[index] = feats.get(index, 0.0) + sign * weight

        for word in content:
            add("w:" + word, 1.0)
            padded = f"<{word}>"
            for i in range(len(padded) - 2):
                add("c:" + padded[i : i + 3], 0.25)
        for a, b in zip(content, content[1:]):
            add(f"b:{a} {b}", 0.5)
        return feats

    def embed_batch(self, texts: list[str], usage: Usage) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for index, value in self._features(text).items():
                out[row, index] = value
        usage.embedded_texts += len(texts)
        return out
