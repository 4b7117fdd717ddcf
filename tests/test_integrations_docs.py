"""docs/integrations.md's Python examples run offline (each framework's own test model where a
model is needed) and print what their comments say; the one that needs a real model is only
compiled."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "integrations.md").read_text()
# CrewAI's example runs in CrewAI's own environment: tests/test_integrations_crewai.py
BLOCKS = [b for b in re.findall(r"```python\n(.+?)\n```", DOC, re.S) if "crewai" not in b]


def _promised(code: str) -> list[str]:
    """What the example says it prints: a comment on a print line, or the comment line right
    after one ("…" stands for anything)."""
    out, lines = [], code.splitlines()
    for i, line in enumerate(lines):
        if "print(" not in line:
            continue
        if "  # " in line:
            out.append(line.split("  # ", 1)[1].strip())
        elif i + 1 < len(lines) and lines[i + 1].strip().startswith("# "):
            out.append(lines[i + 1].strip()[2:])
    return out


def _needs(code: str) -> str | None:
    for module, package in (("langgraph", "langgraph"), ("langmem", "langmem"), ("agents", "agents"),
                            ("pydantic_ai", "pydantic_ai")):
        if f"from {module}" in code:
            return package
    return None


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_the_example_runs_and_prints_what_it_says(code, tmp_path, monkeypatch):
    assert len(BLOCKS) >= 5
    package = _needs(code)
    if package:
        pytest.importorskip(package)
    if "needs a model" in code:
        compile(code, "docs/integrations.md", "exec")
        return
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/integrations.md", "exec"), {"__name__": "__doc_example__"})
    printed = out.getvalue().splitlines()
    for want in _promised(code):
        pattern = ".*".join(re.escape(part) for part in want.split("…"))
        assert any(re.fullmatch(pattern, line.strip()) for line in printed), (want, printed)
