"""The list-then-watch loop that feeds the operator's cache, with the API server's answers
scripted: listing page by page, resuming a watch from the last version seen (bookmarks
included), listing again after 410 Gone, and backing off a failing watch while its kind is not
synced."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
from kubernetes import client

from respread.kube.watch import GoneError, Page, SilentError, watch_events
from respread.runtime import reflector as reflector_module
from respread.runtime.cache import WATCHED, CacheBehindError, ClusterCache
from respread.runtime.reflector import ListingStats, Reflector

API = cast(client.ApiClient, object())
POD = next(w for w in WATCHED if w.kind == "Pod")


def pod(name: str, rv: str, node: str = "n1") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "uid": name},
        "spec": {"nodeName": node, "containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }


def event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": obj}


class Script:
    """What the API server answers, in order: listings (lists of pages) and watches (lists of
    events, or an exception to raise). The reflector is stopped when the script runs out."""

    def __init__(self, stop: threading.Event, *steps: Any) -> None:
        self.stop = stop
        self.steps = list(steps)
        self.calls: list[tuple[str, str | None]] = []

    def _next(self, what: str) -> Any:
        if not self.steps:
            self.stop.set()
            return []
        kind, answer = self.steps.pop(0)
        assert kind == what, (kind, what)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def list_pages(self, api: object, path: str) -> Iterator[Page]:
        if self.steps:
            self.calls.append(("list", None))
        pages = self._next("list")
        for i, items in enumerate(pages):
            yield Page(items, "100", None if i == len(pages) - 1 else "more")

    def watch_events(self, api: object, path: str, version: str, **_: Any) -> Iterator[Any]:
        if self.steps:
            self.calls.append(("watch", version))
        return iter(self._next("watch"))


def run(monkeypatch: pytest.MonkeyPatch, cache: ClusterCache, *steps: Any) -> Script:
    stop = threading.Event()
    script = Script(stop, *steps)
    monkeypatch.setattr(reflector_module, "list_pages", script.list_pages)
    monkeypatch.setattr(reflector_module, "watch_events", script.watch_events)
    monkeypatch.setattr(reflector_module, "BACKOFF", (0.0,))
    listed: list[str] = []
    r = Reflector(API, cache, POD, stop=stop, stats=ListingStats(), on_first_listing=listed.append)
    r.run()
    assert listed == ["Pod"]  # the first listing is announced once, relistings are not
    return script


def names(cache: ClusterCache) -> dict[str, str | None]:
    return {p.name: p.node_name for p in cache.snapshot().pods}


def test_lists_page_by_page_then_watches_from_the_listing_and_the_last_version_seen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = ClusterCache()
    script = run(
        monkeypatch,
        cache,
        ("list", [[pod("a", "90"), pod("b", "91")], [pod("c", "92")]]),
        ("watch", [event("MODIFIED", pod("a", "101", "n2")), event("DELETED", pod("b", "102"))]),
        ("watch", [event("BOOKMARK", {"metadata": {"resourceVersion": "150"}})]),
        ("watch", [event("ADDED", pod("d", "151"))]),
    )
    assert script.calls == [("list", None), ("watch", "100"), ("watch", "102"), ("watch", "150")]
    assert names(cache) == {"a": "n2", "c": "n1", "d": "n1"}
    assert "Pod" in cache.synced and not cache.suspect


def test_410_gone_lists_again_and_the_listing_replaces_the_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = ClusterCache()
    script = run(
        monkeypatch,
        cache,
        ("list", [[pod("a", "90"), pod("b", "91")]]),
        ("watch", GoneError("too old resource version")),
        ("list", [[pod("b", "120", "n3"), pod("e", "121")]]),  # a was deleted meanwhile
        ("watch", []),
    )
    assert script.calls == [("list", None), ("watch", "100"), ("list", None), ("watch", "100")]
    assert names(cache) == {"b": "n3", "e": "n1"}
    assert not cache.suspect  # a relisting is exact: nothing to verify


def test_a_failing_watch_unsyncs_its_kind_and_is_retried_from_where_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = ClusterCache()
    seen: list[tuple[bool, str | None]] = []
    original = cache.set_synced

    def spy(kind: str, synced: bool, error: str | None = None) -> None:
        seen.append((synced, error))
        original(kind, synced, error)

    monkeypatch.setattr(cache, "set_synced", spy)
    script = run(
        monkeypatch,
        cache,
        ("list", [[pod("a", "90")]]),
        ("watch", ConnectionResetError("connection reset by peer")),
        ("watch", [event("MODIFIED", pod("a", "130", "n2"))]),
    )
    assert script.calls == [("list", None), ("watch", "100"), ("watch", "100")]
    assert seen[0][0] is False and "connection reset" in str(seen[0][1])  # refused: unsynced
    assert seen[1] == (True, None)  # the retried watch was accepted
    assert cache.suspect  # the next scan verifies the cache against the API server
    assert names(cache) == {"a": "n2"}


def test_a_kind_whose_watch_is_failing_fails_a_scan_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    cache = ClusterCache()
    for w in WATCHED:
        cache.end_listing(w.kind, set())
    cache.set_synced("Pod", False, error="ApiException: (403) Forbidden")
    with pytest.raises(CacheBehindError, match="403"):
        asyncio.run(cache.wait_ready(30))


def test_a_silent_watch_is_watched_again_from_its_last_version_without_counting_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def stalls_after_one_event() -> Iterator[dict[str, Any]]:
        yield event("MODIFIED", pod("a", "110", "n2"))
        raise SilentError("the watch of /api/v1/pods sent nothing for too long")

    cache = ClusterCache()
    script = run(
        monkeypatch,
        cache,
        ("list", [[pod("a", "90")]]),
        ("watch", stalls_after_one_event()),
        ("watch", [event("ADDED", pod("b", "111"))]),
    )
    assert script.calls == [("list", None), ("watch", "100"), ("watch", "110")]
    assert names(cache) == {"a": "n2", "b": "n1"}
    assert "Pod" in cache.synced and not cache.failing
    assert not cache.suspect  # resuming from our version replays what the stall held back


class _SilentServer:
    """An HTTP server whose watch answers with one event, then says nothing, connection open:
    a stalled route as the client sees it."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.release = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            conn.recv(65536)
            line = json.dumps(event("ADDED", pod("a", "7"))).encode() + b"\n"
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
                + f"{len(line):x}\r\n".encode()
                + line
                + b"\r\n"
            )
            self.release.wait(30)

    def close(self) -> None:
        self.release.set()
        self.listener.close()


def test_a_watch_that_stalls_without_closing_ends_with_silent_error_after_its_read_timeout() -> (
    None
):
    server = _SilentServer()
    try:
        config = client.Configuration(host=f"http://127.0.0.1:{server.port}")
        api = client.ApiClient(config)
        started = time.monotonic()
        events = watch_events(api, "/api/v1/pods", "5", server_timeout=300, read_timeout=0.5)
        first = next(events)
        assert first["object"]["metadata"]["name"] == "a"
        with pytest.raises(SilentError, match="/api/v1/pods"):
            next(events)
        assert time.monotonic() - started < 10
    finally:
        server.close()
