"""Deletion-cost ordering on the real control plane: the ReplicaSet controller decides.

Zones of unequal size, as clouds have them: zone-a has three nodes, zone-b and zone-c one each.
Two Deployments of 9 pods with a hard zone constraint (maxSkew 1) are placed 3/3/3 by the
scheduler. The controller ranks scale-in victims by readiness, pod-deletion-cost, then pods
doubled up on a node, then age: never by zone. Without respread ("plain") the measured skew
after 9 -> 6 -> 3 is printed (the doubled-up rank empties the one-node zones first). With
respread ("ordered"), the costs respread computes (deletion_cost.plan_costs) and writes
(kube/annotations.write_cost) before each change make maxSkew hold after every step, through a
scale-down, a scale-up by another client, and a second scale-down.
"""

from __future__ import annotations

import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
from kube_helpers import (
    COSTS_ONLY,
    UNEQUAL_ZONES,
    cost_owners,
    pods_per_zone,
    scanned_after,
    skew,
    wait_for,
)
from kubernetes import client
from scene import Scene

from respread.analysis.groups import analyze
from respread.core.annotations import DELETION_COST, FIELD_MANAGER
from respread.inputs.objects import load_documents
from respread.inputs.policy import (
    DEFAULT_POLICY,
    DeletionCostSettings,
    RemediationSettings,
    Selection,
)
from respread.kube.annotations import CostResult, write_cost
from respread.kube.reader import read_cluster
from respread.remedies.cost.order import plan_costs

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]  # the fixtures crd and operator


def respread_writes_costs(
    api: client.ApiClient, namespace: str, deployment: str, cap: int = 1000
) -> int:
    """One respread pass over the live cluster, with room for ``cap`` patches
    (maxPatchesPerScan): the deletion-cost patches of ``deployment``."""
    state = load_documents(read_cluster(api), taken_at=time.time()).state
    policy = replace(
        DEFAULT_POLICY,
        selection=Selection(include_namespaces=frozenset({namespace})),
        remediation=RemediationSettings(
            deletion_cost=DeletionCostSettings(enabled=True, max_patches_per_scan=cap)
        ),
    )
    costs = plan_costs(analyze(state, policy), policy.remediation.deletion_cost)
    mine = [p for p in costs.patches if p.pod.owner is not None and deployment in p.pod.name]
    for entry in mine:
        write = write_cost(
            api,
            entry.pod.namespace,
            entry.pod.name,
            uid=entry.pod.uid,
            expected=entry.current,
            cost=entry.desired,
            take_over=False,
        )
        assert write.result is CostResult.WRITTEN, write
    return len(mine)


def zone_counts(
    scene: Scene, app: str, replicas: int, node_zones: dict[str, str]
) -> dict[str, int]:
    return dict(pods_per_zone(scene.ready(app, replicas), node_zones))


def test_scale_in_keeps_max_skew_with_respread_costs(scene: Scene) -> None:
    node_zones = scene.zones(UNEQUAL_ZONES)
    for app in ("plain", "ordered"):
        scene.deploy(app, 9)
    measured: dict[str, list[dict[str, int]]] = {"plain": [], "ordered": []}
    for app in ("plain", "ordered"):
        counts = zone_counts(scene, app, 9, node_zones)
        assert skew(counts) <= 1, counts  # the scheduler spread them
        measured[app].append(counts)

    # respread writes a cost on each of the ordered Deployment's pods, as its field manager
    assert respread_writes_costs(scene.api, scene.namespace, "ordered") == 9
    for pod in scene.pods("ordered"):
        assert DELETION_COST in (pod.metadata.annotations or {})
        assert cost_owners(pod) == {FIELD_MANAGER}
    assert not any(DELETION_COST in (p.metadata.annotations or {}) for p in scene.pods("plain"))

    # 9 -> 6 -> 3, respread passing before each change; then another client scales up to 9
    # (new pods without costs) and down to 4.
    for replicas in (6, 3, 9, 4):
        if replicas < 9:
            respread_writes_costs(scene.api, scene.namespace, "ordered")
            scene.costs_seen()
        for app in ("plain", "ordered"):
            scene.scale(app, replicas)
        for app in ("plain", "ordered"):
            measured[app].append(zone_counts(scene, app, replicas, node_zones))

    for app, steps in measured.items():
        print(f"{app}: " + " -> ".join(f"{sum(c.values())} {sorted(c.items())}" for c in steps))
    for counts in measured["ordered"]:
        assert skew(counts) <= 1, measured["ordered"]


def costs_one_zone_first(scene: Scene, node_zones: dict[str, str]) -> None:
    """Costs that remove zone-a's pods first, then zone-b's, then zone-c's (1, 2, 3, ...), under
    respread's field manager: what an order written for other counts, or by hand, leaves."""
    pods = sorted(scene.pods("web"), key=lambda p: (node_zones[p.spec.node_name], p.metadata.name))
    for cost, p in enumerate(pods, start=1):
        scene.cost(p.metadata.name, str(cost), field_manager=FIELD_MANAGER)


def test_an_order_written_partly_is_followed_from_its_head(scene: Scene) -> None:
    """maxPatchesPerScan 2 over 9 pods whose old costs empty one zone first: one pass writes 2
    of the 9 costs the new order needs, and a scale-in of 2 right after it takes exactly those
    (the head of the new order), not the pods the old costs put first."""
    node_zones = scene.zones({"zone-a": 1, "zone-b": 1, "zone-c": 1})
    scene.deploy("web", 9)
    assert skew(zone_counts(scene, "web", 9, node_zones)) == 0
    costs_one_zone_first(scene, node_zones)
    scene.costs_seen()
    scene.scale("web", 7)
    old = zone_counts(scene, "web", 7, node_zones)
    assert skew(old) == 2, old  # the old costs alone: two of zone-a's three pods went

    scene.scale("web", 9)  # the scheduler puts both back in zone-a
    assert skew(zone_counts(scene, "web", 9, node_zones)) == 0
    costs_one_zone_first(scene, node_zones)
    assert respread_writes_costs(scene.api, scene.namespace, "web", cap=2) == 2
    scene.costs_seen()
    scene.scale("web", 7)
    partly = zone_counts(scene, "web", 7, node_zones)
    print(
        f"9 -> 7 with the old costs: {sorted(old.items())}; 2 of 9 costs written: "
        f"{sorted(partly.items())}"
    )
    assert skew(partly) <= 1, partly


def test_a_cost_written_by_another_manager_is_left_alone(scene: Scene) -> None:
    scene.nodes.create_zones({"zone-a": 1, "zone-b": 1})
    scene.deploy("web", 4)
    pods = scene.ready("web", 4)
    victim = pods[0].metadata.name
    scene.cost(victim, "7", field_manager="someone-else")
    wait_for(
        lambda: (
            DELETION_COST
            in (scene.core.read_namespaced_pod(victim, scene.namespace).metadata.annotations or {})
        ),
        30,
        "the other manager's cost",
    )
    assert respread_writes_costs(scene.api, scene.namespace, "web") == 0  # a conflict: left alone
    after = {p.metadata.name: (p.metadata.annotations or {}) for p in scene.pods("web")}
    assert after[victim][DELETION_COST] == "7"
    assert sum(DELETION_COST in a for a in after.values()) == 1


def test_the_operator_in_enforce_writes_the_costs_and_a_scale_in_keeps_max_skew(
    scene: Scene, operator: Path
) -> None:
    node_zones = scene.zones(UNEQUAL_ZONES)
    scene.deploy("web", 9)
    scene.ready("web", 9)
    name = f"rbp-{scene.namespace}"
    with scene.rebalancing(name, mode="Enforce", remediation=COSTS_ONLY):

        def costed() -> bool:
            pods = scene.pods("web")
            return len(pods) == 9 and all(cost_owners(p) == {FIELD_MANAGER} for p in pods)

        wait_for(costed, 90, "the operator's pod-deletion-cost on every pod")
        for replicas in (6, 3):
            scene.costs_seen()  # (the operator's, written by a scan that has ended)
            scene.scale("web", replicas)
            counts = zone_counts(scene, "web", replicas, node_zones)
            assert skew(counts) <= 1, counts
            since = time.time()
            scanned = partial(scanned_after, scene.custom, name, since)
            wait_for(scanned, 60, "a scan after the scale-in")
        assert "Traceback" not in operator.read_text(errors="replace")


def test_a_write_is_skipped_when_the_pod_changed_since_the_scan(scene: Scene) -> None:
    api_client, core_v1, namespace = scene.api, scene.core, scene.namespace
    scene.nodes.create_zones({"zone-a": 1})
    scene.deploy("web", 1)
    (pod,) = scene.ready("web", 1)
    name, uid = pod.metadata.name, pod.metadata.uid

    def write(**changes: object) -> CostResult:
        args: dict[str, object] = {"uid": uid, "expected": None, "cost": 5, "take_over": False}
        args.update(changes)
        return write_cost(api_client, namespace, name, **args).result  # type: ignore[arg-type]

    def cost() -> str | None:
        annotations = core_v1.read_namespaced_pod(name, namespace).metadata.annotations or {}
        return annotations.get(DELETION_COST)

    assert write(uid="another-pod") is CostResult.SKIPPED  # replaced since the scan
    assert write(expected=3) is CostResult.SKIPPED  # the scan saw another cost
    assert cost() is None
    assert write() is CostResult.WRITTEN
    assert cost() == "5"
    assert write(expected=5, cost=2) is CostResult.WRITTEN  # respread's own cost: rewritten
    assert cost() == "2"
    scene.cost(name, "9", field_manager="hpa")
    assert write(expected=9, cost=1) is CostResult.SKIPPED  # now owned by another manager
    assert cost() == "9"
    assert write(expected=9, cost=1, take_over=True) is CostResult.WRITTEN
    assert cost() == "1"
    assert (
        write_cost(
            api_client, namespace, "no-such-pod", uid=None, expected=None, cost=1, take_over=False
        ).result
        is CostResult.SKIPPED
    )
