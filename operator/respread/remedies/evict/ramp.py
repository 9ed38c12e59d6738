"""The recovery ramp: after an outage, workloads move back into the domain in steps.

While a domain recovers (analysis/domain_memory.py), a workload with a violated group over it
gets at most ``spec.outages.recovery.maxShare`` percent of its pods (at least one) evicted per
step, one step per ``spec.outages.recovery.interval``; the most misplaced first, as the planner
orders its moves, and within budgets, as every eviction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from respread.analysis.domain_memory import DomainView, over
from respread.analysis.groups import Analysis, WorkloadRef
from respread.inputs.policy import RebalancePolicy
from respread.remedies.evict.planner import Plan
from respread.remedies.evict.steps import StepState


def ramp_holds(
    analysis: Analysis,
    view: DomainView,
    policy: RebalancePolicy,
    last_eviction: Mapping[WorkloadRef, float],
    now: float,
) -> dict[WorkloadRef, str]:
    """Workloads over a recovering domain that had an eviction within the recovery interval:
    held until the interval has passed (one step per interval)."""
    interval = policy.outages.recovery_interval
    out: dict[WorkloadRef, str] = {}
    for key in view.recovering():
        for w in over(analysis.violations, key):
            last = last_eviction.get(w)
            if last is not None and now - last < interval:
                out[w] = (
                    f"recovery ramp after the {key[0]}={key[1]} outage: next step "
                    f"{int(interval - (now - last))}s from now"
                )
    return out


def ramp_plan(plan: Plan, analysis: Analysis, view: DomainView, policy: RebalancePolicy) -> Plan:
    """The plan with at most the policy's share of each recovering workload's pods evicted this
    step: the plan is cut before the first eviction over a share (a prefix of the planned
    sequence, as the caps per run cut it), the rest left for the next steps."""
    caps = _shares(analysis, view, policy.outages.recovery_share)
    if not caps:
        return plan
    taken: dict[WorkloadRef, int] = {}
    for i, move in enumerate(plan.moves):
        cap = caps.get(move.workload)
        if cap is None:
            continue
        taken[move.workload] = taken.get(move.workload, 0) + 1
        if taken[move.workload] > cap:
            why = (
                f"recovery ramp: at most {cap} of {move.workload}'s pods per step "
                f"({policy.outages.recovery_share}% every "
                f"{int(policy.outages.recovery_interval)}s)"
            )
            later = tuple(
                replace(m, state=StepState.DEFERRED, deferred_by=why) for m in plan.moves[i:]
            )
            return replace(plan, moves=plan.moves[:i], deferred=later + plan.deferred)
    return plan


def _shares(analysis: Analysis, view: DomainView, share: int) -> dict[WorkloadRef, int]:
    pods: dict[WorkloadRef, int] = {}
    for m in analysis.members:
        pods[m.workload] = pods.get(m.workload, 0) + m.count
    out = {}
    for key in view.recovering():
        for w in over(analysis.violations, key):
            out[w] = max(1, math.floor(pods.get(w, 0) * share / 100))
    return out
