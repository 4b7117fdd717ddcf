"""Long turns: ingest rate and recall latency on LongMemEval_S haystacks, beside BM25 and short turns.

Per question of the LongMemEval dev split: a fresh in-memory store of its haystack with the
engine clock at the question date, each session remembered in one ``remember`` call (its turns
as messages, dated by the session), as ``kenning eval longmemeval`` builds it (the same code:
``kenning.eval.run``); then ``recall(question, top_k=50)`` ``--repeats`` times. Beside it, in
the same run: a plain Okapi BM25 over the same turns (build and scoring time) and, with
``--locomo``, the same measures on LoCoMo's short turns (one conversation), so the ratios hold
on a shared, noisy machine. The load average is read before and after. ``--warm`` ingests one
store first, untimed: a process's first turns pay once for the offline extractor compiling its
patterns (about half a second), which on 100 short turns halves the rate.

    python benchmarks/bench_longturn.py ../shared/data/longmemeval/dev --questions 5 \
        --locomo ../shared/data/locomo/locomo10.json
    python benchmarks/bench_longturn.py ../shared/data/longmemeval/dev --questions 2 \
        --embedder local:all-MiniLM-L6-v2
    python benchmarks/bench_longturn.py ../shared/data/longmemeval/dev --questions 3 --profile ingest.prof
"""

from __future__ import annotations

import argparse
import cProfile
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_info, peak_rss_mb, percentiles, print_table, script_main  # noqa: E402

from kenning import Kenning  # noqa: E402
from kenning.eval.bm25 import BM25  # noqa: E402
from kenning.eval.datasets import Collection, load_locomo, load_longmemeval  # noqa: E402
from kenning.eval.run import DATASET, EvalConfig, _embedder, _ingest  # noqa: E402

TOP_K = 50


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else []


def embedder(args: argparse.Namespace) -> Any:
    """One embedder for every store of the run (a local model loads once)."""
    if args.runtime and args.embedder and args.embedder.startswith("local:"):
        from kenning.providers.local import LocalEmbedder

        return LocalEmbedder(args.embedder.removeprefix("local:"), runtime=args.runtime)
    return _embedder(EvalConfig(embedder=args.embedder))


def measure(collections: list[Collection], args: argparse.Namespace, profile: cProfile.Profile | None,
            questions_per_store: int | None = None, model: Any = None) -> dict[str, Any]:
    """Ingest every collection into a fresh store and time recall and BM25 on its questions
    (with ``model``, the embedder object every store of the run shares)."""
    ingest_s = ingest_cpu_s = bm25_build_s = 0.0
    turns = chars = 0
    recall_ms: list[float] = []
    first_ms: list[float] = []
    bm25_ms: list[float] = []
    embedder_name = ""
    model = model if model is not None else embedder(args)
    for collection in collections:
        clock = (lambda now=collection.now: now) if collection.now is not None else None
        with Kenning(":memory:", embedder=model, clock=clock) as kn:
            embedder_name = kn.stats().embedder + (f" ({model.runtime})" if hasattr(model, "runtime") else "")
            if profile is not None:
                profile.enable()
            started, cpu = time.perf_counter(), time.process_time()
            _ingest(kn, collection)
            ingest_s += time.perf_counter() - started
            ingest_cpu_s += time.process_time() - cpu
            if profile is not None:
                profile.disable()
            turns += len(collection.units)
            chars += sum(len(u.text) for u in collection.units)
            started = time.perf_counter()
            index = BM25([u.text for u in collection.units])
            bm25_build_s += time.perf_counter() - started
            for q in collection.questions[:questions_per_store]:
                for repeat in range(args.repeats):
                    started = time.perf_counter()
                    kn.recall(q.text, dataset=DATASET, top_k=TOP_K)
                    ms = (time.perf_counter() - started) * 1000
                    (first_ms if repeat == 0 else recall_ms).append(ms)
                started = time.perf_counter()
                index.rank(q.text, TOP_K)
                bm25_ms.append((time.perf_counter() - started) * 1000)
    timed = recall_ms or first_ms
    return {
        "stores": len(collections), "turns": turns, "mean_chars": round(chars / max(turns, 1)),
        "embedder": embedder_name,
        "ingest_s": round(ingest_s, 2), "ingest_turns_per_s": round(turns / ingest_s, 1) if ingest_s else 0.0,
        # CPU time of this process: what the ingest costs, less what other processes took
        "ingest_cpu_turns_per_s": round(turns / ingest_cpu_s, 1) if ingest_cpu_s else 0.0,
        "queries": len(first_ms),
        "recall_first_ms": {k: round(v, 1) for k, v in percentiles(first_ms, (50, 95)).items()},
        "recall_ms": {k: round(v, 1) for k, v in percentiles(timed, (50, 95)).items()},
        "bm25_build_ms_per_store": round(bm25_build_s * 1000 / max(len(collections), 1), 1),
        "bm25_ms": {k: round(v, 2) for k, v in percentiles(bm25_ms, (50, 95)).items()},
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"benchmark": "longturn", "machine": machine_info(), "load_before": _load()}
    profile = cProfile.Profile() if args.profile else None
    sets: dict[str, Any] = {}
    model = embedder(args)
    collections = load_longmemeval(Path(args.path))[args.skip : args.skip + args.questions]
    if args.max_turns:  # a slow embedder: the first turns of each haystack (rates, not quality)
        collections = [replace(c, units=c.units[: args.max_turns]) for c in collections]
    conversation = load_locomo(Path(args.locomo))[0] if args.locomo else None
    if conversation is not None and args.max_turns:
        conversation = replace(conversation, units=conversation.units[: args.max_turns])
    if args.warm:
        # what a process pays once (the extractor compiling its patterns, the encoder's first
        # passes), outside the figures: a store of the first set's turns, ingested and dropped
        started = time.perf_counter()
        measure([conversation if conversation is not None else collections[0]], args, None, 1, model)
        out["warm_s"] = round(time.perf_counter() - started, 2)
    if conversation is not None:
        # one conversation's turns (LoCoMo's are ~100 characters): the short-turn baseline
        sets["locomo (short turns)"] = measure([conversation], args, None, args.locomo_questions, model)
    sets["longmemeval (long turns)"] = measure(collections, args, profile, model=model)
    out["sets"] = sets
    out["load_after"] = _load()
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    if profile is not None:
        profile.dump_stats(args.profile)
        out["profile"] = args.profile
    return out


def report(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(f"machine: {m['cpu']}, {m['cores']} cores; {m['date']}; load average before "
          f"{result['load_before']}, after {result['load_after']}; peak RSS {result['peak_rss_mb']} MB")
    if "warm_s" in result:
        print(f"warmed first (--warm): one store ingested and dropped in {result['warm_s']} s")
    rows = []
    for name, r in result["sets"].items():
        rows.append([name, r["embedder"], r["stores"], r["turns"], r["mean_chars"], r["ingest_turns_per_s"],
                     r["ingest_cpu_turns_per_s"],
                     r["queries"], r["recall_first_ms"]["p50"], r["recall_ms"]["p50"], r["recall_ms"]["p95"],
                     r["bm25_build_ms_per_store"], r["bm25_ms"]["p50"], r["bm25_ms"]["p95"]])
    print_table(["set", "embedder", "stores", "turns", "chars/turn", "ingest turns/s", "per CPU s", "queries",
                 "recall 1st p50 ms", "recall p50 ms", "recall p95 ms", "bm25 build ms", "bm25 p50 ms",
                 "bm25 p95 ms"], rows)
    sets = list(result["sets"].values())
    if len(sets) == 2 and sets[0]["ingest_turns_per_s"]:
        short, long = sets
        print(f"long/short ratios: ingest rate ×{long['ingest_turns_per_s'] / short['ingest_turns_per_s']:.2f} "
              f"(per CPU second ×{long['ingest_cpu_turns_per_s'] / short['ingest_cpu_turns_per_s']:.2f}), "
              f"recall p50 ×{long['recall_ms']['p50'] / max(short['recall_ms']['p50'], 1e-9):.2f}")
    if result.get("profile"):
        print(f"ingest profile written to {result['profile']} (python -m pstats)")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="the LongMemEval dev folder (one JSON file per question) or a file")
    parser.add_argument("--questions", type=int, default=3, help="questions (haystacks) to run (default 3)")
    parser.add_argument("--skip", type=int, default=0, help="questions to skip first")
    parser.add_argument("--repeats", type=int, default=5,
                        help="recalls per question: the first is reported apart, p50/p95 over the others")
    parser.add_argument("--locomo", help="locomo10.json: also measure its first conversation (short turns)")
    parser.add_argument("--max-turns", type=int, help="ingest only the first N turns of each haystack")
    parser.add_argument("--locomo-questions", type=int, default=30, help="LoCoMo questions to time")
    parser.add_argument("--embedder", help="a KENNING_EMBEDDER value (default: the configured one)")
    parser.add_argument("--runtime", choices=["auto", "onnx", "numpy"],
                        help="with a local: embedder, the encoder's runtime (default auto)")
    parser.add_argument("--warm", action="store_true",
                        help="ingest one store first, untimed: the figures leave out what a process pays once")
    parser.add_argument("--profile", help="write a cProfile of the LongMemEval ingest to this file")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    script_main(parse, run, report, argv)


if __name__ == "__main__":
    main()
