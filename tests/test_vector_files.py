"""What the SQLite store leaves on disk, and which saved vector files it trusts.

- After ``forget`` (one memory, a dataset, everything) no file under the store (the database,
  its -wal and -shm, and every file in ``<db>.vectors/``) holds the forgotten text or a vector
  within cosine 0.99 of its chunk's: a byte scan and a vector scan of every file.
- A temporary file left by a save killed midway is removed.
- A database restored from a backup beside a newer vector folder (or diverged from it) is
  detected, and its index rebuilt: every stored vector still finds itself after more writes.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kenning import Kenning

SECRET = "Qwxzborp visited Vlemtrak on Tuesday with Zyglofant."
WORDS = [b"qwxzborp", b"vlemtrak", b"zyglofant"]
OTHERS = [f"Person{i} works at Company{i % 7} in City{i % 5}." for i in range(40)]


def _store_files(db: Path) -> list[Path]:
    """Every file under the store: the database, its companions, the vector folder."""
    files = [p for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists()]
    folder = Path(f"{db}.vectors")
    return files + (sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else [])


def _best_cosine(data: bytes, target: np.ndarray) -> float:
    """The highest cosine between ``target`` and any run of float16 or float32 values in
    ``data``, at every byte alignment (a sliding correlation, by FFT)."""
    d = len(target)
    unit = target / np.linalg.norm(target)
    best = 0.0
    for dtype, size in ((np.float16, 2), (np.float32, 4)):
        for shift in range(size):
            usable = (len(data) - shift) // size * size
            if usable < d * size:
                continue
            with np.errstate(all="ignore"):
                values = np.frombuffer(data[shift : shift + usable], dtype=dtype).astype(np.float64)
            values = np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
            values[np.abs(values) > 1e4] = 0.0
            n = len(values)
            size_fft = 1 << int(np.ceil(np.log2(n + d)))
            dots = np.fft.irfft(np.fft.rfft(values, size_fft) * np.conj(np.fft.rfft(unit, size_fft)), size_fft)[: n - d + 1]
            sums = np.concatenate([[0.0], np.cumsum(values * values)])
            norms = np.sqrt(np.maximum(sums[d:] - sums[:-d], 0.0))
            ok = norms > 1e-6
            if ok.any():
                best = max(best, float(np.max(dots[ok] / norms[ok])))
    return best


def _residue(db: Path, vector: np.ndarray) -> list[str]:
    """The files holding a forgotten word or a vector near the forgotten chunk's."""
    found = []
    for path in _store_files(db):
        data = path.read_bytes()
        if any(w in data.lower() for w in WORDS):
            found.append(f"{path.name}: text")
        if _best_cosine(data, vector) >= 0.99:
            found.append(f"{path.name}: vector")
    return found


def _secret_vector(kn: Kenning) -> np.ndarray:
    return np.asarray(kn._engine.embedder.embed([SECRET])[0], dtype=np.float64)


def _search_all_kinds(kn: Kenning, dataset: str = "main") -> None:
    """Build (and save) every index of the dataset, as recall would."""
    vec = kn._engine.embedder.embed(["Person3 works at Company3"])[0]
    for kind in ("chunk", "fact", "entity"):
        kn.store.vector(dataset, kind, vec, 5)


@pytest.mark.parametrize("how", ["memory", "dataset", "everything"])
def test_forget_leaves_neither_the_text_nor_its_vector_in_any_file(tmp_path, how) -> None:  # noqa: ANN001
    db = tmp_path / "kn.db"
    dataset = "main" if how == "memory" else "secrets"
    with Kenning(str(db)) as kn:
        kn.remember(OTHERS)
        [secret_id] = kn.remember(SECRET, dataset=dataset).memory_ids
        kn.remember(OTHERS[:5], dataset=dataset)
        _search_all_kinds(kn, dataset)
        _search_all_kinds(kn)
    with Kenning(str(db)) as kn:  # the indexes are saved and mapped again
        _search_all_kinds(kn, dataset)
        vector = _secret_vector(kn)
        assert _residue(db, vector)  # the scan sees the secret before it is forgotten
        if how == "memory":
            kn.forget(secret_id)
        elif how == "dataset":
            kn.forget(dataset=dataset)
        else:
            kn.forget(everything=True)
        assert _residue(db, vector) == []  # at once, with the store still open
        if how != "everything":  # what remains is intact and found by its vectors
            hits = kn.store.vector("main", "chunk", kn._engine.embedder.embed([OTHERS[3]])[0], 1)
            assert [kn.store.get_chunks([h.id])[0].text for h in hits] == [OTHERS[3]]
    assert _residue(db, vector) == []  # and after it closed


_SAVER = """
import os, sys
from kenning import Kenning
with Kenning(sys.argv[1]) as kn:
    kn.remember([sys.argv[2], *("Extra%d Dee%d sings in Choir%d." % (i, i, i) for i in range(12))])
    kn.store.vector("main", "chunk", kn._engine.embedder.embed([sys.argv[2]])[0], 1)
print(os.getpid())
"""


def test_a_temporary_file_of_a_killed_save_is_removed(tmp_path) -> None:  # noqa: ANN001
    db = tmp_path / "kn.db"
    with Kenning(str(db)) as kn:
        kn.remember(OTHERS)
        _search_all_kinds(kn)
    folder = Path(f"{db}.vectors")
    (saved,) = folder.glob("chunk-*.usearch")
    # What a save killed between write and rename leaves: a whole index under a temporary name
    # carrying the pid of the process, which is gone. It holds the secret's vector.
    out = subprocess.run([sys.executable, "-c", _SAVER, str(db), SECRET], check=True, timeout=120,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    (newest,) = [p for p in folder.glob("chunk-*.usearch") if p != saved]
    left = folder / f".tmp-{out.stdout.strip()}-0123456789abcdef.usearch"
    shutil.copyfile(newest, left)
    with Kenning(str(db)) as kn:
        vector = _secret_vector(kn)
        assert _best_cosine(left.read_bytes(), vector) >= 0.99
        [secret_id] = [m.id for m in kn.list(limit=100) if m.content == SECRET]
        kn.forget(secret_id)
        assert not left.exists()
        assert _residue(db, vector) == []


def _self_found(kn: Kenning, kind: str) -> tuple[int, int]:
    """(rows whose own stored vector finds them first, rows) for one kind in ``main``."""
    table = {"chunk": "chunks", "fact": "facts"}[kind]
    with sqlite3.connect(kn.store.path) as con:
        rows = con.execute(f"SELECT id, embedding FROM {table} WHERE embedding IS NOT NULL").fetchall()
    found = 0
    for row_id, blob in rows:
        hits = kn.store.vector("main", kind, np.frombuffer(blob, np.float32), 1)
        found += bool(hits) and hits[0].id == row_id
    return found, len(rows)


def test_a_database_restored_beside_a_newer_vector_folder_rebuilds_its_index(tmp_path) -> None:  # noqa: ANN001
    db = tmp_path / "kn.db"
    with Kenning(str(db)) as kn:
        kn.remember([f"Early{i} Ann{i} works at Firm{i} in Town{i}." for i in range(40)])
        _search_all_kinds(kn)
    backup = db.read_bytes()
    with Kenning(str(db)) as kn:  # the original goes on: its folder moves ahead
        kn.remember([f"Later{i} Bob{i} lives in Village{i} near River{i}." for i in range(60)])
        _search_all_kinds(kn)
    db.write_bytes(backup)  # restored, beside the newer folder
    for extra in ("-wal", "-shm"):
        Path(f"{db}{extra}").unlink(missing_ok=True)
    with Kenning(str(db)) as kn:
        kn.remember([f"Restored{i} Cy{i} studies Topic{i} at School{i}." for i in range(80)])
        for kind in ("chunk", "fact"):
            found, rows = _self_found(kn, kind)
            assert found == rows, f"{kind}: {rows - found} of {rows} stored vectors do not find themselves"
