"""Ingest throughput per embedder over LoCoMo-like short turns, beside the raw embedding rate.

For each embedder: the raw rate (the turn texts embedded in one ``embed`` call: texts/s, the
in-run baseline), then ``remember`` into a fresh SQLite store with the offline extractor, one
call per session (a list of turns dated by the session, as a chat agent would) and one call for
every turn at once: memories/s and embedding calls. Ingest embeds more than the turns (entity
names and fact sentences too), so it cannot reach the raw rate; the ratio shows the overhead.

    python benchmarks/bench_embed.py PATH/locomo10.json --turns 1000
    python benchmarks/bench_embed.py tests/fixtures/locomo_tiny.json --embedders hashing --json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_info, print_table, script_main  # noqa: E402

from kenning import Kenning  # noqa: E402
from kenning.eval.datasets import load_locomo  # noqa: E402
from kenning.providers.registry import make_embedder  # noqa: E402
from kenning.settings import Settings  # noqa: E402


def sessions(path: str, turns: int) -> list[list[Any]]:
    """The first ``turns`` turns of the file, as lists of turns of one session (same date)."""
    out: list[list[Any]] = []
    for collection in load_locomo(Path(path)):
        for unit in collection.units:
            if out and out[-1][0].valid_at == unit.valid_at:
                out[-1].append(unit)
            else:
                out.append([unit])
            if sum(len(s) for s in out) >= turns:
                return out
    return out


def ingest(spec: str, batches: list[list[Any]]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kenning-bench-") as tmp:
        with Kenning(str(Path(tmp) / "bench.db"), embedder=make_embedder(Settings(embedder=spec))) as kn:
            started = time.perf_counter()
            calls = failed = 0
            for batch in batches:
                result = kn.remember([u.text for u in batch], valid_at=batch[0].valid_at)
                calls += result.usage.embedding_calls
                failed += len(result.errors)
            seconds = time.perf_counter() - started
    count = sum(len(b) for b in batches)
    return {"memories": count, "seconds": round(seconds, 2), "memories_per_s": round(count / seconds, 1),
            "failed": failed, "embedding_calls": calls}


def run(args: argparse.Namespace) -> dict[str, Any]:
    by_session = sessions(args.path, args.turns)
    turns = [u for s in by_session for u in s]
    out: dict[str, Any] = {"benchmark": "embed", "machine": machine_info(), "turns": len(turns),
                           "sessions": len(by_session), "embedders": {}}
    for spec in args.embedders:
        embedder = make_embedder(Settings(embedder=spec))
        started = time.perf_counter()
        embedder.embed([u.text for u in turns])
        raw = len(turns) / (time.perf_counter() - started)
        embedder.close()
        out["embedders"][spec] = {
            "raw_texts_per_s": round(raw, 1),
            "remember_per_session": ingest(spec, by_session),
            "remember_one_call": ingest(spec, [turns]),
        }
    return out


def report(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(f"machine: {m['cpu']}, {m['cores']} cores, load {m['load_avg_1m']}; {m['date']}")
    print(f"{result['turns']} turns in {result['sessions']} sessions")
    rows = []
    for spec, r in result["embedders"].items():
        session, whole = r["remember_per_session"], r["remember_one_call"]
        rows.append([spec, r["raw_texts_per_s"], session["memories_per_s"], session["embedding_calls"],
                     whole["memories_per_s"], whole["embedding_calls"]])
    print_table(["embedder", "raw embed texts/s", "remember/session memories/s", "calls",
                 "remember all memories/s", "calls"], rows)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="a LoCoMo file (locomo10.json) or a directory holding one")
    parser.add_argument("--turns", type=int, default=1000, help="turns to ingest (from the first conversations)")
    parser.add_argument("--embedders", type=lambda s: s.split(","), default=["hashing", "local:all-MiniLM-L6-v2"],
                        help="comma list of KENNING_EMBEDDER values")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    script_main(parse, run, report, argv)


if __name__ == "__main__":
    main()
