"""A Deployment rolling out with matchLabelKeys pod-template-hash: its old and new ReplicaSets
are two groups, two violations with two keys (never one key for both, which made a status
read "1,291 violations (1,290 new)"), and both are RollingUpdate, offline and in the operator's
second scan, though each group holds fewer pods than the workload did before the rollout."""

from __future__ import annotations

from dataclasses import replace

from respread.analysis.causes import Cause
from respread.core.model import ClusterState, OwnerRef, Pod, When
from respread.inputs.policy import DEFAULT_POLICY
from respread.pipeline import scan
from respread.report.changes import Before, changes
from respread.report.contract import status_json
from respread.report.status import build_status
from respread.report.stored import first_seen
from respread.runtime import metrics
from respread.runtime.scan import export_metrics
from tests.support import builders as make

ZONES = ("a", "b", "c")
NODES = [make.zone_node(f"n-{z}", z) for z in ZONES]
HASH_KEYS = ("pod-template-hash",)


def pods(rs_hash: str, per_zone: dict[str, int]) -> list[Pod]:
    spread = make.hard(
        "topology.kubernetes.io/zone", make.sel(app="web"), match_label_keys=HASH_KEYS
    )
    labels = {"app": "web", "pod-template-hash": rs_hash}
    return [
        make.pod(
            f"web-{rs_hash}-{zone}{i}",
            f"n-{zone}",
            labels,
            constraints=[spread],
            owner=OwnerRef("ReplicaSet", f"web-{rs_hash}"),
        )
        for zone, n in per_zone.items()
        for i in range(n)
    ]


def before_rollout() -> ClusterState:
    return make.state(
        NODES, pods("old", {"a": 4, "b": 1, "c": 1}), workloads=make.rollout("web", "old")
    )


def half_rolled() -> ClusterState:
    return make.state(
        NODES,
        pods("old", {"a": 3, "b": 0, "c": 0}) + pods("new", {"a": 0, "b": 0, "c": 3}),
        workloads=make.rollout("web", "old", "new"),
    )


def test_the_two_replica_sets_of_a_rollout_are_two_violations_with_two_keys() -> None:
    result = scan(half_rolled(), DEFAULT_POLICY, 1000.0)
    violations = result.report.violations
    assert len(violations) == 2
    assert {v.key for v in violations} == {
        ("default", "Deployment", "web", "topology.kubernetes.io/zone", "pod-template-hash=old"),
        ("default", "Deployment", "web", "topology.kubernetes.io/zone", "pod-template-hash=new"),
    }
    assert len(result.changes.found) == 2


def test_a_rollout_is_rolling_update_offline_and_after_a_scan_that_saw_more_pods_per_group() -> (
    None
):
    offline = scan(half_rolled(), DEFAULT_POLICY, 1000.0)
    assert [v.cause for v in offline.report.violations] == [Cause.ROLLING_UPDATE] * 2
    first = scan(before_rollout(), DEFAULT_POLICY, 1000.0)  # one group of 6 pods, skewed
    second = scan(half_rolled(), DEFAULT_POLICY, 1030.0, first.memory)  # groups of 3: no scale-in
    for v in second.report.violations:
        assert v.cause is Cause.ROLLING_UPDATE, v.cause_message
        assert "web-new" in v.cause_message and "web-old" in v.cause_message


def test_a_second_scan_of_the_same_rollout_finds_nothing_new_and_the_status_keeps_both() -> None:
    first = scan(half_rolled(), DEFAULT_POLICY, 1000.0)
    second = scan(half_rolled(), DEFAULT_POLICY, 1030.0, first.memory)
    assert second.changes.found == [] and second.changes.resolved == []
    status = status_json(build_status(second.report, DEFAULT_POLICY, "2026-11-26T00:00:00Z"))
    keys = first_seen(status)
    assert {k[4] for k in keys} == {"pod-template-hash=old", "pod-template-hash=new"}
    assert changes(second.report, Before(known=frozenset(keys))).found == []


def test_a_constraint_without_match_label_keys_keeps_the_four_part_key_and_no_match_labels() -> (
    None
):
    spread = make.hard("topology.kubernetes.io/zone", make.sel(app="web"))
    state = make.state(
        NODES,
        [
            make.pod(
                f"w{i}", "n-a", {"app": "web"}, constraints=[spread], owner=OwnerRef("Job", "w")
            )
            for i in range(3)
        ],
    )
    (v,) = scan(state, DEFAULT_POLICY, 1000.0).report.violations
    assert v.match_labels == () and v.key[4] == ""
    assert v.when is When.DO_NOT_SCHEDULE


def test_the_two_groups_of_a_rollout_are_two_skew_series() -> None:
    report = scan(half_rolled(), DEFAULT_POLICY, 1000.0).report
    policy = replace(DEFAULT_POLICY, name="rollout-metrics")
    try:
        export_metrics(policy, report)
        series = {
            (s.labels["match_labels"], s.value)
            for family in metrics.REGISTRY.collect()
            if family.name == "respread_skew"
            for s in family.samples
            if s.labels["policy"] == policy.name
        }
        assert series == {(f"pod-template-hash={h}", float(3)) for h in ("old", "new")}
    finally:
        metrics.forget_policy(policy.name)
