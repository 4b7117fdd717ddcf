"""The ``kenning`` command: thin shells over the ``Kenning`` facade, one command per verb.

Library errors are turned into a clean message and a non-zero exit code in one place
(:func:`kenning.cli._common.run`).
"""

from __future__ import annotations

import importlib

import click

__all__ = ["cli", "main"]

# Each module adds its commands to the group through ``register(group)``.
_MODULES = ("core", "memories", "server", "ui", "evaluate", "migrate")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--db",
    envvar="KENNING_DB",
    default=None,
    metavar="PATH|URL",
    help="Store: a file path, sqlite:///path, :memory: or postgresql://… [env KENNING_DB]",
)
@click.version_option(package_name="kenning")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """kenning: persistent, temporal knowledge-graph memory for AI agents."""
    ctx.ensure_object(dict)
    ctx.obj["db"] = db


for _name in _MODULES:
    importlib.import_module(f"{__name__}.{_name}").register(cli)


def main() -> None:
    cli(prog_name="kenning")
