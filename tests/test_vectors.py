"""The vector index on its own: a saved HNSW base with changes held beside it (added rows,
hidden rows), merging, calibration against exact search, and the files it is saved in."""

from __future__ import annotations

import numpy as np
import pytest

from kenning.store.vectors import EXACT_ROWS, MIN_RECALL, AnnIndex, IndexFiles, build, calibrate


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


def test_base_delta_and_hidden_rows_search_like_exact():
    data = _unit(np.random.default_rng(0).normal(size=(600, 24)))
    index = AnnIndex(24, stamp=0, base=build(24, np.arange(400, dtype=np.uint64), data[:400]))
    index.upsert(range(400, 600), data[400:])  # added since the base was saved
    index.upsert([5], data[599:600])  # a saved row re-embedded
    index.remove([7, 450, 12345])  # a saved row, a new row, and a row never seen
    truth = {i: data[i] for i in range(600) if i not in (7, 450)}
    truth[5] = data[599]
    assert len(index) == len(truth) and index.pending == (200 - 1 + 1, 2)
    for q in data[::37]:
        got = index.search(q, 10)
        assert [k for k, _ in got] == _exact(truth, q, 10)
        assert got[0][1] == pytest.approx(float(truth[got[0][0]] @ q), abs=2e-3)  # f16 storage
    assert index.search(data[0], 0) == []


def test_merged_index_holds_exactly_the_current_rows():
    data = _unit(np.random.default_rng(2).normal(size=(300, 16)))
    index = AnnIndex(16, stamp=9, base=build(16, np.arange(200, dtype=np.uint64), data[:200]))
    index.upsert(range(200, 300), data[200:])
    index.upsert([3], data[0:1])
    index.remove([4, 250])
    before = {i: [k for k, _ in index.search(q, 5)] for i, q in enumerate(data[::29])}
    merged = AnnIndex(16, stamp=9, base=index.merged(index.base))  # changes the base in place
    assert len(merged) == 298 and merged.pending == (0, 0)
    assert 4 not in merged.base and 250 not in merged.base
    np.testing.assert_allclose(merged.base.get(3), data[0], atol=1e-3)
    for i, q in enumerate(data[::29]):
        assert [k for k, _ in merged.search(q, 5)] == before[i]


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
    ann = AnnIndex(8, stamp=0, base=index, breadth=breadth)
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
    files.save(index, prefix, 10, 0)
    path = files.save(index, prefix, 12, 64)
    other = files.save(index, IndexFiles.prefix("chunk", "other", "fp"), 11, 0)
    assert files.latest(prefix) == (path, 12, 64)
    assert sorted(p.name for p in files.dir.iterdir()) == sorted([path.name, other.name])  # no temp files
    view = IndexFiles.open(path, 8)
    assert view is not None and len(view) == 50 and IndexFiles.open(path, 9) is None
    path.write_bytes(b"not an index" * 100)
    assert IndexFiles.open(path, 8) is None
    other.write_bytes(other.read_bytes()[:200])  # truncated
    assert IndexFiles.open(other, 8) is None
