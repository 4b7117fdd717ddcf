"""The in-process vector index: exact search over int8 codes, partitions, replacement and
removal, and the inverted-file index checked against exact search."""

from __future__ import annotations

import numpy as np
import pytest

from kenning.store import vectors
from kenning.store.vectors import VectorIndex


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms == 0, 1, norms)).astype(np.float32)


def _clustered(n: int, d: int = 32, clusters: int = 40, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(clusters, d))
    return _unit(centers[rng.integers(clusters, size=n)] + 0.35 * rng.normal(size=(n, d)))


def _index(data: np.ndarray, dataset: str = "main", **kw) -> VectorIndex:
    index = VectorIndex(data.shape[1], **kw)
    index.add_many((dataset, f"id{i}", v) for i, v in enumerate(data))
    return index


def test_search_ranks_like_exact_float_search():
    data = _unit(np.random.default_rng(0).normal(size=(500, 48)))
    index = _index(data)
    for q in data[:20]:
        got = index.search("main", q, 10)
        exact = np.argsort(-(data @ q))[:10]
        assert [i for i, _ in got][:1] == [f"id{exact[0]}"]
        assert len({i for i, _ in got} & {f"id{j}" for j in exact}) >= 9
        assert got[0][1] == pytest.approx(float(data[exact[0]] @ q), abs=0.01)


def test_partitions_replacement_removal_and_drop():
    index = VectorIndex(4)
    a, b = np.array([1, 0, 0, 0], np.float32), np.array([0, 1, 0, 0], np.float32)
    index.add_many([("one", "x", a), ("two", "y", a), ("one", "z", b)])
    assert [i for i, _ in index.search("one", a, 5)] == ["x", "z"]
    assert [i for i, _ in index.search("two", a, 5)] == ["y"]
    index.add_many([("one", "x", b)])  # the same id again replaces its vector
    assert [i for i, _ in index.search("one", a, 5)][:1] in (["x"], ["z"])
    assert index.search("one", b, 1)[0][1] == pytest.approx(1.0, abs=0.01)
    assert len(index.search("one", b, 5)) == 2
    index.remove_many(["z", "missing"])
    assert [i for i, _ in index.search("one", b, 5)] == ["x"]
    index.drop_dataset("two")
    assert index.search("two", a, 5) == [] and index.search("nowhere", a, 5) == []


def test_zero_vectors_long_ids_and_empty_limits():
    index = VectorIndex(3)
    long_id = "fact_" + "9" * 60
    index.add_many([("d", long_id, np.ones(3, np.float32) / np.sqrt(3)), ("d", "zero", np.zeros(3, np.float32))])
    got = index.search("d", np.ones(3, np.float32) / np.sqrt(3), 5)
    assert got[0][0] == long_id and got[1] == ("zero", 0.0)
    assert index.search("d", np.ones(3, np.float32), 0) == []


def test_inverted_file_index_recall_against_exact(monkeypatch):
    monkeypatch.setattr(vectors, "IVF_MIN_ROWS", 2000)
    monkeypatch.setattr(vectors, "_MIN_SCANNED", 600)
    data = _clustered(6000)
    approx, exact = _index(data[:4000]), _index(data[:4000], exact=True)
    approx.search("main", data[0], 10)  # trains on 4,000 rows
    more = [("main", f"id{i}", data[i]) for i in range(4000, 6000)]
    approx.add_many(more)  # filed under existing centroids at the next search, not retrained
    exact.add_many(more)
    approx.remove_many(["id4001"])
    exact.remove_many(["id4001"])
    found = total = 0
    for q in data[3990:4010]:
        truth = {i for i, _ in exact.search("main", q, 10)}
        got = [i for i, _ in approx.search("main", q, 10)]
        assert "id4001" not in got
        found += len(truth & set(got))
        total += len(truth)
    assert found / total >= 0.9
    assert approx.search("main", data[4500], 1)[0][0] == "id4500"  # a row added after training
