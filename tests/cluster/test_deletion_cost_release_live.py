"""The operator takes back the pod-deletion-costs it wrote, on the real control plane.

`respread run` runs as deploy/'s service account (its RBAC: patch on pods and on policies for
the finalizer). In Enforce it writes a cost on every pod of a spread Deployment, each with the
policy's name and the value written beside it, and puts its finalizer on the policy. Then:
switching `deletionCost.enabled` off removes the costs and the finalizer; taking the namespace
out of the policy's selector removes the costs; deleting the policy removes them before the
policy goes, but never a cost another field manager set; a second policy that writes costs in
the same namespace keeps the costs the deleted one wrote; DryRun patches no
pod at all (their resourceVersions do not move).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kube_helpers import (
    COSTS_ONLY,
    GROUP,
    PLURAL,
    VERSION,
    cost_owners,
    costed_by,
    create_policy,
    delete_policy,
    scanned_after,
    wait_for,
)
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from scene import Scene

from respread.core.annotations import COST_POLICY, COST_WRITTEN, DELETION_COST, FIELD_MANAGER
from respread.kube.annotations import CostResult, write_cost
from respread.remedies.cost.release import FINALIZER

if TYPE_CHECKING:
    from operator_fixtures import StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]  # the fixtures crd and operator

RESPREAD_KEYS = (DELETION_COST, COST_POLICY, COST_WRITTEN)


def costing(scene: Scene, name: str, mode: str = "Enforce") -> None:
    """A policy writing pod-deletion-costs (and evicting nothing) in the scene's namespace."""
    create_policy(scene.custom, name, scene.namespace, mode=mode, remediation=COSTS_ONLY)


def annotations(scene: Scene) -> dict[str, dict[str, str]]:
    return {
        p.metadata.name: {
            k: v for k, v in (p.metadata.annotations or {}).items() if k in RESPREAD_KEYS
        }
        for p in scene.pods("web")
    }


def all_costed_by(scene: Scene, policy: str, count: int) -> bool:
    pods = scene.pods("web")
    return costed_by(pods, policy, count) and all(cost_owners(p) == {FIELD_MANAGER} for p in pods)


def finalizers(custom: client.CustomObjectsApi, name: str) -> list[str] | None:
    """The policy's finalizers; None once it is gone."""
    try:
        obj = custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
    except ApiException as err:
        if err.status == 404:
            return None
        raise
    return list(obj["metadata"].get("finalizers") or [])


def gone(custom: client.CustomObjectsApi, name: str) -> bool:
    return finalizers(custom, name) is None


def policy_events(core: client.CoreV1Api, name: str, reason: str) -> list[client.CoreV1Event]:
    events = core.list_namespaced_event("default").items
    return [
        e
        for e in events
        if e.involved_object.kind == "RebalancePolicy"
        and e.involved_object.name == name
        and e.reason == reason
    ]


def set_enabled(scene: Scene, name: str, enabled: bool) -> None:
    scene.patch_policy(name, remediation={"deletionCost": {"enabled": enabled}})


def set_namespaces(scene: Scene, name: str, include: list[str]) -> None:
    scene.patch_policy(name, selector={"namespaces": {"include": include}})


def web(scene: Scene, n: int) -> list[client.V1Pod]:
    scene.nodes.create_zones({"zone-a": 1, "zone-b": 1})
    scene.deploy("web", n)
    return scene.ready("web", n)


def wait(predicate: Callable[[], object], message: str, timeout: float = 90) -> None:
    wait_for(predicate, timeout, message, interval=0.5)


def test_switched_off_then_deleted_the_policy_takes_back_its_costs_and_no_other(
    scene: Scene, operator: Path
) -> None:
    custom, core_v1, namespace = scene.custom, scene.core, scene.namespace
    web(scene, 4)
    # a pod whose cost another manager wrote, never respread's (its Deployment is not spread)
    scene.deploy("other", 1, spread=False)
    (other,) = scene.ready("other", 1)
    other = scene.cost(other.metadata.name, "5", field_manager="someone-else")
    name = f"rbp-{namespace}"
    costing(scene, name)
    try:
        wait(partial(all_costed_by, scene, name, 4), "the costs, with the policy's name")
        assert FINALIZER in (finalizers(custom, name) or [])
        wait(lambda: policy_events(core_v1, name, "DeletionCostUpdated"), "an Event for the writes")

        # (b) the remedy switched off: every cost goes, and the finalizer with them
        set_enabled(scene, name, False)
        wait(
            lambda: not any(annotations(scene).values()),
            "the costs taken back once deletionCost is off",
        )
        wait(lambda: FINALIZER not in (finalizers(custom, name) or []), "the finalizer removed")
        since = time.time()
        st = wait_for(partial(scanned_after, custom, name, since), 60, "a scan after that")
        assert st["deletionCost"]["managed"] == 0, st["deletionCost"]

        # written again; the namespace leaves the policy's selector: its pods' costs go
        set_enabled(scene, name, True)
        wait(partial(all_costed_by, scene, name, 4), "the costs written again")
        set_namespaces(scene, name, ["elsewhere"])
        wait(
            lambda: not any(annotations(scene).values()),
            "the costs taken back once the namespace is out of the policy's scope",
        )
        set_namespaces(scene, name, [namespace])
        wait(partial(all_costed_by, scene, name, 4), "the costs written again")
        # another manager sets one pod's cost: that one is theirs now
        victim = sorted(annotations(scene))[0]
        scene.cost(victim, "77", field_manager="someone-else")

        # (a) the policy deleted: held by the finalizer until its costs are taken back
        delete_policy(custom, name)
        wait(partial(gone, custom, name), "the policy gone once its costs are taken back")
        after = annotations(scene)
        assert after[victim] == {DELETION_COST: "77"}, after  # another manager's: left, untagged
        assert all(not a for pod, a in after.items() if pod != victim), after
        pod = core_v1.read_namespaced_pod(victim, namespace)
        assert cost_owners(pod) == {"someone-else"}
        untouched = core_v1.read_namespaced_pod(other.metadata.name, namespace)
        assert untouched.metadata.resource_version == other.metadata.resource_version
        assert untouched.metadata.annotations[DELETION_COST] == "5"
        assert "Traceback" not in operator.read_text(errors="replace")
    finally:
        delete_policy(custom, name)


def test_a_second_policy_keeps_the_costs_the_deleted_one_wrote(
    scene: Scene, operator: Path
) -> None:
    custom = scene.custom
    web(scene, 4)
    first, second = f"rbp-{scene.namespace}-1", f"rbp-{scene.namespace}-2"
    costing(scene, first)
    try:
        wait(partial(all_costed_by, scene, first, 4), "the first policy's costs")
        costs = {p: a[DELETION_COST] for p, a in annotations(scene).items()}
        costing(scene, second)
        wait_for(partial(scanned_after, custom, second, time.time()), 60, "the second's scan")
        delete_policy(custom, first)
        wait(partial(gone, custom, first), "the first policy gone")
        # the costs stay, now under the second policy (it orders the same pods the same way)
        wait(partial(all_costed_by, scene, second, 4), "the costs handed over")
        assert {p: a[DELETION_COST] for p, a in annotations(scene).items()} == costs
        delete_policy(custom, second)
        wait(partial(gone, custom, second), "the second policy gone")
        assert not any(annotations(scene).values())
    finally:
        delete_policy(custom, first)
        delete_policy(custom, second)


def test_dry_run_neither_writes_nor_takes_back_a_cost(scene: Scene, operator: Path) -> None:
    custom, namespace = scene.custom, scene.namespace
    pods = web(scene, 4)
    name = f"rbp-{namespace}"
    # Costs this policy wrote earlier (as if it had been in Enforce): two of the four pods.
    for cost, p in enumerate(pods[:2], start=1):
        write = write_cost(
            scene.api,
            namespace,
            p.metadata.name,
            uid=p.metadata.uid,
            expected=None,
            cost=cost,
            take_over=False,
            policy=name,
        )
        assert write.result is CostResult.WRITTEN, write
    versions = {p.metadata.name: p.metadata.resource_version for p in scene.pods("web")}
    costing(scene, name, mode="DryRun")
    try:
        for enabled in (True, False):  # the order reported; then the remedy off: still nothing
            set_enabled(scene, name, enabled)
            since = time.time()
            wait_for(partial(scanned_after, custom, name, since), 60, "a scan")
            st = wait_for(partial(scanned_after, custom, name, time.time()), 60, "a second scan")
            assert st["deletionCost"]["managed"] == 2, st
            assert st["deletionCost"]["written"] == st["deletionCost"]["removed"] == 0, st
            now = {p.metadata.name: p.metadata.resource_version for p in scene.pods("web")}
            assert now == versions  # no pod was patched
        assert FINALIZER not in (finalizers(custom, name) or [])
        assert scene.status(name)["summary"]["evicted"] == 0
    finally:
        delete_policy(custom, name)


def test_a_policy_deleted_while_the_operator_is_down_waits_for_it(
    scene: Scene, operator_factory: StartOperator
) -> None:
    custom = scene.custom
    first = operator_factory()
    web(scene, 4)
    name = f"rbp-{scene.namespace}"
    costing(scene, name)
    try:
        wait(partial(all_costed_by, scene, name, 4), "the operator's costs")
        first.stop()
        delete_policy(custom, name)
        time.sleep(5)
        assert finalizers(custom, name) == [FINALIZER]  # held: nobody took the costs back
        assert all(len(a) == 3 for a in annotations(scene).values())
        second = operator_factory()
        wait(partial(gone, custom, name), "the policy gone once the operator is back")
        assert not any(annotations(scene).values())
        assert "Traceback" not in second.text()
    finally:
        delete_policy(custom, name)
