"""Server commands: ``serve``, ``mcp``, and the ``keys`` and ``datasets`` groups that manage
who may use the server. The last two are shells over ``kenning.access.Accounts``, acting as an
admin (whoever holds the store administers it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from ._common import dump_json, fail, open_kenning, run

# kenning.access (and the facade, store and pipeline it imports) is imported by the commands
# that use it, not here: every ``kenning`` call, ``--help`` included, loads this module
if TYPE_CHECKING:
    from ..access import Accounts, Principal
    from ..client import Kenning

__all__ = ["register"]

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def register(group: click.Group) -> None:
    for command in (serve, mcp, keys, datasets):
        group.add_command(command)


def _need(extra: str, module: str) -> None:
    from .._extras import require

    with run():
        require(module, extra=extra, purpose=f"this command needs the {extra!r} extra")


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--no-auth", is_flag=True, help="Local single-user mode: no keys (loopback only).")
@click.option("--max-body", default=10 * 1024 * 1024, show_default=True, type=click.IntRange(1),
              help="Largest request body in bytes (larger: 413).")
@click.option("--allow-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="A host name clients use to reach the server (repeatable; '*': any). "
              "Loopback names and the bound address are always allowed.")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, no_auth: bool, max_body: int,
          allowed_hosts: tuple[str, ...], log_level: str) -> None:
    """Serve the HTTP API (/v1, OpenAPI at /docs).

    Requests whose Host header is not a loopback name, the bound address or an --allow-host
    name are refused (DNS rebinding), and so are cross-origin writes from browsers.

    Example: kenning keys create --admin && kenning serve --host 0.0.0.0 --allow-host memory.internal
    """
    _need("server", "fastapi")
    if no_auth and host not in LOOPBACK:
        fail(f"--no-auth serves without keys, so it binds to 127.0.0.1 only, not {host!r}")
    import uvicorn

    from ..server import create_app

    with open_kenning(ctx, create=True) as kn:
        with run():
            app = create_app(kn, auth=not no_auth, max_body=max_body, bind=host,
                             allowed_hosts=allowed_hosts)
            if not no_auth and not _accounts(kn).keys():
                click.echo("no API keys yet: create one with `kenning keys create --admin`", err=True)
        from ..access.guard import forwarded_options

        uvicorn.run(app, host=host, port=port, log_level=log_level, **forwarded_options(kn.settings.trusted_proxies))


@click.command()
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind (http).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port (http).")
@click.option("--no-auth", is_flag=True, help="http: no keys (loopback only). stdio: ignore KENNING_API_KEY.")
@click.option("--allow-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="http: a host name clients use to reach the server (repeatable; '*': any).")
@click.option("--tools", "tool_profile", default="agent", show_default=True, metavar="PROFILE",
              help="Which tools: 'agent' (at most 8, for a conversation), 'all' (every verb), "
              "or verb names separated by commas.")
@click.pass_context
def mcp(ctx: click.Context, transport: str, host: str, port: int, no_auth: bool,
        allowed_hosts: tuple[str, ...], tool_profile: str) -> None:
    """Serve the MCP tools over stdio (for one agent) or streamable HTTP at /mcp.

    Over stdio the key in KENNING_API_KEY (if set) decides which datasets the agent may use,
    checked on every call; without it the agent is the local user. Over http each request sends
    its own key. docs/integrations.md shows the setup of Claude Code and Claude Desktop.

    Example: kenning --db memory.db mcp --tools all
    """
    _need("mcp", "mcp")
    from ..tools import select

    with run():
        select(tool_profile)  # an unknown profile fails before the store opens
    if transport == "http" and no_auth and host not in LOOPBACK:
        fail(f"--no-auth serves without keys, so it binds to 127.0.0.1 only, not {host!r}")
    from ..mcp.server import build_server, http_app

    key = None if no_auth else os.environ.get("KENNING_API_KEY")
    with open_kenning(ctx, create=True) as kn:
        if transport == "http":
            import uvicorn

            from ..access.guard import forwarded_options

            with run():
                app = http_app(kn, auth=not no_auth, bind=host, allowed_hosts=allowed_hosts, tools=tool_profile)
            uvicorn.run(app, host=host, port=port, **forwarded_options(kn.settings.trusted_proxies))
            return
        with run():  # the key is checked now (a wrong one fails here) and again on every call
            server = build_server(kn, auth=bool(key), key=key or None, tools=tool_profile)
        server.run("stdio")


def _accounts(kn: Kenning) -> Accounts:
    from ..access import Access, Accounts

    return Accounts(kn, Access.of(kn))


def _cli_admin() -> Principal:
    """The CLI administers the store it holds."""
    from ..access import Principal

    return Principal(name="cli", admin=True)


#: kenning.access.Permission's values, written out for the option (tests/test_imports.py checks)
PERMISSIONS = ("read", "write", "delete", "share")


@contextmanager
def _admin(ctx: click.Context) -> Iterator[Accounts]:
    with open_kenning(ctx, create=True) as kn, run():
        yield _accounts(kn)


# -- keys ----------------------------------------------------------------------------------
@click.group()
def keys() -> None:
    """API keys: create (shown once), list, revoke."""


@keys.command("create")
@click.option("--user", "user_name", default=None, help="The key's user (created if new) [default: admin].")
@click.option("--admin", is_flag=True, help="A new user is an admin (every dataset, every permission).")
@click.option("--name", default=None, help="A label for the key.")
@click.pass_context
def keys_create(ctx: click.Context, user_name: str | None, admin: bool, name: str | None) -> None:
    """Create an API key and print it; it is stored hashed and never shown again.

    Example: kenning keys create --admin
    """
    user_name = "admin" if user_name is None else user_name
    with _admin(ctx) as accounts:
        key, record, user = accounts.create_key(user_name, admin=admin, name=name)
    click.echo(key)
    click.echo(f"key {record.id} for {'admin ' if user.admin else ''}user {user.name!r}: "
               "store it now, it is not shown again", err=True)


@keys.command("list")
@click.option("--user", "user_name", default=None, help="Only this user's keys.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def keys_list(ctx: click.Context, user_name: str | None, as_json: bool) -> None:
    """List keys by id and prefix (never the key).

    Example: kenning keys list --user alice
    """
    with _admin(ctx) as accounts:
        users = {u.id: u for u in accounts.users()}
        rows = [
            {"id": k.id, "prefix": k.prefix + "…", "user": users[k.user_id].name,
             "admin": users[k.user_id].admin, "name": k.name, "created_at": k.created_at.isoformat(),
             "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None}
            for k in accounts.keys(user_name)
        ]
    if as_json:
        dump_json(rows)
        return
    for r in rows:
        state = "revoked" if r["revoked_at"] else "active"
        click.echo(f"{r['id']}  {r['prefix']:<14} {r['user']:<16} {state:<8} {r['name'] or ''}")


@keys.command("revoke")
@click.argument("key_id")
@click.pass_context
def keys_revoke(ctx: click.Context, key_id: str) -> None:
    """Revoke a key by id or shown prefix; requests with it get 401 from now on.

    Example: kenning keys revoke key_0123456789abcdef
    """
    with _admin(ctx) as accounts:
        record = accounts.revoke_key(key_id)
    click.echo(f"revoked {record.id}")


# -- datasets ------------------------------------------------------------------------------
@click.group()
def datasets() -> None:
    """Datasets, their owners and grants (as the store's administrator)."""


def _owner(accounts: Accounts, owner: str | None) -> Principal | None:
    """The named user as a principal, or None when no owner is named."""
    return accounts.user(owner) if owner else None


@datasets.command("create")
@click.argument("name")
@click.option("--owner", default=None, help="Owning user [default: no owner, admins only].")
@click.pass_context
def datasets_create(ctx: click.Context, name: str, owner: str | None) -> None:
    """Create an empty dataset owned by a user.

    Example: kenning datasets create projects --owner alice
    """
    with _admin(ctx) as accounts:
        info = accounts.create_dataset(_owner(accounts, owner) or _cli_admin(), name)
    click.echo(f"created dataset {info.name!r}" + (f" owned by {owner!r}" if owner else ""))


@datasets.command("adopt")
@click.argument("name")
@click.option("--owner", default=None, help="Owning user [default: no owner, admins only].")
@click.pass_context
def datasets_adopt(ctx: click.Context, name: str, owner: str | None) -> None:
    """Give a dataset written before auth was on an owner record, so grants on it apply.

    Example: kenning datasets adopt notes --owner alice
    """
    with _admin(ctx) as accounts:
        accounts.adopt(_cli_admin(), name, _owner(accounts, owner))
    click.echo(f"adopted dataset {name!r}" + (f" owned by {owner!r}" if owner else " (no owner: admins only)"))


@datasets.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def datasets_list(ctx: click.Context, as_json: bool) -> None:
    """Every dataset with its owner and grants.

    Example: kenning datasets list --json
    """
    with _admin(ctx) as accounts:
        rows: list[dict[str, Any]] = [
            {"name": d.name, "owner": d.owner,
             "grants": {g.user: g.permissions for g in accounts.grants(_cli_admin(), d.name)}}
            for d in accounts.datasets(_cli_admin())
        ]
    if as_json:
        dump_json(rows)
        return
    for r in rows:
        grants = ", ".join(f"{u}:{'+'.join(p)}" for u, p in r["grants"].items())
        click.echo(f"{r['name']:<24} owner={r['owner'] or '-':<16} {grants}")


@datasets.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask.")
@click.pass_context
def datasets_delete(ctx: click.Context, name: str, yes: bool) -> None:
    """Delete a dataset: its memories, graph, owner and grants.

    Example: kenning datasets delete scratch --yes
    """
    if not yes:
        click.confirm(f"delete dataset {name!r} and all its memories?", abort=True)
    with _admin(ctx) as accounts:
        result = accounts.delete_dataset(_cli_admin(), name)
    click.echo(f"deleted dataset {name!r}: {len(result.memory_ids)} memories")


@datasets.command("grant")
@click.argument("name")
@click.argument("user")
@click.argument("permissions", nargs=-1, required=True, type=click.Choice(PERMISSIONS))
@click.pass_context
def datasets_grant(ctx: click.Context, name: str, user: str, permissions: tuple[str, ...]) -> None:
    """Set USER's permissions on dataset NAME (read is always included).

    Example: kenning datasets grant projects bob read write
    """
    with _admin(ctx) as accounts:
        grant = accounts.grant(_cli_admin(), name, user, list(permissions))
    click.echo(f"{user} may {', '.join(grant.permissions)} on {name!r}")


@datasets.command("revoke")
@click.argument("name")
@click.argument("user")
@click.pass_context
def datasets_revoke(ctx: click.Context, name: str, user: str) -> None:
    """Remove USER's grant on dataset NAME.

    Example: kenning datasets revoke projects bob
    """
    with _admin(ctx) as accounts:
        accounts.grant(_cli_admin(), name, user, [])
    click.echo(f"revoked {user}'s access to {name!r}")
