"""``kenning memories …``, ``kenning prune`` and ``kenning forget``: inspect and manage memories.

Each command is a thin shell over one ``Kenning`` call; ``--json`` prints the library's model.
"""

from __future__ import annotations

import json
from typing import Any, get_args

import click

from ..models import ForgetResult, Memory, MemoryKind, MemoryStatus, PruneResult, Retention
from ..requests import MAX_PAGE, ORDERS, ListRequest
from ._common import call, count, dataset_option, dump_json, fail, json_arg, open_kenning, scope_options, short_time

__all__ = ["register"]

_RETENTIONS = click.Choice(get_args(Retention))
KINDS = click.Choice(get_args(MemoryKind))
_STATUSES = click.Choice(get_args(MemoryStatus))
_ORDER = click.Choice(ORDERS)
_json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def _line(memory: Memory) -> str:
    flags = "".join(["P" if memory.pinned else "-", "S" if memory.superseded_by else "-"])
    text = (memory.topic or memory.content).replace("\n", " ")
    text = text if len(text) <= 60 else text[:57] + "…"
    return (f"{memory.id}  {flags}  {memory.status:<10} {memory.retention:<9} "
            f"{short_time(memory.created_at):<16}  {text}")


def _show_memory(memory: Memory) -> None:
    click.echo(f"id:          {memory.id}")
    click.echo(f"dataset:     {memory.dataset}   kind: {memory.kind}   status: {memory.status}")
    click.echo(f"retention:   {memory.retention}"
               + (f" until {short_time(memory.retention_until)}" if memory.retention_until else ""))
    pin = f"yes ({memory.pin_reason})" if memory.pinned and memory.pin_reason else "yes" if memory.pinned else "no"
    click.echo(f"pinned:      {pin}")
    click.echo(f"accessed:    {memory.access_count} times, last {short_time(memory.last_accessed_at)}")
    click.echo(f"created:     {short_time(memory.created_at)}   updated: {short_time(memory.updated_at)}")
    if memory.supersedes:
        click.echo(f"supersedes:  {', '.join(memory.supersedes)}")
    if memory.superseded_by:
        click.echo(f"superseded:  by {memory.superseded_by}")
    if memory.error:
        click.echo(f"error:       {memory.error}")
    click.echo("")
    click.echo(memory.content)


def _removed(result: ForgetResult | PruneResult, verb: str) -> None:
    click.echo(f"{verb} {count(len(result.memory_ids), 'memory')}, "
               f"{count(len(result.entity_ids), 'entity')}, {count(len(result.fact_ids), 'fact')}")
    for memory_id in result.memory_ids:
        click.echo(f"  {memory_id}")


@click.group("memories")
def memories() -> None:
    """Inspect and change stored memories."""


@memories.command("list")
@dataset_option
@click.option("--kind", type=KINDS, default=None)
@click.option("--status", type=_STATUSES, default=None)
@click.option("--retention", type=_RETENTIONS, default=None)
@click.option("--pinned/--unpinned", default=None, help="Only pinned (or unpinned) memories.")
@click.option("--order-by", type=_ORDER, default="created_at", show_default=True)
@click.option("--asc", is_flag=True, help="Oldest (smallest) first.")
@click.option("--limit", type=click.IntRange(1, MAX_PAGE), default=ListRequest.model_fields["limit"].default,
              show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
@scope_options("user", "agent", "session", "filters")
@_json_option
@click.pass_context
def list_(ctx: click.Context, dataset: str, kind: str | None, status: str | None, retention: str | None,
          pinned: bool | None, order_by: str, asc: bool, limit: int, offset: int, user: str | None,
          agent: str | None, session: str | None, filters: str | None, as_json: bool) -> None:
    """List memories, newest first.

    Example: kenning memories list --retention decision --pinned
    """
    with open_kenning(ctx) as kn:
        found = call(kn.list, dataset=dataset, kind=kind, status=status, retention=retention,
                     pinned=pinned, order_by=order_by, descending=not asc, limit=limit, offset=offset,
                     user=user, agent=agent, session=session, filters=json_arg(filters, "--filters"))
    if as_json:
        dump_json([m.model_dump(mode="json") for m in found])
        return
    for memory in found:
        click.echo(_line(memory))


@memories.command("show")
@click.argument("memory_id")
@_json_option
@click.pass_context
def show(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Show one memory with the entities and facts it states.

    Example: kenning memories show mem_0123…
    """
    with open_kenning(ctx) as kn:
        memory = call(kn.get, memory_id)
        prov = call(kn.provenance, memory_id)
    if as_json:
        dump_json({"memory": memory.model_dump(mode="json"),
                   "provenance": prov.model_dump(mode="json")})
        return
    _show_memory(memory)
    if prov.entities or prov.facts:
        click.echo("")
        click.echo("entities: " + ", ".join(e.name for e in prov.entities))
        for fact in prov.facts:
            click.echo(f"  {fact.source} -[{fact.relation}]-> {fact.target}  ({fact.id})")


@memories.command("update")
@click.argument("memory_id")
@click.option("--content", default=None, help="New text (plain memories).")
@click.option("--topic", default=None)
@click.option("--context", "context_", default=None)
@click.option("--decision", "decisions", multiple=True, help="Replaces the decisions (repeatable).")
@click.option("--rationale", "rationale", multiple=True, help="Replaces the rationale (repeatable).")
@click.option("--metadata", default=None, help="A JSON object; replaces the metadata.")
@click.option("--source", default=None)
@click.option("--retention", type=_RETENTIONS, default=None)
@click.option("--retention-until", default=None, help="A date (2030-01-01, 2030-06, 'next year'…), or 'none' to clear.")
@click.option("--kind", type=KINDS, default=None)
@click.option("--valid-at", default=None, help="The memory's reference time (same forms as recall --as-of).")
@_json_option
@click.pass_context
def update(ctx: click.Context, memory_id: str, as_json: bool, **options: Any) -> None:
    """Change only the given fields; new content is extracted again.

    Example: kenning memories update mem_0123… --retention permanent
    """
    changes = {name.rstrip("_"): value for name, value in options.items()
               if value is not None and value != ()}
    for name in ("decisions", "rationale"):
        if name in changes:
            changes[name] = list(changes[name])
    if "metadata" in changes:
        try:
            changes["metadata"] = json.loads(changes["metadata"])
        except json.JSONDecodeError as exc:
            fail(f"--metadata is not JSON: {exc.msg}")
    if changes.get("retention_until", "").lower() == "none":
        changes["retention_until"] = None
    if not changes:
        fail("nothing to update: give at least one option")
    with open_kenning(ctx) as kn:
        memory = call(kn.update, memory_id, **changes)
    if as_json:
        dump_json(memory)
    else:
        click.echo(f"updated {memory.id} ({memory.status})")


@memories.command("delete")
@click.argument("memory_id")
@_json_option
@click.pass_context
def delete(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Hard-delete one memory and whatever only it stated.

    Example: kenning memories delete mem_0123…
    """
    with open_kenning(ctx) as kn:
        result = call(kn.delete, memory_id)
    if as_json:
        dump_json(result)
    else:
        _removed(result, "deleted")


@memories.command("pin")
@click.argument("memory_id")
@click.option("--reason", default=None)
@_json_option
@click.pass_context
def pin(ctx: click.Context, memory_id: str, reason: str | None, as_json: bool) -> None:
    """Pin a memory: it never decays and is never pruned.

    Example: kenning memories pin mem_0123… --reason "legal hold"
    """
    with open_kenning(ctx) as kn:
        memory = call(kn.pin, memory_id, reason)
    if as_json:
        dump_json(memory)
    else:
        click.echo(f"pinned {memory.id}")


@memories.command("unpin")
@click.argument("memory_id")
@_json_option
@click.pass_context
def unpin(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Unpin a memory.

    Example: kenning memories unpin mem_0123…
    """
    with open_kenning(ctx) as kn:
        memory = call(kn.unpin, memory_id)
    if as_json:
        dump_json(memory)
    else:
        click.echo(f"unpinned {memory.id}")


@memories.command("chain")
@click.argument("memory_id")
@_json_option
@click.pass_context
def chain(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Show a memory's supersession chain, oldest first.

    Example: kenning memories chain mem_0123…
    """
    with open_kenning(ctx) as kn:
        found = call(kn.chain, memory_id)
    if as_json:
        dump_json([m.model_dump(mode="json") for m in found])
        return
    for memory in found:
        click.echo(_line(memory))


@click.command("prune")
@dataset_option
@click.option("--max-age-days", type=click.FloatRange(0), default=None, help="Created longer ago than this.")
@click.option("--min-score", type=click.FloatRange(0, 1), default=None, help="Decay score below this.")
@click.option("--superseded-older-than-days", type=click.FloatRange(0), default=None,
              help="Superseded longer ago than this.")
@click.option("--dry-run/--apply", default=True, show_default=True,
              help="Only report (default), or really remove.")
@_json_option
@click.pass_context
def prune(ctx: click.Context, dataset: str, max_age_days: float | None, min_score: float | None,
          superseded_older_than_days: float | None, dry_run: bool, as_json: bool) -> None:
    """Remove memories that decayed, aged out or were superseded (a dry run unless --apply).

    Pinned and permanent memories are never pruned; decisions only once superseded; a memory
    past its retention_until always is.

    Example: kenning prune --min-score 0.1 --superseded-older-than-days 30 --apply
    """
    with open_kenning(ctx) as kn:
        result = call(kn.prune, dataset=dataset, max_age_days=max_age_days, min_score=min_score,
                      superseded_older_than_days=superseded_older_than_days, dry_run=dry_run)
    if as_json:
        dump_json(result)
        return
    click.echo(f"evaluated {result.evaluated} memories")
    _removed(result, "would remove" if dry_run else "removed")
    if dry_run and result.pruned:
        click.echo("dry run: nothing changed; rerun with --apply to remove them")


@click.command("forget")
@click.argument("memory_id", required=False)
@click.option("--dataset", "-d", default=None, help="Forget a whole dataset.")
@click.option("--everything", is_flag=True, help="Forget every memory of every dataset.")
@click.option("--user", default=None, help="Forget this user's memories (in --dataset, default main).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@_json_option
@click.pass_context
def forget(ctx: click.Context, memory_id: str | None, dataset: str | None, everything: bool,
           user: str | None, yes: bool, as_json: bool) -> None:
    """Hard-delete one memory, a dataset, a user's memories or everything, with whatever only
    they stated.

    Example: kenning forget --dataset scratch --yes
    """
    if sum([memory_id is not None, dataset is not None and user is None, everything, user is not None]) != 1:
        fail("give exactly one of: a memory id, --dataset NAME, --everything, --user NAME (with its --dataset)")
    if not yes:
        what = ("EVERY memory" if everything else f"every memory of user {user!r}" if user is not None
                else f"every memory of dataset {dataset!r}" if dataset is not None else f"memory {memory_id}")
        click.confirm(f"Forget {what}? This cannot be undone", abort=True, err=True)
    with open_kenning(ctx) as kn:
        result = call(kn.forget, memory_id, dataset=dataset, everything=everything, user=user)
    if as_json:
        dump_json(result)
    else:
        _removed(result, "forgot")


def register(group: click.Group) -> None:
    group.add_command(memories)
    group.add_command(prune)
    group.add_command(forget)
