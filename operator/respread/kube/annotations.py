"""Writing pod-deletion-cost annotations (deletion_cost.py decides which, and to what).

Each write reads the pod first and checks, against what the scan saw: the same pod (uid), the
same cost, and (unless the policy takes over) no other field manager owning the annotation now.
It then sends a JSON merge patch of that one annotation with respread's field manager and the
resourceVersion it read as a precondition, so a change made in between is never overwritten
(409: skipped, the next scan sees it).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.deletion_cost import FIELD_MANAGER, parse_cost
from respread.snapshot import DELETION_COST

MERGE_PATCH = "application/merge-patch+json"


class CostResult(StrEnum):
    WRITTEN = "Written"
    SKIPPED = "Skipped"  # the pod changed since the scan, or another manager owns the cost
    FAILED = "Failed"


@dataclass(frozen=True, slots=True)
class CostWrite:
    namespace: str
    pod: str
    result: CostResult
    reason: str


def _owners(managed: list[Any] | None) -> set[str]:
    owners: set[str] = set()
    for entry in managed or ():
        fields = getattr(entry, "fields_v1", None) or {}
        annotations = (fields.get("f:metadata") or {}).get("f:annotations") or {}
        if f"f:{DELETION_COST}" in annotations:
            owners.add(getattr(entry, "manager", None) or "")
    return owners


def write_cost(
    api: client.ApiClient,
    namespace: str,
    name: str,
    *,
    uid: str | None,
    expected: int | None,
    cost: int,
    take_over: bool,
) -> CostWrite:
    """Set the pod's pod-deletion-cost to ``cost`` if it still is as the scan saw it."""
    core = client.CoreV1Api(api)

    def done(result: CostResult, reason: str) -> CostWrite:
        return CostWrite(namespace, name, result, reason)

    try:
        meta = core.read_namespaced_pod(name, namespace).metadata
        if meta is None:
            return done(CostResult.FAILED, "the API server returned a pod without metadata")
        if uid is not None and meta.uid != uid:
            return done(CostResult.SKIPPED, "the pod was replaced since the scan")
        if meta.deletion_timestamp is not None:
            return done(CostResult.SKIPPED, "the pod is terminating")
        raw = (meta.annotations or {}).get(DELETION_COST)
        if parse_cost(raw) != expected:
            return done(CostResult.SKIPPED, f"its cost changed since the scan (now {raw!r})")
        foreign = sorted(_owners(meta.managed_fields) - {FIELD_MANAGER})
        if foreign and raw is not None and not take_over:
            return done(CostResult.SKIPPED, f"its cost is owned by {', '.join(foreign)}")
        body = {
            "metadata": {
                "resourceVersion": meta.resource_version,
                "annotations": {DELETION_COST: str(cost)},
            }
        }
        core.patch_namespaced_pod(
            name,
            namespace,
            body,
            field_manager=FIELD_MANAGER,
            _content_type=MERGE_PATCH,
            _preload_content=False,
        )
    except ApiException as err:
        if err.status in (404, 409):
            return done(CostResult.SKIPPED, f"the pod changed or is gone (HTTP {err.status})")
        return done(CostResult.FAILED, f"HTTP {err.status} {err.reason}")
    except (urllib3.exceptions.HTTPError, OSError) as err:
        return done(CostResult.FAILED, f"{type(err).__name__}: {err}")
    return done(CostResult.WRITTEN, f"pod-deletion-cost {cost}")
