"""The operator runtime without a cluster: liveness staleness, the wait for the first listings
before a scan, the watch cache across listings and verifications, causes that outlive the scan
that found them, and the status conditions across a failed scan."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kubernetes import client

from respread.analysis.causes import Cause
from respread.core.collector import gc_paused
from respread.inputs.policy import RebalancePolicy, parse_policy
from respread.kube.client import KubeError
from respread.kube.writer import PolicyGoneError
from respread.report.changes import Before, change_events, changes
from respread.report.model import Violation
from respread.runtime import cache as cache_module
from respread.runtime import enforcing, policy_events
from respread.runtime import scan as scan_module
from respread.runtime.cache import WATCHED, CacheBehindError, ClusterCache
from respread.runtime.memory import PolicyMemory
from respread.runtime.operator import GRACE, STALE_FACTOR, App
from tests.support import builders as make
from tests.support.manifests import manifest
from tests.support.reports import report, violation

API = cast(client.ApiClient, object())  # never called: the tests replace what would use it
SLACK = GRACE  # App.stale() allows this on top of STALE_FACTOR intervals


def make_policy(schedule: dict[str, str], name: str = "p") -> RebalancePolicy:
    return parse_policy(
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": name, "generation": 1},
            "spec": {"schedule": schedule, "selector": {"namespaces": {"include": ["ns"]}}},
        }
    )


def pod(name: str, node: str = "n1") -> dict[str, Any]:
    return manifest(make.pod(name, node, namespace="ns", uid=f"uid-{name}"))


def pods(cache: ClusterCache) -> set[str]:
    return {p.name for p in cache.snapshot().pods}


# ---- liveness: App.stale() ----------------------------------------------------------------


def test_a_policy_scanned_recently_is_not_stale() -> None:
    app = App(api=API)
    app.policies["p"] = (make_policy({"interval": "10s"}), None)
    app.memories["p"] = PolicyMemory(last_scan=time.time() - 25)
    assert app.stale() == []


def test_a_policy_whose_last_scan_is_older_than_three_intervals_is_stale() -> None:
    app = App(api=API)
    app.policies["p"] = (make_policy({"interval": "10s"}), None)
    app.policies["q"] = (make_policy({"interval": "10s"}, "q"), None)
    app.memories["p"] = PolicyMemory(last_scan=time.time() - (STALE_FACTOR * 10 + SLACK + 5))
    app.memories["q"] = PolicyMemory(last_scan=time.time() - 5)
    assert app.stale() == ["p"]


def test_a_policy_never_scanned_is_stale_only_once_the_operator_has_run_long_enough() -> None:
    app = App(api=API)
    app.policies["p"] = (make_policy({"interval": "10s"}), None)
    assert app.stale() == []  # just started
    app.started = time.monotonic() - (STALE_FACTOR * 10 + SLACK + 5)
    assert app.stale() == ["p"]


def test_a_cron_policy_is_judged_against_its_own_times() -> None:
    app = App(api=API)
    app.policies["p"] = (make_policy({"cron": "*/10 * * * *"}), None)
    app.memories["p"] = PolicyMemory(last_scan=time.time() - 60)
    assert app.stale() == []
    app.memories["p"].last_scan = time.time() - (STALE_FACTOR * 600 + SLACK + 5)
    assert app.stale() == ["p"]


def test_a_weekly_cron_policy_is_not_stale_between_its_scans() -> None:
    app = App(api=API)
    app.policies["w"] = (make_policy({"cron": "0 3 * * sun"}, "w"), None)
    app.memories["w"] = PolicyMemory(last_scan=time.time() - 6 * 86400)
    assert app.stale() == []
    app.memories["w"].last_scan = time.time() - (STALE_FACTOR * 7 * 86400 + SLACK + 5)
    assert app.stale() == ["w"]


# ---- the first listings -----------------------------------------------------------------


def synced(cache: ClusterCache, **pods_listed: str) -> ClusterCache:
    """Every kind listed (the pods named, on their nodes), as the reflectors would."""
    for w in WATCHED:
        keys = set()
        if w.kind == "Pod":
            keys = {cache.apply("Pod", None, pod(name, node)) for name, node in pods_listed.items()}
        cache.begin_listing(w.kind)
        cache.end_listing(w.kind, keys)
    return cache


def test_a_scan_waits_for_every_kind_to_be_listed_once() -> None:
    app = App(api=API)

    async def main() -> None:
        kinds = [w.kind for w in WATCHED]
        for kind in kinds[:-1]:
            app.cache.end_listing(kind, set())
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(app.warm(), 0.3)
        app.cache.end_listing(kinds[-1], set())
        await asyncio.wait_for(app.warm(), 1)
        assert app.cache.ready()

    asyncio.run(main())


def test_a_kind_being_relisted_or_disconnected_holds_scans_back_then_fails_them() -> None:
    cache = synced(ClusterCache())
    assert cache.ready()
    cache.begin_listing("Pod")  # a relisting after 410 Gone
    assert not cache.ready() and cache.unsynced() == ["Pod"]
    with pytest.raises(CacheBehindError, match="Pod"):
        asyncio.run(cache.wait_ready(0.2))
    cache.end_listing("Pod", set())
    asyncio.run(cache.wait_ready(0.2))
    cache.set_synced("Node", False)  # a watch disconnected
    assert cache.unsynced() == ["Node"]
    cache.set_synced("Node", True)  # resumed from its resourceVersion
    assert cache.ready()


# ---- the watch cache across listings and verifications ---------------------------------


def present(**by_kind: set[tuple[str, str]]) -> dict[str, set[tuple[str, str]]]:
    return {w.kind: by_kind.get(w.kind, set()) for w in WATCHED}


def test_a_relisting_replaces_what_the_cache_held_of_that_kind() -> None:
    """A listing shows what exists, never what was deleted while the watch was away: the end
    of a listing drops every record of that kind it did not hold."""
    cache = synced(ClusterCache(), a="n1", b="n1", c="n2")
    cache.begin_listing("Pod")
    keys = {cache.apply("Pod", None, pod("a", "n2")), cache.apply("Pod", None, pod("d"))}
    assert cache.end_listing("Pod", keys) == 2
    assert pods(cache) == {"a", "d"}
    assert {p.name: p.node_name for p in cache.snapshot().pods}["a"] == "n2"
    assert cache.ready()


def test_only_a_suspected_disconnection_asks_for_a_verification() -> None:
    cache = synced(ClusterCache(), a="n1")
    cache.apply("Pod", "MODIFIED", pod("a", "n2"))
    cache.apply("Pod", "ADDED", pod("b"))
    cache.apply("Pod", "DELETED", pod("a"))
    assert not cache.needs_sweep()  # events alone never do: a periodic scan lists nothing
    cache.mark_suspect("a request failed")
    assert cache.needs_sweep()


def test_a_verification_drops_objects_the_server_no_longer_has_and_keeps_newer_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = synced(ClusterCache(), a="n1", b="n1", c="n1")
    cache.mark_suspect("the API server was away")

    def list_keys(api: object, paths: dict[str, str]) -> dict[str, set[tuple[str, str]]]:
        assert paths["Pod"] == "/api/v1/pods"
        assert paths["PodDisruptionBudget"] == "/apis/policy/v1/poddisruptionbudgets"
        # Meanwhile (the list runs in a thread), pod d is created and its event arrives.
        cache.apply("Pod", "ADDED", pod("d"))
        return present(Pod={("ns", "a")})

    monkeypatch.setattr(cache_module, "list_keys", list_keys)
    assert asyncio.run(cache.sweep(API)) == 2
    assert pods(cache) == {"a", "d"}
    assert not cache.needs_sweep()
    assert asyncio.run(cache.sweep(API)) == 0  # nothing asked for another


def test_a_verification_that_cannot_list_changes_nothing_and_is_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = synced(ClusterCache(), a="n1", b="n1")
    cache.mark_suspect("the API server was away")

    def unreachable(api: object, paths: dict[str, str]) -> dict[str, set[tuple[str, str]]]:
        raise KubeError("cannot reach the API server")

    monkeypatch.setattr(cache_module, "list_keys", unreachable)
    with pytest.raises(KubeError):
        asyncio.run(cache.sweep(API))
    assert pods(cache) == {"a", "b"}
    assert cache.needs_sweep()


# ---- status conditions across a failed scan ------------------------------------------


def test_a_reported_scan_failure_is_a_transition_both_ways(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ScanSucceeded goes True, False (the failure is written), True again: the last
    lastTransitionTime is the recovery's, not the first scan's."""
    written: list[dict[str, Any]] = []
    clock = {"now": 1_800_000_000.0}
    monkeypatch.setattr(scan_module, "patch_status", lambda api, name, st: written.append(st))
    monkeypatch.setattr(enforcing, "post_event", lambda *a, **k: None)
    monkeypatch.setattr(policy_events, "post_policy_event", lambda *a, **k: None)
    monkeypatch.setattr(
        scan_module, "time", SimpleNamespace(time=lambda: clock["now"], monotonic=time.monotonic)
    )
    attempts = {"n": 0}

    def list_keys(api: object, paths: dict[str, str]) -> dict[str, set[tuple[str, str]]]:
        attempts["n"] += 1
        if attempts["n"] == 1:
            raise KubeError("cannot reach the API server at https://127.0.0.1:6443")
        return present()

    monkeypatch.setattr(cache_module, "list_keys", list_keys)
    policy = make_policy({"interval": "10s"})
    cache, memory = synced(ClusterCache()), PolicyMemory()

    def scan_at(t: float) -> dict[str, Any]:
        clock["now"] = t
        asyncio.run(scan_module.run_scan(API, cache, policy, memory))
        return {c["type"]: c for c in written[-1]["conditions"]}

    assert scan_at(1_800_000_000)["ScanSucceeded"]["status"] == "True"
    cache.mark_suspect("a request failed")  # the next scan must verify, and that fails
    failed = scan_at(1_800_000_010)["ScanSucceeded"]
    assert (failed["status"], failed["reason"]) == ("False", "ScanFailed")
    assert "cannot reach the API server" in failed["message"]
    assert failed["lastTransitionTime"] == "2027-01-15T08:00:10Z"
    recovered = scan_at(1_800_000_020)["ScanSucceeded"]
    assert recovered["status"] == "True"
    assert recovered["lastTransitionTime"] == "2027-01-15T08:00:20Z"


def test_a_policy_whose_status_cannot_be_written_for_404_is_no_longer_scanned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A policy deleted while the watch was away is never reported deleted by the relisting;
    the 404 of its status write tells instead."""

    def gone(api: object, name: str, status: object) -> None:
        raise PolicyGoneError(f"RebalancePolicy {name} no longer exists")

    monkeypatch.setattr(scan_module, "patch_status", gone)
    app = App(api=API, cache=synced(ClusterCache()))
    app.policies["p"] = (make_policy({"interval": "10s"}), None)
    asyncio.run(app.scan("p"))
    assert "p" not in app.policies
    assert "p" not in app.memories


def test_the_collector_is_paused_while_scans_compute_and_resumes_after_the_last() -> None:
    import gc

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # a second policy's scan at the same time
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("a failed scan")
    assert gc.isenabled()
    gc.disable()  # a caller that had it off gets it back off
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


# ---- Events only for changes ---------------------------------------------------------------


def found(name: str, skew: int = 2) -> Violation:
    return violation(name, cause=Cause.SCALE_DOWN, cause_message="went from 9 to 4", skew=skew)


def key(name: str) -> tuple[str, str, str, str, str]:
    return ("ns", "Deployment", name, "zone", "")  # no matchLabelKeys: no match labels


@pytest.mark.parametrize(
    ("known", "current", "expected"),
    [
        # nothing changed: no Event, however many violations there are
        ({"a", "b"}, ["a", "b"], []),
        (set(), [], []),
        # a few new violations: one Event each
        ({"a"}, ["a", "b"], [("ViolationFound", True, "ns/b: zone skew 2 > maxSkew 1")]),
        # resolved: one Event for all of them
        ({"a", "b", "c"}, ["a"], [("ViolationsResolved", False, "2 violation(s) resolved")]),
        # many new: one Event naming the first few and counting the rest
        (set(), [f"w{i}" for i in range(40)], [("ViolationsFound", True, "40 new violations")]),
        (
            {"old"},
            [f"w{i}" for i in range(6)],
            [
                ("ViolationsFound", True, "6 new violations: ns/w0 (zone skew 2), "),
                ("ViolationsResolved", False, "1 violation(s) resolved: ns/Deployment/old zone"),
            ],
        ),
    ],
)
def test_events_say_what_changed_since_the_last_scan(
    known: set[str], current: list[str], expected: list[tuple[str, bool, str]]
) -> None:
    scanned = report([found(name) for name in current])
    events = change_events(changes(scanned, Before(frozenset(key(k) for k in known))))
    assert [(reason, warning) for reason, warning, _ in events] == [
        (reason, warning) for reason, warning, _ in expected
    ]
    for (_, _, message), (_, _, start) in zip(events, expected, strict=True):
        assert message.startswith(start), message
    changed = len(set(current) - known) + len(known - set(current))
    assert len(events) <= changed


def test_a_scan_fails_at_once_while_a_watch_is_failing_and_waits_while_one_relists() -> None:
    cache = synced(ClusterCache())
    cache.set_synced("Pod", False, error="MaxRetryError: connection refused")
    with pytest.raises(CacheBehindError, match=r"Pod are failing .*connection refused"):
        asyncio.run(cache.wait_ready(30))  # at once, not after 30 s
    cache.begin_listing("Pod")  # reconnected, relisting: no error, so wait for it
    cache.end_listing("Pod", set())
    assert cache.ready() and "Pod" not in cache.failing


# ---- health: a scan stuck past its deadline, readiness ----------------------------------------


def test_liveness_fails_for_a_scan_stuck_past_its_deadline() -> None:
    from respread.runtime.guard import ScanGuard, ScanLimits

    app = App(api=API)
    now = [1000.0]
    guard = ScanGuard(ScanLimits(deadline=10), synced(ClusterCache()), clock=lambda: now[0])
    app.scans["p"] = guard
    now[0] += 10 + app.bounds.stuck - 1  # past the deadline, still reporting what it skipped
    assert app.unhealthy() is None
    now[0] += 2
    problem = app.unhealthy()
    assert problem is not None and problem.startswith("scans stuck: p (")


def test_readiness_fails_while_a_watch_fails_or_after_a_pause() -> None:
    from respread.runtime.heartbeat import Heartbeat, PauseSettings

    app = App(api=API)
    assert app.unready() is not None  # nothing listed yet
    synced(app.cache)
    assert app.unready() is None
    app.cache.set_synced("Node", False, error="connection refused")
    assert app.unready() == "the watches of Node are failing (Node: connection refused)"
    app.cache.set_synced("Node", True)
    now = [0.0]
    app.heartbeat = Heartbeat(PauseSettings(threshold=5), clock=lambda: now[0])
    now[0] += 30
    assert app.unready() == "the process was paused for 30s"
    app.heartbeat.tick()
    assert app.unready() is None
