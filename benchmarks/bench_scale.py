"""Scale benchmark: ingest throughput, recall latency per search type, peak memory and database
size of the embedded SQLite store with the offline pipeline, over a synthetic corpus.

    python benchmarks/bench_scale.py --facts 100000
    python benchmarks/bench_scale.py --facts 10000 --json
    python benchmarks/bench_scale.py --facts 10000 --profile /tmp/prof   # cProfile dumps

Memories go in through the public API (``Kenning.remember`` of lists of ``--batch``), into a
SQLite file in a temporary directory (or ``--db``). Recall is timed after reopening the store,
so the first query pays the vector-index rebuild (reported as ``cold_recall_ms``) and the
others show the steady state.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    dir_size,
    machine_info,
    peak_rss_mb,
    percentiles,
    print_machine,
    print_table,
)
from synth import Corpus, batches, generate

from kenning import Kenning

SEARCH_TYPES = ("hybrid", "chunks", "facts", "entities", "graph", "temporal")
DATASET = "bench"


def ingest(kn: Kenning, corpus: Corpus, batch: int, quiet: bool) -> dict[str, Any]:
    started = time.perf_counter()
    done = failed = 0
    for texts in batches(corpus, batch):
        result = kn.remember(texts, dataset=DATASET)
        done += len(texts)
        failed += len(result.errors)
        if not quiet:
            rate = done / (time.perf_counter() - started)
            print(f"\r  ingested {done:,}/{len(corpus.memories):,} ({rate:,.0f}/s)", end="", file=sys.stderr)
    seconds = time.perf_counter() - started
    if not quiet:
        print(file=sys.stderr)
    return {"memories": done, "failed": failed, "seconds": round(seconds, 2),
            "memories_per_s": round(done / seconds, 1)}


def _answered(hits: list, answer: str) -> bool:
    needle = answer.casefold()
    return any(needle in h.text.casefold() for h in hits)


def recall_latency(kn: Kenning, corpus: Corpus, search_types: list[str], top_k: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for search_type in search_types:
        times, found = [], 0
        for q in corpus.questions:
            started = time.perf_counter()
            result = kn.recall(q.text, dataset=DATASET, search_type=search_type, top_k=top_k)
            times.append((time.perf_counter() - started) * 1000)
            found += _answered(result.hits, q.answer)
        out[search_type] = {
            **{k: round(v, 2) for k, v in percentiles(times).items()},
            "mean": round(sum(times) / len(times), 2),
            "answer_in_top_k": round(found / len(times), 3),
        }
    return out


def _hashing():
    from kenning.providers.hashing import HashingEmbedder

    return HashingEmbedder()


def _embedder(spec: str):
    from kenning.providers.registry import make_embedder
    from kenning.settings import Settings

    return make_embedder(Settings(embedder=spec))


def ann_recall(db: Path, corpus: Corpus, top_k: int, make_embedder) -> dict[str, Any]:
    """The approximate index against exact search over the same stored vectors: recall@k of
    the exact top k, and the search time of both."""
    import sqlite3

    import numpy as np

    from kenning.store.vectors import VectorIndex, from_blob

    embedder = make_embedder()
    queries = embedder.embed([q.text for q in corpus.questions])
    out: dict[str, Any] = {}
    con = sqlite3.connect(db)
    for kind, table in (("chunk", "chunks"), ("fact", "facts"), ("entity", "entities")):
        approx, exact = VectorIndex(embedder.dimension), VectorIndex(embedder.dimension, exact=True)
        rows = con.execute(f"SELECT dataset, id, embedding FROM {table} WHERE embedding IS NOT NULL").fetchall()
        for index in (approx, exact):
            index.add_many((d, i, from_blob(e)) for d, i, e in rows)
        found = total = 0
        ms = {"approx": [], "exact": []}
        for q in queries:
            results = {}
            for name, index in (("approx", approx), ("exact", exact)):
                started = time.perf_counter()
                results[name] = {i for i, _ in index.search(DATASET, q, top_k)}
                ms[name].append((time.perf_counter() - started) * 1000)
            found += len(results["approx"] & results["exact"])
            total += len(results["exact"])
        out[kind] = {"rows": len(rows), f"recall@{top_k}": round(found / max(total, 1), 4),
                     "approx_ms_p50": round(float(np.median(ms["approx"])), 2),
                     "exact_ms_p50": round(float(np.median(ms["exact"])), 2),
                     "index_mb": round(approx.nbytes() / 2**20, 1)}
    con.close()
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = generate(args.facts, seed=args.seed, questions=args.queries)
    with tempfile.TemporaryDirectory(prefix="kenning-bench-") as tmp:
        db = Path(args.db) if args.db else Path(tmp) / "bench.db"

        def settings() -> dict[str, Any]:  # a fresh embedder per instance: close() closes it
            return {"embedder": _embedder(args.embedder)} if args.embedder else {}

        profile = cProfile.Profile() if args.profile else None
        with Kenning(str(db), **settings()) as kn:
            if profile:
                profile.enable()
            ingested = ingest(kn, corpus, args.batch, args.quiet) if not args.reuse else None
            if profile:
                profile.disable()
                profile.dump_stats(f"{args.profile}.ingest.prof")
            stats = kn.stats(DATASET)
        with Kenning(str(db), **settings()) as kn:
            started = time.perf_counter()
            kn.recall(corpus.questions[0].text, dataset=DATASET, top_k=args.top_k)
            cold_ms = (time.perf_counter() - started) * 1000
            if profile:
                profile = cProfile.Profile()
                profile.enable()
            latency = recall_latency(kn, corpus, args.search_types, args.top_k)
            if profile:
                profile.disable()
                profile.dump_stats(f"{args.profile}.recall.prof")
        size = dir_size(db)
        peak = peak_rss_mb()
        ann = ann_recall(db, corpus, args.top_k, lambda: settings().get("embedder") or _hashing())
    return {
        "benchmark": "scale",
        "machine": machine_info(),
        "corpus": {"memories": len(corpus.memories), "people": corpus.people,
                   "organizations": corpus.organizations, "places": corpus.places,
                   "queries": len(corpus.questions)},
        "store": {"memories": stats.memories, "chunks": stats.chunks, "entities": stats.entities,
                  "facts": stats.facts, "facts_live": stats.facts_live,
                  "facts_closed": stats.facts_closed, "embedder": stats.embedder},
        "ingest": ingested,
        "cold_recall_ms": round(cold_ms, 1),
        "top_k": args.top_k,
        "recall_ms": latency,
        "ann_vs_exact": ann,
        "peak_rss_mb": round(peak, 1),
        "db_mb": round(size / 2**20, 1),
    }


def report(result: dict[str, Any]) -> None:
    print_machine(result["machine"])
    c, s, i = result["corpus"], result["store"], result["ingest"]
    print(f"corpus: {c['memories']:,} memories ({c['people']:,} people, {c['organizations']:,} "
          f"organizations, {c['places']:,} places); {c['queries']} queries")
    print(f"store: {s['facts']:,} facts ({s['facts_live']:,} live, {s['facts_closed']:,} closed), "
          f"{s['entities']:,} entities, {s['chunks']:,} chunks; embedder {s['embedder']}")
    if i:
        print(f"ingest: {i['memories']:,} memories in {i['seconds']} s = {i['memories_per_s']:,} memories/s"
              f" ({i['failed']} failed)")
    print(f"peak memory: {result['peak_rss_mb']} MB; database: {result['db_mb']} MB; "
          f"first recall after open (index rebuild): {result['cold_recall_ms']} ms")
    rows = [[name, v["p50"], v["p95"], v["p99"], v["mean"], f"{v['answer_in_top_k']:.0%}"]
            for name, v in result["recall_ms"].items()]
    print_table(["recall (ms)", "p50", "p95", "p99", "mean", "answer in top-k"], rows)
    k = result["top_k"]
    rows = [[kind, v["rows"], f"{100 * v[f'recall@{k}']:.1f}%", v["approx_ms_p50"], v["exact_ms_p50"], v["index_mb"]]
            for kind, v in result["ann_vs_exact"].items()]
    print_table(["vector index", "rows", f"recall@{k} vs exact", "ms p50", "exact ms p50", "MB"], rows)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=10_000, help="memories to generate (one fact each)")
    parser.add_argument("--batch", type=int, default=1000, help="memories per remember() call")
    parser.add_argument("--queries", type=int, default=300, help="recall queries per search type")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--search-types", type=lambda s: s.split(","), default=list(SEARCH_TYPES))
    parser.add_argument("--embedder", default=None, help="KENNING_EMBEDDER value (default: hashing)")
    parser.add_argument("--db", default=None, help="keep the database at this path (must not exist)")
    parser.add_argument("--reuse", action="store_true",
                        help="with --db: measure recall on a database a former run filled (no ingest)")
    parser.add_argument("--profile", default=None, metavar="PREFIX",
                        help="write cProfile stats to PREFIX.ingest.prof and PREFIX.recall.prof")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)


if __name__ == "__main__":
    main()
