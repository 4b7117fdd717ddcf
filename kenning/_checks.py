"""Argument checks every verb shares: each turns bad input into a ``ValidationError`` naming the
argument, before anything is stored or queried.

Metadata is bounded here once for every surface (Python, HTTP, MCP, CLI): a JSON object with
string keys, at most ``METADATA_DEPTH`` levels deep, ``METADATA_KEYS`` keys in all and
``METADATA_BYTES`` bytes as JSON, with finite numbers only. Anything larger could not be read
back by every store (a 600-level object broke serialization for every reader of its dataset).
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Sequence
from typing import Any

from ._identity import ID_CHARS
from .errors import ValidationError

__all__ = [
    "METADATA_BYTES",
    "METADATA_DEPTH",
    "METADATA_KEYS",
    "check_choice",
    "check_flag",
    "check_int",
    "check_metadata",
    "check_number",
    "check_scope",
    "check_text",
    "nfc",
]

METADATA_DEPTH = 16
METADATA_KEYS = 1000
METADATA_BYTES = 64 * 1024


def nfc(value: Any, _depth: int = 0) -> Any:
    """``value`` with every string in it (in lists, tuples, dict keys and values, and the
    fields of a pydantic model such as a MemoryInput or a Message) in Unicode NFC, the
    composed form: "José" typed as ``e`` + combining accent is the same name as "José" with
    ``é``, for extraction, content identity and search alike. Anything else is returned as is,
    and so is what lies deeper than any input may nest (the checks refuse it after)."""
    if isinstance(value, str):
        return value if unicodedata.is_normalized("NFC", value) else unicodedata.normalize("NFC", value)
    if _depth > 2 * METADATA_DEPTH:
        return value
    deeper = _depth + 1
    if isinstance(value, list):
        return [nfc(v, deeper) for v in value]
    if isinstance(value, tuple):
        return tuple(nfc(v, deeper) for v in value)
    if isinstance(value, dict):
        return {nfc(k, deeper): nfc(v, deeper) for k, v in value.items()}
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        changed = {name: nfc(getattr(value, name), deeper) for name in type(value).model_fields}
        return value.model_copy(update={k: v for k, v in changed.items() if v is not getattr(value, k)})
    return value


def check_text(value: Any, name: str, *, empty: bool = False, optional: bool = False,
               max_chars: int | None = None) -> Any:
    """A string that UTF-8 can encode (no lone surrogates), not blank unless ``empty``."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string, not {type(value).__name__}")
    if not empty and not value.strip():
        raise ValidationError(f"{name} must not be empty")
    if max_chars is not None and len(value) > max_chars:
        raise ValidationError(f"{name} is {len(value)} characters; the limit is {max_chars}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{name} is not valid Unicode text: {exc.reason} at {exc.start}") from None
    return value


def check_scope(value: Any, name: str) -> str | None:
    """A ``user``, ``agent`` or ``session`` id: None, or text of at most ``ID_CHARS`` characters."""
    return check_text(value, name, optional=True, max_chars=ID_CHARS)


def check_choice(value: Any, name: str, choices: Sequence[str]) -> Any:
    """One of ``choices`` (None passes: an unset filter)."""
    if value is not None and value not in choices:
        raise ValidationError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


def check_flag(value: Any, name: str, *, optional: bool = False) -> Any:
    """A real ``bool``: ``"no"`` or ``1`` is refused rather than read as true."""
    if value is None and optional:
        return None
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be true or false, not {value!r}")
    return value


def check_int(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name} must be an integer, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValidationError(f"{name} must be between {low} and {high}, not {value}")
    return value


def check_number(value: Any, name: str, low: float, high: float, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{name} must be a number, not {type(value).__name__}")
    if not math.isfinite(value) or not low <= value <= high:
        raise ValidationError(f"{name} must be a finite number between {low:g} and {high:g}, not {value}")
    return value


def check_metadata(value: Any) -> dict[str, Any]:
    """A copy of ``value`` if it is bounded JSON metadata (None is ``{}``); else ValidationError."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(f"metadata must be a JSON object, not {type(value).__name__}")
    keys = 0
    stack: list[tuple[Any, int, str]] = [(value, 1, "metadata")]
    while stack:  # iterative: a 5,000-level object must not exhaust Python's recursion limit
        item, depth, where = stack.pop()
        if isinstance(item, (dict, list)) and depth > METADATA_DEPTH:
            raise ValidationError(f"metadata is nested deeper than {METADATA_DEPTH} levels (at {where})")
        if isinstance(item, dict):
            keys += len(item)
            if keys > METADATA_KEYS:
                raise ValidationError(f"metadata has more than {METADATA_KEYS} keys")
            for key, child in item.items():
                if not isinstance(key, str):
                    raise ValidationError(f"metadata keys must be strings, not {type(key).__name__} ({where})")
                check_text(key, f"metadata key at {where}", empty=True)
                stack.append((child, depth + 1, f"{where}.{key}"))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, f"{where}[{i}]") for i, child in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValidationError(f"metadata holds {item!r} at {where}: only finite numbers are JSON")
        elif isinstance(item, str):
            check_text(item, where, empty=True)
        elif item is not None and not isinstance(item, (bool, int, float)):
            raise ValidationError(f"metadata holds a {type(item).__name__} at {where}: use JSON values")
    try:
        size = len(json.dumps(value, allow_nan=False, ensure_ascii=False).encode())
    except ValueError as exc:  # e.g. an integer too long to print
        raise ValidationError(f"metadata is not storable JSON: {exc}") from None
    if size > METADATA_BYTES:
        raise ValidationError(f"metadata is {size} bytes as JSON; the limit is {METADATA_BYTES}")
    return json.loads(json.dumps(value))
