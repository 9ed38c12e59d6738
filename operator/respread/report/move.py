"""Would respread move this pod? The answer for one pod (`respread explain`), from the scan's
own plan, with every reason it is not moved now.

The verdict is the plan's: Now (one of this run's evictions), Later (an eviction left for a
later run) or No. The reasons are every one that applies, not only the first the planner met:
the policy's scope and remedies, where the pod sits (a pod the scheduler would place where it
is has nothing to fix), its protections and minPodAge, its budget, the operator's holds, the
cooldown, the caps this run's evictions reach, and where its replacement could land. A reason
that passes with time says when.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from respread.analysis.groups import Analysis, WorkloadRef, namespace_selected, wanted, workload_of
from respread.core.kernel import FilterStatus
from respread.core.model import Pod
from respread.inputs.policy import RebalancePolicy
from respread.remedies.choose import EVICTION_OFF, SURGE_HOLDS
from respread.remedies.evict.planner import Plan
from respread.remedies.evict.steps import Move
from respread.scheduling.budgets import BudgetLedger, BudgetVerdict
from respread.scheduling.explain import Explanation, tables_without
from respread.scheduling.landing import LandingPredictor
from respread.scheduling.safety import protection

# Deferrals that no later run of the eviction planner lifts: the policy's remedies decide.
NEVER = frozenset({EVICTION_OFF, SURGE_HOLDS})


class Verdict(StrEnum):
    NOW = "Now"  # evicted by this run
    LATER = "Later"  # an eviction left for a later run
    NO = "No"


class ReasonKind(StrEnum):
    SCOPE = "Scope"
    PLACEMENT = "Placement"
    REMEDIATION = "Remediation"
    PROTECTION = "Protection"
    MIN_POD_AGE = "MinPodAge"
    BUDGET = "Budget"
    HELD = "Held"
    COOLDOWN = "Cooldown"
    CAP = "Cap"
    NO_LANDING = "NoLanding"
    PLANNER = "Planner"


@dataclass(frozen=True, slots=True)
class Reason:
    kind: ReasonKind
    text: str
    until: float | None = None  # when it stops holding (a Unix time), if it passes with time


@dataclass(frozen=True, slots=True)
class MoveAnswer:
    verdict: Verdict
    reasons: tuple[Reason, ...]
    step: int | None = None  # Now: its place in this run's evictions, from 1
    predicted_node: str | None = None  # Now and Later: where its replacement is predicted


@dataclass(frozen=True, slots=True)
class Context:
    """What the answer is read from: the scan's analysis and plan, and what it held."""

    analysis: Analysis
    plan: Plan
    policy: RebalancePolicy
    now: float
    last_eviction: Mapping[WorkloadRef, float]
    held: Mapping[WorkloadRef, str]


def _scope(pod: Pod, ctx: Context, _: Explanation) -> list[Reason]:
    namespaces = {n.name: n for n in ctx.analysis.index.state.namespaces}
    if not namespace_selected(pod.namespace, ctx.policy, namespaces):
        return [Reason(ReasonKind.SCOPE, f"the policy does not select namespace {pod.namespace}")]
    profile = ctx.analysis.index.profile_of(pod)
    if not any(wanted(c, ctx.policy) for c in profile.constraints):
        return [
            Reason(
                ReasonKind.SCOPE,
                "none of its topology spread constraints is of a kind the policy checks "
                "(spec.constraints.whenUnsatisfiable)",
            )
        ]
    return []


def _placement(pod: Pod, ctx: Context, ex: Explanation) -> list[Reason]:
    own = next((n for n in ex.nodes if n.name == pod.node_name), None)
    if own is None or own.spread_filter is not FilterStatus.SUCCESS:
        return []
    return [
        Reason(
            ReasonKind.PLACEMENT,
            f"it sits where the scheduler would place it again: every spread constraint passes "
            f"on {pod.node_name}",
        )
    ]


def _remediation(pod: Pod, ctx: Context, _: Explanation) -> list[Reason]:
    if ctx.policy.remediation.evict:
        return []
    return [Reason(ReasonKind.REMEDIATION, EVICTION_OFF)]


def _protection(pod: Pod, ctx: Context, _: Explanation) -> list[Reason]:
    out = []
    reason = protection(pod, ctx.policy, None)  # never young without a time: minPodAge below
    if reason:
        out.append(Reason(ReasonKind.PROTECTION, reason))
    min_age = ctx.policy.eviction.min_pod_age
    if pod.created is not None and min_age > 0 and ctx.now - pod.created < min_age:
        out.append(
            Reason(
                ReasonKind.MIN_POD_AGE,
                f"younger than minPodAge ({int(ctx.now - pod.created)}s < {int(min_age)}s)",
                pod.created + min_age,
            )
        )
    return out


def _budget(pod: Pod, ctx: Context, _: Explanation) -> list[Reason]:
    ledger = BudgetLedger(ctx.analysis.index.state.budgets)
    check = ledger.check(pod)
    if check.verdict is BudgetVerdict.BLOCKED:
        lifts = f", {check.lifts_when}" if check.lifts_when else ""
        return [Reason(ReasonKind.BUDGET, check.reason + lifts)]
    for m in ctx.plan.moves:
        if m.pod is not pod:
            ledger.consume(m.pod)
    check = ledger.check(pod)
    if check.verdict is BudgetVerdict.EXHAUSTED:
        return [Reason(ReasonKind.BUDGET, check.reason)]
    return []


def _holds(pod: Pod, ctx: Context, _: Explanation) -> list[Reason]:
    workload = workload_of(pod, ctx.analysis.index)
    out = []
    held = ctx.held.get(workload)
    if held:
        out.append(Reason(ReasonKind.HELD, held))
    last = ctx.last_eviction.get(workload)
    cooldown = ctx.policy.eviction.cooldown
    if last is not None and ctx.now - last < cooldown:
        out.append(
            Reason(
                ReasonKind.COOLDOWN,
                f"cooldown: {workload} had an eviction {int(ctx.now - last)}s ago "
                f"(cooldown {int(cooldown)}s)",
                last + cooldown,
            )
        )
    return out


def _caps(pod: Pod, ctx: Context, _: Explanation) -> list[Reason]:
    """The caps this run's other evictions reach."""
    others = [m for m in ctx.plan.moves if m.pod is not pod]
    ev = ctx.policy.eviction
    workload = workload_of(pod, ctx.analysis.index)
    counted: list[tuple[str, int | None, int]] = [
        ("maxPerRun", ev.max_per_run, len(others)),
        ("maxPerWorkload", ev.max_per_workload, sum(m.workload == workload for m in others)),
        (
            "maxPerNamespace",
            ev.max_per_namespace,
            sum(m.pod.namespace == pod.namespace for m in others),
        ),
        ("maxPerNode", ev.max_per_node, sum(m.from_node == pod.node_name for m in others)),
    ]
    return [
        Reason(ReasonKind.CAP, f"{name} {cap} reached by this run's other evictions")
        for name, cap, n in counted
        if cap is not None and n >= cap
    ]


def _landing(pod: Pod, ctx: Context, _: Explanation) -> list[Reason]:
    """Where its replacement could land, on the cluster as it is (the pod gone)."""
    index = ctx.analysis.index
    profile = index.profile_of(pod)
    tables = tables_without(index, profile, pod)
    chosen = [i for i, c in enumerate(profile.constraints) if wanted(c, ctx.policy)]
    state = index.state
    others = tuple(p for p in state.pods if p is not pod)
    landing = LandingPredictor(state.nodes, others, ctx.policy.eviction.require_fit)
    node, why = landing.land(profile, tuple(tables), chosen, pod)
    if node is None:
        return [Reason(ReasonKind.NO_LANDING, why)]
    if node.name == pod.node_name:
        return [
            Reason(
                ReasonKind.NO_LANDING,
                f"its replacement would land back on {node.name}: no other node passes the "
                "Filter with room for it",
            )
        ]
    return []


CHECKS: tuple[Callable[[Pod, Context, Explanation], list[Reason]], ...] = (
    _scope,
    _placement,
    _remediation,
    _protection,
    _budget,
    _holds,
    _caps,
    _landing,
)


def _in(moves: tuple[Move, ...], pod: Pod) -> tuple[int, Move] | None:
    return next(((i, m) for i, m in enumerate(moves, 1) if m.pod is pod), None)


def _planner(pod: Pod, ctx: Context, found: list[Reason]) -> list[Reason]:
    """What the planner itself said of the pod; the other pods of its workload the plan moves
    instead; or, with no other reason, that no move of it helps."""
    out = []
    skip = next((s for s in ctx.plan.skipped if s.pod is pod), None)
    if skip is not None and not any(r.text == skip.reason for r in found):
        out.append(Reason(ReasonKind.PLANNER, skip.reason))
    workload = workload_of(pod, ctx.analysis.index)
    mine = [
        m
        for m in (*ctx.plan.moves, *ctx.plan.deferred)
        if m.workload == workload and m.pod is not pod and m.deferred_by not in NEVER
    ]
    if mine:
        out.append(
            Reason(
                ReasonKind.PLANNER,
                f"the plan moves {len(mine)} other pod(s) of {workload} instead "
                f"({', '.join(m.pod.name for m in mine[:3])})",
            )
        )
    elif not found and skip is None:
        out.append(
            Reason(
                ReasonKind.PLANNER,
                f"no move of it reduces {workload}'s misplaced pods without making another "
                "group worse",
            )
        )
    return out


def would_move(pod: Pod, ctx: Context, explanation: Explanation) -> MoveAnswer:
    """Whether the scan's plan moves ``pod`` (now, later or not) and every reason it is not
    moved now."""
    reasons = [r for check in CHECKS for r in check(pod, ctx, explanation)]
    now = _in(ctx.plan.moves, pod)
    if now is not None:
        step, move = now
        return MoveAnswer(Verdict.NOW, (), step, move.to_node)
    later = _in(ctx.plan.deferred, pod)
    if later is not None and later[1].deferred_by not in NEVER:
        _, move = later
        deferred = Reason(ReasonKind.PLANNER, f"left for a later run: {move.deferred_by}")
        return MoveAnswer(Verdict.LATER, (deferred, *reasons), None, move.to_node)
    if later is not None and later[1].deferred_by == SURGE_HOLDS:
        reasons.append(Reason(ReasonKind.REMEDIATION, SURGE_HOLDS))
    if any(r.kind in (ReasonKind.SCOPE, ReasonKind.PLACEMENT) for r in reasons):
        # Nothing to fix by moving it: what would limit a move does not matter.
        moot = (
            ReasonKind.CAP,
            ReasonKind.NO_LANDING,
            ReasonKind.BUDGET,
            ReasonKind.HELD,
            ReasonKind.COOLDOWN,
        )
        return MoveAnswer(Verdict.NO, tuple(r for r in reasons if r.kind not in moot))
    return MoveAnswer(Verdict.NO, tuple(reasons + _planner(pod, ctx, reasons)))
