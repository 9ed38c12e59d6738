"""Two policies ordering the same pods: one owner per ReplicaSet (cost_owner.py), the plan's
Overlap, the hand-over by the same rule, and the write's re-check of the policy annotation."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kubernetes import client

from respread.analysis.groups import analyze, namespace_selected
from respread.core.annotations import COST_POLICY, COST_WRITTEN, DELETION_COST, ReleaseAction
from respread.core.model import (
    ClusterState,
    Labels,
    OwnerRef,
    Pod,
    SpreadConstraint,
    When,
)
from respread.inputs.policy import (
    DEFAULT_POLICY,
    ConstraintSettings,
    DeletionCostSettings,
    Mode,
    RebalancePolicy,
    RemediationSettings,
    Selection,
)
from respread.kube import annotations
from respread.kube.annotations import CostResult, release_cost, write_cost
from respread.pipeline import scan
from respread.remedies.cost.order import OrderState, plan_costs
from respread.remedies.cost.owner import Ownership, orders, owner, writes_costs
from respread.remedies.cost.release import (
    CostCounts,
    coverage,
    ordered_pods,
    plan_overlaps,
    plan_releases,
)
from respread.report.build import deletion_cost_section
from respread.report.contract import deletion_cost_status_json
from respread.report.text import deletion_cost_text
from tests.support.builders import hard, namespace, pod, sel, soft, state, workload, zone_node
from tests.support.constants import ZONE

RS = OwnerRef("ReplicaSet", "web-abc")
NAMESPACES = {"default": namespace("default"), "team": namespace("team")}
THREE_ZONES = [zone_node(f"n{i}", z) for i, z in enumerate("abc")]
WEB_RS = workload("ReplicaSet", "web-abc", sel(app="web"))
HARD = hard(ZONE, sel(app="web"))


def policy(
    name: str,
    *,
    mode: Mode = Mode.ENFORCE,
    enabled: bool = True,
    namespaces: frozenset[str] = frozenset(),
    when: frozenset[When] = frozenset({When.DO_NOT_SCHEDULE}),
    defaults: tuple[SpreadConstraint, ...] = (),
    max_patches: int = 50,
) -> RebalancePolicy:
    return replace(
        DEFAULT_POLICY,
        name=name,
        mode=mode,
        selection=replace(Selection(), include_namespaces=namespaces),
        constraints=ConstraintSettings(when_unsatisfiable=when, default_constraints=defaults),
        remediation=RemediationSettings(
            deletion_cost=DeletionCostSettings(enabled=enabled, max_patches_per_scan=max_patches)
        ),
    )


def web(
    name: str,
    node_name: str = "n0",
    *,
    named: str | None = None,
    constraints: tuple[SpreadConstraint, ...] = (HARD,),
    cost: str | None = None,
) -> Pod:
    p = pod(name, node_name, {"app": "web"}, constraints=constraints, owner=RS)
    notes = {DELETION_COST: cost, COST_WRITTEN: cost, COST_POLICY: named}
    present = {k: v for k, v in notes.items() if v is not None}
    managers = ("respread",) if cost is not None else ()
    return replace(p, annotations=Labels(present), deletion_cost_managers=managers)


# --------------------------------------------------------------------------------------------
# The rule


@dataclass
class Case:
    others: list[RebalancePolicy]  # beside "b", the policy scanning
    named: list[str | None]  # each pod's respread.io/deletion-cost-policy
    owner: str  # who orders the ReplicaSet
    constraints: tuple[SpreadConstraint, ...] = (HARD,)
    scanning: RebalancePolicy = field(default_factory=lambda: policy("b"))


CASES = {
    "no other policy: this one": Case([], [None, None], "b"),
    "owned by another live policy, though later by name": Case([policy("c")], ["c", "c"], "c"),
    "named by a policy deleted (not among the others): nobody's, first by name": Case(
        [policy("c")], ["a", "a"], "b"
    ),
    "named by a policy no longer covering the namespace": Case(
        [policy("a", namespaces=frozenset({"team"})), policy("c")], ["a", "a"], "b"
    ),
    "named by a policy in DryRun: it writes nothing, nobody's": Case(
        [policy("a", mode=Mode.DRY_RUN)], ["a", None], "b"
    ),
    "named by a policy whose remedy is off": Case([policy("a", enabled=False)], ["a"], "b"),
    "nobody's, two covering: the first by name": Case([policy("a")], [None, None], "a"),
    "nobody's, this one first by name": Case([policy("c")], [None, None], "b"),
    "a new pod (no name) joins the named ones: one owner for the ReplicaSet": Case(
        [policy("a")], ["b", None], "b"
    ),
    "named by two live policies: the first by name of them": Case(
        [policy("a"), policy("c"), policy("d")], ["d", "c", "d"], "c"
    ),
    "the first by name does not analyse hard constraints: it is no candidate": Case(
        [policy("a", when=frozenset({When.SCHEDULE_ANYWAY}))], [None], "b"
    ),
    "pods without constraints, ordered by this policy's defaults only": Case(
        [policy("a")],
        [None],
        "b",
        constraints=(),
        scanning=replace(policy("b"), constraints=ConstraintSettings(default_constraints=(HARD,))),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_owner_of_a_replica_set(case: Case) -> None:
    pods = [web(f"w{i}", named=n, constraints=case.constraints) for i, n in enumerate(case.named)]
    scanning = case.scanning
    assert orders(scanning, pods[0])
    ownership = Ownership.of(scanning.name, case.others, NAMESPACES)
    assert ownership.owner_of("default", pods) == case.owner
    # every writer that orders the pods decides the same, from the same snapshot
    everyone = [scanning, *case.others]
    for other in everyone:
        if other is scanning or not (
            writes_costs(other)
            and orders(other, pods[0])
            and namespace_selected("default", other, NAMESPACES)
        ):
            continue
        rest = [p for p in everyone if p is not other]
        assert Ownership.of(other.name, rest, NAMESPACES).owner_of("default", pods) == case.owner
    # the next owner, when the owner lets go: the same rule without it
    if case.owner == scanning.name:
        expected = owner(
            [p.name for p in ownership.covering("default") if orders(p, pods[0])], case.named
        )
        assert ownership.next_owner("default", pods) == expected


@pytest.mark.parametrize(
    ("candidates", "named", "expected"),
    [
        ([], [None], None),
        (["b", "a"], [], "a"),
        (["b", "a"], ["b"], "b"),
        (["b", "a"], ["z", None], "a"),  # a name that is no candidate counts for nothing
        (["c", "b", "a"], ["c", "b"], "b"),
    ],
)
def test_owner(candidates: list[str], named: list[str | None], expected: str | None) -> None:
    assert owner(candidates, named) == expected


@pytest.mark.parametrize(
    ("constraints", "when", "defaults", "expected"),
    [
        ((HARD,), {When.DO_NOT_SCHEDULE}, (), True),
        ((soft(ZONE, sel(app="web")),), {When.DO_NOT_SCHEDULE, When.SCHEDULE_ANYWAY}, (), False),
        ((HARD, soft(ZONE, sel(app="web"))), {When.SCHEDULE_ANYWAY}, (), True),
        ((HARD,), {When.SCHEDULE_ANYWAY}, (), False),
        ((), {When.DO_NOT_SCHEDULE}, (HARD,), True),
        ((), {When.DO_NOT_SCHEDULE}, (), False),
    ],
)
def test_whether_a_policy_orders_a_pod(
    constraints: tuple[SpreadConstraint, ...],
    when: set[When],
    defaults: tuple[SpreadConstraint, ...],
    expected: bool,
) -> None:
    p = policy("a", when=frozenset(when), defaults=defaults)
    assert orders(p, web("w", constraints=constraints)) is expected


# --------------------------------------------------------------------------------------------
# The plan: a ReplicaSet another policy owns is an Overlap, never written


def cluster(named: str | None) -> ClusterState:
    pods = [web(f"w{i}", f"n{i % 3}", named=named) for i in range(6)]
    return state(THREE_ZONES, pods, workloads=[WEB_RS])


@pytest.mark.parametrize(
    ("scanning", "others", "named", "overlap"),
    [
        ("b", ["a"], None, "a"),  # nobody's: the first by name orders it
        ("a", ["b"], None, None),
        ("a", ["b"], "b", "b"),  # b's already
        ("b", ["a"], "b", None),
        ("b", [], "a", None),  # a is gone
    ],
)
def test_the_plan_leaves_another_policys_replica_set_alone(
    scanning: str, others: list[str], named: str | None, overlap: str | None
) -> None:
    me = policy(scanning)
    settings = me.remediation.deletion_cost
    ownership = Ownership.of(scanning, [policy(o) for o in others], NAMESPACES)
    analysis = analyze(cluster(named), me)
    plan = plan_costs(analysis, settings, ownership=ownership)
    alone = plan_costs(analysis, settings)  # no other policy: the same orders
    (order,) = plan.orders
    (solo,) = alone.orders
    assert [e.pod.name for e in order.pods] == [e.pod.name for e in solo.pods]
    assert [e.desired for e in order.pods] == [e.desired for e in solo.pods]
    assert solo.state is OrderState.CHANGES
    if overlap is None:
        assert order.state is OrderState.CHANGES and order.owner is None
        assert plan.patches == alone.patches
        assert ordered_pods(plan) == {(e.pod.namespace, e.pod.name) for e in order.pods}
        return
    assert order.state is OrderState.OVERLAP and order.owner == overlap
    assert plan.patches == () and plan.deferred_patches == 0
    assert overlap in order.message
    assert ordered_pods(plan) == frozenset()
    count, examples = plan_overlaps(plan)
    assert (count, examples) == (6, (("default", "web-abc", 6, overlap),))
    section = deletion_cost_section(plan)
    assert section.overlaps == 6
    assert section.orders[0].owner == overlap
    assert section.orders[0].state is OrderState.OVERLAP


def test_overlap_examples_are_bounded_in_the_status() -> None:
    pods = []
    workloads = []
    for r in range(12):
        owner_ref = OwnerRef("ReplicaSet", f"rs{r:02}")
        for i in range(3):
            p = pod(
                f"rs{r:02}-{i}",
                f"n{i}",
                {"app": f"rs{r:02}"},
                constraints=(hard(ZONE, sel(app=f"rs{r:02}")),),
                owner=owner_ref,
            )
            pods.append(replace(p, annotations=Labels({COST_POLICY: "a"})))
        workloads.append(workload("ReplicaSet", f"rs{r:02}", sel(app=f"rs{r:02}")))
    me = policy("b")
    plan = plan_costs(
        analyze(state(THREE_ZONES, pods, workloads=workloads), me),
        me.remediation.deletion_cost,
        ownership=Ownership.of("b", [policy("a")], NAMESPACES),
    )
    count, examples = plan_overlaps(plan)
    assert count == 36
    assert [e[1] for e in examples] == [f"rs{r:02}" for r in range(10)]
    status = deletion_cost_status_json(CostCounts(overlaps=count, overlapping=examples))
    assert status["overlaps"] == 36 and len(status["overlapping"]) == 10
    assert status["overlapping"][0] == {
        "namespace": "default",
        "replicaSet": "rs00",
        "pods": 3,
        "policy": "a",
    }


def test_the_text_report_names_the_owner() -> None:
    me = policy("b")
    analysis = analyze(cluster(None), me)
    plan = plan_costs(
        analysis, me.remediation.deletion_cost, ownership=Ownership.of("b", [policy("a")], {})
    )
    lines = deletion_cost_text(deletion_cost_section(plan))
    (heading,) = [line for line in lines if "web-abc" in line]
    assert "Overlap" in heading
    assert any("RebalancePolicy a also writes costs here" in line for line in lines)
    assert not any(line.startswith("  #") or "POD" in line for line in lines)  # not its order


# --------------------------------------------------------------------------------------------
# Taking back: the same rule, the releasing policy left out


@pytest.mark.parametrize(
    ("others", "siblings", "expected"),
    [
        (["a", "c"], [None], (ReleaseAction.HAND_OVER, "a")),  # nobody else named: first by name
        (["a", "c"], ["c"], (ReleaseAction.HAND_OVER, "c")),  # c already owns some: it keeps all
        (["a", "c"], ["z"], (ReleaseAction.HAND_OVER, "a")),  # z is no writer
        ([], [None], (ReleaseAction.REMOVE, None)),
    ],
)
def test_a_policy_letting_go_hands_over_to_the_replica_sets_owner(
    others: list[str], siblings: list[str | None], expected: tuple[ReleaseAction, str | None]
) -> None:
    mine = web("w-mine", named="b", cost="1")
    rest = [web(f"w{i}", named=n, cost="2") for i, n in enumerate(siblings)]
    pods = [mine, *rest]
    covered_by = coverage("b", [policy(o) for o in others], NAMESPACES, pods)
    plan = plan_releases(pods, "b", keep=frozenset(), covered_by=covered_by, cap=10)
    assert [(r.pod.name, r.action, r.hand_to) for r in plan.releases] == [("w-mine", *expected)]


def test_a_policy_hands_over_what_it_wrote_in_a_replica_set_another_owns() -> None:
    """b wrote some costs, a wrote others of the same ReplicaSet: a owns it (first by name of
    the two named); b hands its pods over to a rather than keeping them."""
    pods = [
        web(f"w{i}", f"n{i % 3}", named="a" if i % 2 else "b", cost=str(i + 1)) for i in range(6)
    ]
    cluster_ = state(
        THREE_ZONES, pods, workloads=[workload("ReplicaSet", "web-abc", sel(app="web"))]
    )
    me = policy("b")
    others = [policy("a")]
    plan = plan_costs(
        analyze(cluster_, me),
        me.remediation.deletion_cost,
        ownership=Ownership.of("b", others, NAMESPACES),
    )
    (order,) = plan.orders
    assert order.state is OrderState.OVERLAP and order.owner == "a"
    releases = plan_releases(
        cluster_.pods,
        "b",
        keep=ordered_pods(plan),
        covered_by=coverage("b", others, NAMESPACES, cluster_.pods),
        cap=10,
    )
    assert {(r.pod.name, r.action, r.hand_to) for r in releases.releases} == {
        (f"w{i}", ReleaseAction.HAND_OVER, "a") for i in (0, 2, 4)
    }


# --------------------------------------------------------------------------------------------
# The write re-checks the policy annotation on the pod as read


class FakeCore:
    def __init__(self, pod_annotations: dict[str, str], uid: str = "u1") -> None:
        self.meta = client.V1ObjectMeta(
            name="w0",
            namespace="default",
            uid=uid,
            resource_version="7",
            annotations=pod_annotations,
            managed_fields=[
                client.V1ManagedFieldsEntry(
                    manager="respread",
                    fields_v1={"f:metadata": {"f:annotations": {f"f:{DELETION_COST}": {}}}},
                )
            ],
        )
        self.patches: list[dict[str, Any]] = []

    def read_namespaced_pod(self, name: str, namespace: str) -> Any:
        return SimpleNamespace(metadata=self.meta)

    def patch_namespaced_pod(self, name: str, namespace: str, body: Any, **_: Any) -> Any:
        self.patches.append(body)
        return SimpleNamespace()


API = cast(client.ApiClient, object())


@pytest.mark.parametrize(
    ("live", "seen", "policy_name", "result"),
    [
        (None, None, "b", CostResult.WRITTEN),  # nobody's, still
        ("b", "b", "b", CostResult.WRITTEN),
        ("a", "a", "b", CostResult.WRITTEN),  # the scan saw a, gone: this one owns it
        ("a", None, "b", CostResult.OVERLAP),  # a took it in between
        ("c", "a", "b", CostResult.OVERLAP),  # taken over from a by c in between
        (None, "a", "b", CostResult.WRITTEN),  # a let it go in between
        ("a", None, None, CostResult.WRITTEN),  # a surge's cost names no policy: no check
    ],
)
def test_the_write_rechecks_the_policy_on_the_pod_as_read(
    monkeypatch: pytest.MonkeyPatch,
    live: str | None,
    seen: str | None,
    policy_name: str | None,
    result: CostResult,
) -> None:
    notes = {DELETION_COST: "2", COST_WRITTEN: "2"} | ({COST_POLICY: live} if live else {})
    core = FakeCore(notes)
    monkeypatch.setattr(annotations.client, "CoreV1Api", lambda _: core)
    done = write_cost(
        API,
        "default",
        "w0",
        uid="u1",
        expected=2,
        cost=5,
        take_over=False,
        policy=policy_name,
        seen_policy=seen,
    )
    assert done.result is result
    if result is CostResult.OVERLAP:
        assert core.patches == [] and live is not None and live in done.reason
    else:
        (body,) = core.patches
        assert body["metadata"]["resourceVersion"] == "7"
        assert body["metadata"]["annotations"][DELETION_COST] == "5"


@pytest.mark.parametrize(
    ("uid", "meta", "result"),
    [
        ("u1", True, CostResult.REMOVED),
        ("other", True, CostResult.SKIPPED),  # replaced since the scan
        ("u1", False, CostResult.FAILED),  # no metadata
    ],
)
def test_write_and_release_share_the_read_and_its_checks(
    monkeypatch: pytest.MonkeyPatch, uid: str, meta: bool, result: CostResult
) -> None:
    core = FakeCore({DELETION_COST: "2", COST_WRITTEN: "2", COST_POLICY: "b"})
    if not meta:
        core.meta = None
    monkeypatch.setattr(annotations.client, "CoreV1Api", lambda _: core)
    released = release_cost(API, "default", "w0", uid=uid, policy="b", action=ReleaseAction.REMOVE)
    written = write_cost(
        API, "default", "w0", uid=uid, expected=2, cost=3, take_over=False, policy="b"
    )
    assert released.result is result
    assert written.result is (CostResult.WRITTEN if result is CostResult.REMOVED else result)
    assert len(core.patches) == (2 if result is CostResult.REMOVED else 0)


# --------------------------------------------------------------------------------------------
# The scan passes the other policies it sees


@pytest.mark.parametrize(("others", "overlaps"), [([], 0), (["a"], 6), (["c"], 0)])
def test_a_scan_reports_the_replica_sets_another_policy_owns(
    others: list[str], overlaps: int
) -> None:
    computed = scan(cluster(None), policy("b"), 1e9, others=[policy(o) for o in others])
    assert computed.costs is not None
    assert computed.report.deletion_cost.overlaps == overlaps
    assert len(computed.costs.patches) == 6 - overlaps
