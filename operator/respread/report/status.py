"""The RebalancePolicy status: a bounded digest of a report, readable with kubectl.

etcd refuses objects over about 1.5 MiB, so lists hold at most ``report.maxItems`` entries,
worst first, with totals alongside; each string is capped too.

The status is also what a restarted (or newly elected) operator remembers: the causes and
``since`` of the ongoing violations, and in ``cooldowns`` the workloads respread evicted from
recently (cooldown, loop protection and back-off); report/stored.py reads that back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from respread.analysis.domain_memory import DomainView
from respread.analysis.groups import WorkloadRef
from respread.analysis.pending import PendingPod
from respread.core.timestamps import format_rfc3339
from respread.inputs.policy import RebalancePolicy
from respread.remedies.cost.release import CostCounts
from respread.remedies.evict.steps import Move
from respread.report import stored
from respread.report.model import (
    Condition,
    ConditionsStatus,
    ConditionStatus,
    ConditionType,
    Cooldown,
    CoverageSection,
    DomainPods,
    DomainsDigest,
    Execution,
    PlanStep,
    Report,
    Status,
    StatusCondition,
    StatusPending,
    StatusSummary,
    StatusViolation,
    StepStatus,
    SurgeDigest,
    SurgeState,
    Violation,
    WorkloadHistory,
)
from respread.report.text import verdicts_text

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
    capped = replace(v, cause_message=_cap(v.cause_message), message=_cap(v.message))
    return StatusViolation(capped, _domains_digest(v), since)


def _step(e: Move, state: StepStatus, reason: str) -> PlanStep:
    return PlanStep(e, state, _cap(reason))


def _plan(report: Report, executions: Sequence[Execution]) -> list[PlanStep]:
    done = {(x.namespace, x.pod): x for x in executions}
    steps = []
    for e in report.evictions:
        x = done.get((e.pod.namespace, e.pod.name))
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
        counts=replace(s, blocked=s.blocked + states.count(StepStatus.BLOCKED)),
        evicted=states.count(StepStatus.EVICTED),
        failed=states.count(StepStatus.FAILED),
    )


def _pending(p: PendingPod) -> StatusPending:
    return StatusPending(p, _cap(p.message), _cap(p.unblock[0].message) if p.unblock else "")


# ---- conditions ---------------------------------------------------------------------------


def _condition(
    c: Condition, now: str, generation: int, previous: Mapping[str, StatusCondition]
) -> StatusCondition:
    status = (
        ConditionStatus.UNKNOWN
        if c.status is None
        else ConditionStatus.TRUE
        if c.status
        else ConditionStatus.FALSE
    )
    before = previous.get(c.type)
    since = now
    if before is not None and before.status is status:  # no transition
        since = before.last_transition_time or now
    return StatusCondition(
        type=c.type,
        status=status,
        reason=c.reason,
        message=_cap(c.message),
        last_transition_time=since,
        observed_generation=generation,
    )


def scan_conditions(report: Report) -> list[Condition]:
    s = report.summary
    return [
        Condition(ConditionType.READY, True, "Scanning", "the operator scans on schedule"),
        Condition(
            ConditionType.SCAN_SUCCEEDED,
            True,
            "ScanCompleted",
            f"{s.nodes} nodes, {s.pods} pods, {s.constraint_groups} constraint groups",
        ),
        _balanced(report),
        _input_complete(report.coverage),
        _pods_selected(report.coverage),
    ]


def _balanced(report: Report) -> Condition:
    """True only when the scan can vouch for it: nothing violated, every pod counted and the
    policy selecting pods; Unknown when an empty selection or incomplete input leaves it open."""
    s, c = report.summary, report.coverage
    if s.violations:
        return Condition(
            ConditionType.BALANCED,
            False,
            "ViolationsFound",
            verdicts_text(s),
        )
    if c.nothing_selected:
        return Condition(
            ConditionType.BALANCED,
            None,
            "NothingSelected",
            f"the policy selects no pod: {c.nothing_selected}",
        )
    if not c.complete:
        return Condition(
            ConditionType.BALANCED,
            None,
            "IncompleteInput",
            f"no violation found, but {len(c.incomplete_groups)} constraint group(s) were "
            f"counted without {len(c.pods_on_unknown_nodes)} pod(s) on nodes the scan does not "
            "know",
        )
    return Condition(ConditionType.BALANCED, True, "NoViolations", "every workload within maxSkew")


def _input_complete(c: CoverageSection) -> Condition:
    if c.complete:
        return Condition(
            ConditionType.INPUT_COMPLETE,
            True,
            "AllPodsOnKnownNodes",
            "every pod is on a node the scan knows",
        )
    shown = ", ".join(f"{p.namespace}/{p.pod} on {p.node}" for p in c.pods_on_unknown_nodes[:3])
    more = len(c.pods_on_unknown_nodes) - 3
    return Condition(
        ConditionType.INPUT_COMPLETE,
        False,
        "PodsOnUnknownNodes",
        f"{len(c.pods_on_unknown_nodes)} pod(s) bound to nodes the scan does not know ({shown}"
        f"{f' and {more} more' if more > 0 else ''}), left out of the counts of "
        f"{len(c.incomplete_groups)} constraint group(s)",
    )


def _pods_selected(c: CoverageSection) -> Condition:
    if c.nothing_selected:
        return Condition(ConditionType.PODS_SELECTED, False, "NothingSelected", c.nothing_selected)
    if c.matching_pod_selector == 0:
        return Condition(
            ConditionType.PODS_SELECTED,
            False,
            "PodSelectorMatchesNothing",
            f"spec.selector.podSelector matches none of the {c.pods_selected} pod(s) in the "
            "selected namespaces: nothing may be evicted",
        )
    missing = ""
    if c.missing_namespaces:
        missing = (
            "; namespace(s) selected by name (spec.selector.namespaces.include) do not exist: "
            + ", ".join(c.missing_namespaces)
        )
    return Condition(
        ConditionType.PODS_SELECTED,
        True,
        "PodsSelected",
        f"{c.pods_selected} pod(s) in the selected namespaces{missing}",
    )


# ---- the status of a scan -----------------------------------------------------------------


def build_status(
    report: Report,
    policy: RebalancePolicy,
    now: str,
    *,
    previous: Mapping[str, Any] | None = None,
    executions: Sequence[Execution] = (),
    conditions: Sequence[Condition] | None = None,
    cooldowns: Sequence[Cooldown] | None = None,
    deletion_cost: CostCounts | None = None,
) -> Status:
    """The status for a completed scan (and, in Enforce mode, its evictions). ``previous`` is
    the status as stored (JSON); ``cooldowns`` (from `cooldowns_status`) is written when
    given, ``deletion_cost`` (the deletion-cost counts) too."""
    limit = policy.report_max_items
    seen = stored.first_seen(previous)
    before = stored.conditions(previous)
    steps = _plan(report, executions)
    summary = _summary(report, executions)
    return Status(
        observed_generation=policy.generation,
        last_scan_time=now,
        conditions=tuple(
            _condition(c, now, policy.generation, before)
            for c in (conditions if conditions is not None else scan_conditions(report))
        ),
        summary=summary,
        violations=tuple(_violation(v, seen.get(v.key, now)) for v in report.violations[:limit]),
        violations_total=len(report.violations),
        plan=tuple(steps[:limit]),
        plan_total=len(steps),
        cooldowns=tuple(cooldowns) if cooldowns is not None else None,
        surges=tuple(surge_digest(report)[:limit]),
        deletion_cost=deletion_cost,
        evicted_total=stored.evicted_total(previous) + summary.evicted,
        next_eviction_time=next_eviction(report, cooldowns or (), policy.eviction.cooldown, now),
        pending=tuple(_pending(p) for p in report.pending[:limit]),
        pending_total=len(report.pending),
        outages=report.outages[:limit],
        domains=DomainView(
            report.domains.lost[:limit], report.domains.returned[:limit], report.domains.phases
        ),
    )


def next_eviction(
    report: Report, cooldowns: Sequence[Cooldown], cooldown: float, now: str
) -> str | None:
    """When the first eviction left for later by a cooldown or a back-off is due: the earliest,
    over the workloads with deferred evictions, of the end of their cooldown (or back-off).
    None when no deferred eviction waits for one."""
    waiting = {e.workload for e in report.deferred}
    start = stored.parse_time(now)
    due = []
    for c in cooldowns:
        if c.workload not in waiting:
            continue
        last = stored.parse_time(c.last_eviction_time)
        until = [last + cooldown] if last is not None else []
        backoff = stored.parse_time(c.backoff_until)
        until += [backoff] if backoff is not None else []
        if until and (start is None or max(until) > start):
            due.append(max(until))
    return format_rfc3339(min(due)) if due else None


def surge_digest(report: Report) -> list[SurgeDigest]:
    """Surge moves in flight, planned and skipped (report.surge), one line each."""
    section = report.surge
    out = [
        SurgeDigest(
            f.workload,
            SurgeState.of(f.operation.phase),
            _cap(f"next: {f.action.kind.value} ({f.action.reason})"),
            f.operation.original,
            f.operation.target,
        )
        for f in section.operations
    ]
    out.extend(
        SurgeDigest(
            p.plan.workload,
            SurgeState.PLANNED,
            _cap(" / ".join(p.steps[:1])),
            p.plan.original,
            p.plan.target,
        )
        for p in section.plans
    )
    out.extend(
        SurgeDigest(sk.workload, SurgeState.SKIPPED, _cap(sk.reason)) for sk in section.skipped
    )
    return out


def failed_scan_status(
    policy: RebalancePolicy,
    now: str,
    error: str,
    previous: Mapping[str, Any] | None = None,
    extra: Sequence[Condition] = (),
) -> ConditionsStatus:
    """A status reporting a failed scan; the last good report stays in place. `extra`: other
    conditions this failure sets (report/health.py)."""
    before = stored.conditions(previous)
    conditions = [
        Condition(
            ConditionType.READY, True, "Scanning", "the operator is running; the last scan failed"
        ),
        Condition(ConditionType.SCAN_SUCCEEDED, False, "ScanFailed", error),
        *extra,
    ]
    ours = {c.type for c in conditions}
    kept = tuple(c for t, c in before.items() if t not in ours)
    return ConditionsStatus(
        observed_generation=policy.generation,
        conditions=tuple(_condition(c, now, policy.generation, before) for c in conditions) + kept,
    )


# ---- what a restarted operator remembers -------------------------------------------------


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
        last_eviction_time=format_rfc3339(w.last_eviction) if w.last_eviction is not None else None,
        backoff_until=(
            format_rfc3339(w.backoff_until)
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
