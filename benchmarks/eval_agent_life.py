"""Whether an agent's everyday loop gets what is true now, and what was true then.

    python benchmarks/eval_agent_life.py FILE [--misses] [--json]

FILE is a JSON-lines file of scenarios (the format of ``../shared/data/agent_life``): a
``user``, their ``sessions`` (``id``, ``date``, ``turns`` as ``[role, text]`` pairs) and ``ask``,
questions that are either about now (``now``: the current values, ``stale``: the old ones) or
about an earlier date (``as_of``, ``then``: the values true then, ``also``: the others).

Each scenario gets a fresh store (offline, default install). Each session is remembered as
OpenAI-shape messages with ``created_at`` = the session's date, ``user`` and ``session`` set.
Scored per "now" question:

- **recall@1**: among ``recall(q, user=...)`` hits, the first that mentions any current or
  stale value mentions a current one;
- **context**: ``context(q, user=..., session=<a session never seen before>)`` names a current
  value, and no fact shown as current (``Context.facts``) names only a stale one;
- **facts**: after the sessions, ``context(user=...).facts`` holds a current value.

Per "as_of" question (**as-of**): ``recall(q, user=..., as_of=...)``'s first hit naming any
listed value names a value true then. A value is mentioned when it appears as a whole word (or
words), case aside. Prints the four rates; ``--misses`` says what each missed question got.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from kenning import Kenning

FIGURES = ("recall@1", "context", "facts", "as-of")


def load(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        missing = {"user", "sessions", "ask"} - set(row)
        if missing:
            sys.exit(f"{path}: a scenario lacks {sorted(missing)}")
    return rows


def mentions(text: str, values: list[str]) -> bool:
    """Any of ``values`` appears in ``text`` as a whole word or phrase, case aside."""
    return any(re.search(rf"(?<!\w){re.escape(v)}(?!\w)", text, re.IGNORECASE) for v in values)


def _fact_text(fact: Any) -> str:
    return " ".join(str(part) for part in (fact.description, fact.source, fact.target) if part)


def _first(texts: list[str], values: list[str]) -> str | None:
    return next((t for t in texts if mentions(t, values)), None)


def score_scenario(row: dict[str, Any], directory: Path) -> list[dict[str, Any]]:
    """One line per figure a question counts towards: the figure, whether it was met, and what
    the answer was (for ``--misses``)."""
    user = row["user"]
    out: list[dict[str, Any]] = []
    with Kenning(str(directory / "store.db")) as kn:
        for session in row["sessions"]:
            messages = [{"role": role, "content": text, "created_at": session["date"]}
                        for role, text in session["turns"]]
            kn.remember(messages, user=user, session=session["id"])
        facts = [_fact_text(f) for f in kn.context(user=user).facts]
        for ask in row["ask"]:
            q = ask["q"]
            if "as_of" in ask:
                hits = [h.text for h in kn.recall(q, user=user, as_of=ask["as_of"]).hits]
                first = _first(hits, ask["then"] + ask.get("also", []))
                out.append({"figure": "as-of", "q": q, "ok": first is not None and mentions(first, ask["then"]),
                            "got": first})
                continue
            now, stale = ask["now"], ask.get("stale", [])
            hits = [h.text for h in kn.recall(q, user=user).hits]
            first = _first(hits, now + stale)
            out.append({"figure": "recall@1", "q": q, "ok": first is not None and mentions(first, now),
                        "got": first})
            ctx = kn.context(q, user=user, session=f"new-{row['user']}-session")
            shown = [_fact_text(f) for f in ctx.facts]
            stale_only = [t for t in shown if mentions(t, stale) and not mentions(t, now)] if stale else []
            out.append({"figure": "context", "q": q, "ok": mentions(ctx.text, now) and not stale_only,
                        "got": ctx.text if not stale_only else f"stale fact shown as current: {stale_only}"})
            out.append({"figure": "facts", "q": q, "ok": any(mentions(t, now) for t in facts),
                        "got": facts})
    return out


def evaluate(rows: list[dict[str, Any]]) -> tuple[dict[str, list[int]], list[dict[str, Any]]]:
    """Per figure [met, total], and every scored line."""
    totals = {name: [0, 0] for name in FIGURES}
    lines: list[dict[str, Any]] = []
    for row in rows:
        with tempfile.TemporaryDirectory(prefix="kenning-agent-life-") as tmp:
            for line in score_scenario(row, Path(tmp)):
                line["user"] = row["user"]
                totals[line["figure"]][0] += int(line["ok"])
                totals[line["figure"]][1] += 1
                lines.append(line)
    return totals, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--misses", action="store_true", help="say what each missed question got")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    totals, lines = evaluate(load(args.path))
    rates = {name: round(100 * met / total, 1) if total else None for name, (met, total) in totals.items()}
    if args.json:
        print(json.dumps({"figures": rates, "counts": totals}))
    else:
        print(f"{'figure':<9} {'met':>4} {'total':>5}      %")
        for name in FIGURES:
            met, total = totals[name]
            rate = f"{rates[name]:5.1f}" if total else "    -"
            print(f"{name:<9} {met:>4} {total:>5}  {rate}")
    if args.misses:
        for line in lines:
            if not line["ok"]:
                got = line["got"] if isinstance(line["got"], str) or line["got"] is None else "; ".join(line["got"])
                got = " ".join(str(got).split())[:400]
                print(f"MISS [{line['figure']}] {line['user']}: {line['q']!r} -> {got}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
