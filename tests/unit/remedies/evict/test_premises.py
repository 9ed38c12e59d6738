"""What a planned eviction depends on: a change to it since the plan stops the scan (it plans
again); the scan's own evictions and their replacements, and budgets' or workloads' status, do
not count."""

from __future__ import annotations

from dataclasses import replace

import pytest

from respread.core.model import (
    ClusterState,
    DisruptionBudget,
    Labels,
    Namespace,
    Node,
    OwnerRef,
    Pod,
    PodSpec,
    Workload,
)
from respread.remedies.evict.premises import Evicted, changed_since_plan, plan_expired

RS = OwnerRef("ReplicaSet", "web-abc")


def pod(name: str, node: str, ns: str = "shop", owner: OwnerRef = RS) -> Pod:
    return Pod(ns, name, Labels({"app": "web"}), PodSpec(), node, owner=owner, uid=f"uid-{name}")


BEFORE = ClusterState(
    nodes=(
        Node("a1", Labels({"zone": "a"})),
        Node("b1", Labels({"zone": "b"})),
    ),
    pods=(pod("web-1", "a1"), pod("web-2", "a1"), pod("web-3", "b1"), pod("other", "b1", "misc")),
    namespaces=(Namespace("shop"), Namespace("misc")),
    workloads=(Workload("Deployment", "shop", "web", replicas=3),),
    budgets=(DisruptionBudget("shop", "web", None, disruptions_allowed=1),),
)


def change(**kw: object) -> ClusterState:
    return replace(BEFORE, **kw)  # type: ignore[arg-type]


NODE_A, NODE_B = BEFORE.nodes
WEB_1, *OTHERS = BEFORE.pods
DEPLOYMENT = BEFORE.workloads[0]
STRANGER = pod("x", "a1", owner=OwnerRef("ReplicaSet", "x-1"))
RELABELLED = Namespace("shop", Labels({"x": "y"}))

NOW_CASES = [
    ("nothing", BEFORE, ""),
    (
        "a node cordoned",
        change(nodes=(NODE_A, replace(NODE_B, unschedulable=True))),
        "Node b1 changed",
    ),
    ("a node gone", change(nodes=(NODE_A,)), "Node b1 is gone"),
    ("a pod of the namespace gone", change(pods=tuple(OTHERS)), "Pod shop/web-1 is gone"),
    (
        "a pod not Ready",
        change(pods=(replace(WEB_1, ready=False), *OTHERS)),
        "Pod shop/web-1 changed",
    ),
    ("a stranger's pod appeared", change(pods=(*BEFORE.pods, STRANGER)), "Pod shop/x appeared"),
    (
        "scaled to 0",
        change(workloads=(replace(DEPLOYMENT, replicas=0),)),
        "Workload Deployment/web changed",
    ),
    (
        "the namespace relabelled",
        change(namespaces=(RELABELLED, Namespace("misc"))),
        "Namespace shop changed",
    ),
    ("another namespace's pod", change(pods=BEFORE.pods[:3]), ""),
    ("a budget's status", change(budgets=(replace(BEFORE.budgets[0], disruptions_allowed=0),)), ""),
    ("a workload's status", change(workloads=(replace(DEPLOYMENT, observed_generation=4),)), ""),
]


@pytest.mark.parametrize(
    ("now", "expected"), [c[1:] for c in NOW_CASES], ids=[c[0] for c in NOW_CASES]
)
def test_what_a_move_depends_on(now: ClusterState, expected: str) -> None:
    changed = changed_since_plan(BEFORE, now, "shop")
    assert (expected in changed) if expected else changed == "", changed


def test_the_scans_own_evictions_and_their_replacements_do_not_count() -> None:
    evicted = replace(BEFORE.pods[0], terminating=True)
    replacement = pod("web-4", "b1")
    now = change(pods=(evicted, *BEFORE.pods[1:], replacement))
    assert changed_since_plan(BEFORE, now, "shop") != ""
    own = [Evicted(BEFORE.pods[0].uid, RS)]
    assert changed_since_plan(BEFORE, now, "shop", own) == ""
    # ... but a pod of another owner appearing still does
    stranger = pod("db-1", "b1", owner=OwnerRef("StatefulSet", "db"))
    assert "Pod shop/db-1 appeared" in changed_since_plan(
        BEFORE, change(pods=(*now.pods, stranger)), "shop", own
    )


def test_many_changes_are_summed_up() -> None:
    now = change(pods=(), nodes=())
    changed = changed_since_plan(BEFORE, now, "shop")
    assert changed.startswith("changed since the plan: Node a1 is gone, Node b1 is gone, ")
    assert changed.endswith("Pod shop/web-1 is gone and 2 more")


def test_a_plan_older_than_its_bound_is_not_acted_on() -> None:
    assert plan_expired(100.0, 130.0, 60.0) == ""
    assert plan_expired(100.0, 190.0, 60.0) == (
        "the plan is 90s old, older than the 60s a plan may be acted on"
    )
