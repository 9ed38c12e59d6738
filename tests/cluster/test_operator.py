"""The operator end to end on the real control plane: a scale-down leaves a zone skew; in
dry-run the policy's status reports it (cause ScaleDown, the right plan) and the audit log shows
no eviction; switched to Enforce, it evicts, the real scheduler places the replacement and the
skew converges within maxSkew, without exceeding the budget."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kube_harness import AuditLog, ControlPlane
from kube_helpers import (
    DELETION_COST,
    GROUP,
    PLURAL,
    VERSION,
    FakeNodes,
    evictions,
    list_pods,
    pods_per_zone,
    skew,
    spread_deployment,
    status_of,
    wait_for,
    wait_pods_ready,
    zone_of_nodes,
)
from kubernetes import client

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]  # the fixtures crd and operator

ZONES = {"zone-a": 2, "zone-b": 2, "zone-c": 2}


def make_policy(custom: client.CustomObjectsApi, name: str, namespace: str, mode: str) -> None:
    custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        PLURAL,
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "RebalancePolicy",
            "metadata": {"name": name},
            "spec": {
                "mode": mode,
                "schedule": {"interval": "10s"},
                "selector": {"namespaces": {"include": [namespace]}},
                "eviction": {"minPodAge": "0s", "cooldown": "1s"},
            },
        },
    )


def skew_by_scale_down(
    core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str, node_zones: dict[str, str]
) -> None:
    """9 pods 3/3/3 scaled to 4; deletion costs make the ReplicaSet leave 0/1/3."""
    pods = wait_pods_ready(core, namespace, "app=web", 9)
    by_zone: dict[str, list[str]] = {zone: [] for zone in ZONES}
    for pod in pods:
        by_zone[node_zones[pod.spec.node_name]].append(pod.metadata.name)
    cheap = by_zone["zone-a"] + sorted(by_zone["zone-b"])[:2]
    for pod in pods:
        cost = "-100" if pod.metadata.name in cheap else "100"
        core.patch_namespaced_pod(
            pod.metadata.name, namespace, {"metadata": {"annotations": {DELETION_COST: cost}}}
        )
    apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 4}})
    survivors = wait_pods_ready(core, namespace, "app=web", 4)
    assert pods_per_zone(survivors, node_zones) == {"zone-a": 0, "zone-b": 1, "zone-c": 3}


def test_dry_run_reports_the_scale_down_and_evicts_nothing_then_enforce_converges(
    e2e_cluster: ControlPlane,
    operator: Path,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    policy_v1: client.PolicyV1Api,
    audit_log: AuditLog,
) -> None:
    custom = client.CustomObjectsApi(api_client)
    fake_nodes.create_zones(ZONES)
    node_zones = zone_of_nodes(core_v1, fake_nodes.node_selector)
    apps_v1.create_namespaced_deployment(
        namespace, spread_deployment("web", 9, node_selector=fake_nodes.node_selector)
    )
    policy_v1.create_namespaced_pod_disruption_budget(
        namespace,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    wait_pods_ready(core_v1, namespace, "app=web", 9)
    mark = audit_log.mark()
    name = f"rbp-{namespace}"
    make_policy(custom, name, namespace, "DryRun")
    try:
        # The first scan sees the balanced workload (and remembers its 9 pods).
        wait_for(lambda: status_of(custom, name).get("lastScanTime"), 90, "a first scan")
        assert status_of(custom, name)["summary"]["violations"] == 0

        skew_by_scale_down(core_v1, apps_v1, namespace, node_zones)

        def reported() -> dict[str, Any] | None:
            st = status_of(custom, name)
            return st if st.get("summary", {}).get("violations") == 1 else None

        st = wait_for(reported, 90, "the violation in the policy status")
        (violation,) = st["violations"]
        assert violation["namespace"] == namespace
        assert violation["workload"] == {"kind": "Deployment", "name": "web"}
        assert violation["topologyKey"] == "topology.kubernetes.io/zone"
        assert (violation["skew"], violation["maxSkew"], violation["fixable"]) == (3, 1, True)
        assert violation["cause"] == "ScaleDown", violation["causeMessage"]
        assert violation["domains"]["max"] == {"name": "zone-c", "pods": 3}
        (step,) = st["plan"]
        assert step["state"] == "Planned"
        assert step["fromDomain"]["topology.kubernetes.io/zone"] == "zone-c"
        assert step["toDomain"]["topology.kubernetes.io/zone"] == "zone-a"
        conditions = {c["type"]: c["status"] for c in st["conditions"]}
        assert conditions == {"Ready": "True", "ScanSucceeded": "True", "Balanced": "False"}

        # Dry-run: the API server saw no eviction request at all.
        time.sleep(12)  # at least one more scan
        assert evictions(audit_log, mark, namespace) == []

        # Enforce: the operator evicts, the scheduler places the replacement, skew converges.
        custom.patch_cluster_custom_object(
            GROUP, VERSION, PLURAL, name, {"spec": {"mode": "Enforce"}}
        )

        def converged() -> bool:
            pods = [
                p
                for p in list_pods(core_v1, namespace, "app=web")
                if p.metadata.deletion_timestamp is None and p.spec.node_name
            ]
            ready = len(pods) == 4 and all(
                any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))
                for p in pods
            )
            return ready and skew(pods_per_zone(pods, node_zones)) <= 1

        wait_for(converged, 120, "the skew to converge within maxSkew")
        done = evictions(audit_log, mark, namespace)
        assert done, "Enforce mode made no eviction request"
        assert all(e["responseStatus"]["code"] == 201 for e in done), done
        assert len(done) == 1  # 0/1/3 needs exactly one move: zone-c to zone-a
        wait_for(
            lambda: status_of(custom, name).get("summary", {}).get("violations") == 0,
            90,
            "the status to report the workload balanced",
        )
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)
