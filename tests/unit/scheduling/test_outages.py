"""Domain outages (scheduling/outages.py): every node down past the grace period."""

from __future__ import annotations

from typing import Any

import pytest

from respread.core.model import Effect, Node
from respread.scheduling.outages import outages
from tests.support import builders as make
from tests.support.constants import ZONE

UNREACHABLE = make.taint("node.kubernetes.io/unreachable", effect=Effect.NO_EXECUTE)
NOT_READY = make.taint("node.kubernetes.io/not-ready", effect=Effect.NO_SCHEDULE)
NOW = 10_000.0
GRACE = 300.0


def _node(name: str, zone: str, **kw: Any) -> Node:
    changed = kw.pop("changed", None)
    n = make.zone_node(name, zone, **kw)
    return Node(**{**{f: getattr(n, f) for f in n.__slots__}, "ready_changed": changed})


# name -> (zone c's nodes, expected outage domains of the zone key)
CASES: dict[str, tuple[list[Node], list[str]]] = {
    "all NotReady, long ago": (
        [_node("c1", "c", ready=False, changed=0.0), _node("c2", "c", ready=False, changed=0.0)],
        ["c"],
    ),
    "all unreachable-tainted, time unknown": (
        [_node("c1", "c", taints=[UNREACHABLE]), _node("c2", "c", taints=[NOT_READY])],
        ["c"],
    ),
    "one node still Ready": (
        [_node("c1", "c", ready=False, changed=0.0), _node("c2", "c")],
        [],
    ),
    "down within the grace period": (
        [_node("c1", "c", ready=False, changed=NOW - 60), _node("c2", "c", ready=False)],
        [],
    ),
    "down just past the grace period": (
        [_node("c1", "c", ready=False, changed=NOW - GRACE)],
        ["c"],
    ),
    "a cordoned node is not down": ([_node("c1", "c", unschedulable=True)], []),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_domain_is_in_an_outage_when_every_node_is_down_past_the_grace(name: str) -> None:
    zone_c, expected = CASES[name]
    nodes = [_node("a1", "a"), _node("b1", "b"), *zone_c]
    found = outages(nodes, [ZONE], NOW, GRACE)
    assert [o.domain for o in found] == expected
    assert all(o.key == ZONE for o in found)


def test_outages_are_per_topology_key() -> None:
    nodes = [
        _node("a1", "a", ready=False, labels={"rack": "r1"}),
        _node("a2", "a", labels={"rack": "r2"}),
    ]
    found = outages(nodes, [ZONE, "rack"], NOW, GRACE)
    assert [str(o) for o in found] == ["rack=r1"]
