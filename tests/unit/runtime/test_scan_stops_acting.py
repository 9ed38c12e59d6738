"""The scan's shell (runtime/scan.py) in Enforce, without a cluster: what it does when its guard,
the freshness proof or the eviction ledger says it must not act. A scan that stopped acting
sends no eviction and writes no costs, reports the planned evictions as Deferred with the
reason, and never says ScanSucceeded=True; the ledger's evictions (another policy's) defer the
workload they hold; a pause while the cache is being shown current plans nothing."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kubernetes import client

from respread.analysis.groups import WorkloadRef
from respread.core.model import OwnerRef
from respread.inputs.policy import RebalancePolicy, parse_policy
from respread.kube.evictions import Outcome, Result
from respread.remedies.cost.release import CostCounts
from respread.remedies.evict.ledger import Recorded, key_of, render_entries
from respread.runtime import enforcing, policy_events
from respread.runtime import scan as scan_module
from respread.runtime.cache import WATCHED, ClusterCache
from respread.runtime.enforcing import Safety
from respread.runtime.freshness import Freshness
from respread.runtime.guard import ScanGuard, ScanLimits
from respread.runtime.heartbeat import Heartbeat, PauseSettings
from respread.runtime.ledger import Ledger
from respread.runtime.memory import PolicyMemory
from tests.support import builders as make
from tests.support.constants import NOW_EPOCH as NOW
from tests.support.manifests import manifest

API = cast(client.ApiClient, object())  # never called: the tests replace what would use it
WEB = WorkloadRef("shop", "Deployment", "web")


def policy(mode: str = "Enforce") -> RebalancePolicy:
    return parse_policy(
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": "p", "generation": 1},
            "spec": {"mode": mode, "eviction": {"minPodAge": "0s", "cooldown": "10m"}},
        }
    )


def skewed() -> ClusterCache:
    """Every kind listed: three zones, Deployment shop/web with 3, 1 and 1 pods in them (hard
    zone spread, maxSkew 1): one eviction from zone a is planned."""
    nodes = [make.node(f"{z}1", zone=z) for z in "abc"]
    constraint = make.hard("zone", make.WEB)
    owner = OwnerRef("ReplicaSet", "web-abc")
    labels = {**make.APP_WEB, "pod-template-hash": "abc"}  # a Deployment's ReplicaSet
    pods = [
        make.pod(
            f"web-{z}{i}", f"{z}1", labels, namespace="shop", owner=owner,
            uid=f"uid-{z}{i}", constraints=(constraint,),
        )
        for z, count in (("a", 3), ("b", 1), ("c", 1))
        for i in range(count)
    ]  # fmt: skip
    cache = ClusterCache()
    for w in WATCHED:
        cache.begin_listing(w.kind)
        listed = pods if w.kind == "Pod" else nodes if w.kind == "Node" else []
        cache.end_listing(w.kind, {cache.apply(w.kind, None, manifest(r)) for r in listed})
    return cache


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Operator:
    """What the scan sends: evictions, status writes, the policy's Events, cost writes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.evicted: list[str] = []
        self.statuses: list[dict[str, Any]] = []
        self.events: list[str] = []
        self.cost_writes = 0
        monkeypatch.setattr(enforcing, "evict", self.evict)
        monkeypatch.setattr(enforcing, "post_event", lambda *a, **kw: None)
        monkeypatch.setattr(scan_module, "patch_status", self.patch_status)
        monkeypatch.setattr(scan_module, "manage_costs", self.manage_costs)
        monkeypatch.setattr(policy_events, "post_policy_event", self.post_policy_event)

    def evict(self, api: object, namespace: str, name: str, **kw: Any) -> Outcome:
        self.evicted.append(name)
        return Outcome(Result.EVICTED, "evicted", 201)

    def patch_status(self, api: object, name: str, status: dict[str, Any]) -> None:
        self.statuses.append(status)

    async def manage_costs(self, *args: object, **kwargs: object) -> CostCounts:
        self.cost_writes += 1
        return CostCounts()

    def post_policy_event(
        self, api: object, name: str, uid: object, reason: str, **kw: Any
    ) -> None:
        self.events.append(reason)

    def conditions(self) -> dict[str, dict[str, Any]]:
        return {c["type"]: c for c in self.statuses[-1]["conditions"]}

    def steps(self) -> list[tuple[str, str]]:
        return [(s["state"], s["reason"]) for s in self.statuses[-1]["plan"]]


def scan(cache: ClusterCache, memory: PolicyMemory, safety: Safety, mode: str = "Enforce") -> bool:
    return asyncio.run(scan_module.run_scan(API, cache, policy(mode), memory, safety=safety))


def test_a_scan_whose_deadline_passes_while_it_plans_evicts_nothing_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent = Operator(monkeypatch)
    cache, clock, memory = skewed(), Clock(), PolicyMemory()
    guard = ScanGuard(ScanLimits(deadline=120), cache, clock=clock)
    planned = scan_module.scan

    def slow(*args: Any, **kwargs: Any) -> object:  # the pipeline took past the deadline
        result = planned(*args, **kwargs)
        clock.now += 121
        return result

    monkeypatch.setattr(scan_module, "scan", slow)
    assert scan(cache, memory, Safety(guard))
    assert sent.evicted == [] and sent.cost_writes == 0
    ((state, reason),) = sent.steps()
    assert state == "Deferred" and "passed its deadline (120s)" in reason
    conditions = sent.conditions()
    assert (conditions["ScanSucceeded"]["status"], conditions["ScanSucceeded"]["reason"]) == (
        "False",
        "DeadlineExceeded",
    )
    assert conditions["ScanStalled"]["status"] == "True"
    assert "CacheStale" not in conditions
    assert "ScanStalled" in sent.events
    assert memory.last_scan is None  # not a scan that counts for liveness

    monkeypatch.setattr(scan_module, "scan", planned)  # the next scan, within its deadline
    assert scan(cache, memory, Safety(ScanGuard(ScanLimits(deadline=120), cache, clock=clock)))
    assert sent.evicted == ["web-a0"] and sent.cost_writes == 1
    conditions = sent.conditions()
    assert conditions["ScanSucceeded"]["status"] == "True"
    assert conditions["ScanStalled"]["status"] == "False"
    assert sent.events[-1] == "ScanWithinDeadline"


def recorded_by_other(now: float) -> dict[str, str]:
    """The ledger as another policy left it: it evicted from shop/web a minute ago."""
    entry = Recorded("web-b9", "uid-b9", "other", "other@1", now - 60, now + 540)
    return {key_of(WEB): render_entries([entry])}


def test_a_workload_the_ledger_holds_is_deferred_and_a_dry_run_reads_no_ledger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent = Operator(monkeypatch)
    cache = skewed()
    reads: list[str] = []
    monkeypatch.setattr(
        scan_module, "time", SimpleNamespace(time=lambda: NOW, monotonic=time.monotonic)
    )

    async def recorded() -> dict[str, str]:
        reads.append("read")
        return recorded_by_other(NOW)

    async def reserve(slot: object) -> str:
        raise AssertionError("a held workload asks for no slot")

    ledger = cast(Ledger, SimpleNamespace(recorded=recorded, reserve=reserve))
    safety = Safety(ScanGuard(ScanLimits(), cache), ledger=ledger)
    assert scan(cache, PolicyMemory(), safety)
    assert reads == ["read"] and sent.evicted == []
    ((state, reason),) = sent.steps()
    assert state == "Deferred"
    assert reason.startswith("cooldown: RebalancePolicy other evicted web-b9 60s ago")
    assert sent.conditions()["ScanSucceeded"]["status"] == "True"  # a deferral, not a failure

    assert scan(
        cache, PolicyMemory(), Safety(ScanGuard(ScanLimits(), cache), ledger=ledger), "DryRun"
    )
    assert reads == ["read"]  # DryRun acts on nothing: it neither reads nor is held by it
    assert [s for s, _ in sent.steps()] == ["Planned"]


def test_a_pause_while_the_cache_is_shown_current_plans_nothing_and_asks_for_a_new_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent = Operator(monkeypatch)
    cache, clock = skewed(), Clock()
    heartbeat = Heartbeat(PauseSettings(threshold=5.0), clock=clock)
    guard = ScanGuard(ScanLimits(), cache, heartbeat, clock=clock)

    async def establish(bound: float) -> float:
        clock.now += 30  # SIGSTOP: the monotonic clock went on
        return 0.0

    freshness = cast(Freshness, SimpleNamespace(establish=establish))
    planned: list[object] = []
    monkeypatch.setattr(scan_module, "scan", lambda *a, **kw: planned.append(a))
    assert scan(cache, PolicyMemory(), Safety(guard, freshness))
    assert planned == [] and sent.evicted == []
    conditions = sent.conditions()
    assert conditions["ScanSucceeded"]["status"] == "False"
    assert "paused" in conditions["ScanSucceeded"]["message"]
    assert conditions["CacheStale"]["status"] == "True"
    assert sent.events == ["CacheStale", "ScanFailed"]
    assert guard.replan  # the operator scans the policy again at once, from a verified cache
    assert cache.needs_sweep()
