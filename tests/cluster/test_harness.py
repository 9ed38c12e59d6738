"""Proof that the harness is a real small cluster: the real scheduler spreads, scale-down leaves
skew nobody repairs, the Eviction subresource enforces budgets, and the audit log records it."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kube_harness import ControlPlane
from kube_helpers import TWO_PER_ZONE, pods_per_zone, skew, wait_for, zone_a_and_two_of_b
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from scene import Scene

pytestmark = pytest.mark.cluster


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


def test_spread_deployment_lands_evenly_then_scale_down_leaves_skew(scene: Scene) -> None:
    node_zones = scene.zones(TWO_PER_ZONE)
    assert sorted(set(node_zones.values())) == sorted(TWO_PER_ZONE)

    # (a) The real scheduler spreads 9 replicas 3/3/3 and kwok makes them Running and Ready.
    scene.deploy("web", 9)
    pods = scene.ready("web", 9)
    counts = pods_per_zone(pods, node_zones)
    assert counts == {"zone-a": 3, "zone-b": 3, "zone-c": 3}, counts

    # (b) Scale down: the ReplicaSet controller picks the victims. Pod deletion cost (its
    # documented tie-breaker among equally ready pods) makes the choice deterministic: all of
    # zone-a's and two of zone-b's pods go, leaving 0/1/3, a skew of 3 against maxSkew 1.
    cheap = zone_a_and_two_of_b(pods, node_zones)
    survivors = scene.scale_in("web", 4, lambda pod: pod.metadata.name in cheap)
    assert not {p.metadata.name for p in survivors} & cheap
    counts = pods_per_zone(survivors, node_zones)
    assert counts == {"zone-a": 0, "zone-b": 1, "zone-c": 3}, counts
    assert skew(counts) == 3  # > maxSkew 1

    # ... and nothing repairs it: the scheduler only places new pods; running ones never move.
    placement = {p.metadata.name: p.spec.node_name for p in survivors}
    for _ in range(10):
        time.sleep(1)
        now = scene.pods("web")
        assert {p.metadata.name: p.spec.node_name for p in now} == placement
    deployment = scene.apps.read_namespaced_deployment("web", scene.namespace)
    assert deployment.status.ready_replicas == 4
    assert skew(pods_per_zone(now, node_zones)) == 3


def _budgeted_app(scene: Scene, name: str, **budget: int) -> list[client.V1Pod]:
    """A 3-replica Deployment of `app=<name>` with a PodDisruptionBudget `<name>`."""
    scene.deploy(name, 3)
    scene.budget(name, **budget)
    return scene.ready(name, 3)


def _wait_budget(scene: Scene, name: str, allowed: int) -> None:
    """Wait until the disruption controller has caught up with budget `name`: observedGeneration
    current, 3 of 3 pods healthy, `allowed` disruptions allowed."""

    def settled() -> bool:
        pdb = scene.policy.read_namespaced_pod_disruption_budget(name, scene.namespace)
        st = pdb.status
        return bool(
            st
            and st.observed_generation == pdb.metadata.generation
            and st.current_healthy == 3
            and st.expected_pods == 3
            and st.disruptions_allowed == allowed
        )

    wait_for(settled, 60, f"budget {name} status to settle at {allowed} allowed")


def _evict(scene: Scene, pod: str) -> tuple[int, dict[str, Any]]:
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=scene.namespace))
    try:
        scene.core.create_namespaced_pod_eviction(pod, scene.namespace, body)
    except ApiException as exc:
        return int(exc.status), json.loads(exc.body or "{}")
    return 201, {}


@pytest.fixture
def budgeted_apps(scene: Scene) -> tuple[list[client.V1Pod], list[client.V1Pod]]:
    """`strict` (minAvailable 3 of 3: nothing may go) and `loose` (maxUnavailable 1), both with
    budget status settled by the disruption controller."""
    scene.nodes.create_zones({"zone-a": 1, "zone-b": 1, "zone-c": 1})
    strict = _budgeted_app(scene, "strict", min_available=3)
    loose = _budgeted_app(scene, "loose", max_unavailable=1)
    _wait_budget(scene, "strict", 0)
    _wait_budget(scene, "loose", 1)
    return strict, loose


def test_eviction_refused_by_budget_and_allowed_within_it(
    budgeted_apps: tuple[list[client.V1Pod], list[client.V1Pod]], scene: Scene
) -> None:
    strict, loose = budgeted_apps
    code, status = _evict(scene, strict[0].metadata.name)
    assert code == 429, status
    assert status["reason"] == "TooManyRequests"
    assert any(c.get("reason") == "DisruptionBudget" for c in status["details"]["causes"]), status
    # Refused means untouched.
    pod = scene.core.read_namespaced_pod(strict[0].metadata.name, scene.namespace)
    assert pod.metadata.deletion_timestamp is None

    victim = loose[0].metadata.name
    code, status = _evict(scene, victim)
    assert code == 201, status
    # The eviction deleted the pod (kwok finishes the deletion) and consumed the budget.
    wait_for(
        lambda: victim not in {p.metadata.name for p in scene.pods("loose")},
        30,
        f"evicted pod {victim} to be gone",
    )
    # The Deployment replaces it and the disruption controller restores the allowance.
    scene.ready("loose", 3)
    _wait_budget(scene, "loose", 1)


def test_audit_log_records_each_eviction(
    budgeted_apps: tuple[list[client.V1Pod], list[client.V1Pod]], scene: Scene
) -> None:
    strict, loose = budgeted_apps
    namespace = scene.namespace
    mark = scene.audit.mark()
    refused, allowed = strict[1].metadata.name, loose[1].metadata.name
    assert _evict(scene, refused)[0] == 429
    assert _evict(scene, allowed)[0] == 201

    def eviction(event: dict[str, Any]) -> bool:
        ref = event.get("objectRef", {})
        return ref.get("subresource") == "eviction" and ref.get("namespace") == namespace

    events = scene.audit.wait_for_events(eviction, count=2, since=mark)
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


def test_apiserver_restart_in_place(e2e_cluster: ControlPlane, scene: Scene) -> None:
    """`restart_apiserver()` keeps port, certificates and etcd: clients, stored objects and the
    controllers carry on."""
    core_v1, namespace = scene.core, scene.namespace
    scene.nodes.create_zones({"zone-a": 1})
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
    scene.deploy("after", 2)
    scene.ready("after", 2)
    assert e2e_cluster.e2e_running
