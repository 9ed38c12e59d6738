"""A violated group's minimumMoves, as the wide generator (test_optimum_wide.py) found it wrong.

- A pod pinned to ssd nodes sat on a node without the ssd label. Under nodeAffinityPolicy
  Honor that node is not in the counts, yet the Filter judges the pod there as one more pod of
  its domain (count + 1 - min, spread-semantics.md section 5): misplaced at a skew of exactly
  maxSkew, and the report said it needed 0 moves.
- Where the selector counts other workloads' pods, only the group's own pods must pass: the
  report said "at least 2 move(s)" of a group whose plan (the optimum) made 1, having brought
  every counted pod within maxSkew.
"""

from __future__ import annotations

import pytest

from respread.analysis.groups import analyze, group_moves, minimum_moves
from respread.core.model import OwnerRef, Policy
from respread.remedies.evict.planner import plan
from respread.report.build import build_report
from respread.report.text import render_text
from tests.support.builders import eviction_policy, hard, node, pod, sel, state

POLICY = eviction_policy(cooldown=0.0)
RS = OwnerRef("ReplicaSet", "web")


def _cluster(affinity: Policy | None, counted_in_a: int) -> object:
    web = sel(app="web")
    spread = hard("zone", web, affinity=affinity)
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
    assert group.outside == (0 if affinity is Policy.IGNORE else 1)
    result = plan(analysis, POLICY)
    assert all(o.fixable for o in result.outcomes)
    assert len(result.moves) == moves


def test_the_bound_counts_the_outside_pod_in_its_domain() -> None:
    assert minimum_moves([1, 0], 1, 1) == 0  # the counts alone: nothing to do
    assert minimum_moves([2, 0], 1, 1) == 1  # with the pod outside them, in zone a


@pytest.mark.parametrize(
    ("counts", "members", "skew", "min_domains", "arriving", "counted", "moves"),
    [
        # the group's pods alone: the exact minimum
        ([3, 0], [3, 0], 1, 1, 0, True, 1),
        ([4, 0, 0], [4, 0, 0], 1, 1, 0, True, 2),
        # one own pod among other workloads' three on h0: it alone moves
        ([3, 0, 0, 0], [1, 0, 0, 0], 1, 1, 0, True, 1),
        # other workloads crowd a domain the group has left: nothing to move there
        ([5, 0, 1], [0, 0, 1], 1, 1, 0, True, 0),
        # not counted by its own selector, on a node without the key: it moves, once
        ([1, 2, 0], [0, 0, 0], 1, 3, 1, False, 1),
        # not counted, in a domain 2 over: it leaves (1) rather than 2 pods being moved
        ([3, 0], [1, 0], 1, 1, 0, False, 1),
        # minDomains above the domains: the group's pods alone exceed maxSkew x domains
        ([3, 1], [2, 1], 1, 3, 0, True, None),
        ([3, 0], [1, 0], 1, 3, 0, True, 1),
    ],
)
def test_the_fewest_moves_for_a_group(
    counts: list[int],
    members: list[int],
    skew: int,
    min_domains: int,
    arriving: int,
    counted: bool,
    moves: int | None,
) -> None:
    domains = [f"d{i}" for i in range(len(counts))]
    sparse = dict(zip(domains, counts, strict=True))
    own = dict(zip(domains, members, strict=True))
    found = group_moves(sparse, own, domains, skew, min_domains, arriving=arriving, counted=counted)
    assert found == moves


def test_the_report_says_why_a_pod_within_max_skew_is_misplaced() -> None:
    cluster = _cluster(None, 1)
    analysis = analyze(cluster, POLICY)  # type: ignore[arg-type]
    text = render_text(build_report(analysis, plan(analysis, POLICY), POLICY))
    assert "skew 1 <= maxSkew 1" in text
    assert "1 of 2 pods misplaced, 1 on nodes its inclusion policies leave out" in text
