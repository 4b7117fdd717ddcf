"""Where recall's time goes on a store of long chat turns (issue "Fast at any size", item 1).

    python benchmarks/tune_recall.py ../shared/data/longmemeval/dev --kind longmemeval --cache /tmp/lme-dev --grid role=1
    python benchmarks/profile_recall.py ../shared/data/longmemeval/dev --cache /tmp/lme-dev --limit 30
    python benchmarks/profile_recall.py --scale /tmp/b50k.db --facts 50000 --top-k 10   # a bench_scale.py store
    python benchmarks/profile_recall.py ../shared/data/longmemeval/dev --cache /tmp/lme-dev --dump after.jsonl

Opens each cached per-question store (built by ``tune_recall.py --cache``: one LongMemEval
question's haystack, ~490 turns of ~970 characters), asks its question once to warm the
process, then ``--rounds`` times with ``recall(question, top_k=50)`` (hybrid, the default
install), and prints recall p50 / p95 / p99 over every ask (wall clock, and the process's CPU
time, which another process's load disturbs less) and the mean wall-clock time per recall of
each step (store reads, the lanes, the memory ranking, the hits' flags). With ``--scale``, the
store is one ``bench_scale.py --db`` kept (its dataset, its generated questions: ``--facts`` and
``--seed`` as given to it), asked ``--limit`` questions. Steps nest
(``search._by_memory`` includes the store reads it makes); the timing wrappers cost a few
microseconds a call.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import gc
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kenning import Kenning
from kenning.core import reading
from kenning.eval.datasets import load
from kenning.eval.run import DATASET
from kenning.search import recall as recall_module
from kenning.store.sqlite.store import SQLiteStore

_STORE_READS = ("lexical", "vector", "get_memories", "get_chunks", "chunk_owners", "fact_owners", "get_facts", "memory_graph", "memory_facts",
                "memory_neighbors", "neighbors", "find_entities", "get_entities", "record_access")
_STEPS = ("_collect", "_expansion", "_graph_lane", "_by_memory", "_neighbor_bonus", "_evidence_hit", "_settle")


def _timed(owner: Any, name: str, label: str, spent: dict[str, float]) -> None:
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - started

    setattr(owner, name, wrapper)


#: what --dump asks each question
_DUMPED = ({"search_type": "hybrid"}, {"search_type": "hybrid", "top_k": 10, "explain": True, "neighbors": 1},
           {"search_type": "chunks"}, {"search_type": "facts"}, {"search_type": "temporal"},
           {"search_type": "entities", "top_k": 10}, {"search_type": "graph", "top_k": 10})


def _copy(db: Path, into: Path) -> Path:
    """A store's files (the database, its log, its vector indexes) copied into ``into``."""
    for file in db.parent.glob(db.name + "*"):
        (shutil.copytree if file.is_dir() else shutil.copy)(file, into / file.name)
    return into / db.name


def _dump(args: argparse.Namespace) -> None:
    at = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="kenning-dump-") as tmp, open(args.dump, "w") as out:
        if args.scale:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from synth import generate

            questions = [q.text for q in generate(args.facts, seed=args.seed, questions=args.limit).questions]
            runs = [("bench", _copy(Path(args.scale), Path(tmp)), at, questions)]
        else:
            runs = [(DATASET, _copy(Path(args.cache) / f"{c.name}.db", Path(tmp)), c.now, [q.text for q in c.questions])
                    for c in load("longmemeval", args.path, "all")[: args.limit]]
        for dataset, db, now, questions in runs:
            with Kenning(str(db), clock=lambda now=now: now) as kn:
                for text in questions:
                    for asked in _DUMPED:
                        result = kn.recall(text, dataset=dataset, **{"top_k": args.top_k, **asked})
                        out.write(json.dumps({"store": db.name, "query": text, "asked": asked,
                                              "hits": [h.model_dump(mode="json") for h in result.hits],
                                              "memories": [m.model_dump(mode="json") for m in result.memories]}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", nargs="?", help="a LongMemEval folder or file")
    parser.add_argument("--cache", help="the stores tune_recall.py --cache built")
    parser.add_argument("--scale", metavar="DB", help="instead: a store bench_scale.py --db filled")
    parser.add_argument("--facts", type=int, default=50_000, help="with --scale: its --facts")
    parser.add_argument("--seed", type=int, default=7, help="with --scale: its --seed")
    parser.add_argument("--limit", type=int, default=30, help="the first N questions")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top-k", type=int, default=50)
    parser.add_argument("--no-steps", action="store_true", help="only p50 / p95 (no timing wrappers)")
    parser.add_argument("--gc-freeze", action="store_true",
                        help="gc.freeze() after the warm-up: full collections then skip what was made before"
                             " (the loaded data set, the imports), whose traversal is most of a gen-2 pause")
    parser.add_argument("--dump", metavar="FILE",
                        help="instead of timing: recall each question once per search type (on copies of the"
                             " stores, the clock fixed) and write every hit and memory as JSON lines; two trees'"
                             " dumps are identical when their recalls are")
    args = parser.parse_args()
    spent: dict[str, float] = defaultdict(float)
    if args.dump:
        _dump(args)
        return
    if not args.no_steps:
        for name in _STORE_READS:
            if hasattr(SQLiteStore, name):  # (an older tree has fewer)
                _timed(SQLiteStore, name, f"store.{name}", spent)
        for name in _STEPS:
            _timed(recall_module, name, f"search.{name}", spent)
        _timed(reading, "annotate_hits", "hits' flags (annotate_hits)", spent)
    stores = []
    dataset = DATASET
    if args.scale:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from synth import generate

        dataset = "bench"
        questions = [q.text for q in generate(args.facts, seed=args.seed, questions=args.limit).questions]
        stores.append((Kenning(args.scale), questions))
    elif not (args.path and args.cache):
        sys.exit("give a LongMemEval path and --cache, or --scale")
    for collection in load("longmemeval", args.path, "all")[: args.limit] if not args.scale else ():
        db = Path(args.cache) / f"{collection.name}.db"
        if not db.is_file():
            sys.exit(f"{db} is missing: build the cache with tune_recall.py --cache first")
        kn = Kenning(str(db), clock=lambda now=collection.now: now)
        stores.append((kn, [q.text for q in collection.questions]))
    for kn, questions in stores:  # warm: first reads of each file, term counts
        for text in questions:
            kn.recall(text, dataset=dataset, top_k=args.top_k)
    spent.clear()
    if args.gc_freeze:
        gc.collect()
        gc.freeze()
    ms: list[float] = []
    cpu: list[float] = []
    for _ in range(args.rounds):
        for kn, questions in stores:
            for text in questions:
                started, used = time.perf_counter(), time.process_time()
                kn.recall(text, dataset=dataset, top_k=args.top_k)
                ms.append((time.perf_counter() - started) * 1000)
                cpu.append((time.process_time() - used) * 1000)
    ms.sort()
    cpu.sort()
    print(f"{len(stores)} stores, {len(ms)} recalls (top_k={args.top_k}): p50 {statistics.median(ms):.1f} ms,"
          f" p95 {ms[min(len(ms) - 1, int(len(ms) * 0.95))]:.1f} ms, p99 {ms[min(len(ms) - 1, int(len(ms) * 0.99))]:.1f} ms,"
          f" max {ms[-1]:.1f} ms; CPU p50 {statistics.median(cpu):.1f} ms, mean {statistics.fmean(cpu):.1f} ms")
    for label, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        print(f"  {label:<30} {seconds / len(ms) * 1000:7.2f} ms")


if __name__ == "__main__":
    main()
