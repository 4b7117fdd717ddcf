"""Scale benchmark: ingest throughput, recall latency per search type, peak memory and database
size of the embedded SQLite store with the offline pipeline, over a synthetic corpus.

    python benchmarks/bench_scale.py --facts 100000
    python benchmarks/bench_scale.py --facts 10000 --json
    python benchmarks/bench_scale.py --facts 10000 --profile /tmp/prof   # cProfile dumps

Memories go in through the public API (``Kenning.remember`` of lists of ``--batch``), into a
SQLite file in a temporary directory (or ``--db``). The first recall in a new process after
ingest, and again after reopening, is timed for ``hybrid`` and then ``facts`` (which searches
the fact vectors even with the hashing embedder): ``first_recall_ms``. The indexes are
maintained at ingest, so neither should build a graph. ``new_process_ms`` times ``import
kenning``, ``Kenning(db)`` and the first hybrid recall in new interpreters (``--cold-runs``).
The other queries show the steady state.

    python benchmarks/bench_scale.py --facts 100000 --index-recall --writer-rate 5
    python benchmarks/bench_scale.py --facts 10000 --index-recall --embedder local:all-MiniLM-L6-v2
"""

from __future__ import annotations

import argparse
import cProfile
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
    private_mb,
    rss_mb,
    percentiles,
    print_machine,
    print_table,
    script_main,
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
        times, found, cpu = [], 0, time.process_time()
        for q in corpus.questions:
            started = time.perf_counter()
            result = kn.recall(q.text, dataset=DATASET, search_type=search_type, top_k=top_k)
            times.append((time.perf_counter() - started) * 1000)
            found += _answered(result.hits, q.answer)
        out[search_type] = {
            **{k: round(v, 2) for k, v in percentiles(times).items()},
            "mean": round(sum(times) / len(times), 2),
            "cpu_ms": round((time.process_time() - cpu) / len(times) * 1000, 2),  # this process's, per recall
            "answer_in_top_k": round(found / len(times), 3),
        }
    return out


def _embedder(spec: str):
    from kenning.providers.registry import make_embedder
    from kenning.settings import Settings

    return make_embedder(Settings(embedder=spec))


def index_recall(kn: Kenning, corpus: Corpus, top_k: int) -> dict[str, Any]:
    """The store's vector index as recall uses it, against exact search (numpy, float32) over
    the same stored vectors, with the corpus questions: recall@k of the exact top k (ties with
    the k-th score count as found) and search times; and the recall its HNSW graph alone gets
    at each search breadth, whether or not calibration chose the graph."""
    import numpy as np

    from kenning.store.vectors import Flat, from_blob

    store = kn.store
    queries = kn._engine.embedder.embed([q.text for q in corpus.questions])
    out: dict[str, Any] = {}
    for kind, table in (("chunk", "chunks"), ("fact", "facts"), ("entity", "entities")):
        rows = store._db.execute(
            f"SELECT rowid, id, embedding FROM {table} WHERE dataset = ? AND embedding IS NOT NULL", (DATASET,)
        ).fetchall()
        if not rows:
            continue
        matrix = np.vstack([from_blob(r[2]) for r in rows])
        by_id = {r[1]: i for i, r in enumerate(rows)}
        by_key = {r[0]: i for i, r in enumerate(rows)}
        k = min(top_k, len(rows))
        found, graph = 0, {ef: 0 for ef in (64, 128, 256, 512)}
        ms: dict[str, list[float]] = {"index": [], "exact": []}
        for q in queries:
            started = time.perf_counter()
            got = [hit.id for hit in store.vector(DATASET, kind, q, top_k)]
            ms["index"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            scores = np.einsum("ij,j->i", matrix, q)
            ms["exact"].append((time.perf_counter() - started) * 1000)
            worst = np.partition(scores, len(scores) - k)[len(scores) - k] - 2e-3  # f16 storage
            found += sum(scores[by_id[i]] >= worst for i in got)
            base = store._anns[(kind, DATASET)].index
            for ef in graph if not isinstance(base, Flat) else ():  # a flat index has no graph
                base.expansion_search = ef
                keys = base.search(q, k, threads=1).keys
                graph[ef] += sum(scores[by_key[int(key)]] >= worst for key in keys if int(key) in by_key)
        index = store._anns[(kind, DATASET)]
        total = k * len(queries)
        out[kind] = {"rows": len(rows), "search": f"hnsw ef={index.breadth}" if index.breadth
                     else "exact, flat (no graph)" if isinstance(index.index, Flat) else "exact",
                     f"recall@{top_k}": round(found / total, 4),
                     "graph_recall": {ef: round(n / total, 4) for ef, n in graph.items()},
                     "index_ms_p50": round(float(np.median(ms["index"])), 2),
                     "exact_ms_p50": round(float(np.median(ms["exact"])), 2)}
    return out


_COLD = """
import sys, time
started = time.perf_counter()
from kenning import Kenning
imported = time.perf_counter()
kn = Kenning(sys.argv[1], **({"embedder": sys.argv[4]} if sys.argv[4] else {}))
opened = time.perf_counter()
kn.recall(sys.argv[2], dataset=sys.argv[3], top_k=10)
recalled = time.perf_counter()
kn.close()
print(imported - started, opened - imported, recalled - opened)
"""


def cold_process(db: Path, question: str, embedder: str | None, runs: int) -> dict[str, float]:
    """A new interpreter per run: ``import kenning``, open the store (``Kenning(db)``) and its
    first hybrid recall, each timed inside it (median of ``runs``, ms); ``open_first`` is the
    last two together (the process's start-up is not counted)."""
    import statistics
    import subprocess

    times = [[float(x) for x in subprocess.run(
        [sys.executable, "-c", _COLD, str(db), question, DATASET, embedder or ""],
        capture_output=True, text=True, check=True).stdout.split()] for _ in range(runs)]
    median = [statistics.median(t[i] for t in times) * 1000 for i in range(3)]
    return {"import": round(median[0], 1), "open": round(median[1], 1), "first_recall": round(median[2], 1),
            "open_first": round(statistics.median((t[1] + t[2]) * 1000 for t in times), 1), "runs": runs}


_WRITER = """
import sys, time
from kenning import Kenning
db, rate, embedder = sys.argv[1], float(sys.argv[2]), sys.argv[3]
with Kenning(db, **({"embedder": embedder} if embedder else {})) as kn:
    i, started = 0, time.monotonic()
    while True:
        kn.remember(f"Writer note {i}: Walker{i} visits Harbor{i % 50}.", dataset="writer")
        i += 1
        print(i, flush=True)
        time.sleep(max(0.0, started + i / rate - time.monotonic()))
"""


def with_writer(db: Path, rate: float, embedder: str | None, measure) -> tuple[Any, int]:  # noqa: ANN001
    """``measure()`` while a second process writes ``rate`` memories/s to another dataset."""
    import subprocess

    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(db), str(rate), embedder or ""],
                              stdout=subprocess.PIPE, text=True)
    try:
        writer.stdout.readline()  # it has committed once
        result = measure()
    finally:
        writer.terminate()
        out, _ = writer.communicate(timeout=30)
    return result, len(out.split()) + 1


def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = generate(args.facts, seed=args.seed, questions=args.queries)
    harness = rss_mb()  # the interpreter, kenning's imports and the generated corpus
    with tempfile.TemporaryDirectory(prefix="kenning-bench-") as tmp:
        db = Path(args.db) if args.db else Path(tmp) / "bench.db"

        def settings() -> dict[str, Any]:  # a fresh embedder per instance: close() closes it
            return {"embedder": _embedder(args.embedder)} if args.embedder else {}

        profile = cProfile.Profile() if args.profile else None
        with Kenning(str(db), **settings()) as kn:
            if profile:
                profile.enable()
            ingested = ingest(kn, corpus, args.batch, args.quiet) if not args.reuse else None
            private = [private_mb()]  # sampled at the end of each phase
            if profile:
                profile.disable()
                profile.dump_stats(f"{args.profile}.ingest.prof")
            stats = kn.stats(DATASET)
        cold = {}
        for moment in ("after_ingest", "after_reopen"):  # opens the saved indexes (or builds them)
            with Kenning(str(db), **settings()) as kn:
                for search_type, name in (("hybrid", moment), ("facts", f"{moment}_facts")):
                    # hybrid with the hashing embedder searches no chunk or fact vectors; facts does
                    started = time.perf_counter()
                    kn.recall(corpus.questions[0].text, dataset=DATASET, search_type=search_type, top_k=args.top_k)
                    cold[name] = round((time.perf_counter() - started) * 1000, 1)
        fresh = cold_process(db, corpus.questions[0].text, args.embedder, args.cold_runs) if args.cold_runs else None
        with Kenning(str(db), **settings()) as kn:
            if args.writer_rate:  # the writer's dataset exists in the baseline too
                kn.remember("Writer note: Walker visits Harbor.", dataset="writer")
            if profile:
                profile = cProfile.Profile()
                profile.enable()
            latency = recall_latency(kn, corpus, args.search_types, args.top_k)
            if profile:
                profile.disable()
                profile.dump_stats(f"{args.profile}.recall.prof")
            writer = None
            if args.writer_rate:
                measured, written = with_writer(
                    db, args.writer_rate, args.embedder, lambda: recall_latency(kn, corpus, ["hybrid"], args.top_k))
                # alone again after the writer: the machine's load drifts, so the writer's run is
                # compared with the mean of the runs on either side of it
                after = recall_latency(kn, corpus, ["hybrid"], args.top_k)["hybrid"]
                alone = [latency["hybrid"], after] if "hybrid" in latency else [after]
                writer = {"rate": args.writer_rate, "written": written, "hybrid": measured["hybrid"],
                          "baseline_p50": round(sum(a["p50"] for a in alone) / len(alone), 2),
                          "baseline_cpu_ms": round(sum(a["cpu_ms"] for a in alone) / len(alone), 2),
                          "baseline_p50s": [a["p50"] for a in alone]}
            private.append(private_mb())
            ann = index_recall(kn, corpus, args.top_k) if args.index_recall else None
        size = dir_size(db)
        index_size = sum(p.stat().st_size for p in db.parent.glob(db.name + ".vectors/*.usearch"))
        peak = peak_rss_mb()
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
        "first_recall_ms": cold,
        "new_process_ms": fresh,
        "top_k": args.top_k,
        "recall_ms": latency,
        "ann_vs_exact": ann,
        "second_writer": writer,
        "peak_rss_mb": round(peak, 1),
        "harness_rss_mb": round(harness, 1),
        "private_mb": round(max(private), 1) if None not in private else None,
        "db_mb": round(size / 2**20, 1),
        "index_files_mb": round(index_size / 2**20, 1),
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
    first = result["first_recall_ms"]
    print(f"peak memory: {result['peak_rss_mb']} MB, of which {result['harness_rss_mb']} MB held before the store"
          f" opened (interpreter, imports, the generated corpus); own memory (RssAnon, harness included) at most"
          f" {result['private_mb']} MB after ingest and after recall; database: {result['db_mb']} MB; "
          f"vector index files: {result['index_files_mb']} MB")
    print(f"first recall after ingest: hybrid {first['after_ingest']} ms, then facts {first['after_ingest_facts']} ms; "
          f"after reopening: {first['after_reopen']} / {first['after_reopen_facts']} ms")
    if f := result["new_process_ms"]:
        print(f"new process (median of {f['runs']}): import kenning {f['import']} ms; open + first hybrid recall"
              f" {f['open_first']} ms (open {f['open']}, recall {f['first_recall']})")
    rows = [[name, v["p50"], v["p95"], v["p99"], v["mean"], f"{v['answer_in_top_k']:.0%}"]
            for name, v in result["recall_ms"].items()]
    print_table(["recall (ms)", "p50", "p95", "p99", "mean", "answer in top-k"], rows)
    if w := result["second_writer"]:
        h = w["hybrid"]
        print(f"with a second process writing {w['rate']} memories/s ({w['written']} written): hybrid p50 "
              f"{h['p50']} ms, p99 {h['p99']} ms, CPU {h['cpu_ms']} ms a recall (alone, before and after:"
              f" p50 {' / '.join(map(str, w['baseline_p50s']))} ms, CPU {w['baseline_cpu_ms']} ms;"
              f" x{h['p50'] / w['baseline_p50']:.2f} p50, x{h['cpu_ms'] / w['baseline_cpu_ms']:.2f} CPU)")
    k = result["top_k"]
    if result["ann_vs_exact"]:
        rows = [[kind, v["rows"], v["search"], f"{100 * v[f'recall@{k}']:.1f}%", v["index_ms_p50"], v["exact_ms_p50"],
                 " / ".join(f"{100 * r:.1f}%" for r in v["graph_recall"].values())]
                for kind, v in result["ann_vs_exact"].items()]
        print_table(["vector index", "rows", "search", f"recall@{k} vs exact", "ms p50", "numpy exact ms p50",
                     "graph alone at ef 64/128/256/512"], rows)


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
    parser.add_argument("--index-recall", action="store_true",
                        help="measure the vector index against exact search with the corpus questions")
    parser.add_argument("--writer-rate", type=float, default=0.0, metavar="N",
                        help="also time hybrid recall while a second process writes N memories/s")
    parser.add_argument("--cold-runs", type=int, default=3, metavar="N",
                        help="time import, open and first recall in N new processes (0: not at all)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    script_main(parse, run, report, argv)


if __name__ == "__main__":
    main()
