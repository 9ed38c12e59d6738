"""minimumMoves for a pod on a node that the constraint's inclusion policies leave out.

Found by the wide generator (test_optimum_wide.py): a pod pinned to ssd nodes sat on a node
without the ssd label. Under nodeAffinityPolicy Honor that node is not in the counts, yet the
Filter judges the pod there as one more pod of its domain (count + 1 - min, spread-semantics.md
section 5): misplaced at a skew of exactly maxSkew, and the report said it needed 0 moves.
"""

from __future__ import annotations

import pytest

from respread.analysis import analyze, minimum_moves
from respread.model import OwnerRef, Policy
from respread.planner import plan
from respread.policy import EvictionSettings, RebalancePolicy, Selection
from tests.unit.builders import hard, node, pod, sel, state

ZONE = "zone"
POLICY = RebalancePolicy(
    selection=Selection(exclude_namespaces=frozenset()),
    eviction=EvictionSettings(
        max_per_run=None, max_per_workload=None, min_pod_age=0.0, cooldown=0.0
    ),
)
RS = OwnerRef("ReplicaSet", "web")


def _cluster(affinity: Policy | None, counted_in_a: int) -> object:
    web = sel(app="web")
    spread = hard(ZONE, web, affinity=affinity)
    pinned = {"disk": "ssd"}
    nodes = [
        node("n0", zone="a", disk="ssd"),
        node("n1", zone="a"),  # left out of the counts under Honor: no ssd
        node("n2", zone="b", disk="ssd"),
    ]
    pods = [
        pod(f"web-{i}", "n0", {"app": "web"}, constraints=(spread,), node_selector=pinned, owner=RS)
        for i in range(counted_in_a)
    ]
    pods.append(
        pod("web-x", "n1", {"app": "web"}, constraints=(spread,), node_selector=pinned, owner=RS)
    )
    return state(nodes, pods)


@pytest.mark.parametrize(
    ("affinity", "counted_in_a", "moves"),
    [
        (None, 1, 1),  # Honor by default: web-x is judged at 1 + 1 - 0 in zone a
        (Policy.HONOR, 1, 1),
        (Policy.HONOR, 2, 1),  # a=2 (+ web-x), b=0: one of a's to b leaves 1 + 1 - 1
        (Policy.HONOR, 3, 2),  # a=3 (+ web-x): two to b
        (Policy.IGNORE, 2, 1),  # counted where it is: a=3, b=0 -> one move
    ],
)
def test_a_pod_outside_the_counts_needs_a_move(
    affinity: Policy | None, counted_in_a: int, moves: int
) -> None:
    cluster = _cluster(affinity, counted_in_a)
    analysis = analyze(cluster, POLICY)  # type: ignore[arg-type]
    (group,) = analysis.violations
    assert group.minimum_moves == moves
    result = plan(analysis, POLICY)
    assert all(o.fixable for o in result.outcomes)
    assert len(result.moves) == moves


def test_the_bound_counts_the_outside_pod_in_its_domain() -> None:
    assert minimum_moves([1, 0], 1, 1) == 0  # the counts alone: nothing to do
    assert minimum_moves([2, 0], 1, 1) == 1  # with the pod outside them, in zone a
