"""Why a group is skewed: evidence from the objects themselves, and from the previous scan.

From a snapshot alone, two causes leave traces: a domain whose nodes all joined after the
workload's pods were placed (NodeAdded) and a workload whose pods come from several
ReplicaSets (RollingUpdate). With the previous scan's view (the operator keeps it), replica
counts that dropped (ScaleDown) and nodes that disappeared (NodeLoss) are recognised too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from respread.analysis.groups import Analysis, Group, WorkloadRef


class Cause(StrEnum):
    SCALE_DOWN = "ScaleDown"
    NODE_LOSS = "NodeLoss"
    NODE_ADDED = "NodeAdded"
    ROLLING_UPDATE = "RollingUpdate"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class Attribution:
    cause: Cause
    message: str


@dataclass(frozen=True, slots=True)
class PreviousScan:
    """What the previous scan saw: node names, and each workload's pods per domain."""

    nodes: frozenset[str] = frozenset()
    node_domains: Mapping[str, Mapping[str, str]] = field(
        default_factory=dict
    )  # node -> key -> value
    members: Mapping[WorkloadRef, int] = field(default_factory=dict)


def attribute(
    group: Group, analysis: Analysis, previous: PreviousScan | None = None
) -> Attribution:
    index = analysis.index
    c = group.constraint
    pods = [p for ps in group.members.by_node.values() for p in ps]
    if previous is not None:
        lost = sorted(previous.nodes - set(index.nodes))
        lost_here = [n for n in lost if c.key in previous.node_domains.get(n, {})]
        if lost_here:
            return Attribution(
                Cause.NODE_LOSS, f"node(s) {', '.join(lost_here[:3])} left since the previous scan"
            )
        before = previous.members.get(group.workload)
        if before is not None and len(pods) < before:
            return Attribution(
                Cause.SCALE_DOWN,
                f"{group.workload} went from {before} to {len(pods)} pods since the previous scan",
            )
        added = sorted(set(index.nodes) - previous.nodes)
        if added and group.global_min == 0:
            return Attribution(
                Cause.NODE_ADDED, f"node(s) {', '.join(added[:3])} joined since the previous scan"
            )

    replica_sets = {
        p.owner.name for p in pods if p.owner is not None and p.owner.kind == "ReplicaSet"
    }
    if len(replica_sets) > 1:
        names = ", ".join(sorted(replica_sets)[:3])
        return Attribution(
            Cause.ROLLING_UPDATE, f"pods come from {len(replica_sets)} ReplicaSets ({names})"
        )

    created = [p.created for p in pods if p.created is not None]
    if created and group.domains:
        newest_pod = max(created)
        empty = [d for d in group.domains if group.domain_count(d) == group.global_min]
        space = index.space(group.members.profile, group.index)
        for domain in empty:
            nodes = [index.nodes[n] for n in space.domain_nodes.get(domain, ())]
            if nodes and all(n.created is not None and n.created > newest_pod for n in nodes):
                return Attribution(
                    Cause.NODE_ADDED,
                    f"{c.key} {domain}: its node(s) joined after every pod of "
                    f"{group.workload} was placed",
                )
    return Attribution(Cause.UNKNOWN, "no evidence in the snapshot of what skewed it")
