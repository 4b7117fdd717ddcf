"""Server commands: ``serve``, ``mcp``, and the ``keys`` and ``datasets`` groups that manage
who may use the server. The last two work on the store directly, as its administrator."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from ._common import call, dump_json, fail, open_kenning, run

__all__ = ["register"]

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
PERMISSIONS = ("read", "write", "delete", "share")


def register(group: click.Group) -> None:
    for command in (serve, mcp, keys, datasets):
        group.add_command(command)


def _need(extra: str, module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        fail(f"this command needs the {extra!r} extra: pip install 'kenning[{extra}]'")


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
    from ..server.access import auth_store

    with open_kenning(ctx, create=True) as kn:
        with run():
            app = create_app(kn, auth=not no_auth, max_body=max_body, bind=host,
                             allowed_hosts=allowed_hosts)
            if not no_auth and not auth_store(kn).list_keys():
                click.echo("no API keys yet: create one with `kenning keys create --admin`", err=True)
        uvicorn.run(app, host=host, port=port, log_level=log_level)


@click.command()
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind (http).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port (http).")
@click.option("--no-auth", is_flag=True, help="http: no keys (loopback only). stdio: ignore KENNING_API_KEY.")
@click.option("--allow-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="http: a host name clients use to reach the server (repeatable; '*': any).")
@click.pass_context
def mcp(ctx: click.Context, transport: str, host: str, port: int, no_auth: bool,
        allowed_hosts: tuple[str, ...]) -> None:
    """Serve the MCP tools over stdio (for one agent) or streamable HTTP at /mcp.

    Over stdio the key in KENNING_API_KEY (if set) decides which datasets the agent may use;
    without it the agent is the local user. Over http each request sends its own key.

    Example: kenning --db memory.db mcp
    """
    _need("mcp", "mcp")
    if transport == "http" and no_auth and host not in LOOPBACK:
        fail(f"--no-auth serves without keys, so it binds to 127.0.0.1 only, not {host!r}")
    from ..mcp.server import build_server, http_app

    key = None if no_auth else os.environ.get("KENNING_API_KEY")
    with open_kenning(ctx, create=True) as kn:
        if transport == "http":
            import uvicorn

            with run():
                app = http_app(kn, auth=not no_auth, bind=host, allowed_hosts=allowed_hosts)
            uvicorn.run(app, host=host, port=port)
            return
        with run():
            principal = _stdio_principal(kn, key)
            server = build_server(kn, auth=principal is not None, principal=principal)
        server.run("stdio")


def _stdio_principal(kn: Any, key: str | None) -> Any:
    if not key:
        return None
    from ..server.access import Access, auth_store

    return Access(auth_store(kn), kn.datasets).authenticate(key)


@contextmanager
def _auth(ctx: click.Context) -> Iterator[Any]:
    from ..server.access import auth_store

    with open_kenning(ctx, create=True) as kn, run():
        yield kn, auth_store(kn)


def _user(store: Any, name: str) -> Any:
    user = store.find_user(name)
    if user is None:
        fail(f"no user {name!r}")
    return user


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
    from .._identity import check_user_name
    from ..store.auth import generate_key, hash_key, shown_prefix

    user_name = "admin" if user_name is None else user_name
    with _auth(ctx) as (_, store):
        user = store.find_user(user_name)
        if user is None:
            check_user_name(user_name)
            user = store.create_user(user_name, admin=admin or user_name == "admin")
        elif admin and not user.admin:
            fail(f"user {user_name!r} exists and is not an admin")
        key = generate_key()
        record = store.create_key(user.id, hash_key(key), shown_prefix(key), name)
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
    with _auth(ctx) as (_, store):
        users = {u.id: u for u in store.list_users()}
        uid = _user(store, user_name).id if user_name else None
        rows = [
            {"id": k.id, "prefix": k.prefix + "…", "user": users[k.user_id].name,
             "admin": users[k.user_id].admin, "name": k.name, "created_at": k.created_at.isoformat(),
             "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None}
            for k in store.list_keys(uid)
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
    with _auth(ctx) as (_, store):
        record = call(store.revoke_key, key_id.rstrip("…"))
    click.echo(f"revoked {record.id}")


# -- datasets ------------------------------------------------------------------------------
@click.group()
def datasets() -> None:
    """Datasets, their owners and grants (as the store's administrator)."""


@contextmanager
def _service(ctx: click.Context) -> Iterator[Any]:
    from ..server.access import Access, Principal
    from ..server.service import Service

    with _auth(ctx) as (kn, store):
        yield Service(kn, Access(store, kn.datasets)), store, Principal(name="cli", admin=True)


def _owner(store: Any, owner: str | None) -> Any:
    """The named user as a principal, or None when no owner is named."""
    from ..server.access import Principal

    if not owner:
        return None
    user = _user(store, owner)
    return Principal(name=user.name, user_id=user.id, admin=user.admin)


@datasets.command("create")
@click.argument("name")
@click.option("--owner", default=None, help="Owning user [default: no owner, admins only].")
@click.pass_context
def datasets_create(ctx: click.Context, name: str, owner: str | None) -> None:
    """Create an empty dataset owned by a user.

    Example: kenning datasets create projects --owner alice
    """
    with _service(ctx) as (service, store, admin):
        info = call(service.create_dataset, _owner(store, owner) or admin, name)
    click.echo(f"created dataset {info.name!r}" + (f" owned by {owner!r}" if owner else ""))


@datasets.command("adopt")
@click.argument("name")
@click.option("--owner", default=None, help="Owning user [default: no owner, admins only].")
@click.pass_context
def datasets_adopt(ctx: click.Context, name: str, owner: str | None) -> None:
    """Give a dataset written before auth was on an owner record, so grants on it apply.

    Example: kenning datasets adopt notes --owner alice
    """
    with _service(ctx) as (service, store, admin):
        call(service.adopt, admin, name, _owner(store, owner))
    click.echo(f"adopted dataset {name!r}" + (f" owned by {owner!r}" if owner else " (no owner: admins only)"))


@datasets.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def datasets_list(ctx: click.Context, as_json: bool) -> None:
    """Every dataset with its owner and grants.

    Example: kenning datasets list --json
    """
    with _service(ctx) as (service, _, admin):
        rows = [
            {"name": d.name, "owner": d.owner,
             "grants": {g.user: g.permissions for g in service.grants(admin, d.name)}}
            for d in call(service.datasets, admin)
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
    with _service(ctx) as (service, _, admin):
        result = call(service.delete_dataset, admin, name)
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
    with _service(ctx) as (service, _, admin):
        grant = call(service.grant, admin, name, user, list(permissions))
    click.echo(f"{user} may {', '.join(grant.permissions)} on {name!r}")


@datasets.command("revoke")
@click.argument("name")
@click.argument("user")
@click.pass_context
def datasets_revoke(ctx: click.Context, name: str, user: str) -> None:
    """Remove USER's grant on dataset NAME.

    Example: kenning datasets revoke projects bob
    """
    with _service(ctx) as (service, _, admin):
        call(service.grant, admin, name, user, [])
    click.echo(f"revoked {user}'s access to {name!r}")
