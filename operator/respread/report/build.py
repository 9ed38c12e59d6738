"""The report: what a scan found and plans, as typed records (report/model.py).

report/contract.py writes it as the JSON contract (docs/report.md), report/text.py for a person
at a terminal, report/status.py as the policy's bounded status.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from respread.analysis.causes import Attribution, CauseKey, Facts, PreviousScan, attribute
from respread.analysis.coverage import Coverage, coverage_of
from respread.analysis.domain_memory import NO_VIEW, DomainView
from respread.analysis.groups import Analysis, Group, violating_nodes
from respread.analysis.outage_holds import outage_note, touching
from respread.analysis.pending import PendingPod
from respread.analysis.pinned import pinned_members
from respread.core.limits import few_named
from respread.inputs.policy import RebalancePolicy
from respread.remedies.choose import chosen, remedies
from respread.remedies.cost.order import CostPlan, PodCost, ReplicaSetOrder
from respread.remedies.evict.planner import Outcome, Plan
from respread.remedies.evict.steps import SkipKind, Verdict
from respread.remedies.surge.plan import SurgePlan, SurgeReport
from respread.report.model import (
    CostEntry,
    CostOrder,
    CostPatch,
    CoverageSection,
    DeletionCostSection,
    Planner,
    PlannerMethod,
    PolicyRef,
    Predicted,
    Report,
    Summary,
    SurgePlanEntry,
    SurgeSection,
    UnknownNodePod,
    Violation,
)
from respread.report.text import where
from respread.scheduling.outages import Outage

DOMAINS_SHOWN = 50  # a violation lists at most this many domains (the fullest and the emptiest)


def _domains(group: Group, limit: int = DOMAINS_SHOWN) -> tuple[tuple[tuple[str, int], ...], bool]:
    if len(group.domains) <= limit:
        return tuple((d, group.domain_count(d)) for d in group.domains), False
    ordered = sorted(group.domains, key=lambda d: (-group.domain_count(d), d))
    keep = ordered[: limit - limit // 5] + ordered[-(limit // 5) :]
    return tuple((d, group.domain_count(d)) for d in sorted(keep)), True


def violation_entry(
    outcome: Outcome,
    facts: Facts,
    policy: RebalancePolicy,
    previous: PreviousScan | None = None,
    surge: SurgeReport | None = None,
    *,
    carried: Mapping[CauseKey, Attribution] | None = None,
    coverage: Coverage | None = None,
    outages: tuple[Outage, ...] = (),
) -> Violation:
    g = outcome.group
    c = g.constraint
    domains, truncated = _domains(g)
    why = attribute(g, facts, previous, carried)
    verdicts = remedies(outcome, policy, surge)
    pinned, message = _pinned(outcome, facts.analysis)
    down = touching(g, outages)
    if down:
        message = f"{message}; {outage_note(down)}: no eviction on its account"
    return Violation(
        workload=g.workload,
        topology_key=c.key,
        when=c.when,
        max_skew=c.max_skew,
        min_domains=c.min_domains,
        skew=g.skew,
        global_minimum=g.global_min,
        domain_count=len(g.domains),
        domains=domains,
        pods=g.members.count,
        violating_pods=g.violating,
        pods_on_nodes_without_key=g.unresolvable,
        pods_outside_domains=g.outside,
        minimum_moves=g.minimum_moves,
        verdict=outcome.verdict,
        violating_pods_after_run=outcome.violating_after_run,
        cause=why.cause,
        cause_message=why.message,
        message=message,
        domains_truncated=truncated,
        from_default_constraints=c.from_defaults,
        remedies=tuple(verdicts),
        remedy=chosen(verdicts),
        match_labels=c.match_labels,
        incomplete=coverage is not None and coverage.touches(g),
        waiting_for=outcome.waiting_for,
        pods_pinned_by_volume=pinned,
    )


def _pinned(outcome: Outcome, analysis: Analysis) -> tuple[int, str]:
    """The group's pods pinned by volume to their domain, and the outcome's message, which
    says so when the fix needs misplaced ones among them to move."""
    g = outcome.group
    if not any(p.volume_pins for pods in g.members.by_node.values() for p in pods):
        return 0, outcome.message
    index = analysis.index
    bad = violating_nodes(index, g.members, index.tables(g.members.profile), g.index)
    pinned, misplaced = pinned_members(index, g, frozenset(bad))
    if outcome.fixable or not misplaced:
        return pinned, outcome.message
    return pinned, (
        f"{outcome.message}; {misplaced} misplaced pod(s) pinned by volume to their "
        f"{g.constraint.key} domain: the fix needs them to move, which their "
        "PersistentVolumes' node affinity forbids"
    )


def worst_first(outcomes: tuple[Outcome, ...]) -> list[Outcome]:
    return sorted(
        outcomes,
        key=lambda o: (
            -(o.group.skew - o.group.constraint.max_skew),
            -o.group.violating,
            o.group.workload,
            o.group.constraint.key,
        ),
    )


def cost_entry(entry: PodCost) -> CostEntry:
    return CostEntry(
        pod=entry.pod.name,
        node=entry.pod.node_name,
        domains=entry.domains,
        tier=entry.tier,
        current_cost=entry.current,
        desired_cost=entry.desired,
        changed=entry.changed,
        within_max_skew=entry.within_max_skew,
        conflict_managers=entry.foreign,
    )


def order_entry(order: ReplicaSetOrder) -> CostOrder:
    return CostOrder(
        workload=order.workload,
        replica_set=order.replica_set,
        state=order.state,
        pods=len(order.pods),
        steps_within_max_skew=order.safe_steps,
        changed=len(order.changed),
        conflicts=len(order.conflicts),
        message=order.message,
        order=tuple(cost_entry(e) for e in order.pods),
        owner=order.owner,
    )


def deletion_cost_section(costs: CostPlan | None) -> DeletionCostSection:
    if costs is None:
        return DeletionCostSection(enabled=False)
    return DeletionCostSection(
        enabled=True,
        orders=tuple(order_entry(o) for o in costs.orders),
        excluded=costs.excluded,
        patches=tuple(
            CostPatch(p.pod.namespace, p.pod.name, p.current, p.desired) for p in costs.patches
        ),
        deferred_patches=costs.deferred_patches,
        overlaps=sum(len(o.pods) for o in costs.overlapping),
    )


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds % 60:
        return f"{seconds}s"
    return f"{seconds // 60}m"


def _undetermined(p: SurgePlan) -> str:
    if p.determined:
        return ""
    others = sorted({where(d) for lnd in p.landings for d in lnd.others})
    worst = (
        f"would leave {p.worst_misplaced} misplaced pod(s)"
        if p.worst_misplaced
        else "would also fix it"
    )
    return (
        f" (likely, not determined: the Filter also admits {few_named(others)}; the worst "
        f"admissible placement {worst}; the victims are chosen again from the real placement)"
    )


def surge_steps(p: SurgePlan, policy: RebalancePolicy) -> tuple[str, ...]:
    n, k = p.original, p.surge
    landings = ", ".join(f"{lnd.node} ({where(lnd.domains)})" for lnd in p.landings)
    victims = ", ".join(f"{v.pod.name} ({where(v.domains)})" for v in p.victims if v.pod.node_name)
    timeout = _duration(policy.remediation.surge.ready_timeout)
    return (
        f"scale spec.replicas {n} -> {n + k}; the scheduler is predicted to place the new pods "
        f"on {landings}" + _undetermined(p),
        f"wait until all {n + k} replicas are Ready (at most {timeout}; else roll back to {n})",
        f"give the lowest pod-deletion-cost to {k} pod(s) in the crowded domains (predicted: "
        f"{victims}; chosen again from the real placement)",
        f"scale spec.replicas {n + k} -> {n}: the ReplicaSet controller deletes those pods",
    )


def surge_plan_entry(p: SurgePlan, policy: RebalancePolicy) -> SurgePlanEntry:
    return SurgePlanEntry(p, policy.remediation.surge.ready_timeout, surge_steps(p, policy))


def surge_section(surge: SurgeReport | None, policy: RebalancePolicy) -> SurgeSection:
    if surge is None:
        return SurgeSection(enabled=False)
    return SurgeSection(
        enabled=surge.enabled,
        plans=tuple(surge_plan_entry(p, policy) for p in surge.plans),
        skipped=surge.skips,
        operations=surge.in_flight,
    )


def coverage_section(coverage: Coverage) -> CoverageSection:
    return CoverageSection(
        pods_on_unknown_nodes=tuple(
            UnknownNodePod(p.namespace, p.name, p.node_name or "")
            for p in coverage.pods_on_unknown_nodes
        ),
        incomplete_groups=tuple(sorted(coverage.incomplete)),
        pods_selected=coverage.pods_selected,
        matching_pod_selector=coverage.evictable_by_selector,
        missing_namespaces=coverage.missing_namespaces,
        nothing_selected=coverage.nothing_selected,
    )


def _summary(analysis: Analysis, plan: Plan, pending: tuple[PendingPod, ...]) -> Summary:
    state = analysis.index.state
    verdicts = Counter(o.verdict for o in plan.outcomes)
    return Summary(
        nodes=len(state.nodes),
        pods=len(state.pods),
        constraint_groups=len(analysis.groups),
        violations=len(plan.outcomes),
        unfixable=verdicts[Verdict.NOT_FIXABLE],
        planned_evictions=len(plan.moves),
        deferred_evictions=len(plan.deferred),
        blocked=sum(1 for s in plan.skipped if s.kind is SkipKind.BLOCKED),
        skipped=len(plan.skipped),
        waiting=verdicts[Verdict.WAITING],
        partly_fixable=verdicts[Verdict.PARTLY_FIXABLE],
        pending=len(pending),
    )


def build_report(
    analysis: Analysis,
    plan: Plan,
    policy: RebalancePolicy,
    previous: PreviousScan | None = None,
    costs: CostPlan | None = None,
    *,
    surge: SurgeReport | None = None,
    carried: Mapping[CauseKey, Attribution] | None = None,
    coverage: Coverage | None = None,
    pending: tuple[PendingPod, ...] = (),
    outages: tuple[Outage, ...] = (),
    domains: DomainView = NO_VIEW,
) -> Report:
    """The full report (unbounded lists: the CLI's output; status.py bounds them).

    ``costs`` is the deletion-cost plan, when the policy enables that remedy; ``previous`` and
    ``carried``, the previous scan's view and the causes it gave (analysis/causes.py);
    ``coverage``, what the scan could not see and what the policy selects; ``pending``, the
    pods spread holds Pending (analysis/pending.py); ``outages`` and ``domains``, the domains
    down, lost, returned and recovering (scheduling/outages.py, analysis/domain_memory.py).
    """
    facts = Facts(analysis)
    coverage = coverage if coverage is not None else coverage_of(analysis, policy)
    return Report(
        policy=PolicyRef(policy.name, policy.mode),
        summary=_summary(analysis, plan, pending),
        planner=Planner(PlannerMethod(plan.method), plan.method_note),
        violations=tuple(
            violation_entry(
                o,
                facts,
                policy,
                previous,
                surge,
                carried=carried,
                coverage=coverage,
                outages=outages,
            )
            for o in worst_first(plan.outcomes)
        ),
        evictions=plan.moves,
        deferred=plan.deferred,
        skipped=plan.skipped,
        predicted=Predicted(
            violations=plan.predicted_violations,
            violating_pods=sum(o.violating_after_run for o in plan.outcomes),
            violations_after_deferred=sum(1 for o in plan.outcomes if not o.fixable),
        ),
        deletion_cost=deletion_cost_section(costs),
        surge=surge_section(surge, policy),
        coverage=coverage_section(coverage),
        pending=pending,
        outages=outages,
        domains=domains,
    )
