"""Vector search for the embedded store: one usearch HNSW index per dataset and record kind,
saved beside the database as a derived cache and opened memory-mapped.

The database is the only source of truth. An index covers the rows changed up to its ``stamp``
(a position in the store's ``vector_log``); the store replays the log after that position into
the index (``upsert`` / ``remove``). Changes since the saved file live in memory: the rows
added or replaced since (searched exactly, with numpy) and the saved keys that were replaced or
deleted (hidden from results). When they grow past a share of the index the store merges them
into a new file (``merged``), saved atomically (write, fsync, rename) and mapped again.

Keys are the rowids of the rows (the full-text tables rely on the same rowids).

Exact search below ``EXACT_ROWS`` rows (it costs about a millisecond there), and above it
whenever the HNSW graph misses ``MIN_RECALL`` of the exact top 10 at every search breadth we
allow: ``calibrate`` measures that on each index it saves (figures: docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from usearch.index import Index

__all__ = ["EXACT_ROWS", "FORMAT", "MIN_RECALL", "AnnIndex", "IndexFiles", "build", "calibrate", "from_blob", "to_blob"]

log = logging.getLogger(__name__)

#: below this many rows every search is exact
EXACT_ROWS = 20_000
#: the HNSW graph is used only where it finds this share of the exact top 10
MIN_RECALL = 0.95
#: calibration queries lie nearer the data than real questions do: the margin keeps the real
#: questions' recall above MIN_RECALL (``bench_scale.py --index-recall`` measures it)
_MARGIN = 0.03
_BREADTHS = (64, 128, 256, 512)  # expansion_search values tried by calibrate, cheapest first
_SAMPLE = 100  # calibration queries
_CONNECTIVITY = 16
_EXPANSION_ADD = 64
_DTYPE = "f16"
FORMAT = f"usearch-{_DTYPE}-ip-m{_CONNECTIVITY}-v1"


def to_blob(vector: np.ndarray | None) -> bytes | None:
    if vector is None:
        return None
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes | None) -> np.ndarray | None:
    if blob is None:
        return None
    return np.frombuffer(blob, dtype=np.float32)


def _new(dimension: int) -> Index:
    return Index(ndim=dimension, metric="ip", dtype=_DTYPE, connectivity=_CONNECTIVITY,
                 expansion_add=_EXPANSION_ADD)


def _keys(keys: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.asarray(keys, dtype=np.uint64)


def calibrate(index: Index, rng: np.random.Generator | None = None) -> int:
    """The smallest search breadth at which the graph finds MIN_RECALL of the exact top 10, or 0
    (search exactly). Queries are sums of two stored vectors: near the data, but not on it."""
    if len(index) < EXACT_ROWS:
        return 0
    rng = rng or np.random.default_rng(0)
    keys = rng.choice(np.asarray(index.keys, dtype=np.uint64), size=2 * _SAMPLE, replace=False)
    vectors = np.asarray(index.get(keys), dtype=np.float32)
    queries = vectors[::2] + vectors[1::2]
    queries /= np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    worst = index.search(queries, 10, exact=True).distances[:, -1:]  # ties count as found
    for breadth in _BREADTHS:
        index.expansion_search = breadth
        got = index.search(queries, 10).distances
        if float(np.mean(got <= worst + 1e-4)) >= MIN_RECALL + _MARGIN:
            return breadth
    return 0


class AnnIndex:
    """The vectors of one kind in one dataset: a saved base (memory-mapped, or in memory for
    ``:memory:`` stores) plus the changes since it was saved: rows added or replaced since (the
    delta, searched exactly) and saved keys hidden because they were replaced or deleted.
    Not thread-safe: the store locks."""

    def __init__(self, dimension: int, stamp: int, base: Index | None = None, breadth: int = 0,
                 path: Path | None = None) -> None:
        self.dimension = dimension
        self.stamp = stamp
        self.base = base
        self.breadth = breadth  # 0: exact search
        self.path = path  # the file the base is mapped from
        self.hidden: set[int] = set()
        self._rows: dict[int, int] = {}  # delta key -> row of _vectors
        self._keys = np.zeros(64, dtype=np.uint64)
        self._vectors = np.zeros((64, dimension), dtype=np.float32)

    def __len__(self) -> int:
        return self.base_rows - len(self.hidden) + len(self._rows)

    @property
    def base_rows(self) -> int:
        return len(self.base) if self.base is not None else 0

    @property
    def pending(self) -> tuple[int, int]:
        """Rows added or replaced since the base was saved, and saved rows hidden."""
        return len(self._rows), len(self.hidden)

    def _in_base(self, keys: np.ndarray) -> np.ndarray:
        if self.base_rows == 0 or len(keys) == 0:
            return np.zeros(len(keys), dtype=bool)
        return np.atleast_1d(np.asarray(self.base.contains(keys), dtype=bool))

    def remove(self, keys: Sequence[int]) -> None:
        keys = _keys(keys)
        self.hidden.update(int(k) for k in keys[self._in_base(keys)])
        for key in map(int, keys):
            row = self._rows.pop(key, None)
            if row is None:
                continue
            last = len(self._rows)  # move the last row into the freed one
            if row != last:
                moved = int(self._keys[last])
                self._keys[row], self._vectors[row] = moved, self._vectors[last]
                self._rows[moved] = row

    def upsert(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        keys = _keys(keys)
        self.remove(keys)
        n, need = len(self._rows), len(self._rows) + len(keys)
        if need > len(self._keys):
            size = max(need, 2 * len(self._keys))
            self._keys = np.resize(self._keys, size)
            self._vectors = np.resize(self._vectors, (size, self.dimension))
        self._keys[n:need] = keys
        self._vectors[n:need] = vectors
        self._rows.update((int(k), n + i) for i, k in enumerate(keys))

    def search(self, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        if limit <= 0:
            return []
        found: list[tuple[float, int]] = []
        if self.base_rows > len(self.hidden):
            want = min(self.base_rows, limit + len(self.hidden))
            exact = self.breadth == 0 or self.base_rows < EXACT_ROWS
            if not exact:
                self.base.expansion_search = max(self.breadth, want)
            matches = self.base.search(query, want, exact=exact, threads=1)
            found = [(1.0 - float(d), int(k)) for k, d in zip(matches.keys, matches.distances)
                     if int(k) not in self.hidden]
        if self._rows:
            # einsum, not matrix @ vector: OpenBLAS threads cost milliseconds to wake on small machines
            scores = np.einsum("ij,j->i", self._vectors[: len(self._rows)], query)
            top = np.argsort(-scores, kind="stable")[:limit]
            found += [(float(scores[i]), int(self._keys[i])) for i in top]
        found.sort(key=lambda pair: -pair[0])
        return [(key, score) for score, key in found[:limit]]

    def merged(self, base: Index | None) -> Index:
        """An in-memory index of every current row: ``base`` (this index's saved base, loaded
        into memory, or None) with the hidden keys removed and the delta added."""
        out = base if base is not None else _new(self.dimension)
        if self.hidden:
            out.remove(_keys(sorted(self.hidden)))
        if self._rows:
            n = len(self._rows)
            out.add(self._keys[:n].copy(), self._vectors[:n], threads=0)
        return out


def build(dimension: int, keys: np.ndarray, vectors: np.ndarray) -> Index:
    index = _new(dimension)
    if len(keys):
        index.add(_keys(keys), np.asarray(vectors, dtype=np.float32), threads=0)
    return index


class IndexFiles:
    """Saved indexes of one store, in ``<database>.vectors/``. A file's name carries what it
    covers: ``<kind>-<dataset hash>-<fingerprint>-<stamp>-<breadth>.usearch``; the fingerprint
    hashes the store's id, its embedder and the file format, so a file from another embedder or
    from an earlier database at the same path is never read."""

    def __init__(self, database: str) -> None:
        self.dir = Path(database).expanduser().with_name(Path(database).name + ".vectors")

    @staticmethod
    def prefix(kind: str, dataset: str, fingerprint: str) -> str:
        return f"{kind}-{hashlib.sha1(dataset.encode()).hexdigest()[:16]}-{fingerprint}-"

    def latest(self, prefix: str) -> tuple[Path, int, int] | None:
        """The newest saved file for a prefix: its path, stamp and search breadth."""
        pattern = re.compile(re.escape(prefix) + r"(\d+)-(\d+)\.usearch")
        best = None
        for path in self.dir.glob(prefix + "*.usearch") if self.dir.is_dir() else ():
            m = pattern.fullmatch(path.name)
            if m and (best is None or int(m[1]) > best[1]):
                best = (path, int(m[1]), int(m[2]))
        return best

    def save(self, index: Index, prefix: str, stamp: int, breadth: int) -> Path:
        """Write, fsync, rename; then delete the older files of the same kind and dataset (an
        open memory map of a deleted file stays valid)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        final = self.dir / f"{prefix}{stamp}-{breadth}.usearch"
        tmp = self.dir / f".tmp-{uuid.uuid4().hex}.usearch"
        try:
            index.save(str(tmp))
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        self._sync_dir()
        kind_and_dataset = prefix.split("-")[:2]
        for path in self.dir.glob("-".join(kind_and_dataset) + "-*.usearch"):
            if path != final and self._stamp(path) <= stamp:
                path.unlink(missing_ok=True)
        return final

    @staticmethod
    def _stamp(path: Path) -> int:
        parts = path.stem.split("-")
        return int(parts[3]) if len(parts) == 5 and parts[3].isdigit() else -1

    def _sync_dir(self) -> None:
        try:
            fd = os.open(self.dir, os.O_RDONLY)
        except OSError:  # platforms that cannot open a directory
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @staticmethod
    def open(path: Path, dimension: int) -> Index | None:
        """The saved index memory-mapped, or None when the file cannot be trusted."""
        try:
            meta = Index.metadata(str(path))
            if meta is None or meta["dimensions"] != dimension:
                return None
            index = Index.restore(str(path), view=True)
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("unreadable vector index file", extra={"path": str(path), "error": str(exc)})
            return None
        if index is None or index.ndim != dimension:
            return None
        return index
