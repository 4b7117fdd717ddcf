"""One file's bytes as text in the form the chunker reads (kenning.pipeline.chunk): Markdown
headings for document headings, a form feed between PDF pages, ``# Slide N: Title`` and
``# Sheet: name`` headings, tables as Markdown tables, JSON in a fenced block.

Plain text, Markdown, HTML, CSV and JSON need nothing beyond the standard library (and
charset-normalizer for legacy encodings); PDF, DOCX, PPTX and XLSX need the ``files`` extra.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import PurePath

from ..errors import ConfigurationError, FileReadError
from ._archive import check_archive
from ._html import html_to_markdown, markdown_table

__all__ = ["FORMATS", "convert", "decode", "format_of"]

#: file name suffix -> format
FORMATS = {
    ".txt": "text", ".text": "text", ".log": "text", ".rst": "text",
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".pdf": "pdf", ".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx", ".xlsm": "xlsx",
    ".csv": "csv", ".tsv": "csv", ".json": "json",
}
_BOMS = [(b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
         (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")]


def format_of(name: str) -> str:
    """The format a file name says (``text`` for any other name: its bytes decide)."""
    return FORMATS.get(PurePath(name).suffix.lower(), "text")


def convert(data: bytes, name: str, format: str) -> str:
    """The text of a file; raises FileReadError (naming ``name``) when it cannot be read."""
    if format in _ARCHIVES:
        check_archive(data, name, format)  # before a converter library expands it
    try:
        return _CONVERTERS[format](data, name)
    except (FileReadError, ConfigurationError):
        raise
    except Exception as exc:  # a converter library's own errors: the file is broken
        raise FileReadError(f"{name}: cannot read {format.upper()} ({_reason(exc)})", path=name) from exc


def decode(data: bytes, name: str) -> str:
    """Text in any common encoding: a byte-order mark (UTF-8/16/32), UTF-8, UTF-16 without a
    mark, then charset-normalizer's best guess. Binary data is a FileReadError."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _normalize(data[len(bom):].decode(encoding.replace("-sig", ""), errors="replace"))
    sample = data[:4096]
    if b"\x00" in sample:  # UTF-16 without a mark (every other byte zero), or binary
        if len(sample) >= 4 and sample[1::2].count(0) > len(sample) // 3:
            return _normalize(data.decode("utf-16-le", errors="replace"))
        if len(sample) >= 4 and sample[0::2].count(0) > len(sample) // 3:
            return _normalize(data.decode("utf-16-be", errors="replace"))
        raise FileReadError(f"{name}: binary file, not text", path=name)
    try:
        return _normalize(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    matches = list(_require("charset_normalizer").from_bytes(data))
    if not matches:
        raise FileReadError(f"{name}: binary file, not text", path=name)
    # Windows-1252 wins a tie: the legacy encoding most files in a Latin script were written in
    tied = [m for m in matches if m.chaos == matches[0].chaos]
    best = next((m for m in tied if m.encoding == "cp1252"), matches[0])
    return _normalize(str(best))


def _normalize(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _reason(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _require(module: str):
    """An optional converter library, or a ConfigurationError naming the extra that has it."""
    from .._extras import require

    return require(module, extra="files", purpose=f"reading this file needs {module}")


# -- formats ------------------------------------------------------------------------------------

def _text(data: bytes, name: str) -> str:
    return decode(data, name)


def _html(data: bytes, name: str) -> str:
    return html_to_markdown(decode(data, name))


def _json(data: bytes, name: str) -> str:
    try:
        value = json.loads(decode(data, name))
    except json.JSONDecodeError as exc:
        raise FileReadError(f"{name}: not valid JSON ({exc})", path=name) from None
    return "```json\n" + json.dumps(value, indent=2, ensure_ascii=False) + "\n```"


def _csv(data: bytes, name: str) -> str:
    text = decode(data, name)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if name.lower().endswith(".tsv") else csv.excel
    rows = [r for r in csv.reader(io.StringIO(text), dialect) if any(c.strip() for c in r)]
    return markdown_table(rows)


def _pdf(data: bytes, name: str) -> str:
    pypdf = _require("pypdf")
    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        raise FileReadError(f"{name}: PDF is password-protected", path=name)
    pages = [_tidy_page(page.extract_text() or "") for page in reader.pages]
    pages = _outline_headings(reader, pages)
    if not any(p.strip() for p in pages):
        raise FileReadError(f"{name}: PDF has no text layer (scanned pages need OCR first)", path=name)
    return "\f".join(pages)


def _tidy_page(text: str) -> str:
    return _normalize(text).replace("\f", "\n").strip()


def _outline_headings(reader, pages: list[str]) -> list[str]:
    """A PDF's bookmarks as Markdown headings: the line of the target page that carries the
    bookmark's title becomes ``#``-heading of its depth (or the heading opens the page)."""
    try:
        entries = list(_walk_outline(reader, reader.outline, 1))
    except Exception:  # noqa: BLE001 - a broken outline is no reason to lose the text
        return pages
    for title, page, depth in entries:
        if page is None or not 0 <= page < len(pages) or not title.strip():
            continue
        heading = "#" * min(depth, 6) + " " + " ".join(title.split())
        lines = pages[page].split("\n")
        at = next((i for i, line in enumerate(lines) if " ".join(line.split()) == " ".join(title.split())), None)
        if at is None:
            lines.insert(0, heading)
        else:
            lines[at] = heading
        pages[page] = "\n".join(lines)
    return pages


def _walk_outline(reader, items, depth: int):
    for item in items:
        if isinstance(item, list):
            yield from _walk_outline(reader, item, depth + 1)
        else:
            yield str(item.title or ""), reader.get_destination_page_number(item), depth


def _docx(data: bytes, name: str) -> str:
    docx = _require("docx")
    from docx.table import Table

    out = []
    for block in docx.Document(io.BytesIO(data)).iter_inner_content():
        if isinstance(block, Table):
            out.append(markdown_table([[cell.text for cell in row.cells] for row in block.rows]))
            continue
        text = block.text.strip()
        if not text:
            continue
        style = (block.style.name if block.style is not None else "") or ""
        level = _heading_level(style)
        out.append("#" * level + " " + " ".join(text.split()) if level else
                   "- " + text if style.startswith("List") else text)
    return "\n\n".join(out)


def _heading_level(style: str) -> int:
    if style == "Title":
        return 1
    match = re.fullmatch(r"Heading (\d)", style)
    return min(int(match[1]), 6) if match else 0


def _pptx(data: bytes, name: str) -> str:
    pptx = _require("pptx")
    out = []
    for number, slide in enumerate(pptx.Presentation(io.BytesIO(data)).slides, 1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
        parts = [f"# Slide {number}: {title}" if title else f"# Slide {number}"]
        for shape in slide.shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False):
                parts.append(markdown_table([[c.text for c in row.cells] for row in shape.table.rows]))
            elif getattr(shape, "has_text_frame", False) and shape.text_frame.text.strip():
                parts.append(_normalize(shape.text_frame.text).strip())
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame.text.strip():
            parts.append("Notes: " + slide.notes_slide.notes_text_frame.text.strip())
        out.append("\n\n".join(parts))
    return "\n\n".join(out)


def _xlsx(data: bytes, name: str) -> str:
    openpyxl = _require("openpyxl")
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    out = []
    for sheet in book.worksheets:
        rows = [["" if v is None else str(v) for v in row] for row in sheet.iter_rows(values_only=True)]
        rows = [r for r in rows if any(c.strip() for c in r)]
        width = max((max((i + 1 for i, c in enumerate(r) if c.strip()), default=0) for r in rows), default=0)
        table = markdown_table([r[:width] for r in rows])
        out.append(f"# Sheet: {sheet.title}" + (f"\n\n{table}" if table else ""))
    book.close()
    return "\n\n".join(out)


#: the formats that are zip archives (checked by ``kenning.files._archive`` first)
_ARCHIVES = frozenset({"docx", "pptx", "xlsx"})
_CONVERTERS: dict[str, Callable[[bytes, str], str]] = {
    "text": _text, "markdown": _text, "html": _html, "json": _json, "csv": _csv,
    "pdf": _pdf, "docx": _docx, "pptx": _pptx, "xlsx": _xlsx,
}
