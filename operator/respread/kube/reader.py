"""Reading the cluster once, as `kubectl get -o json` would, for `respread plan --kubeconfig`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.kube.client import GROUP, PLURAL, VERSION, KubeError, get_json, listing

# (kind, list path): everything the pipeline reads.
LISTS = (
    ("Node", "/api/v1/nodes"),
    ("Pod", "/api/v1/pods"),
    ("Namespace", "/api/v1/namespaces"),
    ("Service", "/api/v1/services"),
    ("ReplicationController", "/api/v1/replicationcontrollers"),
    ("PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets"),
    ("Deployment", "/apis/apps/v1/deployments"),
    ("ReplicaSet", "/apis/apps/v1/replicasets"),
    ("StatefulSet", "/apis/apps/v1/statefulsets"),
    ("DaemonSet", "/apis/apps/v1/daemonsets"),
    ("Job", "/apis/batch/v1/jobs"),
    ("HorizontalPodAutoscaler", "/apis/autoscaling/v2/horizontalpodautoscalers"),
    ("PersistentVolumeClaim", "/api/v1/persistentvolumeclaims"),
    ("PersistentVolume", "/api/v1/persistentvolumes"),
)
PAGE = 500
# Names only: the server answers a list with PartialObjectMetadataList (no specs, no statuses).
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"


def list_objects(
    api: client.ApiClient, kind: str, path: str, accept: str = "application/json"
) -> Iterator[dict[str, Any]]:
    token: str | None = None
    while True:
        query: list[tuple[str, Any]] = [("limit", PAGE)]
        if token:
            query.append(("continue", token))
        page = get_json(api, path, query, accept)
        for item in page.get("items") or ():  # a metadata-only empty list says null
            item.setdefault("kind", kind)  # list items carry no kind
            yield item
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


def read_cluster(
    api: client.ApiClient, progress: Callable[[str], None] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Every object of the kinds respread reads, as (source, object) pairs."""
    server = api.configuration.host
    out: list[tuple[str, dict[str, Any]]] = []
    for kind, path in LISTS:
        with listing(kind, server):
            items = list(list_objects(api, kind, path))
        if progress is not None:
            progress(f"read {len(items)} {kind} object(s)")
        out.extend((f"{server}{path}", item) for item in items)
    return out


POLICIES = f"/apis/{GROUP}/{VERSION}/{PLURAL}"


def read_policies(api: client.ApiClient) -> list[dict[str, Any]]:
    """Every RebalancePolicy, as the API server has it (metadata, spec and status)."""
    server = api.configuration.host
    with listing("RebalancePolicy", server):
        try:
            items = list(list_objects(api, "RebalancePolicy", POLICIES))
        except ApiException as err:
            if err.status != 404:
                raise
            raise KubeError(
                f"the RebalancePolicy CRD is not installed at {server} "
                f"(no {PLURAL}.{GROUP}/{VERSION}; kubectl apply -k crds/)"
            ) from None
    for item in items:
        item.setdefault("apiVersion", f"{GROUP}/{VERSION}")
    return items


def list_keys(
    api: client.ApiClient, paths: Mapping[str, str]
) -> dict[str, dict[tuple[str, str], str]]:
    """The (namespace, name) of every object of each kind ({kind: list path}) that exists now,
    with its resourceVersion: metadata-only lists, for telling which cached objects the API
    server no longer has, and whether the cache has caught up with the others."""
    server = api.configuration.host
    out: dict[str, dict[tuple[str, str], str]] = {}
    for kind, path in paths.items():
        found: dict[tuple[str, str], str] = {}
        with listing(kind, server):
            for item in list_objects(api, kind, path, METADATA_ONLY):
                meta = item.get("metadata") or {}
                key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
                found[key] = str(meta.get("resourceVersion") or "")
        out[kind] = found
    return out
