"""What the operator remembers survives a restart: it is kept in the policy's status (the
violations' causes and `since`, `status.cooldowns`) and read back by the next operator."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kube_harness import AuditLog, ControlPlane
from kube_helpers import (
    DELETION_COST,
    GROUP,
    PLURAL,
    VERSION,
    FakeNodes,
    list_pods,
    pod_is_ready,
    pods_per_zone,
    scanned_after,
    spread_deployment,
    status_of,
    wait_for,
    wait_pods_ready,
    zone_of_nodes,
)
from kubernetes import client

if TYPE_CHECKING:
    from operator_fixtures import StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]

ZONES = {"zone-a": 2, "zone-b": 2, "zone-c": 2}


def evicted(audit: AuditLog, since: int, namespace: str) -> list[dict[str, Any]]:
    return [
        e
        for e in audit.events(since)
        if e.get("stage") == "ResponseComplete"
        and e.get("objectRef", {}).get("subresource") == "eviction"
        and e.get("objectRef", {}).get("namespace") == namespace
        and e["responseStatus"]["code"] == 201
    ]


def test_a_restarted_operator_keeps_causes_since_and_cooldowns(
    e2e_cluster: ControlPlane,
    operator_factory: StartOperator,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    audit_log: AuditLog,
    tmp_path: Path,
) -> None:
    """A scale-down leaves 0/3/3 (two moves needed, one per workload and cooldown of 10
    minutes). The Enforce policy reports cause ScaleDown and evicts one pod; the replacement
    lands in zone-a. The operator is killed (SIGKILL) and a new one started: its scans still say
    ScaleDown (the new operator saw no scale-down itself) with the same `since`, and the
    workload, in cooldown, is not evicted from again: the plan defers it."""
    custom = client.CustomObjectsApi(api_client)
    fake_nodes.create_zones(ZONES)
    node_zones = zone_of_nodes(core_v1, fake_nodes.node_selector)
    apps_v1.create_namespaced_deployment(
        namespace, spread_deployment("web", 9, node_selector=fake_nodes.node_selector)
    )
    pods = wait_pods_ready(core_v1, namespace, "app=web", 9, timeout=180)
    op = operator_factory()
    name = f"rbp-{namespace}"
    custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        PLURAL,
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "RebalancePolicy",
            "metadata": {"name": name},
            "spec": {
                "mode": "Enforce",
                "schedule": {"interval": "10s"},
                "selector": {"namespaces": {"include": [namespace]}},
                "eviction": {"minPodAge": "0s", "cooldown": "10m"},
            },
        },
    )
    mark = audit_log.mark()
    try:
        wait_for(lambda: scanned_after(custom, name, 0), 90, "a first scan (9 pods, balanced)")
        for pod in pods:
            cost = "-100" if node_zones[pod.spec.node_name] == "zone-a" else "100"
            core_v1.patch_namespaced_pod(
                pod.metadata.name, namespace, {"metadata": {"annotations": {DELETION_COST: cost}}}
            )
        apps_v1.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 6}})

        wait_for(lambda: evicted(audit_log, mark, namespace), 90, "the first eviction")

        def one_moved() -> list[Any] | None:
            ready = [p for p in list_pods(core_v1, namespace, "app=web") if pod_is_ready(p)]
            counts = pods_per_zone(ready, node_zones)
            return ready if len(ready) == 6 and counts["zone-a"] == 1 else None

        wait_for(one_moved, 120, "the replacement to land in zone-a (1/2/3 or 1/3/2)")

        def in_cooldown() -> dict[str, Any] | None:
            st = status_of(custom, name)
            deferred = [s for s in st.get("plan", ()) if s["state"] == "Deferred"]
            cooling = any("cooldown" in s.get("reason", "") for s in deferred)
            return st if cooling and st.get("cooldowns") else None

        before = wait_for(in_cooldown, 60, "a scan deferring the next move for the cooldown")
        (v_before,) = before["violations"]
        assert v_before["cause"] == "ScaleDown", v_before
        (cooling,) = before["cooldowns"]
        assert cooling["workload"] == {"kind": "Deployment", "name": "web"}, cooling
        assert "lastEvictionTime" in cooling, cooling

        op.kill()
        restarted = time.time()
        op2 = operator_factory()
        after = wait_for(
            lambda: scanned_after(custom, name, restarted + 1), 90, "a scan by the new operator"
        )
        (v_after,) = after["violations"]
        assert v_after["cause"] == "ScaleDown", v_after
        assert v_after["causeMessage"] == v_before["causeMessage"]
        assert v_after["since"] == v_before["since"]
        assert any(
            s["state"] == "Deferred" and "cooldown" in s.get("reason", "") for s in after["plan"]
        ), after["plan"]
        assert after["cooldowns"][0]["lastEvictionTime"] == cooling["lastEvictionTime"]
        # Two more scans (10 s apart): still in cooldown, nothing more is evicted.
        later = time.time()
        wait_for(lambda: scanned_after(custom, name, later + 10), 60, "two more scans")
        done = evicted(audit_log, mark, namespace)
        assert len(done) == 1, [(e["objectRef"]["name"], e["stageTimestamp"]) for e in done]
        assert op2.alive
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)
