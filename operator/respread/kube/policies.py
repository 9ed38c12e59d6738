"""Reading one RebalancePolicy from the API server (not from the watch): is it really gone?

The orphan pass (runtime/surges.py) asks before rolling back a surge whose policy its watch does
not know: a restarted operator may simply not have listed the policies yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.kube.client import GROUP, PLURAL, VERSION


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
