"""Peak memory of reading a zip-bomb DOCX (issue 24, item 7): a DOCX whose document part
(word/document.xml) holds SIZE_MIB (default 100) MiB of short paragraphs, deflated to a
fraction of a megabyte, read as an upload is (``kenning.files.read_document``) in a fresh
process; prints the file's size, the peak RSS, the seconds and the outcome.

    python benchmarks/zip_bomb_rss.py [SIZE_MIB]
"""

from __future__ import annotations

import io
import resource
import subprocess
import sys
import time
import zipfile


def bomb(size_mib: int) -> bytes:
    import docx

    doc = docx.Document()
    doc.add_paragraph("Welcome to the team.")
    base = io.BytesIO()
    doc.save(base)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(base.getvalue())) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            if item.filename != "word/document.xml":
                dst.writestr(item, src.read(item))
        xml = src.read("word/document.xml").decode()
        head, tail = xml.split("Welcome to the team.")
        head, _, tail = head.rpartition("<w:p>")[0], "", "</w:p>".join(tail.split("</w:p>")[1:])
        info = zipfile.ZipInfo("word/document.xml")
        info.compress_type = zipfile.ZIP_DEFLATED
        with dst.open(info, "w", force_zip64=True) as stream:
            stream.write(head.encode())
            paragraph = b"<w:p><w:r><w:t>tea</w:t></w:r></w:p>"
            block = paragraph * (2**20 // len(paragraph))
            for _ in range(size_mib):
                stream.write(block)
            stream.write(tail.encode())
    return out.getvalue()


def child(path: str) -> None:
    from kenning.errors import FileReadError
    from kenning.files import read_document

    data = open(path, "rb").read()
    start = time.perf_counter()
    try:
        read_document(data, "bomb.docx")
        outcome = "read"
    except FileReadError as exc:
        outcome = "refused: " + exc.message[:90]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"file {len(data) / 2**20:.2f} MiB  peak RSS {peak:,.0f} MiB  {time.perf_counter() - start:.1f} s  {outcome}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        import tempfile

        size = int(sys.argv[1]) if len(sys.argv) > 1 else 100
        with tempfile.NamedTemporaryFile(suffix=".docx") as tmp:
            tmp.write(bomb(size))
            tmp.flush()
            subprocess.run([sys.executable, __file__, "--child", tmp.name], check=True)
