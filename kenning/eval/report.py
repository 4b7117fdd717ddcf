"""Plain-text rendering of an evaluation report (the dict ``run.summarize`` returns)."""

from __future__ import annotations

from typing import Any

__all__ = ["render"]


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    cells = [headers, *rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _row(label: str, scores: dict[str, Any], ks: list[int]) -> list[str]:
    out = [label, str(scores["n"]), *(f"{scores[f'recall@{k}']:.1f}" for k in ks), f"{scores['mrr']:.3f}"]
    if f"session_any@{ks[0]}" in scores:
        out += [f"{scores[f'ndcg@{k}']:.3f}" for k in ks]
        out += [f"{scores[f'session_{m}@{k}']:.1f}" for m in ("any", "all") for k in ks]
    return out


def _session_headers(report: dict[str, Any], ks: list[int]) -> list[str]:
    """LongMemEval's columns: NDCG over turns, session recall_any / recall_all."""
    first: dict[str, Any] = next(iter(report["systems"].values()), {})
    sample = first.get("overall", {})
    if f"session_any@{ks[0]}" not in sample:
        return []
    return [*(f"NDCG@{k}" for k in ks), *(f"S{m}@{k}" for m in ("any", "all") for k in ks)]


def render(report: dict[str, Any]) -> str:
    ks = report["k"]
    ingest = report["ingest"]
    lines = [
        (f"{report['benchmark']}: {report['questions']} questions over {report['units']} units; "
         f"embedder {report['embedder']}; ingest {ingest['seconds']} s ({ingest['units_per_s']} units/s)"),
    ]
    headers = ["system / category", "n", *(f"R@{k}" for k in ks), "MRR", *_session_headers(report, ks)]
    rows = []
    for name, entry in report["systems"].items():
        rows.append(_row(f"{name}: overall", entry["overall"], ks))
        if "overall_1_4" in entry:
            rows.append(_row(f"{name}: categories 1-4", entry["overall_1_4"], ks))
        for category, scores in entry["categories"].items():
            rows.append(_row(f"  {category}", scores, ks))
    for name, scores in report.get("reference", {}).items():
        row = [name, "", *(f"{scores[f'recall@{k}']:.1f}" if f"recall@{k}" in scores else "" for k in ks), ""]
        rows.append(row + [""] * (len(headers) - len(row)))
    lines += _table(headers, rows)
    lines.append("")
    lines += _table(
        ["recall latency (ms)", "p50", "p95", "p99"],
        [[name, *(f"{e['latency_ms'][p]:.1f}" for p in ("p50", "p95", "p99"))] for name, e in report["systems"].items()],
    )
    if "answers" in report:
        lines.append("")
        lines.append("answers: " + ", ".join(f"{k} {v:.1f}%" for k, v in report["answers"].items()))
    return "\n".join(lines)
