"""Core commands: remember, add, cognify, recall, timeline, stats, demo."""

from __future__ import annotations

import datetime as dt
import functools
import os
import sys
import tempfile
from pathlib import Path
from collections.abc import Callable
from typing import Any, TypeVar, get_args

import click

from ..models import Hit, Memory, Origin, RecallResult, RememberResult
from ..requests import (
    MAX_NEIGHBORS, MAX_PAGE, MAX_TOKENS, MIN_TOKENS, SEARCH_TYPES, ContextRequest, RecallRequest, RememberRequest,
    SessionsRequest,
)
from .memories import KINDS
from ._common import (
    call, check_path, count, dataset_option, dump_json, fail, json_arg, open_kenning, read_json, scope_options,
    short_time,
)
from ._progress import progress

__all__ = ["register"]

F = TypeVar("F", bound=Callable[..., Any])
_RECALL, _CONTEXT, _SESSIONS = RecallRequest.model_fields, ContextRequest.model_fields, SessionsRequest.model_fields

def _read_inputs(texts: tuple[str, ...], files: tuple[str, ...], messages: str | None = None,
                 facts: str | None = None) -> list[Any]:
    if facts is not None:
        if texts or files or messages:
            fail("give --facts alone: known facts are remembered as their records, not beside other inputs")
        records = read_json(facts)
        if isinstance(records, dict):
            records = [records]
        if not isinstance(records, list) or not records:
            fail(f"{facts} must hold a JSON list of facts ({{\"source\": …, \"relation\": …, \"target\": …}})")
        return records
    if messages is not None:
        if texts or files:
            fail("give --messages alone: a chat is remembered as its messages, not beside other texts")
        chat = read_json(messages)
        if not isinstance(chat, list):
            fail(f"{messages} must hold a JSON list of messages ({{\"role\": …, \"content\": …}})")
        return chat
    items: list[str] = []
    for text in texts:
        items.append(sys.stdin.read() if text == "-" else text)
    for name in files:
        try:
            items.append(Path(name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"cannot read {name}: {exc}")
    if not items:
        fail("nothing to remember: give TEXT arguments, '-' for standard input, or --file")
    return items


def _remember_options(fn: F, files_help: str = "Read a memory from a file (repeatable).",
                      folders: bool = False) -> F:
    for option in reversed([
        click.argument("texts", nargs=-1),
        click.option("--file", "-f", "files", multiple=True, type=click.Path(dir_okay=folders), help=files_help),
        dataset_option,
        click.option("--kind", type=KINDS, default=RememberRequest.model_fields["kind"].default, show_default=True),
        click.option("--source", default=None, help="Where the text came from."),
        click.option("--valid-at", default=None,
                     help="Reference time of the input (default: now): 2024-06-01, 2024-06, 'June 2024', 'last year'…"),
        click.option("--messages", default=None, metavar="CHAT.json",
                     help="A JSON list of chat messages ({role, content, name?, created_at?}); '-' reads stdin."),
        click.option("--facts", default=None, metavar="FACTS.json",
                     help="A JSON list of known facts ({source, relation, target, valid_at?, invalid_at?, "
                          "description?}) stored without extraction; '-' reads stdin."),
        click.option("--user", default=None, help="The user they belong to (speaker of role-user messages)."),
        click.option("--agent", default=None, help="The agent they belong to (speaker of role-assistant messages)."),
        click.option("--session", default=None, help="The conversation the messages continue."),
        click.option("--origin", type=click.Choice(get_args(Origin)), default=None,
                     help="Who said it (docs/security.md); messages and files: only lowers it."),
        click.option("--json", "as_json", is_flag=True, help="Print JSON."),
    ]):
        fn = option(fn)
    return fn


def register(group: click.Group) -> None:
    for command in (remember, add, cognify, recall, context, sessions, timeline, stats, improve, feedback, reembed,
                    demo):
        group.add_command(command)


@click.command()
@functools.partial(_remember_options, folders=True, files_help=(
    "A file or folder (recursive) to remember, one memory per file: text in any encoding, Markdown, "
    "HTML, PDF, DOCX, PPTX, XLSX/CSV, JSON (repeatable; docs/files.md)."))
@click.option("--force", is_flag=True, help="Reprocess content seen before.")
@click.option("--glob", "include", multiple=True, help="Files: remember only the files this glob matches (repeatable).")
@click.option("--exclude", multiple=True, help="Files: skip what this .gitignore-style pattern matches (repeatable).")
@click.option("--sync", is_flag=True, help="Files: forget the memories of files deleted from the folder.")
@click.pass_context
def remember(ctx: click.Context, texts: tuple[str, ...], files: tuple[str, ...], dataset: str, kind: str,
             source: str | None, valid_at: str | None, messages: str | None, facts: str | None, user: str | None,
             agent: str | None, session: str | None, origin: str | None, as_json: bool, force: bool,
             include: tuple[str, ...], exclude: tuple[str, ...], sync: bool) -> None:
    """Store and process memories now: texts, files and folders with --file, a chat with
    --messages chat.json --user alice, or known facts with --facts facts.json.

    Example: kenning remember "Alice works at Acme." "Bob lives in Paris."

    Example: echo '[{"source": "Alice", "relation": "works_at", "target": "Acme"}]' | kenning remember --facts -

    Example: kenning remember -f reports/ --glob '*.pdf' --sync
    """
    if files:
        if texts or messages or facts:
            fail("give TEXT arguments, --file, --messages or --facts: one of them")
        _remember_files(ctx, [Path(f) for f in files], as_json, dataset=dataset, kind=kind, source=source,
                        valid_at=valid_at, force=force, include=list(include) or None,
                        exclude=list(exclude) or None, sync=sync, user=user, agent=agent, session=session,
                        origin=origin)
        return
    if include or exclude or sync:
        fail("--glob, --exclude and --sync apply to --file")
    items = _read_inputs(texts, (), messages, facts)
    fields = {"dataset": dataset, "kind": kind, "source": source, "valid_at": valid_at, "force": force,
              "user": user, "agent": agent, "session": session, "origin": origin}
    with open_kenning(ctx, create=True) as kn:
        if len(items) > 1 and not as_json:
            with progress("remembering", "memories", total=len(items)) as advance:
                result = call(kn.remember, items, progress=advance, **fields)
        else:
            result = call(kn.remember, items if len(items) > 1 or messages or facts else items[0], **fields)
    if as_json:
        dump_json(result)
        return
    click.echo(_remembered(result))
    _no_facts(result.no_facts, kn.settings.llm is None)
    for error in result.errors:
        click.echo(f"failed: {error}", err=True)
    if result.errors:
        sys.exit(1)


def _remember_files(ctx: click.Context, paths: list[Path], as_json: bool, **arguments: object) -> None:
    """Files and folders: a progress bar over the files, the summary, one line per failed file."""
    with open_kenning(ctx, create=True) as kn, progress("remembering", "files", quiet=as_json) as advance:
        result = call(kn.remember, paths, progress=advance, **arguments)
    if as_json:
        dump_json(result)
    else:
        assert result.files is not None
        click.echo(f"files: {result.files}")
        if result.memory_ids:
            click.echo(_remembered(result))
        _no_facts(result.no_facts, kn.settings.llm is None)
        for failure in result.files.failed:
            click.echo(f"failed: {failure.error}", err=True)
    if result.files is not None and result.files.failed:
        sys.exit(1)


def _no_facts(memory_ids: list[str], offline: bool) -> None:
    hint = ("; the offline extractor reads only the sentence patterns listed in docs/llm.md: "
            "set KENNING_LLM to extract with a model") if offline else ""
    for memory_id in memory_ids:
        click.echo(f"note: no fact extracted from {memory_id} (kept and searchable as text{hint})", err=True)


def _remembered(result: RememberResult) -> str:
    known = len(result.skipped)
    new = len(result.memory_ids) - known
    if new == 0:
        return f"nothing new: {count(known, 'memory')} already known"
    line = f"remembered {count(new, 'memory')}" + (f" ({known} already known)" if known else "")
    return (f"{line}: {count(result.entities_created, 'entity')} and {count(result.facts_created, 'fact')} "
            f"created, {count(len(result.facts_invalidated), 'fact')} closed")


@click.command()
@_remember_options
@click.pass_context
def add(ctx: click.Context, texts: tuple[str, ...], files: tuple[str, ...], dataset: str, kind: str,
        source: str | None, valid_at: str | None, messages: str | None, facts: str | None, user: str | None,
        agent: str | None, session: str | None, origin: str | None, as_json: bool) -> None:
    """Store memories as pending, to be processed by `kenning cognify`.

    Example: kenning add -f notes.md && kenning cognify
    """
    items = _read_inputs(texts, files, messages, facts)
    with open_kenning(ctx, create=True) as kn:
        ids = call(kn.add, items, dataset=dataset, kind=kind, source=source, valid_at=valid_at,
                   user=user, agent=agent, session=session, origin=origin)
    if as_json:
        dump_json({"memory_ids": ids})
    else:
        click.echo(f"added {len(ids)} pending: {' '.join(ids)}")


@click.command()
@click.option("--dataset", "-d", default=None, help="Only this dataset (default: all).")
@click.option("--force", is_flag=True, help="Reprocess everything, processed or not.")
@click.option("--retry-failed", is_flag=True, help="Also retry memories that failed.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def cognify(ctx: click.Context, dataset: str | None, force: bool, retry_failed: bool, as_json: bool) -> None:
    """Process pending memories.

    Example: kenning cognify --retry-failed
    """
    with open_kenning(ctx) as kn, progress("cognifying", "memories", quiet=as_json) as advance:
        result = call(kn.cognify, dataset=dataset, force=force, retry_failed=retry_failed,
                      progress=advance)
    if as_json:
        dump_json(result)
        return
    click.echo(f"processed {len(result.processed)}, failed {len(result.failed)}: "
               f"{count(result.entities_created, 'entity')} and {count(result.facts_created, 'fact')} created")
    _no_facts(result.no_facts, kn.settings.llm is None)
    for memory_id, reason in result.failed.items():
        click.echo(f"failed: {memory_id}: {reason}", err=True)
    if result.failed:
        sys.exit(1)


def _state(hit: Hit, at: dt.datetime) -> str:
    """How a fact stands at the asked instant: current, not yet true, or history."""
    if hit.current:
        return ""
    return " [not yet true]" if hit.valid_at is not None and hit.valid_at > at else " [history]"


def print_hit(hit: Hit, rank: int, memories: dict[str, Memory], at: dt.datetime) -> None:
    when = ""
    if hit.kind == "fact":
        state = _state(hit, at)
        when = f"  ({short_time(hit.valid_at)} → {short_time(hit.invalid_at)}){state}"
    click.echo(f"{rank:>2}. [{hit.kind}] {hit.text}{when}")
    sources = []
    for i, memory_id in enumerate(hit.memory_ids[:3]):
        memory = memories.get(memory_id)
        label = f"{memory.source}" if memory is not None and memory.source else ""
        if i == 0 and hit.location is not None and str(hit.location):  # where in the file: p. 2 › Results
            label = f"{label} {hit.location}".strip()
        sources.append(f"{memory_id}{' ' + label if label else ''}")
    more = f" +{len(hit.memory_ids) - 3}" if len(hit.memory_ids) > 3 else ""
    click.echo(f"    score {hit.score:.4f} via {'+'.join(hit.lanes)}; from {', '.join(sources)}{more}")
    for neighbor in hit.neighbors:
        click.echo(f"      {'before' if neighbor.offset < 0 else 'after'} ({neighbor.offset:+d}): {neighbor.text}")


def print_result(result: RecallResult) -> None:
    memories = {m.id: m for m in result.memories}
    if not result.hits:
        click.echo("no relevant memories")
    at = result.as_of or result.known_at or dt.datetime.now(dt.timezone.utc)
    for rank, hit in enumerate(result.hits, 1):
        print_hit(hit, rank, memories, at)
    if result.answer is not None:
        click.echo(f"\nanswer: {result.answer}")
        if result.citations:
            click.echo(f"cites: {', '.join(result.citations)}")


@click.command()
@click.argument("query")
@dataset_option
@click.option("--top-k", "-k", default=_RECALL["top_k"].default, show_default=True, type=int)
@click.option("--type", "search_type", default=_RECALL["search_type"].default, show_default=True,
              type=click.Choice(SEARCH_TYPES))
@click.option("--depth", default=_RECALL["depth"].default, show_default=True, type=int, help="Graph expansion hops.")
@click.option("--as-of", default=None, help="Answer about this valid time: 2023-06-01, 2023-06, 'June 2023', 'last year'…")
@click.option("--known-at", default=None, help="Answer with what was believed at this time (same forms as --as-of).")
@click.option("--answer", is_flag=True, help="Ask the configured model for an answer (one call).")
@click.option("--explain", is_flag=True, help="Show which lanes ranked each hit where.")
@click.option("--neighbors", default=_RECALL["neighbors"].default, show_default=True,
              type=click.IntRange(0, MAX_NEIGHBORS),
              help="Show this many turns before and after each hit (same episode).")
@scope_options("user", "agent", "session", "filters")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def recall(ctx: click.Context, query: str, dataset: str, top_k: int, search_type: str, depth: int,
           as_of: str | None, known_at: str | None, answer: bool, explain: bool, neighbors: int, user: str | None,
           agent: str | None, session: str | None, filters: str | None, as_json: bool) -> None:
    """Search memory: full-text, vector and graph lanes, fused.

    Example: kenning recall "Where does Alice work?" --as-of 2023-06-01
    """
    with open_kenning(ctx) as kn:
        result = call(kn.recall, query, dataset=dataset, search_type=search_type, top_k=top_k,
                      depth=depth, as_of=as_of, known_at=known_at, answer=answer, explain=explain,
                      neighbors=neighbors, user=user, agent=agent, session=session,
                      filters=json_arg(filters, "--filters"))
    if as_json:
        dump_json(result)
        return
    print_result(result)
    for message in result.messages:
        click.echo(f"  [{short_time(message.valid_at)}] {message.speaker or message.role}: {message.content}")
    if explain:
        for hit in result.hits:
            click.echo(f"  {hit.id}: {hit.explanation}")


@click.command()
@click.argument("query", required=False)
@dataset_option
@scope_options("user", "agent", "session")
@click.option("--max-tokens", default=_CONTEXT["max_tokens"].default, show_default=True,
              type=click.IntRange(MIN_TOKENS, MAX_TOKENS))
@click.option("--exclude-flagged/--include-flagged", default=True, show_default=True,
              help="Leave out instruction-shaped memories (docs/security.md).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def context(ctx: click.Context, query: str | None, dataset: str, user: str | None, agent: str | None,
            session: str | None, max_tokens: int, exclude_flagged: bool, as_json: bool) -> None:
    """Print the context block for an agent's prompt: current facts, entities, the session's
    latest messages and (with QUERY) what recall finds.

    Example: kenning context "what does she eat?" --user alice --session s1
    """
    with open_kenning(ctx) as kn:
        result = call(kn.context, query, dataset=dataset, user=user, agent=agent, session=session,
                      max_tokens=max_tokens, exclude_flagged=exclude_flagged)
    if as_json:
        dump_json(result)
    else:
        click.echo(result.text or "(nothing known yet)")


@click.command()
@dataset_option
@scope_options("user", "agent")
@click.option("--limit", type=click.IntRange(1, MAX_PAGE), default=_SESSIONS["limit"].default, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def sessions(ctx: click.Context, dataset: str, user: str | None, agent: str | None, limit: int, offset: int,
             as_json: bool) -> None:
    """List conversations, latest first.

    Example: kenning sessions --user alice
    """
    with open_kenning(ctx) as kn:
        found = call(kn.sessions, dataset=dataset, user=user, agent=agent, limit=limit, offset=offset)
    if as_json:
        dump_json([s.model_dump(mode="json") for s in found])
        return
    for session in found:
        who = " ".join(f"{k}={v}" for k, v in (("user", session.user), ("agent", session.agent)) if v)
        click.echo(f"{session.id}  {count(session.messages, 'message')}  {short_time(session.first_at)} → "
                   f"{short_time(session.last_at)}  {who}".rstrip())


@click.command()
@click.argument("entity")
@dataset_option
@click.option("--relation", default=None, help="Only facts with this relation.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def timeline(ctx: click.Context, entity: str, dataset: str, relation: str | None, as_json: bool) -> None:
    """An entity's facts in time order, with what superseded what.

    Example: kenning timeline "Alice Novak"
    """
    with open_kenning(ctx) as kn:
        result = call(kn.timeline, entity, dataset=dataset, relation=relation)
    if as_json:
        dump_json(result)
        return
    click.echo(f"{result.entity.name} ({result.entity.type})")
    for fact in result.facts:
        state = "closed" if (fact.invalid_at or fact.expired_at) else "current"
        line = f"  {short_time(fact.valid_at)} → {short_time(fact.invalid_at)}  {fact.description}  [{state}]"
        if fact.superseded_by:
            line += f" superseded by {fact.superseded_by}"
        click.echo(line)


@click.command()
@click.option("--dataset", "-d", default=None, help="Only this dataset (default: all).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def stats(ctx: click.Context, dataset: str | None, as_json: bool) -> None:
    """Counts of memories, chunks, entities and facts.

    Example: kenning stats --dataset main
    """
    with open_kenning(ctx) as kn:
        result = call(kn.stats, dataset)
    if as_json:
        dump_json(result)
        return
    rows = [
        ("datasets", ", ".join(result.datasets) or "-"), ("memories", result.memories),
        ("pending", result.pending), ("failed", result.failed), ("chunks", result.chunks),
        ("entities", result.entities), ("facts", f"{result.facts} ({result.facts_live} live, "
                                                 f"{result.facts_closed} closed)"),
        ("last processed", short_time(result.last_processed_at)),
        ("model calls", f"{result.usage.chat_calls} chat, {result.usage.embedding_calls} embedding"),
        ("embedder", result.embedder or "-"),
    ]
    for name, value in rows:
        click.echo(f"{name:>15}: {value}")


@click.command()
@dataset_option
@click.option("--session", default=None, help="Process only this session's pending messages.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def improve(ctx: click.Context, dataset: str, session: str | None, as_json: bool) -> None:
    """Process pending memories, merge duplicate entities, fill missing embeddings.

    Example: kenning improve --dataset main
    """
    with open_kenning(ctx) as kn:
        result = call(kn.improve, dataset=dataset, session=session)
    if as_json:
        dump_json(result)
        return
    click.echo(f"processed {len(result.processed)}, merged {count(len(result.entities_merged), 'entity')} "
               f"and {count(len(result.facts_merged), 'fact')}, filled {count(result.embeddings_filled, 'embedding')}")


@click.command()
@click.argument("fact_id")
@click.option("--helpful/--unhelpful", default=True, help="Whether the fact helped.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def feedback(ctx: click.Context, fact_id: str, helpful: bool, as_json: bool) -> None:
    """Mark a recalled fact helpful (it ranks higher from now on) or unhelpful.

    Example: kenning feedback fct_0123abcd --unhelpful
    """
    with open_kenning(ctx) as kn:
        weight = call(kn.feedback, fact_id, helpful=helpful)
    if as_json:
        dump_json({"fact_id": fact_id, "weight": weight})
    else:
        click.echo(f"{fact_id}: weight {weight:.3f}")


@click.command()
@click.option("--embedder", default=None, help="The new embedder (default: KENNING_EMBEDDER).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def reembed(ctx: click.Context, embedder: str | None, as_json: bool) -> None:
    """Rewrite every stored vector with a new embedder and record it in the store.

    Example: KENNING_EMBEDDER=local:all-MiniLM-L6-v2 kenning --db memory.db reembed
    """
    from ..client import Kenning

    settings = {"embedder": embedder} if embedder else {}
    check_path(ctx.obj.get("db"), create=False)
    with progress("re-embedding", "texts", quiet=as_json) as advance:
        counts = call(Kenning.reembed, ctx.obj.get("db"), progress=advance, **settings)
    if as_json:
        dump_json(counts)
    else:
        click.echo("re-embedded " + ", ".join(count(n, kind) for kind, n in counts.items()))


@click.command()
@click.option("--keep", is_flag=True, help="Keep the demo store and print its path.")
@click.pass_context
def demo(ctx: click.Context, keep: bool) -> None:
    """Remember a bundled sample corpus and answer a few questions, offline.

    Uses --db when given, else a fresh temporary store.

    Example: kenning demo
    """
    from ..demo import CORPUS, QUESTIONS

    tmp = None
    if ctx.obj.get("db") is None:
        tmp = tempfile.mkdtemp(prefix="kenning-demo-")
        ctx.obj["db"] = os.path.join(tmp, "demo.db")
    with open_kenning(ctx, create=True) as kn:
        click.echo(f"store: {ctx.obj['db']}")
        for date, source, text in CORPUS:
            result = call(kn.remember, text, dataset="demo", source=source, valid_at=date)
            closed = f", closed {len(result.facts_invalidated)}" if result.facts_invalidated else ""
            click.echo(f"  remembered [{date}] {text}  → {count(result.facts_created, 'fact')}{closed}")
        st = kn.stats("demo")
        click.echo(f"\n{st.memories} memories, {st.entities} entities, {st.facts} facts "
                   f"({st.facts_live} current, {st.facts_closed} closed)\n")
        for question, options in QUESTIONS:
            suffix = f"  (as of {options['as_of']})" if "as_of" in options else ""
            click.echo(f"? {question}{suffix}")
            print_result(call(kn.recall, question, dataset="demo", top_k=3, **options))
            click.echo("")
        click.echo("timeline of Alice Novak:")
        for fact in call(kn.timeline, "Alice Novak", dataset="demo").facts:
            click.echo(f"  {short_time(fact.valid_at)} → {short_time(fact.invalid_at)}  {fact.description}")
    if tmp is not None and not keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
