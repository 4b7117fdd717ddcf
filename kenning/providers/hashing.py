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


#: a feature's weight by its kind and sign: a word's stem (±1), a character trigram (±1/4), a
#: pair of stems (±1/2). A feature is one code, ``kind * dimension + slot``: a text's vector
#: is its codes counted, times these weights (exact: small counts of multiples of 1/4)
_WEIGHTS = (1.0, -1.0, 0.25, -0.25, 0.5, -0.5)
_STEM, _TRIGRAM, _PAIR = 0, 2, 4


class HashingEmbedder(Embedder):
    batch_size = 1024
    #: its vectors are a hashed bag of the same words the full-text lane ranks: on the LoCoMo
    #: and HotpotQA dev splits recall was better without its lane (docs/benchmarks.md)
    recall_weight = 0.0
    makes_calls = False

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension
        self.name = f"hashing-v1-{dimension}"
        #: a word's stem and the codes of the features it adds (words repeat: most texts hash
        #: nothing new)
        self._words: dict[str, tuple[str, tuple[int, ...]]] = {}
        #: a pair of stems and its feature's code
        self._pairs: dict[tuple[str, str], int] = {}
        self._weights = np.repeat(np.asarray(_WEIGHTS), dimension)

    def _code(self, key: str, kind: int) -> int:
        """The code of a feature of ``kind`` (``_STEM``, ``_TRIGRAM``, ``_PAIR``): its slot,
        and its sign from the hash's top bit."""
        h = zlib.crc32(key.encode())
        return (kind + (0 if (h >> 31) & 1 else 1)) * self.dimension + h % self.dimension

    def _word(self, word: str) -> tuple[str, tuple[int, ...]]:
        """A word's stem and the codes of its features."""
        known = self._words.get(word)
        if known is None:
            stem = _stem(word)
            padded = f"<{stem}>"
            known = stem, (self._code("w:" + stem, _STEM),
                           *(self._code("c:" + padded[i : i + 3], _TRIGRAM) for i in range(len(padded) - 2)))
            if len(self._words) >= _CACHED_WORDS:
                self._words.clear()
            self._words[word] = known
        return known

    def _features(self, text: str) -> dict[int, float]:
        """``text``'s features: slot -> summed weight (what ``embed_batch`` counts)."""
        codes: list[int] = []
        self._add_codes(text, codes)
        feats: dict[int, float] = {}
        for code in codes:
            kind, index = divmod(code, self.dimension)
            feats[index] = feats.get(index, 0.0) + _WEIGHTS[kind]
        return feats

    def _add_codes(self, text: str, codes: list[int]) -> None:
        """Append the codes of ``text``'s features: its words' (stem and character trigrams)
        and its word pairs'."""
        known = self._words.get
        content = [known(w) or self._word(w) for w in _WORD.findall(text.casefold()) if w not in _STOP]
        codes.extend(chain.from_iterable([c[1] for c in content]))
        stems = [c[0] for c in content]
        pairs = self._pairs
        for pair in zip(stems, stems[1:]):
            code = pairs.get(pair)
            if code is None:
                code = self._code(f"b:{pair[0]} {pair[1]}", _PAIR)
                if len(pairs) >= _CACHED_WORDS:
                    pairs.clear()
                pairs[pair] = code
            codes.append(code)

    def embed_batch(self, texts: list[str], usage: Usage) -> np.ndarray:
        # every feature of every text in one count: a text's row is its codes counted, times
        # their weights (exact, so the order of the sums changes nothing)
        codes: list[int] = []
        sizes = np.zeros(len(texts), dtype=np.int64)
        for row, text in enumerate(texts):
            self._add_codes(text, codes)
            sizes[row] = len(codes)
        width = len(_WEIGHTS) * self.dimension
        rows = np.repeat(np.arange(len(texts), dtype=np.int64) * width, np.diff(sizes, prepend=0))
        counts = np.bincount(np.asarray(codes, dtype=np.int64) + rows, minlength=len(texts) * width)
        weighted = counts.reshape(len(texts), len(_WEIGHTS), self.dimension) * self._weights.reshape(len(_WEIGHTS), -1)
        out = weighted.sum(axis=1).astype(np.float32)
        usage.embedded_texts += len(texts)
        return out
