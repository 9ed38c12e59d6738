"""Reading and writing the leader election Lease (coordination.k8s.io/v1).

Writes carry the resourceVersion that was read (a create has none: it fails if the Lease
exists), so the API server lets only one of two racing candidates win; the loser's 409 Conflict
is an answer (`False`), not an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.core.annotations import FIELD_MANAGER
from respread.kube.client import KubeError


@dataclass(frozen=True, slots=True)
class LeaseObject:
    spec: dict[str, Any]
    resource_version: str


def _decode(response: Any) -> dict[str, Any]:
    data = json.loads(response.data or b"{}")
    return data if isinstance(data, dict) else {}


# A request's refusal (ApiException) or transport error: `_fail` words either as one KubeError.
_FAILURES = (ApiException, urllib3.exceptions.HTTPError, OSError)


def _fail(action: str, namespace: str, name: str, err: Exception) -> KubeError:
    if isinstance(err, ApiException):
        return KubeError(
            f"{action} Lease {namespace}/{name} failed: HTTP {err.status} {err.reason}"
        )
    return KubeError(f"{action} Lease {namespace}/{name}: cannot reach the API server: {err}")


def read_lease(
    api: client.ApiClient, namespace: str, name: str, timeout: float
) -> LeaseObject | None:
    """The Lease, or None if there is none."""
    coordination = client.CoordinationV1Api(api)
    try:
        response = coordination.read_namespaced_lease(
            name, namespace, _preload_content=False, _request_timeout=timeout
        )
    except _FAILURES as err:
        if isinstance(err, ApiException) and err.status == 404:
            return None
        raise _fail("reading", namespace, name, err) from None
    body = _decode(response)
    meta = body.get("metadata") or {}
    return LeaseObject(dict(body.get("spec") or {}), str(meta.get("resourceVersion") or ""))


def write_lease(
    api: client.ApiClient,
    namespace: str,
    name: str,
    spec: dict[str, Any],
    *,
    resource_version: str | None,
    timeout: float,
) -> bool:
    """Create the Lease (`resource_version` None) or replace the version that was read.
    False when another candidate got there first (409: it exists / it changed since)."""
    coordination = client.CoordinationV1Api(api)
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    body: Any = {  # a plain dict: the model classes would turn the times into datetimes
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": spec,
    }
    options: dict[str, Any] = {
        "field_manager": FIELD_MANAGER,
        "_preload_content": False,
        "_request_timeout": timeout,
    }
    try:
        if resource_version is None:
            coordination.create_namespaced_lease(namespace, body, **options)
        else:
            coordination.replace_namespaced_lease(name, namespace, body, **options)
    except _FAILURES as err:
        if isinstance(err, ApiException) and err.status == 409:
            return False
        raise _fail("writing", namespace, name, err) from None
    return True
