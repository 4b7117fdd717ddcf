"""Scores of one query against a matrix of stored vectors: ``matrix @ query`` (BLAS, threaded)
against ``np.einsum`` (numpy's own loop), the choice ``kenning/store/vectors.py`` makes.

    python benchmarks/bench_matvec.py                      # 8,000 x 256 float32, 200 repeats
    python benchmarks/bench_matvec.py --rows 100000 --repeats 50
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_matvec.py

Prints the median and the 10th-90th percentile range of each, in milliseconds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def timed(fn, repeats: int) -> list[float]:  # noqa: ANN001
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return sorted(out)


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((args.rows, args.dim), dtype=np.float32)
    query = rng.standard_normal(args.dim, dtype=np.float32)
    assert np.allclose(matrix @ query, np.einsum("ij,j->i", matrix, query), atol=1e-3)
    results = {
        "matrix @ query": timed(lambda: matrix @ query, args.repeats),
        "np.einsum": timed(lambda: np.einsum("ij,j->i", matrix, query), args.repeats),
    }
    print(f"{args.rows} x {args.dim} float32, {args.repeats} repeats (ms)")
    for name, times in results.items():
        p10, p50, p90 = (times[int(q * (len(times) - 1))] for q in (0.1, 0.5, 0.9))
        print(f"  {name:<15} median {p50:.3f}  (p10 {p10:.3f}, p90 {p90:.3f})")
    return results


if __name__ == "__main__":
    main()
