"""The RebalancePolicy status: a bounded digest of a report, readable with kubectl.

etcd refuses objects over about 1.5 MiB, so lists hold at most ``report.maxItems`` entries,
worst first, with totals alongside; each string is capped too.

The status is also what a restarted (or newly elected) operator remembers: the causes and
``since`` of the ongoing violations, and in ``cooldowns`` the workloads respread evicted from
recently (cooldown, loop protection and back-off). ``remembered`` reads that back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from respread.inputs.policy import RebalancePolicy

MESSAGE_LIMIT = 1024
COOLDOWNS_LIMIT = 500  # status.cooldowns entries (the CRD's maxItems), most recent first
REVIEWS_LIMIT = 8  # per workload: the constraints whose skew an eviction should have reduced


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
    entry = {
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
    if v.get("remedy"):
        entry["remedy"] = v["remedy"]
    return entry


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
    cooldowns: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The status subresource for a completed scan (and, in Enforce mode, its evictions);
    `cooldowns` (from `cooldowns_status`) is written when given."""
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
    status: dict[str, Any] = {
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
    if cooldowns is not None:
        status["cooldowns"] = [dict(c) for c in cooldowns]
    surges = surge_digest(report)
    if surges:
        status["surges"] = surges[:limit]
    return status


def surge_digest(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Surge moves in flight, planned and skipped (report.surge), one line each."""
    section = report.get("surge") or {}
    out: list[dict[str, Any]] = []
    for op in section.get("operations") or ():
        out.append(
            {
                "namespace": op["namespace"],
                "workload": dict(op["workload"]),
                "state": op["phase"],
                "replicas": op["originalReplicas"],
                "targetReplicas": op["targetReplicas"],
                "reason": _cap(f"next: {op['next']['action']} ({op['next']['reason']})"),
            }
        )
    for p in section.get("plans") or ():
        out.append(
            {
                "namespace": p["namespace"],
                "workload": dict(p["workload"]),
                "state": "Planned",
                "replicas": p["replicas"],
                "targetReplicas": p["targetReplicas"],
                "reason": _cap(" / ".join(p["steps"][:1])),
            }
        )
    for sk in section.get("skipped") or ():
        out.append(
            {
                "namespace": sk["namespace"],
                "workload": dict(sk["workload"]),
                "state": "Skipped",
                "reason": _cap(sk["reason"]),
            }
        )
    return out


def failed_scan_status(
    policy: RebalancePolicy,
    now: str,
    error: str,
    previous: Mapping[str, Any] | None = None,
    extra: Sequence[Condition] = (),
) -> dict[str, Any]:
    """A patch reporting a failed scan; the last good report stays in place. `extra`: other
    conditions this failure sets (report/health.py)."""
    previous = previous or {}
    previous_conditions = {
        c["type"]: c
        for c in previous.get("conditions", ())
        if isinstance(c, Mapping) and "type" in c
    }
    conditions = [
        Condition("Ready", True, "Scanning", "the operator is running; the last scan failed"),
        Condition("ScanSucceeded", False, "ScanFailed", error),
        *extra,
    ]
    written = {c.type for c in conditions}
    kept = [dict(c) for t, c in previous_conditions.items() if t not in written]
    return {
        "observedGeneration": policy.generation,
        "conditions": [
            _condition(c, now, policy.generation, previous_conditions) for c in conditions
        ]
        + kept,
    }


# ---- what a restarted operator remembers -------------------------------------------------


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: object) -> float | None:
    """An RFC 3339 time as a Unix time; None if it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


@dataclass(frozen=True, slots=True)
class WorkloadHistory:
    """What the operator keeps about one workload it evicted from."""

    namespace: str
    kind: str
    name: str
    last_eviction: float | None = None  # Unix time; the cooldown runs from here
    reviews: tuple[tuple[str, int], ...] = ()  # (topologyKey, skew at the eviction) to check
    backoff_level: int = 0
    backoff_until: float | None = None  # Unix time


@dataclass(frozen=True, slots=True)
class Remembered:
    """The operator's memory of one policy, as read back from its status."""

    causes: dict[tuple[str, str, str, str], tuple[str, str]] = field(default_factory=dict)
    workloads: tuple[WorkloadHistory, ...] = ()


def cooldowns_status(
    workloads: Iterable[WorkloadHistory], now: float, cooldown: float
) -> list[dict[str, Any]]:
    """`status.cooldowns`: the workloads whose history still matters (in cooldown, an eviction
    still to be judged by loop protection, or backed off), most recent eviction first, at most
    COOLDOWNS_LIMIT."""
    kept = [
        w
        for w in workloads
        if (w.last_eviction is not None and now - w.last_eviction < cooldown)
        or w.reviews
        or w.backoff_level > 0
        or (w.backoff_until is not None and w.backoff_until > now)
    ]
    kept.sort(key=lambda w: (-(w.last_eviction or 0.0), w.namespace, w.kind, w.name))
    out = []
    for w in kept[:COOLDOWNS_LIMIT]:
        entry: dict[str, Any] = {
            "namespace": w.namespace,
            "workload": {"kind": w.kind, "name": w.name},
            "backoffLevel": w.backoff_level,
        }
        if w.last_eviction is not None:
            entry["lastEvictionTime"] = rfc3339(w.last_eviction)
        if w.backoff_until is not None and w.backoff_until > now:
            entry["backoffUntil"] = rfc3339(w.backoff_until)
        if w.reviews:
            entry["pendingReview"] = [
                {"topologyKey": key, "skewAtEviction": skew}
                for key, skew in sorted(w.reviews)[:REVIEWS_LIMIT]
            ]
        out.append(entry)
    return out


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _items(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _history(entry: object) -> WorkloadHistory | None:
    if not isinstance(entry, Mapping):
        return None
    workload = entry.get("workload")
    namespace = _str(entry.get("namespace"))
    if not isinstance(workload, Mapping) or namespace is None:
        return None
    kind, name = _str(workload.get("kind")), _str(workload.get("name"))
    if kind is None or name is None:
        return None
    reviews = []
    for r in _items(entry.get("pendingReview")):
        if isinstance(r, Mapping) and _str(r.get("topologyKey")) is not None:
            skew = r.get("skewAtEviction")
            if isinstance(skew, int) and not isinstance(skew, bool):
                reviews.append((str(r["topologyKey"]), skew))
    return WorkloadHistory(
        namespace,
        kind,
        name,
        last_eviction=parse_time(entry.get("lastEvictionTime")),
        reviews=tuple(reviews),
        backoff_level=_count(entry.get("backoffLevel")),
        backoff_until=parse_time(entry.get("backoffUntil")),
    )


def remembered(status: Mapping[str, Any] | None) -> Remembered:
    """Read back what a status says the operator knew: each listed violation's cause (an ongoing
    violation keeps the cause it was first given), and each workload's eviction history.
    Malformed entries are left out: the status is the operator's own, but anyone with access to
    the status subresource may have edited it."""
    status = status or {}
    causes = {}
    for v in _items(status.get("violations")):
        try:
            key = violation_key(v)
        except (KeyError, TypeError):
            continue
        cause = _str(v.get("cause"))
        if cause is not None and all(isinstance(k, str) for k in key):
            causes[key] = (
                cause,
                v.get("causeMessage") if isinstance(v.get("causeMessage"), str) else "",
            )
    workloads = tuple(
        w for w in (_history(e) for e in _items(status.get("cooldowns"))) if w is not None
    )
    return Remembered(causes, workloads)
