"""The operator's view of the cluster: slim records kept current by one watch per kind.

kopf delivers every object of each watched kind (first as a listing, then as changes); each
event replaces or removes one record. A scan takes a consistent ClusterState from here.
Nothing is written to the watched objects: no finalizers, no annotations.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from respread.model import (
    ClusterState,
    DisruptionBudget,
    Namespace,
    Node,
    Pod,
    Service,
    Workload,
)
from respread.snapshot import FieldError, ObjectParser, Record

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Watched:
    group: str
    version: str
    plural: str
    kind: str


WATCHED = (
    Watched("", "v1", "pods", "Pod"),
    Watched("", "v1", "nodes", "Node"),
    Watched("", "v1", "namespaces", "Namespace"),
    Watched("", "v1", "services", "Service"),
    Watched("", "v1", "replicationcontrollers", "ReplicationController"),
    Watched("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget"),
    Watched("apps", "v1", "deployments", "Deployment"),
    Watched("apps", "v1", "replicasets", "ReplicaSet"),
    Watched("apps", "v1", "statefulsets", "StatefulSet"),
    Watched("apps", "v1", "daemonsets", "DaemonSet"),
    Watched("batch", "v1", "jobs", "Job"),
)


class ClusterCache:
    def __init__(self, parser: ObjectParser | None = None) -> None:
        self._parser = parser or ObjectParser()
        self._records: dict[str, dict[tuple[str, str], Record]] = {w.kind: {} for w in WATCHED}
        self.last_event = 0.0
        self.malformed = 0

    def apply(self, kind: str, event_type: str | None, body: Mapping[str, Any]) -> None:
        """One watch event: None/ADDED/MODIFIED replace the record, DELETED removes it."""
        meta = body.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        self.last_event = time.monotonic()
        store = self._records[kind]
        if event_type == "DELETED":
            store.pop(key, None)
            return
        try:
            record = self._parser.parse(body, kind)
        except FieldError as err:
            self.malformed += 1
            store.pop(key, None)
            log.warning("left out %s %s/%s: field %s: %s", kind, *key, err.path, err.message)
            return
        if record is not None:
            store[key] = record

    def count(self, kind: str) -> int:
        return len(self._records[kind])

    def snapshot(self) -> ClusterState:
        r = self._records

        def values(kind: str) -> tuple[Any, ...]:
            return tuple(r[kind].values())

        workloads: tuple[Workload, ...] = tuple(
            w
            for kind in (
                "Deployment",
                "ReplicaSet",
                "StatefulSet",
                "DaemonSet",
                "Job",
                "ReplicationController",
            )
            for w in r[kind].values()
            if isinstance(w, Workload)
        )
        nodes: tuple[Node, ...] = values("Node")
        pods: tuple[Pod, ...] = values("Pod")
        budgets: tuple[DisruptionBudget, ...] = values("PodDisruptionBudget")
        services: tuple[Service, ...] = values("Service")
        namespaces: tuple[Namespace, ...] = values("Namespace")
        return ClusterState(
            nodes=nodes,
            pods=pods,
            budgets=budgets,
            workloads=workloads,
            services=services,
            namespaces=namespaces,
            taken_at=time.time(),
        )
