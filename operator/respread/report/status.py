"""The RebalancePolicy status: a bounded digest of a report, readable with kubectl.

etcd refuses objects over about 1.5 MiB, so lists hold at most ``report.maxItems`` entries,
worst first, with totals alongside; each string is capped too.

The status is also what a restarted (or newly elected) operator remembers: the causes and
``since`` of the ongoing violations, and in ``cooldowns`` the workloads respread evicted from
recently (cooldown, loop protection and back-off). ``remembered`` reads that back from the
stored object (JSON: anyone with access to the status subresource may have edited it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeGuard

from respread.analysis.causes import Cause
from respread.analysis.groups import WorkloadRef
from respread.inputs.policy import RebalancePolicy
from respread.remedies.cost.release import CostCounts
from respread.report.model import (
    Condition,
    ConditionsStatus,
    ConditionStatus,
    ConditionType,
    Cooldown,
    DeletionCostStatus,
    DomainPods,
    DomainsDigest,
    Eviction,
    Execution,
    Overlapping,
    PlanStep,
    Report,
    Status,
    StatusCondition,
    StatusSummary,
    StatusViolation,
    StepStatus,
    SurgeDigest,
    SurgeState,
    Violation,
    ViolationKey,
)

MESSAGE_LIMIT = 1024
COOLDOWNS_LIMIT = 500  # status.cooldowns entries (the CRD's maxItems), most recent first
REVIEWS_LIMIT = 8  # per workload: the constraints whose skew an eviction should have reduced


def _cap(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


def _domains_digest(v: Violation) -> DomainsDigest:
    if not v.domains:
        return DomainsDigest(v.domain_count)
    fullest = max(v.domains, key=lambda kv: (kv[1], kv[0]))
    emptiest = min(v.domains, key=lambda kv: (kv[1], kv[0]))
    return DomainsDigest(v.domain_count, DomainPods(*fullest), DomainPods(*emptiest))


def _violation(v: Violation, since: str) -> StatusViolation:
    return StatusViolation(
        workload=v.workload,
        topology_key=v.topology_key,
        max_skew=v.max_skew,
        min_domains=v.min_domains,
        skew=v.skew,
        global_minimum=v.global_minimum,
        domains=_domains_digest(v),
        pods=v.pods,
        violating_pods=v.violating_pods,
        cause=v.cause,
        cause_message=_cap(v.cause_message),
        since=since,
        fixable=v.fixable,
        message=_cap(v.message),
        remedy=v.remedy,
    )


def _step(e: Eviction, state: StepStatus, reason: str) -> PlanStep:
    return PlanStep(
        namespace=e.namespace,
        pod=e.pod,
        node=e.node,
        workload=e.workload,
        from_domain=e.from_domain,
        to_domain=e.to_domain,
        predicted_node=e.predicted_node,
        state=state,
        reason=_cap(reason),
    )


def _plan(report: Report, executions: Sequence[Execution]) -> list[PlanStep]:
    done = {(x.namespace, x.pod): x for x in executions}
    steps = []
    for e in report.evictions:
        x = done.get((e.namespace, e.pod))
        if x is None:
            steps.append(_step(e, StepStatus.PLANNED, e.reason))
        else:
            steps.append(_step(e, x.state, x.reason))
    steps.extend(_step(e, StepStatus.DEFERRED, e.deferred_by) for e in report.deferred)
    return steps


def _summary(report: Report, executions: Sequence[Execution]) -> StatusSummary:
    s = report.summary
    states = [x.state for x in executions]
    return StatusSummary(
        nodes=s.nodes,
        pods=s.pods,
        constraint_groups=s.constraint_groups,
        violations=s.violations,
        unfixable=s.unfixable,
        planned_evictions=s.planned_evictions,
        deferred_evictions=s.deferred_evictions,
        blocked=s.blocked + states.count(StepStatus.BLOCKED),
        skipped=s.skipped,
        evicted=states.count(StepStatus.EVICTED),
        failed=states.count(StepStatus.FAILED),
    )


# ---- conditions ---------------------------------------------------------------------------


def _stored_conditions(previous: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The conditions of a stored status, by type."""
    return {
        c["type"]: c
        for c in previous.get("conditions", ())
        if isinstance(c, Mapping) and isinstance(c.get("type"), str)
    }


def _condition(
    c: Condition, now: str, generation: int, previous: Mapping[str, Mapping[str, Any]]
) -> StatusCondition:
    status = ConditionStatus.TRUE if c.status else ConditionStatus.FALSE
    before = previous.get(c.type)
    since = now
    if before is not None and before.get("status") == status.value:  # no transition
        stored = before.get("lastTransitionTime")
        since = stored if isinstance(stored, str) and stored else now
    return StatusCondition(
        type=c.type,
        status=status,
        reason=c.reason,
        message=_cap(c.message),
        last_transition_time=since,
        observed_generation=generation,
    )


def _read_condition(c: Mapping[str, Any]) -> StatusCondition | None:
    """A condition read back from a stored status (None: not one the schema admits)."""
    try:
        status = ConditionStatus(str(c.get("status")))
    except ValueError:
        return None
    generation = c.get("observedGeneration")
    return StatusCondition(
        type=str(c["type"]),
        status=status,
        reason=_str(c.get("reason")),
        message=_str(c.get("message")),
        last_transition_time=_str(c.get("lastTransitionTime")),
        observed_generation=generation if _is_int(generation) else None,
    )


def scan_conditions(report: Report) -> list[Condition]:
    s = report.summary
    balanced = s.violations == 0
    return [
        Condition(ConditionType.READY, True, "Scanning", "the operator scans on schedule"),
        Condition(
            ConditionType.SCAN_SUCCEEDED,
            True,
            "ScanCompleted",
            f"{s.nodes} nodes, {s.pods} pods, {s.constraint_groups} constraint groups",
        ),
        Condition(
            ConditionType.BALANCED,
            balanced,
            "NoViolations" if balanced else "ViolationsFound",
            "every workload within maxSkew"
            if balanced
            else f"{s.violations} violation(s), {s.unfixable} not fixable by eviction",
        ),
    ]


# ---- the status of a scan -----------------------------------------------------------------


def stored_violation_key(v: Mapping[str, Any]) -> ViolationKey:
    """The key of a violation in a stored status (KeyError, TypeError: not a violation)."""
    return (v["namespace"], v["workload"]["kind"], v["workload"]["name"], v["topologyKey"])


def _seen_since(previous: Mapping[str, Any], now: str) -> dict[ViolationKey, str]:
    """When each violation of a stored status was first seen."""
    out: dict[ViolationKey, str] = {}
    for v in _items(previous.get("violations")):
        try:
            key = stored_violation_key(v)
        except (KeyError, TypeError):
            continue
        since = v.get("since")
        out[key] = since if isinstance(since, str) else now
    return out


def build_status(
    report: Report,
    policy: RebalancePolicy,
    now: str,
    *,
    previous: Mapping[str, Any] | None = None,
    executions: Sequence[Execution] = (),
    conditions: Sequence[Condition] | None = None,
    cooldowns: Sequence[Cooldown] | None = None,
    deletion_cost: DeletionCostStatus | None = None,
) -> Status:
    """The status for a completed scan (and, in Enforce mode, its evictions). ``previous`` is
    the status as stored (JSON); ``cooldowns`` (from `cooldowns_status`) is written when
    given, ``deletion_cost`` (from `deletion_cost_status`) too."""
    previous = previous or {}
    limit = policy.report_max_items
    seen = _seen_since(previous, now)
    stored_conditions = _stored_conditions(previous)
    steps = _plan(report, executions)
    return Status(
        observed_generation=policy.generation,
        last_scan_time=now,
        conditions=tuple(
            _condition(c, now, policy.generation, stored_conditions)
            for c in (conditions if conditions is not None else scan_conditions(report))
        ),
        summary=_summary(report, executions),
        violations=tuple(_violation(v, seen.get(v.key, now)) for v in report.violations[:limit]),
        violations_total=len(report.violations),
        plan=tuple(steps[:limit]),
        plan_total=len(steps),
        cooldowns=tuple(cooldowns) if cooldowns is not None else None,
        surges=tuple(surge_digest(report)[:limit]),
        deletion_cost=deletion_cost,
    )


def surge_digest(report: Report) -> list[SurgeDigest]:
    """Surge moves in flight, planned and skipped (report.surge), one line each."""
    section = report.surge
    out = [
        SurgeDigest(
            op.workload,
            SurgeState.of(op.phase),
            _cap(f"next: {op.next.action.value} ({op.next.reason})"),
            op.original_replicas,
            op.target_replicas,
        )
        for op in section.operations
    ]
    out.extend(
        SurgeDigest(
            p.workload,
            SurgeState.PLANNED,
            _cap(" / ".join(p.steps[:1])),
            p.replicas,
            p.target_replicas,
        )
        for p in section.plans
    )
    out.extend(
        SurgeDigest(sk.workload, SurgeState.SKIPPED, _cap(sk.reason)) for sk in section.skipped
    )
    return out


def failed_scan_status(
    policy: RebalancePolicy, now: str, error: str, previous: Mapping[str, Any] | None = None
) -> ConditionsStatus:
    """A status reporting a failed scan; the last good report stays in place."""
    stored = _stored_conditions(previous or {})
    conditions = [
        Condition(
            ConditionType.READY, True, "Scanning", "the operator is running; the last scan failed"
        ),
        Condition(ConditionType.SCAN_SUCCEEDED, False, "ScanFailed", error),
    ]
    ours = {c.type for c in conditions}
    kept = [_read_condition(c) for t, c in stored.items() if t not in ours]
    return ConditionsStatus(
        observed_generation=policy.generation,
        conditions=tuple(_condition(c, now, policy.generation, stored) for c in conditions)
        + tuple(c for c in kept if c is not None),
    )


def deletion_cost_status(counts: CostCounts) -> DeletionCostStatus:
    """`status.deletionCost`: what the last scan (or deletion pass) wrote and took back."""
    return DeletionCostStatus(
        written=counts.written,
        removed=counts.removed,
        handed_over=counts.handed_over,
        conflicts=counts.conflicts,
        overlaps=counts.overlaps,
        overlapping=tuple(Overlapping(*o) for o in counts.overlapping),
        skipped=counts.skipped,
        failed=counts.failed,
        left_for_later_scans=counts.left,
        managed=counts.managed,
    )


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

    causes: dict[ViolationKey, tuple[Cause, str]] = field(default_factory=dict)
    workloads: tuple[WorkloadHistory, ...] = ()


def _matters(w: WorkloadHistory, now: float, cooldown: float) -> bool:
    return (
        (w.last_eviction is not None and now - w.last_eviction < cooldown)
        or bool(w.reviews)
        or w.backoff_level > 0
        or (w.backoff_until is not None and w.backoff_until > now)
    )


def _cooldown(w: WorkloadHistory, now: float) -> Cooldown:
    return Cooldown(
        workload=WorkloadRef(w.namespace, w.kind, w.name),
        backoff_level=w.backoff_level,
        last_eviction_time=rfc3339(w.last_eviction) if w.last_eviction is not None else None,
        backoff_until=(
            rfc3339(w.backoff_until)
            if w.backoff_until is not None and w.backoff_until > now
            else None
        ),
        pending_review=tuple(sorted(w.reviews)[:REVIEWS_LIMIT]),
    )


def cooldowns_status(
    workloads: Iterable[WorkloadHistory], now: float, cooldown: float
) -> list[Cooldown]:
    """`status.cooldowns`: the workloads whose history still matters (in cooldown, an eviction
    still to be judged by loop protection, or backed off), most recent eviction first, at most
    COOLDOWNS_LIMIT."""
    kept = [w for w in workloads if _matters(w, now, cooldown)]
    kept.sort(key=lambda w: (-(w.last_eviction or 0.0), w.namespace, w.kind, w.name))
    return [_cooldown(w, now) for w in kept[:COOLDOWNS_LIMIT]]


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _items(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _reviews(entry: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    reviews = []
    for r in _items(entry.get("pendingReview")):
        if isinstance(r, Mapping) and _str(r.get("topologyKey")) is not None:
            skew = r.get("skewAtEviction")
            if _is_int(skew):
                reviews.append((str(r["topologyKey"]), skew))
    return tuple(reviews)


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
    return WorkloadHistory(
        namespace,
        kind,
        name,
        last_eviction=parse_time(entry.get("lastEvictionTime")),
        reviews=_reviews(entry),
        backoff_level=_count(entry.get("backoffLevel")),
        backoff_until=parse_time(entry.get("backoffUntil")),
    )


def _cause(v: Mapping[str, Any]) -> tuple[Cause, str] | None:
    try:
        cause = Cause(str(v.get("cause")))
    except ValueError:
        return None
    message = v.get("causeMessage")
    return cause, message if isinstance(message, str) else ""


def remembered(status: Mapping[str, Any] | None) -> Remembered:
    """Read back what a status says the operator knew: each listed violation's cause (an ongoing
    violation keeps the cause it was first given), and each workload's eviction history.
    Malformed entries are left out: the status is the operator's own, but anyone with access to
    the status subresource may have edited it."""
    status = status or {}
    causes = {}
    for v in _items(status.get("violations")):
        try:
            key = stored_violation_key(v)
        except (KeyError, TypeError):
            continue
        cause = _cause(v)
        if cause is not None and all(isinstance(k, str) for k in key):
            causes[key] = cause
    workloads = tuple(
        w for w in (_history(e) for e in _items(status.get("cooldowns"))) if w is not None
    )
    return Remembered(causes, workloads)
