"""An in-process vector index rebuilt from the vectors stored in the database.

The database stays the single source of truth: the index is a cache, built on first use from
the stored embeddings and kept up to date by the store after each committed write.

Why it looks the way it does (figures from ``benchmarks/bench_scale.py``, docs/benchmarks.md):

- Rows are kept as int8 codes with one float32 scale per row (a quarter of float32's memory;
  a score moves by about 1e-3 on unit vectors). At a million facts the index holds two million
  rows, and float32 alone would be 2 GB.
- Scores are computed with ``np.einsum``, not ``matrix @ query``: a matrix-vector product is
  memory-bound, and OpenBLAS splits it over threads whose wake-up cost several milliseconds per
  call on small machines (8 ms for 8,000 x 256 on 2 cores, against 0.4 ms for einsum).
- Partitions of ``IVF_MIN_ROWS`` rows or more get an inverted-file index: k-means centroids
  (numpy, trained on a sample), rows listed under their nearest centroid, and a query scans only
  the lists of its ``nprobe`` nearest centroids. It is trained again when the partition has
  doubled; rows added in between are filed under their nearest centroid at the next search.
  ``VectorIndex(dimension, exact=True)`` turns it off (the benchmark uses that to measure the
  approximate index's recall against exact search).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["IVF_MIN_ROWS", "VectorIndex", "from_blob", "to_blob"]

#: partitions this large are searched through the inverted-file index
IVF_MIN_ROWS = 200_000
_TRAIN_SAMPLE = 16_384
_KMEANS_ROUNDS = 8
_ASSIGN_BLOCK = 32_768
_MIN_SCANNED = 8_192  # probe enough lists to score at least this many rows
_SCANNED_SHARE = 0.02  # … and at least this share of the partition


def to_blob(vector: np.ndarray | None) -> bytes | None:
    if vector is None:
        return None
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes | None) -> np.ndarray | None:
    if blob is None:
        return None
    return np.frombuffer(blob, dtype=np.float32)


def _quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and the per-row scale that turns them back into floats."""
    peak = np.abs(vectors).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(vectors / scale[:, None]).astype(np.int8)
    return codes, np.where(peak > 0, scale, 0.0).astype(np.float32)


def _scores(codes: np.ndarray, scales: np.ndarray, query: np.ndarray) -> np.ndarray:
    return np.einsum("ij,j->i", codes, query) * scales


def _key(item_id: str) -> int:
    # Python's string hash is stable within a process, which is all an in-process cache needs.
    return hash(item_id) & 0xFFFF_FFFF_FFFF_FFFF


class _Keys:
    """Which ids a partition holds, in 8 bytes per row: a sorted array of hashes plus a small
    set of recent ones. A hash hit is confirmed against the stored id, so collisions are safe."""

    def __init__(self) -> None:
        self.sorted = np.zeros(0, dtype=np.uint64)
        self.recent: set[int] = set()

    def add(self, key: int) -> None:
        self.recent.add(key)
        if len(self.recent) >= 4096:
            self.sorted = np.union1d(self.sorted, np.fromiter(self.recent, dtype=np.uint64))
            self.recent.clear()

    def may_hold(self, key: int) -> bool:
        if key in self.recent:
            return True
        i = int(np.searchsorted(self.sorted, np.uint64(key)))
        return i < len(self.sorted) and int(self.sorted[i]) == key


class _IVF:
    """Centroids and, per centroid, the rows filed under it (a CSR layout plus recent extras)."""

    def __init__(self, codes: np.ndarray, scales: np.ndarray, n: int, rng: np.random.Generator) -> None:
        nlist = max(16, int(np.sqrt(n)))
        sample = rng.choice(n, size=min(n, _TRAIN_SAMPLE), replace=False)
        data = codes[sample].astype(np.float32) * scales[sample, None]
        self.centroids = _kmeans(data, nlist, rng)
        assign = self.nearest(codes[:n], scales[:n])
        self.order = np.argsort(assign, kind="stable").astype(np.int64)
        self.offsets = np.searchsorted(assign[self.order], np.arange(len(self.centroids) + 1))
        self.extra: list[list[int]] = [[] for _ in range(len(self.centroids))]
        self.trained_rows = self.filed = n

    def nearest(self, codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
        out = np.empty(len(codes), dtype=np.int64)
        for start in range(0, len(codes), _ASSIGN_BLOCK):
            block = codes[start : start + _ASSIGN_BLOCK].astype(np.float32) * scales[start : start + _ASSIGN_BLOCK, None]
            out[start : start + len(block)] = np.argmax(block @ self.centroids.T, axis=1)
        return out

    def file(self, codes: np.ndarray, scales: np.ndarray, n: int) -> None:
        """File the rows added since the last search under their nearest centroid."""
        if self.filed >= n:
            return
        for offset, centroid in enumerate(self.nearest(codes[self.filed : n], scales[self.filed : n])):
            self.extra[centroid].append(self.filed + offset)
        self.filed = n

    def candidates(self, query: np.ndarray, n: int) -> np.ndarray:
        closeness = np.einsum("ij,j->i", self.centroids, query)
        per_list = max(1.0, n / len(self.centroids))
        wanted = max(_MIN_SCANNED, _SCANNED_SHARE * n)
        nprobe = min(len(self.centroids), max(8, int(np.ceil(wanted / per_list))))
        probe = np.argpartition(-closeness, nprobe - 1)[:nprobe]
        parts = [self.order[self.offsets[c] : self.offsets[c + 1]] for c in probe]
        parts += [np.asarray(self.extra[c], dtype=np.int64) for c in probe if self.extra[c]]
        return np.concatenate(parts)


def _kmeans(data: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Spherical k-means (cosine): a few Lloyd rounds from a random start."""
    k = min(k, len(data))
    centroids = data[rng.choice(len(data), size=k, replace=False)].copy()
    for _ in range(_KMEANS_ROUNDS):
        assign = np.argmax(data @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, data)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        centroids = np.where(empty[:, None], centroids, sums / np.where(norms == 0, 1, norms))
    return centroids.astype(np.float32)


class _Partition:
    """The rows of one dataset: int8 codes, scales, ids, a live mask, and maybe an IVF index."""

    def __init__(self, dimension: int, exact: bool) -> None:
        self.codes = np.zeros((64, dimension), dtype=np.int8)
        self.scales = np.zeros(64, dtype=np.float32)
        self.alive = np.zeros(64, dtype=bool)
        self.ids = np.zeros(64, dtype="S32")
        self.n = 0
        self.keys = _Keys()
        self.exact = exact
        self.ivf: _IVF | None = None
        self.rng = np.random.default_rng(0)

    def _grow(self, need: int) -> None:
        size = len(self.codes)
        if need <= size:
            return
        size = max(need, size * 2)
        self.codes = np.resize(self.codes, (size, self.codes.shape[1]))
        self.scales = np.resize(self.scales, size)
        self.alive = np.resize(self.alive, size)
        self.ids = np.resize(self.ids, size)

    def _row_of(self, raw: bytes) -> int | None:
        rows = np.flatnonzero(self.ids[: self.n] == raw)
        live = [r for r in rows if self.alive[r]]
        return int(live[-1]) if live else None

    def add(self, ids: list[str], vectors: np.ndarray) -> None:
        codes, scales = _quantize(vectors)
        raws = [i.encode() for i in ids]
        width = max(len(r) for r in raws)
        if width > self.ids.dtype.itemsize:
            self.ids = self.ids.astype(f"S{width}")
        for item_id, raw, code, scale in zip(ids, raws, codes, scales):
            key = _key(item_id)
            row = self._row_of(raw) if self.keys.may_hold(key) else None
            if row is None or (self.ivf is not None and row < self.ivf.filed):
                if row is not None:  # filed under an old centroid: retire it, append anew
                    self.alive[row] = False
                row = self.n
                self._grow(row + 1)
                self.n += 1
                self.keys.add(key)
            self.codes[row], self.scales[row], self.ids[row], self.alive[row] = code, scale, raw, True

    def remove(self, ids: Sequence[str]) -> None:
        for item_id in ids:
            if self.keys.may_hold(_key(item_id)):
                row = self._row_of(item_id.encode())
                if row is not None:
                    self.alive[row] = False

    def _index(self) -> _IVF | None:
        if self.exact or self.n < IVF_MIN_ROWS:
            return None
        if self.ivf is None or self.n > 2 * self.ivf.trained_rows:
            self.ivf = _IVF(self.codes, self.scales, self.n, self.rng)
        self.ivf.file(self.codes, self.scales, self.n)
        return self.ivf

    def search(self, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        if self.n == 0 or limit <= 0:
            return []
        ivf = self._index()
        if ivf is None:
            rows = np.flatnonzero(self.alive[: self.n])
        else:
            rows = ivf.candidates(query, self.n)
            rows = rows[self.alive[rows]]
        if len(rows) == 0:
            return []
        scores = _scores(self.codes[rows], self.scales[rows], query)
        k = min(limit, len(rows))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(rows) else np.arange(len(rows))
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.ids[rows[i]].decode(), float(scores[i])) for i in top]

    def nbytes(self) -> int:
        return self.codes.nbytes + self.scales.nbytes + self.alive.nbytes + self.ids.nbytes


class VectorIndex:
    """Vectors of one record kind, partitioned by dataset. Thread-safe."""

    def __init__(self, dimension: int, *, exact: bool = False) -> None:
        self.dimension = dimension
        self.exact = exact
        self._parts: dict[str, _Partition] = {}
        self._lock = threading.Lock()

    def add_many(self, rows: Iterable[tuple[str, str, np.ndarray]]) -> None:
        grouped: dict[str, tuple[list[str], list[np.ndarray]]] = {}
        for dataset, item_id, vector in rows:
            ids, vectors = grouped.setdefault(dataset, ([], []))
            ids.append(item_id)
            vectors.append(vector)
        with self._lock:
            for dataset, (ids, vectors) in grouped.items():
                part = self._parts.get(dataset)
                if part is None:
                    part = self._parts[dataset] = _Partition(self.dimension, self.exact)
                part.add(ids, np.asarray(np.vstack(vectors), dtype=np.float32))

    def remove_many(self, ids: Sequence[str]) -> None:
        with self._lock:
            for part in self._parts.values():
                part.remove(ids)

    def drop_dataset(self, dataset: str) -> None:
        with self._lock:
            self._parts.pop(dataset, None)

    def search(self, dataset: str, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        with self._lock:
            part = self._parts.get(dataset)
            if part is None:
                return []
            return part.search(np.asarray(query, dtype=np.float32), limit)

    def nbytes(self) -> int:
        """Memory held by the index arrays (not counting Python object overhead)."""
        with self._lock:
            return sum(p.nbytes() for p in self._parts.values())
