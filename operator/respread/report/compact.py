"""The report in one line per violation (`respread plan -o compact`), for CI logs and grep.

A header, then each violation, worst first: namespace, workload, topology key, skew against
maxSkew, misplaced pods, the verdict, the cause, and the evictions planned now and later for
its workload. What the scan could not see follows, one line each: never an all-clear.
"""

from __future__ import annotations

from collections import Counter

from respread.remedies.evict.steps import Verdict
from respread.report.model import Report, Violation
from respread.report.text import coverage_text

VERDICTS = {
    Verdict.FIXABLE: "fixable",
    Verdict.WAITING: "waiting",
    Verdict.PARTLY_FIXABLE: "partly-fixable",
    Verdict.NOT_FIXABLE: "not-fixable",
}


def _verdict(v: Violation) -> str:
    return VERDICTS[v.verdict] + ("*" if v.incomplete else "")


def _row(
    v: Violation, now: Counter[tuple[str, str, str]], later: Counter[tuple[str, str, str]]
) -> list[str]:
    w = v.workload
    key = (w.namespace, w.kind, w.name)
    return [
        w.namespace,
        f"{w.kind}/{w.name}",
        v.topology_key,
        str(v.skew),
        str(v.max_skew),
        f"{v.violating_pods}/{v.pods}",
        _verdict(v),
        v.cause.value,
        str(now[key]),
        str(later[key]),
    ]


HEADER = [
    "NAMESPACE",
    "WORKLOAD",
    "TOPOLOGY KEY",
    "SKEW",
    "MAXSKEW",
    "MISPLACED",
    "VERDICT",
    "CAUSE",
    "WOULD EVICT",
    "LATER",
]


def render_compact(report: Report) -> str:
    """One line per violation under a header; ``*`` after a verdict: counted without some
    pods (coverage lines below say which)."""
    now = Counter((e.pod.namespace, e.workload.kind, e.workload.name) for e in report.evictions)
    later = Counter((e.pod.namespace, e.workload.kind, e.workload.name) for e in report.deferred)
    rows = [HEADER, *(_row(v, now, later) for v in report.violations)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = (
        ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        if report.violations
        else []
    )
    notes = coverage_text(report.coverage)
    if not report.violations and not notes:
        lines.append("No topology spread violations.")
    lines.extend(notes)
    return "\n".join(lines) + "\n"
