"""Moves across workloads: a pod of another workload that a violated group's selector counts
(the only way, when the group's own pods cannot go anywhere better), and a follower move (a
second workload's pod that mends the spread the first move would break). Each with the
exhaustive search on (these clusters are small enough for it) and off (the greedy rules)."""

from __future__ import annotations

from unittest.mock import patch

import pytest

from respread.analysis.groups import analyze
from respread.core.model import (
    ClusterState,
    Labels,
    LabelSelector,
    Node,
    NodeAffinity,
    Op,
    OwnerRef,
    Pod,
    PodSpec,
    Requirement,
    SpreadConstraint,
    When,
)
from respread.inputs.policy import EvictionSettings, RebalancePolicy, Selection
from respread.remedies.evict import planner
from respread.remedies.evict.planner import Plan, plan
from respread.remedies.evict.replay import apply_moves

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
POLICY = RebalancePolicy(
    selection=Selection(exclude_namespaces=frozenset()),
    eviction=EvictionSettings(max_per_run=None, max_per_workload=None, min_pod_age=0.0),
)


def sel(key: str, value: str) -> LabelSelector:
    return LabelSelector((Requirement(key, Op.IN, (value,)),))


def node(name: str, zone: str) -> Node:
    return Node(name, Labels({ZONE: zone, HOST: name}))


def pods(app: str, tier: str, spec: PodSpec, *where: str) -> list[Pod]:
    labels = Labels({"app": app, "tier": tier})
    owner = OwnerRef("ReplicaSet", f"{app}-rs")
    return [
        Pod("ns", f"{app}-{i}", labels, spec, node_name=n, owner=owner, created=float(i))
        for i, n in enumerate(where)
    ]


def run(state: ClusterState, exhaustive: bool) -> Plan:
    with patch.object(planner, "EXACT_MOVABLE", planner.EXACT_MOVABLE if exhaustive else 0):
        result = plan(analyze(state, POLICY), POLICY)
    assert all(o.fixable for o in result.outcomes)
    assert analyze(apply_moves(state, result.moves), POLICY).violations == ()
    return result


@pytest.mark.parametrize("exhaustive", [True, False], ids=["exhaustive", "greedy"])
def test_a_counted_pod_of_another_workload_moves_when_the_groups_own_cannot(
    exhaustive: bool,
) -> None:
    # w0 counts every tier=a pod by zone but is pinned to za, which holds three of them.
    pinned = PodSpec(
        constraints=(SpreadConstraint(1, ZONE, When.DO_NOT_SCHEDULE, sel("tier", "a")),),
        affinity=NodeAffinity(Labels({ZONE: "za"})),
    )
    own = PodSpec(constraints=(SpreadConstraint(1, ZONE, When.DO_NOT_SCHEDULE, sel("app", "w1")),))
    state = ClusterState(
        nodes=(node("a1", "za"), node("b1", "zb")),
        pods=(*pods("w0", "a", pinned, "a1"), *pods("w1", "a", own, "a1", "a1")),
    )
    result = run(state, exhaustive)
    (move,) = result.moves
    assert move.workload.name == "w1-rs" and move.to_node == "b1"


@pytest.mark.parametrize("exhaustive", [True, False], ids=["exhaustive", "greedy"])
def test_a_follower_mends_the_spread_the_first_move_would_break(exhaustive: bool) -> None:
    # w0 (zone, its own pods) sits all in za; w1's hostname spread counts every tier=b pod,
    # so w0's move alone would crowd c1; one of w1's pods there must follow to a1.
    zone = PodSpec(constraints=(SpreadConstraint(1, ZONE, When.DO_NOT_SCHEDULE, sel("app", "w0")),))
    host = PodSpec(constraints=(SpreadConstraint(1, HOST, When.DO_NOT_SCHEDULE, sel("tier", "b")),))
    state = ClusterState(
        nodes=(node("a1", "za"), node("a2", "za"), node("c1", "zc")),
        pods=(
            *pods("w0", "b", zone, "a1", "a2"),
            *pods("w1", "b", host, "c1", "c1", "a2"),
        ),
    )
    result = run(state, exhaustive)
    assert [m.workload.name for m in result.moves] == ["w0-rs", "w1-rs"]
    assert len(result.deferred) == 0
