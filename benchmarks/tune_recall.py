"""Calibrate recall's lane weights on a dev split: ingest once, then score hybrid under each
weight setting of a small grid (one weight varied at a time around the defaults).

    python benchmarks/tune_recall.py ../shared/data/locomo/locomo10.json --split dev
    python benchmarks/tune_recall.py ../shared/data/locomo/locomo10.json --split dev \
        --grid vector=0,0.2,0.35,0.5 --grid neighbor=0,0.15,0.25,0.35

Prints recall@5/10/25 and MRR per setting. The defaults in kenning/search/recall.py
(``LANE_WEIGHTS``) were chosen with this script; docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kenning import Kenning  # noqa: E402
from kenning.eval.datasets import load  # noqa: E402
from kenning.eval.metrics import recall_at_k, reciprocal_rank  # noqa: E402
from kenning.eval.run import DATASET, _embedder, _ingest, ranked_keys, EvalConfig  # noqa: E402
from kenning.search import recall as recall_module  # noqa: E402

DEFAULT_GRID = {
    "vector": [0.0, 0.2, 0.35, 0.5, 0.7],
    "graph": [0.0, 0.25, 0.5],
    "neighbor": [0.0, 0.15, 0.25, 0.35, 0.5],
    "window": [0.0, 0.25, 0.5, 1.0],
    "fact": [0.0, 0.25, 0.5, 0.75, 1.0],
    "speaker": [0.0, 0.1, 0.25],
    "expansion": [0.0, 0.15, 0.3],
}


def _grid(items: list[str]) -> dict[str, list[float]]:
    if not items:
        return DEFAULT_GRID
    out = {}
    for item in items:
        name, _, values = item.partition("=")
        out[name] = [float(v) for v in values.split(",")]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path")
    parser.add_argument("--kind", default="locomo", choices=["locomo", "hotpotqa", "musique"])
    parser.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--grid", action="append", default=[], help="name=v1,v2,… (repeatable)")
    parser.add_argument("--set", action="append", default=[], help="name=value: a base weight (repeatable)")
    parser.add_argument("--search-type", default="hybrid")
    args = parser.parse_args()
    collections = load(args.kind, args.path, args.split)
    stores = []
    for collection in collections:
        kn = Kenning(":memory:", embedder=_embedder(EvalConfig(embedder=args.embedder)))
        keys = _ingest(kn, collection)
        stores.append((kn, keys, collection.questions))
    base = dict(recall_module.LANE_WEIGHTS)
    base.update({name: float(value) for name, _, value in (item.partition("=") for item in args.set)})
    settings = [("defaults", {})] + [
        (f"{name}={value:g}", {name: value}) for name, values in _grid(args.grid).items() for value in values
    ]
    print(f"{'setting':<18} {'R@5':>5} {'R@10':>5} {'R@25':>5} {'MRR':>6} {'ms':>6}")
    for label, change in settings:
        recall_module.LANE_WEIGHTS.clear()
        recall_module.LANE_WEIGHTS.update({**base, **change})
        scores = {5: [], 10: [], 25: []}
        rr, ms = [], []
        for kn, keys, questions in stores:
            for q in questions:
                started = time.perf_counter()
                hits = kn.recall(q.text, dataset=DATASET, search_type=args.search_type, top_k=50).hits
                ms.append((time.perf_counter() - started) * 1000)
                ranked = ranked_keys(hits, keys)
                for k in scores:
                    scores[k].append(recall_at_k(ranked, q.gold, k))
                rr.append(reciprocal_rank(ranked, q.gold))
        figures = " ".join(f"{100 * statistics.mean(v):5.1f}" for v in scores.values())
        print(f"{label:<18} {figures} {statistics.mean(rr):6.3f} {statistics.median(ms):6.1f}", flush=True)
    recall_module.LANE_WEIGHTS.clear()
    recall_module.LANE_WEIGHTS.update(base)


if __name__ == "__main__":
    main()
