"""The SQLite store's saved vector indexes: built once, saved beside the database, opened again
without a rebuild, caught up with writes by this or another process (also after a crash), and
rebuilt only when the saved file cannot be trusted. Rebuilds are counted from the store's log."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from kenning import Kenning

BUILT = "vector index built from rows"


def _texts(prefix: str, n: int) -> list[str]:
    return [f"{prefix} Person{i} works at Company{i % 7} in City{i % 5}." for i in range(n)]


def _builds(caplog, kind: str | None = None) -> list[dict]:
    return [r.__dict__ for r in caplog.records if r.getMessage() == BUILT and kind in (None, r.kind)]


def _vector_ids(kn: Kenning, query: str, dataset: str = "main", kind: str = "chunk", k: int = 5) -> list[str]:
    vec = kn._engine.embedder.embed([query])[0]
    return [hit.id for hit in kn.store.vector(dataset, kind, vec, k)]


def _chunk_of(kn: Kenning, memory_id: str) -> str:
    with sqlite3.connect(kn.store.path) as con:
        return con.execute("SELECT id FROM chunks WHERE memory_id = ?", (memory_id,)).fetchone()[0]


def test_saved_index_is_opened_again_and_caught_up_without_a_rebuild(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="kenning.store.sqlite")
    db = str(tmp_path / "m.db")
    with Kenning(db) as kn:
        kn.remember(_texts("Early:", 60))
        assert _vector_ids(kn, "Person3 works at Company3")  # builds and saves the chunk index
        assert len(_builds(caplog, "chunk")) == 1
    saved = list((tmp_path / "m.db.vectors").glob("chunk-*.usearch"))
    assert len(saved) == 1
    caplog.clear()
    with Kenning(db) as kn:
        late = kn.remember("Zelda Quixote repairs violins in Oslo.").memory_ids[0]
        assert _vector_ids(kn, "Zelda Quixote repairs violins", k=1) == [_chunk_of(kn, late)]
        assert _builds(caplog) == []  # opened from the file, the new row replayed from the log


def test_deleted_rows_disappear_from_results(tmp_path):
    with Kenning(str(tmp_path / "m.db")) as kn:
        first = kn.remember(_texts("A:", 30)).memory_ids
        gone = kn.remember("Ottoline Vance paints lighthouses in Brest.").memory_ids[0]
        chunk = _chunk_of(kn, gone)
        assert _vector_ids(kn, "Ottoline Vance paints lighthouses", k=1) == [chunk]
        kn.forget(memory_id=gone)
        assert chunk not in _vector_ids(kn, "Ottoline Vance paints lighthouses", k=40)
        assert len(_vector_ids(kn, "Ottoline Vance paints lighthouses", k=40)) == len(first)
    with Kenning(str(tmp_path / "m.db")) as kn:  # and after reopening
        assert chunk not in _vector_ids(kn, "Ottoline Vance paints lighthouses", k=40)


def test_a_corrupt_index_file_is_rebuilt_from_rows(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="kenning.store.sqlite")
    db = str(tmp_path / "m.db")
    with Kenning(db) as kn:
        kn.remember(_texts("B:", 40))
        before = _vector_ids(kn, "Person7 works at Company0", k=10)
    (saved,) = (tmp_path / "m.db.vectors").glob("chunk-*.usearch")
    saved.write_bytes(saved.read_bytes()[:300])
    caplog.clear()
    with Kenning(db) as kn:
        assert _vector_ids(kn, "Person7 works at Company0", k=10) == before
    assert [b["reason"] for b in _builds(caplog)] == ["saved index unreadable"]


def test_another_embedder_gets_its_own_index(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="kenning.store.sqlite")
    db = str(tmp_path / "m.db")
    with Kenning(db) as kn:
        kn.remember(_texts("C:", 40))
        _vector_ids(kn, "Person1 works")
    Kenning.reembed(db, embedder="hashing:64")
    caplog.clear()
    with Kenning(db, embedder="hashing:64") as kn:
        assert len(kn._engine.embedder.embed(["x"])[0]) == 64
        assert len(_vector_ids(kn, "Person1 works at Company1", k=3)) == 3
    assert [b["reason"] for b in _builds(caplog)] == ["no saved index"]
    names = [p.name for p in (tmp_path / "m.db.vectors").glob("chunk-*.usearch")]
    assert len(names) == 1  # the file of the former embedder is gone


def test_an_index_newer_than_the_database_is_rebuilt(tmp_path, caplog):
    """A database restored from a backup behind its saved index."""
    caplog.set_level(logging.INFO, logger="kenning.store.sqlite")
    db = tmp_path / "m.db"
    with Kenning(str(db)) as kn:
        kn.remember(_texts("D:", 20))
    backup = db.read_bytes()
    with Kenning(str(db)) as kn:
        kn.remember(_texts("E:", 20))
        _vector_ids(kn, "Person1")
    db.write_bytes(backup)
    for extra in ("-wal", "-shm"):
        Path(str(db) + extra).unlink(missing_ok=True)
    caplog.clear()
    with Kenning(str(db)) as kn:
        assert len(_vector_ids(kn, "Person1 works", k=50)) == 20
    assert [b["reason"] for b in _builds(caplog)] == ["index not saved by this database"]


_WRITER = textwrap.dedent("""
    import os, sys
    from kenning import Kenning
    kn = Kenning(sys.argv[1])
    kn.remember("Wilhelmina Yarrow tunes pianos in Lyon.")
    kn.remember(["Elsewhere: Person%d sails in Bay%d." % (i, i) for i in range(5)], dataset="other")
    os._exit(0)  # a crash: no close, nothing saved
""")


def test_writes_by_another_process_are_caught_up_without_a_rebuild(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="kenning.store.sqlite")
    db = str(tmp_path / "m.db")
    with Kenning(db) as kn:
        kn.remember(_texts("F:", 50))
        for kind in ("chunk", "fact", "entity"):
            _vector_ids(kn, "Person2 works at Company2", kind=kind)
        built = len(_builds(caplog))
        assert built == 3
        for _ in range(3):  # the other process commits while this one keeps its indexes open
            subprocess.run([sys.executable, "-c", _WRITER, db], check=True, timeout=60)
        assert len(kn.recall("Wilhelmina Yarrow tunes pianos", top_k=3).hits) > 0
        for kind in ("chunk", "fact", "entity"):
            assert _vector_ids(kn, "Wilhelmina Yarrow tunes pianos", kind=kind)
        found = _vector_ids(kn, "Wilhelmina Yarrow tunes pianos", k=1)
        assert kn.store.get_chunks(found)[0].text.startswith("Wilhelmina")
        assert len(_builds(caplog)) == built  # caught up: not one rebuild
        assert _vector_ids(kn, "Person1 sails in Bay1", dataset="other")  # the other dataset: built once
        assert len(_builds(caplog)) == built + 1


def test_memory_store_keeps_its_index_in_memory(tmp_path):
    with Kenning(":memory:") as kn:
        kn.remember(_texts("G:", 20))
        mid = kn.remember("Quentin Ibarra restores clocks in Porto.").memory_ids[0]
        assert _vector_ids(kn, "Quentin Ibarra restores clocks", k=1) == [_chunk_of_memory(kn, mid)]
    assert not list(tmp_path.iterdir())


def _chunk_of_memory(kn: Kenning, memory_id: str) -> str:
    return kn.store._db.execute("SELECT id FROM chunks WHERE memory_id = ?", (memory_id,)).fetchone()[0]


RELOADED = "vector index reloaded: log trimmed past it"


def _log_rows(db: str, kind: str = "chunk") -> list[int]:
    with sqlite3.connect(db) as con:
        return [r[0] for r in con.execute("SELECT seq FROM vector_log WHERE kind = ? AND dataset = 'main'", (kind,))]


def test_ingest_maintains_the_indexes_so_no_query_builds_them(tmp_path, caplog):
    """Past 1,024 logged vectors the indexes are caught up at ingest; close saves them, and the
    next process's first search maps the file: no build inside a query."""
    caplog.set_level(logging.INFO, logger="kenning.store.sqlite")
    db = str(tmp_path / "m.db")
    with Kenning(db) as kn:
        ids = kn.remember(_texts("H:", 700)).memory_ids
        index = kn.store._anns[("chunk", "main")]  # no search was made
        # caught up once 1,024 vectors were logged (a third of them chunks), as the commit
        # group that passed the mark committed
        assert not index.mapped and len(index) >= 1024 // 3
    caplog.clear()
    with Kenning(db) as kn:
        assert _vector_ids(kn, "H: Person699 works at Company6", k=1) == [_chunk_of(kn, ids[-1])]
        index = kn.store._anns[("chunk", "main")]
        assert index.mapped and len(index) == 700 and index.unsaved == 0
    assert _builds(caplog) == []


_BULK_WRITER = textwrap.dedent("""
    import sys
    from kenning import Kenning
    with Kenning(sys.argv[1]) as kn:  # closes: saves its indexes and trims the log
        kn.remember(["Bulk: Agent%d guards Vault%d in Bern." % (i, i) for i in range(1100)])
""")


def test_the_log_is_trimmed_and_a_process_behind_the_trim_reloads_or_rebuilds(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="kenning.store.sqlite")
    db = str(tmp_path / "m.db")
    with Kenning(db) as kn:
        kn.remember(_texts("J:", 40))
        assert _vector_ids(kn, "Person2 works")  # built and saved: the log rows it covers go
        stamp = kn.store._anns[("chunk", "main")].stamp
        assert _log_rows(db) == []
        kn.remember("Ignatius Rook bakes rye bread in Riga.")
        assert len(_log_rows(db)) == 1  # newer than the file: kept
        subprocess.run([sys.executable, "-c", _BULK_WRITER, db], check=True, timeout=120)
        (saved,) = (tmp_path / "m.db.vectors").glob("chunk-*.usearch")
        newer = int(saved.stem.split("-")[3])
        assert newer > stamp and max(_log_rows(db), default=0) <= kn.store._head()
        assert all(seq > newer for seq in _log_rows(db))  # the other process trimmed up to its file
        caplog.clear()
        assert len(_vector_ids(kn, "Bulk: Agent5 guards Vault5", k=2000)) == 1141
        assert [r.getMessage() for r in caplog.records].count(RELOADED) == 1
        assert _builds(caplog) == []  # reloaded the other process's file, no rebuild
        subprocess.run([sys.executable, "-c", _BULK_WRITER.replace("Bulk:", "More:"), db], check=True, timeout=120)
        for path in (tmp_path / "m.db.vectors").glob("chunk-*.usearch"):
            path.unlink()  # and now the newer file is gone too: only a rebuild can catch up
        caplog.clear()
        assert len(_vector_ids(kn, "More: Agent5 guards Vault5", k=3000)) == 2241
        assert [r.getMessage() for r in caplog.records].count(RELOADED) == 1
        assert [b["reason"] for b in _builds(caplog, "chunk")] == ["no saved index"]


def test_access_counts_are_buffered_and_written_on_close(tmp_path):
    db = str(tmp_path / "m.db")
    with Kenning(db) as kn:
        mid = kn.remember("Hortense Ulm grows saffron in Valencia.").memory_ids[0]
        for _ in range(3):
            kn.recall("Hortense Ulm saffron")
        assert kn.get(mid).access_count == 3  # this process sees its buffered counts
        with sqlite3.connect(db) as con:  # the database does not, yet
            assert con.execute("SELECT access_count FROM memories WHERE id = ?", (mid,)).fetchone()[0] == 0
    with sqlite3.connect(db) as con:
        count, last = con.execute("SELECT access_count, last_accessed_at FROM memories WHERE id = ?", (mid,)).fetchone()
    assert count == 3 and last


def test_close_saves_an_index_changed_by_many_rows_even_below_a_sixteenth(tmp_path, monkeypatch):
    """The next process replays the rows changed since the saved file into the graph; past
    ``_CLOSE_SAVE_ROWS`` (2,000) close saves instead, however large the index (a sixteenth of a
    million rows would take a first search tens of seconds). Fewer rows stay in the log."""
    import kenning.store.sqlite.store as sqlite_store

    monkeypatch.setattr(sqlite_store, "_CLOSE_SAVE_ROWS", 20)
    db = str(tmp_path / "m.db")
    with Kenning(db) as kn:
        kn.remember(_texts("K:", 700))
    stamp = _saved_stamp(db)
    with Kenning(db) as kn:
        kn.remember(_texts("L:", 10))  # fewer than 20 and than 700 / 16
        assert _vector_ids(kn, "Person2 works")
    assert _saved_stamp(db) == stamp and len(_log_rows(db)) == 10
    with Kenning(db) as kn:
        kn.remember(_texts("M:", 30))  # more than 20, fewer than 740 / 16
        assert _vector_ids(kn, "Person2 works")
    assert _saved_stamp(db) > stamp and _log_rows(db) == []


def _saved_stamp(db: str, kind: str = "chunk") -> int:
    (path,) = Path(db + ".vectors").glob(f"{kind}-*.usearch")
    return int(path.stem.split("-")[3])


def test_a_recall_that_searches_no_vectors_loads_no_index_and_a_later_one_still_checks_it(tmp_path):
    """Opening a store and a hashing hybrid recall (which searches no chunk or fact vectors)
    import neither usearch nor onnxruntime (a fifth of a second or more of a fresh process) and
    compile none of the offline extractor's patterns (about a second);
    the first vector search then loads them, onnxruntime first, and still refuses a damaged
    saved file (rebuilt from the rows, and the right rows found)."""
    db = str(tmp_path / "m.db")
    with Kenning(db) as kn:
        kn.remember(_texts("N:", 60))
        assert _vector_ids(kn, "Person3 works at Company3")  # builds and saves the chunk index
    (saved,) = Path(db + ".vectors").glob("chunk-*.usearch")
    body = bytearray(saved.read_bytes())
    body[-64:] = b"\xff" * 64  # damaged vectors or links, same size and name
    saved.write_bytes(bytes(body))
    script = textwrap.dedent(f"""
        import logging, sys
        from kenning import Kenning
        built = []
        handler = logging.Handler()
        handler.emit = lambda record: built.append(record.getMessage())
        logging.getLogger("kenning").addHandler(handler)
        logging.getLogger("kenning").setLevel(logging.INFO)
        with Kenning({db!r}) as kn:
            assert kn.recall("Where does Person3 work?", dataset="main").hits
            print("after hybrid:", "usearch.index" in sys.modules, "onnxruntime" in sys.modules)
            from kenning.pipeline import offline  # imported by Kenning(): its patterns are not compiled yet
            print("patterns compiled:", offline._compile.cache_info().currsize)
            onnx = __import__("importlib.util").util.find_spec("onnxruntime") is not None
            vec = kn._engine.embedder.embed(["N: Person3 works at Company3 in City3."])[0]
            hits = [h.id for h in kn.store.vector("main", "chunk", vec, 1)]
            text = kn.store.get_chunks(hits)[0].text
            print("after vectors:", "usearch.index" in sys.modules, "onnxruntime" in sys.modules or not onnx)
            print("found:", text.startswith("N: Person3 "), "{BUILT}" in built)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:4] == [
        "after hybrid: False False", "patterns compiled: 0", "after vectors: True True", "found: True True"]
