"""``kenning ui``: the web explorer for one local user (no keys, loopback only)."""

from __future__ import annotations

import threading
import time
import webbrowser

import click

from ._common import open_kenning, run

__all__ = ["register"]


def register(group: click.Group) -> None:
    group.add_command(ui)


@click.command()
@click.option("--db", default=None, metavar="PATH|URL", help="Store to explore [default: kenning --db / KENNING_DB].")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port on 127.0.0.1 (0: any free port).")
@click.option("--no-browser", is_flag=True, help="Do not open a browser; just print the address.")
@click.pass_context
def ui(ctx: click.Context, db: str | None, port: int, no_browser: bool) -> None:
    """Explore the memory in a browser: search, time, entity timelines, the graph, memories.

    Serves the HTTP API and the explorer on 127.0.0.1 only, without keys, like
    `kenning serve --no-auth`.

    Example: kenning ui --db memory.db
    """
    from .._extras import require

    with run():
        uvicorn = require("uvicorn", extra="server", purpose="this command needs the 'server' extra")
        from ..server import create_app
    if db is not None:
        ctx.obj["db"] = db
    with open_kenning(ctx, create=True) as kn:  # the explorer of a new store writes to it
        with run():
            app = create_app(kn, auth=False)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        threading.Thread(target=_announce, args=(server, not no_browser), daemon=True).start()
        server.run()


def _announce(server: object, browse: bool) -> None:
    """Once the server listens, print its address and open the browser there."""
    deadline = time.monotonic() + 30
    while not getattr(server, "started", False):
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{port}/ui"
    click.echo(f"kenning explorer at {url} (Ctrl+C stops it)", err=True)
    if browse:
        webbrowser.open(url)
