"""The benchmark scripts, end to end at a tiny size, so they cannot rot."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

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
    assert list(corpus.memories) == sorted(corpus.memories, key=lambda m: m.when)
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


def test_bench_embed_runs_end_to_end():
    fixture = Path(__file__).resolve().parent / "fixtures" / "locomo_tiny.json"
    out = _script(str(BENCHMARKS / "bench_embed.py"), str(fixture), "--embedders", "hashing", "--json")
    result = json.loads(out)["embedders"]["hashing"]
    assert result["raw_texts_per_s"] > 0
    for mode in ("remember_per_session", "remember_one_call"):
        assert result[mode]["memories"] == 7 and result[mode]["failed"] == 0 and result[mode]["memories_per_s"] > 0


def _env() -> dict[str, str]:
    import os

    root = str(BENCHMARKS.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}


def _run(*args: str, timeout: int = 180) -> str:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout,
                          check=False, env=_env())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


@pytest.mark.postgres
def test_bench_backends_runs_both_stores_small():
    from tests.pg import pg_url

    result = json.loads(_run(str(BENCHMARKS / "bench_backends.py"), "--facts", "80", "--batch", "40",
                             "--queries", "5", "--json", "--pg", pg_url()))
    assert set(result["backends"]) == {"sqlite", "postgresql"}, result.keys()
    sqlite, postgres = result["backends"]["sqlite"], result["backends"]["postgresql"]
    for backend in (sqlite, postgres):
        assert backend["ingest"]["failed"] == 0 and backend["recall"]["p50"] > 0
    # the same memories in the same order make the same store and the same answers
    assert {k: sqlite["ingest"][k] for k in ("memories", "facts", "entities")} == {
        k: postgres["ingest"][k] for k in ("memories", "facts", "entities")}
    assert sqlite["recall"]["answer_in_top_k"] == postgres["recall"]["answer_in_top_k"] >= 0.6


@pytest.mark.postgres
def test_bench_backends_copies_into_postgresql_and_reuses_both_stores(tmp_path):
    from tests.pg import pg_url

    url = pg_url()
    args = (str(BENCHMARKS / "bench_backends.py"), "--facts", "80", "--batch", "40", "--queries", "5", "--json",
            "--pg", url, "--dir", str(tmp_path))
    first = json.loads(_run(*args, "--pg-copy"))["backends"]
    again = json.loads(_run(*args))["backends"]
    assert first["postgresql"]["ingest"]["copied"] and first["postgresql"]["ingest"]["memories_per_s"] > 0
    for name in ("sqlite", "postgresql"):
        counts = {k: first["sqlite"]["ingest"][k] for k in ("memories", "facts", "entities")}
        assert {k: first[name]["ingest"][k] for k in counts} == counts == {k: again[name]["ingest"][k] for k in counts}
        assert again[name]["ingest"]["seconds"] is None  # stored already: not ingested again
    assert first["postgresql"]["recall"]["answer_in_top_k"] == again["postgresql"]["recall"]["answer_in_top_k"] \
        == first["sqlite"]["recall"]["answer_in_top_k"]



@pytest.mark.postgres
def test_bench_backends_times_more_memories_into_the_stores_as_they_are(tmp_path):
    from tests.pg import pg_url

    args = (str(BENCHMARKS / "bench_backends.py"), "--facts", "60", "--batch", "30", "--queries", "5", "--json",
            "--pg", pg_url(), "--dir", str(tmp_path))
    _run(*args)
    result = json.loads(_run(*args, "--more", "40"))["backends"]
    added = set()
    for backend in result.values():
        more = backend["more"]
        assert more["stored_before"] == backend["ingest"]["memories"] and more["memories"] == 40
        assert more["memories_per_s"] > 0 and more["client_cpu_ms"] > 0 and len(more["per_list"]) == 2
        assert more["server_cpu_ms"] is None  # a server this script did not start
        added.add(more["new"])
    assert len(added) == 1 and 0 < added.pop() <= 40  # the same new memories in both stores


@pytest.mark.postgres
def test_pg_insert_cost_leaves_the_store_as_it_was():
    from kenning import Kenning
    from tests.pg import pg_url

    url = pg_url()
    with Kenning(url) as kn:
        kn.remember(["Alice works at Acme.", "Bob lives in Paris."])
        before = kn.stats().model_dump()
    out = _run(str(BENCHMARKS / "pg_insert_cost.py"), "--pg", url, "--rows", "2")
    assert "ms without HNSW" in out and out.count("\n") >= 4
    with Kenning(url) as kn:
        assert kn.stats().model_dump() == before
        assert kn.recall("Who works at Acme?").hits

def test_bench_llm_counts_calls_small():
    out = _run(str(BENCHMARKS / "bench_llm.py"), "--n", "4", "--latency-ms", "0", "--concurrency", "2")
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith(("batch", "perdoc"))}
    assert set(rows) == {"batch", "perdoc"}
    assert rows["perdoc"][3] == "1.00"  # one chat call per document, exactly
    assert float(rows["batch"][3]) < 1.0  # batching shares calls
    assert rows["batch"][9] == rows["perdoc"][9] == "0"  # errors


def test_load_server_loses_nothing_small():
    report = json.loads(_run(str(BENCHMARKS / "load_server.py"), "--clients", "2", "--seconds", "2"))
    assert report["requests"] > 10 and report["server_errors"] == 0
    assert report["lost_writes"] == 0 and report["remembered"] == report["stored"] > 0


def test_fuzz_api_finds_no_server_error_small():
    pytest.importorskip("schemathesis")
    _run(str(BENCHMARKS / "fuzz_api.py"), "--max-examples", "3", "--workers", "1", "--phases", "fuzzing")


def test_bench_matvec_compares_the_two_products():
    out = _run(str(BENCHMARKS / "bench_matvec.py"), "--rows", "500", "--repeats", "5")
    assert "matrix @ query" in out and "np.einsum" in out and "median" in out


@pytest.mark.slow
def test_bench_scale_at_10k_keeps_its_targets():
    """The larger check (``--runslow``): ingest and answers at 10,000 memories."""
    result = json.loads(_run(str(BENCHMARKS / "bench_scale.py"), "--facts", "10000", "--queries", "100",
                             "--json", "--quiet", timeout=900))
    assert result["ingest"]["failed"] == 0 and result["ingest"]["memories"] == 10_000
    assert result["store"]["facts"] > 9000
    assert result["recall_ms"]["hybrid"]["answer_in_top_k"] >= 0.85, result["recall_ms"]


def test_eval_agent_life_prints_the_four_figures():
    fixture = Path(__file__).resolve().parent / "fixtures" / "agent_life_tiny.jsonl"
    result = json.loads(_run(str(BENCHMARKS / "eval_agent_life.py"), str(fixture), "--json"))
    assert set(result["figures"]) == {"recall@1", "context", "facts", "as-of"}
    # two "now" questions and one "as_of" question
    assert result["counts"]["recall@1"][1] == result["counts"]["context"][1] == result["counts"]["facts"][1] == 2
    assert result["counts"]["as-of"] == [1, 1]
    table = _run(str(BENCHMARKS / "eval_agent_life.py"), str(fixture))
    assert all(name in table for name in ("recall@1", "context", "facts", "as-of"))


def test_eval_agent_life_counts_a_value_only_as_a_whole_word():
    import eval_agent_life

    assert eval_agent_life.mentions("I drink tea.", ["tea"])
    assert not eval_agent_life.mentions("I like steam trains.", ["tea"])
    assert eval_agent_life.mentions("a Financial Analyst now", ["financial analyst"])


def test_bench_forget_prints_the_cost_of_erasing():
    out = _script(str(BENCHMARKS / "bench_forget.py"), "--memories", "30", "--deletes", "2")
    assert "ms a memory at 30 memories" in out and "for 30 memories" in out


def test_bench_longturn_measures_both_sets_on_fixtures():
    fixtures = Path(__file__).resolve().parent / "fixtures"
    out = _script(str(BENCHMARKS / "bench_longturn.py"), str(fixtures / "longmemeval_tiny"), "--questions", "1",
                  "--repeats", "2", "--locomo", str(fixtures / "locomo_tiny.json"), "--locomo-questions", "2", "--json")
    result = json.loads(out)
    assert len(result["load_before"]) == 3 and len(result["load_after"]) == 3
    for figures in result["sets"].values():
        assert figures["turns"] > 0 and figures["ingest_turns_per_s"] > 0 and figures["queries"] > 0
        assert figures["recall_ms"]["p50"] > 0 and figures["bm25_ms"]["p95"] >= figures["bm25_ms"]["p50"]


def test_bench_longturn_warm_ingests_a_store_first_untimed():
    fixtures = Path(__file__).resolve().parent / "fixtures"
    out = _script(str(BENCHMARKS / "bench_longturn.py"), str(fixtures / "longmemeval_tiny"), "--questions", "1",
                  "--repeats", "2", "--locomo", str(fixtures / "locomo_tiny.json"), "--locomo-questions", "1",
                  "--warm", "--json")
    result = json.loads(out)
    assert result["warm_s"] > 0 and len(result["sets"]) == 2


def test_check_extraction_finds_no_difference_with_itself(tmp_path):
    fixtures = Path(__file__).resolve().parent / "fixtures"
    snapshot = tmp_path / "snapshot.json"
    _script(str(BENCHMARKS / "check_extraction.py"), "--write", str(snapshot), str(fixtures / "long_turns.json"))
    assert "0 differ" in _script(str(BENCHMARKS / "check_extraction.py"), "--compare", str(snapshot),
                                 str(fixtures / "long_turns.json"))
    saved = json.loads(snapshot.read_text())
    first = next(i for i, text in enumerate(saved) if text["extraction"]["facts"])
    saved[first]["extraction"]["facts"] = []  # as if the code read one fact less
    snapshot.write_text(json.dumps(saved))
    done = subprocess.run([sys.executable, str(BENCHMARKS / "check_extraction.py"), "--compare", str(snapshot),
                           str(fixtures / "long_turns.json")], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and "1 differ" in done.stdout


@pytest.mark.parametrize(("name", "floor"), [
    # the floors: what the offline extractor scores (recall@1, context, facts, as-of); A and B raised on
    # 2026-12-04 (lifeloop; B was 18, 16, 18, 11), C (held out, never tuned on) added then: main scored
    # 13, 10, 10, 12 on it. C raised on 2026-12-04 (life3, tuned on C: 13, 12, 11, 12 before); its as-of
    # lost one (Ingrid's move, read now, is a later message that outranks the old home in an as-of recall).
    # D (14 users, written blind by a helper that read no extractor code) added then: main scored 27, 33,
    # 23, 14 on it; life3 looked at its misses to choose kinds of sentence, so it is not held out. E (14 users,
    # written blind by another helper after that) is: only its scores and counts of kinds of miss were read,
    # never its texts; main scored 15, 23, 19, 15 on it
    ("agent_life_a.jsonl", {"recall@1": 24, "context": 26, "facts": 26, "as-of": 14}),
    ("agent_life_b.jsonl", {"recall@1": 20, "context": 22, "facts": 22, "as-of": 11}),
    ("agent_life_c.jsonl", {"recall@1": 19, "context": 19, "facts": 20, "as-of": 11}),
    ("agent_life_d.jsonl", {"recall@1": 33, "context": 39, "facts": 34, "as-of": 14}),
    ("agent_life_e.jsonl", {"recall@1": 18, "context": 23, "facts": 20, "as-of": 15}),
])
def test_agent_life_scenarios_keep_their_floor(name: str, floor: dict[str, int]) -> None:
    """64 everyday-loop users (homes, employers, partners, pets, phones, banks, doctors …
    changing over sessions), scored by the same script as the public set."""
    fixture = Path(__file__).resolve().parent / "fixtures" / name
    result = json.loads(_run(str(BENCHMARKS / "eval_agent_life.py"), str(fixture), "--json"))
    for figure, least in floor.items():
        assert result["counts"][figure][0] >= least, (figure, result["counts"])
