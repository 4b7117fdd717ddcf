"""Fuzz every operation of the live server's OpenAPI spec (schemathesis): no input may cause a
server error, and every error answer has the one error shape. A small run; the larger one is
``benchmarks/fuzz_api.py``."""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")

from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from tests.server_util import add_user, running

_KEY: dict[str, str] = {}


@pytest.fixture(scope="module")
def live_schema(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fuzz") / "fuzz.db")
    with running(path, max_body=64 * 1024) as (kn, base):
        _KEY["value"] = add_user(kn, "fuzzer", admin=True)
        kn.remember("Alice works at Acme since 2020.", dataset="main")
        yield schemathesis.openapi.from_url(f"{base}/openapi.json")


schema = schemathesis.pytest.from_fixture("live_schema")


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case):
    response = case.call(headers={"Authorization": f"Bearer {_KEY['value']}"}, timeout=30)
    case.validate_response(response, checks=[not_a_server_error])
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"} and {"code", "message"} <= set(body["error"]), body
