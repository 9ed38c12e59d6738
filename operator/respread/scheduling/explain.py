"""`respread explain`: one pod's constraints and every node's verdict, as the scheduler sees it."""

from __future__ import annotations

from dataclasses import dataclass

from respread.core.kernel import CountTable, FilterStatus
from respread.core.model import Pod
from respread.scheduling.placement import CapacityLedger, static_reasons, volume_reason
from respread.scheduling.spread import Profile, SpreadIndex, filter_node


@dataclass(frozen=True, slots=True)
class ConstraintView:
    topology_key: str
    max_skew: int
    min_domains: int
    when: str
    domains: dict[str, int]
    global_minimum: int
    self_match: bool


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    spread_filter: FilterStatus
    feasible: bool
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Explanation:
    pod: str
    bound_to: str | None
    constraints: tuple[ConstraintView, ...]
    nodes: tuple[NodeView, ...]


def explain_pod(index: SpreadIndex, pod: Pod) -> Explanation:
    """Evaluate ``pod`` against every node as if it were being placed now.

    A bound pod is first taken out of the counts (and its own requests out of its node), which
    is how the question "does its current placement violate its constraints" is answered.
    """
    profile = index.profile_of(pod)
    tables = tables_without(index, profile, pod)
    others = tuple(p for p in index.state.pods if p is not pod)
    ledger = CapacityLedger(index.state.nodes, others)
    nominated = _nominated(index, pod)

    constraint_views = []
    for i, c in enumerate(profile.constraints):
        table = tables[i]
        domains = {d: table.get(d) for d in sorted(table.space.domain_nodes)}
        constraint_views.append(
            ConstraintView(
                c.key,
                c.max_skew,
                c.min_domains,
                c.when.value,
                domains,
                table.global_min(c.min_domains),
                profile.self_match[i],
            )
        )

    views = []
    for node in index.state.nodes:
        node_tables = tuple(tables)
        extra = nominated.get(node.name)
        if extra:
            node_tables = _with_nominated(index, profile, node_tables, node.name, extra)
        verdict = filter_node(profile, node_tables, node)
        reasons = [verdict.reason] if not verdict.ok else []
        reasons.extend(static_reasons(pod.spec, node))
        pinned = volume_reason(pod, node)
        if pinned:
            reasons.append(pinned)
        fit = ledger.fit_reason(node.name, pod.spec.requests)
        if fit:
            reasons.append(fit)
        views.append(NodeView(node.name, verdict.status, not reasons, tuple(reasons)))
    return Explanation(pod.key, pod.node_name, tuple(constraint_views), tuple(views))


def tables_without(index: SpreadIndex, profile: Profile, pod: Pod) -> list[CountTable]:
    """The profile's count tables with ``pod`` taken out of those that count it (copies)."""
    tables = list(index.tables(profile))
    for i in range(len(tables)):
        if index.is_counted(profile, i, pod):
            assert pod.node_name is not None
            tables[i] = tables[i].copy()
            tables[i].add(tables[i].space.node_domain[pod.node_name], -1)
    return tables


def _nominated(index: SpreadIndex, pod: Pod) -> dict[str, list[Pod]]:
    """Pending pods nominated to a node with priority at least the pod's (section 4)."""
    out: dict[str, list[Pod]] = {}
    for other in index.state.pods:
        if (
            other is not pod
            and other.node_name is None
            and other.nominated_node
            and other.namespace == pod.namespace
            and other.priority >= pod.priority
            and not other.terminating
            and not other.finished
        ):
            out.setdefault(other.nominated_node, []).append(other)
    return out


def _with_nominated(
    index: SpreadIndex,
    profile: Profile,
    tables: tuple[CountTable, ...],
    node_name: str,
    pods: list[Pod],
) -> tuple[CountTable, ...]:
    out = []
    for i, table in enumerate(tables):
        domain = table.space.node_domain.get(node_name)
        matching = sum(
            1 for p in pods if index.counts_pod(profile.constraints[i].selector, p.labels)
        )
        if domain is None or not matching:
            out.append(table)
            continue
        copy = table.copy()
        copy.add(domain, matching)
        out.append(copy)
    return tuple(out)
