"""The same mistake gets the same words on every surface (issue 15 item 12)."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from click.testing import CliRunner

from kenning import Kenning
from kenning.cli import cli


def test_empty_content_says_content_is_empty_everywhere(tmp_path):
    pytest.importorskip("fastapi")
    from tests.server_util import running

    db = str(tmp_path / "m.db")
    result = CliRunner().invoke(cli, ["--db", db, "remember", ""])
    assert result.exit_code == 1 and "error: content is empty" in result.output
    with running(str(tmp_path / "h.db"), auth=False) as (_kn, base):
        for content in ("", "  ", ["Alice works at Acme.", ""]):
            resp = httpx.post(f"{base}/v1/remember", json={"content": content})
            assert resp.status_code == 422
            assert resp.json()["error"]["message"] == "content is empty", resp.text
        resp = httpx.post(f"{base}/v1/remember", json={"content": 5})
        message = resp.json()["error"]["message"]
        assert resp.status_code == 422 and "MemoryInput" not in message and "content must be text" in message


def test_mcp_forget_names_only_its_own_options(tmp_path):
    pytest.importorskip("mcp")
    from kenning.mcp import build_server
    from kenning.mcp.server import ToolError

    with Kenning(str(tmp_path / "m.db")) as kn:
        server = build_server(kn, auth=False)

        async def main(args: dict) -> dict:
            with pytest.raises(ToolError) as info:
                await server.call_tool("forget", args)
            text = str(info.value)
            return json.loads(text[text.index("{"):])["error"]

        for args in ({}, {"memory_id": "mem_x", "dataset": "main"}):
            error = anyio.run(main, args)
            assert error["code"] == "validation_error"
            assert "everything" not in error["message"] and "memory_id, dataset or user" in error["message"]


def test_docs_page_loads_its_assets_from_the_server_not_a_cdn(tmp_path):
    pytest.importorskip("fastapi")
    from tests.server_util import running

    with running(str(tmp_path / "d.db"), auth=False) as (_kn, base):
        page = httpx.get(f"{base}/docs")
        assert page.status_code == 200 and "cdn" not in page.text.lower()
        for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
            assert f"/docs/assets/{asset}" in page.text
            resp = httpx.get(f"{base}/docs/assets/{asset}")
            assert resp.status_code == 200 and len(resp.content) > 10_000


def test_an_empty_dataset_of_the_server_is_readable_and_others_names_never_leak(tmp_path):
    pytest.importorskip("fastapi")
    from kenning.access import auth_store
    from tests.server_util import add_user, running

    with running(str(tmp_path / "a.db")) as (kn, base):
        alice, bob = add_user(kn, "alice"), add_user(kn, "bob")
        kn.remember("Alice hid the key under the mat.", dataset="secret-plans")
        auth_store(kn).claim_dataset("secret-plans", auth_store(kn).find_user("alice").id)
        headers = {"Authorization": f"Bearer {bob}"}
        resp = httpx.post(f"{base}/v1/datasets", json={"name": "bobs"}, headers=headers)
        assert resp.status_code in (200, 201), resp.text
        resp = httpx.post(f"{base}/v1/recall", json={"query": "key", "dataset": "bobs"}, headers=headers)
        assert resp.status_code == 200 and resp.json()["hits"] == [], resp.text  # empty, not missing
        resp = httpx.post(f"{base}/v1/recall", json={"query": "key", "dataset": "nosuch"}, headers=headers)
        assert resp.status_code == 404 and "secret-plans" not in resp.text
