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
from typing import TYPE_CHECKING, Any

import pytest
from kube_harness import ControlPlane
from kube_helpers import (
    GROUP,
    PLURAL,
    VERSION,
    FakeNodes,
    delete_policy,
    list_pods,
    scanned_after,
    spread_deployment,
    status_of,
    wait_for,
    wait_pods_ready,
)
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.core.annotations import COST_POLICY, COST_WRITTEN, DELETION_COST, FIELD_MANAGER
from respread.kube.annotations import CostResult, write_cost
from respread.remedies.cost.release import FINALIZER

if TYPE_CHECKING:
    from operator_fixtures import StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]  # the fixtures crd and operator

RESPREAD_KEYS = (DELETION_COST, COST_POLICY, COST_WRITTEN)


def policy_body(
    name: str, namespace: str, *, mode: str = "Enforce", enabled: bool = True
) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "RebalancePolicy",
        "metadata": {"name": name},
        "spec": {
            "mode": mode,
            "schedule": {"interval": "10s"},
            "selector": {"namespaces": {"include": [namespace]}},
            "remediation": {"evict": False, "deletionCost": {"enabled": enabled}},
        },
    }


def cost_owners(pod: client.V1Pod) -> set[str]:
    return {
        m.manager
        for m in pod.metadata.managed_fields or []
        if f"f:{DELETION_COST}"
        in ((m.fields_v1 or {}).get("f:metadata") or {}).get("f:annotations", {})
    }


def annotations(core: client.CoreV1Api, namespace: str) -> dict[str, dict[str, str]]:
    return {
        p.metadata.name: {
            k: v for k, v in (p.metadata.annotations or {}).items() if k in RESPREAD_KEYS
        }
        for p in list_pods(core, namespace, "app=web")
    }


def all_costed_by(core: client.CoreV1Api, namespace: str, policy: str, count: int) -> bool:
    pods = list_pods(core, namespace, "app=web")
    return len(pods) == count and all(
        cost_owners(p) == {FIELD_MANAGER}
        and (p.metadata.annotations or {}).get(COST_POLICY) == policy
        and (p.metadata.annotations or {}).get(COST_WRITTEN)
        == (p.metadata.annotations or {}).get(DELETION_COST)
        for p in pods
    )


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


def set_enabled(custom: client.CustomObjectsApi, name: str, enabled: bool) -> None:
    custom.patch_cluster_custom_object(
        GROUP,
        VERSION,
        PLURAL,
        name,
        {"spec": {"remediation": {"deletionCost": {"enabled": enabled}}}},
    )


def set_namespaces(custom: client.CustomObjectsApi, name: str, include: list[str]) -> None:
    custom.patch_cluster_custom_object(
        GROUP, VERSION, PLURAL, name, {"spec": {"selector": {"namespaces": {"include": include}}}}
    )


def web(
    namespace: str, fake_nodes: FakeNodes, core: client.CoreV1Api, apps: client.AppsV1Api, n: int
) -> list[client.V1Pod]:
    fake_nodes.create_zones({"zone-a": 1, "zone-b": 1})
    apps.create_namespaced_deployment(
        namespace, spread_deployment("web", n, node_selector=fake_nodes.node_selector)
    )
    return wait_pods_ready(core, namespace, "app=web", n)


def wait(predicate: Callable[[], object], message: str, timeout: float = 90) -> None:
    wait_for(predicate, timeout, message, interval=0.5)


def test_switched_off_then_deleted_the_policy_takes_back_its_costs_and_no_other(
    e2e_cluster: ControlPlane,
    operator: Path,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
) -> None:
    custom = client.CustomObjectsApi(api_client)
    web(namespace, fake_nodes, core_v1, apps_v1, 4)
    # a pod whose cost another manager wrote, never respread's (its Deployment is not spread)
    apps_v1.create_namespaced_deployment(
        namespace,
        spread_deployment("other", 1, node_selector=fake_nodes.node_selector, spread=False),
    )
    (other,) = wait_pods_ready(core_v1, namespace, "app=other", 1)
    other = core_v1.patch_namespaced_pod(
        other.metadata.name,
        namespace,
        {"metadata": {"annotations": {DELETION_COST: "5"}}},
        field_manager="someone-else",
    )
    name = f"rbp-{namespace}"
    custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, policy_body(name, namespace))
    try:
        wait(
            partial(all_costed_by, core_v1, namespace, name, 4), "the costs, with the policy's name"
        )
        assert FINALIZER in (finalizers(custom, name) or [])
        wait(lambda: policy_events(core_v1, name, "DeletionCostUpdated"), "an Event for the writes")

        # (b) the remedy switched off: every cost goes, and the finalizer with them
        set_enabled(custom, name, False)
        wait(
            lambda: not any(annotations(core_v1, namespace).values()),
            "the costs taken back once deletionCost is off",
        )
        wait(lambda: FINALIZER not in (finalizers(custom, name) or []), "the finalizer removed")
        since = time.time()
        st = wait_for(partial(scanned_after, custom, name, since), 60, "a scan after that")
        assert st["deletionCost"]["managed"] == 0, st["deletionCost"]

        # written again; the namespace leaves the policy's selector: its pods' costs go
        set_enabled(custom, name, True)
        wait(partial(all_costed_by, core_v1, namespace, name, 4), "the costs written again")
        set_namespaces(custom, name, ["elsewhere"])
        wait(
            lambda: not any(annotations(core_v1, namespace).values()),
            "the costs taken back once the namespace is out of the policy's scope",
        )
        set_namespaces(custom, name, [namespace])
        wait(partial(all_costed_by, core_v1, namespace, name, 4), "the costs written again")
        # another manager sets one pod's cost: that one is theirs now
        victim = sorted(annotations(core_v1, namespace))[0]
        core_v1.patch_namespaced_pod(
            victim,
            namespace,
            {"metadata": {"annotations": {DELETION_COST: "77"}}},
            field_manager="someone-else",
        )

        # (a) the policy deleted: held by the finalizer until its costs are taken back
        delete_policy(custom, name)
        wait(partial(gone, custom, name), "the policy gone once its costs are taken back")
        after = annotations(core_v1, namespace)
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
    e2e_cluster: ControlPlane,
    operator: Path,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
) -> None:
    custom = client.CustomObjectsApi(api_client)
    web(namespace, fake_nodes, core_v1, apps_v1, 4)
    first, second = f"rbp-{namespace}-1", f"rbp-{namespace}-2"
    custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, policy_body(first, namespace))
    try:
        wait(partial(all_costed_by, core_v1, namespace, first, 4), "the first policy's costs")
        costs = {p: a[DELETION_COST] for p, a in annotations(core_v1, namespace).items()}
        custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, policy_body(second, namespace))
        wait_for(partial(scanned_after, custom, second, time.time()), 60, "the second's scan")
        delete_policy(custom, first)
        wait(partial(gone, custom, first), "the first policy gone")
        # the costs stay, now under the second policy (it orders the same pods the same way)
        wait(partial(all_costed_by, core_v1, namespace, second, 4), "the costs handed over")
        assert {p: a[DELETION_COST] for p, a in annotations(core_v1, namespace).items()} == costs
        delete_policy(custom, second)
        wait(partial(gone, custom, second), "the second policy gone")
        assert not any(annotations(core_v1, namespace).values())
    finally:
        delete_policy(custom, first)
        delete_policy(custom, second)


def test_dry_run_neither_writes_nor_takes_back_a_cost(
    e2e_cluster: ControlPlane,
    operator: Path,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
) -> None:
    custom = client.CustomObjectsApi(api_client)
    pods = web(namespace, fake_nodes, core_v1, apps_v1, 4)
    name = f"rbp-{namespace}"
    # Costs this policy wrote earlier (as if it had been in Enforce): two of the four pods.
    for cost, p in enumerate(pods[:2], start=1):
        write = write_cost(
            api_client,
            namespace,
            p.metadata.name,
            uid=p.metadata.uid,
            expected=None,
            cost=cost,
            take_over=False,
            policy=name,
        )
        assert write.result is CostResult.WRITTEN, write
    versions = {
        p.metadata.name: p.metadata.resource_version
        for p in list_pods(core_v1, namespace, "app=web")
    }
    custom.create_cluster_custom_object(
        GROUP, VERSION, PLURAL, policy_body(name, namespace, mode="DryRun")
    )
    try:
        for enabled in (True, False):  # the order reported; then the remedy off: still nothing
            set_enabled(custom, name, enabled)
            since = time.time()
            wait_for(partial(scanned_after, custom, name, since), 60, "a scan")
            st = wait_for(partial(scanned_after, custom, name, time.time()), 60, "a second scan")
            assert st["deletionCost"]["managed"] == 2, st
            assert st["deletionCost"]["written"] == st["deletionCost"]["removed"] == 0, st
            now = {
                p.metadata.name: p.metadata.resource_version
                for p in list_pods(core_v1, namespace, "app=web")
            }
            assert now == versions  # no pod was patched
        assert FINALIZER not in (finalizers(custom, name) or [])
        assert status_of(custom, name)["summary"]["evicted"] == 0
    finally:
        delete_policy(custom, name)


def test_a_policy_deleted_while_the_operator_is_down_waits_for_it(
    e2e_cluster: ControlPlane,
    operator_factory: StartOperator,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
) -> None:
    custom = client.CustomObjectsApi(api_client)
    first = operator_factory()
    web(namespace, fake_nodes, core_v1, apps_v1, 4)
    name = f"rbp-{namespace}"
    custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, policy_body(name, namespace))
    try:
        wait(partial(all_costed_by, core_v1, namespace, name, 4), "the operator's costs")
        first.stop()
        delete_policy(custom, name)
        time.sleep(5)
        assert finalizers(custom, name) == [FINALIZER]  # held: nobody took the costs back
        assert all(len(a) == 3 for a in annotations(core_v1, namespace).values())
        second = operator_factory()
        wait(partial(gone, custom, name), "the policy gone once the operator is back")
        assert not any(annotations(core_v1, namespace).values())
        assert "Traceback" not in second.text()
    finally:
        delete_policy(custom, name)
