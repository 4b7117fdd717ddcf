"""A second virtual environment for a framework that cannot share the suite's: CrewAI pins
``mcp<2``, ``pydantic<2.13`` and ``openai<3``, against kenning's ``mcp>=2.3`` and the other
frameworks' newer pydantic and openai (docs/integrations.md).

``side_python("crewai")`` builds ``.venvs/crewai`` beside the checkout once — kenning installed
editable with its ``crewai`` and ``postgres`` extras, from the package registry — and returns its
interpreter; later runs reuse it until kenning's declared dependencies change. The tests then
run their scenario in that interpreter, against the real framework package.
``KENNING_TEST_VENVS`` moves the folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

__all__ = ["side_python"]

ROOT = Path(__file__).resolve().parents[1]


def _wanted(extras: tuple[str, ...]) -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {"dependencies": project["dependencies"],
                "extras": {e: project["optional-dependencies"][e] for e in extras}}
    return hashlib.sha256(json.dumps(declared, sort_keys=True).encode()).hexdigest()


def side_python(name: str, extras: tuple[str, ...] = ("crewai", "postgres"), timeout: float = 1800) -> Path:
    """The interpreter of the side environment ``name`` with kenning and ``extras`` installed."""
    home = Path(os.environ.get("KENNING_TEST_VENVS") or ROOT / ".venvs")
    home.mkdir(parents=True, exist_ok=True)
    venv = home / name
    python = venv / "bin" / "python"
    marker = venv / ".kenning-installed"
    wanted = _wanted(extras)
    with open(home / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.exists() and marker.exists() and marker.read_text() == wanted:
            return python
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=timeout)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "-e", f"{ROOT}[{','.join(extras)}]"],
            capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            raise RuntimeError(f"installing kenning[{','.join(extras)}] into {venv} failed:\n{done.stderr[-4000:]}")
        marker.write_text(wanted)
    return python
