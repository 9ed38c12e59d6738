"""Builders of typed reports (respread.report.model) for tests that need a report's shape rather
than a cluster's: ``violation("web", cause=Cause.NODE_LOSS)`` is one violated Deployment
``ns/web`` on ``zone``; ``report(violations=[...])`` is a report holding it and nothing else."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from respread.analysis.causes import Cause
from respread.analysis.groups import WorkloadRef
from respread.core.model import When
from respread.inputs.policy import Mode
from respread.remedies.evict.steps import Move, Verdict
from respread.remedies.surge.plan import SurgePlan, SurgeSkip
from respread.report.model import (
    DeletionCostSection,
    Planner,
    PlannerMethod,
    PolicyRef,
    Predicted,
    Report,
    Summary,
    SurgePlanEntry,
    SurgeSection,
    Violation,
)
from tests.support.builders import pod as make_pod
from tests.support.builders import workload as make_workload


def deployment(name: str, namespace: str = "ns") -> WorkloadRef:
    return WorkloadRef(namespace, "Deployment", name)


def violation(
    name: str = "web",
    *,
    cause: Cause = Cause.UNKNOWN,
    cause_message: str = "no evidence in the snapshot of what skewed it",
    skew: int = 2,
    **fields: Any,
) -> Violation:
    """Deployment ns/NAME, 3 pods on zone, skew 2 over maxSkew 1, one eviction fixes it."""
    v = Violation(
        workload=deployment(name),
        topology_key="zone",
        when=When.DO_NOT_SCHEDULE,
        max_skew=1,
        min_domains=1,
        skew=skew,
        global_minimum=0,
        domain_count=2,
        domains=(("z1", skew), ("z2", 0)),
        pods=skew,
        violating_pods=1,
        pods_on_nodes_without_key=0,
        pods_outside_domains=0,
        minimum_moves=1,
        verdict=Verdict.FIXABLE,
        violating_pods_after_run=0,
        cause=cause,
        cause_message=cause_message,
        message="2 evictions fix it",
    )
    return replace(v, **fields)


def eviction(pod: str, workload: str = "web", **fields: Any) -> Move:
    e = Move(
        pod=make_pod(pod, "n1", namespace="ns"),
        workload=deployment(workload),
        from_node="n1",
        to_node="n2",
        from_domain=(("zone", "z1"),),
        to_domain=(("zone", "z2"),),
        reason="zone: skew 2 > maxSkew 1",
    )
    return replace(e, **fields)


def surge_planned(name: str = "web", replicas: int = 4, surge: int = 2) -> SurgePlanEntry:
    plan = SurgePlan(
        workload=deployment(name),
        deployment=make_workload("Deployment", name, None, "ns", replicas=replicas),
        original=replicas,
        surge=surge,
        landings=(),
        victims=(),
        misplaced_after=0,
    )
    return SurgePlanEntry(plan, 300.0, (f"scale spec.replicas {replicas} -> {replicas + surge}",))


def surges(
    planned: Iterable[SurgePlanEntry] = (), skipped: Iterable[tuple[str, str]] = ()
) -> SurgeSection:
    """The surge section: ``planned`` plans, and the ``(name, reason)`` Deployments skipped."""
    return SurgeSection(
        enabled=True,
        plans=tuple(planned),
        skipped=tuple(SurgeSkip(deployment(n), reason) for n, reason in skipped),
    )


def report(
    violations: Iterable[Violation] = (),
    evictions: Iterable[Move] = (),
    deferred: Iterable[Move] = (),
    **fields: Any,
) -> Report:
    found, moves, later = tuple(violations), tuple(evictions), tuple(deferred)
    r = Report(
        policy=PolicyRef("default", Mode.DRY_RUN),
        summary=Summary(
            nodes=2,
            pods=sum(v.pods for v in found),
            constraint_groups=len(found),
            violations=len(found),
            unfixable=sum(1 for v in found if not v.fixable),
            planned_evictions=len(moves),
            deferred_evictions=len(later),
            blocked=0,
            skipped=0,
        ),
        planner=Planner(PlannerMethod.GREEDY, ""),
        violations=found,
        evictions=moves,
        deferred=later,
        skipped=(),
        predicted=Predicted(0, 0, 0),
        deletion_cost=DeletionCostSection(enabled=False),
        surge=SurgeSection(enabled=False),
    )
    return replace(r, **fields)
