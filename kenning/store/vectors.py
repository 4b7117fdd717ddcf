"""Vector search for the embedded store: per dataset and record kind a usearch HNSW graph, or a
``Flat`` index where search is exact anyway, saved beside the database as a derived cache and
mapped. Keys are rowids. How an index is caught up from ``vector_log``, calibrated, wiped, saved
and trusted: docs/architecture.md, "The SQLite vector index"."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from .._native import load_usearch

if TYPE_CHECKING:
    from usearch.index import Index

__all__ = ["EXACT_ROWS", "FORMAT", "MIN_RECALL", "AnnIndex", "Flat", "IndexFiles", "build", "calibrate", "from_blob", "to_blob"]

log = logging.getLogger(__name__)

#: below this many rows every search is exact
EXACT_ROWS = 20_000
#: an index of this many rows that calibration sends to exact search drops its graph for good
#: (a smaller one may find a breadth again as it grows, and its graph costs little memory)
FLAT_ROWS = 100_000
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
#: a flat index's file starts with this; its removed rows' keys are ``_DEAD`` until it is saved
_MAGIC, _DEAD, _CHUNK = b"kenning-flat-f16", np.uint64(2**64 - 1), 65536
#: a saved index file's name: its prefix (kind, dataset hash, fingerprint), stamp, search breadth, digest
_NAME = re.compile(r"([^-]+-[^-]+-[^-]*-)(\d+)-(\d+)-([0-9a-f]{32})\.usearch")


def to_blob(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else np.frombuffer(blob, dtype=np.float32)


@functools.cache
def _usearch() -> type[Index]:
    """usearch's ``Index``, imported on first use: a recall that searches no vectors needs neither
    it nor onnxruntime (``kenning/_native.py``), a fifth to a third of a second."""
    return load_usearch().Index


def _new(dimension: int) -> Index:
    return _usearch()(ndim=dimension, metric="ip", dtype=_DTYPE, connectivity=_CONNECTIVITY,
                 expansion_add=_EXPANSION_ADD)


def calibrate(index: Index | Flat, rng: np.random.Generator | None = None) -> int:
    """The smallest search breadth at which the graph finds MIN_RECALL of the exact top 10, or 0
    (search exactly). Queries are sums of two stored vectors: near the data, but not on it."""
    if len(index) < EXACT_ROWS or isinstance(index, Flat):
        return 0
    keys = (rng or np.random.default_rng(0)).choice(np.asarray(index.keys, dtype=np.uint64), size=2 * _SAMPLE, replace=False)
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
    """The vectors of one kind in one dataset, mapped from the saved file until the first change
    (which copies a graph into memory). ``unsaved``: rows changed since. The store locks."""

    def __init__(self, dimension: int, stamp: int, index: Index | Flat | None = None, breadth: int = 0,
                 path: Path | None = None) -> None:
        self.dimension, self.stamp, self.breadth = dimension, stamp, breadth  # breadth 0: exact search
        self.index = index if index is not None else _new(dimension)
        self.path = path  # the saved file, mapped while nothing changed since
        self.mapped = path is not None and index is not None
        #: rows removed since the index was saved (a graph keeps their vectors in its slots)
        self.unsaved = self.removed = 0

    def __len__(self) -> int:
        return len(self.index)

    def calibrate(self, flat_from: int = FLAT_ROWS) -> None:
        """Choose the search breadth; an index of ``flat_from`` rows searched exactly drops its graph."""
        self.breadth = calibrate(self.index)
        if not self.breadth and len(self.index) >= max(flat_from, EXACT_ROWS) and not isinstance(self.index, Flat):
            keys = np.asarray(self.index.keys, np.uint64)
            self.index = Flat(keys, np.asarray(self.index.get(keys, dtype="f16")).reshape(-1, self.dimension))

    def _writable(self) -> Index | Flat:
        if self.mapped:  # the file may be replaced and deleted by another process: copy
            self.index, self.mapped = self.index.copy(), False
        return self.index

    def remove(self, keys: Sequence[int]) -> None:
        ids = np.asarray(keys, np.uint64)
        if len(ids) == 0 or len(self.index) == 0:
            return
        present = ids[np.atleast_1d(np.asarray(self.index.contains(ids), dtype=bool))]
        if len(present):
            self._writable().remove(present)
            self.unsaved, self.removed = self.unsaved + len(present), self.removed + len(present)

    def upsert(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        ids = np.asarray(keys, np.uint64)
        if len(ids) == 0:
            return
        self.remove(keys)
        self._writable().add(ids, np.asarray(vectors, dtype=np.float32), threads=0)
        self.unsaved += len(ids)

    def wipe(self) -> None:
        """Leave no removed row's vector in a graph's free slots (hence in its file): fill them with
        placeholder rows of zeros and remove those, or past ``_WIPE_ROWS`` rebuild it compact."""
        free = 0 if isinstance(self.index, Flat) else int(self.index.stats.nodes) - len(self.index)
        if free <= 0:  # a flat index saves only its live rows
            self.removed = 0
            return
        index = cast("Index", self._writable())
        if free > max(_WIPE_ROWS, len(index) // 8):
            keys = np.asarray(index.keys, dtype=np.uint64)
            self.index = build(self.dimension, keys, np.asarray(index.get(keys), np.float32).reshape(len(keys), self.dimension))
        else:
            placeholders = np.arange(free, dtype=np.uint64) + np.uint64(_WIPE_KEY)
            index.add(placeholders, np.zeros((free, self.dimension), np.float32), threads=0)
            index.remove(placeholders)
        self.removed = 0

    def search(self, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        limit = min(limit, len(self.index))
        if limit <= 0:
            return []
        if isinstance(self.index, Flat):
            return self.index.search(query, limit)
        if not (exact := self.breadth == 0 or len(self.index) < EXACT_ROWS):
            self.index.expansion_search = max(self.breadth, limit)  # type: ignore[misc]  # as in calibrate
        matches = self.index.search(query, limit, exact=exact, threads=1)
        return sorted(((int(k), 1.0 - float(d)) for k, d in zip(matches.keys, matches.distances)), key=lambda p: (-p[1], p[0]))


class Flat:
    """Keys and float16 vectors, no graph: mapped from its file (``_MAGIC``, rows, dimension, keys,
    vectors), rows added since in memory; a removed row's key becomes ``_DEAD`` until saved."""

    def __init__(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        self.keys, self.parts, self.ndim = np.array(keys, np.uint64), [vectors], vectors.shape[1]

    @classmethod
    def load(cls, path: Path) -> Flat:
        n, dim = (int(x) for x in np.fromfile(path, np.uint64, 2, offset=len(_MAGIC)))
        keys = np.memmap(path, np.uint64, "r", len(_MAGIC) + 16, (n,))
        return cls(keys, np.memmap(path, np.float16, "r", len(_MAGIC) + 16 + 8 * n, (n, dim)))

    def __len__(self) -> int:
        return int(np.count_nonzero(self.keys != _DEAD))

    def contains(self, ids: np.ndarray) -> np.ndarray:
        return np.isin(ids, self.keys[np.isin(self.keys, ids)])

    def remove(self, ids: np.ndarray) -> None:
        self.keys[np.isin(self.keys, ids)] = _DEAD

    def add(self, ids: np.ndarray, vectors: np.ndarray, threads: int = 0) -> None:
        self.keys = np.concatenate([self.keys, ids])
        self.parts.append(np.asarray(vectors, np.float16).reshape(len(ids), self.ndim))

    def copy(self) -> Flat:  # changes never reach the mapped file
        return self

    def search(self, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """The best ``limit`` live rows by usearch's exact search (the graph's scores), ties by key."""
        if len(self.parts) > 2:  # the rows added since the file was mapped, as one array
            self.parts[1:] = [np.concatenate(self.parts[1:])]
        keys, distances, start = [np.zeros(0, np.uint64)], [np.zeros(0, np.float32)], 0
        for part in self.parts:
            own = self.keys[start : start + len(part)]
            need = min(len(part), limit + int(np.count_nonzero(own == _DEAD)))
            count = min(len(part), need + 1)  # one more, to see whether the last one needed ties
            while count:  # until every row tied with the last one needed is in (ties go by key)
                found = load_usearch().search(part, np.asarray(query, np.float16), count, "ip", exact=True)
                if count == len(part) or found.distances[-1] > found.distances[need - 1]:
                    keys.append(own[np.asarray(found.keys, np.int64)])
                    distances.append(found.distances)
                    break
                count = min(2 * count, len(part))
            start += len(part)
        k, d = np.concatenate(keys), np.concatenate(distances)
        return [(int(k[i]), 1.0 - float(d[i])) for i in np.lexsort((k, d)) if k[i] != _DEAD][:limit]

    def save(self, path: str) -> None:
        """Write the live rows, then map the file (the rename that follows keeps the mapping)."""
        live = self.keys != _DEAD
        with open(path, "wb") as fh:
            fh.write(_MAGIC + np.array([np.count_nonzero(live), self.ndim], np.uint64).tobytes())
            fh.write(self.keys[live].tobytes())
            start = 0
            for part in self.parts:
                for i in range(0, len(part), _CHUNK):  # a slice at a time (the first part is mapped)
                    fh.write(part[i : i + _CHUNK][live[start + i : start + min(i + _CHUNK, len(part))]].tobytes())
                start += len(part)
        saved = Flat.load(Path(path))
        self.keys, self.parts = np.array(saved.keys), saved.parts


def build(dimension: int, keys: np.ndarray, vectors: np.ndarray) -> Index:
    index = _new(dimension)
    if len(keys):
        index.add(np.asarray(keys, np.uint64), np.asarray(vectors, dtype=np.float32), threads=0)
    return index


class IndexFiles:
    """Saved indexes of one store, in ``<database>.vectors/``, named
    ``<kind>-<dataset hash>-<fingerprint>-<stamp>-<breadth>-<digest>.usearch``."""

    def __init__(self, database: str) -> None:
        self.dir = Path(database).expanduser().with_name(Path(database).name + ".vectors")

    @staticmethod
    def prefix(kind: str, dataset: str, fingerprint: str) -> str:
        return f"{kind}-{hashlib.sha1(dataset.encode()).hexdigest()[:16]}-{fingerprint}-"

    def _named(self, pattern: str) -> Iterator[tuple[Path, re.Match[str] | None]]:
        for path in self.dir.glob(pattern) if self.dir.is_dir() else ():
            yield path, _NAME.fullmatch(path.name)

    def saved(self, prefix: str) -> list[tuple[Path, int, int, str]]:
        """The saved files for a prefix, newest first: path, stamp, search breadth, digest."""
        found = [(p, int(m[2]), int(m[3]), m[4]) for p, m in self._named(prefix + "*.usearch") if m and m[1] == prefix]
        return sorted(found, key=lambda f: (-f[1], f[0].name))

    def latest(self, prefix: str) -> tuple[Path, int, int, str] | None:
        return next(iter(self.saved(prefix)), None)

    def save(self, index: Index | Flat, prefix: str, stamp: int, breadth: int, accept: Callable[[str], None]) -> Path:
        """Write (to a temporary file named with this process's id), fsync, digest, ``accept(digest)``
        (the store records it), rename, then delete the older files of the kind and dataset."""
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
        """Delete the temporary files of processes that are gone (a save killed midway), and with
        ``fingerprint``, the files of any other fingerprint (an earlier embedder's or format's)."""
        if not self.dir.is_dir():
            return
        for path in self.dir.glob(".tmp-*.usearch"):
            parts = path.name.split("-")
            if not (len(parts) == 3 and parts[1].isdigit() and _alive(int(parts[1]))):
                path.unlink(missing_ok=True)
        for path, m in self._named("*.usearch") if fingerprint is not None else ():
            if not path.name.startswith(".") and (m is None or m[1].split("-")[2] != fingerprint):
                path.unlink(missing_ok=True)

    def _sync_dir(self) -> None:
        with contextlib.suppress(OSError):  # platforms that cannot open a directory
            fd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    @staticmethod
    def open(path: Path, dimension: int, digest: str) -> Index | Flat | None:
        """The saved index memory-mapped, or None if unreadable, of another dimension or damaged."""
        try:
            if file_digest(path) != digest:
                log.warning("damaged vector index file", extra={"path": str(path)})
                return None
            with open(path, "rb") as fh:
                flat = fh.read(len(_MAGIC)) == _MAGIC
            if not flat and ((meta := _usearch().metadata(str(path))) is None or meta["dimensions"] != dimension):
                return None
            index = Flat.load(path) if flat else _usearch().restore(str(path), view=True)
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
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()[:32]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: no signal sent
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        pass
    return True
