"""Retrieval and answer metrics, written out so each can be checked by hand.

- ``recall_at_k``: the share of gold items among the first ``k`` retrieved (the LoCoMo paper's
  "recall accuracy"; HotpotQA / MuSiQue passage recall).
- ``reciprocal_rank``: 1 / rank of the first gold item, 0 when none is retrieved (its mean is MRR).
- ``ndcg_at_k``: binary-relevance NDCG of the first ``k`` (gain 1 / log2(rank + 1), divided by
  the best possible for that many gold items).
- ``any_at_k`` / ``all_at_k``: 1 when some / every gold item is among the first ``k``
  (LongMemEval's session recall_any / recall_all).
- ``exact_match`` / ``token_f1``: the SQuAD answer scores (lower case, no punctuation, articles
  or extra spaces).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["all_at_k", "any_at_k", "exact_match", "ndcg_at_k", "normalize_answer", "recall_at_k", "reciprocal_rank",
           "token_f1"]


def recall_at_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float:
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("recall needs at least one gold item")
    return len(gold_set.intersection(retrieved[:k])) / len(gold_set)


def ndcg_at_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float:
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("NDCG needs at least one gold item")
    dcg = sum(1.0 / math.log2(rank + 1) for rank, item in enumerate(retrieved[:k], start=1) if item in gold_set)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, len(gold_set)) + 1))
    return dcg / ideal


def any_at_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float:
    return float(bool(set(gold).intersection(retrieved[:k])))


def all_at_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float:
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("recall_all needs at least one gold item")
    return float(gold_set <= set(retrieved[:k]))


def reciprocal_rank(retrieved: Sequence[str], gold: Iterable[str]) -> float:
    gold_set = set(gold)
    for rank, item in enumerate(retrieved, start=1):
        if item in gold_set:
            return 1.0 / rank
    return 0.0


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    text = str(text).lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)
