"""The same cluster gives the same report, whatever the listing order and whichever objects
hold it: nothing in analysis or planning may depend on object identities (memory addresses)."""

from __future__ import annotations

import json
import random

from respread.analysis.groups import analyze
from respread.core.model import ClusterState, OwnerRef, Pod
from respread.inputs.policy import DEFAULT_POLICY
from respread.remedies.evict.planner import plan
from respread.report.build import build_report
from respread.report.contract import report_json
from tests.support.builders import hard, node, pod, sel, state
from tests.support.manifests import manifests

ZONES = ("a", "b", "c")


def rollout(order_seed: int | None) -> ClusterState:
    """A Deployment mid-rollout: two ReplicaSets (two profiles, by matchLabelKeys), both piled
    into zone a. Built afresh on every call, so every record is a new object."""
    nodes = [node(f"n-{z}{i}", zone=z) for z in ZONES for i in range(2)]
    pods: list[Pod] = []
    for rs in ("aaa", "bbb"):
        spread = hard("zone", sel(app="web"), match_label_keys=("pod-template-hash",))
        for i in range(4):
            pods.append(
                pod(
                    f"web-{rs}-{i}",
                    f"n-a{i % 2}",
                    {"app": "web", "pod-template-hash": rs},
                    constraints=(spread,),
                    owner=OwnerRef("ReplicaSet", f"web-{rs}"),
                )
            )
    if order_seed is not None:
        random.Random(order_seed).shuffle(pods)
        random.Random(order_seed).shuffle(nodes)
    # No ReplicaSet objects: the pods' owners name them <deployment>-<pod-template-hash>, so
    # both ReplicaSets' pods belong to Deployment web, as two groups of one workload.
    return state(nodes, pods)


def report_of(cluster: ClusterState) -> str:
    analysis = analyze(cluster, DEFAULT_POLICY)
    result = plan(analysis, DEFAULT_POLICY, now=0.0)
    return json.dumps(report_json(build_report(analysis, result, DEFAULT_POLICY)), sort_keys=True)


def test_reports_agree_across_listing_orders_and_object_identities() -> None:
    reference = report_of(rollout(None))
    violations = json.loads(reference)["violations"]
    assert [v["workload"]["name"] for v in violations] == ["web", "web"]
    for seed in range(12):
        assert report_of(rollout(seed)) == reference, f"listing order {seed}"


def test_bare_look_alike_pods_stay_separate_workloads() -> None:
    """Bare pods sharing labels and spec (one loaded object each, interned alike) are each
    their own workload, as the report and the planner treat them."""
    from respread.inputs.objects import load_documents

    spread = hard("zone", sel(app="api"))
    api = [pod(f"api-{i}", "n-a", {"app": "api"}, constraints=(spread,)) for i in range(3)]
    docs = manifests(*(node(f"n-{z}", zone=z) for z in ZONES), *api)
    cluster = load_documents([("test", d) for d in docs]).state
    assert len({id(p.labels) for p in cluster.pods}) == 1  # interned alike
    violations = json.loads(report_of(cluster))["violations"]
    assert sorted(v["workload"]["name"] for v in violations) == ["api-0", "api-1", "api-2"]
