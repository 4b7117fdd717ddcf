"""Smaller surface defects of issue 24: forwarded headers trusted only from configured proxies,
the Bearer scheme in any case, passwords in URLs never printed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from click.testing import CliRunner

from kenning.cli import cli

ROOT = str(Path(__file__).resolve().parent.parent)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def _kenning_serve(db: str, **env: str) -> Iterator[str]:
    """``kenning serve`` in its own process (its uvicorn, its options); yields the base URL."""
    port = _free_port()
    full = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]), **env}
    proc = subprocess.Popen([sys.executable, "-m", "kenning", "--db", db, "serve", "--port", str(port),
                             "--log-level", "warning"], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{base}/v1/health", timeout=60).raise_for_status()
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(10)


def _wrong_keys(base: str, count: int) -> list[int]:
    with httpx.Client(base_url=base) as client:
        return [client.get("/v1/me", headers={"Authorization": "Bearer kn_wrong",
                                              "X-Forwarded-For": f"203.0.113.{i % 250}"}).status_code
                for i in range(count)]


def test_a_rotating_forwarded_for_does_not_escape_the_limit_on_wrong_keys(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    CliRunner().invoke(cli, ["--db", db, "keys", "create", "--user", "alice"])
    with _kenning_serve(db, KENNING_AUTH_FAILURES_PER_MINUTE="10") as base:
        codes = _wrong_keys(base, 20)
    assert codes[:10] == [401] * 10 and set(codes[10:]) == {429}  # one client: the connection's address
    # a configured proxy is believed: each forwarded address is its own client
    with _kenning_serve(db, KENNING_AUTH_FAILURES_PER_MINUTE="10", KENNING_TRUSTED_PROXIES="127.0.0.1") as base:
        assert set(_wrong_keys(base, 20)) == {401}


def test_the_bearer_scheme_is_case_insensitive(tmp_path: Path) -> None:
    from kenning import Kenning
    from kenning.server import create_app

    from .server_util import add_user, serve

    with Kenning(str(tmp_path / "k.db")) as kn, serve(create_app(kn)) as base:
        key = add_user(kn, "alice")
        for scheme in ("Bearer ", "bearer ", "BEARER ", "bEaReR ", "bearer   ", "Bearer\t"):
            resp = httpx.get(f"{base}/v1/me", headers={"Authorization": f"{scheme}{key}"})
            assert resp.status_code == 200 and resp.json()["name"] == "alice", (scheme, resp.text)
        assert httpx.get(f"{base}/v1/me", headers={"Authorization": f"Basic {key}"}).status_code == 401


def test_a_password_in_a_url_is_never_printed(tmp_path: Path) -> None:
    for url in ("http://alice:s3cr3t-pw@127.0.0.1:9/", "postgresql://alice:s3cr3t-pw@127.0.0.1:9/kenning"):
        result = CliRunner().invoke(cli, ["--db", url, "stats"])
        assert result.exit_code != 0
        assert "s3cr3t-pw" not in result.output, result.output
        assert "alice:***@127.0.0.1" in result.output, result.output
