"""``kenning migrate``: copy a whole store to another backend, and check the copy."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import fail, run
from ._progress import progress

__all__ = ["register"]


def register(group: click.Group) -> None:
    group.add_command(migrate)


def _sqlite_path(url: str) -> str | None:
    """The file a SQLite URL names (``None`` for PostgreSQL and ``:memory:``)."""
    if url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return None
    path = url[len("sqlite://"):].removeprefix("/") if url.startswith("sqlite://") else url
    return None if path in ("", ":memory:") else str(Path(path).expanduser())


@click.command()
@click.option("--from", "source_url", required=True, metavar="URL", help="The store to copy.")
@click.option("--to", "target_url", required=True, metavar="URL", help="An empty store to copy into.")
@click.option("--batch-size", default=1000, show_default=True, help="Rows read and written at a time.")
def migrate(source_url: str, target_url: str, batch_size: int) -> None:
    """Copy a whole store (memories, chunks, entities, facts with both timelines, provenance,
    vectors, lifecycle state) into an empty store, then compare the row counts of every table.
    Exits with status 1 if any count differs. Works in both directions.

    Example:

        kenning migrate --from sqlite:///memory.db --to postgresql://user@host/kenning
    """
    from ..store import open_store
    from ..store.copy import copy_store

    if source_url == target_url:
        fail("--from and --to name the same store")
    path = _sqlite_path(source_url)
    if path is not None and not Path(path).is_file():
        fail(f"no SQLite store at {path}")
    with run():
        source = open_store(source_url)
        try:
            target = open_store(target_url)
            try:
                with progress("copying", "rows") as advance:
                    report = copy_store(source, target, batch=batch_size, progress=lambda _, n: advance(n))
            finally:
                target.close()
        finally:
            source.close()
    width = max(len(name) for name in report.counts) if report.counts else 5
    click.echo(f"{'table':<{width}}  {'source':>10}  {'target':>10}")
    for name, (a, b) in report.counts.items():
        mark = "" if a == b else "  MISMATCH"
        click.echo(f"{name:<{width}}  {a:>10}  {b:>10}{mark}")
    if not report.ok:
        fail(f"counts differ in {', '.join(report.mismatches)}")
    click.echo(f"copied {sum(a for n, (a, _) in report.counts.items() if '.' not in n)} rows")
