"""Enforce acts only on fresh state, without a cluster: the heartbeat notices pauses, the scan's
guard stops it (deadline, pause, failing watches, old plan), the watch cache is shown current
by probes, the ledger takes and gives back slots under concurrent writers, and evictions stop
at the first thing that no longer holds."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kubernetes import client

from respread.analysis.groups import WorkloadRef
from respread.core.model import OwnerRef, Pod
from respread.inputs.policy import parse_policy
from respread.kube.client import KubeError
from respread.kube.evictions import Outcome, Result
from respread.kube.freshness import Probe
from respread.kube.ledger import LedgerObject
from respread.remedies.evict.ledger import held_workloads, key_of, parse_entries
from respread.remedies.evict.steps import Move
from respread.runtime import enforcing, freshness, ledger
from respread.runtime.acting import NotLeadingError
from respread.runtime.cache import WATCHED, CacheBehindError, ClusterCache
from respread.runtime.enforcing import Enforcing, enforce_moves
from respread.runtime.freshness import Freshness
from respread.runtime.guard import Halt, HaltReason, ScanGuard, ScanLimits
from respread.runtime.heartbeat import Heartbeat, PauseSettings
from respread.runtime.ledger import Ledger, Slot
from respread.runtime.reflector import WatchPosition
from tests.support import builders as make
from tests.support.manifests import manifest

API = cast(client.ApiClient, client.ApiClient(client.Configuration()))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def synced_cache(*pods: Pod) -> ClusterCache:
    cache = ClusterCache()
    for w in WATCHED:
        cache.begin_listing(w.kind)
        cache.end_listing(w.kind, set())
    for p in pods:
        cache.apply("Pod", "ADDED", manifest(p))
    return cache


# ---- the heartbeat -----------------------------------------------------------------------


def test_a_gap_between_beats_is_a_pause_and_says_so_at_once() -> None:
    clock = Clock()
    seen: list[float] = []
    beat = Heartbeat(PauseSettings(period=0.5, threshold=5.0), seen.append, clock)
    clock.now += 0.6
    assert beat.tick() is None and beat.pauses == 0
    clock.now += 60  # SIGSTOP for a minute: the monotonic clock went on
    assert beat.stalled() == pytest.approx(60)  # before the next beat, a thread can tell
    assert beat.paused_since(0)
    assert beat.tick() == pytest.approx(60)
    assert beat.pauses == 1 and seen == [pytest.approx(60)]
    assert beat.stalled() == 0 and beat.paused_since(0) and not beat.paused_since(1)


# ---- the scan's guard --------------------------------------------------------------------


def guard(clock: Clock, cache: ClusterCache | None = None, **kw: Any) -> ScanGuard:
    beat = Heartbeat(PauseSettings(threshold=5.0), clock=clock)
    return ScanGuard(
        ScanLimits(deadline=120, plan_age=60, catch_up=30),
        cache if cache is not None else synced_cache(),
        beat,
        clock=clock,
        **kw,
    )


def reason(g: ScanGuard) -> HaltReason | None:
    halt = g.why_not()
    return halt.reason if halt is not None else None


def test_the_guard_stops_a_scan_past_its_deadline() -> None:
    clock = Clock()
    g = guard(clock)
    assert reason(g) is None
    clock.now += 121
    assert reason(g) is HaltReason.DEADLINE
    assert "deadline (120s)" in g.refusal()


def test_the_guard_stops_a_scan_after_a_pause_or_with_an_old_plan() -> None:
    clock = Clock()
    g = guard(clock)
    g.planned()
    assert g.heartbeat is not None
    clock.now += 10  # paused: no beat for 10 s
    assert reason(g) is HaltReason.PAUSED
    g.heartbeat.tick()
    assert reason(g) is HaltReason.PAUSED  # the pause is counted since the plan
    with pytest.raises(Halt):  # nor may the scan plan again: the next one does
        g.planned()
    assert g.replan
    g = guard(clock)  # the next scan
    g.planned()
    assert reason(g) is None
    for _ in range(70):
        clock.now += 1
        g.heartbeat.tick()
    assert reason(g) is HaltReason.EXPIRED


def test_the_guard_stops_a_scan_while_a_watch_fails_and_when_it_no_longer_leads() -> None:
    clock = Clock()
    cache = synced_cache()
    leading = [True]
    g = guard(clock, cache, acting=lambda: leading[0])
    cache.set_synced("Pod", False, error="connection refused")
    assert reason(g) is HaltReason.STALE and "Pod" in g.refusal()
    cache.set_synced("Pod", True)
    g.check()
    leading[0] = False
    with pytest.raises(NotLeadingError):
        g.check()
    assert g.refusal() == "this replica no longer leads"


# ---- showing the cache current -------------------------------------------------------------


class FakeServer:
    """current_version and probe as kube-apiserver answers them: `head` is where it is; a probe
    replays `changes` (kind -> versions) after its start, then a bookmark at `head`."""

    def __init__(self, head: int, bookmarks: bool = True) -> None:
        self.head = head
        self.bookmarks = bookmarks
        self.changes: dict[str, list[int]] = {}
        self.probes: list[str] = []
        self.lock = threading.Lock()

    def current_version(self, api: object, path: str) -> str:
        return str(self.head)

    def probe(self, api: object, path: str, since: str, target: int, timeouts: object) -> Probe:
        kind = next(w.kind for w in WATCHED if w.path == path)
        with self.lock:
            self.probes.append(kind)
        later = [v for v in self.changes.get(kind, []) if v > int(since)]
        return Probe(self.bookmarks and self.head >= target, max(later, default=None))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    fake = FakeServer(head=100)
    monkeypatch.setattr(freshness, "current_version", fake.current_version)
    monkeypatch.setattr(freshness, "probe", fake.probe)
    monkeypatch.setattr(freshness, "SETTLE", 0.05)
    return fake


class Watches:
    """Where each kind's watch stands (as Reflectors.position says)."""

    def __init__(self, version: int) -> None:
        self.versions = {w.kind: version for w in WATCHED}
        self.listings = dict.fromkeys(self.versions, 1)

    def position(self, kind: str) -> WatchPosition:
        return WatchPosition(str(self.versions[kind]), self.listings[kind])


def test_quiet_kinds_are_shown_current_by_a_probe_and_busy_ones_by_their_own_watch(
    server: FakeServer,
) -> None:
    watches = Watches(version=90)
    watches.versions["Pod"] = 100  # busy: its watch is past the server's version already
    fresh = Freshness(API, synced_cache(), watches.position)
    asyncio.run(fresh.establish(5))
    assert "Pod" not in server.probes and len(server.probes) == len(WATCHED) - 1
    assert fresh.established == 1


def test_a_kind_with_changes_still_on_their_way_is_waited_for(server: FakeServer) -> None:
    watches = Watches(version=90)
    server.changes["Node"] = [95, 98]  # made after the watch's 90: not delivered yet
    fresh = Freshness(API, synced_cache(), watches.position)

    def deliver() -> None:
        time.sleep(0.3)
        watches.versions["Node"] = 98

    threading.Thread(target=deliver).start()
    t0 = time.monotonic()
    asyncio.run(fresh.establish(5))
    assert time.monotonic() - t0 >= 0.25


def test_a_watch_that_does_not_deliver_or_relists_is_not_current(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    watches = Watches(version=90)
    server.changes["Node"] = [95]
    cache = synced_cache()
    fresh = Freshness(API, cache, watches.position)
    swept: list[str] = []

    async def sweep(api: object, catch_up: float | None = None) -> int:
        if cache.needs_sweep():
            swept.append("swept")
            cache.suspect = False
            raise CacheBehindError("the watch cache is behind the API server")
        return 0

    monkeypatch.setattr(cache, "sweep", sweep)
    with pytest.raises(CacheBehindError):
        asyncio.run(fresh.establish(0.5))
    assert swept == ["swept"]  # it fell back on the verification, which failed too
    server.changes.clear()

    def relisting(kind: str) -> WatchPosition:  # Pod relists while being shown current
        if kind == "Pod":
            watches.listings["Pod"] += 1
        return watches.position(kind)

    fresh.positions = relisting
    swept.clear()
    with pytest.raises(CacheBehindError):
        asyncio.run(fresh.establish(0.5))
    assert swept == ["swept"]


def test_a_server_without_bookmarks_falls_back_on_the_verification(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.bookmarks = False
    cache = synced_cache()
    fresh = Freshness(API, cache, Watches(version=90).position)
    swept: list[bool] = []

    async def sweep(api: object, catch_up: float | None = None) -> int:
        swept.append(cache.needs_sweep())
        cache.suspect = False
        return 0

    monkeypatch.setattr(cache, "sweep", sweep)
    asyncio.run(fresh.establish(2))
    assert swept == [False, True]  # the usual check, then the verification it asked for


def test_a_failing_watch_fails_at_once(server: FakeServer) -> None:
    cache = synced_cache()
    cache.set_synced("Node", False, error="connection refused")
    with pytest.raises(CacheBehindError, match="failing"):
        asyncio.run(Freshness(API, cache, Watches(version=90).position).establish(5))


# ---- the ledger, with writers racing ----------------------------------------------------------


class FakeConfigMap:
    """The ledger ConfigMap with the API server's optimistic concurrency; `race` makes another
    writer change it between a read and the next write."""

    def __init__(self) -> None:
        self.data: dict[str, str] | None = None
        self.version = 0
        self.race = 0
        self.writes = 0

    def read(self, api: object, namespace: str, name: str) -> LedgerObject:
        if self.data is None:
            return LedgerObject({}, None)
        return LedgerObject(dict(self.data), str(self.version))

    def write(
        self, api: object, ns: str, name: str, changes: dict[str, str | None], *,
        resource_version: str | None,
    ) -> bool:  # fmt: skip
        if self.race:
            self.race -= 1
            self.version += 1
            self.data = self.data or {}
            return False
        if (resource_version is None) != (self.data is None) or (
            resource_version is not None and resource_version != str(self.version)
        ):
            return False
        data = dict(self.data or {})
        for key, value in changes.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        self.data, self.version, self.writes = data, self.version + 1, self.writes + 1
        return True


@pytest.fixture
def configmap(monkeypatch: pytest.MonkeyPatch) -> FakeConfigMap:
    fake = FakeConfigMap()
    monkeypatch.setattr(ledger, "read_ledger", fake.read)
    monkeypatch.setattr(ledger, "write_ledger", fake.write)
    return fake


WEB = WorkloadRef("shop", "Deployment", "web")


def slot(policy: str, run: str, uid: str = "u1", cap: int | None = 1) -> Slot:
    return Slot(WEB, f"web-{uid}", uid, policy, run, 600.0, cap, planned=1.7e9)


def test_two_policies_get_one_slot_between_them(configmap: FakeConfigMap) -> None:
    book = Ledger(API, "respread-system", keep=lambda: 600.0)
    assert asyncio.run(book.reserve(slot("a", "a@1"))) == ""
    why = asyncio.run(book.reserve(slot("b", "b@1", uid="u2")))
    assert why.startswith("cooldown: RebalancePolicy a evicted web-u1")
    assert asyncio.run(book.reserve(slot("a", "a@1", uid="u3"))) == "maxPerWorkload 1 reached"
    assert configmap.data is not None
    (entry,) = parse_entries(configmap.data[key_of(WEB)])
    assert (entry.pod, entry.planned) == ("web-u1", 1.7e9)
    recorded = asyncio.run(book.recorded())
    held = held_workloads(recorded, [WEB], now=time.time(), cooldown=600.0)
    assert list(held) == [WEB]


def test_a_writer_that_lost_a_race_reads_again(configmap: FakeConfigMap) -> None:
    book = Ledger(API, "respread-system", keep=lambda: 600.0)
    configmap.race = 2
    assert asyncio.run(book.reserve(slot("a", "a@1"))) == ""
    configmap.race = 10
    other = replace(slot("b", "b@1", uid="u2"), workload=WorkloadRef("shop", "StatefulSet", "db"))
    with pytest.raises(KubeError, match="kept changing"):
        asyncio.run(book.reserve(other))


def test_a_refused_eviction_gives_its_slot_back(configmap: FakeConfigMap) -> None:
    book = Ledger(API, "respread-system", keep=lambda: 600.0)
    asyncio.run(book.reserve(slot("a", "a@1")))
    asyncio.run(book.release(WEB, "u1"))
    assert configmap.data == {}
    assert asyncio.run(book.reserve(slot("b", "b@1", uid="u2"))) == ""


# ---- evictions, stopped at the first thing that no longer holds --------------------------------


def pod(name: str, node: str = "a1") -> Pod:
    """A pod of Deployment shop/web (its ReplicaSet web-abc) on `node`."""
    owner = OwnerRef("ReplicaSet", "web-abc")
    return make.pod(name, node, make.APP_WEB, namespace="shop", owner=owner, uid=f"uid-{name}")


def move(p: Pod) -> Move:
    return Move(p, WEB, p.node_name or "", "b1", (("zone", "a"),), (("zone", "b"),), "skewed")


POLICY = parse_policy(
    {
        "apiVersion": "respread.io/v1alpha1",
        "kind": "RebalancePolicy",
        "metadata": {"name": "p", "generation": 1},
        "spec": {"mode": "Enforce", "eviction": {"maxPerWorkload": 3}},
    }
)


class Evictions:
    def __init__(self, outcomes: list[Outcome] | None = None) -> None:
        self.outcomes = outcomes or []
        self.sent: list[str] = []

    def __call__(self, api: object, namespace: str, name: str, **kw: Any) -> Outcome:
        why = kw["refusal"]()
        if why:
            return Outcome(Result.FAILED, f"not evicted: {why}")
        self.sent.append(name)
        return self.outcomes.pop(0) if self.outcomes else Outcome(Result.EVICTED, "evicted", 201)


@pytest.fixture
def evictions(monkeypatch: pytest.MonkeyPatch) -> Evictions:
    fake = Evictions()
    monkeypatch.setattr(enforcing, "evict", fake)
    monkeypatch.setattr(enforcing, "post_event", lambda *a, **kw: None)
    return fake


def job(cache: ClusterCache, g: ScanGuard, **kw: Any) -> Enforcing:
    return Enforcing(API, cache, POLICY, g, cache.snapshot(), "p@1", **kw)


def test_each_eviction_after_the_first_waits_for_the_cache_to_be_shown_current(
    evictions: Evictions,
) -> None:
    pods = [pod("web-1"), pod("web-2"), pod("web-3")]
    cache = synced_cache(*pods)
    shown: list[float] = []
    fresh = SimpleNamespace(establish=lambda bound: _record(shown, bound))
    done = asyncio.run(
        enforce_moves(job(cache, guard(Clock(), cache), freshness=fresh), [move(p) for p in pods])
    )
    assert [e.state for e in done.executions] == ["Evicted"] * 3 and done.halt is None
    assert evictions.sent == ["web-1", "web-2", "web-3"]
    assert len(shown) == 2  # before the second and the third


async def _record(shown: list[float], bound: float) -> float:
    shown.append(bound)
    return 0.0


def test_a_change_since_the_plan_stops_the_evictions_and_asks_for_a_new_plan(
    evictions: Evictions,
) -> None:
    pods = [pod("web-1"), pod("web-2"), pod("web-3")]
    cache = synced_cache(*pods)
    g = guard(Clock(), cache)
    work = job(cache, g)
    cache.apply("Pod", "MODIFIED", manifest(replace(pods[2], terminating=True)))  # deleted
    done = asyncio.run(enforce_moves(work, [move(p) for p in pods]))
    assert evictions.sent == []
    assert done.halt is not None and done.halt.reason is HaltReason.CHANGED
    assert "Pod shop/web-3 changed" in done.halt.message
    assert [e.state for e in done.executions] == ["Deferred"] * 3
    assert g.replan


def test_an_unanswered_eviction_stops_the_rest_and_keeps_its_slot(
    evictions: Evictions, configmap: FakeConfigMap
) -> None:
    pods = [pod("web-1"), pod("web-2")]
    cache = synced_cache(*pods)
    evictions.outcomes = [Outcome(Result.FAILED, "no answer", answered=False)]
    book = Ledger(API, "respread-system", keep=lambda: 600.0)
    done = asyncio.run(
        enforce_moves(job(cache, guard(Clock(), cache), ledger=book), [move(p) for p in pods])
    )
    assert evictions.sent == ["web-1"]
    assert done.halt is not None and done.halt.reason is HaltReason.NO_ANSWER
    assert [e.state for e in done.executions] == ["Failed", "Deferred"]
    assert configmap.data is not None and "web-1" in configmap.data[key_of(WEB)]
    assert cache.needs_sweep()


def test_a_workload_another_policy_evicted_from_is_deferred_and_a_refusal_frees_its_slot(
    evictions: Evictions, configmap: FakeConfigMap
) -> None:
    pods = [pod("web-1")]
    cache = synced_cache(*pods)
    book = Ledger(API, "respread-system", keep=lambda: 600.0)
    asyncio.run(book.reserve(slot("other", "other@1", uid="x")))
    done = asyncio.run(
        enforce_moves(job(cache, guard(Clock(), cache), ledger=book), [move(pods[0])])
    )
    assert evictions.sent == []
    (ex,) = done.executions
    assert ex.state == "Deferred" and ex.reason.startswith("cooldown: RebalancePolicy other")
    configmap.data = {}
    evictions.outcomes = [Outcome(Result.BLOCKED, "refused by a PodDisruptionBudget", 429)]
    done = asyncio.run(
        enforce_moves(job(cache, guard(Clock(), cache), ledger=book), [move(pods[0])])
    )
    assert [e.state for e in done.executions] == ["Blocked"]
    assert configmap.data == {}  # taken back: it did not happen


def test_a_scan_past_its_deadline_sends_nothing_more(evictions: Evictions) -> None:
    pods = [pod("web-1"), pod("web-2")]
    cache = synced_cache(*pods)
    clock = Clock()
    g = guard(clock, cache)
    clock.now += 500
    done = asyncio.run(enforce_moves(job(cache, g), [move(p) for p in pods]))
    assert evictions.sent == []
    assert done.halt is not None and done.halt.reason is HaltReason.DEADLINE
    assert all("deadline" in e.reason for e in done.executions)
    assert not g.replan
