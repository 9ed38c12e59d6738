"""Helpers for cluster tests: waiting, fake (kwok) nodes, workloads and zone-skew arithmetic."""

from __future__ import annotations

import base64
import datetime
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kube_harness import FAKE_NODE_ANNOTATION
from kubernetes import client
from kubernetes.client.exceptions import ApiException

T = TypeVar("T")

ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
POOL_LABEL = "respread.test/pool"
NOT_READY_TAINTS = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
GROUP, VERSION, PLURAL = "respread.io", "v1alpha1", "rebalancepolicies"  # RebalancePolicy
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
OPERATOR_USER = "system:serviceaccount:respread-system:respread"  # deploy/'s ServiceAccount


def wait_for(
    predicate: Callable[[], T | None],
    timeout: float = 60.0,
    message: str = "condition",
    interval: float = 0.25,
) -> T:
    """Poll `predicate` until it returns something truthy, and return that.

    Exceptions from the predicate count as "not yet" (the last one is reported on timeout).
    """
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = predicate()
            if value:
                return value
            last = value
        except Exception as exc:
            last = exc
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:.0f}s waiting for {message}; last: {last!r}"
            )
        time.sleep(interval)


def not_found(exc: ApiException) -> bool:
    return exc.status == 404


# --------------------------------------------------------------------------- fake nodes


def node_is_ready(node: client.V1Node) -> bool:
    conditions = (node.status.conditions if node.status else None) or []
    ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
    taints = {t.key for t in (node.spec.taints or [])} if node.spec else set()
    return ready and not (taints & NOT_READY_TAINTS)


class FakeNodes:
    """Creates kwok-managed fake nodes for one test and deletes them afterwards.

    Every node carries `respread.test/pool=<pool>`; use `node_selector` in workloads so the
    scheduler only considers this test's nodes. With the e2e components running, `create` waits
    until kwok has made the node Ready (no not-ready taint).
    """

    def __init__(self, core: client.CoreV1Api, pool: str, kwok_running: Callable[[], bool]) -> None:
        self.core = core
        self.pool = pool
        self._kwok_running = kwok_running
        self.created: list[str] = []

    @property
    def node_selector(self) -> dict[str, str]:
        return {POOL_LABEL: self.pool}

    def create(
        self,
        name: str,
        zone: str,
        *,
        cpu: str = "4",
        memory: str = "16Gi",
        pods: str = "110",
        labels: Mapping[str, str] | None = None,
        taints: Iterable[client.V1Taint] = (),
        wait_ready: bool | None = None,
    ) -> client.V1Node:
        resources = {"cpu": cpu, "memory": memory, "pods": pods}
        key, value = FAKE_NODE_ANNOTATION
        body = client.V1Node(
            metadata=client.V1ObjectMeta(
                name=name,
                annotations={key: value},
                labels={
                    ZONE_LABEL: zone,
                    HOSTNAME_LABEL: name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "type": "kwok",
                    POOL_LABEL: self.pool,
                    **(labels or {}),
                },
            ),
            spec=client.V1NodeSpec(taints=list(taints) or None),
            status=client.V1NodeStatus(capacity=resources, allocatable=dict(resources)),
        )
        node: client.V1Node = self.core.create_node(body)
        self.created.append(name)
        if wait_ready if wait_ready is not None else self._kwok_running():
            node = self.wait_ready(name)
        return node

    def create_zones(self, layout: Mapping[str, int], **kwargs: Any) -> list[client.V1Node]:
        """`{"zone-a": 2, ...}` -> nodes `<pool>-zone-a-0`, `<pool>-zone-a-1`, ..."""
        return [
            self.create(f"{self.pool}-{zone}-{i}", zone, **kwargs)
            for zone, count in layout.items()
            for i in range(count)
        ]

    def wait_ready(self, name: str, timeout: float = 60.0) -> client.V1Node:
        def ready() -> client.V1Node | None:
            node: client.V1Node = self.core.read_node(name)
            return node if node_is_ready(node) else None

        return wait_for(ready, timeout, f"node {name} to become Ready")

    def cordon(self, name: str, unschedulable: bool = True) -> None:
        self.core.patch_node(name, {"spec": {"unschedulable": unschedulable}})

    def uncordon(self, name: str) -> None:
        self.cordon(name, unschedulable=False)

    def delete(self, name: str, wait: bool = True, timeout: float = 60.0) -> None:
        try:
            self.core.delete_node(name)
        except ApiException as exc:
            if not not_found(exc):
                raise
        if wait:
            wait_for(lambda: self._gone(name), timeout, f"node {name} to disappear")

    def _gone(self, name: str) -> bool:
        try:
            self.core.read_node(name)
        except ApiException as exc:
            if not_found(exc):
                return True
            raise
        return False

    def cleanup(self) -> None:
        for name in self.created:
            self.delete(name, wait=False)
        for name in self.created:
            wait_for(lambda n=name: self._gone(n), 60, f"node {name} to disappear")  # type: ignore[misc]
        self.created.clear()


# --------------------------------------------------------------------------- workloads


def spread_deployment(
    name: str,
    replicas: int,
    *,
    node_selector: Mapping[str, str],
    max_skew: int = 1,
    topology_key: str = ZONE_LABEL,
    when_unsatisfiable: str = "DoNotSchedule",
    cpu: str = "100m",
    spread: bool = True,
) -> dict[str, Any]:
    """A Deployment of `app=<name>` pods with a topology spread constraint (unless spread=False)."""
    labels = {"app": name}
    pod_spec: dict[str, Any] = {
        "nodeSelector": dict(node_selector),
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "app",
                "image": "registry.invalid/respread/fake:1",  # never pulled: kwok fakes it
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
            }
        ],
    }
    if spread:
        pod_spec["topologySpreadConstraints"] = [
            {
                "maxSkew": max_skew,
                "topologyKey": topology_key,
                "whenUnsatisfiable": when_unsatisfiable,
                "labelSelector": {"matchLabels": labels},
            }
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def pod_is_ready(pod: client.V1Pod) -> bool:
    if pod.metadata.deletion_timestamp is not None or pod.status is None:
        return False
    conditions = pod.status.conditions or []
    return pod.status.phase == "Running" and any(
        c.type == "Ready" and c.status == "True" for c in conditions
    )


def list_pods(core: client.CoreV1Api, namespace: str, selector: str) -> list[client.V1Pod]:
    pods: list[client.V1Pod] = core.list_namespaced_pod(namespace, label_selector=selector).items
    return pods


def wait_pods_ready(
    core: client.CoreV1Api, namespace: str, selector: str, count: int, timeout: float = 90.0
) -> list[client.V1Pod]:
    """Exactly `count` pods match, none terminating, all Running and Ready."""

    def ready() -> list[client.V1Pod] | None:
        pods = list_pods(core, namespace, selector)
        ok = len(pods) == count and all(pod_is_ready(p) for p in pods)
        return pods if ok else None

    return wait_for(ready, timeout, f"{count} ready pods matching {selector} in {namespace}")


def zone_of_nodes(core: client.CoreV1Api, selector: Mapping[str, str]) -> dict[str, str]:
    label_selector = ",".join(f"{k}={v}" for k, v in selector.items())
    nodes = core.list_node(label_selector=label_selector).items
    return {n.metadata.name: n.metadata.labels[ZONE_LABEL] for n in nodes}


def pods_per_zone(pods: Iterable[client.V1Pod], node_zones: Mapping[str, str]) -> Counter[str]:
    """Scheduled pods per zone, with every zone of `node_zones` present (possibly 0)."""
    counts: Counter[str] = Counter({zone: 0 for zone in node_zones.values()})
    for pod in pods:
        if pod.spec.node_name:
            counts[node_zones[pod.spec.node_name]] += 1
    return counts


def skew(counts: Mapping[str, int]) -> int:
    """The topology spread skew: max minus min over all eligible domains."""
    return max(counts.values()) - min(counts.values())


# ---- RebalancePolicy status -------------------------------------------------------------------

POLICY_GROUP, POLICY_VERSION, POLICY_PLURAL = "respread.io", "v1alpha1", "rebalancepolicies"


def status_of(custom: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    """A RebalancePolicy's status ({} before its first scan)."""
    obj: dict[str, Any] = custom.get_cluster_custom_object(
        POLICY_GROUP, POLICY_VERSION, POLICY_PLURAL, name
    )
    return obj.get("status") or {}


def parse_time(text: str) -> float:
    return datetime.datetime.fromisoformat(text).timestamp()


def scanned_after(custom: client.CustomObjectsApi, name: str, t: float) -> dict[str, Any] | None:
    """The status, once a scan that started after wall-clock time `t` has written it."""
    st = status_of(custom, name)
    last = st.get("lastScanTime")
    return st if last and parse_time(last) > t else None  # whole seconds: strictly later


def evictions(audit: Any, since: int, namespace: str | None = None) -> list[dict[str, Any]]:
    """The evictions the API server answered since the audit log's mark `since` (an
    `AuditLog`), in `namespace` or in all."""
    return [
        e
        for e in audit.events(since)
        if e.get("stage") == "ResponseComplete"
        and (e.get("objectRef") or {}).get("subresource") == "eviction"
        and (namespace is None or (e.get("objectRef") or {}).get("namespace") == namespace)
    ]


def create_namespace(core: client.CoreV1Api, name: str) -> None:
    """A namespace with its `default` ServiceAccount: the ServiceAccount admission plugin refuses
    pods until it exists; the controller-manager creates it too, when it runs (either may win)."""
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        core.create_namespaced_service_account(
            name, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="default"))
        )
    except ApiException as exc:
        if exc.status != 409:
            raise


def delete_policy(custom: client.CustomObjectsApi, name: str) -> None:
    """Delete a RebalancePolicy; one already gone is fine."""
    try:
        custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)
    except ApiException as err:
        if err.status != 404:
            raise


# ---- credentials ------------------------------------------------------------------------------


def token_kubeconfig(
    server: str,
    ca_file: Path,
    api: client.ApiClient,
    namespace: str,
    account: str,
    path: Path,
    hours: int = 1,
) -> Path:
    """A kubeconfig for the service account namespace/account with a bound token from the
    TokenRequest API: whoever uses it has that account's RBAC and nothing more."""
    token = (
        client.CoreV1Api(api)
        .create_namespaced_service_account_token(
            account,
            namespace,
            client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=hours * 3600)
            ),
        )
        .status.token
    )
    user = f"system:serviceaccount:{namespace}:{account}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "respread-test",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_file.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "respread-test", "user": user}}],
        "current-context": user,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
