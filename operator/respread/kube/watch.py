"""List and watch requests for one kind, as plain JSON: the I/O half of the operator's cache.

`list_pages` yields a listing page by page (so that the caller builds its state while the
listing arrives, never holding more than one page of raw objects); `watch_events` streams the
changes after a resourceVersion, one decoded event at a time. Both bypass the client's model
classes: the raw dicts are parsed into slim records at once and dropped.

A watch whose resourceVersion is too old ends with `GoneError` (HTTP 410, either as the
response or as an ERROR event): the caller must list again. A watch that stays silent longer
than its read timeout ends with `SilentError`: the connection may have stalled without being
closed (a dropped route, a half-open NAT entry), and the caller should watch again from the
last version it saw.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ReadTimeoutError

from respread.kube.client import KubeError

PAGE = 500
CHUNK = 64 * 1024


class GoneError(KubeError):
    """The resourceVersion a watch asked for has expired (410 Gone): list again."""


class SilentError(KubeError):
    """No byte of a watch arrived within its read timeout: watch again from the last version."""


@dataclass(frozen=True, slots=True)
class Page:
    items: list[dict[str, Any]]
    resource_version: str  # of the whole listing (the same on every page)
    more: str | None  # the continue token, None on the last page


def _request(
    api: client.ApiClient,
    path: str,
    query: list[tuple[str, Any]],
    timeout: float | tuple[float, float] | None,
) -> Any:
    method, url, headers, _, _ = api.param_serialize(
        "GET",
        path,
        query_params=query,
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, header_params=headers, _request_timeout=timeout)
    if response.status == 410:
        response.read()
        raise GoneError(f"{path}: 410 Gone")
    if not 200 <= response.status < 300:
        response.read()
        raise ApiException(http_resp=response)
    return response


def list_pages(
    api: client.ApiClient, path: str, page: int = PAGE, timeout: float = 120.0
) -> Iterator[Page]:
    """A consistent listing of `path`, `page` objects at a time."""
    token: str | None = None
    while True:
        query: list[tuple[str, Any]] = [("limit", page)]
        if token:
            query.append(("continue", token))
        try:
            response = _request(api, path, query, timeout)
        except GoneError:
            # The continue token expired (a page fetched too slowly): the listing starts over.
            raise GoneError(f"{path}: the listing's continue token expired") from None
        body = json.loads(response.read() or b"null") or {}
        meta = body.get("metadata") or {}
        token = meta.get("continue") or None
        yield Page(list(body.get("items") or ()), str(meta.get("resourceVersion") or ""), token)
        if token is None:
            return


def watch_events(
    api: client.ApiClient,
    path: str,
    resource_version: str,
    *,
    server_timeout: int,
    read_timeout: float,
) -> Iterator[dict[str, Any]]:
    """The watch events of `path` after `resource_version`, bookmarks included, until the server
    ends the stream (after `server_timeout` seconds). A silent connection is given up after
    `read_timeout` seconds without a byte.

    The request is made at once (a refusal raises here); the events are read as iterated."""
    query: list[tuple[str, Any]] = [
        ("watch", "true"),
        ("resourceVersion", resource_version),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", server_timeout),
    ]
    response = _request(api, path, query, (10.0, read_timeout))
    return _events(path, response.response)


def _events(path: str, raw: Any) -> Iterator[dict[str, Any]]:
    try:
        pending = b""
        for chunk in _chunks(path, raw):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    if status.get("code") == 410:
                        raise GoneError(f"{path}: {status.get('message') or '410 Gone'}")
                    raise KubeError(
                        f"the watch of {path} failed: {status.get('code')} "
                        f"{str(status.get('message'))[:200]}"
                    )
                yield event
    finally:
        raw.close()  # a stream left before its end must not go back to the pool half-read
        raw.release_conn()


def _chunks(path: str, raw: Any) -> Iterator[bytes]:
    try:
        yield from raw.stream(CHUNK, decode_content=True)
    except ReadTimeoutError as err:
        raise SilentError(f"the watch of {path} sent nothing for too long") from err
