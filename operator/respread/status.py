"""The RebalancePolicy status: a bounded digest of a report, readable with kubectl.

etcd refuses objects over about 1.5 MiB, so lists hold at most ``report.maxItems`` entries,
worst first, with totals alongside; each string is capped too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from respread.policy import RebalancePolicy

MESSAGE_LIMIT = 1024


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: bool
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Execution:
    """What enforcement did with one planned eviction."""

    namespace: str
    pod: str
    state: str  # Evicted | Blocked | Failed | Deferred
    reason: str


def _cap(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


def violation_key(v: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (v["namespace"], v["workload"]["kind"], v["workload"]["name"], v["topologyKey"])


def _domains_digest(v: Mapping[str, Any]) -> dict[str, Any]:
    domains: Mapping[str, int] = v["domains"]
    if not domains:
        return {"count": v["domainCount"]}
    fullest = max(domains.items(), key=lambda kv: (kv[1], kv[0]))
    emptiest = min(domains.items(), key=lambda kv: (kv[1], kv[0]))
    return {
        "count": v["domainCount"],
        "max": {"name": fullest[0], "pods": fullest[1]},
        "min": {"name": emptiest[0], "pods": emptiest[1]},
    }


def _violation(v: Mapping[str, Any], since: str) -> dict[str, Any]:
    return {
        "namespace": v["namespace"],
        "workload": dict(v["workload"]),
        "topologyKey": v["topologyKey"],
        "maxSkew": v["maxSkew"],
        "minDomains": v["minDomains"],
        "skew": v["skew"],
        "globalMinimum": v["globalMinimum"],
        "domains": _domains_digest(v),
        "pods": v["pods"],
        "violatingPods": v["violatingPods"],
        "cause": v["cause"],
        "causeMessage": _cap(v["causeMessage"]),
        "since": since,
        "fixable": v["fixable"],
        "message": _cap(v["message"]),
    }


def _step(e: Mapping[str, Any], state: str, reason: str) -> dict[str, Any]:
    return {
        "namespace": e["namespace"],
        "pod": e["pod"],
        "node": e["node"],
        "workload": dict(e["workload"]),
        "fromDomain": dict(e["fromDomain"]),
        "toDomain": dict(e["toDomain"]),
        "predictedNode": e["predictedNode"],
        "state": state,
        "reason": _cap(reason),
    }


def _condition(
    c: Condition, now: str, generation: int, previous: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    status = "True" if c.status else "False"
    before = previous.get(c.type)
    changed = before is None or before.get("status") != status
    return {
        "type": c.type,
        "status": status,
        "reason": c.reason,
        "message": _cap(c.message),
        "lastTransitionTime": now if changed else before.get("lastTransitionTime", now),  # type: ignore[union-attr]
        "observedGeneration": generation,
    }


def scan_conditions(report: Mapping[str, Any]) -> list[Condition]:
    s = report["summary"]
    balanced = s["violations"] == 0
    return [
        Condition("Ready", True, "Scanning", "the operator scans on schedule"),
        Condition(
            "ScanSucceeded",
            True,
            "ScanCompleted",
            f"{s['nodes']} nodes, {s['pods']} pods, {s['constraintGroups']} constraint groups",
        ),
        Condition(
            "Balanced",
            balanced,
            "NoViolations" if balanced else "ViolationsFound",
            "every workload within maxSkew"
            if balanced
            else f"{s['violations']} violation(s), {s['unfixable']} not fixable by eviction",
        ),
    ]


def build_status(
    report: Mapping[str, Any],
    policy: RebalancePolicy,
    now: str,
    *,
    previous: Mapping[str, Any] | None = None,
    executions: Sequence[Execution] = (),
    conditions: Sequence[Condition] | None = None,
) -> dict[str, Any]:
    """The status subresource for a completed scan (and, in Enforce mode, its evictions)."""
    previous = previous or {}
    limit = policy.report_max_items
    seen_since = {
        violation_key(v): v.get("since", now)
        for v in previous.get("violations", ())
        if isinstance(v, Mapping) and "workload" in v
    }
    violations = [
        _violation(v, seen_since.get(violation_key(v), now)) for v in report["violations"]
    ]

    done = {(x.namespace, x.pod): x for x in executions}
    steps = []
    for e in report["evictions"]:
        x = done.get((e["namespace"], e["pod"]))
        if x is None:
            steps.append(_step(e, "Planned", e["reason"]))
        else:
            steps.append(_step(e, x.state, x.reason))
    steps.extend(_step(e, "Deferred", e.get("deferredBy", "")) for e in report["deferred"])
    evicted = sum(1 for x in executions if x.state == "Evicted")
    failed = sum(1 for x in executions if x.state == "Failed")
    blocked = sum(1 for x in executions if x.state == "Blocked")

    previous_conditions = {
        c["type"]: c
        for c in previous.get("conditions", ())
        if isinstance(c, Mapping) and "type" in c
    }
    summary = dict(report["summary"])
    summary.update(evicted=evicted, failed=failed, blocked=summary["blocked"] + blocked)
    return {
        "observedGeneration": policy.generation,
        "lastScanTime": now,
        "conditions": [
            _condition(c, now, policy.generation, previous_conditions)
            for c in (conditions if conditions is not None else scan_conditions(report))
        ],
        "summary": summary,
        "violations": violations[:limit],
        "violationsTotal": len(violations),
        "plan": steps[:limit],
        "planTotal": len(steps),
    }


def failed_scan_status(
    policy: RebalancePolicy, now: str, error: str, previous: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A patch reporting a failed scan; the last good report stays in place."""
    previous = previous or {}
    previous_conditions = {
        c["type"]: c
        for c in previous.get("conditions", ())
        if isinstance(c, Mapping) and "type" in c
    }
    conditions = [
        Condition("Ready", True, "Scanning", "the operator is running; the last scan failed"),
        Condition("ScanSucceeded", False, "ScanFailed", error),
    ]
    kept = [dict(c) for t, c in previous_conditions.items() if t not in ("Ready", "ScanSucceeded")]
    return {
        "observedGeneration": policy.generation,
        "conditions": [
            _condition(c, now, policy.generation, previous_conditions) for c in conditions
        ]
        + kept,
    }
