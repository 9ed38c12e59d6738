"""Proof that the harness is a real small cluster: the real scheduler spreads, scale-down leaves
skew nobody repairs, the Eviction subresource enforces budgets, and the audit log records it."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kube_harness import AuditLog, ControlPlane
from kube_helpers import (
    DELETION_COST,
    FakeNodes,
    list_pods,
    pods_per_zone,
    skew,
    spread_deployment,
    wait_for,
    wait_pods_ready,
    zone_of_nodes,
)
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

pytestmark = pytest.mark.cluster

ZONES = {"zone-a": 2, "zone-b": 2, "zone-c": 2}


def test_apiserver_is_real_and_rbac_is_on(control_plane: ControlPlane) -> None:
    status, body = control_plane.apiserver_get("/version")
    assert status == 200
    assert json.loads(body)["gitVersion"].startswith("v1.34.")
    # A user without bindings is authenticated but authorized for nothing.
    nobody = client.CoreV1Api(
        config.new_client_from_config(config_file=str(control_plane.user_kubeconfig("nobody")))
    )
    with pytest.raises(ApiException) as err:
        nobody.list_namespaced_pod("default")
    assert err.value.status == 403


def test_spread_deployment_lands_evenly_then_scale_down_leaves_skew(
    e2e_cluster: ControlPlane,
    namespace: str,
    fake_nodes: FakeNodes,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
) -> None:
    fake_nodes.create_zones(ZONES)
    node_zones = zone_of_nodes(core_v1, fake_nodes.node_selector)
    assert sorted(set(node_zones.values())) == sorted(ZONES)

    # (a) The real scheduler spreads 9 replicas 3/3/3 and kwok makes them Running and Ready.
    apps_v1.create_namespaced_deployment(
        namespace, spread_deployment("web", 9, node_selector=fake_nodes.node_selector)
    )
    pods = wait_pods_ready(core_v1, namespace, "app=web", 9)
    counts = pods_per_zone(pods, node_zones)
    assert counts == {"zone-a": 3, "zone-b": 3, "zone-c": 3}, counts

    # (b) Scale down: the ReplicaSet controller picks the victims. Pod deletion cost (its
    # documented tie-breaker among equally ready pods) makes the choice deterministic: all of
    # zone-a's and two of zone-b's pods go, leaving 0/1/3, a skew of 3 against maxSkew 1.
    by_zone: dict[str, list[str]] = {zone: [] for zone in ZONES}
    for pod in pods:
        by_zone[node_zones[pod.spec.node_name]].append(pod.metadata.name)
    cheap = by_zone["zone-a"] + sorted(by_zone["zone-b"])[:2]
    for pod in pods:
        cost = "-100" if pod.metadata.name in cheap else "100"
        core_v1.patch_namespaced_pod(
            pod.metadata.name, namespace, {"metadata": {"annotations": {DELETION_COST: cost}}}
        )
    apps_v1.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 4}})

    survivors = wait_pods_ready(core_v1, namespace, "app=web", 4)
    assert not {p.metadata.name for p in survivors} & set(cheap)
    counts = pods_per_zone(survivors, node_zones)
    assert counts == {"zone-a": 0, "zone-b": 1, "zone-c": 3}, counts
    assert skew(counts) == 3  # > maxSkew 1

    # ... and nothing repairs it: the scheduler only places new pods; running ones never move.
    placement = {p.metadata.name: p.spec.node_name for p in survivors}
    for _ in range(10):
        time.sleep(1)
        now = list_pods(core_v1, namespace, "app=web")
        assert {p.metadata.name: p.spec.node_name for p in now} == placement
    deployment = apps_v1.read_namespaced_deployment("web", namespace)
    assert deployment.status.ready_replicas == 4
    assert skew(pods_per_zone(now, node_zones)) == 3


def _budgeted_app(
    api: client.ApiClient, namespace: str, nodes: FakeNodes, name: str, budget: dict[str, Any]
) -> list[client.V1Pod]:
    """A 3-replica Deployment of `app=<name>` with a PodDisruptionBudget `<name>`."""
    client.AppsV1Api(api).create_namespaced_deployment(
        namespace, spread_deployment(name, 3, node_selector=nodes.node_selector)
    )
    client.PolicyV1Api(api).create_namespaced_pod_disruption_budget(
        namespace,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, **budget},
        },
    )
    return wait_pods_ready(client.CoreV1Api(api), namespace, f"app={name}", 3)


def _wait_budget(policy_v1: client.PolicyV1Api, namespace: str, name: str, allowed: int) -> None:
    """Wait until the disruption controller has caught up with budget `name`: observedGeneration
    current, 3 of 3 pods healthy, `allowed` disruptions allowed."""

    def settled() -> bool:
        pdb = policy_v1.read_namespaced_pod_disruption_budget(name, namespace)
        st = pdb.status
        return bool(
            st
            and st.observed_generation == pdb.metadata.generation
            and st.current_healthy == 3
            and st.expected_pods == 3
            and st.disruptions_allowed == allowed
        )

    wait_for(settled, 60, f"budget {name} status to settle at {allowed} allowed")


def _evict(core_v1: client.CoreV1Api, namespace: str, pod: str) -> tuple[int, dict[str, Any]]:
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=namespace))
    try:
        core_v1.create_namespaced_pod_eviction(pod, namespace, body)
    except ApiException as exc:
        return int(exc.status), json.loads(exc.body or "{}")
    return 201, {}


@pytest.fixture
def budgeted_apps(
    e2e_cluster: ControlPlane, namespace: str, fake_nodes: FakeNodes, api_client: client.ApiClient
) -> tuple[list[client.V1Pod], list[client.V1Pod]]:
    """`strict` (minAvailable 3 of 3: nothing may go) and `loose` (maxUnavailable 1), both with
    budget status settled by the disruption controller."""
    fake_nodes.create_zones({"zone-a": 1, "zone-b": 1, "zone-c": 1})
    strict = _budgeted_app(api_client, namespace, fake_nodes, "strict", {"minAvailable": 3})
    loose = _budgeted_app(api_client, namespace, fake_nodes, "loose", {"maxUnavailable": 1})
    policy_v1 = client.PolicyV1Api(api_client)
    _wait_budget(policy_v1, namespace, "strict", 0)
    _wait_budget(policy_v1, namespace, "loose", 1)
    return strict, loose


def test_eviction_refused_by_budget_and_allowed_within_it(
    budgeted_apps: tuple[list[client.V1Pod], list[client.V1Pod]],
    namespace: str,
    core_v1: client.CoreV1Api,
    policy_v1: client.PolicyV1Api,
) -> None:
    strict, loose = budgeted_apps
    code, status = _evict(core_v1, namespace, strict[0].metadata.name)
    assert code == 429, status
    assert status["reason"] == "TooManyRequests"
    assert any(c.get("reason") == "DisruptionBudget" for c in status["details"]["causes"]), status
    # Refused means untouched.
    pod = core_v1.read_namespaced_pod(strict[0].metadata.name, namespace)
    assert pod.metadata.deletion_timestamp is None

    victim = loose[0].metadata.name
    code, status = _evict(core_v1, namespace, victim)
    assert code == 201, status
    # The eviction deleted the pod (kwok finishes the deletion) and consumed the budget.
    wait_for(
        lambda: victim not in {p.metadata.name for p in list_pods(core_v1, namespace, "app=loose")},
        30,
        f"evicted pod {victim} to be gone",
    )
    # The Deployment replaces it and the disruption controller restores the allowance.
    wait_pods_ready(core_v1, namespace, "app=loose", 3)
    _wait_budget(policy_v1, namespace, "loose", 1)


def test_audit_log_records_each_eviction(
    budgeted_apps: tuple[list[client.V1Pod], list[client.V1Pod]],
    namespace: str,
    core_v1: client.CoreV1Api,
    audit_log: AuditLog,
) -> None:
    strict, loose = budgeted_apps
    mark = audit_log.mark()
    refused, allowed = strict[1].metadata.name, loose[1].metadata.name
    assert _evict(core_v1, namespace, refused)[0] == 429
    assert _evict(core_v1, namespace, allowed)[0] == 201

    def eviction(event: dict[str, Any]) -> bool:
        ref = event.get("objectRef", {})
        return ref.get("subresource") == "eviction" and ref.get("namespace") == namespace

    events = audit_log.wait_for_events(eviction, count=2, since=mark)
    # Exactly the two requests this test made, in order, with their outcomes.
    assert [
        (e["verb"], e["objectRef"]["resource"], e["objectRef"]["name"], e["responseStatus"]["code"])
        for e in events
    ] == [("create", "pods", refused, 429), ("create", "pods", allowed, 201)]
    for e in events:
        assert e["user"]["username"] == "respread-admin"
        assert "system:masters" in e["user"]["groups"]
        assert e["requestObject"]["kind"] == "Eviction"
        assert e["requestURI"] == (
            f"/api/v1/namespaces/{namespace}/pods/{e['objectRef']['name']}/eviction"
        )


def test_apiserver_restart_in_place(
    e2e_cluster: ControlPlane,
    namespace: str,
    fake_nodes: FakeNodes,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
) -> None:
    """`restart_apiserver()` keeps port, certificates and etcd: clients, stored objects and the
    controllers carry on."""
    fake_nodes.create_zones({"zone-a": 1})
    core_v1.create_namespaced_config_map(
        namespace, {"metadata": {"name": "before"}, "data": {"k": "v"}}
    )
    port = e2e_cluster.port

    seconds = e2e_cluster.restart_apiserver()
    assert seconds < 30  # graceful: open watches are closed, not waited for
    assert e2e_cluster.port == port
    assert core_v1.read_namespaced_config_map("before", namespace).data == {"k": "v"}

    e2e_cluster.restart_apiserver(graceful=False)  # a crash: SIGKILL
    assert core_v1.read_namespaced_config_map("before", namespace).data == {"k": "v"}
    # Controller-manager, scheduler and kwok reconnect: a new Deployment still goes Ready.
    apps_v1.create_namespaced_deployment(
        namespace, spread_deployment("after", 2, node_selector=fake_nodes.node_selector)
    )
    wait_pods_ready(core_v1, namespace, "app=after", 2)
    assert e2e_cluster.e2e_running
