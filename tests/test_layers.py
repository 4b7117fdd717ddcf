"""The transports are leaves (docs/architecture.md, the folder tree): ``server/``, ``mcp/`` and ``cli/`` import only the
facade, the public models, the request models, the tools built from them, the errors, the
optional-import helper and the access package — never the
engine, the store, the pipeline or another transport's internals. Read from the source, so a new
import that crosses a layer fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kenning"
#: what every transport may import from kenning (the package root gives ``__version__``)
LEAF = {"", "client", "models", "requests", "tools", "errors", "_extras", "access"}
#: the CLI also starts the other transports, runs the evaluation harness, the demo, and
#: ``migrate`` (store to store: below any facade by nature)
CLI_ALSO = {"server", "mcp", "eval", "demo", "store"}


def kenning_imports(path: Path) -> set[str]:
    """The kenning modules one file imports, as top-level names under ``kenning``."""
    depth = len(path.relative_to(PACKAGE).parts) - 1  # package levels below kenning/
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level <= depth:
                continue  # inside its own transport package
            parts = (node.module or "").split(".")
            found.add(parts[0] if node.module else "")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kenning"):
            found.add(((node.module or "").split(".") + [""])[1])
    return found


@pytest.mark.parametrize("transport", ["server", "mcp", "cli"])
def test_transports_import_only_the_facade_models_errors_and_access(transport):
    allowed = LEAF | (CLI_ALSO if transport == "cli" else set())
    crossing = {str(path.relative_to(PACKAGE)): sorted(kenning_imports(path) - allowed)
                for path in sorted((PACKAGE / transport).rglob("*.py"))}
    assert {k: v for k, v in crossing.items() if v} == {}


def test_the_check_sees_a_crossing_import(tmp_path):
    fake = PACKAGE / "server" / "_layers_probe.py"
    fake.write_text("from ..store.base import Store\nfrom ..core.engine import Engine\nfrom .app import create_app\n")
    try:
        assert kenning_imports(fake) == {"store", "core"}
    finally:
        fake.unlink()
