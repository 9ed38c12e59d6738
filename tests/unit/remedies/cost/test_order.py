"""The deletion-cost order: table-driven rules (deletion_cost.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import pytest

from respread.analysis.groups import analyze
from respread.core.model import (
    ClusterState,
    Labels,
    Node,
    OwnerRef,
    Phase,
    Pod,
    SpreadConstraint,
)
from respread.inputs.policy import DEFAULT_POLICY, DeletionCostSettings
from respread.remedies.cost.order import CostPlan, OrderState, plan_costs
from respread.scheduling.controller import Tier, current_cost, tier
from tests.support.builders import hard, node, pod, rollout, sel, state, with_cost, zone_node
from tests.support.constants import DELETION_COST, HOST, ZONE
from tests.support.tables import cases

WEB = {"app": "web", "pod-template-hash": "abc"}
RS = OwnerRef("ReplicaSet", "web-abc")


def zone_nodes(*zones: str) -> list[Node]:
    """One node per entry, named n<i>, in that zone (hostname = name)."""
    return [zone_node(f"n{i}", z) for i, z in enumerate(zones)]


def web_pods(
    layout: Mapping[str, int],
    constraints: Iterable[SpreadConstraint],
    *,
    labels: Mapping[str, str] = WEB,
    owner: OwnerRef = RS,
    prefix: str = "web",
) -> list[Pod]:
    out = []
    for node_name, n in layout.items():
        for i in range(n):
            out.append(
                pod(
                    f"{prefix}-{node_name}-{i}",
                    node_name,
                    labels,
                    constraints=constraints,
                    owner=owner,
                )
            )
    return out


def costs_for(cluster: ClusterState, settings: DeletionCostSettings | None = None) -> CostPlan:
    return plan_costs(
        analyze(cluster, DEFAULT_POLICY), settings or DeletionCostSettings(enabled=True)
    )


def zones_of_order(plan: CostPlan) -> list[str]:
    (order,) = plan.orders
    return [dict(p.domains)[ZONE] for p in order.pods]


# --------------------------------------------------------------------------------------------
# The order itself


@dataclass
class Case:
    zones: tuple[str, ...]  # zone of node n0, n1, ...
    layout: dict[str, int]  # web pods per node
    max_skew: int = 1
    min_domains: int | None = None
    # the zone of each removal, in order (the search's own choice where several are safe)
    expected_zones: list[str] = field(default_factory=list)
    safe_steps: int | None = None  # default: every removal


ORDER_CASES = {
    "3/3/3 over three zones: round-robin over zones": Case(
        ("a", "b", "c"),
        {"n0": 3, "n1": 3, "n2": 3},
        expected_zones=["a", "b", "c"] * 3,
    ),
    "4/1/1 (violated): the crowded zone goes first": Case(
        ("a", "b", "c"),
        {"n0": 4, "n1": 1, "n2": 1},
        expected_zones=["a", "a", "a", "a", "b", "c"],
        safe_steps=0,
    ),
    "maxSkew 2 lets a zone run two ahead": Case(
        ("a", "b", "c"),
        {"n0": 3, "n1": 2, "n2": 1},
        max_skew=2,
        expected_zones=["a", "a", "b", "a", "b", "c"],
    ),
    "minDomains above the zones: the minimum is 0, every removal is safe": Case(
        ("a", "b"),
        {"n0": 1, "n1": 1},
        min_domains=3,
        expected_zones=["a", "b"],
    ),
    "an empty eligible zone holds the minimum at 0": Case(
        ("a", "b", "c"),
        {"n0": 1, "n1": 1},
        expected_zones=["a", "b"],
    ),
}


@pytest.mark.parametrize("case", ORDER_CASES.values(), ids=ORDER_CASES.keys())
def test_removal_order_follows_the_zones(case: Case) -> None:
    c = hard(ZONE, sel(app="web"), max_skew=case.max_skew, min_domains=case.min_domains)
    cluster = state(
        zone_nodes(*case.zones), web_pods(case.layout, [c]), workloads=rollout("web", "abc")
    )
    plan = costs_for(cluster)
    (order,) = plan.orders
    assert zones_of_order(plan) == case.expected_zones
    total = sum(case.layout.values())
    assert order.safe_steps == (total if case.safe_steps is None else case.safe_steps)
    assert [p.desired for p in order.pods] == list(range(1, total + 1))
    assert order.workload.kind == "Deployment"
    assert order.replica_set == "web-abc"


def test_zone_and_hostname_together() -> None:
    # zone a: n0 (2 pods), n1 (1); zone b: n2 (2), n3 (1). A zone-only order could take n1's
    # pod first, leaving hostname 2/0 in zone a; the hostname constraint forbids that.
    nodes = zone_nodes("a", "a", "b", "b")
    cs = [hard(ZONE, sel(app="web")), hard(HOST, sel(app="web"))]
    cluster = state(
        nodes, web_pods({"n0": 2, "n1": 1, "n2": 2, "n3": 1}, cs), workloads=rollout("web", "abc")
    )
    (order,) = costs_for(cluster).orders
    assert order.safe_steps == 6
    assert [p.pod.node_name for p in order.pods][:2] in (["n0", "n2"], ["n2", "n0"])


def test_nodes_without_the_key_are_not_counted() -> None:
    # n3 lacks the zone label: its pod counts for no hard constraint (and is misplaced).
    nodes = [*zone_nodes("a", "b", "c"), node("n3", labels={HOST: "n3"})]
    c = hard(ZONE, sel(app="web"))
    cluster = state(
        nodes,
        web_pods({"n0": 1, "n1": 1, "n2": 1, "n3": 1}, [c]),
        workloads=rollout("web", "abc"),
    )
    (order,) = costs_for(cluster).orders
    assert order.pods[0].pod.node_name == "n3"  # the misplaced pod goes first
    assert order.safe_steps == 4  # after it goes, every state is balanced


def test_pods_of_another_workload_that_the_selector_counts() -> None:
    # web's constraint counts tier=front: the other workload's 2 pods in zone a count too, so
    # zone a is full already and web's pod there goes first.
    shared = sel(tier="front")
    web_labels = {**WEB, "tier": "front"}
    other = OwnerRef("ReplicaSet", "api-def")
    pods = web_pods({"n0": 1, "n1": 2, "n2": 2}, [hard(ZONE, shared)], labels=web_labels)
    pods += web_pods(
        {"n0": 2},
        [hard(ZONE, sel(app="api"))],
        labels={"app": "api", "tier": "front"},
        owner=other,
        prefix="api",
    )
    cluster = in_three_zones(pods)
    plan = costs_for(cluster)
    # the api ReplicaSet (no Deployment object in the snapshot) is ordered as its own workload
    assert sorted(o.replica_set for o in plan.orders) == ["api-def", "web-abc"]
    web = next(o for o in plan.orders if o.replica_set == "web-abc")
    assert dict(web.pods[0].domains)[ZONE] == "a"
    assert web.safe_steps == 5


def test_tiers_come_first_whatever_the_cost() -> None:
    c = hard(ZONE, sel(app="web"))
    pods = web_pods({"n0": 2, "n1": 2, "n2": 2}, [c])
    pods[5] = replace(pods[5], ready=False)  # zone c, not ready: the controller takes it first
    pods.append(replace(pods[0], name="web-pending", node_name=None, phase=Phase.PENDING))
    cluster = in_three_zones(pods)
    (order,) = costs_for(cluster).orders
    assert [p.tier for p in order.pods[:2]] == [Tier.UNASSIGNED, Tier.NOT_READY]
    assert order.pods[1].pod.name == pods[5].name
    tiers = [p.tier for p in order.pods]
    assert tiers == sorted(tiers)


TIERS = [
    ("unbound", {"node_name": None, "phase": Phase.PENDING}, Tier.UNASSIGNED),
    ("bound, Pending", {"phase": Phase.PENDING}, Tier.PENDING),
    ("Unknown", {"phase": Phase.UNKNOWN}, Tier.UNKNOWN),
    ("Running, not Ready", {"ready": False}, Tier.NOT_READY),
    ("Running and Ready", {}, Tier.READY),
]


@cases(("changes", "expected"), TIERS)
def test_tier(changes: dict[str, object], expected: Tier) -> None:
    assert tier(replace(pod("p", "n0", WEB), **changes)) is expected  # type: ignore[arg-type]


COSTS = [
    ("absent", None, None),
    ("a number", "-12", -12),
    ("zero", "0", 0),
    ("minus zero", "-0", 0),
    ("leading zeros after a minus", "-007", -7),
    ("int32 bounds", str(2**31 - 1), 2**31 - 1),
    ("int32 lowest", str(-(2**31)), -(2**31)),
    # What strconv.ParseInt after validFirstDigit refuses (the controller reads 0) though
    # Python's int() takes it:
    ("padded", " 7 ", None),
    ("a trailing newline", "7\n", None),
    ("a plus sign", "+7", None),
    ("a leading zero", "007", None),
    ("underscores", "1_000", None),
    ("non-ASCII digits", "\u0663", None),
    ("empty", "", None),
    ("a lone minus", "-", None),
    ("not a number", "high", None),
    ("beyond int32", str(2**31), None),
    ("below int32", str(-(2**31) - 1), None),
]


@cases(("raw", "value"), COSTS)
def test_current_cost(raw: str | None, value: int | None) -> None:
    annotations = Labels({DELETION_COST: raw}) if raw is not None else Labels()
    assert current_cost(replace(pod("p", "n0", WEB), annotations=annotations)) == value


# --------------------------------------------------------------------------------------------
# What is written


def web_with_costs(
    costs: Iterable[int | None], managers: tuple[str, ...] = ("respread",)
) -> list[Pod]:
    """Two web pods on each of n0, n1, n2, with these costs (None: no cost) in that order."""
    pods = web_pods({"n0": 2, "n1": 2, "n2": 2}, [hard(ZONE, sel(app="web"))])
    return [with_cost(p, c, managers) for p, c in zip(pods, costs, strict=True)]


def in_three_zones(pods: Iterable[Pod]) -> ClusterState:
    return state(zone_nodes("a", "b", "c"), pods, workloads=rollout("web", "abc"))


def three_zones(costs: list[int] | None = None, managers: tuple[str, ...] = ()) -> ClusterState:
    return in_three_zones(web_with_costs(costs or [None] * 6, managers))


def test_an_order_already_given_by_the_costs_is_kept() -> None:
    # pods: n0-0 n0-1 n1-0 n1-1 n2-0 n2-1; costs make the order a, b, c, a, b, c
    plan = costs_for(three_zones([10, 40, 20, 50, 30, 60], ("respread",)))
    (order,) = plan.orders
    assert order.state is OrderState.UNCHANGED
    assert [p.desired for p in order.pods] == [10, 20, 30, 40, 50, 60]
    assert plan.patches == ()


def test_costs_that_would_unbalance_a_scale_in_are_rewritten() -> None:
    # costs make the order a, a, b, b, c, c: the second removal leaves zone a 0 vs 2
    plan = costs_for(three_zones([1, 2, 3, 4, 5, 6], ("respread",)))
    (order,) = plan.orders
    assert order.state is OrderState.CHANGES
    assert order.safe_steps == 6
    assert {p.pod.name for p in plan.patches} == {p.pod.name for p in order.pods if p.changed}
    assert plan.patches


def test_a_cost_owned_by_another_manager_is_a_conflict_and_left_alone() -> None:
    plan = costs_for(three_zones([1, 2, 3, 4, 5, 6], ("kubectl-annotate",)))
    (order,) = plan.orders
    assert order.state is OrderState.CONFLICT
    assert len(order.conflicts) == 6
    assert "kubectl-annotate" in order.message
    assert plan.patches == ()


def test_taking_over_writes_the_conflicting_costs() -> None:
    settings = DeletionCostSettings(enabled=True, take_over=True)
    plan = costs_for(three_zones([1, 2, 3, 4, 5, 6], ("kubectl-annotate",)), settings)
    (order,) = plan.orders
    assert order.state is OrderState.CHANGES
    assert any(p.foreign for p in plan.patches)


def test_patches_are_bounded_per_scan() -> None:
    plan = costs_for(three_zones(), DeletionCostSettings(enabled=True, max_patches_per_scan=4))
    assert len(plan.patches) == 4
    assert plan.deferred_patches == 2
    # the first to go first, below the pods still without a cost (read as 0): -6 .. -1
    assert [p.rank for p in plan.patches] == [0, 1, 2, 3]
    assert [p.desired for p in plan.patches] == [-6, -5, -4, -3]
    (order,) = plan.orders
    assert [p.desired for p in order.pods] == [-6, -5, -4, -3, -2, -1]


EXCLUDED: list[tuple[str, OwnerRef | None, str]] = [
    # (id, the pods' controller, the workload kind reported)
    ("StatefulSet", OwnerRef("StatefulSet", "db"), "StatefulSet"),
    ("DaemonSet", OwnerRef("DaemonSet", "agent"), "DaemonSet"),
    ("bare pod", None, "Pod"),
    ("Job", OwnerRef("Job", "batch"), "Job"),
]


@cases(("owner", "kind"), EXCLUDED)
def test_excluded_kinds_are_reported_and_never_ordered(owner: OwnerRef | None, kind: str) -> None:
    c = hard(ZONE, sel(app="web"))
    pods = web_pods({"n0": 2, "n1": 1}, [c], owner=owner) if owner else web_pods({"n0": 1}, [c])
    if owner is None:
        pods = [replace(p, owner=None) for p in pods]
    plan = costs_for(state(zone_nodes("a", "b"), pods))
    assert plan.orders == ()
    assert plan.patches == ()
    (excluded,) = plan.excluded
    assert excluded.workload.kind == kind
    assert excluded.pods == len(pods)
    assert excluded.reason


def test_workloads_without_hard_constraints_are_not_ordered() -> None:
    pods = web_pods({"n0": 2, "n1": 1}, [])
    cluster = state(zone_nodes("a", "b"), pods, workloads=rollout("web", "abc"))
    assert costs_for(cluster) == CostPlan((), (), (), 0)


# (id, pods per node of zones a/b/c/d, nodes whose pods are not Ready, the message's head)
REPORTED_HEADS: list[tuple[str, Mapping[str, int], frozenset[str], str]] = [
    # found by test_deletion_cost_wide.py: balanced now, but the not-Ready pod of the smallest
    # zone goes first whatever its cost, so no order keeps maxSkew at the first removal
    (
        "tier forces the first removal",
        {"n0": 1, "n1": 2, "n2": 2, "n3": 1},
        frozenset({"n3"}),
        "no order found keeps every hard constraint within maxSkew past removal 0 of 6",
    ),
    (
        "violated now",
        {"n0": 4, "n1": 1, "n2": 1, "n3": 1},
        frozenset(),
        "violated now: the first 1 removal(s) take the most misplaced pods",
    ),
    (
        "balanced, all Ready",
        {"n0": 2, "n1": 2, "n2": 1, "n3": 1},
        frozenset(),
        "a scale-in keeps every hard constraint within maxSkew for all 6 removals",
    ),
]


@cases(("layout", "not_ready", "head"), REPORTED_HEADS)
def test_the_message_says_violated_now_only_when_it_is(
    layout: Mapping[str, int], not_ready: frozenset[str], head: str
) -> None:
    pods = [
        replace(p, ready=p.node_name not in not_ready)
        for p in web_pods(layout, [hard(ZONE, sel(app="web"))])
    ]
    plan = costs_for(state(zone_nodes("a", "b", "c", "d"), pods, workloads=rollout("web", "abc")))
    (order,) = plan.orders
    assert order.message.startswith(head), order.message


PARTIAL_WRITES = [
    # (id, the current costs of the pods on n0, n0, n1, n1, n2, n2; None: no cost)
    pytest.param((None,) * 6, id="no costs yet"),
    pytest.param((10, 11, 12, 13, 14, 15), id="old costs above the new ones"),
    pytest.param((-3, -2, -1, 0, 1, 2), id="old costs around zero"),
    pytest.param((5, 5, 5, 5, 5, 5), id="tied old costs"),
    pytest.param((1, None, 3, None, 2, None), id="some costs"),
]
INT32_FLOOR = (-(2**31), -(2**31) + 1, 0, 1, 2, 3)  # no room below: the plain costs (rank + 1)


def controller_ranking(pods: Iterable[Pod]) -> list[tuple[tuple[Tier, int], str]]:
    """The ReplicaSet controller's ranking as far as tier and cost decide it (ties, broken
    by its later keys, come out in name order here and are never relied on)."""
    return sorted(((tier(p), current_cost(p) or 0), p.name) for p in pods)


def apply_patches(pods: list[Pod], plan: CostPlan) -> list[Pod]:
    written = {e.pod.name: e.desired for e in plan.patches}
    return [with_cost(p, written.get(p.name)) for p in pods]


def scans_until_written(pods: list[Pod], cap: int) -> Iterable[tuple[CostPlan, list[Pod]]]:
    """Each scan's plan, and the pods once its patches are written; ends with the plan that
    writes nothing."""
    settings = DeletionCostSettings(enabled=True, max_patches_per_scan=cap)
    for _ in range(len(pods) + 1):
        plan = costs_for(in_three_zones(pods), settings)
        pods = apply_patches(pods, plan)
        yield plan, pods
        if not plan.patches:
            return
    pytest.fail(f"still writing after {len(pods) + 1} scans")


@pytest.mark.parametrize("costs", PARTIAL_WRITES)
def test_a_partial_write_installs_the_order_from_its_head(
    costs: tuple[int | None, ...],
) -> None:
    """A ReplicaSet larger than the cap is written over several scans from the first pod to
    go: after each scan the controller's first removals are exactly the order's, as many as
    are written, whatever the old costs of the pods not yet written; the scans end with the
    whole order installed and nothing more to write."""
    scans = 0
    for plan, pods in scans_until_written(web_with_costs(costs), 2):
        (order,) = plan.orders
        names = [e.pod.name for e in order.pods]
        assert order.safe_steps == 6
        if not plan.patches:
            break
        scans += 1
        assert len(plan.patches) <= 2
        written = max(names.index(e.pod.name) for e in plan.patches) + 1
        ranking = controller_ranking(pods)
        assert [name for _, name in ranking[:written]] == names[:written], ranking
        rest = [key for key, _ in ranking[written:]]
        assert not rest or ranking[written - 1][0] < min(rest), ranking
    assert scans <= 3
    assert [name for _, name in controller_ranking(pods)] == names
    assert order.state is OrderState.UNCHANGED


def test_a_partial_write_without_room_below_writes_the_plain_costs() -> None:
    """Old costs at the bottom of the int32 range leave no room below them: the order is
    written with costs rank + 1 (the controller takes the pods at the floor first until they
    are written) and is installed all the same."""
    plans = list(scans_until_written(web_with_costs(INT32_FLOOR), 2))
    assert [e.desired for e in plans[0][0].patches] == [1, 2]
    *_, (final, pods) = plans
    (order,) = final.orders
    assert order.state is OrderState.UNCHANGED and order.safe_steps == 6
    assert [name for _, name in controller_ranking(pods)] == [e.pod.name for e in order.pods]
