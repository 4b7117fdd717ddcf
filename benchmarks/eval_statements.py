"""How many everyday statements the offline extractor turns into the fact they state.

    python benchmarks/eval_statements.py PATH [--misses]

PATH is a JSON-lines file, one statement a line: ``text``, ``speaker`` (who said it, for
first-person statements; null otherwise), ``subject`` and ``object`` (the two ends the fact should
connect; a date as YYYY-MM-DD) and ``family``. A statement counts when one extracted fact links
the two ends, in either direction. An end matches an entity name when its words appear in the
name in order ("Volvo" matches "blue Volvo"; "the" and possessives aside, as entity names are
resolved); a date end also matches a date entity of lower precision ("1990" for "1990-05-03").
Prints the rate per family and overall; ``--misses`` lists what was not found.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections import defaultdict
from pathlib import Path

from kenning.models import Usage
from kenning.pipeline.extract import Extraction
from kenning.text import normalize_name
from kenning.pipeline.offline import OfflineExtractor

REFERENCE = dt.datetime(2024, 6, 15, 12, 0, tzinfo=dt.UTC)


def load(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        missing = {"text", "subject", "object", "family"} - set(row)
        if missing:
            sys.exit(f"{path}: a statement lacks {sorted(missing)}: {row}")
    return rows


def _words(name: str) -> list[str]:
    return normalize_name(name).split()


def matches(expected: str, name: str) -> bool:
    """The expected end's words appear, in order and together, in the entity name; a date
    named at lower precision ("1990-05") matches the full date it begins."""
    want, have = _words(expected), _words(name)
    if not want or not have:
        return False
    if any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1)):
        return True
    return all(part.isdigit() for part in have) and want[: len(have)] == have


def links(extraction: Extraction, subject: str, obj: str) -> bool:
    for fact in extraction.facts:
        for a, b in ((fact.source, fact.target), (fact.target, fact.source)):
            if matches(subject, a) and matches(obj, b):
                return True
    return False


def evaluate(rows: list[dict]) -> tuple[dict[str, list[int]], list[tuple[dict, Extraction]]]:
    """Per family [found, total], and the statements whose fact was not found."""
    extractor = OfflineExtractor()
    per_family: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    for row in rows:
        extraction = extractor.extract([row["text"]], reference_time=REFERENCE, usage=Usage(),
                                       speaker=row.get("speaker"))
        found = links(extraction, row["subject"], row["object"])
        per_family[row["family"]][0] += found
        per_family[row["family"]][1] += 1
        if not found:
            misses.append((row, extraction))
    return dict(per_family), misses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--misses", action="store_true", help="list the statements not understood")
    args = parser.parse_args(argv)
    rows = load(args.path)
    per_family, misses = evaluate(rows)
    width = max(len(f) for f in per_family) if per_family else 6
    print(f"{'family':<{width}}  found  total      %")
    for family, (found, total) in sorted(per_family.items()):
        print(f"{family:<{width}}  {found:>5}  {total:>5}  {100 * found / total:5.1f}")
    found = sum(f for f, _ in per_family.values())
    print(f"{'overall':<{width}}  {found:>5}  {len(rows):>5}  {100 * found / max(len(rows), 1):5.1f}")
    if args.misses:
        for row, extraction in misses:
            got = "; ".join(f"{f.source} {f.relation} {f.target}" for f in extraction.facts) or "no fact"
            print(f"MISS [{row['family']}] {row['text']!r} (speaker {row.get('speaker')}): {got}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
