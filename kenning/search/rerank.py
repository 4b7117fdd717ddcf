"""The optional reranking stage: a reranker scores the question against the first hits' texts
together and those hits are put in its order. Off unless a reranker is configured."""

from __future__ import annotations

from ..models import Hit
from ..providers.rerank import Reranker

__all__ = ["rerank_hits"]


def rerank_hits(reranker: Reranker, query: str, hits: list[Hit], top_n: int) -> list[Hit]:
    """The first ``top_n`` hits in the reranker's order (each scored by it and marked with the
    ``rerank`` lane), then the rest in their fused order with their fused scores."""
    head, rest = hits[:top_n], hits[top_n:]
    if not head:
        return hits
    scores = reranker.score(query, [hit.text for hit in head])
    order = sorted(range(len(head)), key=lambda i: -scores[i])  # stable: ties keep the fused order
    ranked = [
        head[i].model_copy(update={"score": scores[i], "lanes": [*head[i].lanes, "rerank"]})
        for i in order
    ]
    return ranked + rest
