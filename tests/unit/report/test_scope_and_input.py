"""A policy that selects nothing, or a scan that cannot see every pod's node, is never a green
status: conditions say so, Balanced is Unknown, and the Events tell a change of scope apart
from a violation resolved (report/status.py, report/changes.py, through pipeline.scan).

The scene: nodes a1, b1, c1 in zones a, b, c; Deployment shop/web 3/1/1 against maxSkew 1.
"""

from __future__ import annotations

from dataclasses import replace

from respread.core.model import ClusterState, OwnerRef, Pod
from respread.inputs.policy import DEFAULT_POLICY, RebalancePolicy, Selection
from respread.pipeline import Memory, Scan, scan
from respread.report.changes import change_events
from respread.report.contract import status_json
from respread.report.status import build_status
from tests.support.builders import WEB, hard, node, pod, state

ZONE = "zone"
NODES = (node("a1", zone="a"), node("b1", zone="b"), node("c1", zone="c"))
NOW = 1_800_000_000.0
STAMP = "2027-01-15T08:00:00Z"


def web(per_zone: dict[str, int]) -> list[Pod]:
    owner = OwnerRef("ReplicaSet", "web-abc")
    labels = {"app": "web", "pod-template-hash": "abc"}
    return [
        pod(
            f"web-{z}{i}",
            f"{z}1",
            labels,
            constraints=(hard(ZONE, WEB),),
            namespace="shop",
            owner=owner,
        )
        for z, count in per_zone.items()
        for i in range(count)
    ]


SKEWED = state(NODES, web({"a": 3, "b": 1, "c": 1}))
BALANCED = state(NODES, web({"a": 2, "b": 2, "c": 1}))


def conditions(
    result: Scan, policy: RebalancePolicy = DEFAULT_POLICY
) -> dict[str, tuple[str, str]]:
    status = status_json(build_status(result.report, policy, STAMP))
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def typo(generation: int) -> RebalancePolicy:
    selection = Selection(include_namespaces=frozenset({"shopp"}))
    return replace(DEFAULT_POLICY, selection=selection, generation=generation)


def reasons(result: Scan) -> list[str]:
    return [reason for reason, _, _ in change_events(result.changes)]


def test_a_policy_that_selects_no_pod_is_not_balanced() -> None:
    result = scan(SKEWED, typo(2), NOW)
    assert result.report.violations == ()
    got = conditions(result, typo(2))
    assert got["Balanced"] == ("Unknown", "NothingSelected")
    assert got["PodsSelected"] == ("False", "NothingSelected")
    assert "(shopp) do not exist" in result.report.coverage.nothing_selected


def test_a_change_of_scope_is_not_a_violation_resolved() -> None:
    """include: [shopp] after a scan that found a violation: the violation left the scope (an
    Event says so, not ViolationsResolved), and the policy selecting nothing is a warning."""
    first = scan(SKEWED, replace(DEFAULT_POLICY, generation=1), NOW)
    assert reasons(first) == ["ViolationFound"]
    second = scan(SKEWED, typo(2), NOW + 60, first.memory)
    assert reasons(second) == ["NothingSelected", "ViolationsOutOfScope"]
    assert second.changes.resolved == []
    third = scan(SKEWED, typo(2), NOW + 120, second.memory)
    assert reasons(third) == []  # Events for changes only


def test_a_violation_fixed_in_scope_is_resolved() -> None:
    policy = replace(DEFAULT_POLICY, generation=1)
    first = scan(SKEWED, policy, NOW)
    second = scan(BALANCED, policy, NOW + 60, first.memory)
    assert reasons(second) == ["ViolationsResolved"]
    # the same with a change of spec that keeps the workload in scope
    third = scan(BALANCED, replace(policy, generation=2), NOW + 60, first.memory)
    assert reasons(third) == ["ViolationsResolved"]


def _lost(cluster: ClusterState) -> ClusterState:
    gone = pod(
        "web-x",
        "gone",
        {"app": "web", "pod-template-hash": "abc"},
        namespace="shop",
        owner=OwnerRef("ReplicaSet", "web-abc"),
        constraints=(hard(ZONE, WEB),),
    )
    return replace(cluster, pods=(*cluster.pods, gone))


def test_pods_on_unknown_nodes_make_the_input_incomplete() -> None:
    skewed = scan(_lost(SKEWED), DEFAULT_POLICY, NOW)
    assert conditions(skewed)["InputComplete"] == ("False", "PodsOnUnknownNodes")
    assert conditions(skewed)["Balanced"] == ("False", "ViolationsFound")
    assert [v.incomplete for v in skewed.report.violations] == [True]
    status = status_json(build_status(skewed.report, DEFAULT_POLICY, STAMP))
    assert status["violations"][0]["incomplete"] is True
    message = {c["type"]: c["message"] for c in status["conditions"]}["InputComplete"]
    assert "shop/web-x on gone" in message

    balanced = scan(_lost(BALANCED), DEFAULT_POLICY, NOW)
    assert balanced.report.violations == ()
    assert conditions(balanced)["Balanced"] == ("Unknown", "IncompleteInput")


def test_incomplete_input_is_told_once() -> None:
    first = scan(BALANCED, DEFAULT_POLICY, NOW)
    second = scan(_lost(BALANCED), DEFAULT_POLICY, NOW + 60, first.memory)
    assert reasons(second) == ["IncompleteInput"]
    assert reasons(scan(_lost(BALANCED), DEFAULT_POLICY, NOW + 120, second.memory)) == []


def test_a_new_leader_reads_what_the_status_said() -> None:
    result = scan(_lost(SKEWED), typo(3), NOW)
    status = status_json(build_status(result.report, typo(3), STAMP))
    memory = Memory.from_status(status)
    assert (memory.generation, memory.selected, memory.complete) == (3, False, True)
    assert reasons(scan(_lost(SKEWED), typo(3), NOW + 60, memory)) == []
