"""Progress of long commands: a bar with counts and rate on a terminal, one summary line
otherwise, nothing with ``--json``. The library reports progress through callbacks that take a
count of items just done; it never prints."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

__all__ = ["progress"]


@contextmanager
def progress(label: str, unit: str, *, total: int | None = None,
             quiet: bool = False) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``. On a terminal (stderr) a tqdm bar; otherwise, once the work ends
    without an error, ``label: N units in S s (R/s)`` on stderr; with ``quiet`` nothing."""
    if quiet:
        yield lambda n=1: None  # type: ignore[misc]  # a lambda's default
        return
    if sys.stderr.isatty():
        from tqdm import tqdm

        with tqdm(total=total, desc=label, unit=f" {unit}", file=sys.stderr, dynamic_ncols=True) as bar:
            yield bar.update
        return
    done = [0]
    started = time.perf_counter()

    def advance(n: int = 1) -> None:
        done[0] += n

    yield advance
    seconds = time.perf_counter() - started
    rate = f"{done[0] / seconds:.1f}/s" if seconds > 0 else "-"
    click.echo(f"{label}: {done[0]} {unit} in {seconds:.1f}s ({rate})", err=True)
