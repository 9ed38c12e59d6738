"""Pods held Pending by spread (analysis/pending.py): which domain binds, why, what unblocks."""

from __future__ import annotations

from typing import Any

import pytest

from respread.analysis.groups import analyze
from respread.analysis.pending import Obstacle, UnblockKind, pending_pods
from respread.core.model import UNSCHEDULABLE_TAINT, OwnerRef, Resources
from tests.support import builders as make
from tests.support.constants import ZONE

ROOMY = Resources(cpu=4000, memory=8 << 30)
TIGHT = Resources(cpu=1000, memory=8 << 30)
SPREAD = (make.hard(ZONE, make.WEB),)
SPREAD_MIN3 = (make.hard(ZONE, make.WEB, min_domains=3),)
OWNER = OwnerRef("ReplicaSet", "web-1")


def _web(name: str, node: str | None, constraints: Any = SPREAD, cpu: int = 500) -> Any:
    return make.pod(
        name,
        node,
        {"app": "web"},
        constraints=constraints,
        requests=Resources(cpu=cpu),
        owner=OWNER,
        created=0.0,
    )


def _other(name: str, node: str, cpu: int) -> Any:
    return make.pod(
        name, node, {"app": "batch"}, requests=Resources(cpu=cpu), owner=OwnerRef("Job", "j")
    )


# name -> (nodes, extra pods, constraints, expected obstacle, admitted domains, unblock kinds)
CASES: dict[str, tuple[Any, ...]] = {
    "zone c full of another workload's pod: a move makes room": (
        [("a1", "a", {}), ("b1", "b", {}), ("c1", "c", {"allocatable": TIGHT})],
        [_other("batch-0", "c1", 800)],
        SPREAD,
        Obstacle.FULL,
        ["c"],
        [UnblockKind.MOVE, UnblockKind.CAPACITY],
    ),
    "zone c full of a pod no controller replaces: capacity only": (
        [("a1", "a", {}), ("b1", "b", {}), ("c1", "c", {"allocatable": TIGHT})],
        [make.pod("bare", "c1", {"app": "x"}, requests=Resources(cpu=800))],
        SPREAD,
        Obstacle.FULL,
        ["c"],
        [UnblockKind.CAPACITY],
    ),
    "zone c cordoned": (
        [("a1", "a", {}), ("b1", "b", {}), ("c1", "c", {"unschedulable": True})],
        [],
        SPREAD,
        Obstacle.CORDONED,
        ["c"],
        [UnblockKind.CAPACITY],
    ),
    "zone c cordoned with the node controller's taint": (
        [("a1", "a", {}), ("b1", "b", {}), ("c1", "c", {"taints": [UNSCHEDULABLE_TAINT]})],
        [],
        SPREAD,
        Obstacle.CORDONED,
        ["c"],
        [UnblockKind.CAPACITY],
    ),
    "zone c tainted": (
        [("a1", "a", {}), ("b1", "b", {}), ("c1", "c", {"taints": [make.taint("gpu")]})],
        [],
        SPREAD,
        Obstacle.TAINTED,
        ["c"],
        [UnblockKind.CAPACITY],
    ),
    "minDomains 3 with zone c gone": (
        [("a1", "a", {}), ("b1", "b", {})],
        [],
        SPREAD_MIN3,
        Obstacle.GONE,
        [],
        [UnblockKind.CAPACITY],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_pod_held_by_spread_is_found_with_its_binding_domain(name: str) -> None:
    nodes, extra, constraints, obstacle, admitted, unblock = CASES[name]
    cluster = make.state(
        [make.zone_node(n, z, **{"allocatable": ROOMY, **kw}) for n, z, kw in nodes],
        [
            _web("web-a", "a1", constraints),
            _web("web-b", "b1", constraints),
            _web("web-p", None, constraints),
            *extra,
        ],
    )
    policy = make.eviction_policy()
    found = pending_pods(analyze(cluster, policy), policy, now=1000.0)
    assert [p.pod.name for p in found] == ["web-p"]
    (p,) = found
    assert p.obstacle is obstacle
    assert [a.domain for a in p.admitted] == admitted
    assert [u.kind for u in p.unblock] == unblock
    assert p.topology_key == ZONE


# name -> (nodes, pending pod's cpu): cases where spread is not what keeps the pod Pending
NOT_HELD: dict[str, tuple[Any, ...]] = {
    "zone c has room: the scheduler will place it": ([("c1", "c", {})], 500),
    "no node has room anywhere: capacity, not spread": (
        [("c1", "c", {"allocatable": TIGHT})],
        3000,
    ),
}


@pytest.mark.parametrize("name", sorted(NOT_HELD))
def test_a_pod_spread_does_not_hold_is_not_reported(name: str) -> None:
    extra_nodes, cpu = NOT_HELD[name]
    small = {"allocatable": Resources(cpu=1000, memory=8 << 30)}
    nodes = [("a1", "a", small), ("b1", "b", small), *extra_nodes]
    cluster = make.state(
        [make.zone_node(n, z, **{"allocatable": ROOMY, **kw}) for n, z, kw in nodes],
        [_web("web-a", "a1"), _web("web-b", "b1"), _web("web-p", None, cpu=cpu)],
    )
    policy = make.eviction_policy()
    assert pending_pods(analyze(cluster, policy), policy, now=1000.0) == []


def test_the_scheduler_message_is_kept_as_evidence() -> None:
    nodes = [make.zone_node("a1", "a"), make.zone_node("b1", "b")]
    held = make.pod(
        "web-p",
        None,
        {"app": "web"},
        constraints=SPREAD_MIN3,
        owner=OWNER,
        unschedulable="Unschedulable: 0/2 nodes are available",
    )
    cluster = make.state(nodes, [_web("a", "a1", SPREAD_MIN3), _web("b", "b1", SPREAD_MIN3), held])
    policy = make.eviction_policy()
    (p,) = pending_pods(analyze(cluster, policy), policy, now=1000.0)
    assert p.evidence == "Unschedulable: 0/2 nodes are available"


def _full_zone_c(*budgets: Any) -> Any:
    nodes = [
        make.zone_node("a1", "a", allocatable=ROOMY),
        make.zone_node("b1", "b", allocatable=ROOMY),
        make.zone_node("c1", "c", allocatable=TIGHT),
    ]
    pods = [_web("web-a", "a1"), _web("web-b", "b1"), _web("web-p", None)]
    return make.state(nodes, [*pods, _other("batch-0", "c1", 800)], budgets=budgets)


# name -> (budgets, policy settings, the pods the plan evicts)
PLANS: dict[str, tuple[Any, ...]] = {
    "the move that makes room is planned": ((), {}, ["batch-0"]),
    "a budget that allows no disruption refuses it": (
        (make.budget("batch", make.sel(app="batch"), allowed=0),),
        {},
        [],
    ),
    "a budget that allows one lets it": (
        (make.budget("batch", make.sel(app="batch"), allowed=1),),
        {},
        ["batch-0"],
    ),
    "maxPerRun 0 leaves it out": ((), {"max_per_run": 0}, []),
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_the_plan_makes_the_unblocking_move_within_budgets_and_caps(name: str) -> None:
    from respread.pipeline import scan

    budgets, settings, evicted = PLANS[name]
    result = scan(_full_zone_c(*budgets), make.eviction_policy(**settings), 1000.0)
    assert [e.pod.name for e in result.report.evictions] == evicted
    assert [p.pod.name for p in result.report.pending] == ["web-p"]
