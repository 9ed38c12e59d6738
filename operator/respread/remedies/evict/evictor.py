"""The eviction gate: whether a pod may be evicted at all, and whether this run may do it.

In the spirit of the descheduler's ``handle.Evictor()``: ``refusal`` says why a pod may never
be evicted (safety.py: bare, DaemonSet, static, opted-out, system-critical, local storage,
too young) or why its budget refuses any eviction (stale, none allowed, two budgets); and
``deferral`` says what leaves an allowed eviction for a later run: the operator holding the
workload, the cooldown, the caps per run, workload, namespace and node, and budgets the run's
own evictions used up. ``commit`` counts an eviction against all of those; ``uncommit``
takes it back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from enum import StrEnum

from respread.analysis.groups import WorkloadRef
from respread.core.model import DisruptionBudget, Pod
from respread.inputs.policy import RebalancePolicy
from respread.scheduling.budgets import BudgetLedger, BudgetVerdict
from respread.scheduling.safety import protection


class Refusal(StrEnum):
    PROTECTED = "Protected"
    BLOCKED = "Blocked"  # a budget refuses the eviction


class EvictionGate:
    """Safety, budgets, caps and cooldown over the evictions one run plans."""

    def __init__(
        self,
        policy: RebalancePolicy,
        budgets: tuple[DisruptionBudget, ...],
        held: Mapping[WorkloadRef, str] | None = None,
    ) -> None:
        self.policy = policy
        self.budgets = BudgetLedger(budgets)
        self.held: Mapping[WorkloadRef, str] = held or {}
        self.per_node: Counter[str] = Counter()
        self.per_namespace: Counter[str] = Counter()
        self.per_workload: Counter[WorkloadRef] = Counter()
        self.planned = 0

    def refusal(self, pod: Pod, now: float | None) -> tuple[Refusal, str] | None:
        """Why the pod may not be evicted in any run, or None."""
        reason = protection(pod, self.policy, now)
        if reason:
            return Refusal.PROTECTED, reason
        check = self.budgets.check(pod)
        if check.verdict is BudgetVerdict.BLOCKED:
            return Refusal.BLOCKED, check.reason
        return None

    def deferral(
        self,
        pod: Pod,
        workload: WorkloadRef,
        now: float | None,
        history: Mapping[WorkloadRef, float],
    ) -> str:
        """What leaves the eviction for a later run ("": this run may do it)."""
        held = self.held.get(workload)
        if held:
            return held
        ev = self.policy.eviction
        last = history.get(workload)
        if now is not None and last is not None and now - last < ev.cooldown:
            return f"cooldown: {workload} had an eviction {int(now - last)}s ago"
        if ev.max_per_run is not None and self.planned >= ev.max_per_run:
            return f"maxPerRun {ev.max_per_run} reached"
        if ev.max_per_workload is not None and self.per_workload[workload] >= ev.max_per_workload:
            return f"maxPerWorkload {ev.max_per_workload} reached"
        if (
            ev.max_per_namespace is not None
            and self.per_namespace[pod.namespace] >= ev.max_per_namespace
        ):
            return f"maxPerNamespace {ev.max_per_namespace} reached"
        assert pod.node_name is not None
        if ev.max_per_node is not None and self.per_node[pod.node_name] >= ev.max_per_node:
            return f"maxPerNode {ev.max_per_node} reached on {pod.node_name}"
        check = self.budgets.check(pod)
        if check.verdict is BudgetVerdict.EXHAUSTED:
            return check.reason
        return ""

    def commit(self, pod: Pod, workload: WorkloadRef) -> None:
        """Count the eviction of ``pod`` (from its node) against caps and budgets."""
        assert pod.node_name is not None
        self.planned += 1
        self.per_node[pod.node_name] += 1
        self.per_namespace[pod.namespace] += 1
        self.per_workload[workload] += 1
        self.budgets.consume(pod)

    def uncommit(self, pod: Pod, workload: WorkloadRef) -> None:
        assert pod.node_name is not None
        self.planned -= 1
        self.per_node[pod.node_name] -= 1
        self.per_namespace[pod.namespace] -= 1
        self.per_workload[workload] -= 1
        self.budgets.give_back(pod)

    def used(self) -> dict[str, int]:
        """Disruptions the committed evictions take from each budget."""
        return self.budgets.used()
