"""``kenning eval``: retrieval quality on public data sets (LoCoMo, HotpotQA, MuSiQue, LongMemEval).

Each command reads the data from the path given, remembers it into a fresh in-memory store,
asks every question and prints evidence recall@k per category and overall, MRR and recall
latency, beside a BM25 baseline computed in the same run (see ``kenning.eval``).
"""

from __future__ import annotations

from typing import Any

import click

from ._common import dump_json, fail, run
from ._progress import progress

__all__ = ["register"]


def register(group: click.Group) -> None:
    group.add_command(eval_group)


@click.group("eval")
def eval_group() -> None:
    """Measure retrieval quality on public evaluation sets.

    Example: kenning eval locomo path/to/locomo10.json --limit 1
    """


def _k_values(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(part) for part in value.split(",") if part.strip()}))
    except ValueError:
        raise click.BadParameter("use a comma list of positive integers, e.g. 5,10,25") from None
    if not ks or ks[0] < 1:
        raise click.BadParameter("use a comma list of positive integers, e.g. 5,10,25")
    return ks


def _options(fn):
    for option in reversed([
        click.argument("path", type=click.Path(exists=True)),
        click.option("--k", "k", default="5,10,25", show_default=True, callback=_k_values,
                     help="Cut-offs for recall@k (comma list)."),
        click.option("--limit", type=click.IntRange(min=1), default=None,
                     help="Only the first N conversations (LoCoMo) or questions (HotpotQA, MuSiQue, LongMemEval)."),
        click.option("--search-type", "search_types", multiple=True, default=("hybrid", "chunks"),
                     show_default=True, help="Search types to score (repeatable)."),
        click.option("--embedder", default=None,
                     help="Embedder for the store, e.g. local:all-MiniLM-L6-v2 [default: KENNING_EMBEDDER]."),
        click.option("--answer", is_flag=True, help="Also answer each question and score EM / F1 (needs KENNING_LLM)."),
        click.option("--judge", is_flag=True, help="With --answer: have the model judge each answer."),
        click.option("--split", type=click.Choice(["all", "dev", "test"]), default="all", show_default=True,
                     help="dev: LoCoMo conversations 1-5 / the first half of the questions; test: the rest."),
        click.option("--lanes", is_flag=True, help="Also score each lane of hybrid alone, and hybrid without each."),
        click.option("--json", "as_json", is_flag=True, help="Print the report as JSON."),
    ]):
        fn = option(fn)
    return fn


def _run(kind: str, path: str, k, limit, search_types, embedder, answer, judge, split, lanes, as_json) -> None:
    from ..eval.datasets import DataError, load
    from ..eval.report import render
    from ..eval.run import EvalConfig, evaluate, summarize

    try:
        collections = load(kind, path, split)
    except DataError as exc:
        fail(str(exc))
    collections = _limit(kind, collections, limit)
    config = EvalConfig(k=k, search_types=tuple(search_types), embedder=embedder, answer=answer, judge=judge,
                        lanes=lanes)
    questions = sum(len(c.questions) for c in collections)
    with run(), progress("evaluating", "questions", total=questions, quiet=as_json) as advance:
        try:
            result = evaluate(collections, config, progress=advance)
        except ValueError as exc:
            fail(str(exc))
    report = summarize(result, config, kind=kind)
    report["path"] = str(path)
    report["split"] = split
    if as_json:
        dump_json(report)
    else:
        click.echo(render(report))


def _limit(kind: str, collections: list, limit: int | None) -> list:
    if limit is None:
        return collections
    if kind in ("locomo", "longmemeval"):  # a LongMemEval question is its own collection
        return collections[:limit]
    for c in collections:  # one corpus: keep all passages, ask fewer questions
        c.questions = c.questions[:limit]
    return collections


@eval_group.command("locomo")
@_options
def locomo(**options: Any) -> None:
    """LoCoMo: evidence recall over dialog turns, per category, beside BM25 and DRAGON.

    Each turn is one memory ("Speaker: text", dated by its session, source = its dia_id).

    Example: kenning eval locomo path/to/locomo10.json --limit 2
    """
    _run("locomo", **options)


@eval_group.command("hotpotqa")
@_options
def hotpotqa(**options: Any) -> None:
    """HotpotQA: recall of the supporting passages, per question type, beside BM25.

    PATH is the question file (its *_corpus.json beside it is the passage corpus) or their folder.

    Example: kenning eval hotpotqa path/to/hotpotqa/ --limit 20
    """
    _run("hotpotqa", **options)


@eval_group.command("musique")
@_options
def musique(**options: Any) -> None:
    """MuSiQue: recall of the supporting paragraphs, per hop count, beside BM25.

    PATH is the question file (its *_corpus.json beside it is the paragraph corpus) or their folder.

    Example: kenning eval musique path/to/musique/ --limit 20
    """
    _run("musique", **options)


@eval_group.command("longmemeval")
@_options
def longmemeval(**options: Any) -> None:
    """LongMemEval: evidence recall over user-assistant turns, per question type, beside BM25.

    PATH is a folder of per-question JSON files (or a file of a list of them). Each question gets
    a fresh store: every haystack session remembered as one conversation (a message per turn,
    dated by its session), the engine clock at the question date. Prints turn recall@k and NDCG,
    and session recall_any / recall_all@k. --split does not cut: a folder is one split.

    Example: kenning eval longmemeval path/to/longmemeval/dev --limit 6 --k 5,10
    """
    _run("longmemeval", **options)
