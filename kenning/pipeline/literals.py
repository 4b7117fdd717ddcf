"""What text a regular expression cannot match without: a cheap test that skips most patterns.

The offline extractor tries about a hundred anchored patterns on every clause, first match wins;
most fail, after backtracking through the subject. ``required_literals`` reads a pattern's
syntax tree once and returns strings of which every match contains at least one (lower-cased):
"works at" or "worked at" or ... A clause that contains none of them cannot match, so the
pattern is skipped without running it, and the first pattern that matches is the same one.

The test is only sound where lower-casing is: ASCII text against ASCII literals (Unicode case
folding lets ``(?i)s`` match "ſ", whose lower case is itself), so a text that is not ASCII
skips no pattern. A construct the analysis does not know yields no requirement (None),
never a wrong one.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

__all__ = ["gate", "literals_in", "required_all", "required_literals", "scanner"]

# the parser behind ``re.compile``: private (no type information, its tree is nested tuples and
# lists), so anything unexpected means "no requirement"
_parser: ModuleType | None
try:
    _c = importlib.import_module("re._constants")
    _parser = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - a Python without them
    _parser = None

Needs = frozenset[str] | None

#: a run of word characters in lower-case ASCII text (where ``scanner`` looks strings up)
_WORD = re.compile(r"[a-z0-9_]+")
#: ASCII bytes with all but those characters made spaces: ``split`` then gives ``_WORD``'s runs
_WORD_BYTES = bytes(b if _WORD.fullmatch(chr(b)) else 32 for b in range(256))
#: words whose strings a scanner keeps (then it starts again)
_HELD_WORDS = 50_000


def required_literals(pattern: str, flags: int = 0) -> Needs:
    """Lower-case strings, one of which every match of ``pattern`` contains; None if unknown."""
    if _parser is None:
        return None
    try:
        needs = _needs(_parser.parse(pattern, flags))
    except Exception:  # noqa: BLE001 - an unknown tree shape: no requirement, never a wrong one
        return None
    # a text holding "acquired" holds "acquire": testing the shorter alone is enough
    return needs and frozenset(n for n in needs if not any(m != n and m in n for m in needs))


def required_all(pattern: str, flags: int = 0) -> tuple[frozenset[str], ...]:
    """Every requirement of ``pattern``, not only the most selective one: sets of lower-case
    strings, a match containing one string of each (a literal run, a group or a repeat done at
    least once, an alternation whose every branch requires something, at any depth of the
    sequences every match goes through). Empty when none is known."""
    if _parser is None:
        return ()
    try:
        found = _all_needs(_parser.parse(pattern, flags))
    except Exception:  # noqa: BLE001 - an unknown tree shape: no requirement, never a wrong one
        return ()
    return tuple(dict.fromkeys(frozenset(n for n in needs if not any(m != n and m in n for m in needs))
                               for needs in found))


def literals_in(text: str, literals: frozenset[str]) -> frozenset[str] | None:
    """Those of ``literals`` the text holds (lower-cased), found once for all the patterns to
    try; None when the test is not sound for this text (it is not ASCII). A pattern whose
    requirement ``needs`` is disjoint from them cannot match."""
    if not text.isascii():
        return None
    lowered = text.lower()
    return frozenset(n for n in literals if n in lowered)


def scanner(literals: Iterable[str]) -> Callable[[str], set[str] | None]:
    """``literals_in`` for one fixed set of lower-case strings, word by word: a string of word
    characters only (``[a-z0-9_]``, all but a few) lies inside one run of them, so the strings a
    text holds are those its words hold, each word's found once (a trie of the strings in a
    lookahead: at each position the longest string there, and with it every string that is a
    prefix of it) and kept, plus the few other strings, looked for in the whole text when it
    holds one of their other characters. Returns None for a text that is not ASCII, as
    ``literals_in``."""
    strings = frozenset(literals)
    if not strings:
        return lambda text: set() if text.isascii() else None
    in_words = frozenset(s for s in strings if _WORD.fullmatch(s))
    others = tuple(sorted(strings - in_words))
    # each of the others holds a character no word does: a text holding none of those holds none of them
    marks = re.compile("[" + re.escape("".join(sorted({c for s in others for c in s if not _WORD.fullmatch(c)}))) + "]"
                       if others else "(?!)")
    pattern = re.compile(f"(?=({_trie(in_words)}))") if in_words else None
    prefixes = {s: frozenset(s[:end] for end in range(1, len(s) + 1) if s[:end] in in_words) for s in in_words}
    held_of = _Words(pattern, prefixes).__getitem__

    def scan(text: str) -> set[str] | None:
        if not text.isascii():
            return None
        lowered = text.lower()
        found = set(filter(lowered.__contains__, others)) if marks.search(lowered) else set()
        # the runs of word characters (``_WORD``), split out of the bytes, each looked up in C
        found.update(*map(held_of, lowered.encode().translate(_WORD_BYTES).split()))
        return found

    return scan


class _Words(dict[bytes, frozenset[str]]):
    """A scanner's words (lower-case ASCII) and the strings each holds: a word not seen yet is
    read when first looked up, and kept (``_HELD_WORDS`` at most, then it starts again)."""

    def __init__(self, pattern: re.Pattern[str] | None, prefixes: dict[str, frozenset[str]]) -> None:
        super().__init__()
        self.pattern, self.prefixes = pattern, prefixes

    def __missing__(self, word: bytes) -> frozenset[str]:
        found = frozenset[str]().union(*(self.prefixes[s] for s in set(self.pattern.findall(word.decode())))) \
            if self.pattern else frozenset()
        if len(self) >= _HELD_WORDS:
            self.clear()
        self[word] = found
        return found


def gate(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    """A cheap test before ``pattern.search(text)``: False only when the text (ASCII) holds none
    of the strings every match needs, so the search cannot succeed; True when it may. The
    strings of every gate are looked for together (``_Gated``): gates asked about the same text
    in a row (a clause's change markers, plans, bare dates) read it once."""
    needs = required_literals(pattern.pattern, pattern.flags)
    if not needs:
        return lambda text: True
    _GATED.add(needs)
    return lambda text: (found := _GATED.find(text)) is None or not found.isdisjoint(needs)


class _Gated:
    """The strings gates need, found in a text by one ``scanner`` (made when first asked, again
    after a new gate), and the last text asked about with what it holds (and the scanner that
    found it: what an older scanner found is not reused)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.needs: set[str] = set()
        self.scan: Callable[[str], set[str] | None] | None = None
        self.last: tuple[str, object, set[str] | None] = ("", None, None)

    def add(self, needs: frozenset[str]) -> None:
        with self.lock:
            self.needs |= needs
            self.scan = None

    def find(self, text: str) -> set[str] | None:
        scan = self.scan
        if scan is None:
            with self.lock:
                scan = self.scan
                if scan is None:
                    scan = self.scan = scanner(frozenset(self.needs))
        last = self.last  # one read: another thread may replace it meanwhile
        if last[1] is scan and last[0] == text:
            return last[2]
        found = scan(text)
        self.last = (text, scan, found)
        return found


_GATED = _Gated()


def _trie(strings: frozenset[str]) -> str:
    """A pattern matching any of ``strings``, the longest one where several start at a place."""
    root: dict[str, Any] = {}
    for string in strings:
        node = root
        for char in string:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + pattern(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return pattern(root)


def _needs(items: Iterable[tuple[Any, Any]]) -> Needs:
    """Of a sequence: the most selective requirement of its parts (a run of literals, a group,
    a repeat done at least once, an alternation whose every branch requires something)."""
    best: Needs = None
    run: list[str] = []

    def keep(found: Needs) -> None:
        nonlocal best
        if found and (best is None or _selectivity(found) > _selectivity(best)):
            best = found

    for op, av in items:
        if op is _c.LITERAL and av < 128:
            run.append(chr(av).lower())
            continue
        if op is _c.BRANCH and run:  # "d(?:oing|id|o)": the parser took out the common start
            keep(frozenset("".join(run) + _leading(branch) for branch in av[1]))
        keep(frozenset({"".join(run)}) if run else None)
        run = []
        keep(_part(op, av))
    keep(frozenset({"".join(run)}) if run else None)
    return best


def _all_needs(items: Iterable[tuple[Any, Any]]) -> list[frozenset[str]]:
    """Of a sequence: the requirements of all its parts (``_needs`` keeps the best of them)."""
    out: list[frozenset[str]] = []
    run: list[str] = []
    for op, av in items:
        if op is _c.LITERAL and av < 128:
            run.append(chr(av).lower())
            continue
        if op is _c.BRANCH and run:
            out.append(frozenset("".join(run) + _leading(branch) for branch in av[1]))
        if run:
            out.append(frozenset({"".join(run)}))
        run = []
        if op is _c.SUBPATTERN:
            out += _all_needs(av[-1])
        elif op is _c.ATOMIC_GROUP:
            out += _all_needs(av)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT) and av[0] >= 1:
            out += _all_needs(av[2])
        elif needs := _part(op, av):
            out.append(needs)
    if run:
        out.append(frozenset({"".join(run)}))
    return out


def _leading(items: Iterable[tuple[Any, Any]]) -> str:
    """The literal characters a sequence starts with (lower-cased)."""
    out = []
    for op, av in items:
        if op is not _c.LITERAL or av >= 128:
            break
        out.append(chr(av).lower())
    return "".join(out)


def _part(op: Any, av: Any) -> Needs:
    if op is _c.SUBPATTERN:
        return _needs(av[-1])
    if op is _c.ATOMIC_GROUP:
        return _needs(av)
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
        low, _, body = av
        return _needs(body) if low >= 1 else None
    if op is _c.BRANCH:
        branches = [_needs(b) for b in av[1]]
        if any(b is None for b in branches):
            return None
        return frozenset[str]().union(*(b for b in branches if b is not None))
    if op is _c.IN and all(o is _c.LITERAL and v < 128 for o, v in av):
        return frozenset(chr(v).lower() for _, v in av)
    if op is _c.IN and av == [(_c.CATEGORY, _c.CATEGORY_DIGIT)]:
        return _DIGITS  # ``\d``: in ASCII text, one of the ten digits
    return None


_DIGITS = frozenset("0123456789")


def _selectivity(needs: frozenset[str]) -> tuple[int, int]:
    """Longer strings first (rarer in text), then fewer of them."""
    return min(len(n) for n in needs), -len(needs)
