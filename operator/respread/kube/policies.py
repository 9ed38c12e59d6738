"""Reading RebalancePolicies from the API server (not from the watch).

`read_policy`: is one really gone? The orphan pass (runtime/surges.py) asks before rolling back
a surge whose policy its watch does not know: a restarted operator may simply not have listed
the policies yet. `list_policies`: every policy with its status, for `kubectl respread status`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.kube.client import GROUP, PLURAL, VERSION, KubeError


class Presence(StrEnum):
    PRESENT = "Present"
    GONE = "Gone"  # 404, or being deleted (metadata.deletionTimestamp)
    UNKNOWN = "Unknown"  # the read failed: decide nothing


@dataclass(frozen=True, slots=True)
class PolicyRead:
    presence: Presence
    body: dict[str, Any] | None = None
    reason: str = ""


def read_policy(api: client.ApiClient, name: str) -> PolicyRead:
    try:
        body: Any = client.CustomObjectsApi(api).get_cluster_custom_object(
            GROUP, VERSION, PLURAL, name
        )
    except ApiException as err:
        if err.status == 404:
            return PolicyRead(Presence.GONE, reason="not found")
        return PolicyRead(Presence.UNKNOWN, reason=f"HTTP {err.status} {err.reason}")
    except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
        return PolicyRead(Presence.UNKNOWN, reason=f"{type(err).__name__}: {err}")
    if not isinstance(body, dict):
        return PolicyRead(Presence.UNKNOWN, reason="not an object")
    if (body.get("metadata") or {}).get("deletionTimestamp"):
        return PolicyRead(Presence.GONE, body, "being deleted")
    return PolicyRead(Presence.PRESENT, body)


def list_policies(api: client.ApiClient) -> list[dict[str, Any]]:
    """Every RebalancePolicy, sorted by name; KubeError (one line) when the list fails."""
    server = api.configuration.host
    try:
        body: Any = client.CustomObjectsApi(api).list_cluster_custom_object(GROUP, VERSION, PLURAL)
    except ApiException as err:
        if err.status == 404:
            raise KubeError(
                f"{server} serves no {PLURAL}.{GROUP}: is respread's CRD installed?"
            ) from None
        raise KubeError(
            f"listing {PLURAL}.{GROUP} at {server} failed: HTTP {err.status} {err.reason}"
        ) from None
    except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
        raise KubeError(f"cannot reach the API server at {server}: {err}") from None
    items = body.get("items") if isinstance(body, dict) else None
    policies = [p for p in items or () if isinstance(p, dict)]
    return sorted(policies, key=lambda p: str((p.get("metadata") or {}).get("name", "")))
