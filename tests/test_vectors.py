"""The vector index on its own: a saved HNSW index mapped until it changes, changes applied to
an in-memory copy, calibration against exact search, and the files it is saved in."""

from __future__ import annotations

import os

import numpy as np
import pytest

from kenning._native import load_usearch
from kenning.store.vectors import EXACT_ROWS, FLAT_ROWS, MIN_RECALL, AnnIndex, Flat, IndexFiles, build, calibrate, file_digest

Index = load_usearch().Index  # onnxruntime (when installed) before usearch: kenning/_native.py


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms == 0, 1, norms)).astype(np.float32)


def _clustered(n: int, d: int = 32, clusters: int = 40, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(clusters, d))
    return _unit(centers[rng.integers(clusters, size=n)] + 0.35 * rng.normal(size=(n, d)))


def _exact(data: dict[int, np.ndarray], query: np.ndarray, k: int) -> list[int]:
    keys = list(data)
    scores = np.array([data[key] @ query for key in keys])
    return [keys[i] for i in np.argsort(-scores, kind="stable")[:k]]


def test_changes_to_a_mapped_index_go_into_an_in_memory_copy_and_search_like_exact(tmp_path):
    data = _unit(np.random.default_rng(0).normal(size=(600, 24)))
    files = IndexFiles(str(tmp_path / "s.db"))
    path = files.save(build(24, np.arange(400, dtype=np.uint64), data[:400]), "chunk-x-fp-", 3, 0, lambda d: None)
    index = AnnIndex(24, stamp=3, index=IndexFiles.open(path, 24, file_digest(path)), path=path)
    assert index.mapped and index.unsaved == 0
    index.upsert(range(400, 600), data[400:])  # added since the file was saved
    index.upsert([5], data[599:600])  # a saved row re-embedded
    index.remove([7, 450, 12345])  # a saved row, a new row, and a row never seen
    assert not index.mapped and len(IndexFiles.open(path, 24, file_digest(path))) == 400  # the file is untouched
    truth = {i: data[i] for i in range(600) if i not in (7, 450)}
    truth[5] = data[599]
    assert len(index) == len(truth) and index.unsaved == 200 + 2 + 2
    for q in data[::37]:
        got = index.search(q, 10)
        assert [k for k, _ in got] == _exact(truth, q, 10)
        assert got[0][1] == pytest.approx(float(truth[got[0][0]] @ q), abs=2e-3)  # f16 storage
    assert index.search(data[0], 0) == []


def test_zero_vectors_score_zero_and_an_empty_index_finds_nothing():
    index = AnnIndex(3, stamp=0)
    assert index.search(np.ones(3, np.float32), 5) == []
    index.upsert([1, 2], np.array([[1, 0, 0], [0, 0, 0]], np.float32))
    assert index.search(np.array([1, 0, 0], np.float32), 5) == [(1, 1.0), (2, 0.0)]


def test_calibrate_keeps_exact_search_for_small_sets_and_picks_a_breadth_that_holds_recall():
    assert calibrate(build(32, np.arange(500, dtype=np.uint64), _clustered(500))) == 0
    data = _unit(np.random.default_rng(4).normal(size=(EXACT_ROWS + 2000, 8)))
    index = build(8, np.arange(len(data), dtype=np.uint64), data)
    breadth = calibrate(index)
    assert breadth > 0  # 8 dimensions: the graph holds recall
    ann = AnnIndex(8, stamp=0, index=index, breadth=breadth)
    queries = _unit(data[:100] + data[100:200])
    found = 0
    for q in queries:
        got = [k for k, _ in ann.search(q, 10)]
        worst = np.sort(data @ q)[-10]
        found += int(np.sum(data[np.array(got, dtype=np.int64)] @ q >= worst - 1e-3))
    assert found / (10 * len(queries)) >= MIN_RECALL


def test_calibrate_falls_back_to_exact_search_where_the_graph_cannot_hold_recall():
    # Queries between tight clusters: the graph's links stay inside clusters.
    data = _clustered(EXACT_ROWS + 2000)
    assert calibrate(build(32, np.arange(len(data), dtype=np.uint64), data)) == 0


def test_index_files_save_atomically_keep_the_newest_and_refuse_bad_files(tmp_path):
    files = IndexFiles(str(tmp_path / "store.db"))
    assert files.dir == tmp_path / "store.db.vectors" and files.latest("chunk-x-y-") is None
    data = _clustered(50, d=8)
    index = build(8, np.arange(50, dtype=np.uint64), data)
    prefix = IndexFiles.prefix("chunk", "main", "fp")
    accepted = []
    files.save(index, prefix, 10, 0, accepted.append)
    path = files.save(index, prefix, 12, 64, accepted.append)
    other = files.save(index, IndexFiles.prefix("chunk", "other", "fp"), 11, 0, accepted.append)
    digest = file_digest(path)
    assert files.latest(prefix) == (path, 12, 64, digest) and accepted[1] == digest
    assert sorted(p.name for p in files.dir.iterdir()) == sorted([path.name, other.name])  # no temp files
    view = IndexFiles.open(path, 8, digest)
    assert view is not None and len(view) == 50 and IndexFiles.open(path, 9, digest) is None
    path.write_bytes(b"not an index" * 100)
    assert IndexFiles.open(path, 8, digest) is None
    other.write_bytes(other.read_bytes()[:200])  # truncated
    assert IndexFiles.open(other, 8, accepted[2]) is None


def test_index_files_drop_and_sweep_by_the_parts_of_their_names(tmp_path):
    """``drop`` deletes a kind and dataset's files up to a stamp (any fingerprint, and names that
    are not a saved index's); ``sweep`` deletes the files of another fingerprint; neither touches
    another dataset's files or the live temporary file of this process."""
    files = IndexFiles(str(tmp_path / "store.db"))
    index = build(8, np.arange(20, dtype=np.uint64), _clustered(20, d=8))
    mine, old, other = (IndexFiles.prefix("chunk", ds, fp) for ds, fp in (("main", "fp"), ("main", "old"), ("x", "fp")))
    kept = files.save(index, mine, 30, 0, lambda digest: None)
    stale = files.save(index, old, 5, 0, lambda digest: None)
    theirs = files.save(index, other, 1, 0, lambda digest: None)
    odd = files.dir / f"{mine}junk.usearch"
    odd.write_bytes(b"x")
    files.drop(mine, 10)
    assert sorted(files.dir.iterdir()) == sorted([kept, theirs])
    stale = files.save(index, old, 20, 0, lambda digest: None)  # a file of another embedder
    tmp = files.dir / f".tmp-{os.getpid()}-abc.usearch"
    tmp.write_bytes(b"x")
    files.sweep("fp")
    assert sorted(files.dir.iterdir()) == sorted([kept, theirs, tmp]) and not stale.exists()
    assert files.saved(mine) == [(kept, 30, 0, file_digest(kept))]


def test_a_damaged_byte_inside_an_index_file_is_detected(tmp_path):
    """Damage the header's checks cannot see (a vector's bytes) is refused by the digest."""
    files = IndexFiles(str(tmp_path / "store.db"))
    data = _clustered(50, d=8)
    path = files.save(build(8, np.arange(50, dtype=np.uint64), data), IndexFiles.prefix("chunk", "main", "fp"),
                      1, 0, lambda digest: None)
    digest = file_digest(path)
    body = bytearray(path.read_bytes())
    body[len(body) // 2] ^= 0xFF
    path.write_bytes(bytes(body))
    assert Index.restore(str(path), view=True) is not None  # usearch itself maps it happily
    assert IndexFiles.open(path, 8, digest) is None


def test_removed_vectors_are_not_in_the_saved_file(tmp_path):
    """usearch keeps a removed row's vector in its slot; ``wipe`` overwrites every free slot,
    also after several rounds of removals (free slots are reused oldest first)."""
    data = _unit(np.random.default_rng(3).standard_normal((300, 16)).astype(np.float32))
    ann = AnnIndex(16, stamp=0, index=build(16, np.arange(300, dtype=np.uint64), data))
    gone = []
    for round_ in range(3):
        keys = list(range(round_ * 7, round_ * 7 + 5))
        ann.remove(keys)
        ann.upsert([1000 + round_], data[299:300])  # an add between removals reuses one slot
        gone += keys
    ann.wipe()
    files = IndexFiles(str(tmp_path / "store.db"))
    path = files.save(ann.index, IndexFiles.prefix("chunk", "main", "fp"), 1, 0, lambda digest: None)
    raw = path.read_bytes()
    stored = np.frombuffer(raw[: len(raw) // 2 * 2], dtype=np.float16)
    for key in gone:
        assert np.asarray(data[key], np.float16).tobytes() not in raw
    assert stored.size and ann.removed == 0 and len(ann) == 300 - len(gone) + 3
    assert [k for k, _ in ann.search(data[100], 1)] == [100]


def test_an_index_searched_exactly_past_exact_rows_keeps_no_graph_and_finds_the_same_rows(tmp_path):
    """Where calibration says "exact", the graph is dropped for a flat index of the same float16
    vectors: the same rows and scores as the graph's exact search, through changes, a save (the
    file mapped) and a reopening, and the file untouched by changes after it."""
    data = _clustered(EXACT_ROWS + 2000)
    keys = np.arange(len(data), dtype=np.uint64)
    graph, flat = AnnIndex(32, stamp=0, index=build(32, keys, data)), AnnIndex(32, stamp=0, index=build(32, keys, data))
    flat.calibrate(flat_from=FLAT_ROWS)
    assert isinstance(flat.index, Index) and len(data) < FLAT_ROWS  # a smaller graph is kept
    flat.calibrate(flat_from=EXACT_ROWS)
    assert flat.breadth == 0 and isinstance(flat.index, Flat) and len(flat) == len(data)
    queries = _unit(data[:60] + np.random.default_rng(5).normal(size=(60, 32)))
    extra = _unit(np.random.default_rng(6).normal(size=(3, 32)))

    def same(a: AnnIndex, b: AnnIndex) -> None:
        assert len(a) == len(b)
        for q in queries:
            assert a.search(q, 10) == b.search(q, 10)

    same(graph, flat)
    for ann in (graph, flat):
        ann.remove([5, 7, 10**9])
        ann.upsert([9], extra[:1])  # a row re-embedded
        ann.upsert([10**6, 10**6 + 1], extra[1:])
    same(graph, flat)
    files = IndexFiles(str(tmp_path / "s.db"))
    flat.wipe()
    path = files.save(flat.index, "fact-x-fp-", 4, 0, lambda digest: None)
    same(graph, flat)  # now mapped from the file
    assert path.stat().st_size == 32 + (8 + 2 * 32) * len(flat)  # header, keys, float16 vectors: no graph
    digest = file_digest(path)
    opened = AnnIndex(32, stamp=4, index=IndexFiles.open(path, 32, digest), path=path)
    assert isinstance(opened.index, Flat) and opened.mapped and IndexFiles.open(path, 33, digest) is None
    same(graph, opened)
    for ann in (graph, opened):
        ann.remove([10**6, 11])
        ann.upsert([12, 10**6 + 2], extra[:2])
    same(graph, opened)
    assert file_digest(path) == digest and not any(k in (5, 7, 10**6, 11) for k, _ in opened.search(extra[1], 50))
    path.write_bytes(path.read_bytes()[:-7])
    assert IndexFiles.open(path, 32, digest) is None


def test_a_flat_index_breaks_ties_by_key_and_an_empty_one_finds_nothing():
    flat = AnnIndex(4, stamp=0, index=Flat(np.zeros(0, np.uint64), np.zeros((0, 4), np.float16)))
    assert flat.search(np.ones(4, np.float32), 3) == [] and len(flat) == 0
    flat.upsert([30, 10, 20, 40], np.array([[1, 0, 0, 0]] * 3 + [[0, 1, 0, 0]], np.float32))
    assert flat.search(np.array([1, 0, 0, 0], np.float32), 2) == [(10, 1.0), (20, 1.0)]
    flat.remove([10])
    assert flat.search(np.array([1, 0, 0, 0], np.float32), 3) == [(20, 1.0), (30, 1.0), (40, 0.0)]
