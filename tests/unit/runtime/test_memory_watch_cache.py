"""The operator's memory of the cluster (runtime.cache) after a disconnection: a scan never
plans from a cache that missed events. A suspected disconnection makes the next scan compare the
cache with metadata lists (resourceVersions) and wait for the watches to catch up, or fail."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kubernetes import client

from respread.inputs.policy import parse_policy
from respread.runtime import cache as cache_module
from respread.runtime import enforcing, policy_events
from respread.runtime import scan as scan_module
from respread.runtime.cache import WATCHED, CacheBehindError, ClusterCache
from respread.runtime.memory import PolicyMemory
from tests.support import builders as make
from tests.support.manifests import manifest
from tests.support.tables import cases

API = cast(client.ApiClient, object())


def pod(name: str, rv: str, node: str = "n1", namespace: str = "ns") -> dict[str, Any]:
    doc = manifest(make.pod(name, node, namespace=namespace, uid=f"uid-{name}"))
    doc["metadata"]["resourceVersion"] = rv
    return doc


def listing(**pods: str) -> dict[str, dict[tuple[str, str], str]]:
    out: dict[str, dict[tuple[str, str], str]] = {w.kind: {} for w in WATCHED}
    out["Pod"] = {("ns", name): rv for name, rv in pods.items()}
    return out


def names(cache: ClusterCache) -> set[str]:
    return {p.name for p in cache.snapshot().pods}


# (case, cached pods {name: rv}, listed pods {name: rv}) -> lagging pods
BEHIND: list[tuple[str, dict[str, str], dict[str, str], int]] = [
    ("same versions", {"a": "10", "b": "11"}, {"a": "10", "b": "11"}, 0),
    ("cache newer (an event after the list)", {"a": "12"}, {"a": "10"}, 0),
    ("listed object missing from the cache", {"a": "10"}, {"a": "10", "b": "11"}, 1),
    ("listed version newer than the cache's", {"a": "10"}, {"a": "15"}, 1),
    ("numeric, not lexical: 9 < 10", {"a": "9"}, {"a": "10"}, 1),
    ("cached object not listed: the sweep's business", {"a": "10", "z": "3"}, {"a": "10"}, 0),
    ("opaque versions: equal is caught up", {"a": "x1"}, {"a": "x1"}, 0),
    ("opaque versions: different is behind", {"a": "x1"}, {"a": "x2"}, 1),
]


@cases(("cached", "listed", "lagging"), BEHIND)
def test_behind(cached: dict[str, str], listed: dict[str, str], lagging: int) -> None:
    cache = ClusterCache()
    for name, rv in cached.items():
        cache.apply("Pod", None, pod(name, rv))
    assert cache.behind(listing(**listed)) == ({"Pod": lagging} if lagging else {})


def test_a_listing_without_versions_only_checks_presence() -> None:
    cache = ClusterCache()
    assert cache.behind({"Pod": {("ns", "a")}}) == {}  # (the sweep drops what is not listed)


def test_catch_up_waits_for_the_watch_to_deliver() -> None:
    cache = ClusterCache()
    cache.apply("Pod", None, pod("a", "10"))

    async def main() -> None:
        async def watch_comes_back() -> None:
            await asyncio.sleep(0.3)
            cache.apply("Pod", "MODIFIED", pod("a", "20"))
            cache.apply("Pod", "ADDED", pod("b", "21"))

        task = asyncio.create_task(watch_comes_back())
        await asyncio.wait_for(cache.catch_up(listing(a="20", b="21"), 5), 3)
        await task

    asyncio.run(main())
    assert names(cache) == {"a", "b"}


def test_catch_up_gives_up_and_the_cache_stays_suspect() -> None:
    cache = ClusterCache()
    cache.apply("Pod", None, pod("a", "10"))
    with pytest.raises(CacheBehindError, match="1 Pod"):
        asyncio.run(cache.catch_up(listing(a="20"), 0.3))
    assert cache.suspect and cache.needs_sweep()


def test_a_suspected_disconnection_asks_for_a_verification() -> None:
    cache = ClusterCache()
    assert not cache.needs_sweep()
    cache.mark_suspect("a request failed")
    assert cache.needs_sweep()
    cache.begin_sweep()
    assert not cache.needs_sweep()  # from now on, a new suspicion asks again
    cache.end_sweep(listing())


def test_a_suspect_sweep_drops_the_deleted_and_waits_for_the_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the watches were away: `gone` was deleted, `a` changed, `new` created. The sweep
    forgets `gone` at once and returns only once the watch has delivered `a` and `new`."""
    cache = ClusterCache()
    for name in ("a", "gone"):
        cache.apply("Pod", None, pod(name, "10"))
    monkeypatch.setattr(cache_module, "list_keys", lambda api, paths: listing(a="30", new="31"))
    cache.mark_suspect("test")

    async def main() -> None:
        async def watch_comes_back() -> None:
            await asyncio.sleep(0.3)
            assert names(cache) == {"a"}  # already swept, still waiting
            cache.apply("Pod", "MODIFIED", pod("a", "30"))
            cache.apply("Pod", "ADDED", pod("new", "31"))

        task = asyncio.create_task(watch_comes_back())
        await asyncio.wait_for(cache.sweep(API, catch_up=5), 3)
        await task

    asyncio.run(main())
    assert names(cache) == {"a", "new"}
    assert not cache.suspect


def test_a_scan_on_a_cache_that_does_not_catch_up_fails_and_plans_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written: list[dict[str, Any]] = []
    monkeypatch.setattr(scan_module, "patch_status", lambda api, name, st: written.append(st))
    monkeypatch.setattr(enforcing, "post_event", lambda *a, **k: None)
    monkeypatch.setattr(policy_events, "post_policy_event", lambda *a, **k: None)
    monkeypatch.setattr(cache_module, "list_keys", lambda api, paths: listing(a="30"))
    monkeypatch.setattr(cache_module, "CATCH_UP", 0.3)
    monkeypatch.setattr(scan_module, "CATCH_UP", 0.3)  # the scan's own wait, within its deadline
    policy = parse_policy(
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": "p", "generation": 1},
            "spec": {"schedule": {"interval": "10s"}, "mode": "Enforce"},
        }
    )
    evicted: list[Any] = []
    monkeypatch.setattr(enforcing, "evict", lambda *a, **k: evicted.append(a))
    cache = ClusterCache()
    for w in WATCHED:  # every kind listed: the watches are synced, but suspect
        keys = {cache.apply("Pod", None, pod("a", "10"))} if w.kind == "Pod" else set()
        cache.end_listing(w.kind, keys)
    cache.mark_suspect("the API server was away")
    memory = PolicyMemory()
    monkeypatch.setattr(
        scan_module, "time", SimpleNamespace(time=lambda: 1.8e9, monotonic=lambda: 0.0)
    )
    assert asyncio.run(scan_module.run_scan(API, cache, policy, memory)) is True
    (status,) = written
    assert "summary" not in status  # no report: the failure only
    failed = {c["type"]: c for c in status["conditions"]}["ScanSucceeded"]
    assert failed["status"] == "False"
    assert "behind the API server" in failed["message"]
    assert evicted == []
    assert memory.last_scan is None
    assert cache.suspect  # the next scan verifies again


def _sweep_dropping(cache: ClusterCache, keep: str) -> None:
    cache.begin_sweep()
    cache.end_sweep(listing(**{keep: "1"}))


# (case, what happens after a snapshot) -> whether the next snapshot is a new state object
SNAPSHOT_AFTER: list[tuple[str, Any, bool]] = [
    ("nothing", lambda c: None, False),
    (
        "an event that changes nothing kept (a status heartbeat)",
        lambda c: c.apply("Pod", "MODIFIED", pod("a", "11")),
        False,
    ),
    ("a listing of the same objects", lambda c: c.apply("Pod", None, pod("a", "12")), False),
    ("a pod added", lambda c: c.apply("Pod", "ADDED", pod("b", "11")), True),
    (
        "a pod moved to another node",
        lambda c: c.apply("Pod", "MODIFIED", pod("a", "11", "n2")),
        True,
    ),
    ("a pod deleted", lambda c: c.apply("Pod", "DELETED", pod("a", "11")), True),
    ("a relisting without it", lambda c: c.end_listing("Pod", set()), True),
    ("a verification that no longer finds it", lambda c: _sweep_dropping(c, "other"), True),
]


@cases(("after", "new"), SNAPSHOT_AFTER)
def test_a_snapshot_is_the_same_state_object_until_a_kept_record_changes(
    after: Any, new: bool
) -> None:
    """The scan's analysis is reused for the same state object (pipeline.AnalysisMemo): the
    cache hands out a new one exactly when what it keeps has changed."""
    cache = ClusterCache()
    cache.apply("Pod", None, pod("a", "10"))
    first = cache.snapshot()
    after(cache)
    assert (cache.snapshot() is not first) is new


def test_the_scan_log_says_what_an_unchanged_cluster_reused(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A second scan of the same cache reuses the analysis and, the policy's minPodAge past
    for every pod and nothing evicted, the plan (remedies/evict/clock.py); after a pod is added
    in another namespace, the third carries the first namespace's analysis; the log says so."""
    monkeypatch.setattr(scan_module, "patch_status", lambda api, name, st: None)
    monkeypatch.setattr(policy_events, "post_policy_event", lambda *a, **k: None)
    policy = parse_policy(
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": "p", "generation": 1},
            "spec": {"schedule": {"interval": "10s"}, "eviction": {"minPodAge": "0s"}},
        }
    )
    cache = ClusterCache()
    for w in WATCHED:
        keys = {cache.apply("Pod", None, pod("a", "10"))} if w.kind == "Pod" else set()
        cache.end_listing(w.kind, keys)
    memory = PolicyMemory()
    clock = [1.8e9]
    monkeypatch.setattr(
        scan_module, "time", SimpleNamespace(time=lambda: clock[0], monotonic=lambda: 0.0)
    )
    notes = []
    for now in (1.8e9, 1.8e9 + 30, 1.8e9 + 60):
        if now == 1.8e9 + 60:  # a pod in another namespace: the first namespace is carried
            cache.apply("Pod", "ADDED", pod("b", "11", namespace="other"))
        clock[0] = now
        caplog.clear()
        with caplog.at_level("INFO", logger="respread.runtime.scan"):
            assert asyncio.run(scan_module.run_scan(API, cache, policy, memory)) is True
        (line,) = [m for r in caplog.records if "RebalancePolicy p (" in (m := r.getMessage())]
        notes.append(line.partition(" evicted; ")[2])
    reused = "the cluster unchanged since the last scan: its analysis and plan reused"
    assert "reused" not in notes[0]
    assert notes[1].endswith(f"; {reused}")
    carried = "1 of 2 namespaces unchanged since the last scan: their analysis carried"
    assert notes[2].endswith(f"; {carried}")


def test_a_record_delivered_again_unchanged_stays_the_same_object() -> None:
    """A MODIFIED event that changes nothing the cache keeps (a new resourceVersion, a status
    heartbeat) leaves the record the object it was, so the next snapshot after another change
    holds it by identity: the analysis carries its namespace (analysis/groups.py)."""
    cache = ClusterCache()
    cache.apply("Pod", None, pod("a", "10"))
    first = cache.snapshot()
    cache.apply("Pod", "MODIFIED", pod("a", "11"))
    cache.apply("Pod", "ADDED", pod("b", "12", namespace="other"))
    second = cache.snapshot()
    (a_before,) = first.pods
    a_after = next(p for p in second.pods if p.name == "a")
    assert second is not first
    assert a_after is a_before
