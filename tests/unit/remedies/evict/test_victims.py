"""The victim strategy (respread.remedies.evict.victims): the order a group's misplaced pods are
tried in, and the pods of other workloads tried for it: foreign pods its selector counts where it is
crowded, and followers that mend a spread the group's own move would break."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from respread.analysis.groups import Analysis, Members, analyze
from respread.analysis.tally import SimCounts
from respread.core.model import ClusterState, Labels, OwnerRef, Pod, Policy, SpreadConstraint, When
from respread.remedies.evict import victims
from respread.remedies.evict.steps import Skip, SkipKind
from tests.support.builders import WEB, eviction_policy, hard, node, pod, sel, state

POLICY = eviction_policy()
BY_ZONE = (hard("zone", WEB),)
ZONE_AND_HOST = (hard("zone", WEB), hard("host", WEB))
# pinned pods judged over every zone: one profile with the unpinned ones
ZONE_ANY_AFFINITY = (hard("zone", WEB, affinity=Policy.IGNORE),)


def web(
    name: str,
    where: str,
    constraints: tuple[SpreadConstraint, ...] = BY_ZONE,
    priority: int = 0,
    created: float = 0.0,
    pinned: bool = False,
    app: str = "web",
    labels: dict[str, str] | None = None,
) -> Pod:
    return pod(
        name,
        where,
        labels or {"app": app},
        constraints=constraints,
        owner=OwnerRef("ReplicaSet", f"{app}-rs"),
        priority=priority,
        node_selector={"zone": "za"} if pinned else None,
        created=created,
    )


def setup(cluster: ClusterState) -> tuple[Analysis, SimCounts]:
    analysis = analyze(cluster, POLICY)
    return analysis, SimCounts(analysis, POLICY.constraints.when_unsatisfiable)


def members(analysis: Analysis, app: str) -> Members:
    return next(m for m in analysis.members if m.workload.name == f"{app}-rs")


def order(cluster: ClusterState) -> list[str]:
    analysis, counts = setup(cluster)
    return [p.name for p, _ in victims.candidates(counts, members(analysis, "web"), set(), {})]


THREE_ZONES = [node("a1", zone="za", host="a1"), node("b1", zone="zb", host="b1")]

VICTIM_ORDER = [
    # lowest priority first
    (
        THREE_ZONES,
        [web("hi", "a1", priority=10), web("lo", "a1"), web("mid", "a1", priority=5)],
        ["lo", "mid", "hi"],
    ),
    # then unpinned before pinned, then the youngest
    (
        THREE_ZONES,
        [
            web("pin", "a1", ZONE_ANY_AFFINITY, pinned=True, created=9),
            web("old", "a1", ZONE_ANY_AFFINITY),
            web("new", "a1", ZONE_ANY_AFFINITY, created=5),
        ],
        ["new", "old", "pin"],
    ),
    # the node holding the most of the group first
    (
        [node("a1", zone="za"), node("a2", zone="za"), node("b1", zone="zb")],
        [web("alone", "a2", created=9), web("x", "a1"), web("y", "a1")],
        ["x", "y", "alone"],
    ),
    # the most crowded domain first (above the global minimum), before priority
    (
        [node("a1", zone="za"), node("b1", zone="zb"), node("c1", zone="zc")],
        [*(web(f"a{i}", "a1", priority=5) for i in range(4)), web("b0", "b1"), web("b1", "b1")],
        ["a0", "a1", "a2", "a3", "b0", "b1"],
    ),
    # a pod on a node without the key first: every fix moves it
    (
        [node("a1", zone="za"), node("b1", zone="zb"), node("x1")],
        [*(web(f"a{i}", "a1") for i in range(3)), web("keyless", "x1", priority=9)],
        ["keyless", "a0", "a1", "a2"],
    ),
    # pods breaking more of the workload's constraints first (zone and host on a1)
    (
        [
            node("a1", zone="za", host="a1"),
            node("a2", zone="za", host="a2"),
            node("b1", zone="zb", host="b1"),
        ],
        [
            web("two", "a1", ZONE_AND_HOST),
            web("two-too", "a1", ZONE_AND_HOST),
            web("one", "a2", ZONE_AND_HOST, priority=-1),
        ],
        ["two", "two-too", "one"],
    ),
]


@pytest.mark.parametrize(
    ("nodes", "pods", "expected"),
    VICTIM_ORDER,
    ids=["priority", "pinned-youngest", "crowded-node", "crowded-domain", "keyless", "broken"],
)
def test_victim_order(nodes: list[object], pods: list[Pod], expected: list[str]) -> None:
    assert order(state(nodes, pods)) == expected  # type: ignore[arg-type]


def test_moved_and_skipped_pods_are_not_candidates_unless_refused_for_the_counts() -> None:
    cluster = state(THREE_ZONES, [web(f"p{i}", "a1", created=i) for i in range(3)])
    analysis, counts = setup(cluster)
    m = members(analysis, "web")
    p0, p1, p2 = (next(p for p in cluster.pods if p.name == f"p{i}") for i in range(3))
    skipped = {
        (p1.namespace, p1.name): Skip(p1, m.workload, SkipKind.WOULD_VIOLATE, "x"),
        (p0.namespace, p0.name): Skip(p0, m.workload, SkipKind.PROTECTED, "x"),
    }
    moved = {(p2.namespace, p2.name)}
    names = [p.name for p, _ in victims.candidates(counts, m, moved, skipped)]
    assert names == []
    names = [p.name for p, _ in victims.candidates(counts, m, moved, skipped, refused_too=True)]
    assert names == ["p1"]


# ---- across workloads ------------------------------------------------------------------


def tiered(
    app: str, tier: str, where: Sequence[str], spec_constraint: SpreadConstraint, **kw: object
) -> list[Pod]:
    return [
        web(
            f"{app}-{i}",
            n,
            (spec_constraint,),
            created=float(i),
            labels={"app": app, "tier": tier},
            app=app,
            **kw,
        )  # type: ignore[arg-type]
        for i, n in enumerate(where)
    ]


def counts_tier(key: str, tier: str, affinity: Policy | None = None) -> SpreadConstraint:
    return SpreadConstraint(
        1, key, When.DO_NOT_SCHEDULE, sel(tier=tier), node_affinity_policy=affinity
    )


def test_foreign_pods_are_the_other_workloads_pods_counted_where_the_group_is_crowded() -> None:
    # w0 counts every tier=a pod by zone and is pinned to za, which holds 1 + 9 of them; w1's
    # pod in zb is counted too, but zb is not where w0 fails.
    w0 = tiered("w0", "a", ["a1"], counts_tier("zone", "a", Policy.IGNORE), pinned=True)
    w1 = tiered("w1", "a", ["a1"] * 9 + ["b1"], hard("zone", sel(app="w1")))
    cluster = state([node("a1", zone="za"), node("b1", zone="zb")], [*w0, *w1])
    analysis, counts = setup(cluster)
    found = victims.foreign(counts, members(analysis, "w0"), set(), {})
    assert len(found) == victims.FOREIGN_TRIALS
    assert {x.workload.name for x, _, _ in found} == {"w1-rs"}
    # the youngest first; b1's pod (w1-9) is not in a crowded domain
    assert [p.name for _, p, _ in found] == [f"w1-{i}" for i in range(8, 0, -1)]
    assert found[0][2] == (
        "counted by the zone spread of ReplicaSet default/w0-rs: zone za holds 10 of its pods"
    )
    moved = {(found[0][1].namespace, found[0][1].name)}
    again = victims.foreign(counts, members(analysis, "w0"), moved, {})
    assert next(p.name for _, p, _ in again) == "w1-7"


def test_no_foreign_pods_when_the_selector_counts_only_the_group() -> None:
    cluster = state(THREE_ZONES, [web(f"p{i}", "a1") for i in range(3)])
    analysis, counts = setup(cluster)
    assert victims.foreign(counts, members(analysis, "web"), set(), {}) == []


def test_followers_are_the_misplaced_pods_of_the_workloads_a_move_breaks() -> None:
    # w0 (zone, its own pods) sits all in za; w1's hostname spread counts every tier=b pod.
    # Moving w0-0 from a1 to c1 crowds c1 for w1: w1's pods there follow first.
    w0 = tiered("w0", "b", ["a1", "a2"], hard("zone", sel(app="w0")))
    w1 = tiered("w1", "b", ["c1", "c1", "a2"], counts_tier("host", "b"))
    nodes = [
        node("a1", zone="za", host="a1"),
        node("a2", zone="za", host="a2"),
        node("c1", zone="zc", host="c1"),
    ]
    analysis, counts = setup(state(nodes, [*w0, *w1]))
    m0, m1 = members(analysis, "w0"), members(analysis, "w1")
    mover = w0[0]
    assert victims.followers(counts, m0, mover, set(), {}) == []  # nothing broken yet
    counts.shift(counts.tables_counting(mover), "a1", -1)
    counts.shift(counts.tables_counting(mover), "c1", +1)
    counts.relocate(m0, mover, "a1", "c1")
    found = victims.followers(counts, m0, mover, {(mover.namespace, mover.name)}, {})
    assert all(x is m1 for x, _ in found)
    assert [(p.name, p.node_name) for _, p in found] == [
        ("w1-1", "c1"),
        ("w1-0", "c1"),
        ("w1-2", "a2"),
    ]


def test_a_pods_own_labels_decide_which_groups_count_it() -> None:
    pods = [web("w-0", "a1", labels={"app": "web", "tier": "a"})]
    analysis, counts = setup(state(THREE_ZONES, pods))
    (m,) = analysis.members
    assert counts.tables_counting(pods[0]) == list(counts.tables(m.profile))
    assert m.labels == Labels({"app": "web", "tier": "a"})
