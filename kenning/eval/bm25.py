"""A plain Okapi BM25 ranker over a small in-memory collection: the baseline every retrieval
figure is quoted beside. Pure Python postings, numpy scoring; English stop words removed (the
list recall uses), no stemming: the baseline the recall-quality targets are written against."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from ..text import STOP_WORDS

__all__ = ["BM25", "tokenize"]

_WORD = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.casefold()) if w not in STOP_WORDS]


class BM25:
    """``BM25(documents).rank(query, k)`` gives the indexes of the best ``k`` documents."""

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.size = len(documents)
        self.lengths = np.zeros(self.size, dtype=np.float64)
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for index, text in enumerate(documents):
            counts = Counter(tokenize(text))
            self.lengths[index] = sum(counts.values())
            for term, count in counts.items():
                self.postings[term].append((index, count))
        self.average = float(self.lengths.mean()) if self.size else 0.0

    def idf(self, term: str) -> float:
        df = len(self.postings.get(term, ()))
        return math.log(1 + (self.size - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.float64)
        norm = self.k1 * (1 - self.b + self.b * self.lengths / (self.average or 1.0))
        for term in set(tokenize(query)):
            posting = self.postings.get(term)
            if not posting:
                continue
            docs = np.fromiter((d for d, _ in posting), dtype=np.int64, count=len(posting))
            tf = np.fromiter((c for _, c in posting), dtype=np.float64, count=len(posting))
            out[docs] += self.idf(term) * tf * (self.k1 + 1) / (tf + norm[docs])
        return out

    def rank(self, query: str, k: int) -> list[int]:
        """Indexes of the best ``k`` documents with a positive score, best first (ties by index)."""
        scores = self.scores(query)
        order = np.lexsort((np.arange(self.size), -scores))
        return [int(i) for i in order[:k] if scores[i] > 0]
