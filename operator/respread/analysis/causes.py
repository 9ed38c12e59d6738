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
from respread.core.model import Pod

CauseKey = tuple[str, str, str, str]  # namespace, workload kind, workload name, topology key


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

    @classmethod
    def of(cls, analysis: Analysis) -> PreviousScan:
        """What this scan saw, the next scan's evidence."""
        index = analysis.index
        return cls(
            nodes=frozenset(index.nodes),
            node_domains={n.name: dict(n.labels) for n in index.state.nodes},
            members={m.workload: m.count for m in analysis.members},
        )


def cause_key(group: Group) -> CauseKey:
    w = group.workload
    return (w.namespace, w.kind, w.name, group.constraint.key)


def attribute(
    group: Group,
    analysis: Analysis,
    previous: PreviousScan | None = None,
    carried: Mapping[CauseKey, Attribution] | None = None,
) -> Attribution:
    """Why the group is skewed. ``carried``: the causes the last scan gave its violations.

    Causes are read from what changed since the previous scan, so the scan after the one that
    saw a node leave or the replicas drop has no evidence left and would say Unknown. Like
    ``since``, the cause belongs to the violation: an ongoing violation keeps the cause it was
    first given, and only an Unknown one is found again.
    """
    before = (carried or {}).get(cause_key(group))
    if before is not None and before.cause is not Cause.UNKNOWN:
        return before
    pods = [p for ps in group.members.by_node.values() for p in ps]
    return (
        _since_previous(group, pods, analysis, previous)
        or _rolling_update(pods)
        or _node_added(group, pods, analysis)
        or Attribution(Cause.UNKNOWN, "no evidence in the snapshot of what skewed it")
    )


def _since_previous(
    group: Group, pods: list[Pod], analysis: Analysis, previous: PreviousScan | None
) -> Attribution | None:
    """What changed since the previous scan: a node gone, fewer pods, a node added."""
    if previous is None:
        return None
    nodes = analysis.index.nodes
    lost = sorted(previous.nodes - set(nodes))
    lost_here = [n for n in lost if group.constraint.key in previous.node_domains.get(n, {})]
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
    added = sorted(set(nodes) - previous.nodes)
    if added and group.global_min == 0:
        return Attribution(
            Cause.NODE_ADDED, f"node(s) {', '.join(added[:3])} joined since the previous scan"
        )
    return None


def _rolling_update(pods: list[Pod]) -> Attribution | None:
    replica_sets = {
        p.owner.name for p in pods if p.owner is not None and p.owner.kind == "ReplicaSet"
    }
    if len(replica_sets) > 1:
        names = ", ".join(sorted(replica_sets)[:3])
        return Attribution(
            Cause.ROLLING_UPDATE, f"pods come from {len(replica_sets)} ReplicaSets ({names})"
        )
    return None


def _node_added(group: Group, pods: list[Pod], analysis: Analysis) -> Attribution | None:
    """A least-filled domain whose nodes all joined after the workload's pods were placed."""
    created = [p.created for p in pods if p.created is not None]
    if not created or not group.domains:
        return None
    index = analysis.index
    newest_pod = max(created)
    empty = [d for d in group.domains if group.domain_count(d) == group.global_min]
    space = index.space(group.members.profile, group.index)
    for domain in empty:
        nodes = [index.nodes[n] for n in space.domain_nodes.get(domain, ())]
        if nodes and all(n.created is not None and n.created > newest_pod for n in nodes):
            return Attribution(
                Cause.NODE_ADDED,
                f"{group.constraint.key} {domain}: its node(s) joined after every pod of "
                f"{group.workload} was placed",
            )
    return None
