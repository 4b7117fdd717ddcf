"""What ``import kenning`` costs a new process (issue 29, "open + first recall"): the facade,
the models, pydantic validators and date patterns are built on first use, not at import, and
still work when used. Each check runs in a fresh interpreter, where ``sys.modules`` and the
caches start empty; no timing is asserted (benchmarks/bench_scale.py --cold-runs times it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import kenning
from kenning.requests import SEARCH_TYPES
from kenning.search import recall

ROOT = Path(__file__).resolve().parent.parent


def _fresh(code: str) -> dict:
    """Run ``code`` in a new interpreter (this checkout first on the path); it prints JSON."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def test_import_kenning_loads_neither_the_engine_nor_its_heavy_dependencies():
    loaded = _fresh(
        "import json, sys, kenning\n"
        "heavy = ['numpy', 'pydantic', 'kenning.client', 'kenning.models', 'kenning.store', 'kenning.pipeline']\n"
        "print(json.dumps({'file': kenning.__file__, 'loaded': [m for m in heavy if m in sys.modules]}))"
    )
    assert loaded["file"] == str(ROOT / "kenning" / "__init__.py")
    assert loaded["loaded"] == []


def test_the_public_names_still_resolve_and_then_work():
    out = _fresh(
        "import json, kenning\n"
        "from kenning import Kenning, Memory, RecallResult, Settings, ValidationError\n"
        "with Kenning(':memory:') as kn:\n"
        "    kn.remember('Priya moved to Lisbon in June 2024.')\n"
        "    hits = kn.recall('where does Priya live').hits\n"
        "print(json.dumps({'names': sorted(set(kenning.__all__) - set(dir(kenning))),\n"
        "                  'same': kenning.Kenning is Kenning and kenning.Memory is Memory,\n"
        "                  'hits': len(hits), 'result': RecallResult.__module__,\n"
        "                  'error': issubclass(ValidationError, kenning.KenningError),\n"
        "                  'settings': Settings.__name__}))"
    )
    assert out.pop("hits") >= 1
    assert out == {"names": [], "same": True, "result": "kenning.models", "error": True, "settings": "Settings"}


def test_an_unknown_name_is_an_attribute_error():
    try:
        kenning.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("kenning.NoSuchThing resolved")


def test_models_build_their_validators_on_first_use():
    out = _fresh(
        "import json\n"
        "from kenning.models import Memory, RecallResult\n"
        "before = [m.__pydantic_complete__ for m in (Memory, RecallResult)]\n"
        "try:\n"
        "    Memory.model_validate({'id': 'mem_1'})\n"
        "    refused = False\n"
        "except Exception:\n"
        "    refused = True\n"
        "print(json.dumps({'before': before, 'refused': refused,\n"
        "                  'after': [m.__pydantic_complete__ for m in (Memory, RecallResult)]}))"
    )
    assert out == {"before": [False, False], "refused": True, "after": [True, False]}


def test_the_servers_schema_is_built_without_warnings():
    # request models are built when defined: FastAPI wraps a request body's model in its own
    # TypeAdapter, and a model that defers its build makes pydantic warn there
    out = _fresh(
        "import json, warnings\n"
        "warnings.simplefilter('error')\n"
        "from kenning import Kenning\n"
        "from kenning.server.app import create_app\n"
        "schema = create_app(Kenning(':memory:')).openapi()\n"
        "print(json.dumps(sorted(schema['paths'])[:1]))"
    )
    assert out == ["/v1/add"]


def test_date_patterns_are_compiled_on_first_use():
    out = _fresh(
        "import datetime as dt, json\n"
        "from kenning import dates\n"
        "before = dates._full.cache_info().currsize + dates._phrases.cache_info().currsize\n"
        "ref = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)\n"
        "span = dates.find_dates('She has lived in Lisbon since June 2024.', ref)\n"
        "print(json.dumps({'before': before, 'valid_at': span.valid_at.isoformat(),\n"
        "                  'parsed': dates.parse_date('2024-06-05', ref).isoformat()}))"
    )
    assert out == {"before": 0, "valid_at": "2024-06-01T00:00:00+00:00", "parsed": "2024-06-05T00:00:00+00:00"}


def test_the_request_models_search_types_are_recalls():
    # written out in kenning.requests so that the request models load without the search engine
    assert SEARCH_TYPES == recall.SEARCH_TYPES


def test_the_cli_loads_no_engine_until_a_command_runs():
    out = _fresh(
        "import contextlib, io, json, sys\n"
        "from kenning.cli import cli\n"
        "text = io.StringIO()\n"
        "with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):\n"
        "    cli.main(['--help'], prog_name='kenning')\n"
        "heavy = ['numpy', 'kenning.client', 'kenning.store', 'kenning.pipeline', 'kenning.search', 'kenning.access']\n"
        "print(json.dumps({'help': 'recall' in text.getvalue(), 'loaded': [m for m in heavy if m in sys.modules]}))"
    )
    assert out == {"help": True, "loaded": []}


def test_the_cli_permissions_are_accesss():
    from typing import get_args

    from kenning.access import Permission
    from kenning.cli.server import PERMISSIONS

    assert PERMISSIONS == get_args(Permission)
