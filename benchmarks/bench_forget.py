"""What erasing costs on SQLite: ``delete`` of one memory (and the share of it spent in
``scrub``: rewriting the full-text indexes, the saved vector indexes that lost rows, and
truncating the WAL), then ``forget`` of a whole dataset, on a store of N memories whose
vector indexes are saved and mapped, as a long-running store's are.

    python benchmarks/bench_forget.py --memories 5000 --deletes 10
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from common import machine_info, print_machine

from kenning import Kenning


def _texts(n: int, tag: str) -> list[str]:
    return [f"{tag}{i} works at Company{i % 97} in City{i % 31} since {2000 + i % 20}." for i in range(n)]


def _indexes(kn: Kenning, dataset: str) -> None:
    vec = kn._engine.embedder.embed(["Company3"])[0]
    for kind in ("chunk", "fact", "entity"):
        kn.store.vector(dataset, kind, vec, 5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--deletes", type=int, default=10)
    args = parser.parse_args()
    print_machine(machine_info())
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "forget.db")
        with Kenning(db) as kn:
            ids = kn.remember(_texts(args.memories, "Person")).memory_ids
            kn.remember(_texts(args.memories, "Guest"), dataset="guests")
            _indexes(kn, "main")
            _indexes(kn, "guests")
        with Kenning(db) as kn:
            _indexes(kn, "main")
            store, scrubbing = kn.store, [0.0]
            scrub = store.scrub

            def timed_scrub() -> None:
                started = time.perf_counter()
                scrub()
                scrubbing[0] += time.perf_counter() - started

            store.scrub = timed_scrub  # type: ignore[method-assign]
            started = time.perf_counter()
            for memory_id in ids[: args.deletes]:
                kn.delete(memory_id)
            per = (time.perf_counter() - started) / args.deletes
            print(f"delete: {per * 1000:.0f} ms a memory at {args.memories} memories, "
                  f"{scrubbing[0] / args.deletes * 1000:.0f} ms of it in scrub")
            started = time.perf_counter()
            gone = len(kn.forget(dataset="guests").memory_ids)
            print(f"forget(dataset=): {time.perf_counter() - started:.2f} s for {gone} memories")


if __name__ == "__main__":
    main()
