"""An in-process vector index rebuilt from the vectors stored in the database.

The database stays the single source of truth: the index is a cache, built on first use from
the stored embeddings and kept up to date by the store after each committed write. Search is
exact (brute-force inner product on unit vectors) over one dataset's rows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["VectorIndex", "from_blob", "to_blob"]


def to_blob(vector: np.ndarray | None) -> bytes | None:
    if vector is None:
        return None
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes | None) -> np.ndarray | None:
    if blob is None:
        return None
    return np.frombuffer(blob, dtype=np.float32)


class _Partition:
    """The rows of one dataset: a growable matrix, ids, and a live mask."""

    def __init__(self, dimension: int) -> None:
        self.matrix = np.zeros((64, dimension), dtype=np.float32)
        self.ids: list[str] = []
        self.alive = np.zeros(64, dtype=bool)
        self.position: dict[str, int] = {}

    def add(self, item_id: str, vector: np.ndarray) -> None:
        if item_id in self.position:
            row = self.position[item_id]
        else:
            row = len(self.ids)
            if row == len(self.matrix):
                self.matrix = np.vstack([self.matrix, np.zeros_like(self.matrix)])
                self.alive = np.concatenate([self.alive, np.zeros_like(self.alive)])
            self.ids.append(item_id)
            self.position[item_id] = row
        self.matrix[row] = vector
        self.alive[row] = True

    def remove(self, item_id: str) -> None:
        row = self.position.pop(item_id, None)
        if row is not None:
            self.alive[row] = False

    def search(self, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        n = len(self.ids)
        if n == 0 or limit <= 0:
            return []
        scores = self.matrix[:n] @ query
        scores = np.where(self.alive[:n], scores, -np.inf)
        k = min(limit, n)
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        top = top[np.argsort(-scores[top])]
        return [(self.ids[i], float(scores[i])) for i in top if np.isfinite(scores[i])]


class VectorIndex:
    """Vectors of one record kind, partitioned by dataset. Thread-safe."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._parts: dict[str, _Partition] = {}
        self._lock = threading.Lock()

    def add_many(self, rows: Iterable[tuple[str, str, np.ndarray]]) -> None:
        with self._lock:
            for dataset, item_id, vector in rows:
                part = self._parts.get(dataset)
                if part is None:
                    part = self._parts[dataset] = _Partition(self.dimension)
                part.add(item_id, vector)

    def remove_many(self, ids: Sequence[str]) -> None:
        with self._lock:
            for part in self._parts.values():
                for item_id in ids:
                    part.remove(item_id)

    def drop_dataset(self, dataset: str) -> None:
        with self._lock:
            self._parts.pop(dataset, None)

    def search(self, dataset: str, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        with self._lock:
            part = self._parts.get(dataset)
            if part is None:
                return []
            return part.search(np.asarray(query, dtype=np.float32), limit)
