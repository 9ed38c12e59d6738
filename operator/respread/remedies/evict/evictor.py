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
from dataclasses import dataclass
from enum import StrEnum

from respread.analysis.groups import WorkloadRef
from respread.core.model import DisruptionBudget, Pod
from respread.core.timestamps import format_rfc3339
from respread.inputs.policy import RebalancePolicy
from respread.remedies.evict.steps import SkipKind
from respread.scheduling.budgets import BudgetLedger, BudgetVerdict
from respread.scheduling.safety import protection


class HoldKind(StrEnum):
    MIN_POD_AGE = "minPodAge"
    BUDGET = "PodDisruptionBudget"


@dataclass(frozen=True, slots=True)
class Hold:
    """What keeps a pod from eviction for now: it lifts by itself."""

    kind: HoldKind
    reason: str
    until: float | None  # when it lifts, where that is known


class EvictionGate:
    """Safety, budgets, caps and cooldown over the evictions one run plans."""

    def __init__(
        self,
        policy: RebalancePolicy,
        budgets: tuple[DisruptionBudget, ...],
        held: Mapping[WorkloadRef, str] | None = None,
        *,
        lift_holds: bool = False,
    ) -> None:
        self.policy = policy
        self.lift_holds = lift_holds  # plan as if every hold (``hold``) had lifted
        self.budgets = BudgetLedger(budgets, lift_holds=lift_holds)
        self.held: Mapping[WorkloadRef, str] = held or {}
        self.per_node: Counter[str] = Counter()
        self.per_namespace: Counter[str] = Counter()
        self.per_workload: Counter[WorkloadRef] = Counter()
        self.planned = 0

    def refusal(self, pod: Pod, now: float | None) -> tuple[SkipKind, str] | None:
        """Why the pod may not be evicted in any run (PROTECTED or BLOCKED), or None."""
        reason = protection(pod, self.policy, None if self.lift_holds else now)
        if reason:
            return SkipKind.PROTECTED, reason
        check = self.budgets.check(pod)
        if check.verdict is BudgetVerdict.BLOCKED:
            return SkipKind.BLOCKED, check.reason
        return None

    def hold(self, pod: Pod, now: float | None) -> Hold | None:
        """A refusal that lifts by itself, or None: the pod is younger than minPodAge (until
        when), or its budget refuses now and will not once its pods are healthy (or its status
        is current). None for a pod refused for good or not refused."""
        if protection(pod, self.policy, None) is not None:
            return None
        if protection(pod, self.policy, now) is not None:
            assert now is not None and pod.created is not None  # only minPodAge reads them
            until = pod.created + self.policy.eviction.min_pod_age
            return Hold(HoldKind.MIN_POD_AGE, "minPodAge", until)
        check = self.budgets.check(pod)
        if check.verdict is BudgetVerdict.BLOCKED and check.lifts_when:
            return Hold(HoldKind.BUDGET, f"{check.reason}, {check.lifts_when}", None)
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
            return (
                f"cooldown: {workload} had an eviction {int(now - last)}s ago; the next is due "
                f"at {format_rfc3339(last + ev.cooldown)}"
            )
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
