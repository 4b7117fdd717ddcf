"""Retrieval evaluation on public data sets: loaders, metrics, a BM25 baseline and the runner
behind ``kenning eval``. The data is read from a path the user gives; nothing is bundled."""

from .bm25 import BM25
from .datasets import Collection, Question, Unit, load
from .metrics import exact_match, recall_at_k, reciprocal_rank, token_f1
from .run import EvalConfig, evaluate, summarize

__all__ = [
    "BM25",
    "Collection",
    "EvalConfig",
    "Question",
    "Unit",
    "evaluate",
    "exact_match",
    "load",
    "recall_at_k",
    "reciprocal_rank",
    "summarize",
    "token_f1",
]
