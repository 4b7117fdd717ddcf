"""The two provider interfaces. Batching and checks are written once here."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ..models import Usage

__all__ = ["ChatModel", "Embedder"]


class Embedder(ABC):
    """Turns texts into unit-length float32 vectors of a fixed dimension.

    Stored texts go through ``embed`` and questions through ``embed_query``: retrieval models
    trained with a prefix per side (e5's ``"query: "`` / ``"passage: "``, bge's search
    instruction) get it here, once, for every caller. Without prefixes both are the same."""

    #: recorded in the store; a store opened with another name/dimension is an error
    name: str
    dimension: int
    batch_size: int = 256
    #: put before every stored text (``embed``) and every question (``embed_query``)
    document_prefix: str = ""
    query_prefix: str = ""
    #: what recall's vector lane is worth with this embedder, relative to a dense sentence
    #: embedder (1.0); 0 skips the lane
    recall_weight: float = 1.0
    #: ``embed`` makes calls that ``Usage.embedding_calls`` counts (the hashing embedder computes)
    makes_calls: bool = True

    @abstractmethod
    def embed_batch(self, texts: list[str], usage: Usage) -> np.ndarray:
        """Embed one batch (at most ``batch_size`` texts) -> array (len(texts), dimension)."""

    def embed(self, texts: list[str], usage: Usage | None = None) -> np.ndarray:
        """Vectors of stored texts (chunks, entity names, fact sentences)."""
        return self._vectors([self.document_prefix + t for t in texts] if self.document_prefix else texts, usage)

    def embed_query(self, texts: list[str], usage: Usage | None = None) -> np.ndarray:
        """Vectors of questions, to compare with the vectors ``embed`` gave stored texts."""
        return self._vectors([self.query_prefix + t for t in texts] if self.query_prefix else texts, usage)

    def _vectors(self, texts: list[str], usage: Usage | None) -> np.ndarray:
        usage = usage if usage is not None else Usage()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self.embed_batch(texts[i : i + self.batch_size], usage)
            for i in range(0, len(texts), self.batch_size)
        ]
        vectors = np.vstack(parts).astype(np.float32, copy=False)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return vectors / norms

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients or sessions."""


class ChatModel(ABC):
    """A chat model that answers with JSON matching a schema, or with text."""

    name: str

    @abstractmethod
    def complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], schema_name: str, usage: Usage
    ) -> str:
        """One call asking for structured output; returns the raw text of the answer."""

    @abstractmethod
    def complete_text(self, messages: list[dict[str, str]], usage: Usage) -> str:
        """One plain chat call; returns the answer text."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients."""
