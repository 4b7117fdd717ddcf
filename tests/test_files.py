"""Files and folders as documents: real files of each format built here, read back, chunked with
locations, stored and recalled with them; folder walks, per-file errors and sync planning."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kenning import Kenning
from kenning.errors import ConfigurationError, FileReadError, ValidationError
from kenning.files import Matcher, plan_sync, read_document, read_paths
from kenning.models import Location
from kenning.pipeline.chunk import chunk_text


# -- small real files -----------------------------------------------------------------------------

def make_pdf(pages: list[list[str]]) -> bytes:
    """A PDF with one text line per entry, built by hand: catalog, page tree, Helvetica, and one
    content stream per page, with a correct cross-reference table."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", None, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for lines in pages:
        ops = ["BT", "/F1 12 Tf", "72 720 Td"]
        for i, line in enumerate(lines):
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops += ([] if i == 0 else ["0 -18 Td"]) + [f"({escaped}) Tj"]
        stream = "\n".join(ops + ["ET"])
        objects.append(f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream")
        content = len(objects)
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
                       f" /Resources << /Font << /F1 3 0 R >> >> /Contents {content} 0 R >>")
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def with_pypdf(data: bytes, outline: list[tuple[str, int]] = (), password: str | None = None) -> bytes:
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    for title, page in outline:
        writer.add_outline_item(title=title, page_number=page)
    if password:
        writer.encrypt(user_password=password, owner_password=password, algorithm="RC4-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


REPORT_PAGES = [
    ["Quarterly report", "Revenue grew in the north region."],
    ["Results", "The Lisbon office closed 42 contracts.", "Churn fell to three percent."],
]


def make_docx() -> bytes:
    docx = pytest.importorskip("docx")
    doc = docx.Document()
    doc.add_heading("Handbook", level=1)
    doc.add_paragraph("Welcome to the team.")
    doc.add_heading("Travel", level=2)
    doc.add_paragraph("Book trains through the portal.")
    table = doc.add_table(rows=2, cols=2)
    for (r, c), text in {(0, 0): "City", (0, 1): "Budget", (1, 0): "Porto", (1, 1): "120"}.items():
        table.cell(r, c).text = text
    doc.add_paragraph("Receipts go to finance.", style="List Bullet")
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def make_pptx() -> bytes:
    pptx = pytest.importorskip("pptx")
    deck = pptx.Presentation()
    for title, body in [("Roadmap", "Ship the importer in March."), ("Risks", "Hiring is slow.")]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


def make_xlsx() -> bytes:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    for row in [("Team", "Amount"), ("Search", 1200), ("Ingest", 800)]:
        sheet.append(row)
    other = book.create_sheet("People")
    other.append(("Name", "Role"))
    other.append(("Ana", "Lead"))
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


HTML = """<!doctype html><html><head><title>t</title><style>h1{color:red}</style>
<script>var secret = 1;</script></head><body>
<h1>Field guide</h1><p>Birds of the <b>coast</b>.</p>
<h2>Gulls</h2><p>Gulls eat fish &amp; chips.</p>
<table><tr><th>Bird</th><th>Count</th></tr><tr><td>Gull</td><td>12</td></tr></table>
<pre>def count():
    return 12</pre>
</body></html>"""


# -- formats ----------------------------------------------------------------------------------------

def test_text_in_any_common_encoding() -> None:
    text = "Zoë met Øyvind in Kraków — 5 €."
    for data in (text.encode("utf-16"), b"\xef\xbb\xbf" + text.encode(), text.encode("utf-16-le"),
                 text.encode("utf-16-be"), text.encode("utf-32"), text.encode()):
        doc = read_document(data, "note.txt")
        assert doc.text == text and doc.format == "text"
    legacy = "Le café était fermé, dit François à l'élève; ça arrive très souvent à Noël."
    assert read_document(legacy.encode("cp1252"), "old.txt").text == legacy
    for encoding in ("utf-16-le", "utf-16-be"):  # no mark, and every character is also ASCII
        assert read_document("plain words".encode(encoding), "ascii.txt").text == "plain words"
    windows = read_document("one\r\ntwo\r\n".encode("utf-16"), "crlf.txt")
    assert windows.text == "one\ntwo"


def test_plain_text_is_chunked_as_before() -> None:
    text = " ".join(f"Sentence {i} says something." for i in range(200))
    assert chunk_text(text, 64, 8) == chunk_text(text, 64, 8, "text")
    assert all(c.location is None for c in chunk_text(text, 64, 8))


def test_markdown_chunks_follow_headings_tables_and_code() -> None:
    rows = "\n".join(f"| city {i} | {i * 10} |" for i in range(40))
    code = "\n".join(f"    step({i})" for i in range(60))
    text = (f"# Guide\n\nIntro.\n\n## Setup\n\nInstall it.\n\n```python\ndef run():\n{code}\n```\n\n"
            f"## Data\n\n| city | people |\n|---|---|\n{rows}\n\n### Notes\n\nSee above.")
    chunks = chunk_text(text, size=120, overlap=16, format="markdown")
    where = [(str(c.location), c.text.split("\n")[0]) for c in chunks]
    assert where[0] == ("Guide", "# Guide")
    assert ("Guide › Setup", "## Setup") in where
    assert str(chunks[-1].location) == "Guide › Data › Notes" and chunks[-1].text == "### Notes\n\nSee above."
    code_chunks = [c for c in chunks if "step(" in c.text]
    assert len(code_chunks) > 1
    for c in code_chunks:  # each part of the long code block sits inside its own fence
        body = c.text[c.text.index("```python"):]
        assert body.startswith("```python\n") and body.endswith("\n```")
    assert "".join(c.text for c in code_chunks).count("step(") == 60
    tables = [c for c in chunks if "| city " in c.text]
    assert len(tables) > 1
    for c in tables:  # row groups repeat the header
        assert "| city | people |\n|---|---|\n" in c.text
        assert str(c.location) == "Guide › Data"
    assert sum(c.text.count("| city ") for c in tables) == 40 + len(tables)
    assert all(c.token_count <= 120 for c in chunks)


def test_small_table_stays_whole() -> None:
    text = "# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nAfter."
    [chunk] = chunk_text(text, 256, 32, "markdown")
    assert "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |" in chunk.text
    code = "# T\n\n```sh\n# a comment, not a heading\n\nrun | tee log\n```\n\nAfter."
    [chunk] = chunk_text(code, 256, 32, "markdown")
    assert chunk.location.headings == ["T"] and chunk.text == code


def test_html_page() -> None:
    doc = read_document(HTML.encode(), "guide.html")
    assert doc.format == "html" and "secret" not in doc.text and "h1{" not in doc.text
    assert doc.text.startswith("# Field guide\n\nBirds of the coast.\n\n## Gulls\n\nGulls eat fish & chips.")
    assert "| Bird | Count |\n| --- | --- |\n| Gull | 12 |" in doc.text
    assert "```\ndef count():\n    return 12\n```" in doc.text
    chunks = chunk_text(doc.text, format=doc.format)
    assert [str(c.location) for c in chunks] == ["Field guide", "Field guide › Gulls"]


def test_pdf_pages_and_outline() -> None:
    doc = read_document(make_pdf(REPORT_PAGES), "report.pdf")
    pages = doc.text.split("\f")
    assert len(pages) == 2 and "Revenue grew in the north region." in pages[0]
    assert "The Lisbon office closed 42 contracts." in pages[1]
    chunks = chunk_text(doc.text, format="pdf")
    assert [c.location.page for c in chunks] == [1, 2]
    assert "Lisbon" in chunks[1].text and "Lisbon" not in chunks[0].text

    marked = read_document(with_pypdf(make_pdf(REPORT_PAGES), outline=[("Results", 1)]), "report.pdf")
    chunks = chunk_text(marked.text, format="pdf")
    assert str(chunks[-1].location) == "p. 2 › Results" and chunks[-1].text.startswith("# Results\n")


def test_docx_headings_and_table() -> None:
    doc = read_document(make_docx(), "handbook.docx")
    assert doc.format == "docx"
    assert doc.text.startswith("# Handbook\n\nWelcome to the team.\n\n## Travel\n\nBook trains")
    assert "| City | Budget |\n| --- | --- |\n| Porto | 120 |" in doc.text
    assert "- Receipts go to finance." in doc.text
    chunks = chunk_text(doc.text, format="docx")
    assert [c.location.headings for c in chunks] == [["Handbook"], ["Handbook", "Travel"]]


def test_pptx_slides() -> None:
    doc = read_document(make_pptx(), "plan.pptx")
    assert "# Slide 1: Roadmap\n\nShip the importer in March." in doc.text
    chunks = chunk_text(doc.text, format="pptx")
    assert [(c.location.slide, str(c.location)) for c in chunks] == [(1, "slide 1 › Roadmap"), (2, "slide 2 › Risks")]


def test_xlsx_sheets_and_csv() -> None:
    doc = read_document(make_xlsx(), "budget.xlsx")
    assert "# Sheet: Budget\n\n| Team | Amount |\n| --- | --- |\n| Search | 1200 |" in doc.text
    chunks = chunk_text(doc.text, format="xlsx")
    assert [c.location.sheet for c in chunks] == ["Budget", "People"]
    csv_doc = read_document(b"name;city\nAna;Porto\nBo;Oslo\n", "people.csv")
    assert csv_doc.text == "| name | city |\n| --- | --- |\n| Ana | Porto |\n| Bo | Oslo |"


def test_json() -> None:
    doc = read_document(json.dumps({"team": "search", "size": 3}).encode(), "team.json")
    assert doc.text == '```json\n{\n  "team": "search",\n  "size": 3\n}\n```'
    with pytest.raises(FileReadError, match=r"^bad\.json: not valid JSON"):
        read_document(b"{nope", "bad.json")


# -- folders and errors -----------------------------------------------------------------------------

def test_folder_walk_with_include_exclude_and_gitignore(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    for rel, body in {"a.md": "# A", "sub/b.txt": "b", "sub/deep/c.md": "# C", "build/out.txt": "x",
                      "notes.log": "log", ".hidden/secret.txt": "s", "sub/skip.tmp": "t"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    (root / ".gitignore").write_text("# generated\nbuild/\n*.log\n")
    result = read_paths(root, exclude=["*.tmp"])
    assert [d.source for d in result.documents] == ["a.md", "sub/b.txt", "sub/deep/c.md"] and not result.errors
    assert [d.source for d in read_paths(root, include=["*.md"]).documents] == ["a.md", "sub/deep/c.md"]
    assert [d.source for d in read_paths(root, include=["sub/**/*.md"]).documents] == ["sub/deep/c.md"]
    assert [d.source for d in read_paths(root / "sub" / "b.txt").documents] == ["b.txt"]
    with pytest.raises(ValidationError, match="no such file or folder"):
        read_paths(root / "missing")


def test_matcher_follows_gitignore_rules() -> None:
    m = Matcher(["*.log", "!keep.log", "/top.txt", "cache/", "docs/**/draft-?.md"])
    assert m.excluded("x/y.log") and not m.excluded("x/keep.log")
    assert m.excluded("top.txt") and not m.excluded("sub/top.txt")
    assert m.excluded("a/cache", is_dir=True) and not m.excluded("a/cache")
    assert m.excluded("docs/a/b/draft-1.md") and not m.excluded("docs/draft-12.md")


def test_bracket_patterns_are_globs_not_regular_expressions(tmp_path: Path) -> None:
    m = Matcher(["[\\]x", "file[.]txt", "[!a]b"])  # found by the API fuzz test: a 500 before
    assert m.excluded("file.txt") and not m.excluded("filextxt") and m.excluded("cb") and not m.excluded("ab")
    with pytest.raises(ValidationError, match="z-a"):
        Matcher([], ["[z-a]"])
    (tmp_path / ".gitignore").write_text("[z-a]\n*.log\n")  # git skips a line it cannot read
    (tmp_path / "a.txt").write_text("Alice works at Acme.")
    (tmp_path / "b.log").write_text("noise")
    assert [d.source for d in read_paths([tmp_path]).documents] == ["a.txt"]


def test_unreadable_files_are_reported_while_the_rest_is_read(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("# Good\n\nFine.")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj garbage\n%%EOF")
    (tmp_path / "locked.pdf").write_bytes(with_pypdf(make_pdf(REPORT_PAGES), password="s3cret"))
    (tmp_path / "image.bin").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "gone.txt").symlink_to(tmp_path / "nowhere.txt")
    result = read_paths(tmp_path)
    assert [d.source for d in result.documents] == ["good.md"]
    errors = {e.details["path"]: e.message for e in result.errors}
    assert set(errors) == {"broken.pdf", "locked.pdf", "image.bin", "gone.txt"}
    assert errors["locked.pdf"] == "locked.pdf: PDF is password-protected"
    assert errors["image.bin"] == "image.bin: binary file, not text"
    assert errors["broken.pdf"].startswith("broken.pdf: cannot read PDF")
    assert errors["gone.txt"].startswith("gone.txt: cannot read")
    assert all("\n" not in m and isinstance(e, FileReadError) for e, m in zip(result.errors, errors.values()))


def test_missing_extra_is_named(tmp_path: Path) -> None:
    (tmp_path / "r.pdf").write_bytes(make_pdf(REPORT_PAGES))
    script = (
        "import sys; sys.modules['pypdf'] = None\n"  # as if the extra were not installed
        "from kenning.files import read_paths\n"
        "from kenning.errors import ConfigurationError\n"
        f"try:\n    read_paths({str(tmp_path / 'r.pdf')!r})\n"
        "except ConfigurationError as exc:\n    print(exc.message)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "reading this file needs pypdf: pip install 'kenning[files]'"
    assert ConfigurationError  # the type the script catches


# -- sync planning ----------------------------------------------------------------------------------

def test_plan_sync() -> None:
    docs = [read_document(b"same", "same.txt"), read_document(b"new text", "edited.txt"),
            read_document(b"fresh", "added.txt")]
    stored = [("same.txt", "m1", docs[0].content_hash), ("edited.txt", "m2", "old-hash"),
              ("deleted.txt", "m3", "h3")]
    plan = plan_sync(docs, stored)
    assert [d.source for d in plan.added] == ["added.txt"]
    assert [d.source for d in plan.changed] == ["edited.txt"]
    assert plan.unchanged == ["same.txt"] and plan.removed == ["deleted.txt"]
    assert plan.stale == {"edited.txt": ["m2"], "deleted.txt": ["m3"]}
    assert plan.summary() == {"added": 1, "changed": 1, "unchanged": 1, "removed": 1}


# -- stored and recalled, on both stores ------------------------------------------------------------

def test_locations_are_stored_and_returned(store_url: str, tmp_path: Path) -> None:
    tmp_path = tmp_path / "folder"
    tmp_path.mkdir()
    (tmp_path / "report.pdf").write_bytes(with_pypdf(make_pdf(REPORT_PAGES), outline=[("Results", 1)]))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "plain.txt").write_text("Plain notes about Lisbon without structure.")
    docs = read_paths(tmp_path).documents
    with Kenning(store_url) as kn:
        for doc in docs:
            kn.remember(doc.text, source=doc.source, metadata={"format": doc.format})
        result = kn.recall("How many contracts did the Lisbon office close?", search_type="chunks")
        top = result.hits[0]
        assert "42 contracts" in top.text
        assert top.location == Location(page=2, headings=["Results"])
        memory = next(m for m in result.memories if m.id == top.memory_ids[0])
        assert f"{memory.source} {top.location}" == "report.pdf p. 2 › Results"
        chunks = kn.provenance(memory.id).chunks
        assert [str(c.location) for c in chunks] == ["p. 1", "p. 2 › Results"]
        plain = next(h for h in kn.recall("plain notes Lisbon", search_type="chunks").hits if "Plain" in h.text)
        assert plain.location is None
        stored = kn._engine.store.file_memories("main")
        assert sorted(s for s, _, _ in stored) == ["notes/plain.txt", "report.pdf"]
        assert [s for s, _, _ in kn._engine.store.file_memories("main", "notes/")] == ["notes/plain.txt"]
        plan = plan_sync(read_paths(tmp_path).documents, stored)
        assert plan.summary() == {"added": 0, "changed": 0, "unchanged": 2, "removed": 0}
