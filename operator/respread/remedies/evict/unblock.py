"""Evictions that unblock pods held Pending by spread (analysis/pending.py), added to the plan.

A pending pod whose way out is a move respread can plan (another pod's eviction from a full node
of a domain the spread admits it into, its replacement predicted elsewhere) gets that eviction
appended to the plan, so Enforce makes it: within maxPerRun (after the rebalancing evictions),
outside the victim's workload cooldown and holds, within budgets (counting the plan's own
evictions), and once per victim however many pending pods it would unblock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from respread.analysis.groups import Analysis, WorkloadRef, workload_of
from respread.analysis.pending import PendingPod, UnblockKind
from respread.inputs.policy import RebalancePolicy
from respread.remedies.evict.planner import Plan
from respread.remedies.evict.steps import Move
from respread.scheduling.budgets import BudgetLedger, BudgetVerdict


def with_unblocking(
    plan: Plan,
    pending: tuple[PendingPod, ...],
    analysis: Analysis,
    policy: RebalancePolicy,
    *,
    now: float,
    last_eviction: Mapping[WorkloadRef, float],
    held: Mapping[WorkloadRef, str],
) -> Plan:
    """``plan`` with the evictions that unblock pending pods appended (in their order)."""
    moves = [u for p in pending for u in p.unblock[:1] if u.kind is UnblockKind.MOVE]
    if not moves:
        return plan
    index = analysis.index
    budgets = BudgetLedger(index.state.budgets)
    for m in plan.moves:
        budgets.consume(m.pod)
    planned = {id(m.pod) for m in plan.moves}
    cap = policy.eviction.max_per_run
    added: list[Move] = []
    for p in pending:
        u = p.unblock[0] if p.unblock else None
        if u is None or u.kind is not UnblockKind.MOVE or u.evict is None:
            continue
        victim = u.evict
        if id(victim) in planned or (cap is not None and len(plan.moves) + len(added) >= cap):
            continue
        workload = workload_of(victim, index)
        if workload in held:
            continue
        last = last_eviction.get(workload)
        if last is not None and now - last < policy.eviction.cooldown:
            continue
        if budgets.check(victim).verdict is not BudgetVerdict.ALLOWED:
            continue
        budgets.consume(victim)
        planned.add(id(victim))
        key = p.topology_key
        target = index.nodes[u.predicted_node].labels.get(key, "")
        added.append(
            Move(
                victim,
                workload,
                u.node,
                u.predicted_node,
                ((key, u.domain),),
                ((key, target),),
                f"makes room in {key}={u.domain} for {p.pod.namespace}/{p.pod.name}, "
                "held Pending by topology spread",
            )
        )
    if not added:
        return plan
    return replace(plan, moves=plan.moves + tuple(added))
