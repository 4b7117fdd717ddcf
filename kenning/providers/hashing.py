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


_CACHED_WORDS = 100_000


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
        #: a word's stem and the features it adds (words repeat: most texts hash nothing new)
        self._words: dict[str, tuple[str, tuple[tuple[int, float], ...]]] = {}

    def _slot(self, key: str, weight: float) -> tuple[int, float]:
        h = zlib.crc32(key.encode())
        return h % self.dimension, (1.0 if (h >> 31) & 1 else -1.0) * weight

    def _word(self, word: str) -> tuple[str, tuple[tuple[int, float], ...]]:
        known = self._words.get(word)
        if known is None:
            stem = _stem(word)
            padded = f"<{stem}>"
            known = stem, (self._slot("w:" + stem, 1.0),
                           *(self._slot("c:" + padded[i : i + 3], 0.25) for i in range(len(padded) - 2)))
            if len(self._words) >= _CACHED_WORDS:
                self._words.clear()
            self._words[word] = known
        return known

    def _features(self, text: str) -> dict[int, float]:
        content = [self._word(w) for w in _WORD.findall(text.casefold()) if w not in _STOP]
        feats: dict[int, float] = {}
        for _, slots in content:
            for index, value in slots:
                feats[index] = feats.get(index, 0.0) + value
        for (a, _), (b, _) in zip(content, content[1:]):
            index, value = self._slot(f"b:{a} {b}", 0.5)
            feats[index] = feats.get(index, 0.0) + value
        return feats

    def embed_batch(self, texts: list[str], usage: Usage) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            feats = self._features(text)
            out[row, list(feats)] = list(feats.values())
        usage.embedded_texts += len(texts)
        return out
