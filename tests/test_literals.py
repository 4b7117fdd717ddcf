"""The offline extractor skips a pattern when a clause lacks every string the pattern needs
(``kenning/pipeline/literals.py``): the first rule that matches must be the one trying every
rule finds."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from kenning.pipeline import offline
from kenning.pipeline.literals import gate, literals_in, required_all, required_literals, scanner

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize(("pattern", "needs"), [
    (r"(?i:works?)\s+at\s+\w+", {"work"}),  # the longest run wins over "at"
    (r"(?:foo)?bar", {"bar"}),  # what may be skipped is not needed
    (r"x(?:foo|ba[rz])+", {"foo", "ba"}),  # one of the branches, each of them needed
    (r"(?:foo|)bar", {"bar"}),
    (r"(?:foo|)", None),  # a branch that needs nothing
    (r"(?:acquired|acquire|acquires)\s", {"acquire"}),  # "acquired" holds "acquire"
    (r"(?i:Caf[ée])", {"caf"}),  # no letter outside ASCII
    (r"x(?:doing|does|do|did|done)", {"xdo", "xdid"}),  # the common "d" the parser takes out
    (r"(?:doing|does|do|did|done)", {"do", "did"}),
    (r"\d+\s+\w+", set("0123456789")),  # in ASCII text a digit is one of ten
    (r"[0-9]+\s+\w+", None),
])
def test_required_literals(pattern: str, needs: set[str] | None) -> None:
    assert required_literals(pattern) == (frozenset(needs) if needs is not None else None)


@pytest.mark.parametrize(("pattern", "every"), [
    (r"(?i:works?)\s+at\s+\w+", [{"work"}, {"at"}]),  # each part, not only the best one
    (r"(?:foo)?bar", [{"bar"}]),  # what may be skipped is not needed
    (r"\d+\s+(?:cats|dogs)(?=x)", [set("0123456789"), {"cats", "dogs"}]),  # a lookahead needs nothing
    (r"a(?:b\s+c)+d", [{"a"}, {"b"}, {"c"}, {"d"}]),  # inside a repeat done at least once
    (r"(?:acquired|acquire)\s+it", [{"acquire"}, {"it"}]),
    (r"(?:foo|)", []),
])
def test_required_all(pattern: str, every: list[set[str]]) -> None:
    assert required_all(pattern) == tuple(frozenset(n) for n in every)


def test_text_outside_ascii_skips_no_pattern() -> None:
    # (?i)s matches the long s, whose lower case is itself: no literal test is sound there
    assert literals_in("Alice ſtays in Paris", frozenset({"stay"})) is None
    assert literals_in("Alice STAYS in Paris", frozenset({"stay", "left"})) == {"stay"}


def test_the_scanner_finds_what_looking_for_each_string_finds() -> None:
    # overlapping strings, one the prefix of another, one inside another, at the text's edges
    strings = frozenset({"a", "at", "work", "works at", "works", "or", "ks a", "t"})
    scan = scanner(strings)
    for text in ["", "Alice works at Acme", "WORKS AT", "at", "a", "xyz", "networks attack", "tat",
                 "worksat", "ork"]:
        assert scan(text) == literals_in(text, strings), text
    assert scan("Alice ſtays") is None and scanner(frozenset())("abc") == set()


def test_the_scanner_reads_words_and_the_strings_across_them_alike() -> None:
    # strings of word characters are looked up per word (and kept); the others in the whole text
    strings = frozenset({"don't", "color-blind", "ks a", "a1", "_x", "9", "it", "t", "ed"})
    scan = scanner(strings)
    for text in ["I don't", "DON'T", "color-blinded", "works at", "a1_x9", "it it it", "its", "don t",
                 "started", "edited", "Color-Blind, don't", "x_x", "b a1"]:
        assert scan(text) == literals_in(text, strings), text
        assert scan(text) == literals_in(text, strings), text  # again, from the words kept


def test_a_gate_says_no_only_where_the_search_fails() -> None:
    pattern = re.compile(r"\b(?:no\s+longer|stopped|quit)\b", re.IGNORECASE)
    may = gate(pattern)
    for text in ["I stopped", "I QUIT smoking", "no  longer", "nothing here", "quitting", "ſtopped"]:
        assert may(text) or pattern.search(text) is None, text
    assert not may("nothing here") and may("ſtopped")  # outside ASCII the gate always says yes
    assert gate(re.compile(r"\w+"))("anything")  # a pattern needing nothing is always tried


def test_gates_asked_about_one_text_in_a_row_each_answer_for_themselves() -> None:
    # the gates share one scan of the last text: each still answers from its own strings, and a
    # gate made after others were asked is looked for too
    stopped, quit_ = gate(re.compile(r"\bstopped\b")), gate(re.compile(r"\bquit\b"))
    assert not stopped("I quit") and quit_("I quit") and not quit_("I stopped") and stopped("I stopped")
    later = gate(re.compile(r"\bceased\b"))
    assert later("I ceased") and not later("I stopped") and stopped("I stopped")


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


def test_no_rule_is_tried_on_every_clause() -> None:
    # the age rule needs a digit; "Bob is my brother" a kin word; "Bob is the CTO" a role
    assert not offline._ALWAYS
    assert all(rule.needs and min(map(len, rule.needs)) > 1 for rule in offline._RULES
               if rule.relation not in {"age"})


def test_the_first_rule_that_matches_is_unchanged_by_skipping() -> None:
    clauses = _clauses()
    matched = 0
    for clause in clauses:
        every = next(((rule, m.groupdict()) for rule in offline._RULES if (m := rule.pattern.fullmatch(clause))), None)
        assert offline._match(clause) == every, clause
        matched += every is not None
    assert len(clauses) > 3000 and matched > 400, (len(clauses), matched)


def test_the_gated_searches_find_what_the_searches_find() -> None:
    from kenning.pipeline import changes, instructions

    clauses = _clauses()
    for pattern in (changes._MARKER, changes._FUTURE, offline._BARE_DAY):
        may = gate(pattern)
        skipped = [c for c in clauses if not may(c)]
        assert all(pattern.search(c) is None for c in skipped), pattern.pattern[:40]
        assert len(skipped) > len(clauses) / 4  # the gate skips many clauses
    # instruction flags: every pattern run on every text gives the same flags
    texts = clauses + _instruction_texts()
    for text in texts:
        folded = instructions.fold(text)
        squashed = re.sub(r"[^a-z<|>]", "", folded.translate(instructions._LEET))
        every = tuple(flag for flag in instructions.FLAGS
                      if any(instructions._matches(p, folded) for p in instructions._COMPILED[flag])
                      or any(w in squashed for w in instructions._SQUASHED.get(flag, ())))
        assert instructions._detect(text) == every, text


def _instruction_texts() -> list[str]:
    """The strings of the tests of instruction-shaped text (flagged and not)."""
    out = []
    for name in ("test_poisoning.py", "test_long_turn_extraction.py", "test_context.py"):
        path = FIXTURES.parent / name
        if path.exists():
            out += [node.value for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip()]
    return out
