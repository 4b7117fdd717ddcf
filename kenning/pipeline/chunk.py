"""Token-aware chunking with overlap. Token counting works offline: a regex that splits words,
numbers and punctuation the way sub-word tokenizers roughly do (about 1.3 tokens per English
word), so chunk sizes track model token budgets without a tokenizer download.

Plain text (no ``format``, or ``text``) is cut at sentences. A document read from a file
(kenning.files) is Markdown, with a form feed between PDF pages; it is cut where its structure
says first (headings, pages, paragraphs), then at sentences and tokens. Tables stay whole, or
become row groups that repeat the header; fenced code blocks stay whole, or become line groups
inside their fences. Each such chunk carries its location (page, slide, sheet, heading path),
read from the text alone: the location is a function of the stored text and its format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from ..models import Location

__all__ = ["STRUCTURED_FORMATS", "Chunk", "chunk_text", "count_tokens"]

#: formats whose text is chunked by structure (what kenning.files emits for each)
STRUCTURED_FORMATS = frozenset({"markdown", "html", "pdf", "docx", "pptx", "xlsx", "csv", "json"})

_TOKEN = re.compile(r"\w{1,6}|[^\w\s]", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


@dataclass(frozen=True)
class Chunk:
    position: int
    text: str
    token_count: int
    location: Location | None = None


def chunk_text(text: str, size: int = 256, overlap: int = 32, format: str | None = None) -> list[Chunk]:
    """Split ``text`` into chunks of at most ``size`` tokens, sentences kept whole where they
    fit, neighbouring chunks sharing about ``overlap`` tokens; a text of a structured
    ``format`` is cut by its structure first and each chunk gets its location."""
    if format in STRUCTURED_FORMATS:
        return _chunk_structured(text, size, overlap, format)
    text = text.strip()
    if not text:
        return []
    if len(text) <= size:  # a token holds a character at least
        return [Chunk(0, text, count_tokens(text))]
    pieces: list[tuple[str, int]] = []
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if sentence:
            pieces.extend(_split_long(sentence, size))
    # no token holds a space, so the text's tokens are its sentences': each counted once
    total = sum(n for _, n in pieces)
    if total <= size:
        return [Chunk(0, text, total)]
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


# -- structured text --------------------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
#: the headings kenning.files writes for slides and sheets (level 1)
_SLIDE = re.compile(r"^Slide (\d+)(?::\s*(.+))?$")
_SHEET = re.compile(r"^Sheet: (.+)$")


@dataclass
class _Block:
    kind: str  # heading | text | table | code
    text: str
    location: Location


class _Piece(NamedTuple):
    text: str
    tokens: int
    glue: str  # what joins it to the piece before it in one chunk
    carry: bool  # may be repeated at the start of the next chunk (overlap)


def _chunk_structured(text: str, size: int, overlap: int, format: str) -> list[Chunk]:
    chunks: list[Chunk] = []
    for location, blocks in _sections(_blocks(text, format)):
        pieces = [p for b in blocks for p in _pieces(b, size)]
        for body, tokens in _pack(pieces, size, overlap):
            chunks.append(Chunk(len(chunks), body, tokens, location))
    return chunks


def _blocks(text: str, format: str) -> list[_Block]:
    """Headings, paragraphs, tables and fenced code blocks in order, each with its location.
    Headings carry over from page to page."""
    out: list[_Block] = []
    stack: list[tuple[int, str]] = []  # (level, title) of the headings above
    pages = text.split("\f")
    paged = format == "pdf" or len(pages) > 1
    for number, page in enumerate(pages, 1):
        out += _page_blocks(page.split("\n"), number if paged else None, stack, format)
    return out


def _page_blocks(lines: list[str], page: int | None, stack: list[tuple[int, str]], format: str) -> list[_Block]:
    out: list[_Block] = []
    para: list[str] = []

    def add(kind: str, text: str) -> None:
        out.append(_Block(kind, text, _location(page, stack, format)))

    def flush() -> None:
        if any(line.strip() for line in para):
            add("text", "\n".join(para).strip())
        para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        heading = _HEADING.match(line.strip())
        if fence:
            flush()
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence[1])), len(lines) - 1)
            add("code", "\n".join(lines[i : end + 1]))
            i = end
        elif heading:
            flush()
            level = len(heading[1])
            stack[:] = [h for h in stack if h[0] < level] + [(level, heading[2])]
            add("heading", line.strip())
        elif line.lstrip().startswith("|"):
            flush()
            end = i
            while end + 1 < len(lines) and lines[end + 1].lstrip().startswith("|"):
                end += 1
            add("table", "\n".join(x.strip() for x in lines[i : end + 1]))
            i = end
        elif line.strip():
            para.append(line)
        else:
            flush()
        i += 1
    flush()
    return out


def _location(page: int | None, stack: list[tuple[int, str]], format: str) -> Location:
    slide, sheet, headings = None, None, []
    for level, title in stack:
        slide_match = _SLIDE.match(title) if format == "pptx" and level == 1 else None
        sheet_match = _SHEET.match(title) if format == "xlsx" and level == 1 else None
        if slide_match:
            slide = int(slide_match[1])
            headings += [slide_match[2]] if slide_match[2] else []
        elif sheet_match:
            sheet = sheet_match[1]
        else:
            headings.append(title)
    return Location(page=page, slide=slide, sheet=sheet, headings=headings)


def _sections(blocks: list[_Block]) -> list[tuple[Location, list[_Block]]]:
    """Runs of blocks under one location. A heading starts a section; headings with nothing
    under them (a title right above its first subheading) join the section that follows."""
    sections: list[tuple[Location, list[_Block]]] = []
    for block in blocks:
        last = sections[-1] if sections else None
        if last and all(b.kind == "heading" for b in last[1]) and last[1][-1].location.page == block.location.page:
            sections[-1] = (block.location, last[1] + [block])
        elif last and block.kind != "heading" and block.location == last[0]:
            last[1].append(block)
        else:
            sections.append((block.location, [block]))
    return sections


def _pieces(block: _Block, size: int) -> list[_Piece]:
    """A block as pieces no longer than ``size`` tokens (a short block is one piece)."""
    n = count_tokens(block.text)
    if n <= size:
        return [_Piece(block.text, n, "\n\n", block.kind == "text")]
    if block.kind == "table":
        return _groups(block.text.split("\n"), size, header_of=_table_header)
    if block.kind == "code":
        lines = block.text.split("\n")
        closed = len(lines) > 1 and _FENCE.match(lines[-1]) is not None
        body = lines[1:-1] if closed else lines[1:]
        return _groups(body, size, wrap=(lines[0], lines[-1] if closed else lines[0].strip()))
    pieces: list[_Piece] = []
    for sentence in (s.strip() for s in _SENTENCE_END.split(block.text)):
        if sentence:
            pieces += [_Piece(t, k, " " if pieces else "\n\n", True) for t, k in _split_long(sentence, size)]
    return pieces


def _table_header(lines: list[str]) -> list[str]:
    return lines[:2] if len(lines) > 1 and _TABLE_RULE.match(lines[1]) else lines[:1]


def _groups(lines: list[str], size: int, header_of=None, wrap: tuple[str, str] | None = None) -> list[_Piece]:
    """Lines in groups of at most ``size`` tokens; each group repeats a table's header, or sits
    inside the code fence ``wrap``."""
    head = header_of(lines) if header_of else []
    frame = head + list(wrap or ())
    budget = max(size - count_tokens("\n".join(frame)), 1)
    groups: list[list[str]] = []
    tokens = 0
    for line in lines[len(head):]:
        n = count_tokens(line)
        if groups and tokens + n <= budget:
            groups[-1].append(line)
            tokens += n
        else:
            groups.append([line])
            tokens = n
    out = []
    for group in groups:
        if wrap:
            body = "\n".join([wrap[0], *group, wrap[1]])
        else:
            body = "\n".join(head + group)
        for text, n in _split_long(body, size) if count_tokens(body) > size else [(body, count_tokens(body))]:
            out.append(_Piece(text, n, "\n\n", False))
    return out


def _pack(pieces: list[_Piece], size: int, overlap: int) -> list[tuple[str, int]]:
    """Pieces packed into chunks of at most ``size`` tokens; a new chunk starts with the last
    carryable pieces of the one before, within ``overlap`` tokens."""
    out: list[tuple[str, int]] = []
    current: list[_Piece] = []
    fresh = 0  # pieces of ``current`` not already emitted

    def emit() -> None:
        body = current[0].text + "".join(p.glue + p.text for p in current[1:])
        out.append((body, sum(p.tokens for p in current)))

    for piece in pieces:
        if current and fresh and sum(p.tokens for p in current) + piece.tokens > size:
            emit()
            current = _carry(current, overlap) if piece.carry else []
            while current and sum(p.tokens for p in current) + piece.tokens > size:
                current.pop(0)
            fresh = 0
        current.append(piece)
        fresh += 1
    if current and fresh:
        emit()
    return out


def _carry(pieces: list[_Piece], overlap: int) -> list[_Piece]:
    kept: list[_Piece] = []
    tokens = 0
    for piece in reversed(pieces):
        if not piece.carry or tokens + piece.tokens > overlap:
            break
        kept.insert(0, piece)
        tokens += piece.tokens
    return kept
