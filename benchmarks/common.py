"""Helpers shared by the benchmark scripts: the machine a run happened on, percentiles, peak
memory and a plain-text table."""

from __future__ import annotations

import datetime as dt
import os
import platform
import resource
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["dir_size", "machine_info", "peak_rss_mb", "percentiles", "print_table"]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gb() -> float | None:
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        return round(pages / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine_info() -> dict[str, Any]:
    """What a figure depends on: CPU, cores, memory, Python, SQLite and numpy versions."""
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "numpy": np.__version__,
        # other work on the machine moves latency figures: say how busy it was
        "load_avg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }


def percentiles(samples: Sequence[float], points: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    """``{"p50": …, …}`` of ``samples`` (linear interpolation); an empty list gives zeros."""
    if not samples:
        return {f"p{p}": 0.0 for p in points}
    values = np.percentile(np.asarray(samples, dtype=float), list(points))
    return {f"p{p}": float(v) for p, v in zip(points, values)}


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (``ru_maxrss`` is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def rss_mb() -> float:
    """Resident memory of this process now (Linux ``/proc``; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return peak_rss_mb()


def private_mb() -> float | None:
    """This process's own (anonymous) resident memory now, without mapped file pages such as
    SQLite's memory-mapped database or the vector index files, which are the kernel's shared
    page cache (Linux only; None elsewhere)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def dir_size(path: Path) -> int:
    """Bytes of a database and its side files (``-wal``, ``-shm``)."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def print_machine(info: dict[str, Any]) -> None:
    print(
        f"machine: {info['cpu']}, {info['cores']} cores, {info['memory_gb']} GB, {info['os']}; "
        f"Python {info['python']}, SQLite {info['sqlite']}, numpy {info['numpy']}; {info['date']}; "
        f"load average {info.get('load_avg_1m')}"
    )


def script_main(parse: Any, run: Any, report: Any, argv: Sequence[str] | None = None) -> None:
    """The shared ``main`` of a benchmark script: parse the options, run, print JSON or a report."""
    import json

    args = parse(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
