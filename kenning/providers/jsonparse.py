"""Tolerant reading of a model's JSON answer.

Models wrap JSON in ``<think>`` blocks, code fences or a sentence of prose even when asked for
structured output. We strip those, take the first JSON object that decodes, and validate it;
failures raise ``ModelResponseError`` carrying the validation text, which the extractor feeds
back to the model on its one retry.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from ..errors import ModelResponseError

__all__ = ["find_json_object", "parse_model", "strip_reasoning"]

M = TypeVar("M", bound=BaseModel)

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_END = re.compile(r"</(think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_MAX_ERROR = 1500


def strip_reasoning(text: str) -> str:
    """Remove ``<think>…</think>`` blocks (and an unopened one closed by a bare ``</think>``)."""
    text = _THINK.sub("", text)
    closers = list(_THINK_END.finditer(text))
    if closers:
        text = text[closers[-1].end() :]
    return text.strip()


def find_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model answer; ``ModelResponseError`` when there is none."""
    text = strip_reasoning(text)
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(value, dict):
                return value
            start = candidate.find("{", start + 1)
    preview = text[:200].replace("\n", " ")
    raise ModelResponseError(f"the answer contains no JSON object (it starts: {preview!r})")


def parse_model(text: str, model: type[M]) -> M:
    """Find the JSON object in ``text`` and validate it as ``model``."""
    data = find_json_object(text)
    try:
        return model.model_validate(data)
    except PydanticValidationError as exc:
        raise ModelResponseError(f"the answer does not match the schema: {_describe(exc)}") from None


def _describe(exc: PydanticValidationError) -> str:
    lines = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"]) or "(root)"
        lines.append(f"{where}: {error['msg']}")
    return "; ".join(lines)[:_MAX_ERROR]
