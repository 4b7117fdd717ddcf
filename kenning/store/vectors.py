"""Vector search for the embedded store: one usearch HNSW index per dataset and record kind,
saved beside the database as a derived cache and opened memory-mapped.

The database is the only source of truth. An index covers the rows changed up to its ``stamp``
(a position in the store's ``vector_log``); the store replays the log after that position into
the index (``upsert`` / ``remove``), which copies a mapped index into memory on its first
change and adds to its HNSW graph from then on. The store saves it atomically (write, fsync,
rename) at close and every so many changed rows.

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
    """The vectors of one kind in one dataset: a usearch index, either mapped from its saved
    file (read-only, shared with other processes) or in memory. The first change to a mapped
    index copies it into memory; changes go straight into the HNSW graph, so no query pays for
    a build. ``unsaved`` counts the rows changed since the file was saved.
    Not thread-safe: the store locks."""

    def __init__(self, dimension: int, stamp: int, index: Index | None = None, breadth: int = 0,
                 path: Path | None = None) -> None:
        self.dimension = dimension
        self.stamp = stamp
        self.index = index if index is not None else _new(dimension)
        self.breadth = breadth  # 0: exact search
        self.path = path  # the saved file, mapped while nothing changed since
        self.mapped = path is not None and index is not None
        self.unsaved = 0

    def __len__(self) -> int:
        return len(self.index)

    def _writable(self) -> Index:
        if self.mapped:  # the file may be replaced and deleted by another process: copy
            self.index, self.mapped = self.index.copy(), False
        return self.index

    def remove(self, keys: Sequence[int]) -> None:
        keys = _keys(keys)
        if len(keys) == 0 or len(self.index) == 0:
            return
        present = keys[np.atleast_1d(np.asarray(self.index.contains(keys), dtype=bool))]
        if len(present):
            self._writable().remove(present)
            self.unsaved += len(present)

    def upsert(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        keys = _keys(keys)
        if len(keys) == 0:
            return
        self.remove(keys)
        self._writable().add(keys, np.asarray(vectors, dtype=np.float32), threads=0)
        self.unsaved += len(keys)

    def search(self, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        limit = min(limit, len(self.index))
        if limit <= 0:
            return []
        exact = self.breadth == 0 or len(self.index) < EXACT_ROWS
        if not exact:
            self.index.expansion_search = max(self.breadth, limit)
        matches = self.index.search(query, limit, exact=exact, threads=1)
        found = sorted(((1.0 - float(d), int(k)) for k, d in zip(matches.keys, matches.distances)),
                       key=lambda pair: (-pair[0], pair[1]))
        return [(key, score) for score, key in found]


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
