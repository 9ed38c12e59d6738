"""Moves across workloads: a pod of another workload that a violated group's selector counts
(the only way, when the group's own pods cannot go anywhere better), and a follower move (a
second workload's pod that mends the spread the first move would break). Each with the
exhaustive search on (these clusters are small enough for it) and off (the greedy rules)."""

from __future__ import annotations

from unittest.mock import patch

import pytest

from respread.analysis.groups import analyze
from respread.core.model import ClusterState, OwnerRef, Pod, PodSpec
from respread.remedies.evict import planner
from respread.remedies.evict.planner import Plan, plan
from respread.remedies.evict.replay import apply_moves
from tests.support.builders import eviction_policy, hard, pod, pod_spec, sel, state, zone_node
from tests.support.constants import HOST, ZONE

POLICY = eviction_policy()


def pods(app: str, tier: str, spec: PodSpec, *where: str) -> list[Pod]:
    """The pods of ``<app>-rs`` labelled app and tier, one on each node of ``where``."""
    labels = {"app": app, "tier": tier}
    owner = OwnerRef("ReplicaSet", f"{app}-rs")
    return [
        pod(f"{app}-{i}", n, labels, spec=spec, namespace="ns", owner=owner, created=float(i))
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
    pinned = pod_spec((hard(ZONE, sel(tier="a")),), node_selector={ZONE: "za"})
    own = pod_spec((hard(ZONE, sel(app="w1")),))
    cluster = state(
        (zone_node("a1", "za"), zone_node("b1", "zb")),
        (*pods("w0", "a", pinned, "a1"), *pods("w1", "a", own, "a1", "a1")),
    )
    result = run(cluster, exhaustive)
    (move,) = result.moves
    assert move.workload.name == "w1-rs" and move.to_node == "b1"


@pytest.mark.parametrize("exhaustive", [True, False], ids=["exhaustive", "greedy"])
def test_a_follower_mends_the_spread_the_first_move_would_break(exhaustive: bool) -> None:
    # w0 (zone, its own pods) sits all in za; w1's hostname spread counts every tier=b pod,
    # so w0's move alone would crowd c1; one of w1's pods there must follow to a1.
    zone = pod_spec((hard(ZONE, sel(app="w0")),))
    host = pod_spec((hard(HOST, sel(tier="b")),))
    cluster = state(
        (zone_node("a1", "za"), zone_node("a2", "za"), zone_node("c1", "zc")),
        (*pods("w0", "b", zone, "a1", "a2"), *pods("w1", "b", host, "c1", "c1", "a2")),
    )
    result = run(cluster, exhaustive)
    assert [m.workload.name for m in result.moves] == ["w0-rs", "w1-rs"]
    assert len(result.deferred) == 0
