"""Counterexamples the wide generator (test_optimum_wide.py) found, minimised, each planned at
the brute-force optimum (brute_force.py) now."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from respread.analysis.groups import analyze
from respread.core.model import ClusterState, OwnerRef, Pod, SpreadConstraint
from respread.remedies.evict import planner
from respread.remedies.evict.planner import plan
from respread.remedies.evict.replay import apply_moves
from tests.support.brute_force import fewest_evictions, misplaced
from tests.support.builders import hard, node, pod, sel, state
from tests.support.constants import HOST, ZONE
from tests.unit.remedies.evict.test_optimum_wide import POLICY


def _pods(
    names: list[tuple[str, str]], app: str, spread: tuple[SpreadConstraint, ...], **labels: str
) -> list[Pod]:
    return [
        pod(
            name,
            on,
            {"app": app, **labels},
            constraints=spread,
            owner=OwnerRef("ReplicaSet", f"{app}-{labels.get('version', '1')}"),
        )
        for name, on in names
    ]


def _foreign_counted() -> ClusterState:
    """w0's hostname selector counts w1's pods, which need not pass it: one move of w0-0
    fixes both workloads. The exhaustive search's lower bound took w0's exact minimum over
    every counted pod (2) and pruned the 1-move plan; the greedy plan made 2 (it makes 1 now,
    preferring the move that leaves the fewest pods misplaced in every group it touches)."""
    nodes = [
        node("n0", {ZONE: "zb", HOST: "h0"}, unschedulable=True),
        node("n1", {ZONE: "za", HOST: "h1"}, unschedulable=True),
        node("n2", {ZONE: "za", HOST: "h2"}),
        node("n3", {ZONE: "za", HOST: "h3"}),
    ]
    tier = sel(tier="a")
    pods = _pods([("w0-0", "n0")], "w0", (hard(HOST, tier),), tier="a")
    pods += _pods([("w1-0", "n0"), ("w1-1", "n0")], "w1", (hard(ZONE, tier),), tier="a")
    return state(nodes, pods)


def _steered() -> ClusterState:
    """Every pod on n0 lacks the keys and must move. w1-0 (minDomains 4 over two hostnames:
    at most one tier=b version=1 pod per host) can only go to n1 once n1 is empty of its kind;
    w0's three pods go to n1 by name unless n1 is full. The fix moves w1-1, of a balanced
    group, so that its replacement (n1 again: the evicted pod holds its room) fills n1 and
    sends w0's pods to n2. It was reported NOT FIXABLE: no search moved a pod that no
    violated group counts."""
    nodes = [
        node("n0", unschedulable=True),
        node("n1", {ZONE: "zb", HOST: "h1"}, max_pods=3),
        node("n2", {ZONE: "za", HOST: "h2"}),
    ]
    w0 = (hard(ZONE, sel(app="w0"), max_skew=3),)
    w1 = (hard(HOST, sel(tier="b"), min_domains=4, match_label_keys=("version",)),)
    pods = _pods([(f"w0-{i}", "n0") for i in range(3)], "w0", w0, tier="b", version="1")
    pods += _pods([("w1-0", "n0")], "w1", w1, tier="b", version="1")
    pods += _pods([("w1-1", "n1")], "w1", w1, tier="b", version="2")
    return state(nodes, pods)


@pytest.mark.parametrize(
    ("cluster", "optimum", "greedy_finds_it"),
    [(_foreign_counted, 1, True), (_steered, 5, False)],
    ids=["foreign", "steered"],
)
def test_the_plan_is_the_optimum(
    cluster: Callable[[], ClusterState],
    optimum: int,
    greedy_finds_it: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = cluster()
    result = plan(analyze(before, POLICY), POLICY)
    evictions = result.moves + result.deferred
    assert all(o.fixable for o in result.outcomes), result.method_note
    assert result.method == ("greedy" if greedy_finds_it else "exact")
    assert misplaced(before.nodes, apply_moves(before, evictions).pods) == []
    assert fewest_evictions(before, POLICY, len(before.pods)) == optimum == len(evictions)
    for o in result.outcomes:  # the report's "at least N move(s)"
        assert o.group.minimum_moves is not None and 1 <= o.group.minimum_moves <= optimum
    monkeypatch.setattr(planner, "EXACT_MOVABLE", 0)  # greedy alone: more, or not fixable
    greedy = plan(analyze(before, POLICY), POLICY)
    alone = len(greedy.moves + greedy.deferred)
    if greedy_finds_it:
        assert alone == optimum and all(o.fixable for o in greedy.outcomes)
    else:
        assert alone > optimum or not all(o.fixable for o in greedy.outcomes)
