"""CrewAI: its real unified ``Memory`` over ``KenningStorage``, on both stores, without a model.

CrewAI cannot be installed beside the suite's packages (it pins ``mcp<2``, ``pydantic<2.13``,
``openai<3``), so the scenario (tests/crewai_scenario.py) runs in a side environment built once
from the package registry (tests/sidevenv.py), against the same checkout; so does the CrewAI
example of docs/integrations.md."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from kenning.errors import ConfigurationError
from tests.pg import pg_available, pg_url
from tests.sidevenv import side_python

# the first run builds the side environment (minutes: crewai brings chromadb and lancedb)
pytestmark = pytest.mark.timeout(2400)

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "tests" / "crewai_scenario.py"


@pytest.fixture(scope="module")
def crew_python() -> Path:
    return side_python("crewai")


def _run(python: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(python), *args], capture_output=True, text=True, timeout=600, cwd=cwd)
    assert done.returncode == 0, done.stderr[-4000:] + done.stdout[-2000:]
    return done


def _scenarios(python: Path, stores: list[str]) -> list[dict]:
    out = _run(python, str(SCENARIO), *stores).stdout
    return [json.loads(x.removeprefix("SCENARIO ")) for x in out.splitlines() if x.startswith("SCENARIO ")]


def _stores(tmp_path: Path) -> list[str]:
    stores = [str(tmp_path / "crew.db")]
    if pg_available():
        stores.append(pg_url())
    return stores


def test_crewai_memory_runs_on_kenning_storage_on_both_stores(crew_python, tmp_path):
    stores = _stores(tmp_path)
    assert len(stores) == 2 or not pg_available()
    seen_all = _scenarios(crew_python, stores)
    assert len(seen_all) == len(stores)
    for seen in seen_all:
        assert seen["model_calls"] == 0
        assert seen["count"] == 4  # the twin in another scope is its own record
        assert seen["recall"][0] == "Ada's favourite editor is Helix."
        assert all(0.0 <= s <= 1.5 for s in seen["scores"])  # CrewAI's composite of a similarity in [0, 1]
        assert seen["scoped"] == [["/team", "The team standup is at 9:30 on weekdays."]]
        assert seen["scopes"] == ["/other", "/prefs", "/team"] and seen["children"] == ["/prefs/life"]
        assert seen["categories"] == {"schedule": 2, "life": 1, "tools": 1}
        assert seen["info"] == [2, ["life", "tools"], ["/prefs/life"]]
        assert len(seen["records"]) == 2  # newest first, a page
        assert seen["kenning_recall"] == "Ada's favourite editor is Helix."
        assert "Helix" in seen["context"] and "Porto" in seen["context"]
        # kenning's temporal rule: the switch closes the old favourite, which moves to History
        now, history = seen["context_after_change"].split("# History", 1)
        assert "Zed" in now and "favourite editor is Helix" not in now
        assert "favourite editor is Helix" in history
        # and CrewAI's own recall puts the current value first, the old one still found
        assert seen["recall_after_change"][0] == "Ada switched from Helix to Zed."
        assert "Ada's favourite editor is Helix." in seen["recall_after_change"]
        assert seen["updated"] == "Ada's favourite editor is Helix, with vim keys."
        assert (seen["deleted_category"], seen["deleted_ids"], seen["deleted_old"], seen["forgot_team"]) == (1, 1, 0, 1)
        assert seen["left"] == ["Ada switched from Helix to Zed.", "Ada's favourite editor is Helix, with vim keys."]
        assert "memory(kn)" in seen["foreign"]
        assert seen["async_deleted"] == 1
        assert seen["built"] == ["Deploys happen on Thursdays."]
        assert seen["after_reset"] == 0


def test_the_crewai_example_of_the_docs_runs(crew_python, tmp_path):
    doc = (ROOT / "docs" / "integrations.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.+?)\n```", doc, re.S) if "crewai" in b]
    assert blocks, "docs/integrations.md has a CrewAI example"
    for i, code in enumerate(blocks):
        script = tmp_path / f"example{i}.py"
        script.write_text(code)
        printed = [line.strip() for line in _run(crew_python, str(script), cwd=tmp_path).stdout.splitlines()]
        promised = [line.split("  # ", 1)[1].strip() for line in code.splitlines() if "print(" in line and "  # " in line]
        assert promised
        for want in promised:
            pattern = ".*".join(re.escape(part) for part in want.split("…"))
            assert any(re.fullmatch(pattern, line) for line in printed), (want, printed)


def test_without_crewai_the_error_names_the_extra():
    try:
        import crewai  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("crewai is installed here")
    with pytest.raises(ConfigurationError, match=r"kenning\[crewai\]"):
        import kenning.integrations.crewai  # noqa: F401
