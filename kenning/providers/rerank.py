"""Rerankers: score (question, text) pairs together, to reorder recall's first hits.

Off by default (``KENNING_RERANKER`` unset). Two kinds behind one interface:

- ``local:<dir|hub id>``: a cross-encoder (BERT-family sequence classification, e.g.
  ``cross-encoder/ms-marco-MiniLM-L-6-v2`` or ``BAAI/bge-reranker-base``) run by the numpy
  runtime of ``kenning.providers.local``; found or downloaded like the local embedder (a bare
  name means ``cross-encoder/<name>``).
- ``http(s)://…/rerank``: the endpoint shape Cohere, Jina, vLLM and TEI share: ``POST {model,
  query, documents, top_n}`` answered by ``{"results": [{"index", "relevance_score"}]}`` (a bare
  list, or ``score`` for ``relevance_score``, is read too).

Scores are higher for more relevant texts; a single-logit cross-encoder's logit goes through a
sigmoid so both kinds score in [0, 1] where the endpoint does.
"""

from __future__ import annotations

import logging
import math
import time
from abc import ABC, abstractmethod
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from ..errors import ModelError, ModelResponseError
from .retry import RetryPolicy, parse_retry_after

__all__ = ["HttpReranker", "LocalCrossEncoder", "Reranker"]

log = logging.getLogger(__name__)

_RETRY_STATUSES = frozenset({408, 409, 429})


class Reranker(ABC):
    """Scores texts against a question, all at once."""

    name: str

    @abstractmethod
    def score(self, query: str, documents: list[str]) -> list[float]:
        """One relevance score per document, in input order; higher is more relevant."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients."""


class LocalCrossEncoder(Reranker):
    """A BERT-family cross-encoder on the CPU (numpy; ``pip install 'kenning[local]'``)."""

    def __init__(self, path_or_name: str) -> None:
        from .local import BertRuntime, _import_backends, _read_json, find_model_dir

        _import_backends()
        directory, model_name = find_model_dir(path_or_name, org="cross-encoder")
        self.name = f"local:{model_name}"
        self._runtime = BertRuntime(directory, head=True)
        config = _read_json(directory / "config.json")
        self.labels = int(config.get("num_labels") or len(config.get("id2label") or {}) or 1)

    def __repr__(self) -> str:
        return f"LocalCrossEncoder({self.name!r})"

    def score(self, query: str, documents: list[str]) -> list[float]:
        if not documents:
            return []
        encodings = self._runtime.tokenizer.encode_batch([(query, text) for text in documents])
        logits = self._runtime.run(encodings, lambda hidden, _mask: self._runtime.weights.classify(hidden),
                                   self.labels)
        if self.labels == 1:
            return [float(v) for v in 1.0 / (1.0 + np.exp(-logits[:, 0]))]
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return [float(v) for v in exp[:, -1] / exp.sum(axis=1)]  # the last label is "relevant"


class HttpReranker(Reranker):
    """A ``/rerank`` endpoint (Cohere, Jina, vLLM, TEI, or a self-hosted one), with retries of
    rate limits, timeouts and server errors."""

    def __init__(self, url: str, *, model: str | None = None, api_key: str | None = None,
                 timeout: float = 30.0, max_retries: int = 2, backoff: float = 0.5) -> None:
        import httpx  # a dependency of openai, so always installed

        self.url = url
        self.model = model
        self.name = f"{urlsplit(url).hostname or '?'}:{model or 'default'}"
        self._secret = api_key or ""
        self._policy = RetryPolicy(max_retries=max_retries, base_delay=backoff)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self._transport_errors = (httpx.TransportError,)

    def __repr__(self) -> str:
        return f"HttpReranker(host={urlsplit(self.url).hostname!r}, model={self.model!r})"

    def close(self) -> None:
        self._client.close()

    def score(self, query: str, documents: list[str]) -> list[float]:
        if not documents:
            return []
        body: dict[str, Any] = {"query": query, "documents": documents, "top_n": len(documents)}
        if self.model:
            body["model"] = self.model
        return _read_scores(self._post(body), len(documents))

    def _post(self, body: dict[str, Any]) -> Any:
        reason = ""
        for retry in range(self._policy.attempts):
            wait = None
            try:
                response = self._client.post(self.url, json=body)
            except self._transport_errors as exc:
                reason = f"{type(exc).__name__} talking to {urlsplit(self.url).hostname}"
            else:
                if response.status_code == 200:
                    try:
                        return response.json()
                    except ValueError:
                        raise ModelResponseError("the rerank endpoint answered with something not JSON") from None
                reason = f"HTTP {response.status_code}: {self._scrub(response.text[:200])}"
                if response.status_code not in _RETRY_STATUSES and response.status_code < 500:
                    break
                wait = parse_retry_after(response.headers)
            if retry + 1 < self._policy.attempts:
                time.sleep(self._policy.delay(retry, wait))
        raise ModelError(f"rerank call failed: {reason}")

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


def _read_scores(data: Any, count: int) -> list[float]:
    """One score per document from a ``/rerank`` answer; anything else is a typed error."""
    results = data.get("results") if isinstance(data, dict) else data
    if not isinstance(results, list):
        raise ModelResponseError("the rerank endpoint's answer has no 'results' list")
    scores: dict[int, float] = {}
    for item in results:
        index = item.get("index") if isinstance(item, dict) else None
        value = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
        if (not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count
                or not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)):
            raise ModelResponseError(f"the rerank endpoint answered with a malformed result: {str(item)[:100]}")
        scores[index] = float(value)
    if len(scores) != count:
        raise ModelResponseError(f"the rerank endpoint scored {len(scores)} of {count} texts")
    return [scores[i] for i in range(count)]

