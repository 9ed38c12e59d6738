"""Writing what respread found: the policy's status subresource and Events."""

from __future__ import annotations

import contextlib
import datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.kube.client import GROUP, MERGE_PATCH, PLURAL, VERSION, KubeError

EVENT_NAMESPACE = "default"  # Events about cluster-scoped policies live here
COMPONENT = "respread"


class PolicyGoneError(KubeError):
    """The RebalancePolicy no longer exists (its status could not be written: 404)."""


def patch_status(api: client.ApiClient, policy: str, status: dict[str, Any]) -> None:
    custom = client.CustomObjectsApi(api)
    try:
        custom.patch_cluster_custom_object_status(
            GROUP, VERSION, PLURAL, policy, {"status": status}
        )
    except ApiException as err:
        if err.status == 404:
            raise PolicyGoneError(f"RebalancePolicy {policy} no longer exists") from None
        raise KubeError(
            f"writing the status of RebalancePolicy {policy} failed: HTTP {err.status} {err.reason}"
        ) from None


def set_finalizer(api: client.ApiClient, policy: str, finalizer: str, *, present: bool) -> bool:
    """Add or remove one finalizer of a RebalancePolicy (read, then a merge patch of
    metadata.finalizers with the resourceVersion read as a precondition). True when the object
    now is as asked; False when it changed in between (409: the next scan tries again)."""
    custom = client.CustomObjectsApi(api)
    try:
        obj = custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, policy)
        meta = (obj.get("metadata") if isinstance(obj, dict) else None) or {}
        finalizers = list(meta.get("finalizers") or [])
        if (finalizer in finalizers) == present:
            return True
        wanted = [*finalizers, finalizer] if present else [f for f in finalizers if f != finalizer]
        body = {"metadata": {"finalizers": wanted, "resourceVersion": meta.get("resourceVersion")}}
        response = custom.patch_cluster_custom_object(
            GROUP, VERSION, PLURAL, policy, body, **MERGE_PATCH
        )
        read = getattr(response, "read", None)  # to its end: the connection is reused
        if callable(read):
            read()
    except ApiException as err:
        if err.status == 404:
            raise PolicyGoneError(f"RebalancePolicy {policy} no longer exists") from None
        if err.status == 409:
            return False
        raise KubeError(
            f"the finalizers of RebalancePolicy {policy}: HTTP {err.status} {err.reason}"
        ) from None
    return True


def post_event(
    api: client.ApiClient,
    *,
    kind: str,
    name: str,
    namespace: str | None,
    uid: str | None,
    reason: str,
    message: str,
    warning: bool = False,
    api_version: str = "v1",
) -> None:
    """A core/v1 Event about an object; failures to post are not fatal to a scan."""
    now = datetime.datetime.now(datetime.UTC)
    ns = namespace or EVENT_NAMESPACE
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name=f"{name}.", namespace=ns),
        involved_object=client.V1ObjectReference(
            kind=kind, name=name, namespace=namespace, uid=uid, api_version=api_version
        ),
        reason=reason,
        message=message[:1024],
        type="Warning" if warning else "Normal",
        first_timestamp=now,
        last_timestamp=now,
        count=1,
        source=client.V1EventSource(component=COMPONENT),
        reporting_component=COMPONENT,
        reporting_instance=COMPONENT,
    )
    with contextlib.suppress(ApiException):  # best effort: the status carries the same facts
        client.CoreV1Api(api).create_namespaced_event(ns, event)


def post_policy_event(
    api: client.ApiClient,
    policy: str,
    uid: str | None,
    reason: str,
    *,
    message: str,
    warning: bool = False,
) -> None:
    """An Event about a RebalancePolicy (cluster-scoped: the Event goes to EVENT_NAMESPACE)."""
    post_event(
        api,
        kind="RebalancePolicy",
        name=policy,
        namespace=None,
        uid=uid,
        api_version="respread.io/v1alpha1",
        reason=reason,
        warning=warning,
        message=message,
    )
