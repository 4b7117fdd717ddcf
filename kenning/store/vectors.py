"""Vector search for the embedded store: one usearch HNSW index per dataset and record kind,
saved beside the database as a derived cache and opened memory-mapped.

The database is the only source of truth. An index covers the rows changed up to its ``stamp``
(a position in the store's ``vector_log``); the store replays the log after that position into
the index (``upsert`` / ``remove``), which copies a mapped index into memory on its first
change and adds to its HNSW graph from then on. The store saves it atomically (write, fsync,
rename) at close, every so many changed rows, and after a ``forget``.

A saved file is trusted only when the database accepted it: its name carries a digest of its
bytes, which the store records in its own database before the file takes its final name, and
which is checked against the bytes each time the file is mapped. A file a database never
recorded (a database restored from a backup beside a newer folder, or one that diverged from
it) or a damaged one is never read: the index is rebuilt from the rows.

A removed vector is not left in a saved file: usearch only marks a removed row and keeps its
vector in the slot, so before each save the free slots are overwritten (``AnnIndex.wipe``).

Keys are the rowids of the rows (the full-text tables rely on the same rowids).

Exact search below ``EXACT_ROWS`` rows (it costs about a millisecond there), and above it
whenever the HNSW graph misses ``MIN_RECALL`` of the exact top 10 at every search breadth we
allow: ``calibrate`` measures that on each index it saves (figures: docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._native import load_usearch

if TYPE_CHECKING:
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
FORMAT = f"usearch-{_DTYPE}-ip-m{_CONNECTIVITY}-v2"
#: keys of the placeholder rows that overwrite free slots (rowids never reach them)
_WIPE_KEY = 1 << 63
#: past this many free slots (or an eighth of the rows) a save rebuilds a compact graph
_WIPE_ROWS = 1024
_READ = 1 << 20
#: a saved index file's name: its prefix (kind, dataset hash, fingerprint), stamp, search breadth, digest
_NAME = re.compile(r"([^-]+-[^-]+-[^-]*-)(\d+)-(\d+)-([0-9a-f]{32})\.usearch")


def to_blob(vector: np.ndarray | None) -> bytes | None:
    if vector is None:
        return None
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes | None) -> np.ndarray | None:
    if blob is None:
        return None
    return np.frombuffer(blob, dtype=np.float32)


@functools.cache
def _usearch() -> type[Index]:
    """usearch's ``Index``, imported on first use (after onnxruntime when it is installed,
    ``kenning/_native.py``): the two took a fifth to a third of a second of every process that
    opened a store, and a recall that searches no vectors (the hashing embedder's hybrid) needs
    neither."""
    return load_usearch().Index


def _new(dimension: int) -> Index:
    return _usearch()(ndim=dimension, metric="ip", dtype=_DTYPE, connectivity=_CONNECTIVITY,
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
        index.expansion_search = breadth  # type: ignore[misc]  # usearch declares its setter apart from the property
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
        #: rows removed since the index was saved (their vectors are still in its slots)
        self.removed = 0

    def __len__(self) -> int:
        return len(self.index)

    def _writable(self) -> Index:
        if self.mapped:  # the file may be replaced and deleted by another process: copy
            self.index, self.mapped = self.index.copy(), False
        return self.index

    def remove(self, keys: Sequence[int]) -> None:
        ids = _keys(keys)
        if len(ids) == 0 or len(self.index) == 0:
            return
        present = ids[np.atleast_1d(np.asarray(self.index.contains(ids), dtype=bool))]
        if len(present):
            self._writable().remove(present)
            self.unsaved += len(present)
            self.removed += len(present)

    def upsert(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        ids = _keys(keys)
        if len(ids) == 0:
            return
        self.remove(keys)
        self._writable().add(ids, np.asarray(vectors, dtype=np.float32), threads=0)
        self.unsaved += len(ids)

    def wipe(self) -> None:
        """Leave no removed row's vector in the index's memory, hence in the file saved from it:
        usearch keeps a removed row's vector in its slot until a later add reuses the slot, and
        reuses free slots oldest first. So as many placeholder rows of zeros as there are free
        slots are added (taking every one) and removed again; past ``_WIPE_ROWS`` free slots the
        graph is rebuilt from the live rows instead (compact, and cheaper than that many adds)."""
        free = int(self.index.stats.nodes) - len(self.index)
        if free <= 0:
            self.removed = 0
            return
        index = self._writable()
        if free > max(_WIPE_ROWS, len(index) // 8):
            keys = np.asarray(index.keys, dtype=np.uint64)
            vectors = np.asarray(index.get(keys), dtype=np.float32).reshape(len(keys), self.dimension)
            self.index = build(self.dimension, keys, vectors)
        else:
            placeholders = np.arange(free, dtype=np.uint64) + np.uint64(_WIPE_KEY)
            index.add(placeholders, np.zeros((free, self.dimension), np.float32), threads=0)
            index.remove(placeholders)
        self.removed = 0

    def search(self, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        limit = min(limit, len(self.index))
        if limit <= 0:
            return []
        exact = self.breadth == 0 or len(self.index) < EXACT_ROWS
        if not exact:
            self.index.expansion_search = max(self.breadth, limit)  # type: ignore[misc]  # as in calibrate
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
    covers: ``<kind>-<dataset hash>-<fingerprint>-<stamp>-<breadth>-<digest>.usearch``; the
    fingerprint hashes the store's id, its embedder and the file format, so a file from another
    embedder or from an earlier database at the same path is never read; the digest hashes the
    file's bytes (see the module's docstring)."""

    def __init__(self, database: str) -> None:
        self.dir = Path(database).expanduser().with_name(Path(database).name + ".vectors")

    @staticmethod
    def prefix(kind: str, dataset: str, fingerprint: str) -> str:
        return f"{kind}-{hashlib.sha1(dataset.encode()).hexdigest()[:16]}-{fingerprint}-"

    def _named(self, pattern: str) -> Iterator[tuple[Path, re.Match[str] | None]]:
        """The files matching ``pattern``, each with its name parsed (None: not a saved index's name)."""
        for path in self.dir.glob(pattern) if self.dir.is_dir() else ():
            yield path, _NAME.fullmatch(path.name)

    def saved(self, prefix: str) -> list[tuple[Path, int, int, str]]:
        """The saved files for a prefix, newest first: path, stamp, search breadth, digest."""
        found = [(p, int(m[2]), int(m[3]), m[4]) for p, m in self._named(prefix + "*.usearch") if m and m[1] == prefix]
        return sorted(found, key=lambda f: (-f[1], f[0].name))

    def latest(self, prefix: str) -> tuple[Path, int, int, str] | None:
        """The newest saved file for a prefix."""
        return next(iter(self.saved(prefix)), None)

    def save(self, index: Index, prefix: str, stamp: int, breadth: int, accept: Callable[[str], None]) -> Path:
        """Write, fsync, digest, ``accept(digest)`` (the store records it), rename; then delete
        the older files of the same kind and dataset (an open memory map of a deleted file
        stays valid). The temporary file carries this process's id, so that one left by a
        killed save is recognised and removed (``sweep``)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".tmp-{os.getpid()}-{uuid.uuid4().hex}.usearch"
        try:
            index.save(str(tmp))
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            digest = file_digest(tmp)
            accept(digest)
            final = self.dir / f"{prefix}{stamp}-{breadth}-{digest}.usearch"
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        self._sync_dir()
        self.drop(prefix, stamp, keep=final)
        return final

    def drop(self, prefix: str, stamp: int, keep: Path | None = None) -> None:
        """Delete the files of the prefix's kind and dataset (any fingerprint) up to ``stamp``."""
        kind_and_dataset = "-".join(prefix.split("-")[:2])
        for path, m in self._named(kind_and_dataset + "-*.usearch"):
            if path != keep and (m is None or int(m[2]) <= stamp):
                path.unlink(missing_ok=True)

    def sweep(self, fingerprint: str | None = None) -> None:
        """Delete what no reader will map: temporary files of processes that are gone (a save
        killed midway), and with ``fingerprint``, the files of any other fingerprint (an
        earlier embedder's or format's)."""
        if not self.dir.is_dir():
            return
        for path in self.dir.glob(".tmp-*.usearch"):
            parts = path.name.split("-")
            pid = int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None
            if pid is None or not _alive(pid):
                path.unlink(missing_ok=True)
        for path, m in self._named("*.usearch") if fingerprint is not None else ():
            if not path.name.startswith(".") and (m is None or m[1].split("-")[2] != fingerprint):
                path.unlink(missing_ok=True)

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
    def open(path: Path, dimension: int, digest: str) -> Index | None:
        """The saved index memory-mapped, or None when the file cannot be trusted: unreadable,
        of another dimension, or its bytes not those its digest names (damaged)."""
        try:
            if file_digest(path) != digest:
                log.warning("damaged vector index file", extra={"path": str(path)})
                return None
            meta = _usearch().metadata(str(path))
            if meta is None or meta["dimensions"] != dimension:
                return None
            index = _usearch().restore(str(path), view=True)
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("unreadable vector index file", extra={"path": str(path), "error": str(exc)})
            return None
        if index is None or index.ndim != dimension:
            return None
        return index


def file_digest(path: Path) -> str:
    """A digest of the file's bytes (sha1, 32 hex digits; about 300 MB/s)."""
    h = hashlib.sha1()
    with open(path, "rb") as fh:
        while block := fh.read(_READ):
            h.update(block)
    return h.hexdigest()[:32]


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True
