"""The landing predictor (respread.scheduling.landing): where the scheduler puts an evicted pod's
replacement. One zone constraint (maxSkew 1, the workload's own pods) over three zones; the
victim is taken out of the counts first, as the planner does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from respread.core.kernel import CountTable
from respread.core.model import Node, Pod, Resources
from respread.scheduling.landing import LandingPredictor
from respread.scheduling.spread import SpreadIndex
from tests.support.builders import WEB, hard, node, pod, state

ZONE_SPREAD = (hard("zone", WEB),)


def web(name: str, where: str, cpu: int = 0) -> Pod:
    p = pod(name, where, {"app": "web"}, constraints=ZONE_SPREAD)
    return replace(p, spec=replace(p.spec, requests=Resources(cpu=cpu)))


def predict(
    nodes: list[Node], placed: dict[str, int], require_fit: bool = True, cpu: int = 0
) -> tuple[LandingPredictor, list[CountTable], SpreadIndex, Pod]:
    pods = [web(f"{n}-{i}", n, cpu) for n, k in placed.items() for i in range(k)]
    cluster = state(nodes, pods)
    index = SpreadIndex(cluster)
    victim = pods[0]
    profile = index.profile_of(victim)
    tables = [t.copy() for t in index.tables(profile)]
    assert victim.node_name is not None
    tables[0].add(tables[0].space.node_domain[victim.node_name], -1)
    return LandingPredictor(cluster.nodes, cluster.pods, require_fit), tables, index, victim


def land(
    nodes: list[Node], placed: dict[str, int], require_fit: bool = True, cpu: int = 0
) -> tuple[str | None, str]:
    predictor, tables, index, victim = predict(nodes, placed, require_fit, cpu)
    target, why = predictor.land(index.profile_of(victim), tuple(tables), [0], victim)
    return (target.name if target else None), why


ZONES = [node("a1", zone="za"), node("b1", zone="zb"), node("c1", zone="zc"), node("c2", zone="zc")]
CPU = Resources(cpu=1000)


@pytest.mark.parametrize(
    ("nodes", "placed", "require_fit", "landed"),
    [
        # za 3 -> 2, zb 1, zc 0: only zc passes the Filter (2 + 1 - 0 > 1 elsewhere)
        (ZONES, {"a1": 3, "b1": 1}, True, "c1"),
        # zb and zc both pass with 1 and 0 pods: the fewest matching pods wins
        (ZONES, {"a1": 3, "b1": 1, "c2": 0}, True, "c1"),
        # zc 1 (on c2), zb 1: a tie on the score goes to the least node name
        (ZONES, {"a1": 3, "b1": 1, "c2": 1}, True, "b1"),
        # a cordoned node is skipped with requireFit, taken without
        ([*ZONES[:2], node("c1", zone="zc", unschedulable=True)], {"a1": 3, "b1": 1}, True, None),
        ([*ZONES[:2], node("c1", zone="zc", unschedulable=True)], {"a1": 3, "b1": 1}, False, "c1"),
        # a node without the zone key never passes the Filter (a0 would win on its name)
        ([node("a0"), *ZONES[:2]], {"a1": 3, "b1": 2}, True, "a1"),
    ],
    ids=["filter", "score", "tie-by-name", "cordoned", "cordoned-no-fit", "keyless"],
)
def test_landing(
    nodes: list[Node], placed: dict[str, int], require_fit: bool, landed: str | None
) -> None:
    target, why = land(nodes, placed, require_fit)
    assert target == landed
    assert (why == "") is (landed is not None)


def test_the_refusal_counts_nodes_by_reason() -> None:
    nodes = [*ZONES[:2], node("c1", zone="zc", unschedulable=True)]
    _, why = land(nodes, {"a1": 3, "b1": 1})
    assert why == (
        "no node would take the replacement "
        "(topology spread: 2 node(s); node is cordoned: 1 node(s))"
    )


def test_reserved_room_sends_the_next_replacement_elsewhere() -> None:
    nodes = [
        node("a1", zone="za"),
        node("b1", zone="zb"),
        replace(node("c1", zone="zc"), allocatable=CPU, max_pods=10),
        replace(node("c2", zone="zc"), allocatable=CPU, max_pods=10),
    ]
    predictor, tables, index, victim = predict(nodes, {"a1": 4, "b1": 2}, cpu=600)
    profile = index.profile_of(victim)
    first, _ = predictor.land(profile, tuple(tables), [0], victim)
    assert first is not None and first.name == "c1"
    predictor.reserve("c1", victim.spec.requests)
    second, _ = predictor.land(profile, tuple(tables), [0], victim)
    assert second is not None and second.name == "c2"  # c1 has 400m left
    predictor.reserve("c2", victim.spec.requests)
    third, why = predictor.land(profile, tuple(tables), [0], victim)
    assert third is None and "insufficient resources: 2 node(s)" in why
    predictor.release("c1", victim.spec.requests)
    again, _ = predictor.land(profile, tuple(tables), [0], victim)
    assert again is not None and again.name == "c1"


def test_a_full_node_takes_nothing_until_room_is_released() -> None:
    """A node holding its maxPods takes no replacement, whatever it requests, and counts as
    "no room" in the refusal; reserving fills it, releasing opens it again."""
    nodes = [
        node("a1", zone="za"),
        node("b1", zone="zb"),
        replace(node("c1", zone="zc"), max_pods=1),
        replace(node("c2", zone="zc"), allocatable=CPU, max_pods=10),
    ]
    predictor, tables, index, victim = predict(nodes, {"a1": 4, "b1": 2}, cpu=600)
    profile = index.profile_of(victim)

    def admitted() -> list[str]:
        return [n.name for _, n in predictor.admitted(profile, tuple(tables), [0], victim)]

    first, _ = predictor.land(profile, tuple(tables), [0], victim)
    assert first is not None and first.name == "c1"
    assert admitted() == ["c1", "c2"]
    predictor.reserve("c1", victim.spec.requests)  # c1 now holds its one pod
    second, _ = predictor.land(profile, tuple(tables), [0], victim)
    assert second is not None and second.name == "c2"
    assert admitted() == ["c2"]
    predictor.reserve("c2", victim.spec.requests)  # c2 has 400m left
    third, why = predictor.land(profile, tuple(tables), [0], victim)
    assert third is None
    assert why == (
        "no node would take the replacement (topology spread: 2 node(s); "
        "no room: 1 node(s); insufficient resources: 1 node(s))"
    )
    assert admitted() == []
    predictor.release("c1", victim.spec.requests)
    again, _ = predictor.land(profile, tuple(tables), [0], victim)
    assert again is not None and again.name == "c1"


def test_passing_is_the_kernel_rule_node_by_node() -> None:
    predictor, tables, index, victim = predict(ZONES, {"a1": 3, "b1": 1, "c2": 1})
    profile = index.profile_of(victim)
    passing = predictor.passing(profile, 0, tables[0])
    ranks = {n.name: r for r, n in enumerate(predictor.node_sets.by_rank)}
    # za 2, zb 1, zc 1: ceiling 0 + min 1 = 1
    assert {n for n, r in ranks.items() if passing >> r & 1} == {"b1", "c1", "c2"}
