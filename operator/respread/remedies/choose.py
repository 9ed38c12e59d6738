"""Which remedies a policy allows, which apply to a violation, and which is chosen.

Eviction (planner.py) repairs a violation now; deletion-cost ordering (deletion_cost.py)
prevents the next scale-in from making one, and makes a scale-in of a violated Deployment take
the misplaced pods first. With ``spec.remediation.evict: false`` the eviction plan is still
computed (it says whether eviction could fix a violation) but every step is deferred, so
nothing is evicted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from respread.analysis.groups import WorkloadRef
from respread.inputs.policy import RebalancePolicy
from respread.remedies.cost.order import ORDERED_KINDS, CostPlan
from respread.remedies.evict.planner import Outcome, Plan, StepState, Verdict
from respread.remedies.surge.advance import InFlight
from respread.remedies.surge.plan import SurgePlan, SurgeReport

EVICTION_OFF: Final = "spec.remediation.evict is false"
# Whether eviction applies to a violation of each verdict, and why (one verdict: the plan's).
EVICT_BY_VERDICT: Final = {
    Verdict.FIXABLE: (True, "evicting the misplaced pods fixes it"),
    Verdict.PARTLY_FIXABLE: (True, "evicting pods leaves fewer misplaced; it cannot fix it all"),
    Verdict.WAITING: (False, "eviction fixes it once its pods' holds lift (see message)"),
    Verdict.NOT_FIXABLE: (False, "eviction cannot fix it (see message)"),
}
SURGE_HOLDS: Final = "a surge move holds this Deployment (spec.remediation.surge)"


class Remedy(StrEnum):
    EVICT = "Evict"
    DELETION_COST = "DeletionCost"
    SURGE = "Surge"


@dataclass(frozen=True, slots=True)
class RemedyVerdict:
    remedy: Remedy
    enabled: bool  # the policy allows it
    applies: bool  # it can act on this violation
    reason: str


def apply_remediation(plan: Plan, policy: RebalancePolicy) -> Plan:
    """The plan as the policy's remedies allow it: unchanged, or with every eviction deferred."""
    if policy.remediation.evict:
        return plan
    deferred = tuple(
        replace(m, state=StepState.DEFERRED, deferred_by=EVICTION_OFF) for m in plan.moves
    )
    return replace(
        plan,
        moves=(),
        deferred=deferred + plan.deferred,
        outcomes=tuple(replace(o, violating_after_run=o.group.violating) for o in plan.outcomes),
        budgets_used={},
    )


def defer_surged(plan: Plan, busy: frozenset[WorkloadRef]) -> Plan:
    """The plan with no eviction from a workload a surge plans or holds (they are deferred)."""
    if not busy or not any(m.workload in busy for m in plan.moves):
        return plan
    held = tuple(
        replace(m, state=StepState.DEFERRED, deferred_by=SURGE_HOLDS)
        for m in plan.moves
        if m.workload in busy
    )
    return replace(
        plan,
        moves=tuple(m for m in plan.moves if m.workload not in busy),
        deferred=held + plan.deferred,
        outcomes=tuple(
            replace(o, violating_after_run=o.group.violating) if o.group.workload in busy else o
            for o in plan.outcomes
        ),
    )


def eviction_blocked(plan: Plan, evict: bool) -> frozenset[WorkloadRef]:
    """The violated workloads that eviction does not fix: eviction not allowed, or no eviction
    of theirs this run and a group that later runs cannot fix either."""
    if not evict:
        return frozenset(o.group.workload for o in plan.outcomes)
    moving = {m.workload for m in plan.moves}
    return frozenset(
        o.group.workload for o in plan.outcomes if not o.fixable and o.group.workload not in moving
    )


def hold_costs(costs: CostPlan | None, busy: frozenset[WorkloadRef]) -> CostPlan | None:
    """The deletion-cost plan without writes to the pods of workloads a surge holds."""
    if costs is None or not busy:
        return costs
    held = {
        (e.pod.namespace, e.pod.name) for o in costs.orders if o.workload in busy for e in o.pods
    }
    return replace(
        costs, patches=tuple(p for p in costs.patches if (p.pod.namespace, p.pod.name) not in held)
    )


def surge_verdict(
    outcome: Outcome, policy: RebalancePolicy, surge: SurgeReport | None
) -> RemedyVerdict:
    """Surge: applies when a surge is planned or in flight for the violation's Deployment."""
    workload = outcome.group.workload
    enabled = policy.remediation.surge.enabled
    if workload.kind != "Deployment":
        return RemedyVerdict(
            Remedy.SURGE, enabled, False, f"a {workload.kind} is not surged (Deployments only)"
        )
    found = None if surge is None else _surge_of(surge, workload)
    if found is not None:
        applicable, reason = found
        return RemedyVerdict(Remedy.SURGE, enabled, applicable, reason)
    if not enabled:
        return RemedyVerdict(
            Remedy.SURGE, False, False, "not evaluated (spec.remediation.surge.enabled is false)"
        )
    return RemedyVerdict(Remedy.SURGE, True, False, "no surge planned")


def _surge_of(surge: SurgeReport, workload: WorkloadRef) -> tuple[bool, str] | None:
    """What the surge report says of the workload: a surge in flight or planned (applicable),
    or why none is (a skip); None when it says nothing of it."""
    found = surge.said.get(workload)
    if isinstance(found, InFlight):
        op = found.operation
        return True, (
            f"a surge is in flight ({op.phase.value}, {op.original} -> {op.target} replicas)"
        )
    if isinstance(found, SurgePlan):
        return True, f"scaling {found.original} -> {found.original + found.surge} and back fixes it"
    if found is not None:
        return False, found.reason
    return None


def remedies(
    outcome: Outcome, policy: RebalancePolicy, surge: SurgeReport | None = None
) -> tuple[RemedyVerdict, ...]:
    """Each remedy for one violation: allowed, applicable, and why."""
    kind = outcome.group.workload.kind
    evict_applies, evict_reason = EVICT_BY_VERDICT[outcome.verdict]
    cost_applies = kind in ORDERED_KINDS
    return (
        RemedyVerdict(Remedy.EVICT, policy.remediation.evict, evict_applies, evict_reason),
        RemedyVerdict(
            Remedy.DELETION_COST,
            policy.remediation.deletion_cost.enabled,
            cost_applies,
            "the next scale-in removes the misplaced pods first and keeps maxSkew"
            if cost_applies
            else f"a {kind} does not scale in by pod-deletion-cost",
        ),
        surge_verdict(outcome, policy, surge),
    )


def chosen(verdicts: tuple[RemedyVerdict, ...]) -> Remedy | None:
    """A surge that is allowed and applies (it holds the Deployment: no eviction from it);
    else the first remedy, in the order given, that is both allowed and applicable."""
    if any(v.remedy is Remedy.SURGE and v.enabled and v.applies for v in verdicts):
        return Remedy.SURGE
    return next((v.remedy for v in verdicts if v.enabled and v.applies), None)
