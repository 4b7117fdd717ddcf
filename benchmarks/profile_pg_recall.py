"""Where a PostgreSQL recall's time goes: the client's CPU, the server's CPU, and each store read.

    python benchmarks/bench_backends.py --facts 100000 --dir /tmp/b100k --pg-copy   # build once
    python benchmarks/profile_pg_recall.py --facts 100000 --dir /tmp/b100k
    python benchmarks/profile_pg_recall.py --facts 100000 --pg postgresql://user@host/db

Asks ``bench_backends.py``'s questions (the same ``--facts`` and ``--seed``) of its PostgreSQL
store: 20 recalls to warm the connections, then ``--queries`` timed recalls (hybrid, top 10),
printing p50 / p95, and per recall the client process's CPU time and the server's (every backend
of a local server, read from ``/proc``; 0 for a remote one). Then each store read those recalls
made is replayed, one read after another on one connection, and each kind of read prints its
calls, wall time, client CPU and its backend's CPU per recall: what each costs, apart from the
others it runs beside in a recall. With ``--dir``, the server in ``DIR/pgdata`` is started if needed
and stopped at the end.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_backends import DATASET, start_postgres
from common import percentiles, print_table
from synth import generate

from kenning import Kenning
from kenning.store.postgres.store import PostgresStore

READS = ("lexical", "vector", "get_memories", "get_chunks", "chunk_owners", "fact_owners", "get_facts", "memory_facts",
         "memory_neighbors", "neighbors", "find_entities", "get_entities", "live_facts_touching")


def _ticks(pid: str) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu(url: str, backend: int | None = None) -> float:
    """CPU seconds of one backend, or of every process of the local server holding ``url``'s
    socket (a process that exits meanwhile takes its share with it); 0 for a remote server."""
    from urllib.parse import parse_qs, urlsplit

    if backend is not None:
        return _ticks(str(backend))
    pidfile = Path(parse_qs(urlsplit(url).query).get("host", [""])[0]) / "postmaster.pid"
    if not pidfile.exists():
        return 0.0
    postmaster = pidfile.read_text().split()[0]
    children = [p.parent.name for p in Path("/proc").glob("[0-9]*/stat") if _parent(p) == postmaster]
    return sum(_ticks(pid) for pid in [postmaster, *children])


def _parent(stat: Path) -> str:
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[1]
    except OSError:
        return ""


def capture() -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """Record every store read from now on (the list fills as recalls run)."""
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    lock = threading.Lock()
    for name in READS:
        inner = getattr(PostgresStore, name)

        def wrapper(self: PostgresStore, *args: Any, _inner: Any = inner, _name: str = name, **kwargs: Any) -> Any:
            with lock:
                calls.append((_name, args, kwargs))
            return _inner(self, *args, **kwargs)

        setattr(PostgresStore, name, functools.wraps(inner)(wrapper))
    return calls


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dir", default=None, help="the bench_backends.py --dir whose pgdata holds the store")
    parser.add_argument("--pg", default=None, help="the store's URL instead")
    args = parser.parse_args(argv)
    server, url = (None, args.pg) if args.pg else start_postgres(args.dir, keep=True)
    corpus = generate(args.facts, seed=args.seed, questions=args.queries)
    try:
        originals = {name: getattr(PostgresStore, name) for name in READS}
        calls = capture()
        with Kenning(url) as kn:
            for q in corpus.questions[:20]:
                kn.recall(q.text, dataset=DATASET)
            calls.clear()
            times, cpu, served = [], time.process_time(), server_cpu(url)
            for q in corpus.questions:
                started = time.perf_counter()
                kn.recall(q.text, dataset=DATASET, top_k=10)
                times.append((time.perf_counter() - started) * 1000)
            cpu, served = time.process_time() - cpu, server_cpu(url) - served
        n = len(times)
        p = percentiles(times, (50, 95))
        print(f"recall p50 {p['p50']:.2f} ms, p95 {p['p95']:.2f} ms; per recall: client CPU {cpu * 1000 / n:.2f} ms,"
              f" server CPU {served * 1000 / n:.2f} ms; load average {os.getloadavg()[0]:.2f}")
        for name, method in originals.items():
            setattr(PostgresStore, name, method)
        by = defaultdict(list)
        for name, a, k in calls:
            by[name].append((a, k))
        store = PostgresStore(url, pool_size=1)
        with store._conn() as conn:
            backend = conn.execute("SELECT pg_backend_pid() AS pid").fetchall()[0]["pid"]
        try:
            rows: list[list[Any]] = []
            for name, made in sorted(by.items()):
                for a, k in made[:10]:  # prepared, as in a warm process
                    getattr(store, name)(*a, **k)
                started, cpu, served = time.perf_counter(), time.process_time(), server_cpu(url, backend)
                for a, k in made:
                    getattr(store, name)(*a, **k)
                spent = (time.perf_counter() - started, time.process_time() - cpu, server_cpu(url, backend) - served)
                rows.append([name, round(len(made) / n, 2), *(round(x * 1000 / n, 2) for x in spent)])
            rows.append(["total", round(len(calls) / n, 2), *(round(sum(r[i] for r in rows), 2) for i in (2, 3, 4))])
            print_table(["read", "calls a recall", "wall ms", "client CPU ms", "server CPU ms"], rows)
        finally:
            store.close()
    finally:
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
