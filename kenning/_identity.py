"""Content identity and dataset names: the two checks every input path shares."""

from __future__ import annotations

import hashlib
import re

from .errors import ValidationError

__all__ = ["DATASET_PATTERN", "DEFAULT_DATASET", "ID_CHARS", "check_dataset", "check_user_name", "content_hash"]

_WS = re.compile(r"\s+")
#: a dataset name: 1-128 letters, digits, '_', '-' or '.', not starting with a symbol
#: the dataset every verb uses when none is named
DEFAULT_DATASET = "main"
#: the longest id a caller may give (memory, fact, user, agent, session ids)
ID_CHARS = 200
DATASET_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$"
_DATASET = re.compile(DATASET_PATTERN)
_USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@\-]{0,63}$")


def content_hash(text: str, *scope: str | None) -> str:
    """Content identity: sha-256 of the text with whitespace normalized. ``scope`` parts (a
    user, agent, session; a message's place) make the same text in another scope another
    memory; without any, the identity is the text's alone."""
    normalized = _WS.sub(" ", text).strip()
    if any(part is not None for part in scope):
        normalized = "\x1f".join([*(part or "" for part in scope), normalized])
    return hashlib.sha256(normalized.encode()).hexdigest()


def check_dataset(name: str) -> str:
    if not isinstance(name, str) or not _DATASET.fullmatch(name):
        raise ValidationError(
            f"invalid dataset name {name!r}: use 1-128 letters, digits, '_', '-' or '.'"
        )
    return name


def check_user_name(name: str) -> str:
    if not isinstance(name, str) or not _USER.fullmatch(name):
        raise ValidationError(
            f"invalid user name {name!r}: use 1-64 letters, digits, '_', '-', '.' or '@'"
        )
    return name
