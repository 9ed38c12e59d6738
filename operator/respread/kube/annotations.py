"""Writing pod-deletion-cost annotations (deletion_cost.py decides which, and to what).

Each write reads the pod first and checks, against what the scan saw: the same pod (uid), the
same cost, and (unless the policy takes over) no other field manager owning the annotation now.
It then sends a JSON merge patch of that one annotation with respread's field manager and the
resourceVersion it read as a precondition, so a change made in between is never overwritten
(409: skipped, the next scan sees it). With a policy named, the same patch records the policy
and the value written (cost_release.py), and the pod's policy annotation must still be the one
the scan saw (a pod another policy took in between is an overlap: cost_owner.py);
`release_cost` takes such a cost back under the same guards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.core.annotations import (
    COST_POLICY,
    COST_WRITTEN,
    DELETION_COST,
    FIELD_MANAGER,
    ReleaseAction,
)
from respread.core.limits import few_named
from respread.kube.client import MERGE_PATCH
from respread.scheduling.controller import parse_cost


class CostResult(StrEnum):
    WRITTEN = "Written"
    REMOVED = "Removed"  # the cost and respread's companion annotations
    HANDED_OVER = "HandedOver"  # the cost kept under another policy
    UNTAGGED = "Untagged"  # another manager's cost now: only respread's companions removed
    SKIPPED = "Skipped"  # the pod changed since the scan, or another manager owns the cost
    OVERLAP = "Overlap"  # another RebalancePolicy took the pod's cost since the scan
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


@dataclass(frozen=True, slots=True)
class _Read:
    """The pod as read just before a patch, once the scan's pod is known to be it."""

    resource_version: str | None
    annotations: dict[str, str]
    owners: set[str]  # field managers of the cost annotation
    terminating: bool


def _read(
    core: client.CoreV1Api, namespace: str, name: str, uid: str | None
) -> _Read | tuple[CostResult, str]:
    """Read the pod and check it is the pod the scan saw (uid); else the result, and why."""
    meta = core.read_namespaced_pod(name, namespace).metadata
    if meta is None:
        return CostResult.FAILED, "the API server returned a pod without metadata"
    if uid is not None and meta.uid != uid:
        return CostResult.SKIPPED, "the pod was replaced since the scan"
    return _Read(
        meta.resource_version,
        dict(meta.annotations or {}),
        _owners(meta.managed_fields),
        meta.deletion_timestamp is not None,
    )


def _guarded(namespace: str, name: str, attempt: Callable[[], tuple[CostResult, str]]) -> CostWrite:
    """One read-check-patch attempt, with the API server's refusals and transport errors as
    results."""
    try:
        result, reason = attempt()
    except ApiException as err:
        result, reason = _refused(err)
    except (urllib3.exceptions.HTTPError, OSError) as err:
        result, reason = CostResult.FAILED, f"{type(err).__name__}: {err}"
    return CostWrite(namespace, name, result, reason)


def write_cost(
    api: client.ApiClient,
    namespace: str,
    name: str,
    *,
    uid: str | None,
    expected: int | None,
    cost: int,
    take_over: bool,
    policy: str | None = None,
    seen_policy: str | None = None,
) -> CostWrite:
    """Set the pod's pod-deletion-cost to ``cost`` if it still is as the scan saw it: the same
    cost, no other owner (unless ``take_over``), and its policy annotation still the one the
    scan saw (``seen_policy``) or this policy's: a pod another RebalancePolicy took in between
    is reported as an overlap, never overwritten."""
    core = client.CoreV1Api(api)

    def attempt() -> tuple[CostResult, str]:
        read = _read(core, namespace, name, uid)
        if not isinstance(read, _Read):
            return read
        if read.terminating:
            return CostResult.SKIPPED, "the pod is terminating"
        raw = read.annotations.get(DELETION_COST)
        if parse_cost(raw) != expected:
            return CostResult.SKIPPED, f"its cost changed since the scan (now {raw!r})"
        foreign = sorted(read.owners - {FIELD_MANAGER})
        if foreign and raw is not None and not take_over:
            return CostResult.SKIPPED, f"its cost is owned by {few_named(foreign)}"
        named = read.annotations.get(COST_POLICY)
        if policy is not None and named is not None and named not in (seen_policy, policy):
            return CostResult.OVERLAP, f"RebalancePolicy {named} took its cost since the scan"
        annotations: dict[str, str | None] = {DELETION_COST: str(cost)}
        if policy is not None:
            annotations.update({COST_POLICY: policy, COST_WRITTEN: str(cost)})
        _patch(core, namespace, name, read.resource_version, annotations)
        return CostResult.WRITTEN, f"pod-deletion-cost {cost}"

    return _guarded(namespace, name, attempt)


def _patch(
    core: client.CoreV1Api,
    namespace: str,
    name: str,
    resource_version: str | None,
    annotations: dict[str, str | None],
) -> None:
    """A JSON merge patch of these annotations (None: removed), as respread's field manager,
    refused by the API server (409) if the pod changed since `resource_version` was read."""
    body = {"metadata": {"resourceVersion": resource_version, "annotations": annotations}}
    drain(core.patch_namespaced_pod(name, namespace, body, **MERGE_PATCH))


def drain(response: Any) -> None:
    """Read an unparsed response to its end and give its connection back (a connection dropped
    unread makes the API server log the request as aborted)."""
    read = getattr(response, "read", None)
    if callable(read):
        read()
    release = getattr(response, "release_conn", None)
    if callable(release):
        release()


def _refused(err: ApiException) -> tuple[CostResult, str]:
    if err.status in (404, 409):
        return CostResult.SKIPPED, f"the pod changed or is gone (HTTP {err.status})"
    return CostResult.FAILED, f"HTTP {err.status} {err.reason}"


def release_cost(
    api: client.ApiClient,
    namespace: str,
    name: str,
    *,
    uid: str | None,
    policy: str,
    action: ReleaseAction,
    hand_to: str | None = None,
) -> CostWrite:
    """Take back a cost the policy wrote (cost_release.py decided how), if the pod is still as
    the scan saw it: the same pod (uid), its cost still naming the policy. Whether the cost is
    still respread's (sole owner, the value written) is checked again on the pod as read: if
    not, only respread's companion annotations are removed, never the cost."""
    core = client.CoreV1Api(api)

    def attempt() -> tuple[CostResult, str]:
        read = _read(core, namespace, name, uid)
        if not isinstance(read, _Read):
            return read
        current = read.annotations
        if current.get(COST_POLICY) != policy:
            return CostResult.SKIPPED, "its cost no longer names this policy"
        raw = current.get(DELETION_COST)
        ours = (
            read.owners == {FIELD_MANAGER}
            and parse_cost(raw) is not None
            and parse_cost(raw) == parse_cost(current.get(COST_WRITTEN))
        )
        annotations: dict[str, str | None]
        if ours and action is ReleaseAction.HAND_OVER and hand_to is not None:
            annotations = {COST_POLICY: hand_to}
            result, reason = CostResult.HANDED_OVER, f"kept under RebalancePolicy {hand_to}"
        elif not ours or action is ReleaseAction.UNTAG:
            annotations = {COST_POLICY: None, COST_WRITTEN: None}
            result, reason = CostResult.UNTAGGED, f"its cost ({raw!r}) is not respread's now"
        else:
            annotations = {DELETION_COST: None, COST_POLICY: None, COST_WRITTEN: None}
            result, reason = CostResult.REMOVED, f"pod-deletion-cost {raw} removed"
        _patch(core, namespace, name, read.resource_version, annotations)
        return result, reason

    return _guarded(namespace, name, attempt)
