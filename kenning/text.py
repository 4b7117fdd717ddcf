"""The keys names and relations are matched under, written once for the pipeline, the store's
callers and recall."""

from __future__ import annotations

import re

__all__ = ["normalize_name", "normalize_relation"]

_POSSESSIVE = re.compile(r"['’]s\b")
_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


def normalize_name(name: str) -> str:
    """Key under which entity names are resolved: case, whitespace, punctuation, possessives."""
    text = _POSSESSIVE.sub("", name.casefold())
    text = _NON_WORD.sub(" ", text).strip()
    if text.startswith("the "):
        text = text[4:]
    return text


def normalize_relation(relation: str) -> str:
    text = _NON_WORD.sub("_", relation.strip().casefold()).strip("_")
    return text or "related_to"
