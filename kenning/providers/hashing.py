"""The offline default embedder: signed feature hashing of words, word pairs and character
trigrams. Deterministic, dependency-free, and good enough for lexical-semantic overlap.
"""

from __future__ import annotations

import re
import zlib
from itertools import chain

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
        self._words: dict[str, tuple[str, tuple[int, ...], tuple[float, ...]]] = {}
        #: a pair of stems and its feature's slot and value
        self._pairs: dict[tuple[str, str], tuple[int, float]] = {}

    def _slot(self, key: str, weight: float) -> tuple[int, float]:
        h = zlib.crc32(key.encode())
        return h % self.dimension, (1.0 if (h >> 31) & 1 else -1.0) * weight

    def _word(self, word: str) -> tuple[str, tuple[int, ...], tuple[float, ...]]:
        """A word's stem and the slots and values its features add."""
        known = self._words.get(word)
        if known is None:
            stem = _stem(word)
            padded = f"<{stem}>"
            slots = (self._slot("w:" + stem, 1.0),
                     *(self._slot("c:" + padded[i : i + 3], 0.25) for i in range(len(padded) - 2)))
            known = stem, tuple(i for i, _ in slots), tuple(v for _, v in slots)
            if len(self._words) >= _CACHED_WORDS:
                self._words.clear()
            self._words[word] = known
        return known

    def _features(self, text: str) -> dict[int, float]:
        """``text``'s features: slot -> summed weight (what ``embed_batch`` counts)."""
        slots: list[int] = []
        values: list[float] = []
        self._add_features(text, slots, values)
        feats: dict[int, float] = {}
        for index, value in zip(slots, values):
            feats[index] = feats.get(index, 0.0) + value
        return feats

    def _add_features(self, text: str, slots: list[int], values: list[float]) -> None:
        """Append the slots and values of ``text``'s features: its words' (stem and character
        trigrams) and its word pairs'."""
        content = [self._word(w) for w in _WORD.findall(text.casefold()) if w not in _STOP]
        slots.extend(chain.from_iterable(c[1] for c in content))
        values.extend(chain.from_iterable(c[2] for c in content))
        stems = [c[0] for c in content]
        pairs = self._pairs
        for pair in zip(stems, stems[1:]):
            known = pairs.get(pair)
            if known is None:
                known = self._slot(f"b:{pair[0]} {pair[1]}", 0.5)
                if len(pairs) >= _CACHED_WORDS:
                    pairs.clear()
                pairs[pair] = known
            slots.append(known[0])
            values.append(known[1])

    def embed_batch(self, texts: list[str], usage: Usage) -> np.ndarray:
        # every feature of every text in one weighted count: a text's row is the sum of its
        # features' signed weights, multiples of 1/4, so the order of the sums changes nothing
        slots: list[int] = []
        values: list[float] = []
        sizes = np.zeros(len(texts), dtype=np.int64)
        for row, text in enumerate(texts):
            self._add_features(text, slots, values)
            sizes[row] = len(slots)
        rows = np.repeat(np.arange(len(texts), dtype=np.int64) * self.dimension, np.diff(sizes, prepend=0))
        counts = np.bincount(np.asarray(slots, dtype=np.int64) + rows, weights=np.asarray(values, dtype=np.float64),
                             minlength=len(texts) * self.dimension)
        out = counts.astype(np.float32).reshape(len(texts), self.dimension)
        usage.embedded_texts += len(texts)
        return out
