"""Calibrate recall's lane weights on a dev split: ingest once, then score hybrid under each
weight setting of a small grid (one weight varied at a time around the defaults).

    python benchmarks/tune_recall.py ../shared/data/locomo/locomo10.json --split dev
    python benchmarks/tune_recall.py ../shared/data/locomo/locomo10.json --split dev \
        --grid vector=0,0.2,0.35,0.5 --grid neighbor=0,0.15,0.25,0.35

    python benchmarks/tune_recall.py ../shared/data/longmemeval/dev --kind longmemeval \
        --cache /tmp/lme-dev --grid neighbor=0,0.3,0.65

``--no-forms`` adds a row ranked without the irregular word forms (``fly``/``flew``/``flight``,
kenning/search/lexicon.py), beside the defaults in the same run.

Prints recall@5/10/25 and MRR per setting (LongMemEval: also session recall_all@5), with BM25 over
the same units as the first row. The defaults in kenning/search/recall.py (``LANE_WEIGHTS``)
were chosen with this script; docs/benchmarks.md has the figures. ``--cache DIR`` keeps the
ingested stores (SQLite files) in DIR and reuses them on the next run: ingest once, rank many
times (delete DIR after changing what ingest does).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kenning import Kenning  # noqa: E402
from kenning.eval.bm25 import BM25  # noqa: E402
from kenning.eval.datasets import load, session_of  # noqa: E402
from kenning.eval.metrics import all_at_k, recall_at_k, reciprocal_rank  # noqa: E402
from kenning.eval.run import DATASET, _embedder, _ingest, ranked_keys, EvalConfig  # noqa: E402
from kenning.search import recall as recall_module  # noqa: E402
from kenning.search import variants as variants_module  # noqa: E402

DEFAULT_GRID = {
    "vector": [0.0, 0.2, 0.35, 0.5, 0.7],
    "graph": [0.0, 0.25, 0.5],
    "neighbor": [0.0, 0.15, 0.25, 0.35, 0.5],
    "neighbor2": [0.0, 0.35, 0.5, 0.65],
    "reply": [0.65, 0.8, 1.0, 1.3],
    "window": [0.0, 0.25, 0.5, 1.0],
    "fact": [0.0, 0.25, 0.5, 0.75, 1.0],
    "speaker": [0.0, 0.1, 0.25],
    "expansion": [0.0, 0.15, 0.3],
    "bridge": [1.0, 1.5, 2.0, 2.5],
    "title": [0.0, 0.5, 1.0],
    "role": [0.0, 0.5, 1.0, 2.0],
    "session": [0.0, 0.3, 0.5],
}


def _grid(items: list[str]) -> dict[str, list[float]]:
    if not items:
        return DEFAULT_GRID
    out = {}
    for item in items:
        if item == "none":  # the defaults alone (and --no-forms)
            continue
        name, _, values = item.partition("=")
        out[name] = [float(v) for v in values.split(",")]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path")
    parser.add_argument("--kind", default="locomo", choices=["locomo", "hotpotqa", "musique", "longmemeval"])
    parser.add_argument("--limit", type=int, default=None, help="only the first N collections")
    parser.add_argument("--cache", default=None, help="keep / reuse the ingested stores in this folder")
    parser.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--grid", action="append", default=[], help="name=v1,v2,… (repeatable); none: no grid")
    parser.add_argument("--set", action="append", default=[], help="name=value: a base weight (repeatable)")
    parser.add_argument("--search-type", default="hybrid")
    parser.add_argument("--types", action="store_true", help="also R@5 / R@10 by question type")
    parser.add_argument("--misses", default=None,
                        help="write each question of the defaults row whose gold is not all in the top 10 "
                             "(or, LongMemEval, its sessions in the top 5; JSON lines: question, type, "
                             "gold ranks, the top 5 texts) to this file")
    parser.add_argument("--miss-depth", type=int, default=10,
                        help="--misses: a question misses when a gold unit ranks below this (default 10)")
    parser.add_argument("--no-forms", action="store_true",
                        help="also a row with the irregular word forms (kenning/search/lexicon.py) left out")
    args = parser.parse_args()
    collections = load(args.kind, args.path, args.split)[: args.limit]
    stores = [_store(collection, args) for collection in collections]
    base = dict(recall_module.LANE_WEIGHTS)
    base.update({name: float(value) for name, _, value in (item.partition("=") for item in args.set)})
    settings = [("defaults", {})] + ([("no-forms", {})] if args.no_forms else []) + [
        (f"{name}={value:g}", {name: value}) for name, values in _grid(args.grid).items() for value in values
    ]
    sessions = args.kind == "longmemeval"
    print(f"{'setting':<18} {'R@5':>5} {'R@10':>5} {'R@25':>5} {'MRR':>6} {'ms':>6}" + (" Sall@5" if sessions else ""))
    # the baseline the targets are written against, over the same units
    rows = []
    for collection in collections:
        index, units = BM25([u.text for u in collection.units]), [u.key for u in collection.units]
        rows += [([units[i] for i in index.rank(q.text, 50)], q) for q in collection.questions]
    _print("bm25", rows, [0.0], sessions, args.types)
    for label, change in settings:
        recall_module.LANE_WEIGHTS.clear()
        recall_module.LANE_WEIGHTS.update({**base, **change})
        rows, ms = [], []
        variants_module.forms = _no_forms if label == "no-forms" else FORMS
        for kn, keys, questions in stores:
            for q in questions:
                started = time.perf_counter()
                hits = kn.recall(q.text, dataset=DATASET, search_type=args.search_type, top_k=50).hits
                ms.append((time.perf_counter() - started) * 1000)
                rows.append((ranked_keys(hits, keys), q))
        _print(label, rows, ms, sessions, args.types)
        if label == "defaults" and args.misses:
            _misses(args.misses, rows, {id(q): {u.key: u.text for u in c.units} for c in collections
                                         for q in c.questions}, args.miss_depth)
    recall_module.LANE_WEIGHTS.clear()
    recall_module.LANE_WEIGHTS.update(base)


FORMS = variants_module.forms


def _no_forms(word: str) -> tuple[str, ...]:
    return ()


def _print(label: str, rows: list, ms: list[float], sessions: bool, types: bool = False) -> None:
    scores = {k: [recall_at_k(ranked, q.gold, k) for ranked, q in rows] for k in (5, 10, 25)}
    rr = [reciprocal_rank(ranked, q.gold) for ranked, q in rows]
    figures = " ".join(f"{100 * statistics.mean(v):5.1f}" for v in scores.values())
    line = f"{label:<18} {figures} {statistics.mean(rr):6.3f} {statistics.median(ms):6.1f}"
    if sessions:
        every = [all_at_k(list(dict.fromkeys(session_of(k) for k in ranked)), q.sessions, 5) for ranked, q in rows]
        line += f" {100 * statistics.mean(every):6.1f}"
    print(line, flush=True)
    for category in sorted({q.category for _, q in rows}) if types else ():
        mine = [(ranked, q) for ranked, q in rows if q.category == category]
        figures = " ".join(f"{100 * statistics.mean(recall_at_k(r, q.gold, k) for r, q in mine):5.1f}" for k in (5, 10))
        print(f"  {category[:26]:<26} {figures}  (n={len(mine)})", flush=True)


def _misses(path: str, rows: list, texts_of: dict[int, dict[str, str]], depth: int = 10) -> None:
    """The questions whose gold units are not all among the first ``depth``, with where they rank."""
    with open(path, "w") as out:
        for ranked, q in rows:
            texts = texts_of[id(q)]
            where = {g: (ranked.index(g) + 1 if g in ranked else None) for g in q.gold}
            sessions = list(dict.fromkeys(session_of(k) for k in ranked))
            if all(r is not None and r <= depth for r in where.values()) and (
                    not q.sessions or all_at_k(sessions, q.sessions, 5)):
                continue
            out.write(json.dumps({"question": q.text, "type": q.category, "answer": q.answer, "gold": where,
                                  "sessions": {s: (sessions.index(s) + 1 if s in sessions else None) for s in q.sessions},
                                  "gold_text": {g: texts.get(g, "")[:300] for g in q.gold},
                                  "top": [(k, texts.get(k, "")[:160]) for k in ranked[:5]]}) + "\n")


def _store(collection, args) -> tuple:
    """A store holding the collection (from the cache folder when it is there), its memory ->
    unit keys, and its questions; the engine clock at the collection's date when it has one."""
    clock = (lambda now=collection.now: now) if collection.now is not None else None
    embedder = _embedder(EvalConfig(embedder=args.embedder))
    if args.cache is None:
        kn = Kenning(":memory:", embedder=embedder, clock=clock)
        return kn, _ingest(kn, collection), collection.questions
    folder = Path(args.cache)
    folder.mkdir(parents=True, exist_ok=True)
    db, keys_file = folder / f"{collection.name}.db", folder / f"{collection.name}.keys.json"
    if keys_file.is_file():
        return Kenning(str(db), embedder=embedder, clock=clock), json.loads(keys_file.read_text()), collection.questions
    kn = Kenning(str(db), embedder=embedder, clock=clock)
    keys = _ingest(kn, collection)
    keys_file.write_text(json.dumps(keys))
    return kn, keys, collection.questions


if __name__ == "__main__":
    main()
