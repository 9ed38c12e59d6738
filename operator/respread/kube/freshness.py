"""What the API server has now, cheaply: for telling whether the watch cache has caught up.

`current_version` is a consistent read of a kind's collection (limit=1, metadata only, no
resourceVersion: served at the latest revision), whose resourceVersion says where the API
server is now; it also brings the API server's own watch cache of that kind up to date.

`probe` opens a short watch of a kind from the resourceVersion the operator's watch has reached:
the API server replays every change made since, then (the watch asks for bookmarks and ends
after PROBE_SECONDS) sends a bookmark about a second later carrying its current
resourceVersion. Reading until something at or past `target` arrives proves that nothing else
changed in between: what the probe saw before it is all the operator's watch still has to
deliver. A server that sends no bookmark (no watch cache) leaves the probe inconclusive.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.kube.client import KubeError, Timeouts, get_json
from respread.kube.reader import METADATA_ONLY

# kube-apiserver sends a watch's bookmark 2 s before the watch's deadline, at its next
# once-a-second bookmark tick: a 3 s watch gets one after 1 to 2 s (v1.34, measured).
PROBE_SECONDS = 3


def version_number(version: str) -> int | None:
    """A resourceVersion as the etcd revision it is, when it is one."""
    return int(version) if version.isdigit() else None


def current_version(api: client.ApiClient, path: str) -> str:
    """The resourceVersion of a consistent read of the collection at `path`."""
    try:
        body = get_json(api, path, [("limit", 1)], METADATA_ONLY) or {}
    except ApiException as err:
        raise KubeError(f"reading {path} failed: HTTP {err.status} {err.reason}") from None
    except (urllib3.exceptions.HTTPError, OSError) as err:
        raise KubeError(f"cannot reach the API server: {err}") from None
    return str((body.get("metadata") or {}).get("resourceVersion") or "")


@dataclass(frozen=True, slots=True)
class Probe:
    reached: bool  # something at or past the target arrived: the replay below is complete
    changed: int | None  # the highest resourceVersion of a change before the target, if any
    gone: bool = False  # the start version has expired (410): the operator's watch relists


def _events(raw: Any) -> Iterator[dict[str, Any]]:
    pending = b""
    for chunk in raw.stream(64 * 1024, decode_content=True):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield json.loads(line)


def _read(raw: Any, target: int) -> Probe:
    changed: int | None = None
    for event in _events(raw):
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            return Probe(False, changed, gone=obj.get("code") == 410)
        version = version_number(str((obj.get("metadata") or {}).get("resourceVersion") or ""))
        if version is None:
            continue
        if version >= target:
            return Probe(True, changed)
        if kind != "BOOKMARK":
            changed = version if changed is None else max(changed, version)
    return Probe(False, changed)


def probe(api: client.ApiClient, path: str, since: str, target: int, timeouts: Timeouts) -> Probe:
    """Watch `path` from `since` until something at or past `target` arrives (or the short
    watch ends): what changed in between. The server owes its bookmark within PROBE_SECONDS;
    a probe that takes the request timeout (`timeouts.read`) longer than that found the server
    not answering, and proves nothing: a KubeError, as for any request past its timeout (a
    plan made before such a stall is not acted on)."""
    started, read = time.monotonic(), timeouts.read
    method, url, headers, _, _ = api.param_serialize(
        "GET",
        path,
        query_params=[
            ("watch", "true"),
            ("resourceVersion", since),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", PROBE_SECONDS),
        ],
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    try:
        limit = (timeouts.connect, PROBE_SECONDS + read)
        response = api.call_api(method, url, header_params=headers, _request_timeout=limit)
        if response.status == 410:
            response.read()
            return Probe(False, None, gone=True)
        if not 200 <= response.status < 300:
            response.read()
            raise ApiException(http_resp=response)
        raw = response.response
        try:
            seen = _read(raw, target)
        finally:
            raw.close()  # a stream left before its end must not go back to the pool half-read
            raw.release_conn()
        took = time.monotonic() - started
        if took > PROBE_SECONDS + read:
            raise KubeError(f"watching {path}: no answer for {took:.1f}s (the API server stalled)")
        return seen
    except ApiException as err:
        raise KubeError(f"watching {path} failed: HTTP {err.status} {err.reason}") from None
    except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
        raise KubeError(f"watching {path}: {type(err).__name__}: {err}") from None
