"""One test's corner of the real cluster (the `scene` fixture of conftest.py): its namespace and
fake nodes with every controller running, the API clients and the audit log, and the steps the
tests take there again and again."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from kube_harness import AuditLog
from kube_helpers import (
    FakeNodes,
    evictions,
    list_pods,
    policy,
    spread_deployment,
    status_of,
    wait_pods_ready,
    zone_of_nodes,
)
from kubernetes import client
from tests.support.builders import budget, sel
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

    def budget(self, app: str, max_unavailable: int) -> None:
        """A PodDisruptionBudget ``<app>`` over the pods ``app=<app>``."""
        record = budget(app, sel(app=app), namespace=self.namespace)
        body = manifest(record, spec={"maxUnavailable": max_unavailable})
        self.policy.create_namespaced_pod_disruption_budget(self.namespace, body)

    def ready(self, app: str, count: int, timeout: float = 90.0) -> list[client.V1Pod]:
        """Exactly ``count`` pods ``app=<app>``, all Running and Ready (waited for)."""
        return wait_pods_ready(self.core, self.namespace, f"app={app}", count, timeout)

    def pods(self, app: str) -> list[client.V1Pod]:
        return list_pods(self.core, self.namespace, f"app={app}")

    def rebalancing(self, name: str, **spec: Any) -> AbstractContextManager[str]:
        """A RebalancePolicy over this namespace (``kube_helpers.rebalance_policy``) for the
        block, deleted after it."""
        return policy(self.custom, name, self.namespace, **spec)

    def status(self, name: str) -> dict[str, Any]:
        return status_of(self.custom, name)

    def evictions(self, since: int) -> list[dict[str, Any]]:
        """The evictions the API server answered in this namespace since the audit mark."""
        return evictions(self.audit, since, self.namespace)
