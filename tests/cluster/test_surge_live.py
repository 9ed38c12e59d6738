"""Surge moves on the real control plane: the operator (`respread run`, deploy/'s RBAC),
kube-controller-manager (its Deployment and ReplicaSet controllers decide which pods go, the
disruption controller keeps the budgets), kube-scheduler (places the new pods) and KWOK nodes.

Skew is made as it happens in clusters: the Deployment's pods are placed while only zone-a
exists, then zone-b and zone-c come up empty. 4 pods on zone-a, 0 / 0 elsewhere: skew 4 with
maxSkew 1, two moves needed. A budget with maxUnavailable 0 refuses every eviction.

- DryRun reports the surge steps and the skips (a Flux-marked and an HPA-targeted Deployment)
  and changes nothing; Enforce fixes the skew by a surge 4 -> 6 -> 4 with no eviction, while
  the Ready pods (sampled all along) never drop below 4.
- The operator killed (SIGKILL) after the scale-up and restarted: it resumes from the
  Deployment's annotation; the end is 4 replicas, the skew fixed, no replica lost.
- New pods that never become Ready (their nodes have no kubelet: registered Ready, nothing
  runs the pods) past readyTimeout: rolled back to the original count, the original pods kept.
- Someone else scales the Deployment mid-surge: the operator stands down.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kube_harness import AuditLog, ControlPlane
from kube_helpers import (
    GROUP,
    HOSTNAME_LABEL,
    OPERATOR_USER,
    PLURAL,
    POOL_LABEL,
    VERSION,
    ZONE_LABEL,
    FakeNodes,
    evictions,
    list_pods,
    pod_is_ready,
    pods_per_zone,
    skew,
    spread_deployment,
    status_of,
    wait_for,
    wait_pods_ready,
    zone_of_nodes,
)
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.core.annotations import SURGE_STATE

if TYPE_CHECKING:
    from operator_fixtures import OperatorProcess, StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]


def budget(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": name}}},
    }


def skewed(
    fake_nodes: FakeNodes,
    core: client.CoreV1Api,
    apps: client.AppsV1Api,
    policy: client.PolicyV1Api,
    namespace: str,
    apps_and_meta: dict[str, dict[str, Any]],
    *,
    later_zones: bool = True,
) -> None:
    """zone-a alone; each Deployment's 4 pods placed there; a budget maxUnavailable 0 each;
    then (later_zones) zone-b and zone-c come up, empty."""
    fake_nodes.create_zones({"zone-a": 1})
    for app, meta in apps_and_meta.items():
        body = spread_deployment(app, 4, node_selector=fake_nodes.node_selector)
        body["metadata"].update(meta)
        body["metadata"]["labels"] = {**body["metadata"]["labels"], **meta.get("labels", {})}
        apps.create_namespaced_deployment(namespace, body)
        policy.create_namespaced_pod_disruption_budget(namespace, budget(app))
    for app in apps_and_meta:
        wait_pods_ready(core, namespace, f"app={app}", 4)
    if later_zones:
        fake_nodes.create_zones({"zone-b": 1, "zone-c": 1})

    def budgets_current() -> bool:
        for app in apps_and_meta:
            b = policy.read_namespaced_pod_disruption_budget(app, namespace)
            if (b.status.observed_generation or 0) < b.metadata.generation:
                return False
            if b.status.current_healthy != 4 or b.status.disruptions_allowed != 0:
                return False
        return True

    wait_for(budgets_current, 60, "the budgets' status from the disruption controller")


def create_policy(custom: client.CustomObjectsApi, name: str, namespace: str, **spec: Any) -> None:
    body = {
        "apiVersion": "respread.io/v1alpha1",
        "kind": "RebalancePolicy",
        "metadata": {"name": name},
        "spec": {
            "schedule": {"interval": "10s"},
            "selector": {"namespaces": {"include": [namespace]}},
            **spec,
        },
    }
    custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, body)


@contextmanager
def policy(
    custom: client.CustomObjectsApi, name: str, namespace: str, **spec: Any
) -> Iterator[str]:
    create_policy(custom, name, namespace, **spec)
    try:
        yield name
    finally:
        try:
            custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)
        except ApiException as err:
            if err.status != 404:
                raise


def surge_spec(mode: str, **surge: Any) -> dict[str, Any]:
    return {
        "mode": mode,
        "remediation": {"surge": {"enabled": True, **surge}},
    }


@dataclass
class Sampler:
    """Samples (time, spec.replicas, Ready pods) of one Deployment from a thread."""

    apps: client.AppsV1Api
    core: client.CoreV1Api
    namespace: str
    app: str
    samples: list[tuple[float, int, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                dep = self.apps.read_namespaced_deployment(self.app, self.namespace)
                pods = list_pods(self.core, self.namespace, f"app={self.app}")
                ready = sum(1 for p in pods if pod_is_ready(p))
                self.samples.append((time.time(), dep.spec.replicas, ready))
            except Exception:  # a sample lost is not a failure
                pass
            time.sleep(0.2)

    @contextmanager
    def running(self) -> Iterator[Sampler]:
        thread = threading.Thread(target=self.run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(5)

    @property
    def min_ready(self) -> int:
        return min(r for _, _, r in self.samples)

    @property
    def max_replicas(self) -> int:
        return max(n for _, n, _ in self.samples)


def annotation(apps: client.AppsV1Api, namespace: str, app: str) -> dict[str, Any] | None:
    dep = apps.read_namespaced_deployment(app, namespace)
    raw = (dep.metadata.annotations or {}).get(SURGE_STATE)
    return json.loads(raw) if raw else None


def settled(
    apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str, app: str, replicas: int
) -> bool:
    dep = apps.read_namespaced_deployment(app, namespace)
    raw = (dep.metadata.annotations or {}).get(SURGE_STATE)
    if dep.spec.replicas != replicas or (raw and json.loads(raw)["phase"] != "RolledBack"):
        return False
    pods = list_pods(core, namespace, f"app={app}")
    return len(pods) == replicas and all(pod_is_ready(p) for p in pods)


def surge_started(apps: client.AppsV1Api, namespace: str, *, interval: float = 0.05) -> None:
    """Wait (at most 90 s) for the surge's first step, web scaled up from 4 to 6, polling every
    ``interval`` seconds (often, by default: most tests act right after it)."""

    def surged() -> bool:
        return bool(apps.read_namespaced_deployment("web", namespace).spec.replicas == 6)

    wait_for(surged, 90, "the scale-up", interval=interval)


def operator_writes(audit: AuditLog, since: int) -> list[dict[str, Any]]:
    return [
        e
        for e in audit.events(since)
        if e.get("stage") == "ResponseComplete"
        and (e.get("user") or {}).get("username") == OPERATOR_USER
        and e.get("verb") in ("create", "patch", "update", "delete")
        and (e.get("objectRef") or {}).get("resource") in ("deployments", "pods")
    ]


def test_dry_run_reports_the_surge_and_the_skips_then_enforce_fixes_the_skew(
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
    skewed(
        fake_nodes,
        core_v1,
        apps_v1,
        policy_v1,
        namespace,
        {
            "web": {},
            "flux": {"labels": {"kustomize.toolkit.fluxcd.io/name": "apps"}},
            "scaled": {},
        },
    )
    client.AutoscalingV2Api(api_client).create_namespaced_horizontal_pod_autoscaler(
        namespace,
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "scaled"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "scaled"},
                "minReplicas": 1,
                "maxReplicas": 10,
            },
        },
    )
    node_zones = zone_of_nodes(core_v1, fake_nodes.node_selector)
    before = dict(pods_per_zone(list_pods(core_v1, namespace, "app=web"), node_zones))
    assert skew(before) == 4, before
    name = f"rbp-{namespace}"
    mark = audit_log.mark()
    with policy(custom, name, namespace, **surge_spec("DryRun", readyTimeout="2m")):

        def reported() -> dict[str, Any] | None:
            st = status_of(custom, name)
            by_app = {s["workload"]["name"]: s for s in st.get("surges") or ()}
            return st if {"web", "flux", "scaled"} <= by_app.keys() else None

        st = wait_for(reported, 90, "the DryRun report of the surges")
        by_app = {s["workload"]["name"]: s for s in st["surges"]}
        print("DryRun surges:", json.dumps(by_app, indent=1))
        assert by_app["web"]["state"] == "Planned"
        assert (by_app["web"]["replicas"], by_app["web"]["targetReplicas"]) == (4, 6)
        assert by_app["flux"]["state"] == "Skipped"
        assert "Flux (Kustomization)" in by_app["flux"]["reason"]
        assert by_app["scaled"]["state"] == "Skipped"
        assert "HorizontalPodAutoscaler scaled" in by_app["scaled"]["reason"]
        remedies = {v["workload"]["name"]: v.get("remedy") for v in st["violations"]}
        assert remedies["web"] == "Surge"
        assert "flux" in remedies and remedies["flux"] != "Surge"
        time.sleep(12)  # another scan: still nothing written
        assert operator_writes(audit_log, mark) == []
        assert apps_v1.read_namespaced_deployment("web", namespace).spec.replicas == 4

        sampler = Sampler(apps_v1, core_v1, namespace, "web")
        with sampler.running():
            enforced = time.time()
            custom.patch_cluster_custom_object(
                GROUP, VERSION, PLURAL, name, {"spec": {"mode": "Enforce"}}
            )
            wait_for(lambda: sampler.samples and sampler.max_replicas == 6, 90, "the surge to 6")
            wait_for(
                lambda: settled(apps_v1, core_v1, namespace, "web", 4), 120, "back to 4 replicas"
            )
        took = time.time() - enforced
        after = dict(pods_per_zone(list_pods(core_v1, namespace, "app=web"), node_zones))
        print(
            f"surge: zones {before} -> {after}; replicas max {sampler.max_replicas}, "
            f"min Ready {sampler.min_ready} over {len(sampler.samples)} samples; "
            f"{took:.0f}s from Enforce to settled"
        )
        assert skew(after) <= 1, after
        assert sampler.min_ready >= 4
        assert evictions(audit_log, mark) == []
        for app in ("flux", "scaled"):
            dep = apps_v1.read_namespaced_deployment(app, namespace)
            assert dep.spec.replicas == 4
            assert SURGE_STATE not in (dep.metadata.annotations or {})
        patched = {
            e["objectRef"]["name"]
            for e in operator_writes(audit_log, mark)
            if e["objectRef"]["resource"] == "deployments"
        }
        assert patched == {"web"}
    assert "Traceback" not in operator.read_text(errors="replace")


def test_an_operator_killed_mid_surge_resumes_and_ends_with_the_original_count(
    e2e_cluster: ControlPlane,
    operator_factory: StartOperator,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    policy_v1: client.PolicyV1Api,
    audit_log: AuditLog,
) -> None:
    custom = client.CustomObjectsApi(api_client)
    skewed(fake_nodes, core_v1, apps_v1, policy_v1, namespace, {"web": {}})
    node_zones = zone_of_nodes(core_v1, fake_nodes.node_selector)
    original = {p.metadata.uid for p in list_pods(core_v1, namespace, "app=web")}
    mark = audit_log.mark()
    name = f"rbp-{namespace}"
    sampler = Sampler(apps_v1, core_v1, namespace, "web")
    first: OperatorProcess = operator_factory()
    with (
        sampler.running(),
        policy(custom, name, namespace, **surge_spec("Enforce", readyTimeout="2m")),
    ):
        surge_started(apps_v1, namespace)
        first.kill()
        state = annotation(apps_v1, namespace, "web")
        assert state is not None and state["phase"] == "Surging", state
        wait_pods_ready(core_v1, namespace, "app=web", 6)  # the new pods, while no operator runs
        time.sleep(5)
        assert apps_v1.read_namespaced_deployment("web", namespace).spec.replicas == 6
        second = operator_factory()
        wait_for(lambda: settled(apps_v1, core_v1, namespace, "web", 4), 120, "back to 4 replicas")
        assert "Traceback" not in second.text()

        def told_on_the_policy() -> set[str]:
            events = core_v1.list_namespaced_event(
                "default", field_selector=f"involvedObject.name={name}"
            ).items
            return {e.reason for e in events if e.reason.startswith("Surge")}

        # each step told on the policy too, whether a scan or the follower took it
        wait_for(
            lambda: {"SurgeScalingBack", "SurgeFinished"} <= told_on_the_policy(),
            30,
            "the steps told on the policy",
        )
    pods = list_pods(core_v1, namespace, "app=web")
    after = dict(pods_per_zone(pods, node_zones))
    kept = len(original & {p.metadata.uid for p in pods})
    print(
        f"killed mid-surge: zones {after}, replicas max {sampler.max_replicas}, "
        f"min Ready {sampler.min_ready}, original pods kept {kept} of 4"
    )
    assert skew(after) <= 1, after
    assert sampler.min_ready >= 4
    assert kept == 2  # the two from the crowded zone made way for the two new ones
    assert evictions(audit_log, mark) == []


def kubelet_less_nodes(
    core: client.CoreV1Api, fake_nodes: FakeNodes, zones: tuple[str, ...]
) -> list[str]:
    """Nodes registered Ready that no kubelet (and no KWOK) runs: pods bound there stay
    Pending. Removed by the caller."""
    names = []
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for zone in zones:
        name = f"{fake_nodes.pool}-{zone}-nokubelet"
        resources = {"cpu": "4", "memory": "16Gi", "pods": "110"}
        core.create_node(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        ZONE_LABEL: zone,
                        HOSTNAME_LABEL: name,
                        POOL_LABEL: fake_nodes.pool,
                    },
                },
                "status": {
                    "capacity": resources,
                    "allocatable": resources,
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "KubeletReady",
                            "lastHeartbeatTime": now,
                            "lastTransitionTime": now,
                        }
                    ],
                },
            }
        )
        names.append(name)
    return names


@contextmanager
def nodes_removed(core: client.CoreV1Api, names: list[str]) -> Iterator[None]:
    try:
        yield
    finally:
        for name in names:
            try:
                core.delete_node(name)
            except ApiException as err:
                if err.status != 404:
                    raise


def test_new_pods_pending_past_the_deadline_are_rolled_back(
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
    skewed(fake_nodes, core_v1, apps_v1, policy_v1, namespace, {"web": {}}, later_zones=False)
    original = {p.metadata.uid for p in list_pods(core_v1, namespace, "app=web")}
    mark = audit_log.mark()
    nodes = kubelet_less_nodes(core_v1, fake_nodes, ("zone-b", "zone-c"))
    name = f"rbp-{namespace}"
    sampler = Sampler(apps_v1, core_v1, namespace, "web")
    with (
        nodes_removed(core_v1, nodes),
        sampler.running(),
        policy(custom, name, namespace, **surge_spec("Enforce", readyTimeout="10s")),
    ):
        wait_for(lambda: sampler.samples and sampler.max_replicas == 6, 90, "the scale-up")

        def rolling_back() -> dict[str, Any] | None:
            state = annotation(apps_v1, namespace, "web")
            return state if state and state["phase"] == "RollingBack" else None

        rolled = wait_for(rolling_back, 60, "the rollback", interval=0.1)
        print("rollback state:", rolled)
        wait_for(lambda: settled(apps_v1, core_v1, namespace, "web", 4), 90, "back to 4 replicas")
        pods = list_pods(core_v1, namespace, "app=web")
    kept = {p.metadata.uid for p in pods}
    print(
        f"rollback: replicas max {sampler.max_replicas}, min Ready {sampler.min_ready}, "
        f"original pods kept {len(kept & original)} of 4"
    )
    assert kept == original  # the Pending new pods went, the original ones stayed
    assert sampler.min_ready >= 4
    assert evictions(audit_log, mark) == []
    assert "Traceback" not in operator.read_text(errors="replace")


def test_someone_else_scaling_mid_surge_makes_the_operator_stand_down(
    e2e_cluster: ControlPlane,
    operator: Path,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    policy_v1: client.PolicyV1Api,
) -> None:
    custom = client.CustomObjectsApi(api_client)
    skewed(fake_nodes, core_v1, apps_v1, policy_v1, namespace, {"web": {}}, later_zones=False)
    nodes = kubelet_less_nodes(core_v1, fake_nodes, ("zone-b", "zone-c"))
    name = f"rbp-{namespace}"
    with (
        nodes_removed(core_v1, nodes),
        policy(custom, name, namespace, **surge_spec("Enforce", readyTimeout="10m")),
    ):
        surge_started(apps_v1, namespace, interval=0.25)
        apps_v1.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 5}})
        wait_for(
            lambda: annotation(apps_v1, namespace, "web") is None, 60, "the operator standing down"
        )
        time.sleep(12)  # a scan later: the operator leaves the other client's count alone
        assert apps_v1.read_namespaced_deployment("web", namespace).spec.replicas == 5
        reasons = {
            e.reason
            for e in core_v1.list_namespaced_event(
                namespace, field_selector="involvedObject.name=web"
            ).items
        }
        assert "SurgeStoodDown" in reasons, reasons
    assert "Traceback" not in operator.read_text(errors="replace")


LEASE_NS, LEASE = "respread-system", "respread"


def lease_holder(coordination: client.CoordinationV1Api) -> str:
    try:
        lease = coordination.read_namespaced_lease(LEASE, LEASE_NS)
    except ApiException as err:
        if err.status == 404:
            return ""
        raise
    return str(lease.spec.holder_identity or "")


def test_a_new_leader_finishes_the_surge_the_killed_leader_started(
    e2e_cluster: ControlPlane,
    operator_factory: StartOperator,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    policy_v1: client.PolicyV1Api,
    audit_log: AuditLog,
) -> None:
    """Two replicas with --leader-elect: the leader scales up and is SIGKILLed; the other takes
    the Lease over and finishes the surge from the Deployment's annotation."""
    custom = client.CustomObjectsApi(api_client)
    coordination = client.CoordinationV1Api(api_client)
    try:  # a Lease left by an earlier test would hold a dead identity for one duration
        coordination.delete_namespaced_lease(LEASE, LEASE_NS)
    except ApiException as err:
        if err.status != 404:
            raise
    skewed(fake_nodes, core_v1, apps_v1, policy_v1, namespace, {"web": {}})
    node_zones = zone_of_nodes(core_v1, fake_nodes.node_selector)
    ops = {
        identity: operator_factory(
            "--leader-elect", "--lease-duration", "6s", "--identity", identity
        )
        for identity in ("op-a", "op-b")
    }
    first = wait_for(lambda: lease_holder(coordination), 60, "a replica to acquire the Lease")
    second = next(i for i in ops if i != first)
    mark = audit_log.mark()
    name = f"rbp-{namespace}"
    sampler = Sampler(apps_v1, core_v1, namespace, "web")
    with (
        sampler.running(),
        policy(custom, name, namespace, **surge_spec("Enforce", readyTimeout="2m")),
    ):
        surge_started(apps_v1, namespace)
        ops[first].kill()
        wait_for(lambda: lease_holder(coordination) == second, 60, "the other replica to lead")
        wait_for(lambda: settled(apps_v1, core_v1, namespace, "web", 4), 120, "back to 4 replicas")
    writers = [
        (e["userAgent"].removeprefix("respread/"), (e.get("requestObject") or {}).get("spec"))
        for e in operator_writes(audit_log, mark)
        if e["objectRef"]["resource"] == "deployments" and e["objectRef"]["name"] == "web"
    ]
    after = dict(pods_per_zone(list_pods(core_v1, namespace, "app=web"), node_zones))
    codes = [
        (e["responseStatus"] or {}).get("code")
        for e in operator_writes(audit_log, mark)
        if e["objectRef"]["resource"] == "deployments" and e["objectRef"]["name"] == "web"
    ]
    print(
        f"leader change mid-surge: deployment patches {writers} (HTTP {codes}); zones {after}; "
        f"min Ready {sampler.min_ready}"
    )
    assert writers[0] == (first, {"replicas": 6})
    assert (second, {"replicas": 4}) in writers
    assert all(who == second for who, _ in writers[1:])
    assert skew(after) <= 1, after
    assert sampler.min_ready >= 4
    assert evictions(audit_log, mark) == []


def back_to_original(apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str) -> bool:
    """4 replicas, 4 Ready pods, and respread's annotation gone (no RolledBack record either)."""
    return annotation(apps, namespace, "web") is None and settled(apps, core, namespace, "web", 4)


def test_a_policy_deleted_mid_surge_leaves_the_deployment_at_its_original_count(
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
    """The new pods stay Pending (kubelet-less nodes) and readyTimeout is 10m: the surge would
    sit in Surging for minutes; the policy is deleted right after the scale-up. The orphan pass
    rolls it back: 4 replicas, the original pods, the annotation removed."""
    custom = client.CustomObjectsApi(api_client)
    skewed(fake_nodes, core_v1, apps_v1, policy_v1, namespace, {"web": {}}, later_zones=False)
    original = {p.metadata.uid for p in list_pods(core_v1, namespace, "app=web")}
    mark = audit_log.mark()
    nodes = kubelet_less_nodes(core_v1, fake_nodes, ("zone-b", "zone-c"))
    name = f"rbp-{namespace}"
    sampler = Sampler(apps_v1, core_v1, namespace, "web")
    with nodes_removed(core_v1, nodes), sampler.running():
        create_policy(custom, name, namespace, **surge_spec("Enforce", readyTimeout="10m"))
        wait_for(lambda: sampler.samples and sampler.max_replicas == 6, 90, "the scale-up")
        custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)
        deleted = time.time()
        state = annotation(apps_v1, namespace, "web")
        assert state is not None and state["phase"] == "Surging", state
        wait_for(
            lambda: back_to_original(apps_v1, core_v1, namespace), 90, "back to 4, unannotated"
        )
        took = time.time() - deleted
        pods = list_pods(core_v1, namespace, "app=web")
    kept = {p.metadata.uid for p in pods}
    print(
        f"policy deleted mid-surge: back to 4 in {took:.1f}s; replicas max "
        f"{sampler.max_replicas}, min Ready {sampler.min_ready}, original pods kept "
        f"{len(kept & original)} of 4"
    )
    assert kept == original
    assert sampler.min_ready >= 4
    assert evictions(audit_log, mark) == []
    reasons = {
        e.reason
        for e in core_v1.list_namespaced_event(
            namespace, field_selector="involvedObject.name=web"
        ).items
    }
    assert {"SurgeRollingBack", "SurgeRolledBack"} <= reasons, reasons
    assert "Traceback" not in operator.read_text(errors="replace")


def test_a_restarted_operator_ends_the_surge_of_a_policy_deleted_while_it_was_down(
    e2e_cluster: ControlPlane,
    operator_factory: StartOperator,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    policy_v1: client.PolicyV1Api,
    audit_log: AuditLog,
) -> None:
    """The operator is SIGKILLed right after the scale-up, the policy deleted while it is down
    and the new pods become Ready meanwhile; no policy exists when it starts again. Its orphan
    pass (from start-up, with no policy at all) rolls the surge back: the new pods go."""
    custom = client.CustomObjectsApi(api_client)
    skewed(fake_nodes, core_v1, apps_v1, policy_v1, namespace, {"web": {}})
    original = {p.metadata.uid for p in list_pods(core_v1, namespace, "app=web")}
    mark = audit_log.mark()
    name = f"rbp-{namespace}"
    sampler = Sampler(apps_v1, core_v1, namespace, "web")
    first: OperatorProcess = operator_factory()
    with sampler.running():
        create_policy(custom, name, namespace, **surge_spec("Enforce", readyTimeout="10m"))
        surge_started(apps_v1, namespace)
        first.kill()
        custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)
        state = annotation(apps_v1, namespace, "web")
        assert state is not None and state["phase"] == "Surging", state
        wait_pods_ready(core_v1, namespace, "app=web", 6)  # while no operator runs
        second = operator_factory()
        started = time.time()
        wait_for(
            lambda: back_to_original(apps_v1, core_v1, namespace), 120, "back to 4, unannotated"
        )
        took = time.time() - started
        pods = list_pods(core_v1, namespace, "app=web")
    kept = {p.metadata.uid for p in pods}
    print(
        f"restarted after the policy's deletion: back to 4 in {took:.1f}s after the start; "
        f"replicas max {sampler.max_replicas}, min Ready {sampler.min_ready}, original pods "
        f"kept {len(kept & original)} of 4"
    )
    assert kept == original  # the rollback removed the surge's own (Ready) pods
    assert sampler.min_ready >= 4
    assert evictions(audit_log, mark) == []
    assert "Traceback" not in second.text()


def test_a_policy_switched_to_dry_run_mid_surge_finishes_it(
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
    """Switched to DryRun (and the remedy disabled) right after the scale-up: the operation was
    started in Enforce and is finished, not frozen at n + k (docs/surge.md)."""
    custom = client.CustomObjectsApi(api_client)
    skewed(fake_nodes, core_v1, apps_v1, policy_v1, namespace, {"web": {}})
    node_zones = zone_of_nodes(core_v1, fake_nodes.node_selector)
    mark = audit_log.mark()
    name = f"rbp-{namespace}"
    sampler = Sampler(apps_v1, core_v1, namespace, "web")
    with (
        sampler.running(),
        policy(custom, name, namespace, **surge_spec("Enforce", readyTimeout="2m")),
    ):
        surge_started(apps_v1, namespace)
        custom.patch_cluster_custom_object(
            GROUP,
            VERSION,
            PLURAL,
            name,
            {"spec": {"mode": "DryRun", "remediation": {"surge": {"enabled": False}}}},
        )
        switched = time.time()
        wait_for(
            lambda: back_to_original(apps_v1, core_v1, namespace), 90, "back to 4, unannotated"
        )
        took = time.time() - switched
        pods = list_pods(core_v1, namespace, "app=web")
    after = dict(pods_per_zone(pods, node_zones))
    print(
        f"switched to DryRun mid-surge: finished in {took:.1f}s; zones {after}, replicas max "
        f"{sampler.max_replicas}, min Ready {sampler.min_ready}"
    )
    assert skew(after) <= 1, after
    assert sampler.min_ready >= 4
    assert evictions(audit_log, mark) == []
    assert "Traceback" not in operator.read_text(errors="replace")
