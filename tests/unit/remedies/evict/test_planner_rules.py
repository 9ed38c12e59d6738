"""The planner's rules, one table row each: budgets, caps, protections, victim order, fit."""

from __future__ import annotations

from dataclasses import replace

from respread.analysis.groups import WorkloadRef, analyze
from respread.core.model import (
    ClusterState,
    DisruptionBudget,
    Labels,
    LabelSelector,
    Node,
    NodeAffinity,
    OwnerRef,
    Pod,
    Resources,
)
from respread.inputs.policy import RebalancePolicy, Selection
from respread.remedies.evict.planner import Plan, SkipKind, StepState, plan
from tests.support.builders import (
    APP_WEB,
    WEB,
    budget,
    eviction_policy,
    hard,
    pod,
    pod_spec,
    sel,
    state,
    zone_node,
)
from tests.support.constants import HOST, ZONE
from tests.support.tables import cases

SPEC = pod_spec((hard(ZONE, WEB),), requests=Resources(cpu=100))
RS = OwnerRef("ReplicaSet", "web-5d4f")
WORKLOAD = WorkloadRef("ns", "ReplicaSet", "web-5d4f")
TWO_ZONES = (zone_node("a1", "a"), zone_node("b1", "b"))


def web(name: str, node_name: str, **changes: object) -> Pod:
    """One of the ReplicaSet's pods in namespace ns: spread by zone, 100m CPU, created at 1000."""
    fields = {"labels": APP_WEB, "spec": SPEC, "owner": RS, "created": 1000.0, **changes}
    return pod(name, node_name, namespace="ns", **fields)


def cluster(
    *pods: Pod, budgets: tuple[DisruptionBudget, ...] = (), nodes: tuple[Node, ...] = TWO_ZONES
) -> ClusterState:
    return state(nodes, pods, budgets=budgets)


def skewed(*overrides: Pod) -> tuple[Pod, ...]:
    """4 pods in zone a and none in zone b: two moves fix it. ``overrides`` replace by name."""
    pods = {p.name: p for p in (web(f"web-{i}", "a1", created=1000.0 + i) for i in range(4))}
    pods.update({p.name: p for p in overrides})
    return tuple(pods.values())


def run(
    cluster: ClusterState,
    pol: RebalancePolicy | None = None,
    now: float | None = None,
    history: dict[WorkloadRef, float] | None = None,
) -> Plan:
    pol = pol or eviction_policy()
    return plan(analyze(cluster, pol), pol, now=now, history=history)


def web_budget(
    allowed: int, name: str = "web", generation: int = 1, selector: LabelSelector = WEB
) -> DisruptionBudget:
    """A budget over 4 healthy pods, its status observed at generation 1."""
    return budget(
        name,
        selector,
        allowed=allowed,
        namespace="ns",
        generation=generation,
        observed=1,
        healthy=4,
        desired=4 - allowed,
    )


def test_two_moves_fix_four_to_zero() -> None:
    result = run(cluster(*skewed()))
    assert [(m.from_node, m.to_node) for m in result.moves] == [("a1", "b1"), ("a1", "b1")]
    assert result.predicted_violations == 0


PROTECTION_CASES = [
    ("respread opt-out", {"annotations": Labels({"respread.io/evict": "false"})}, "opted out"),
    ("karpenter", {"annotations": Labels({"karpenter.sh/do-not-disrupt": "true"})}, "opted out"),
    (
        "autoscaler",
        {"annotations": Labels({"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"})},
        "opted out",
    ),
    ("bare pod", {"owner": None}, "bare pod"),
    ("daemonset", {"owner": OwnerRef("DaemonSet", "agent")}, "DaemonSet"),
    ("unknown owner", {"owner": OwnerRef("CloneSet", "x")}, "not known to replace"),
    ("system critical", {"priority": 2_000_000_000}, "system-critical"),
    ("local storage", {"spec": replace(SPEC, local_storage=True)}, "local storage"),
]


@cases(("field", "why"), PROTECTION_CASES)
def test_protected_pods_are_never_planned(field: dict[str, object], why: str) -> None:
    pods = tuple(web(f"web-{i}", "a1", created=1000.0 + i, **field) for i in range(4))
    result = run(cluster(*pods))
    assert result.moves == () and result.deferred == ()
    assert len(result.skipped) == 4
    assert all(s.kind is SkipKind.PROTECTED and why in s.reason for s in result.skipped)
    assert not result.outcomes[0].fixable


def test_a_protected_pod_is_passed_over_for_the_next() -> None:
    opted_out = web(
        "web-3", "a1", created=1003.0, annotations=Labels({"respread.io/evict": "false"})
    )
    result = run(cluster(*skewed(opted_out)))
    assert [m.pod.name for m in result.moves] == ["web-2", "web-1"]
    assert [s.pod.name for s in result.skipped] == ["web-3"]


def test_local_storage_may_be_allowed_per_pod() -> None:
    allowed = web(
        "web-3",
        "a1",
        created=1003.0,
        spec=replace(SPEC, local_storage=True),
        annotations=Labels({"respread.io/evict": "true"}),
    )
    result = run(cluster(*skewed(allowed)))
    assert result.moves[0].pod.name == "web-3"


def test_young_pods_wait_for_min_pod_age() -> None:
    result = run(cluster(*skewed()), eviction_policy(min_pod_age=300.0), now=1002.5)
    assert all(m.pod.name in ("web-0", "web-1", "web-2") for m in result.moves)
    assert any("minPodAge" in s.reason for s in result.skipped)


def test_pod_selector_limits_which_pods_may_go() -> None:
    only_canary = sel(track="canary")
    pol = replace(
        eviction_policy(),
        selection=Selection(exclude_namespaces=frozenset(), pod_selector=only_canary),
    )
    result = run(cluster(*skewed()), pol)
    assert result.moves == ()
    assert {s.reason for s in result.skipped} == {"outside the policy's podSelector"}


BUDGET_CASES = [
    ("no disruption allowed", (web_budget(0),), SkipKind.BLOCKED, "allows no disruption"),
    ("stale status", (web_budget(2, generation=2),), SkipKind.BLOCKED, "stale"),
    (
        "two budgets",
        (web_budget(2, "one"), web_budget(2, "two")),
        SkipKind.BLOCKED,
        "covered by 2 PodDisruptionBudgets",
    ),
]


@cases(("budgets", "kind", "why"), BUDGET_CASES)
def test_budgets_that_refuse_block_every_covered_pod(
    budgets: tuple[DisruptionBudget, ...], kind: SkipKind, why: str
) -> None:
    result = run(cluster(*skewed(), budgets=budgets))
    assert result.moves == () and result.deferred == ()
    assert {s.kind for s in result.skipped} == {kind}
    assert all(why in s.reason for s in result.skipped)
    assert not result.outcomes[0].fixable


def test_a_blocked_pod_is_replaced_by_an_uncovered_one() -> None:
    guarded = Labels({"app": "web", "guarded": "yes"})
    only_guarded = sel(guarded="yes")
    pods = skewed(web("web-3", "a1", created=1003.0, labels=guarded))
    result = run(cluster(*pods, budgets=(web_budget(0, selector=only_guarded),)))
    assert [m.pod.name for m in result.moves] == ["web-2", "web-1"]


def test_a_budget_used_up_by_the_plan_defers_the_rest() -> None:
    result = run(cluster(*skewed(), budgets=(web_budget(1),)))
    assert len(result.moves) == 1
    (deferred,) = result.deferred
    assert deferred.state is StepState.DEFERRED
    assert "all used by this plan" in deferred.deferred_by
    assert result.budgets_used == {"ns/web": 1}
    assert result.outcomes[0].fixable


CAP_CASES = [
    ("maxPerRun", {"max_per_run": 1}, "maxPerRun 1 reached"),
    ("maxPerWorkload", {"max_per_workload": 1}, "maxPerWorkload 1 reached"),
    ("maxPerNamespace", {"max_per_namespace": 1}, "maxPerNamespace 1 reached"),
    ("maxPerNode", {"max_per_node": 1}, "maxPerNode 1 reached on a1"),
]


@cases(("caps", "why"), CAP_CASES)
def test_caps_defer_what_they_hold_back(caps: dict[str, object], why: str) -> None:
    result = run(cluster(*skewed()), eviction_policy(**caps))
    assert len(result.moves) == 1
    assert [d.deferred_by for d in result.deferred] == [why]
    assert result.predicted_violations == 1 and result.outcomes[0].fixable


def test_cooldown_defers_a_workload_evicted_recently() -> None:
    result = run(
        cluster(*skewed()), eviction_policy(cooldown=600.0), now=5000.0, history={WORKLOAD: 4800.0}
    )
    assert result.moves == ()
    assert all(d.deferred_by.startswith("cooldown") for d in result.deferred)


ORDER_CASES = [
    ("youngest first", {}, "web-3"),
    ("lowest priority first", {"web-0": {"priority": -5}}, "web-0"),
    (
        "pinned last",
        {"web-3": {"spec": replace(SPEC, affinity=NodeAffinity(Labels({HOST: "a1"})))}},
        "web-2",
    ),
]


@cases(("changes", "first"), ORDER_CASES)
def test_victim_order(changes: dict[str, dict[str, object]], first: str) -> None:
    pods = skewed(
        *(
            web(name, "a1", created=1000.0 + int(name[-1]), **fields)
            for name, fields in changes.items()
        )
    )
    result = run(cluster(*pods), eviction_policy(max_per_run=1))
    assert result.moves[0].pod.name == first


def test_the_most_crowded_domain_goes_first() -> None:
    nodes = (zone_node("a1", "a"), zone_node("b1", "b"), zone_node("c1", "c"))
    pods = [web(f"a-{i}", "a1", created=2000.0) for i in range(3)]
    pods += [web(f"b-{i}", "b1", created=1000.0 + i) for i in range(5)]  # older, but more crowded
    result = run(cluster(*pods, nodes=nodes), eviction_policy(max_per_run=1))
    assert result.moves[0].from_node == "b1"
    assert result.moves[0].to_node == "c1"


def test_room_is_reserved_and_missing_room_reported() -> None:
    nodes = (zone_node("a1", "a"), zone_node("b1", "b", max_pods=1))
    result = run(cluster(*skewed(), nodes=nodes))
    assert [m.to_node for m in result.moves] == ["b1"]
    assert any(s.kind is SkipKind.NO_ROOM and "no room" in s.reason for s in result.skipped)
    assert not result.outcomes[0].fixable


def test_without_require_fit_room_is_not_checked() -> None:
    nodes = (zone_node("a1", "a"), zone_node("b1", "b", max_pods=0))
    result = run(cluster(*skewed(), nodes=nodes), eviction_policy(require_fit=False))
    assert [m.to_node for m in result.moves] == ["b1", "b1"]


def test_zone_and_hostname_are_planned_together() -> None:
    spec = replace(SPEC, constraints=(*SPEC.constraints, hard(HOST, WEB)))
    nodes = (zone_node("a1", "a"), zone_node("a2", "a"), zone_node("b1", "b"), zone_node("b2", "b"))
    pods = [
        web("web-0", "a1", spec=spec),
        web("web-1", "a1", spec=spec),
        web("web-2", "a2", spec=spec),
        web("web-3", "b1", spec=spec),
    ]
    result = run(cluster(*pods, nodes=nodes))
    (move,) = result.moves
    # b1 already holds one pod: the hostname constraint sends the replacement to b2.
    assert (move.from_node, move.to_node) == ("a1", "b2")
    assert result.predicted_violations == 0


MIN_DOMAINS_3 = replace(SPEC, constraints=(hard(ZONE, WEB, min_domains=3),))
OUTCOME_MESSAGES = [
    # (id, pods on a1 (zone a) and b1 (zone b), changes to every pod, the outcome's message)
    (
        "fixable",
        (4, 0),
        {},
        "4 pod(s) placed against topology.kubernetes.io/zone maxSkew 1; fixable by eviction"
        " (at least 2 move(s))",
    ),
    (
        # two eligible zones under minDomains 3: the global minimum is 0, so each zone holds at
        # most one; a third zone would make it [2, 1, 1] after one move
        "needs more domains",
        (2, 2),
        {"spec": MIN_DOMAINS_3},
        "not fixable by eviction: 4 pods at maxSkew 1 over 2 eligible topology.kubernetes.io/zone"
        " domain(s) (minDomains 3); needs 1 more eligible domain(s), then 1 move(s) would fix it",
    ),
    (
        "every pod that would move is protected",
        (4, 0),
        {"priority": 2_000_000_000},
        "not fixable by eviction now: 4 pod(s) that would have to move: system-critical pod",
    ),
]


@cases(("layout", "changes", "message"), OUTCOME_MESSAGES)
def test_the_outcome_says_why(
    layout: tuple[int, int], changes: dict[str, object], message: str
) -> None:
    pods = [
        web(f"web-{node_name}-{i}", node_name, created=1000.0 + i, **changes)
        for node_name, n in zip(("a1", "b1"), layout, strict=True)
        for i in range(n)
    ]
    (outcome,) = run(cluster(*pods)).outcomes
    assert outcome.message.startswith(message), outcome.message
