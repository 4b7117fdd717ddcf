"""Helpers shared by the command modules: opening the store, printing, error mapping."""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from pydantic import BaseModel

from ..errors import KenningError, redact
from ..requests import DEFAULT_DATASET

if TYPE_CHECKING:
    from ..client import Kenning

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["ALIASES", "CLI_ONLY", "check_path", "count", "dataset_option", "dump_json", "fail", "json_arg",
           "open_kenning", "read_json", "run", "scope_options", "short_time"]

#: CLI spellings of the verbs' parameters (``kenning.requests``), listed in docs/architecture.md: TEXTS,
#: --file, --messages and --facts give ``content``; ``--asc`` is ``descending=False``; ``--context`` is ``context``
ALIASES = {"texts": "content", "files": "content", "messages": "content", "facts": "content", "asc": "descending",
           "context_": "context"}
#: options of the CLI alone, not parameters of any verb
CLI_ONLY = frozenset({"as_json", "yes"})
#: ``--dataset`` of a verb that names one dataset (default ``main``)
dataset_option = click.option("--dataset", "-d", default=DEFAULT_DATASET, show_default=True)


def scope_options(*names: str) -> Callable[[F], F]:
    """``--user``, ``--agent``, ``--session`` (those named) and ``--filters`` when named."""
    helps = {"user": "Only this user's memories.", "agent": "Only this agent's memories.",
             "session": "Only this session's memories.",
             "filters": 'Metadata conditions as JSON: \'{"topic": "billing", "priority": {"gte": 2}}\'.'}

    def decorate(fn: F) -> F:
        for name in reversed(names):
            fn = click.option(f"--{name}", default=None, help=helps[name])(fn)
        return fn

    return decorate


def json_arg(value: str | None, name: str) -> Any:
    """An option's JSON text, read (None stays None)."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        fail(f"{name} is not JSON: {exc.msg}")


def read_json(name: str) -> Any:
    """A JSON file ('-': standard input)."""
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        return json.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {name}: {exc}")
    except json.JSONDecodeError as exc:
        fail(f"{name} is not JSON: {exc.msg} (line {exc.lineno})")


def check_path(db: str | None, create: bool) -> None:
    """A typo in ``--db`` must not silently make a new store: commands that read need the file;
    commands that write create it, but never the missing directories above it."""
    if db is None or db == ":memory:" or ("://" in db and not db.startswith("sqlite://")):
        return  # the default store (its directory is made), in-memory, or a server URL
    path = Path(db[len("sqlite://"):].removeprefix("/") if db.startswith("sqlite://") else db).expanduser()
    if not str(path) or str(path) == ":memory:" or path.exists():
        return
    if not create:
        fail(f"no store at {path}: check --db (or KENNING_DB), or remember something to create it")
    if not path.parent.is_dir():
        fail(f"directory {path.parent} does not exist: create it first (mkdir -p {path.parent})")


@contextmanager
def open_kenning(ctx: click.Context, *, create: bool = False, **settings: Any) -> Iterator[Kenning]:
    """The store ``--db`` names; ``create``: a command that writes may make the file."""
    from ..client import Kenning

    check_path(ctx.obj.get("db"), create)
    with run():
        kn = Kenning(ctx.obj.get("db"), **settings)
    try:
        yield kn
    finally:
        kn.close()


@contextmanager
def run() -> Iterator[None]:
    """Map library errors to ``error: …`` on stderr and exit code 1."""
    try:
        yield
    except KenningError as exc:
        fail(f"{exc.message}")


def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    with run():
        return fn(*args, **kwargs)


def fail(message: str, code: int = 1) -> None:
    click.echo(f"error: {redact(message)}", err=True)  # a URL's password never printed
    sys.exit(code)


def dump_json(value: Any) -> None:
    if isinstance(value, BaseModel):
        click.echo(value.model_dump_json(indent=2))
    elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
        click.echo(json.dumps([v.model_dump(mode="json") for v in value], indent=2))
    else:
        click.echo(json.dumps(value, indent=2, default=str))


def short_time(value: dt.datetime | None) -> str:
    if value is None:
        return "…"
    if value.hour == value.minute == value.second == 0:
        return value.strftime("%Y-%m-%d")
    return value.strftime("%Y-%m-%d %H:%M")


_PLURALS = {"entity": "entities", "memory": "memories"}


def count(n: int, noun: str) -> str:
    """``1 fact``, ``2 facts``, ``3 entities``."""
    return f"{n} {noun if n == 1 else _PLURALS.get(noun, noun + 's')}"
