"""Helpers shared by the command modules: opening the store, printing, error mapping."""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from pydantic import BaseModel

from ..errors import KenningError

T = TypeVar("T")

__all__ = ["count", "dump_json", "fail", "open_kenning", "run", "short_time"]


@contextmanager
def open_kenning(ctx: click.Context, **settings: Any):  # noqa: ANN201
    from ..client import Kenning

    with run():
        kn = Kenning(ctx.obj.get("db"), **settings)
    try:
        yield kn
    finally:
        kn.close()


@contextmanager
def run():  # noqa: ANN201
    """Map library errors to ``error: …`` on stderr and exit code 1."""
    try:
        yield
    except KenningError as exc:
        fail(f"{exc.message}")


def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    with run():
        return fn(*args, **kwargs)


def fail(message: str, code: int = 1) -> None:
    click.echo(f"error: {message}", err=True)
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
