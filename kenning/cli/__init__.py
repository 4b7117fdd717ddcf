"""The ``kenning`` command: thin shells over the ``Kenning`` facade, one command per verb.

Library errors are turned into a clean message and a non-zero exit code in one place
(:func:`kenning.cli._common.run`).
"""

from __future__ import annotations

import importlib

import click

__all__ = ["cli", "main"]

# Each module adds its commands to the group through ``register(group)``.
_MODULES = ("core", "memories", "server", "ui", "evaluate", "migrate", "portable")


class _Group(click.Group):
    """Accepts ``--db`` after the subcommand too (``kenning stats --db x.db``): it is hoisted
    in front of the subcommand before parsing (never past a ``--``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        hoisted, rest = [], []
        tokens = iter(args)
        for token in tokens:
            if token == "--":
                rest += [token, *tokens]
                break
            value = next(tokens, None) if token == "--db" else None
            if value is not None:
                hoisted += [token, value]
            elif token.startswith("--db="):
                hoisted.append(token)
            else:
                rest.append(token)  # a bare trailing --db stays, for click to report
        return super().parse_args(ctx, hoisted + rest)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--db",
    envvar="KENNING_DB",
    default=None,
    metavar="PATH|URL",
    help="Store: a file path, sqlite:///path, :memory: or postgresql://… (before or after the "
    "command) [env KENNING_DB]",
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
