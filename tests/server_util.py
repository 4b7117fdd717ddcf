"""A real uvicorn server on 127.0.0.1 in a background thread, for tests that talk HTTP."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from kenning import Kenning
from kenning.server import create_app
from kenning.access import auth_store
from kenning.store.auth import generate_key, hash_key, shown_prefix

__all__ = ["add_user", "running", "serve"]


def add_user(kn: Kenning, name: str, *, admin: bool = False) -> str:
    """Create a user (if new) and return a fresh API key of theirs."""
    store = auth_store(kn)
    user = store.find_user(name) or store.create_user(name, admin=admin)
    key = generate_key()
    store.create_key(user.id, hash_key(key), shown_prefix(key))
    return key


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve an ASGI app on a free loopback port; yield its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("server did not start")
        time.sleep(0.01)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextmanager
def running(path: str, *, auth: bool = True, max_body: int | None = None) -> Iterator[tuple[Kenning, str]]:
    """A ``Kenning`` on ``path`` served over HTTP; yields (kn, base URL)."""
    kn = Kenning(path)
    try:
        with serve(create_app(kn, auth=auth, max_body=max_body)) as base:
            httpx.get(f"{base}/v1/health", timeout=60).raise_for_status()  # a loaded machine is slow, not broken
            yield kn, base
    finally:
        kn.close()
