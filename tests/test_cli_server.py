"""The server commands: keys and datasets through the real CLI, and ``kenning serve`` as a
subprocess answering HTTP with the key the CLI printed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")

from kenning.cli import cli

ROOT = str(Path(__file__).resolve().parents[1])


def _run(db: str, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--db", db, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_keys_create_list_revoke(tmp_path):
    db = str(tmp_path / "k.db")
    key = _run(db, "keys", "create", "--admin").strip()
    assert key.startswith("kn_") and len(key) > 40
    listing = _run(db, "keys", "list")
    assert key[:11] in listing and key not in listing and "admin" in listing
    key_id = listing.split()[0]
    _run(db, "keys", "revoke", key_id)
    assert "revoked" in _run(db, "keys", "list")
    bad = CliRunner().invoke(cli, ["--db", db, "keys", "revoke", "key_nope"])
    assert bad.exit_code == 1 and "no API key" in bad.output


def test_datasets_commands(tmp_path):
    db = str(tmp_path / "d.db")
    _run(db, "keys", "create", "--user", "alice")
    _run(db, "keys", "create", "--user", "bob")
    _run(db, "datasets", "create", "proj", "--owner", "alice")
    _run(db, "datasets", "grant", "proj", "bob", "write")
    listing = _run(db, "datasets", "list")
    assert "proj" in listing and "owner=alice" in listing and "bob:read+write" in listing
    _run(db, "datasets", "revoke", "proj", "bob")
    assert "bob:" not in _run(db, "datasets", "list")
    _run(db, "datasets", "delete", "proj", "--yes")
    assert "proj" not in _run(db, "datasets", "list")


def test_no_auth_refuses_public_interfaces(tmp_path):
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "x.db"), "serve", "--no-auth", "--host", "0.0.0.0"])
    assert result.exit_code == 1 and "127.0.0.1" in result.output


def test_serve_answers_with_a_cli_key(tmp_path):
    db = str(tmp_path / "s.db")
    key = _run(db, "keys", "create", "--user", "alice").strip()
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kenning", "--db", db, "serve", "--port", str(port), "--log-level", "warning"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90  # a loaded machine imports slowly; never a hang
        while True:
            try:
                httpx.get(f"{base}/v1/health", timeout=60).raise_for_status()
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()  # read stderr only once it is closed: a live server's never ends
                    pytest.fail(proc.communicate(timeout=10)[1].decode())
                time.sleep(0.1)
        auth = {"Authorization": f"Bearer {key}"}
        resp = httpx.post(f"{base}/v1/remember", json={"content": "Ada wrote notes.", "dataset": "a"}, headers=auth)
        assert resp.status_code == 200, resp.text
        assert httpx.get(f"{base}/v1/stats", headers=auth).json()["memories"] == 1
        assert httpx.get(f"{base}/v1/stats").status_code == 401
    finally:
        proc.terminate()
        proc.wait(10)
