"""The leader election loop (runtime.leader) against an in-memory Lease with the API server's
optimistic concurrency: one leader at a time, takeover after a crash, fast failover after a
clean stop, and a leader cut off from the API server stops before another can take over."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client

from respread.kube.client import KubeError
from respread.kube.lease import LeaseObject
from respread.runtime import leader as leader_module
from respread.runtime.leader import LeaderElector, default_identity, default_namespace
from respread.runtime.leadership import LeaseTiming

API = cast(client.ApiClient, object())
TIMING = LeaseTiming(duration=1.5, renew_deadline=1.0, retry_period=0.1)


@dataclass
class FakeLeases:
    """One Lease, stored as the API server would: a create fails if it exists, a replace fails
    unless it names the current resourceVersion. `down` makes every request of the named
    identities fail (a network partition)."""

    spec: dict[str, Any] | None = None
    version: int = 0
    writes: list[tuple[float, str]] = field(default_factory=list)  # (when, holder written)
    down: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self, api: object, namespace: str, name: str, timeout: float) -> LeaseObject | None:
        self._check()
        with self.lock:
            if self.spec is None:
                return None
            return LeaseObject(dict(self.spec), str(self.version))

    def write(
        self,
        api: object,
        namespace: str,
        name: str,
        spec: dict[str, Any],
        *,
        resource_version: str | None,
        timeout: float,
    ) -> bool:
        self._check()
        with self.lock:
            if resource_version is None and self.spec is not None:
                return False  # 409 AlreadyExists
            if resource_version is not None and resource_version != str(self.version):
                return False  # 409 Conflict
            self.spec = dict(spec)
            self.version += 1
            self.writes.append((time.monotonic(), spec["holderIdentity"]))
            return True

    def _check(self) -> None:
        caller = threading.current_thread().name
        if any(caller.startswith(identity) for identity in self.down):
            raise KubeError("cannot reach the API server")

    @property
    def holder(self) -> str:
        return str((self.spec or {}).get("holderIdentity") or "")


@dataclass
class Timeline:
    """When each candidate started and stopped leading (from its on_change callback)."""

    spans: dict[str, list[list[float]]] = field(default_factory=dict)

    def callback(self, identity: str) -> Callable[[bool], Any]:
        async def on_change(leading: bool) -> None:
            spans = self.spans.setdefault(identity, [])
            if leading:
                spans.append([time.monotonic(), float("inf")])
            else:
                spans[-1][1] = time.monotonic()

        return on_change

    def overlaps(self) -> list[tuple[str, str]]:
        out = []
        flat = [(a, b, who) for who, spans in self.spans.items() for a, b in spans]
        for i, (a1, b1, w1) in enumerate(flat):
            for a2, b2, w2 in flat[i + 1 :]:
                if w1 != w2 and a1 < b2 and a2 < b1:
                    out.append((w1, w2))
        return out


@pytest.fixture
def leases(monkeypatch: pytest.MonkeyPatch) -> FakeLeases:
    fake = FakeLeases()
    monkeypatch.setattr(leader_module, "read_lease", fake.read)
    monkeypatch.setattr(leader_module, "write_lease", fake.write)
    return fake


def elector(identity: str, timeline: Timeline) -> LeaderElector:
    return LeaderElector(
        API,
        namespace="respread-system",
        name="respread",
        identity=identity,
        timing=TIMING,
        on_change=timeline.callback(identity),
    )


async def _in_thread_named(identity: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """asyncio.to_thread, in a thread named after the candidate (so FakeLeases can cut it off)."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = fn(*args, **kw)
        except BaseException as err:
            result["error"] = err

    thread = threading.Thread(target=run, name=f"{identity}-request")
    thread.start()
    while thread.is_alive():
        await asyncio.sleep(0.005)
    if "error" in result:
        raise result["error"]
    return result.get("value")


@pytest.fixture(autouse=True)
def named_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    async def to_thread(fn: Callable[..., Any], /, *args: Any, **kw: Any) -> Any:
        identity = asyncio.current_task().get_name()  # type: ignore[union-attr]
        return await _in_thread_named(identity, fn, *args, **kw)

    monkeypatch.setattr(leader_module.asyncio, "to_thread", to_thread)


async def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> float:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)
    return time.monotonic()


def start(e: LeaderElector) -> asyncio.Task[None]:
    return asyncio.create_task(e.run(), name=e.identity)


Candidate = tuple[LeaderElector, asyncio.Task[None]]


async def a_leads_b_follows(timeline: Timeline) -> tuple[Candidate, Candidate]:
    """Candidates a and b, each running: a started first and leads; b has followed for 0.3 s."""
    a, b = elector("a", timeline), elector("b", timeline)
    ta = start(a)
    await wait_until(lambda: a.leading, 2, "a to lead")
    tb = start(b)
    await asyncio.sleep(0.3)
    return (a, ta), (b, tb)


def test_two_candidates_one_leader(leases: FakeLeases) -> None:
    timeline = Timeline()

    async def main() -> None:
        a, b = elector("a", timeline), elector("b", timeline)
        tasks = [start(a), start(b)]
        await wait_until(lambda: a.leading or b.leading, 2, "a leader")
        for _ in range(20):  # 2 s of renewals: never both, the Lease names the leader
            assert not (a.leading and b.leading)
            leader = a if a.leading else b
            assert leases.holder == leader.identity
            await asyncio.sleep(0.1)
        follower = b if leader is a else a
        assert follower.holder == leader.identity
        for t in tasks:
            t.cancel()

    asyncio.run(main())
    assert len(timeline.spans) == 1, timeline.spans  # one leader, never changed


def test_a_crashed_leader_is_replaced_after_the_lease_duration(leases: FakeLeases) -> None:
    timeline = Timeline()

    async def main() -> None:
        a = elector("a", timeline)
        ta = start(a)
        await wait_until(lambda: a.leading, 2, "a to lead")
        b = elector("b", timeline)
        tb = start(b)
        await asyncio.sleep(0.5)
        assert not b.leading
        ta.cancel()  # a crash: no release
        crashed = time.monotonic()
        await wait_until(lambda: b.leading, 5, "b to take over")
        took = time.monotonic() - crashed
        assert took >= TIMING.duration - TIMING.retry_period - 0.05, took
        assert took <= TIMING.duration + 4 * TIMING.retry_period + 0.3, took
        tb.cancel()

    asyncio.run(main())
    assert leases.spec is not None and leases.spec["leaseTransitions"] == 1


def test_a_clean_stop_releases_the_lease_for_a_fast_failover(leases: FakeLeases) -> None:
    timeline = Timeline()

    async def main() -> None:
        (a, ta), (b, tb) = await a_leads_b_follows(timeline)
        ta.cancel()
        await a.stop()
        assert not a.leading
        assert leases.holder == ""
        stopped = time.monotonic()
        await wait_until(lambda: b.leading, 2, "b to take over")
        assert time.monotonic() - stopped < TIMING.duration / 2  # not a full lease duration
        tb.cancel()

    asyncio.run(main())
    assert timeline.overlaps() == []


def test_a_leader_cut_off_stops_before_another_can_take_over(leases: FakeLeases) -> None:
    """The leader's requests fail from some moment on (it still runs): it stops leading after
    its renew deadline, strictly before the other candidate acquires the Lease."""
    timeline = Timeline()

    async def main() -> None:
        (a, ta), (b, tb) = await a_leads_b_follows(timeline)
        leases.down.add("a")
        await asyncio.sleep(TIMING.renew_deadline)  # its last renewal was sent before the cut
        assert not a.leading  # (from its clock: however late this line runs)
        lapsed = time.monotonic()
        acquired = await wait_until(lambda: b.leading, 5, "b to take over")
        assert lapsed < acquired
        leases.down.clear()  # a comes back: it follows b
        await asyncio.sleep(0.5)
        assert not a.leading and a.holder == "b"
        ta.cancel()
        tb.cancel()

    asyncio.run(main())
    assert timeline.overlaps() == [], timeline.spans


def test_a_lapsed_leader_does_not_name_itself_as_the_holder(
    leases: FakeLeases, caplog: pytest.LogCaptureFixture
) -> None:
    """A leader that could not renew (cut off here; a process paused past its Lease is the same
    to it) has not read the Lease since it last wrote itself in: its log names no holder,
    least of all itself. Once it reads the Lease again it follows whoever holds it."""
    timeline = Timeline()

    async def main() -> None:
        a, b = elector("a", timeline), elector("b", timeline)
        ta, tb = start(a), start(b)
        await wait_until(lambda: a.leading or b.leading, 2, "a leader")
        first, second = (a, b) if a.leading else (b, a)
        leases.down.add(first.identity)
        await wait_until(lambda: not first.leading, 3, "the leader to lapse")
        await wait_until(lambda: second.leading, 5, "the other to take over")
        leases.down.clear()
        await wait_until(lambda: first.holder == second.identity, 2, "the old leader to follow")
        ta.cancel()
        tb.cancel()
        return first.identity

    with caplog.at_level("WARNING", logger=leader_module.__name__):
        old = asyncio.run(main())
    lapses = [r.getMessage() for r in caplog.records if "stopped leading" in r.getMessage()]
    assert lapses, caplog.text
    assert all(f"held by {old}" not in m for m in lapses), lapses
    assert "not renewed within the renew deadline, last renewed" in lapses[0], lapses


def test_an_acquisition_answered_after_the_renew_deadline_never_leads(
    leases: FakeLeases, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The Lease is written (the API server names the candidate), but the answer reaches it
    only after the renew deadline: its process was paused, or the request stalled. It never
    leads on that write and does not claim to have acquired the Lease; it says why instead."""
    timeline = Timeline()
    write = leases.write

    def slow_first_write(*args: Any, **kw: Any) -> bool:
        won = write(*args, **kw)
        if len(leases.writes) == 1:
            time.sleep(TIMING.renew_deadline + 0.2)
        return won

    monkeypatch.setattr(leader_module, "write_lease", slow_first_write)

    async def main() -> LeaderElector:
        a = elector("a", timeline)
        ta = start(a)
        await wait_until(lambda: len(leases.writes) >= 1, 2, "the first write")
        await wait_until(lambda: a.holder == "a", 3, "the late answer")
        assert not a.leading
        await wait_until(lambda: a.leading, 3, "the next renewal, answered in time")
        ta.cancel()
        return a

    with caplog.at_level("INFO", logger=leader_module.__name__):
        asyncio.run(main())
    messages = [r.getMessage() for r in caplog.records]
    late = [m for m in messages if "after the renew deadline: not leading on it" in m]
    assert len(late) == 1, messages
    assert not any(m.startswith("acquired") for m in messages[: messages.index(late[0])])
    assert timeline.spans["a"][0][0] > leases.writes[0][0] + TIMING.renew_deadline, timeline.spans


def test_identity_and_namespace_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("POD_NAME", "respread-5f7-x2")
    assert default_identity() == "respread-5f7-x2"
    monkeypatch.delenv("POD_NAME")
    assert default_identity().endswith(f"_{os.getpid()}")
    ns = tmp_path / "namespace"
    assert default_namespace(ns) == "respread-system"  # outside a pod
    ns.write_text("ops\n")
    assert default_namespace(ns) == "ops"
