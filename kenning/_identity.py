"""Content identity, dataset names and fixed choices: the checks every input path shares."""

from __future__ import annotations

import hashlib
import re
from typing import Any, get_args

from .errors import ValidationError

__all__ = ["check_choice", "check_dataset", "content_hash"]

_WS = re.compile(r"\s+")
_DATASET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")


def content_hash(text: str) -> str:
    """Content identity: sha-256 of the text with whitespace normalized."""
    return hashlib.sha256(_WS.sub(" ", text).strip().encode()).hexdigest()


def check_dataset(name: str) -> str:
    if not isinstance(name, str) or not _DATASET.match(name):
        raise ValidationError(
            f"invalid dataset name {name!r}: use 1-128 letters, digits, '_', '-' or '.'"
        )
    return name


def check_choice(name: str, value: object, allowed: Any) -> None:
    """``value`` is one of the Literal ``allowed``'s values, or a ValidationError naming them."""
    choices = get_args(allowed)
    if value not in choices:
        raise ValidationError(f"unknown {name} {value!r}; choose one of {', '.join(choices)}")
