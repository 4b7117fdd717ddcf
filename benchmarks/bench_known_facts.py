"""Known facts as records against the same facts written as sentences for the offline
extractor: seconds to remember N of them in one call, and what was stored. Both runs alternate
(records, sentences, records, …) on fresh SQLite files, so they see the same machine load; the
ratio is the figure to read.

    python benchmarks/bench_known_facts.py --facts 1000 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from kenning import Kenning


def run(path: Path, content: list) -> tuple[float, int, int]:
    with Kenning(str(path)) as kn:
        started = time.perf_counter()
        result = kn.remember(content)
        return time.perf_counter() - started, result.facts_created, result.entities_created


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    people = [(f"Person {i}", f"Company {i % 50}") for i in range(args.facts)]
    records = [{"source": p, "relation": "works_at", "target": c} for p, c in people]
    sentences = [f"{p} works at {c}." for p, c in people]
    seconds: dict[str, list[float]] = {"records": [], "sentences": []}
    stored = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for name, content in (("records", records), ("sentences", sentences)):
                took, facts, entities = run(Path(tmp) / f"{name}-{round_}.db", content)
                seconds[name].append(took)
                stored[name] = (facts, entities)
    for name, times in seconds.items():
        facts, entities = stored[name]
        print(f"{name:>9}: median {statistics.median(times):.2f} s for {args.facts} "
              f"({facts} facts, {entities} entities stored)")
    ratio = statistics.median(seconds["sentences"]) / statistics.median(seconds["records"])
    print(f"records are {ratio:.1f}x faster than extracting the same facts from sentences")


if __name__ == "__main__":
    main()
