"""Token-aware chunking with overlap. Token counting works offline: a regex that splits words,
numbers and punctuation the way sub-word tokenizers roughly do (about 1.3 tokens per English
word), so chunk sizes track model token budgets without a tokenizer download.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Chunk", "chunk_text", "count_tokens"]

_TOKEN = re.compile(r"\w{1,6}|[^\w\s]", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


@dataclass(frozen=True)
class Chunk:
    position: int
    text: str
    token_count: int


def chunk_text(text: str, size: int = 256, overlap: int = 32) -> list[Chunk]:
    """Split ``text`` into chunks of at most ``size`` tokens, sentences kept whole where they
    fit, neighbouring chunks sharing about ``overlap`` tokens."""
    text = text.strip()
    if not text:
        return []
    total = count_tokens(text)
    if total <= size:
        return [Chunk(0, text, total)]
    pieces: list[tuple[str, int]] = []
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if sentence:
            pieces.extend(_split_long(sentence, size))
    chunks: list[Chunk] = []
    current: list[tuple[str, int]] = []
    tokens = 0
    for piece, n in pieces:
        if current and tokens + n > size:
            chunks.append(Chunk(len(chunks), " ".join(p for p, _ in current), tokens))
            current, tokens = _tail(current, overlap)
        current.append((piece, n))
        tokens += n
    if current:
        chunks.append(Chunk(len(chunks), " ".join(p for p, _ in current), tokens))
    return chunks


def _tail(pieces: list[tuple[str, int]], overlap: int) -> tuple[list[tuple[str, int]], int]:
    """The last pieces that together stay within ``overlap`` tokens."""
    kept: list[tuple[str, int]] = []
    tokens = 0
    for piece, n in reversed(pieces):
        if tokens + n > overlap:
            break
        kept.insert(0, (piece, n))
        tokens += n
    return kept, tokens


def _split_long(sentence: str, size: int) -> list[tuple[str, int]]:
    """A sentence longer than a chunk is cut at token boundaries."""
    n = count_tokens(sentence)
    if n <= size:
        return [(sentence, n)]
    out: list[tuple[str, int]] = []
    matches = list(_TOKEN.finditer(sentence))
    for start in range(0, len(matches), size):
        group = matches[start : start + size]
        piece = sentence[group[0].start() : group[-1].end()]
        out.append((piece, len(group)))
    return out
