"""Writing a surge move's steps on a Deployment (surge.py decides which, and to what).

One JSON merge patch per step, with respread's field manager and the resourceVersion the scan
saw as a precondition: spec.replicas and respread's operation annotation change together or not
at all, and a Deployment anyone else changed since the scan is never written (409: the next
round sees the change and stands down, or tries again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.core.annotations import SURGE_STATE
from respread.kube.client import MERGE_PATCH


class PatchResult(StrEnum):
    WRITTEN = "Written"
    CONFLICT = "Conflict"  # changed since the scan (409) or gone (404)
    FAILED = "Failed"


@dataclass(frozen=True, slots=True)
class DeploymentWrite:
    result: PatchResult
    reason: str
    resource_version: str | None = None  # the Deployment's, after the patch


@dataclass(frozen=True, slots=True)
class SurgeView:
    """A Deployment as read now: what a retried step must find unchanged."""

    resource_version: str | None
    replicas: int | None
    operation: str | None


def read_surge(api: client.ApiClient, namespace: str, name: str) -> SurgeView | None:
    """The Deployment's resourceVersion, spec.replicas and operation annotation (None: gone or
    unreadable)."""
    try:
        dep = client.AppsV1Api(api).read_namespaced_deployment(name, namespace)
    except ApiException:
        return None
    except (urllib3.exceptions.HTTPError, OSError):
        return None
    meta, spec = dep.metadata, dep.spec
    if meta is None or spec is None:
        return None
    return SurgeView(
        meta.resource_version, spec.replicas, (meta.annotations or {}).get(SURGE_STATE)
    )


def patch_surge(
    api: client.ApiClient,
    namespace: str,
    name: str,
    *,
    resource_version: str | None,
    operation: str | None,
    replicas: int | None = None,
) -> DeploymentWrite:
    """Set (or, with None, remove) the operation annotation, and spec.replicas when given, if
    the Deployment is still at ``resource_version``."""
    meta: dict[str, Any] = {"annotations": {SURGE_STATE: operation}}
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    body: dict[str, Any] = {"metadata": meta}
    if replicas is not None:
        body["spec"] = {"replicas": replicas}
    try:
        response: Any = client.AppsV1Api(api).patch_namespaced_deployment(
            name, namespace, body, **MERGE_PATCH
        )
        data = json.loads(response.data or b"{}")
    except ApiException as err:
        if err.status in (404, 409):
            return DeploymentWrite(
                PatchResult.CONFLICT, f"the Deployment changed or is gone (HTTP {err.status})"
            )
        return DeploymentWrite(PatchResult.FAILED, f"HTTP {err.status} {err.reason}")
    except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
        return DeploymentWrite(PatchResult.FAILED, f"{type(err).__name__}: {err}")
    version = (data.get("metadata") or {}).get("resourceVersion")
    what = f"spec.replicas {replicas}" if replicas is not None else "the operation annotation"
    return DeploymentWrite(PatchResult.WRITTEN, what, str(version) if version else None)
