"""Shared fixtures. Stores are real: SQLite files in tmp_path, and (for the backend-parametrized
tests) a real PostgreSQL with pgvector started by the suite itself."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from kenning import Kenning
from tests.fakeopenai import FakeOpenAI, fake_openai  # noqa: F401  (fixture)

UTC = dt.timezone.utc


class Clock:
    """A controllable clock for ``Kenning(clock=...)``."""

    def __init__(self, start: dt.datetime) -> None:
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now

    def set(self, value: str | dt.datetime) -> None:
        if isinstance(value, str):
            value = dt.datetime.fromisoformat(value)
        self.now = value if value.tzinfo else value.replace(tzinfo=UTC)

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's KENNING_* or OPENAI_* settings."""
    for name in list(os.environ):
        if name.startswith(("KENNING_", "OPENAI_")):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def clock() -> Clock:
    return Clock(dt.datetime(2024, 1, 1, tzinfo=UTC))


@pytest.fixture
def db_path(tmp_path) -> str:  # noqa: ANN001
    return str(tmp_path / "kenning.db")


def _backends() -> list:
    return ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=_backends())
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:  # noqa: ANN001
    """A fresh, empty store of each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'kenning.db'}"
    from tests.pg import pg_url

    return pg_url()


@pytest.fixture
def kn(store_url: str, clock: Clock):  # noqa: ANN201
    with Kenning(store_url, clock=clock) as k:
        yield k


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="also run slow scale checks")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow scale check: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
