"""The benchmark scripts, end to end at a tiny size, so they cannot rot."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

from kenning.models import Usage
from kenning.pipeline.offline import OfflineExtractor

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import synth


def _script(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_synthetic_sentences_are_read_by_the_offline_extractor():
    corpus = synth.generate(300, seed=3, questions=20)
    assert len(corpus.memories) == 300 and len(corpus.questions) == 20
    assert corpus.memories == sorted(corpus.memories, key=lambda m: m.when)
    extractor = OfflineExtractor()
    when = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    read = sum(bool(extractor.extract([m.text], reference_time=when, usage=Usage()).facts) for m in corpus.memories)
    assert read == len(corpus.memories)
    assert synth.generate(300, seed=3, questions=20) == corpus  # deterministic for a seed


def test_synth_script_prints_sentences():
    out = _script(str(BENCHMARKS / "synth.py"), "--facts", "12")
    assert out.count(".\n") >= 12 and "->" in out


def test_bench_scale_runs_end_to_end():
    out = _script(str(BENCHMARKS / "bench_scale.py"), "--facts", "300", "--queries", "10",
                  "--batch", "100", "--json", "--quiet", "--index-recall", "--writer-rate", "20")
    result = json.loads(out)
    assert result["ingest"]["memories"] == 300 and result["ingest"]["failed"] == 0
    assert result["store"]["facts"] > 200
    assert set(result["recall_ms"]) == {"hybrid", "chunks", "facts", "entities", "graph", "temporal"}
    assert all(v["p50"] > 0 for v in result["recall_ms"].values())
    assert result["ann_vs_exact"]["chunk"]["recall@10"] == 1.0  # small: exact search
    assert result["ann_vs_exact"]["chunk"]["search"] == "exact"
    assert result["second_writer"]["written"] >= 1 and result["second_writer"]["hybrid"]["p50"] > 0
    assert result["first_recall_ms"]["after_reopen"] > 0 and result["index_files_mb"] >= 0
    assert result["peak_rss_mb"] > 0 and result["db_mb"] > 0 and result["machine"]["cores"]


def test_bench_scale_prints_a_table():
    out = _script(str(BENCHMARKS / "bench_scale.py"), "--facts", "100", "--queries", "5",
                  "--search-types", "hybrid,chunks", "--quiet")
    assert "memories/s" in out and "hybrid" in out and "machine:" in out
