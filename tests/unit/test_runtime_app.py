"""The operator runtime without a cluster: liveness staleness, the warm-up before a scan, the
watch cache after a relisting, causes that outlive the scan that found them, and the status
conditions across a failed scan."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kubernetes import client

from respread.collector import gc_paused
from respread.kube.client import KubeError
from respread.kube.writer import PolicyGoneError
from respread.policy import RebalancePolicy, parse_policy
from respread.runtime import cache as cache_module
from respread.runtime import operator as operator_module
from respread.runtime import scan as scan_module
from respread.runtime.cache import WATCHED, ClusterCache
from respread.runtime.memory import PolicyMemory
from respread.runtime.operator import STALE_FACTOR, WARM_UP, App

API = cast(client.ApiClient, object())  # never called: the tests replace what would use it
SLACK = WARM_UP + 60  # App.stale() allows this on top of STALE_FACTOR intervals


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
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"nodeName": node, "containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }


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


# ---- warm-up ------------------------------------------------------------------------------


def test_warm_up_waits_for_listings_not_for_a_quiet_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a busy cluster some object changes every second; only listed objects (events with
    no type) hold a scan back, or scans would never run."""
    monkeypatch.setattr(operator_module, "WARM_UP", 0.3)
    app = App(api=API)
    app.started -= 10

    async def main() -> None:
        app.cache.apply("Pod", None, pod("a"))  # still listing
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(app.warm(), 0.1)
        await asyncio.wait_for(app.warm(), 2)  # the listing is over
        assert app.cache.listed

        async def churn() -> None:
            for i in range(40):
                app.cache.apply("Pod", "MODIFIED", pod(f"b{i % 3}"))
                await asyncio.sleep(0.05)

        busy = asyncio.create_task(churn())
        await asyncio.wait_for(app.warm(), 0.2)  # changes do not hold it back
        await busy

    asyncio.run(main())


# ---- the watch cache after a relisting --------------------------------------------------


def listed(cache: ClusterCache, *names: str) -> None:
    for name in names:
        cache.apply("Pod", None, pod(name))


def present(**by_kind: set[tuple[str, str]]) -> dict[str, set[tuple[str, str]]]:
    return {w.kind: by_kind.get(w.kind, set()) for w in WATCHED}


def test_only_a_listing_after_the_initial_ones_asks_for_a_sweep() -> None:
    cache = ClusterCache()
    listed(cache, "a", "b")
    assert not cache.needs_sweep()  # the initial listing
    cache.listed = True
    cache.apply("Pod", "MODIFIED", pod("a"))
    cache.apply("Pod", "ADDED", pod("c"))
    assert not cache.needs_sweep()
    listed(cache, "a")  # a watch restarted after 410 Gone
    assert cache.needs_sweep()


def test_a_listing_long_after_the_last_one_is_a_relisting_even_before_any_scan() -> None:
    cache = ClusterCache()
    listed(cache, "a", "b")
    cache.last_listed -= cache_module.SETTLED + 1  # the initial listing settled a while ago
    listed(cache, "a")
    assert cache.needs_sweep()


def test_a_sweep_drops_objects_the_server_no_longer_has_and_keeps_newer_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = ClusterCache()
    listed(cache, "a", "b", "c")
    cache.listed = True
    listed(cache, "a")  # relisting: b and c were deleted while the watch was away

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


def test_a_sweep_that_cannot_list_changes_nothing_and_is_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = ClusterCache()
    listed(cache, "a", "b")
    cache.listed = True
    listed(cache, "a")

    def unreachable(api: object, paths: dict[str, str]) -> dict[str, set[tuple[str, str]]]:
        raise KubeError("cannot reach the API server")

    monkeypatch.setattr(cache_module, "list_keys", unreachable)
    with pytest.raises(KubeError):
        asyncio.run(cache.sweep(API))
    assert pods(cache) == {"a", "b"}
    assert cache.needs_sweep()


def test_a_sweep_also_runs_after_a_long_while(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind relisted with no object left sends no event at all: the periodic sweep."""
    cache = ClusterCache()
    listed(cache, "a")
    cache.listed = True
    assert not cache.needs_sweep()
    cache.swept -= cache_module.RESYNC + 1
    assert cache.needs_sweep()
    monkeypatch.setattr(cache_module, "list_keys", lambda api, paths: present())
    assert asyncio.run(cache.sweep(API)) == 1
    assert pods(cache) == set()


# ---- causes outlive the scan that found them --------------------------------------------


def violation(cause: str, message: str, workload: str = "web") -> dict[str, Any]:
    return {
        "namespace": "ns",
        "workload": {"kind": "Deployment", "name": workload},
        "topologyKey": "zone",
        "cause": cause,
        "causeMessage": message,
    }


def test_an_ongoing_violation_keeps_its_cause_until_it_is_resolved() -> None:
    memory = PolicyMemory()
    first = {"violations": [violation("NodeLoss", "node(s) n1 left since the previous scan")]}
    memory.carry_causes(first)
    later = {"violations": [violation("Unknown", "no evidence in the snapshot of what skewed it")]}
    memory.carry_causes(later)
    assert later["violations"][0]["cause"] == "NodeLoss"
    assert later["violations"][0]["causeMessage"] == "node(s) n1 left since the previous scan"

    memory.carry_causes({"violations": []})  # resolved
    again = {"violations": [violation("ScaleDown", "web went from 9 to 4 pods")]}
    memory.carry_causes(again)
    assert again["violations"][0]["cause"] == "ScaleDown"


def test_an_unknown_cause_is_refined_when_evidence_appears() -> None:
    memory = PolicyMemory()
    memory.carry_causes({"violations": [violation("Unknown", "no evidence")]})
    refined = {"violations": [violation("RollingUpdate", "pods come from 2 ReplicaSets")]}
    memory.carry_causes(refined)
    assert refined["violations"][0]["cause"] == "RollingUpdate"
    assert memory.causes[("ns", "Deployment", "web", "zone")][0] == "RollingUpdate"


# ---- status conditions across a failed scan ------------------------------------------


def test_a_reported_scan_failure_is_a_transition_both_ways(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ScanSucceeded goes True, False (the failure is written), True again: the last
    lastTransitionTime is the recovery's, not the first scan's."""
    written: list[dict[str, Any]] = []
    clock = {"now": 1_800_000_000.0}
    monkeypatch.setattr(scan_module, "patch_status", lambda api, name, st: written.append(st))
    monkeypatch.setattr(scan_module, "post_event", lambda *a, **k: None)
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
    cache, memory = ClusterCache(), PolicyMemory()

    def scan_at(t: float) -> dict[str, Any]:
        clock["now"] = t
        asyncio.run(scan_module.run_scan(API, cache, policy, memory))
        return {c["type"]: c for c in written[-1]["conditions"]}

    assert scan_at(1_800_000_000)["ScanSucceeded"]["status"] == "True"
    cache.relisted = True  # the next scan must sweep, and the sweep fails
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
    app = App(api=API)
    app.started -= 10
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
