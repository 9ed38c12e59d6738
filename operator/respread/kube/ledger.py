"""Reading and writing the eviction ledger, a ConfigMap in the operator's namespace
(remedies/evict/ledger.py says what it holds and means).

Reads are plain GETs (a quorum read: the record as it is now, whoever wrote it last). Every write
is a JSON merge patch of some keys carrying the resourceVersion that was read, so a writer that
read an older version is refused (409) and must read again: two writers never both count on
the same free slot. A ledger that does not exist yet is created (409 if someone else just did).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.core.annotations import FIELD_MANAGER
from respread.kube.client import MERGE_PATCH, KubeError


@dataclass(frozen=True, slots=True)
class LedgerObject:
    data: dict[str, str]
    resource_version: str | None  # None: there is no ledger yet


def _fail(action: str, namespace: str, name: str, err: Exception) -> KubeError:
    if isinstance(err, ApiException):
        return KubeError(
            f"{action} ConfigMap {namespace}/{name} failed: HTTP {err.status} {err.reason}"
        )
    return KubeError(f"{action} ConfigMap {namespace}/{name}: cannot reach the API server: {err}")


def read_ledger(api: client.ApiClient, namespace: str, name: str) -> LedgerObject:
    try:
        response: Any = client.CoreV1Api(api).read_namespaced_config_map(
            name, namespace, _preload_content=False
        )
    except ApiException as err:
        if err.status == 404:
            return LedgerObject({}, None)
        raise _fail("reading", namespace, name, err) from None
    except (urllib3.exceptions.HTTPError, OSError) as err:
        raise _fail("reading", namespace, name, err) from None
    body = json.loads(response.data or b"{}")
    raw = body.get("data") if isinstance(body, dict) else None
    data = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    version = (body.get("metadata") or {}).get("resourceVersion")
    return LedgerObject(data, str(version) if version is not None else "")


def write_ledger(
    api: client.ApiClient,
    namespace: str,
    name: str,
    changes: dict[str, str | None],
    *,
    resource_version: str | None,
) -> bool:
    """Set (or, with None, remove) these keys if the ledger is still at `resource_version`
    (None: create it). False when another writer changed or created it first (409)."""
    core = client.CoreV1Api(api)
    try:
        if resource_version is None:
            body: Any = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {"app.kubernetes.io/name": "respread"},
                },
                "data": {k: v for k, v in changes.items() if v is not None},
            }
            response: Any = core.create_namespaced_config_map(
                namespace, body, field_manager=FIELD_MANAGER, _preload_content=False
            )
        else:
            patch = {"metadata": {"resourceVersion": resource_version}, "data": changes}
            response = core.patch_namespaced_config_map(name, namespace, patch, **MERGE_PATCH)
        response.read()
    except ApiException as err:
        if err.status == 409:
            return False
        raise _fail("writing", namespace, name, err) from None
    except (urllib3.exceptions.HTTPError, OSError) as err:
        raise _fail("writing", namespace, name, err) from None
    return True
