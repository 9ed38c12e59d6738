"""One test's corner of the real cluster (the `scene` fixture of conftest.py): its namespace and
fake nodes with every controller running, the API clients and the audit log, and the steps the
tests take there again and again."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from kube_harness import AuditLog
from kube_helpers import (
    GROUP,
    PLURAL,
    VERSION,
    FakeNodes,
    evictions,
    list_pods,
    policy,
    replicaset_controller_current,
    spread_deployment,
    status_of,
    wait_pods_ready,
    zone_of_nodes,
)
from kubernetes import client
from tests.support.builders import budget, sel
from tests.support.constants import DELETION_COST
from tests.support.manifests import manifest


@dataclass
class Scene:
    namespace: str
    nodes: FakeNodes
    api: client.ApiClient
    core: client.CoreV1Api
    apps: client.AppsV1Api
    policy: client.PolicyV1Api
    custom: client.CustomObjectsApi
    audit: AuditLog

    def zones(self, layout: Mapping[str, int], **node: Any) -> dict[str, str]:
        """Fake nodes laid out over zones (``{"zone-a": 2, ...}``); every node's zone."""
        self.nodes.create_zones(layout, **node)
        return zone_of_nodes(self.core, self.nodes.node_selector)

    def deploy(self, name: str, replicas: int, **spread: Any) -> None:
        """``spread_deployment(name, replicas, **spread)`` on this test's nodes."""
        body = spread_deployment(name, replicas, node_selector=self.nodes.node_selector, **spread)
        self.apps.create_namespaced_deployment(self.namespace, body)

    def budget(
        self, app: str, *, max_unavailable: int | None = None, min_available: int | None = None
    ) -> None:
        """A PodDisruptionBudget ``<app>`` over the pods ``app=<app>``."""
        spec = {"maxUnavailable": max_unavailable, "minAvailable": min_available}
        record = budget(app, sel(app=app), namespace=self.namespace)
        body = manifest(record, spec={k: v for k, v in spec.items() if v is not None})
        self.policy.create_namespaced_pod_disruption_budget(self.namespace, body)

    def ready(self, app: str, count: int, timeout: float = 90.0) -> list[client.V1Pod]:
        """Exactly ``count`` pods ``app=<app>``, all Running and Ready (waited for)."""
        return wait_pods_ready(self.core, self.namespace, f"app={app}", count, timeout)

    def pods(self, app: str) -> list[client.V1Pod]:
        return list_pods(self.core, self.namespace, f"app={app}")

    def cost(self, pod: str, cost: str, field_manager: str | None = None) -> client.V1Pod:
        """Set a pod's pod-deletion-cost annotation (as ``field_manager``, or the client's);
        the pod as patched."""
        patch = {"metadata": {"annotations": {DELETION_COST: cost}}}
        manager = {"field_manager": field_manager} if field_manager else {}
        patched: client.V1Pod = self.core.patch_namespaced_pod(
            pod, self.namespace, patch, **manager
        )
        return patched

    def scale_in(
        self,
        app: str,
        replicas: int,
        first: Callable[[client.V1Pod], bool],
        timeout: float = 90.0,
    ) -> list[client.V1Pod]:
        """Scale ``app`` in to ``replicas`` with the pods ``first`` picks costed to go first
        (pod-deletion-cost -100, the others 100); the survivors, once Ready."""
        for pod in self.pods(app):
            self.cost(pod.metadata.name, "-100" if first(pod) else "100")
        self.costs_seen()
        self.scale(app, replicas)
        return self.ready(app, replicas, timeout)

    def costs_seen(self) -> None:
        """Wait until the ReplicaSet controller has seen the pod-deletion-costs written so far
        (before a scale-in that they are to order)."""
        replicaset_controller_current(self.core, self.apps, self.namespace)

    def scale(self, app: str, replicas: int) -> None:
        """Scale the Deployment ``app``, as an autoscaler or a person would."""
        patch = {"spec": {"replicas": replicas}}
        self.apps.patch_namespaced_deployment_scale(app, self.namespace, patch)

    def rebalancing(self, name: str, **spec: Any) -> AbstractContextManager[str]:
        """A RebalancePolicy over this namespace (``kube_helpers.rebalance_policy``) for the
        block, deleted after it."""
        return policy(self.custom, name, self.namespace, **spec)

    def patch_policy(self, name: str, **spec: Any) -> None:
        """Change a RebalancePolicy's spec (a merge patch: ``mode="Enforce"``)."""
        self.custom.patch_cluster_custom_object(GROUP, VERSION, PLURAL, name, {"spec": spec})

    def status(self, name: str) -> dict[str, Any]:
        return status_of(self.custom, name)

    def evictions(self, since: int) -> list[dict[str, Any]]:
        """The evictions the API server answered in this namespace since the audit mark."""
        return evictions(self.audit, since, self.namespace)
