"""HTML to Markdown with the standard library's parser: headings become ``#`` lines, tables
Markdown tables, ``<pre>`` fenced code, lists ``-`` items; scripts, styles and the head are
dropped. Links keep their text only (addresses are noise to search and extraction)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_markdown", "markdown_table"]

_SKIP = {"script", "style", "head", "noscript", "template", "svg", "iframe", "object"}
_BLOCK = {"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "blockquote",
          "ul", "ol", "dl", "dt", "dd", "figure", "figcaption", "form", "fieldset", "address", "hr", "body"}
_SPACE = re.compile(r"\s+")


def markdown_table(rows: list[list[str]]) -> str:
    """Rows of cell texts as a Markdown table; the first row is the header."""
    width = max((len(r) for r in rows), default=0)
    if not width:
        return ""
    cells = [[_cell(c) for c in r] + [""] * (width - len(r)) for r in rows]
    lines = [cells[0], ["---"] * width, *cells[1:]]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def _cell(text: str) -> str:
    return _SPACE.sub(" ", str(text)).strip().replace("|", "\\|")


class _Converter(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0
        self.pre = 0
        self.tables: list[list[list[str]]] = []  # open tables: rows of cells
        self.cell: list[str] | None = None

    # -- text sinks: a table cell, preformatted text, or running text --------------------------
    def _write(self, text: str) -> None:
        if self.cell is not None:
            self.cell.append(text)
        else:
            self.out.append(text)

    def _break(self, marker: str = "\n\n") -> None:
        if self.cell is not None:
            self.cell.append(" ")
        else:
            self.out.append(marker)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif self.skip:
            return
        elif re.fullmatch(r"h[1-6]", tag):
            self._break()
            self._write("#" * int(tag[1]) + " ")
        elif tag == "pre":
            self._break()
            self._write("```\n")
            self.pre += 1
        elif tag == "li":
            self._break("\n")
            self._write("- ")
        elif tag == "br":
            self._break("\n")
        elif tag == "table":
            self._break()
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables:
            if not self.tables[-1]:
                self.tables[-1].append([])
            self.cell = []
        elif tag in _BLOCK:
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(self.skip - 1, 0)
        elif self.skip:
            return
        elif re.fullmatch(r"h[1-6]", tag) or tag in _BLOCK:
            self._break()
        elif tag == "pre" and self.pre:
            self.pre -= 1
            self._write("\n```")
            self._break()
        elif tag in ("td", "th") and self.cell is not None and self.tables:
            self.tables[-1][-1].append("".join(self.cell))
            self.cell = None
        elif tag == "table" and self.tables:
            rows = [r for r in self.tables.pop() if any(c.strip() for c in r)]
            self._write(markdown_table(rows))
            self._break()

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        self._write(data if self.pre else _SPACE.sub(" ", data))


def html_to_markdown(html: str) -> str:
    parser = _Converter()
    parser.feed(html)
    parser.close()
    text = "".join(parser.out)
    # tidy: no spaces around line breaks outside code, at most one blank line in a row
    parts = re.split(r"(```.*?```)", text, flags=re.S)
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"[ \t]*\n[ \t]*", "\n", parts[i])
        parts[i] = re.sub(r"\n{3,}", "\n\n", parts[i])
    return "".join(parts).strip()
