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

from respread.deletion_cost import ORDERED_KINDS
from respread.planner import Outcome, Plan, StepState
from respread.policy import RebalancePolicy

EVICTION_OFF: Final = "spec.remediation.evict is false"


class Remedy(StrEnum):
    EVICT = "Evict"
    DELETION_COST = "DeletionCost"


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


def remedies(outcome: Outcome, policy: RebalancePolicy) -> tuple[RemedyVerdict, ...]:
    """Each remedy for one violation: allowed, applicable, and why."""
    kind = outcome.group.workload.kind
    evict_applies = outcome.fixable
    cost_applies = kind in ORDERED_KINDS
    return (
        RemedyVerdict(
            Remedy.EVICT,
            policy.remediation.evict,
            evict_applies,
            "evicting the misplaced pods fixes it"
            if evict_applies
            else "eviction cannot fix it (see message)",
        ),
        RemedyVerdict(
            Remedy.DELETION_COST,
            policy.remediation.deletion_cost.enabled,
            cost_applies,
            "the next scale-in removes the misplaced pods first and keeps maxSkew"
            if cost_applies
            else f"a {kind} does not scale in by pod-deletion-cost",
        ),
    )


def chosen(verdicts: tuple[RemedyVerdict, ...]) -> Remedy | None:
    """The first remedy, in the order given, that is both allowed and applicable."""
    return next((v.remedy for v in verdicts if v.enabled and v.applies), None)
