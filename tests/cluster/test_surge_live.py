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
    OPERATOR_USER,
    POOL_LABEL,
    create_policy,
    delete_policy,
    evictions,
    forget_lease,
    lease_holder,
    pod_is_ready,
    pods_per_zone,
    skew,
    spread_deployment,
    wait_for,
    zone_of_nodes,
)
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from scene import Scene
from tests.support.constants import HOST, ZONE

from respread.core.annotations import SURGE_STATE

if TYPE_CHECKING:
    from operator_fixtures import OperatorProcess, StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]


def skewed(
    scene: Scene, apps_and_meta: dict[str, dict[str, Any]], *, later_zones: bool = True
) -> None:
    """zone-a alone; each Deployment's 4 pods placed there; a budget maxUnavailable 0 each;
    then (later_zones) zone-b and zone-c come up, empty."""
    scene.nodes.create_zones({"zone-a": 1})
    for app, meta in apps_and_meta.items():
        body = spread_deployment(app, 4, node_selector=scene.nodes.node_selector)
        body["metadata"].update(meta)
        body["metadata"]["labels"] = {**body["metadata"]["labels"], **meta.get("labels", {})}
        scene.apps.create_namespaced_deployment(scene.namespace, body)
        scene.budget(app, max_unavailable=0)
    for app in apps_and_meta:
        scene.ready(app, 4)
    if later_zones:
        scene.nodes.create_zones({"zone-b": 1, "zone-c": 1})

    def budgets_current() -> bool:
        for app in apps_and_meta:
            b = scene.policy.read_namespaced_pod_disruption_budget(app, scene.namespace)
            if (b.status.observed_generation or 0) < b.metadata.generation:
                return False
            if b.status.current_healthy != 4 or b.status.disruptions_allowed != 0:
                return False
        return True

    wait_for(budgets_current, 60, "the budgets' status from the disruption controller")


def surge_spec(mode: str, **surge: Any) -> dict[str, Any]:
    return {
        "mode": mode,
        "remediation": {"surge": {"enabled": True, **surge}},
    }


@dataclass
class Sampler:
    """Samples (time, spec.replicas, Ready pods) of one Deployment from a thread."""

    scene: Scene
    app: str
    samples: list[tuple[float, int, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                dep = self.scene.apps.read_namespaced_deployment(self.app, self.scene.namespace)
                pods = self.scene.pods(self.app)
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


def annotation(scene: Scene, app: str) -> dict[str, Any] | None:
    dep = scene.apps.read_namespaced_deployment(app, scene.namespace)
    raw = (dep.metadata.annotations or {}).get(SURGE_STATE)
    return json.loads(raw) if raw else None


def settled(scene: Scene, app: str, replicas: int) -> bool:
    dep = scene.apps.read_namespaced_deployment(app, scene.namespace)
    raw = (dep.metadata.annotations or {}).get(SURGE_STATE)
    if dep.spec.replicas != replicas or (raw and json.loads(raw)["phase"] != "RolledBack"):
        return False
    pods = scene.pods(app)
    return len(pods) == replicas and all(pod_is_ready(p) for p in pods)


def surge_started(scene: Scene, *, interval: float = 0.05) -> None:
    """Wait (at most 90 s) for the surge's first step, web scaled up from 4 to 6, polling every
    ``interval`` seconds (often, by default: most tests act right after it)."""

    def surged() -> bool:
        return bool(
            scene.apps.read_namespaced_deployment("web", scene.namespace).spec.replicas == 6
        )

    wait_for(surged, 90, "the scale-up", interval=interval)


@contextmanager
def surging(scene: Scene, name: str) -> Iterator[Sampler]:
    """An Enforce surge policy (readyTimeout 2m) for the block, web's replicas and Ready pods
    sampled all along; the block begins once the surge has scaled web up."""
    sampler = Sampler(scene, "web")
    with sampler.running(), scene.rebalancing(name, **surge_spec("Enforce", readyTimeout="2m")):
        surge_started(scene)
        yield sampler


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
    scene: Scene, operator: Path
) -> None:
    skewed(
        scene,
        {
            "web": {},
            "flux": {"labels": {"kustomize.toolkit.fluxcd.io/name": "apps"}},
            "scaled": {},
        },
    )
    client.AutoscalingV2Api(scene.api).create_namespaced_horizontal_pod_autoscaler(
        scene.namespace,
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
    node_zones = zone_of_nodes(scene.core, scene.nodes.node_selector)
    before = dict(pods_per_zone(scene.pods("web"), node_zones))
    assert skew(before) == 4, before
    name = f"rbp-{scene.namespace}"
    mark = scene.audit.mark()
    with scene.rebalancing(name, **surge_spec("DryRun", readyTimeout="2m")):

        def reported() -> dict[str, Any] | None:
            st = scene.status(name)
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
        assert operator_writes(scene.audit, mark) == []
        assert scene.apps.read_namespaced_deployment("web", scene.namespace).spec.replicas == 4

        sampler = Sampler(scene, "web")
        with sampler.running():
            enforced = time.time()
            scene.patch_policy(name, mode="Enforce")
            wait_for(lambda: sampler.samples and sampler.max_replicas == 6, 90, "the surge to 6")
            wait_for(lambda: settled(scene, "web", 4), 120, "back to 4 replicas")
        took = time.time() - enforced
        after = dict(pods_per_zone(scene.pods("web"), node_zones))
        print(
            f"surge: zones {before} -> {after}; replicas max {sampler.max_replicas}, "
            f"min Ready {sampler.min_ready} over {len(sampler.samples)} samples; "
            f"{took:.0f}s from Enforce to settled"
        )
        assert skew(after) <= 1, after
        assert sampler.min_ready >= 4
        assert evictions(scene.audit, mark) == []
        for app in ("flux", "scaled"):
            dep = scene.apps.read_namespaced_deployment(app, scene.namespace)
            assert dep.spec.replicas == 4
            assert SURGE_STATE not in (dep.metadata.annotations or {})
        patched = {
            e["objectRef"]["name"]
            for e in operator_writes(scene.audit, mark)
            if e["objectRef"]["resource"] == "deployments"
        }
        assert patched == {"web"}
    assert "Traceback" not in operator.read_text(errors="replace")


def test_an_operator_killed_mid_surge_resumes_and_ends_with_the_original_count(
    e2e_cluster: ControlPlane, scene: Scene, operator_factory: StartOperator
) -> None:
    skewed(scene, {"web": {}})
    node_zones = zone_of_nodes(scene.core, scene.nodes.node_selector)
    original = {p.metadata.uid for p in scene.pods("web")}
    mark = scene.audit.mark()
    name = f"rbp-{scene.namespace}"
    first: OperatorProcess = operator_factory()
    with e2e_cluster.scheduling_held() as release, surging(scene, name) as sampler:
        first.kill()
        release()
        state = annotation(scene, "web")
        assert state is not None and state["phase"] == "Surging", state
        scene.ready("web", 6)  # the new pods, while no operator runs
        time.sleep(5)
        assert scene.apps.read_namespaced_deployment("web", scene.namespace).spec.replicas == 6
        second = operator_factory()
        wait_for(lambda: settled(scene, "web", 4), 120, "back to 4 replicas")
        assert "Traceback" not in second.text()

        def told_on_the_policy() -> set[str]:
            events = scene.core.list_namespaced_event(
                "default", field_selector=f"involvedObject.name={name}"
            ).items
            return {e.reason for e in events if e.reason.startswith("Surge")}

        # each step told on the policy too, whether a scan or the follower took it
        wait_for(
            lambda: {"SurgeScalingBack", "SurgeFinished"} <= told_on_the_policy(),
            30,
            "the steps told on the policy",
        )
    pods = scene.pods("web")
    after = dict(pods_per_zone(pods, node_zones))
    kept = len(original & {p.metadata.uid for p in pods})
    print(
        f"killed mid-surge: zones {after}, replicas max {sampler.max_replicas}, "
        f"min Ready {sampler.min_ready}, original pods kept {kept} of 4"
    )
    assert skew(after) <= 1, after
    assert sampler.min_ready >= 4
    assert kept == 2  # the two from the crowded zone made way for the two new ones
    assert evictions(scene.audit, mark) == []


def kubelet_less_nodes(scene: Scene, zones: tuple[str, ...]) -> list[str]:
    """Nodes registered Ready that no kubelet (and no KWOK) runs: pods bound there stay
    Pending. Removed by the caller."""
    names = []
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for zone in zones:
        name = f"{scene.nodes.pool}-{zone}-nokubelet"
        resources = {"cpu": "4", "memory": "16Gi", "pods": "110"}
        scene.core.create_node(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        ZONE: zone,
                        HOST: name,
                        POOL_LABEL: scene.nodes.pool,
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


def stranded(scene: Scene) -> list[str]:
    """web's 4 pods skewed onto zone-a, zones b and c only on kubelet-less nodes (new pods stay
    Pending there): those nodes, for the caller to remove."""
    skewed(scene, {"web": {}}, later_zones=False)
    return kubelet_less_nodes(scene, ("zone-b", "zone-c"))


@contextmanager
def nodes_removed(scene: Scene, names: list[str]) -> Iterator[None]:
    try:
        yield
    finally:
        for name in names:
            try:
                scene.core.delete_node(name)
            except ApiException as err:
                if err.status != 404:
                    raise


def test_new_pods_pending_past_the_deadline_are_rolled_back(scene: Scene, operator: Path) -> None:
    nodes = stranded(scene)
    original = {p.metadata.uid for p in scene.pods("web")}
    mark = scene.audit.mark()
    name = f"rbp-{scene.namespace}"
    sampler = Sampler(scene, "web")
    with (
        nodes_removed(scene, nodes),
        sampler.running(),
        scene.rebalancing(name, **surge_spec("Enforce", readyTimeout="10s")),
    ):
        wait_for(lambda: sampler.samples and sampler.max_replicas == 6, 90, "the scale-up")

        def rolling_back() -> dict[str, Any] | None:
            state = annotation(scene, "web")
            return state if state and state["phase"] == "RollingBack" else None

        rolled = wait_for(rolling_back, 60, "the rollback", interval=0.1)
        print("rollback state:", rolled)
        wait_for(lambda: settled(scene, "web", 4), 90, "back to 4 replicas")
        pods = scene.pods("web")
    kept = {p.metadata.uid for p in pods}
    print(
        f"rollback: replicas max {sampler.max_replicas}, min Ready {sampler.min_ready}, "
        f"original pods kept {len(kept & original)} of 4"
    )
    assert kept == original  # the Pending new pods went, the original ones stayed
    assert sampler.min_ready >= 4
    assert evictions(scene.audit, mark) == []
    assert "Traceback" not in operator.read_text(errors="replace")


def test_someone_else_scaling_mid_surge_makes_the_operator_stand_down(
    scene: Scene, operator: Path
) -> None:
    nodes = stranded(scene)
    name = f"rbp-{scene.namespace}"
    with (
        nodes_removed(scene, nodes),
        scene.rebalancing(name, **surge_spec("Enforce", readyTimeout="10m")),
    ):
        surge_started(scene, interval=0.25)
        scene.scale("web", 5)
        wait_for(lambda: annotation(scene, "web") is None, 60, "the operator standing down")
        time.sleep(12)  # a scan later: the operator leaves the other client's count alone
        assert scene.apps.read_namespaced_deployment("web", scene.namespace).spec.replicas == 5
        reasons = {
            e.reason
            for e in scene.core.list_namespaced_event(
                scene.namespace, field_selector="involvedObject.name=web"
            ).items
        }
        assert "SurgeStoodDown" in reasons, reasons
    assert "Traceback" not in operator.read_text(errors="replace")


def test_a_new_leader_finishes_the_surge_the_killed_leader_started(
    e2e_cluster: ControlPlane, scene: Scene, operator_factory: StartOperator
) -> None:
    """Two replicas with --leader-elect: the leader scales up and is SIGKILLed; the other takes
    the Lease over and finishes the surge from the Deployment's annotation."""
    coordination = client.CoordinationV1Api(scene.api)
    forget_lease(coordination)
    skewed(scene, {"web": {}})
    node_zones = zone_of_nodes(scene.core, scene.nodes.node_selector)
    ops = {
        identity: operator_factory(
            "--leader-elect", "--lease-duration", "6s", "--identity", identity
        )
        for identity in ("op-a", "op-b")
    }
    first = wait_for(lambda: lease_holder(coordination), 60, "a replica to acquire the Lease")
    second = next(i for i in ops if i != first)
    mark = scene.audit.mark()
    name = f"rbp-{scene.namespace}"
    with e2e_cluster.scheduling_held() as release, surging(scene, name) as sampler:
        ops[first].kill()
        release()
        wait_for(lambda: lease_holder(coordination) == second, 60, "the other replica to lead")
        wait_for(lambda: settled(scene, "web", 4), 120, "back to 4 replicas")
    writers = [
        (e["userAgent"].removeprefix("respread/"), (e.get("requestObject") or {}).get("spec"))
        for e in operator_writes(scene.audit, mark)
        if e["objectRef"]["resource"] == "deployments" and e["objectRef"]["name"] == "web"
    ]
    after = dict(pods_per_zone(scene.pods("web"), node_zones))
    codes = [
        (e["responseStatus"] or {}).get("code")
        for e in operator_writes(scene.audit, mark)
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
    assert evictions(scene.audit, mark) == []


def back_to_original(scene: Scene) -> bool:
    """4 replicas, 4 Ready pods, and respread's annotation gone (no RolledBack record either)."""
    return annotation(scene, "web") is None and settled(scene, "web", 4)


def wait_back_to_original(scene: Scene, since: float, timeout: float) -> tuple[float, set[str]]:
    """Wait for ``back_to_original``; the seconds it took from ``since``, the pods' uids."""
    wait_for(lambda: back_to_original(scene), timeout, "back to 4, unannotated")
    return time.time() - since, {p.metadata.uid for p in scene.pods("web")}


def test_a_policy_deleted_mid_surge_leaves_the_deployment_at_its_original_count(
    scene: Scene, operator: Path
) -> None:
    """The new pods stay Pending (kubelet-less nodes) and readyTimeout is 10m: the surge would
    sit in Surging for minutes; the policy is deleted right after the scale-up. The orphan pass
    rolls it back: 4 replicas, the original pods, the annotation removed."""
    nodes = stranded(scene)
    original = {p.metadata.uid for p in scene.pods("web")}
    mark = scene.audit.mark()
    name = f"rbp-{scene.namespace}"
    sampler = Sampler(scene, "web")
    with nodes_removed(scene, nodes), sampler.running():
        create_policy(
            scene.custom, name, scene.namespace, **surge_spec("Enforce", readyTimeout="10m")
        )
        wait_for(lambda: sampler.samples and sampler.max_replicas == 6, 90, "the scale-up")
        delete_policy(scene.custom, name)
        deleted = time.time()
        state = annotation(scene, "web")
        assert state is not None and state["phase"] == "Surging", state
        took, kept = wait_back_to_original(scene, deleted, 90)
    print(
        f"policy deleted mid-surge: back to 4 in {took:.1f}s; replicas max "
        f"{sampler.max_replicas}, min Ready {sampler.min_ready}, original pods kept "
        f"{len(kept & original)} of 4"
    )
    assert kept == original
    assert sampler.min_ready >= 4
    assert evictions(scene.audit, mark) == []
    reasons = {
        e.reason
        for e in scene.core.list_namespaced_event(
            scene.namespace, field_selector="involvedObject.name=web"
        ).items
    }
    assert {"SurgeRollingBack", "SurgeRolledBack"} <= reasons, reasons
    assert "Traceback" not in operator.read_text(errors="replace")


def test_a_restarted_operator_ends_the_surge_of_a_policy_deleted_while_it_was_down(
    e2e_cluster: ControlPlane, scene: Scene, operator_factory: StartOperator
) -> None:
    """The operator is SIGKILLed right after the scale-up, the policy deleted while it is down
    and the new pods become Ready meanwhile; no policy exists when it starts again. Its orphan
    pass (from start-up, with no policy at all) rolls the surge back: the new pods go."""
    skewed(scene, {"web": {}})
    original = {p.metadata.uid for p in scene.pods("web")}
    mark = scene.audit.mark()
    name = f"rbp-{scene.namespace}"
    sampler = Sampler(scene, "web")
    first: OperatorProcess = operator_factory()
    with sampler.running(), e2e_cluster.scheduling_held() as release:
        create_policy(
            scene.custom, name, scene.namespace, **surge_spec("Enforce", readyTimeout="10m")
        )
        surge_started(scene)
        first.kill()
        release()
        delete_policy(scene.custom, name)
        state = annotation(scene, "web")
        assert state is not None and state["phase"] == "Surging", state
        scene.ready("web", 6)  # while no operator runs
        second = operator_factory()
        started = time.time()
        took, kept = wait_back_to_original(scene, started, 120)
    print(
        f"restarted after the policy's deletion: back to 4 in {took:.1f}s after the start; "
        f"replicas max {sampler.max_replicas}, min Ready {sampler.min_ready}, original pods "
        f"kept {len(kept & original)} of 4"
    )
    assert kept == original  # the rollback removed the surge's own (Ready) pods
    assert sampler.min_ready >= 4
    assert evictions(scene.audit, mark) == []
    assert "Traceback" not in second.text()


def test_a_policy_switched_to_dry_run_mid_surge_finishes_it(scene: Scene, operator: Path) -> None:
    """Switched to DryRun (and the remedy disabled) right after the scale-up: the operation was
    started in Enforce and is finished, not frozen at n + k (docs/surge.md)."""
    skewed(scene, {"web": {}})
    node_zones = zone_of_nodes(scene.core, scene.nodes.node_selector)
    mark = scene.audit.mark()
    name = f"rbp-{scene.namespace}"
    with surging(scene, name) as sampler:
        scene.patch_policy(name, mode="DryRun", remediation={"surge": {"enabled": False}})
        switched = time.time()
        took, _ = wait_back_to_original(scene, switched, 90)
        pods = scene.pods("web")
    after = dict(pods_per_zone(pods, node_zones))
    print(
        f"switched to DryRun mid-surge: finished in {took:.1f}s; zones {after}, replicas max "
        f"{sampler.max_replicas}, min Ready {sampler.min_ready}"
    )
    assert skew(after) <= 1, after
    assert sampler.min_ready >= 4
    assert evictions(scene.audit, mark) == []
    assert "Traceback" not in operator.read_text(errors="replace")
