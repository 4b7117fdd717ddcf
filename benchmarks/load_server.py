"""Load test of the HTTP server: N concurrent clients remembering and recalling for a fixed
time against one ``kenning serve`` on 127.0.0.1 (a subprocess, with a fresh SQLite file).

Reports requests/s, p50/p95 latency per verb, server errors (must be 0) and lost writes (the
server's memory count must equal the remembers that succeeded).

    python benchmarks/load_server.py --clients 8 --seconds 20
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import httpx

ROOT = str(Path(__file__).resolve().parents[1])
WORDS = ["Alice", "Bob", "Carol", "Dave", "Acme", "Globex", "Initech", "Paris", "Berlin", "Oslo"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}


def start_server(db: str) -> tuple[subprocess.Popen, str, str]:
    key = subprocess.run([sys.executable, "-m", "kenning", "--db", db, "keys", "create", "--admin"],
                         env=_env(), check=True, capture_output=True, text=True).stdout.strip()
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kenning", "--db", db, "serve", "--port", str(port),
                             "--log-level", "warning"], env=_env())
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{base}/v1/health").raise_for_status()
            return proc, base, key
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("server did not start")


def client(n: int, base: str, key: str, stop: float, datasets: int, out: dict) -> None:
    lat: dict[str, list[float]] = defaultdict(list)
    statuses: dict[int, int] = defaultdict(int)
    remembered = defaultdict(int)
    i = 0
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        while time.monotonic() < stop:
            dataset = f"load{(n + i) % datasets}"
            a, b, c = WORDS[i % 10], WORDS[(i * 3 + n) % 10], WORDS[(i * 7 + 1) % 10]
            if i % 2 == 0:
                verb, path = "remember", "/v1/remember"
                body = {"content": f"{a} met {b} in {c} (client {n}, note {i}).", "dataset": dataset}
            else:
                verb, path = "recall", "/v1/recall"
                body = {"query": f"Where did {a} meet {b}?", "dataset": dataset}
            started = time.perf_counter()
            resp = http.post(path, json=body)
            lat[verb].append(time.perf_counter() - started)
            statuses[resp.status_code] += 1
            if verb == "remember" and resp.status_code == 200:
                remembered[dataset] += len(resp.json()["memory_ids"]) - len(resp.json()["skipped"])
            i += 1
    out[n] = {"lat": lat, "statuses": statuses, "remembered": remembered}


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 1 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--datasets", type=int, default=4, help="Datasets the clients share.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, base, key = start_server(str(Path(tmp) / "load.db"))
        try:
            results: dict[int, dict] = {}
            stop = time.monotonic() + args.seconds
            threads = [threading.Thread(target=client, args=(n, base, key, stop, args.datasets, results))
                       for n in range(args.clients)]
            started = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - started
            report = summarize(results, elapsed, base, key, args)
        finally:
            proc.terminate()
            proc.wait(10)
    print(json.dumps(report, indent=2))
    if report["server_errors"] or report["lost_writes"]:
        raise SystemExit(1)


def summarize(results: dict, elapsed: float, base: str, key: str, args: argparse.Namespace) -> dict:
    lat: dict[str, list[float]] = defaultdict(list)
    statuses: dict[int, int] = defaultdict(int)
    remembered: dict[str, int] = defaultdict(int)
    for r in results.values():
        for verb, values in r["lat"].items():
            lat[verb] += values
        for code, count in r["statuses"].items():
            statuses[code] += count
        for ds, count in r["remembered"].items():
            remembered[ds] += count
    auth = {"Authorization": f"Bearer {key}"}
    stored = {ds: httpx.get(f"{base}/v1/stats", params={"dataset": ds}, headers=auth).json()["memories"]
              for ds in remembered}
    total = sum(len(v) for v in lat.values())
    return {
        "clients": args.clients, "seconds": round(elapsed, 1), "requests": total,
        "requests_per_s": round(total / elapsed, 1),
        "latency_ms": {verb: {"n": len(v), "p50": round(_pct(v, 50), 1), "p95": round(_pct(v, 95), 1)}
                       for verb, v in lat.items()},
        "statuses": dict(statuses),
        "server_errors": sum(c for s, c in statuses.items() if s >= 500),
        "remembered": sum(remembered.values()), "stored": sum(stored.values()),
        "lost_writes": sum(remembered.values()) - sum(stored.values()),
    }


if __name__ == "__main__":
    main()
