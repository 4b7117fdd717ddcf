"""Run a retrieval evaluation: remember every unit of a collection into a fresh store, ask every
question, map the hits back to unit keys through provenance, and score them beside a BM25
baseline over the same units computed in the same run.

Hits (facts, entities, chunks) name the memories they come from; each memory is one unit, so a
hit list becomes a list of unit keys: the distinct keys in order of first appearance. An entity
named in many units contributes all of them at its rank, which costs recall at small k; the
``chunks`` search type maps one hit to one unit and is reported beside ``hybrid`` for that reason.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import defaultdict
from itertools import groupby
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..requests import RecallRequest
from ..search.recall import LANES
from .bm25 import BM25
from .datasets import Collection, Question, session_of
from .metrics import all_at_k, any_at_k, exact_match, ndcg_at_k, recall_at_k, reciprocal_rank, token_f1

__all__ = ["EvalConfig", "Outcome", "evaluate", "summarize"]

DATASET = "eval"
#: the LoCoMo paper's dense retriever (DRAGON) over dialog turns, Table 3: recall@5/10/25 in %
DRAGON = {"recall@5": 56.7, "recall@10": 66.2, "recall@25": 76.7}


@dataclass
class EvalConfig:
    k: tuple[int, ...] = (5, 10, 25)
    search_types: tuple[str, ...] = ("hybrid", "chunks")
    embedder: str | None = None  # a KENNING_EMBEDDER value; None = the configured one
    settings: dict[str, Any] = field(default_factory=dict)  # other Kenning settings
    answer: bool = False  # also ask for an answer (needs KENNING_LLM) and score it
    judge: bool = False  # …and have the model judge it against the gold answer
    lanes: bool = False  # also score hybrid's lanes one at a time, and hybrid without each


#: per-lane systems (``--lanes``): hybrid restricted to some of its lanes
def ablations() -> dict[str, frozenset[str]]:
    every = frozenset(LANES)
    out = {f"lane:{lane}": frozenset({lane}) for lane in ("lexical", "vector", "graph")}
    out.update({f"hybrid-no-{lane}": every - {lane} for lane in LANES})
    return out


@dataclass
class Outcome:
    """What one question got from one system."""

    system: str
    category: str
    ranked: list[str]
    gold: tuple[str, ...]
    ms: float = 0.0
    #: the gold sessions (LongMemEval): ``ranked`` is also scored by the sessions of its turns
    sessions: tuple[str, ...] = ()


@dataclass
class Run:
    outcomes: list[Outcome] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)
    units: int = 0
    ingest_seconds: float = 0.0
    embedder: str | None = None


def _ingest(kn: Any, collection: Collection) -> dict[str, list[str]]:
    """Remember the units as a user would: the units of one episode (a conversation's session)
    in one call, in order, dated by the session; others one memory per call. Returns memory id
    -> unit keys (identical texts are one memory in kenning, so one memory can stand for
    several units)."""
    keys: dict[str, list[str]] = defaultdict(list)
    for episode, group in groupby(collection.units, key=lambda u: u.episode):
        units = list(group)
        if episode is not None and units[0].role is not None:  # a chat session, as messages
            messages = [{"role": u.role, "content": u.text} for u in units]
            result = kn.remember(messages, dataset=DATASET, session=episode, source=episode,
                                 valid_at=units[0].valid_at)
            for memory_id, unit in zip(result.memory_ids, units):
                keys[memory_id].append(unit.key)
            continue
        if episode is None:
            for unit in units:
                result = kn.remember(unit.text, dataset=DATASET, source=unit.key, valid_at=unit.valid_at)
                keys[result.memory_ids[0]].append(unit.key)
            continue
        result = kn.remember([u.text for u in units], dataset=DATASET, source=episode,
                             valid_at=units[0].valid_at)
        for memory_id, unit in zip(result.memory_ids, units):
            keys[memory_id].append(unit.key)
    return keys


def ranked_keys(hits: Sequence[Any], keys: dict[str, list[str]]) -> list[str]:
    """Distinct unit keys in order of first appearance over the hits' memories."""
    out: dict[str, None] = {}
    for hit in hits:
        for memory_id in hit.memory_ids:
            for key in keys.get(memory_id, ()):
                out.setdefault(key, None)
    return list(out)


def _ask(kn: Any, q: Question, system: str, top_k: int, keys: dict[str, list[str]]) -> Outcome:
    lanes = ablations().get(system)
    started = time.perf_counter()
    if lanes is None:
        result = kn.recall(q.text, dataset=DATASET, search_type=system, top_k=top_k)
    else:  # an evaluation-only restriction of hybrid, below the public API
        result = kn._engine.recall(**RecallRequest.defaults(query=q.text, dataset=DATASET, search_type="hybrid",
                                                            top_k=top_k), lanes=lanes)
    ms = (time.perf_counter() - started) * 1000
    return Outcome(system, q.category, ranked_keys(result.hits, keys), q.gold, ms, q.sessions)


def _bm25(index: BM25, units: list[str], q: Question, depth: int) -> Outcome:
    started = time.perf_counter()
    ranked = [units[i] for i in index.rank(q.text, depth)]
    return Outcome("bm25", q.category, ranked, q.gold, (time.perf_counter() - started) * 1000, q.sessions)


def _answer(kn: Any, q: Question, config: EvalConfig, judge: Callable[[str, str, str], bool] | None) -> dict[str, Any]:
    result = kn.recall(q.text, dataset=DATASET, search_type="hybrid", top_k=max(config.k), answer=True)
    predicted = result.answer or ""
    row = {"category": q.category, "em": exact_match(predicted, q.answer), "f1": token_f1(predicted, q.answer)}
    if judge is not None:
        row["judge"] = float(judge(q.text, q.answer, predicted))
    return row


def evaluate(
    collections: Sequence[Collection], config: EvalConfig,
    progress: Callable[[int], None] | None = None,
) -> Run:
    """Evaluate every collection in a fresh in-memory store; ``progress(1)`` after each question."""
    from ..client import Kenning

    run = Run()
    depth = 2 * max(config.k)
    for collection in collections:
        clock = (lambda now=collection.now: now) if collection.now is not None else None
        with Kenning(":memory:", embedder=_embedder(config), clock=clock, **config.settings) as kn:
            started = time.perf_counter()
            keys = _ingest(kn, collection)
            run.ingest_seconds += time.perf_counter() - started
            run.units += len(collection.units)
            run.embedder = kn.stats().embedder
            judge = _judge(kn) if config.answer and config.judge else None
            unit_keys = [u.key for u in collection.units]
            index = BM25([u.text for u in collection.units])
            systems = [*config.search_types, *(ablations() if config.lanes else ())]
            for q in collection.questions:
                for system in systems:
                    run.outcomes.append(_ask(kn, q, system, depth, keys))
                run.outcomes.append(_bm25(index, unit_keys, q, depth))
                if config.answer:
                    run.answers.append(_answer(kn, q, config, judge))
                if progress:
                    progress(1)
    return run


def _embedder(config: EvalConfig) -> Any:
    """The embedder named by ``config.embedder`` (``Kenning(embedder=…)`` takes an object)."""
    if config.embedder is None:
        return None
    from ..providers.registry import make_embedder
    from ..settings import Settings

    return make_embedder(Settings(embedder=config.embedder))


_JUDGE_PROMPT = (
    "You grade answers. Question: {question}\nGold answer: {gold}\nGenerated answer: {answer}\n"
    "Is the generated answer correct, meaning it states the same thing as the gold answer (other "
    "wording, a more or less specific date or extra detail are fine)? Reply with one word: "
    "CORRECT or WRONG."
)


def _judge(kn: Any) -> Callable[[str, str, str], bool]:
    from ..models import Usage
    from ..providers.registry import make_chat

    chat = make_chat(kn.settings)
    if chat is None:
        raise ValueError("--judge needs a chat model: set KENNING_LLM")

    def judge(question: str, gold: str, answer: str) -> bool:
        prompt = _JUDGE_PROMPT.format(question=question, gold=gold, answer=answer)
        reply = chat.complete_text([{"role": "user", "content": prompt}], Usage())
        return "CORRECT" in reply.upper() and "WRONG" not in reply.upper()

    return judge


# -- summary -----------------------------------------------------------------------------------

def _scores(outcomes: list[Outcome], k_values: Sequence[int]) -> dict[str, float]:
    out: dict[str, float] = {"n": len(outcomes)}
    for k in k_values:
        out[f"recall@{k}"] = round(100 * float(np.mean([recall_at_k(o.ranked, o.gold, k) for o in outcomes])), 1)
    out["mrr"] = round(float(np.mean([reciprocal_rank(o.ranked, o.gold) for o in outcomes])), 3)
    if outcomes and all(o.sessions for o in outcomes):
        for k in k_values:
            out[f"ndcg@{k}"] = round(float(np.mean([ndcg_at_k(o.ranked, o.gold, k) for o in outcomes])), 3)
        sessions = [(list(dict.fromkeys(session_of(key) for key in o.ranked)), o.sessions) for o in outcomes]
        for k in k_values:
            out[f"session_any@{k}"] = round(100 * float(np.mean([any_at_k(r, g, k) for r, g in sessions])), 1)
            out[f"session_all@{k}"] = round(100 * float(np.mean([all_at_k(r, g, k) for r, g in sessions])), 1)
    return out


def _latency(outcomes: list[Outcome]) -> dict[str, float]:
    ms = np.asarray([o.ms for o in outcomes])
    return {f"p{p}": round(float(np.percentile(ms, p)), 2) for p in (50, 95, 99)}


def summarize(run: Run, config: EvalConfig, *, kind: str) -> dict[str, Any]:
    systems: dict[str, Any] = {}
    by_system: dict[str, list[Outcome]] = defaultdict(list)
    for o in run.outcomes:
        by_system[o.system].append(o)
    for name, outcomes in by_system.items():
        categories: dict[str, list[Outcome]] = defaultdict(list)
        for o in outcomes:
            categories[o.category].append(o)
        entry = {
            "overall": _scores(outcomes, config.k),
            "categories": {c: _scores(v, config.k) for c, v in sorted(categories.items())},
            "latency_ms": _latency(outcomes),
        }
        if kind == "locomo":
            answerable = [o for o in outcomes if o.category != "adversarial"]
            if answerable:
                entry["overall_1_4"] = _scores(answerable, config.k)
        systems[name] = entry
    report: dict[str, Any] = {
        "benchmark": kind, "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "embedder": run.embedder, "units": run.units,
        "questions": len({id(o) for o in run.outcomes if o.system == "bm25"}),
        "ingest": {"seconds": round(run.ingest_seconds, 2),
                   "units_per_s": round(run.units / run.ingest_seconds, 1) if run.ingest_seconds else None},
        "k": list(config.k), "systems": systems,
    }
    if kind == "locomo":
        report["reference"] = {"dragon (LoCoMo paper, Table 3)": DRAGON}
    if run.answers:
        report["answers"] = {name: round(100 * float(np.mean([a[name] for a in run.answers])), 1)
                             for name in ("em", "f1", "judge") if name in run.answers[0]}
    return report
