"""Hybrid recall with three settings of the SQLite lexical lane, alternating query by query on
one store so all see the same machine load: p50 / p95 latency and answer-in-top-k of each.

- ``now``: as shipped.
- ``token``: the dataset's full-text token in every query (as before 2026-11-30 22:20 UTC in a
  store of several datasets), and every match ranked in tables below 20,000 rows (as before).
- ``unbounded``: every matching row ranked, whatever the table's size.

    python benchmarks/ab_lexical.py /tmp/b100k.db --facts 100000 --queries 300

The store is one ``bench_scale.py --db`` filled (same ``--facts`` and ``--seed``); with
``--writer-rate`` it also holds the writer's dataset, so it has two.
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
    arms = {"now": {}, "token": {"_SMALL_DATASET": 10**12, "_BOUNDED_FROM_ROWS": 20_000},
            "unbounded": {"_SCORED_ROWS": 10**12, "_BOUNDED_FROM_ROWS": 10**12}}
    shipped = {name: getattr(sqlite_store, name) for arm in arms.values() for name in arm}
    times: dict[str, list[float]] = {a: [] for a in arms}
    found = dict.fromkeys(arms, 0)
    with Kenning(args.db) as kn:
        kn.recall(corpus.questions[0].text, dataset="bench")  # opens what the store opens once
        for i, q in enumerate(corpus.questions):
            order = list(arms)[i % len(arms):] + list(arms)[: i % len(arms)]
            for arm in order:
                for name, value in {**shipped, **arms[arm]}.items():
                    setattr(sqlite_store, name, value)
                started = time.perf_counter()
                hits = kn.recall(q.text, dataset="bench", search_type=args.search_type, top_k=10).hits
                times[arm].append((time.perf_counter() - started) * 1000)
                found[arm] += any(q.answer.casefold() in h.text.casefold() for h in hits)
    for name, value in shipped.items():
        setattr(sqlite_store, name, value)
    print(f"machine: {machine_info()}")
    for arm in arms:
        p = percentiles(times[arm])
        print(f"{arm}: {args.search_type} p50 {p['p50']:.1f} ms, p95 {p['p95']:.1f} ms, p99 {p['p99']:.1f} ms,"
              f" answer in top 10 {found[arm] / len(corpus.questions):.1%}")


if __name__ == "__main__":
    main()
