"""Replicas changed by another client, as a HorizontalPodAutoscaler changes them, on the real
control plane: repeated scale-downs and scale-ups through the scale subresource (read the
Scale, set spec.replicas, update it, field manager `horizontal-pod-autoscaler`).

The zones are of unequal size (zone-a three nodes, zone-b and zone-c one each), where the
ReplicaSet controller's own ranking (pods doubled up on a node first) empties the one-node
zones. Two Deployments of 9 pods with a hard zone constraint (maxSkew 1): "ordered" in a
namespace of an Enforce policy with deletion-cost ordering (the operator, as deploy/'s service
account, scanning every 10s), "plain" in a namespace no policy covers. Before each change the
test waits until the operator has scanned the current pods and has nothing more to write (the
autoscaler's downscale stabilization window, 5 minutes by default, leaves it many scans); it
does not wait for anything for "plain". With respread, maxSkew holds after every step; without,
the skew is measured and printed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from kube_helpers import (
    COSTS_ONLY,
    UNEQUAL_ZONES,
    create_namespace,
    create_policy,
    delete_policy,
    pods_per_zone,
    scanned_after,
    skew,
    spread_deployment,
    wait_for,
    wait_pods_ready,
)
from kubernetes import client
from scene import Scene

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]  # the fixtures crd and operator

STEPS = (6, 9, 4, 8, 3, 9, 5, 7, 2)  # from 9: down, up, down, ...


def hpa_scale(apps: client.AppsV1Api, namespace: str, name: str, replicas: int) -> None:
    """As the HorizontalPodAutoscaler does: GET the Scale, set spec.replicas, PUT it back."""
    scale = apps.read_namespaced_deployment_scale(name, namespace)
    scale.spec.replicas = replicas
    apps.replace_namespaced_deployment_scale(
        name, namespace, scale, field_manager="horizontal-pod-autoscaler"
    )


def settled(
    custom: client.CustomObjectsApi, name: str, since: float, replicas: int
) -> dict[str, Any] | None:
    """A scan after `since` found every pod with its cost and nothing more to write."""
    st = scanned_after(custom, name, since)
    costs = (st or {}).get("deletionCost") or {}
    if costs.get("written") == 0 and costs.get("managed") == replicas:
        return st
    return None


def zones(counts: Mapping[str, int]) -> str:
    return "/".join(str(counts[z]) for z in sorted(counts))


def test_hpa_like_scaling_keeps_max_skew_with_the_operators_costs(
    scene: Scene, operator: Path
) -> None:
    custom, core_v1, apps_v1, namespace = scene.custom, scene.core, scene.apps, scene.namespace
    plain_ns = f"{namespace}-plain"[:63]
    create_namespace(core_v1, plain_ns)
    where = {"ordered": namespace, "plain": plain_ns}
    node_zones = scene.zones(UNEQUAL_ZONES)
    name = f"rbp-{namespace}"
    try:
        for app, ns in where.items():
            apps_v1.create_namespaced_deployment(
                ns, spread_deployment(app, 9, node_selector=scene.nodes.node_selector)
            )
        for app, ns in where.items():
            wait_pods_ready(core_v1, ns, f"app={app}", 9)
        create_policy(custom, name, namespace, mode="Enforce", remediation=COSTS_ONLY)
        measured: dict[str, list[dict[str, int]]] = {"ordered": [], "plain": []}
        replicas = 9
        for target in STEPS:
            since = time.time()
            wait_for(
                lambda: settled(custom, name, since, replicas),  # noqa: B023
                90,
                f"the operator's costs on the {replicas} pods",
                interval=0.5,
            )
            for app, ns in where.items():
                hpa_scale(apps_v1, ns, app, target)
            replicas = target
            for app, ns in where.items():
                pods = wait_pods_ready(core_v1, ns, f"app={app}", replicas)
                measured[app].append(dict(pods_per_zone(pods, node_zones)))
        for app, steps in measured.items():
            print(
                f"\n{app}: 9 -> "
                + " -> ".join(f"{sum(c.values())} ({zones(c)}, skew {skew(c)})" for c in steps)
            )
        for counts in measured["ordered"]:
            assert skew(counts) <= 1, measured["ordered"]
        assert "Traceback" not in operator.read_text(errors="replace")
    finally:
        delete_policy(custom, name)
        core_v1.delete_namespace(plain_ns, propagation_policy="Background")
