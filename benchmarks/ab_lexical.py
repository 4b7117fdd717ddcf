"""Hybrid recall with the SQLite lexical lane bounded (rows of the rarest terms only) and
unbounded (every matching row ranked), alternating query by query on one store, so both see
the same machine load: p50 / p95 latency and answer-in-top-k of each.

    python benchmarks/ab_lexical.py /tmp/b100k.db --facts 100000 --queries 300

The store is one ``bench_scale.py --db`` filled (same ``--facts`` and ``--seed``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_info, percentiles
from synth import generate

import kenning.store.sqlite.store as sqlite_store
from kenning import Kenning


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db")
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--search-type", default="hybrid")
    args = parser.parse_args(argv)
    corpus = generate(args.facts, seed=args.seed, questions=args.queries)
    bounded = sqlite_store._SCORED_ROWS
    arms = {"bounded": bounded, "unbounded": 10**12}
    times: dict[str, list[float]] = {a: [] for a in arms}
    found = dict.fromkeys(arms, 0)
    with Kenning(args.db) as kn:
        kn.recall(corpus.questions[0].text, dataset="bench")  # opens what the store opens once
        for i, q in enumerate(corpus.questions):
            order = list(arms) if i % 2 == 0 else list(reversed(arms))
            for arm in order:
                sqlite_store._SCORED_ROWS = arms[arm]
                started = time.perf_counter()
                hits = kn.recall(q.text, dataset="bench", search_type=args.search_type, top_k=10).hits
                times[arm].append((time.perf_counter() - started) * 1000)
                found[arm] += any(q.answer.casefold() in h.text.casefold() for h in hits)
    sqlite_store._SCORED_ROWS = bounded
    print(f"machine: {machine_info()}")
    for arm in arms:
        p = percentiles(times[arm])
        print(f"{arm}: {args.search_type} p50 {p['p50']:.1f} ms, p95 {p['p95']:.1f} ms, p99 {p['p99']:.1f} ms,"
              f" answer in top 10 {found[arm] / len(corpus.questions):.1%}")


if __name__ == "__main__":
    main()
