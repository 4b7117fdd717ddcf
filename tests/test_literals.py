"""The offline extractor skips a pattern when a clause lacks every string the pattern needs
(``kenning/pipeline/literals.py``): the first rule that matches must be the one trying every
rule finds."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kenning.pipeline import offline
from kenning.pipeline.literals import literals_in, required_literals

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize(("pattern", "needs"), [
    (r"(?i:works?)\s+at\s+\w+", {"work"}),  # the longest run wins over "at"
    (r"(?:foo)?bar", {"bar"}),  # what may be skipped is not needed
    (r"x(?:foo|ba[rz])+", {"foo", "ba"}),  # one of the branches, each of them needed
    (r"(?:foo|)bar", {"bar"}),
    (r"(?:foo|)", None),  # a branch that needs nothing
    (r"(?:acquired|acquire|acquires)\s", {"acquire"}),  # "acquired" holds "acquire"
    (r"(?i:Caf[ée])", {"caf"}),  # no letter outside ASCII
    (r"\d+\s+\w+", None),
])
def test_required_literals(pattern: str, needs: set[str] | None) -> None:
    assert required_literals(pattern) == (frozenset(needs) if needs is not None else None)


def test_text_outside_ascii_skips_no_pattern() -> None:
    # (?i)s matches the long s, whose lower case is itself: no literal test is sound there
    assert literals_in("Alice ſtays in Paris", frozenset({"stay"})) is None
    assert literals_in("Alice STAYS in Paris", frozenset({"stay", "left"})) == {"stay"}


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for item in value for s in _strings(item)] if isinstance(value, list) else []


def _clauses() -> list[str]:
    """The clauses of the fixtures' texts and of every string in the tests (what the extractor's
    tests feed it)."""
    texts = []
    for path in sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")):
        lines = path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]
        texts += [s for line in lines for s in _strings(json.loads(line))]
    for path in FIXTURES.parent.glob("test_*.py"):
        texts += [node.value for node in ast.walk(ast.parse(path.read_text()))
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    clauses = {offline._tidy(clause) for text in texts for _, sentence in offline._sentences(text)
               for clause in offline._CLAUSE_BREAK.split(sentence)}
    return sorted(c for c in clauses if 0 < len(c) <= 400)


def test_the_first_rule_that_matches_is_unchanged_by_skipping() -> None:
    clauses = _clauses()
    matched = 0
    for clause in clauses:
        every = next(((rule, m.groupdict()) for rule in offline._RULES if (m := rule.pattern.fullmatch(clause))), None)
        assert offline._match(clause) == every, clause
        matched += every is not None
    assert len(clauses) > 3000 and matched > 400, (len(clauses), matched)
