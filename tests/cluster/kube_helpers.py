"""Helpers for cluster tests: waiting, fake (kwok) nodes, workloads and zone-skew arithmetic."""

from __future__ import annotations

import base64
import datetime
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kube_harness import FAKE_NODE_ANNOTATION
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tests.support.builders import constraint, deployment, sel
from tests.support.constants import DELETION_COST, HOST, ZONE
from tests.support.manifests import manifest

from respread.core.annotations import COST_POLICY, COST_WRITTEN
from respread.core.model import Resources, When
from respread.core.quantity import milli

T = TypeVar("T")

POOL_LABEL = "respread.test/pool"
NOT_READY_TAINTS = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
GROUP, VERSION, PLURAL = "respread.io", "v1alpha1", "rebalancepolicies"  # RebalancePolicy
OPERATOR_USER = "system:serviceaccount:respread-system:respread"  # deploy/'s ServiceAccount

TWO_PER_ZONE = {"zone-a": 2, "zone-b": 2, "zone-c": 2}  # fake nodes per zone
UNEQUAL_ZONES = {"zone-a": 3, "zone-b": 1, "zone-c": 1}  # as clouds have them
AT_ONCE = {"minPodAge": "0s", "cooldown": "1s"}  # a policy's eviction: no waiting
COSTS_ONLY = {"evict": False, "deletionCost": {"enabled": True}}  # a policy's remediation


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
                    ZONE: zone,
                    HOST: name,
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
    topology_key: str = ZONE,
    when_unsatisfiable: str = "DoNotSchedule",
    cpu: str = "100m",
    spread: bool = True,
) -> dict[str, Any]:
    """A Deployment of `app=<name>` pods with a topology spread constraint (unless spread=False),
    as tests/support/manifests writes it: its namespace is the request's."""
    spreads = constraint(
        topology_key, sel(app=name), when=When(when_unsatisfiable), max_skew=max_skew
    )
    record = deployment(
        name,
        replicas,
        constraints=(spreads,) if spread else (),
        node_selector=node_selector,
        requests=Resources(cpu=milli(cpu), memory=64 * 2**20),
    )
    body = manifest(record)
    body["metadata"]["labels"] = {"app": name}
    return body


BARRIER_LABEL = "respread.test/barrier"


def replicaset_controller_current(
    core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str, timeout: float = 60.0
) -> None:
    """Wait until kube-controller-manager's ReplicaSet controller has seen every pod write made
    so far, such as pod-deletion-costs just written before a scale-in: it picks the pods to
    remove from its own cache of pods, which may lag behind the API server (a loaded machine,
    a watch still digesting an earlier test's mass deletion), and then removes others.

    A bare pod matching a ReplicaSet of 0 replicas (``respread-barrier``, made once per
    namespace; its pods fit no node) is created, and the controller adopts it (then deletes it)
    once its pod watch has delivered it. That watch delivers in order: it has delivered every
    write before it too."""
    labels = {BARRIER_LABEL: "1"}
    spec = {
        "nodeSelector": {BARRIER_LABEL: "no-such-node"},
        "automountServiceAccountToken": False,
        "containers": [{"name": "barrier", "image": "registry.invalid/respread/barrier:1"}],
    }
    replicaset = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "respread-barrier", "labels": labels},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }
    try:
        apps.create_namespaced_replica_set(namespace, replicaset)
    except ApiException as exc:
        if exc.status != 409:
            raise
    body = {"metadata": {"generateName": "respread-barrier-", "labels": labels}, "spec": spec}
    name = core.create_namespaced_pod(namespace, body).metadata.name

    def adopted() -> bool:
        try:
            pod = core.read_namespaced_pod(name, namespace)
        except ApiException as exc:
            if not_found(exc):
                return True  # adopted and deleted already
            raise
        return bool(pod.metadata.owner_references)

    wait_for(adopted, timeout, f"the ReplicaSet controller to adopt the barrier pod {name}")


def zone_a_and_two_of_b(pods: Iterable[client.V1Pod], node_zones: Mapping[str, str]) -> set[str]:
    """Of 9 pods spread 3/3/3, the ones whose going leaves 0/1/3 (a skew of 3): zone-a's
    three and two of zone-b's (by name)."""
    by_zone: dict[str, list[str]] = {"zone-a": [], "zone-b": [], "zone-c": []}
    for pod in pods:
        by_zone[node_zones[pod.spec.node_name]].append(pod.metadata.name)
    return {*by_zone["zone-a"], *sorted(by_zone["zone-b"])[:2]}


def cost_owners(pod: client.V1Pod) -> set[str]:
    """The field managers owning a pod's pod-deletion-cost annotation (managedFields)."""
    return {
        m.manager
        for m in pod.metadata.managed_fields or []
        if f"f:{DELETION_COST}"
        in ((m.fields_v1 or {}).get("f:metadata") or {}).get("f:annotations", {})
    }


def costed_by(pods: list[client.V1Pod], policy: str, count: int) -> bool:
    """Exactly ``count`` pods, each carrying ``policy``'s name beside the cost it wrote."""
    notes = [p.metadata.annotations or {} for p in pods]
    return len(pods) == count and all(
        a.get(COST_POLICY) == policy and a.get(COST_WRITTEN) == a.get(DELETION_COST) for a in notes
    )


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
    return {n.metadata.name: n.metadata.labels[ZONE] for n in nodes}


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


# ---- leader election -------------------------------------------------------------------------

LEASE_NS, LEASE = "respread-system", "respread"  # deploy/'s Role allows this Lease only


def lease_holder(coordination: client.CoordinationV1Api) -> str:
    """The identity holding the operator's Lease ('' when none does or there is no Lease)."""
    try:
        lease = coordination.read_namespaced_lease(LEASE, LEASE_NS)
    except ApiException as err:
        if not_found(err):
            return ""
        raise
    return str(lease.spec.holder_identity or "")


def forget_lease(coordination: client.CoordinationV1Api) -> None:
    """Delete the Lease: one left by an earlier test would hold a dead identity for a whole
    lease duration."""
    try:
        coordination.delete_namespaced_lease(LEASE, LEASE_NS)
    except ApiException as err:
        if not not_found(err):
            raise


# ---- RebalancePolicy ----------------------------------------------------------------------------


def rebalance_policy(name: str, namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    """A RebalancePolicy scanning every 10 s, over ``namespace`` when given; ``spec`` adds to
    its spec or replaces those two."""
    base: dict[str, Any] = {"schedule": {"interval": "10s"}}
    if namespace is not None:
        base["selector"] = {"namespaces": {"include": [namespace]}}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "RebalancePolicy",
        "metadata": {"name": name},
        "spec": {**base, **spec},
    }


def create_policy(
    custom: client.CustomObjectsApi, name: str, namespace: str | None = None, **spec: Any
) -> None:
    custom.create_cluster_custom_object(
        GROUP, VERSION, PLURAL, rebalance_policy(name, namespace, **spec)
    )


@contextmanager
def policy(
    custom: client.CustomObjectsApi, name: str, namespace: str | None = None, **spec: Any
) -> Iterator[str]:
    """The policy ``rebalance_policy`` writes, for the block; deleted after (if still there)."""
    create_policy(custom, name, namespace, **spec)
    try:
        yield name
    finally:
        delete_policy(custom, name)


def status_of(custom: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    """A RebalancePolicy's status ({} before its first scan)."""
    obj: dict[str, Any] = custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
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


def status_writes(audit: Any, since: int, policy: str) -> list[dict[str, Any]]:
    """The writes of RebalancePolicy ``policy``'s status since the audit log's mark ``since``."""
    return [
        e
        for e in audit.events(since)
        if e.get("stage") == "ResponseComplete"
        and e.get("objectRef", {}).get("resource") == PLURAL
        and e.get("objectRef", {}).get("subresource") == "status"
        and e.get("objectRef", {}).get("name") == policy
        and e.get("verb") in ("patch", "update")
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
