"""Incomplete input and empty selections are never an all-clear (analysis/coverage.py).

The scene: zones a and b; Deployment web (namespace shop) spread by zone, and Deployment api
(namespace shop) whose zone constraint counts every pod labelled tier=front, web's included.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from respread.analysis.coverage import coverage_of
from respread.analysis.groups import WorkloadRef, analyze
from respread.core.model import ClusterState, OwnerRef, Pod
from respread.inputs.policy import RebalancePolicy, Selection
from tests.support.builders import eviction_policy, hard, namespace, pod, sel, state, zone_node
from tests.support.constants import ZONE
from tests.support.tables import cases

WEB = WorkloadRef("shop", "ReplicaSet", "web")
API = WorkloadRef("shop", "ReplicaSet", "api")
OTHER = WorkloadRef("shop", "ReplicaSet", "other")


def _pod(name: str, node: str, app: str, namespace_: str = "shop") -> Pod:
    counts = sel(tier="front") if app == "api" else sel(app=app)
    return pod(
        name,
        node,
        {"app": app, "tier": "front" if app != "other" else "back"},
        constraints=(hard(ZONE, counts),),
        owner=OwnerRef("ReplicaSet", app),
        namespace=namespace_,
    )


def scene(*extra: Pod) -> ClusterState:
    nodes = [zone_node("na", "a"), zone_node("nb", "b")]
    pods = [
        _pod("web-1", "na", "web"),
        _pod("web-2", "nb", "web"),
        _pod("api-1", "na", "api"),
        _pod("other-1", "nb", "other"),
        *extra,
    ]
    return state(nodes, pods, namespaces=[namespace("shop", team="x"), namespace("empty")])


POLICY = eviction_policy()


def test_a_complete_input_marks_nothing() -> None:
    c = coverage_of(analyze(scene(), POLICY), POLICY)
    assert c.pods_on_unknown_nodes == () and c.incomplete == frozenset()
    assert c.pods_selected == 4 and c.nothing_selected == ""


@cases(
    ("lost", "touched"),
    [
        ("its own workload's groups", _pod("web-9", "gone", "web"), {WEB, API}),
        (
            "the groups that would count it",
            pod("solo", "gone", {"app": "solo", "tier": "front"}, namespace="shop"),
            {API},
        ),
        ("only its own when no other counts it", _pod("other-9", "gone", "other"), {OTHER}),
    ],
)
def test_a_pod_on_a_node_the_input_lacks_is_named_and_marks_its_groups(
    lost: Pod, touched: set[WorkloadRef]
) -> None:
    c = coverage_of(analyze(scene(lost), POLICY), POLICY)
    assert [p.name for p in c.pods_on_unknown_nodes] == [lost.name]
    assert c.unknown_nodes == ("gone",)
    assert {w for w, _ in c.incomplete} == touched


def test_terminating_and_finished_pods_on_unknown_nodes_count_for_nothing() -> None:
    gone = _pod("web-9", "gone", "web")
    c = coverage_of(analyze(scene(replace(gone, terminating=True)), POLICY), POLICY)
    assert c.pods_on_unknown_nodes == ()


def _selecting(**selection: Any) -> RebalancePolicy:
    return replace(POLICY, selection=Selection(**selection))


@cases(
    ("policy", "reason"),
    [
        (
            "a misspelt namespace",
            _selecting(include_namespaces=frozenset({"shopp"})),
            "(shopp) do not exist",
        ),
        (
            "a namespaceSelector that matches none",
            _selecting(namespace_selector=sel(team="nobody")),
            "namespaceSelector matches no namespace",
        ),
        (
            "every namespace excluded",
            _selecting(exclude_namespaces=frozenset({"shop", "empty"})),
            "every namespace is excluded",
        ),
        (
            "a namespace without pods",
            _selecting(include_namespaces=frozenset({"empty"})),
            "(empty) hold no pod",
        ),
    ],
)
def test_a_policy_that_selects_no_pod_says_why(policy: RebalancePolicy, reason: str) -> None:
    c = coverage_of(analyze(scene(), policy), policy)
    assert c.pods_selected == 0
    assert reason in c.nothing_selected


def test_a_misspelt_namespace_beside_a_real_one_is_named() -> None:
    policy = _selecting(include_namespaces=frozenset({"shop", "shopp"}))
    c = coverage_of(analyze(scene(), policy), policy)
    assert c.nothing_selected == "" and c.pods_selected == 4
    assert c.missing_namespaces == ("shopp",)


def test_a_pod_selector_that_matches_no_pod_is_counted() -> None:
    policy = _selecting(pod_selector=sel(app="nosuch"))
    c = coverage_of(analyze(scene(), policy), policy)
    assert c.evictable_by_selector == 0 and c.pods_selected == 4
