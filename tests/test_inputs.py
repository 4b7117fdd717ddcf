"""Every public verb checks its arguments: bad input is a ValidationError (never a TypeError, a
database error or a silent default), and nothing is stored. Both stores, both facades."""

from __future__ import annotations

import asyncio
import logging
import math

import pytest

from kenning import AsyncKenning, Kenning, MemoryInput, ValidationError
from kenning._checks import METADATA_BYTES, METADATA_DEPTH, METADATA_KEYS


def nested(levels: int) -> dict:
    root: dict = {}
    node = root
    for _ in range(levels - 1):
        node["a"] = {}
        node = node["a"]
    return root


BAD_REMEMBER = {
    "content None": ((None,), {}),
    "content int": ((5,), {}),
    "content bytes": ((b"Alice works at Acme.",), {}),
    "content set": (({"Alice"},), {}),
    "lone surrogate": (("Alice \ud800 works at Acme.",), {}),
    "surrogate in a list": ((["Bob lives in Paris.", "x \udfff y"],), {}),
    "surrogate in a topic": ((MemoryInput(topic="db \ud800"),), {}),
    "metadata 5000 deep": (("Alice works at Acme.",), {"metadata": nested(5000)}),
    "metadata 600 deep": (("Alice works at Acme.",), {"metadata": nested(600)}),
    "metadata one level too deep": (("Alice works at Acme.",), {"metadata": nested(METADATA_DEPTH + 1)}),
    "metadata a list": (("Alice works at Acme.",), {"metadata": [1, 2]}),
    "metadata int key": (("Alice works at Acme.",), {"metadata": {1: "x"}}),
    "metadata nested int key": (("Alice works at Acme.",), {"metadata": {"a": {None: 1}}}),
    "metadata NaN": (("Alice works at Acme.",), {"metadata": {"x": math.nan}}),
    "metadata Infinity in a list": (("Alice works at Acme.",), {"metadata": {"x": [1, -math.inf]}}),
    "metadata a set": (("Alice works at Acme.",), {"metadata": {"x": {1}}}),
    "metadata too many keys": (("Alice works at Acme.",), {"metadata": {str(i): i for i in range(METADATA_KEYS + 1)}}),
    "metadata too large": (("Alice works at Acme.",), {"metadata": {"x": "y" * METADATA_BYTES}}),
    "metadata surrogate key": (("Alice works at Acme.",), {"metadata": {"\ud800": 1}}),
    "structured metadata NaN": ((MemoryInput(topic="db", metadata={"x": math.inf}),), {}),
    "kind None": (("Alice works at Acme.",), {"kind": None}),
    "kind empty": (("Alice works at Acme.",), {"kind": " "}),
    "source int": (("Alice works at Acme.",), {"source": 5}),
    "valid_at garbage": (("Alice works at Acme.",), {"valid_at": "garbage"}),
    "valid_at int": (("Alice works at Acme.",), {"valid_at": 5}),
    "force a string": (("Alice works at Acme.",), {"force": "no"}),
    "dry_run a string": (("Alice works at Acme.",), {"dry_run": "yes"}),
}


@pytest.mark.parametrize("dry_run", [False, True], ids=["store", "dry-run"])
@pytest.mark.parametrize("case", list(BAD_REMEMBER), ids=list(BAD_REMEMBER))
def test_bad_remember_is_a_validation_error_and_stores_nothing(db_path: str, case: str, dry_run: bool) -> None:
    args, kwargs = BAD_REMEMBER[case]
    with Kenning(db_path) as kn:
        with pytest.raises(ValidationError):
            kn.remember(*args, **{"dry_run": dry_run, **kwargs})
        if not {"force", "dry_run"} & set(kwargs):
            with pytest.raises(ValidationError):
                kn.add(*args, **kwargs)
        assert kn.stats().memories == 0


def test_metadata_at_the_limits_is_stored_and_read_back(kn: Kenning) -> None:
    deepest = nested(METADATA_DEPTH)
    wide = {str(i): i for i in range(METADATA_KEYS)}
    result = kn.remember(["Alice works at Acme.", "Bob lives in Paris."], metadata=deepest)
    assert kn.get(result.memory_ids[0]).metadata == deepest
    memory_id = kn.add("Carol met Dan.", metadata=wide)[0]
    assert kn.get(memory_id).metadata == wide
    assert len(kn.list(limit=10)) == 3


def test_update_checks_metadata_kind_and_source(kn: Kenning) -> None:
    memory_id = kn.remember("Alice works at Acme.").memory_ids[0]
    for changes in ({"metadata": nested(600)}, {"metadata": {"x": math.nan}}, {"metadata": [1]},
                    {"metadata": {2: 1}}, {"kind": None}, {"source": 5}, {"content": "a \ud800"}):
        with pytest.raises(ValidationError):
            kn.update(memory_id, **changes)
    assert kn.get(memory_id).metadata == {}


@pytest.mark.parametrize("kwargs", [
    {"query": None}, {"query": 5}, {"query": "a \ud800"}, {"query": "x", "top_k": "5"},
    {"query": "x", "top_k": math.nan}, {"query": "x", "top_k": 2**70}, {"query": "x", "top_k": True},
    {"query": "x", "depth": "1"}, {"query": "x", "search_type": 5}, {"query": "x", "as_of": 5},
    {"query": "x", "answer": "no"}, {"query": "x", "explain": 1},
])
def test_bad_recall_is_a_validation_error(kn: Kenning, kwargs: dict) -> None:
    kn.remember("Alice works at Acme.")
    with pytest.raises(ValidationError):
        kn.recall(**kwargs)


@pytest.mark.parametrize("kwargs", [
    {"limit": 2**70}, {"limit": -1}, {"limit": 0}, {"limit": "5"}, {"offset": -1}, {"offset": 2**70},
    {"order_by": "content; --"}, {"status": "gone"}, {"retention": 5}, {"pinned": "yes"},
    {"descending": "no"}, {"kind": 5}, {"dataset": "../x"},
])
def test_bad_list_is_a_validation_error_on_both_stores(kn: Kenning, kwargs: dict) -> None:
    kn.remember("Alice works at Acme.")
    with pytest.raises(ValidationError):
        kn.list(**kwargs)


def test_reads_by_id_and_entity_check_their_arguments(kn: Kenning) -> None:
    kn.remember("Alice works at Acme.")
    for call in (lambda: kn.timeline(None), lambda: kn.timeline("Alice", relation=5),
                 lambda: kn.get(["a", "b"]), lambda: kn.get(None), lambda: kn.delete(5),
                 lambda: kn.pin(["x"]), lambda: kn.provenance(b"x"), lambda: kn.chain(None),
                 lambda: kn.cognify(force="no"), lambda: kn.prune(max_age_days=math.nan),
                 lambda: kn.prune(min_score=-1), lambda: kn.prune(dry_run="no"),
                 lambda: kn.pin(kn.list()[0].id, reason="x \ud800"), lambda: kn.feedback(5, helpful=True),
                 lambda: kn.remember(MemoryInput(topic="db", source="s \ud800")),
                 lambda: kn.remember(MemoryInput(topic="db", supersedes=["m \ud800"]))):
        with pytest.raises(ValidationError):
            call()


def test_forget_everything_needs_true_itself(kn: Kenning) -> None:
    kn.remember("Alice works at Acme.")
    for value in ("no", "yes", 1, [True]):
        with pytest.raises(ValidationError):
            kn.forget(everything=value)
    assert kn.stats().memories == 1
    assert len(kn.forget(everything=True).memory_ids) == 1


def test_async_facade_raises_the_same_errors(db_path: str) -> None:
    async def main() -> None:
        async with AsyncKenning(db_path) as kn:
            with pytest.raises(ValidationError):
                await kn.remember(None)
            with pytest.raises(ValidationError):
                await kn.list(limit=-1)
            with pytest.raises(ValidationError):
                await kn.forget(everything="no")

    asyncio.run(main())


def test_the_kenning_logger_has_a_null_handler() -> None:
    handlers = logging.getLogger("kenning").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)


def test_kenning_prints_nothing_unless_logging_is_configured(tmp_path) -> None:
    import subprocess
    import sys

    script = ("import logging, kenning; "
              "logging.getLogger('kenning.engine').error('processing failed')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""


def test_unusable_store_locations_are_one_line_errors(tmp_path) -> None:
    from click.testing import CliRunner

    from kenning import ConfigurationError, StoreError
    from kenning.cli import cli

    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not a database, it only looks like one " * 100)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for db, error in ((str(corrupt), StoreError), (str(a_file / "x.db"), StoreError),
                      ("sqlite:///", ConfigurationError), ("sqlite://", ConfigurationError)):
        with pytest.raises(error):
            Kenning(db)
        result = CliRunner().invoke(cli, ["--db", db, "stats"])
        assert result.exit_code == 1, (db, result.output)
        assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert corrupt.read_bytes().startswith(b"this is not a database")
