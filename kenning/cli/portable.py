"""``kenning export`` and ``kenning import``: a store's datasets to a file and back."""

from __future__ import annotations

import click

from ._common import call, dump_json, open_kenning
from ._progress import progress

__all__ = ["register"]


def register(group: click.Group) -> None:
    group.add_command(export)
    group.add_command(import_)


@click.command()
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False, writable=True),
              help="The file to write (replaced only once the export is complete).")
@click.option("--dataset", "-d", "datasets", multiple=True, help="A dataset to export (repeat; default: all).")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "graphml", "json"]), default="jsonl",
              show_default=True, help="jsonl: everything, for `kenning import`; graphml / json: the graph"
              " (entities and facts) for graph tools.")
@click.option("--no-vectors", is_flag=True, help="Leave the vectors out (a smaller file that imports into"
              " a store with any embedder, which then embeds it).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def export(ctx, out, datasets, fmt, no_vectors, as_json) -> None:
    """Write datasets (memories, chunks, entities, facts with both timelines, provenance,
    datasets, owners and grants; never API keys) to a versioned JSON Lines file, sorted, so the
    same contents always give the same bytes.

    Example: kenning export --out backup.jsonl --dataset main
    """
    with open_kenning(ctx) as kn, progress("exporting", "rows", quiet=as_json) as advance:
        report = call(kn.export, out, datasets=list(datasets) or None, format=fmt, vectors=not no_vectors,
                           progress=advance)
    if as_json:
        dump_json(report)
    else:
        rows = ", ".join(f"{n} {table}" for table, n in report.rows.items())
        click.echo(f"exported {', '.join(report.datasets) or 'nothing'} to {out}: {rows or 'no rows'}")


@click.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--no-vectors", is_flag=True, help="Ignore the file's vectors and embed the rows with this"
              " store's embedder (for a store whose embedder differs from the file's).")
@click.option("--accounts", is_flag=True, help="Also apply the file's users (with their admin flags),"
              " dataset owners and grants (left out by default).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def import_(ctx, path, no_vectors, accounts, as_json) -> None:
    """Load a file written by `kenning export` into this store (SQLite or PostgreSQL), with the
    same ids, in one transaction. Only the datasets the file's header names are touched (a row
    of any other is an error). Rows the store already holds identically are skipped; a row held
    with other values is an error and nothing is imported. Users, admin flags, owners and grants
    in the file are applied only with --accounts.

    Example: kenning --db postgresql://localhost/kenning import backup.jsonl
    """
    with open_kenning(ctx, create=True) as kn, progress("importing", "rows", quiet=as_json) as advance:
        report = call(kn.import_, path, vectors=not no_vectors, accounts=accounts, progress=advance)
    if as_json:
        dump_json(report)
        return
    rows = ", ".join(f"{n} {table}" for table, n in report.rows.items() if n)
    skipped = sum(report.skipped.values())
    click.echo(f"imported {', '.join(report.datasets) or 'nothing'}: {rows or 'no new rows'}"
               + (f" ({skipped} rows already here, skipped)" if skipped else ""))
    if report.users:
        click.echo("users created: " + ", ".join(n + (" (admin)" if n in report.admins else "")
                                                 for n in report.users))
    if ignored := sum(report.ignored.values()):
        click.echo(f"not applied: {ignored} account rows of the file (users, owners, grants);"
                   " --accounts applies them")
