"""What the explorer adds to the server, without a browser: ``GET /v1/graph``, the files under
``/ui``, and ``kenning ui`` as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")

from tests.server_util import add_user, running

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("explore") / "explore.db")
    with running(path) as (kn, base):
        keys = {name: add_user(kn, name) for name in ("alice", "bob")}
        alice = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys['alice']}"}, timeout=30)
        bob = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys['bob']}"}, timeout=30)
        for text, when in [("Alice works at Acme.", "2020-01-01"), ("Alice works at Globex.", "2023-06-01"),
                           ("Bob lives in Paris. Alice knows Bob.", "2021-01-01"),
                           ("Eve lives in Paris.", "2021-01-01")]:
            alice.post("/v1/remember", json={"content": text, "dataset": "g", "valid_at": when}).raise_for_status()
        yield alice, bob
        alice.close()
        bob.close()


def _names(graph: dict) -> list[str]:
    return sorted(n["name"] for n in graph["nodes"])


def test_graph_one_and_two_hops(server):
    alice, _ = server
    one = alice.get("/v1/graph", params={"entity": "Alice", "dataset": "g"}).json()
    assert one["center"]["name"] == "Alice"
    assert _names(one) == ["Acme", "Alice", "Bob", "Globex"]
    closed = [f for f in one["edges"] if f["invalid_at"]]
    assert [f["target"] for f in closed] == ["Acme"] and closed[0]["superseded_by"]
    assert one["truncated"] is False
    two = alice.get("/v1/graph", params={"entity": one["center"]["id"], "dataset": "g", "depth": 2}).json()
    assert _names(two) == ["Acme", "Alice", "Bob", "Globex", "Paris"]
    assert {n["name"]: n["hop"] for n in two["nodes"]}["Paris"] == 2
    assert "Eve" not in _names(two)  # three hops away: Alice - Bob - Paris - Eve
    paris = alice.get("/v1/graph", params={"entity": "Paris", "dataset": "g"}).json()
    assert _names(paris) == ["Bob", "Eve", "Paris"]


def test_graph_on_each_backend(store_url):
    with running(store_url, auth=False) as (_, base), httpx.Client(base_url=base, timeout=30) as c:
        for text in ("Alice works at Acme.", "Bob lives in Paris. Alice knows Bob."):
            c.post("/v1/remember", json={"content": text}).raise_for_status()
        graph = c.get("/v1/graph", params={"entity": "Alice", "depth": 2}).json()
        assert _names(graph) == ["Acme", "Alice", "Bob", "Paris"]
        assert {n["name"]: n["hop"] for n in graph["nodes"]} == {"Alice": 0, "Acme": 1, "Bob": 1, "Paris": 2}


def test_graph_is_capped(server):
    alice, _ = server
    capped = alice.get("/v1/graph", params={"entity": "Alice", "dataset": "g", "depth": 2, "limit": 2}).json()
    assert len(capped["edges"]) == 2 and capped["truncated"] is True


def test_graph_expands_at_most_50_neighbours(server):
    alice, _ = server
    names = [f"Person{chr(65 + i // 26)}{chr(97 + i % 26)}" for i in range(51)]
    alice.post("/v1/remember", json={"content": [f"Hubert knows {n}." for n in names], "dataset": "hub"}).raise_for_status()
    one = alice.get("/v1/graph", params={"entity": "Hubert", "dataset": "hub"}).json()
    assert len(one["edges"]) == 51 and one["truncated"] is False
    two = alice.get("/v1/graph", params={"entity": "Hubert", "dataset": "hub", "depth": 2}).json()
    assert len(two["edges"]) == 51 and two["truncated"] is True


@pytest.mark.parametrize("params", [{"entity": "Alice", "dataset": "g", "depth": 3},
                                    {"entity": "Alice", "dataset": "g", "limit": 0},
                                    {"dataset": "g"}])
def test_graph_refuses_bad_parameters(server, params):
    resp = server[0].get("/v1/graph", params=params)
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "validation_error"


def test_graph_of_another_users_dataset_is_not_found(server):
    alice, bob = server
    for who in (bob, httpx.Client(base_url=alice.base_url)):
        resp = who.get("/v1/graph", params={"entity": "Alice", "dataset": "g"})
        assert resp.status_code in (401, 404)
        assert "Acme" not in resp.text
    assert alice.get("/v1/graph", params={"entity": "Nobody", "dataset": "g"}).status_code == 404


def test_ui_files_are_served_without_a_key(server):
    base = server[0].base_url
    page = httpx.get(base.join("/ui"))
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert 'src="ui/static/app.js"' in page.text and "http" not in page.text.split("<body>")[0]
    lib = httpx.get(base.join("/ui/static/vendor/cytoscape.min.js"))
    assert lib.status_code == 200 and "javascript" in lib.headers["content-type"]
    assert "Cytoscape Consortium" in httpx.get(base.join("/ui/static/vendor/cytoscape.LICENSE")).text
    assert httpx.get(base.join("/ui/static/nothing.js")).status_code == 404
    assert "/ui" not in httpx.get(base.join("/openapi.json")).json()["paths"]
    assert httpx.get(base.join("/ui/")).headers["location"] == "/ui"


def test_kenning_ui_serves_the_explorer_locally(tmp_path):
    db = str(tmp_path / "local.db")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "kenning", "ui", "--db", db, "--port", "0", "--no-browser"],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert line.startswith("kenning explorer at http://127.0.0.1:"), line
        url = line.split(" at ", 1)[1].split()[0]
        assert url.endswith("/ui")
        assert "<title>kenning explorer</title>" in httpx.get(url).text
        base = url.removesuffix("/ui")
        assert httpx.get(f"{base}/v1/me").json() == {"name": "local", "admin": True, "auth": False}
        resp = httpx.post(f"{base}/v1/remember", json={"content": "Ada wrote notes."}, timeout=30)
        assert resp.status_code == 200, resp.text
    finally:
        proc.terminate()
        proc.wait(10)
    assert os.path.exists(db)
