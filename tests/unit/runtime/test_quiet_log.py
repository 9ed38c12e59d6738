"""The operator's log stays clean (no ERROR, no traceback, no scheduler warning) at start-up,
during a first listing longer than the watches' catch-up time, and on shutdown mid-scan: the
real APScheduler and the real orphaned-surges loop, on a cache without a cluster behind it."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import replace
from typing import Any, cast

import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger
from kubernetes import client

from respread.inputs.policy import RebalancePolicy, Schedule, parse_policy
from respread.runtime import cache as cache_module
from respread.runtime import operator as operator_module
from respread.runtime import scan as scan_module
from respread.runtime import surges
from respread.runtime.cache import WATCHED, ClusterCache
from respread.runtime.operator import App

API = cast(client.ApiClient, object())  # never called: nothing here reaches the API server


def fast_policy(interval: float) -> RebalancePolicy:
    """A policy scanned every `interval` seconds (below the CRD's 10 s floor, to keep the test
    short: the scheduler does not care)."""
    policy = parse_policy(
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": "p", "generation": 1},
            "spec": {"schedule": {"interval": "10s"}},
        }
    )
    return replace(policy, schedule=Schedule(interval=interval))


def list_everything(cache: ClusterCache) -> None:
    for w in WATCHED:
        cache.begin_listing(w.kind)
        cache.end_listing(w.kind, set())


def noisy(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every record at WARNING or above, or carrying a traceback."""
    return [
        f"{r.levelname} {r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.levelno >= logging.WARNING or r.exc_info is not None
    ]


def test_a_first_listing_longer_than_the_interval_and_the_catch_up_logs_nothing_alarming(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Intervals of 0.1 s and a catch-up of 0.2 s against a listing of 1 s: the scheduler
    ticks ten times while the first scan waits, the orphan pass comes round five times."""
    monkeypatch.setattr(cache_module, "CATCH_UP", 0.2)
    monkeypatch.setattr(surges, "ORPHANS_EVERY", 0.2)
    monkeypatch.setattr(scan_module, "patch_status", lambda *a, **k: None)
    caplog.set_level(logging.DEBUG)
    app = App(api=API)
    scans: list[float] = []

    async def scanned(*args: Any, **kwargs: Any) -> bool:
        scans.append(time.monotonic())
        await asyncio.sleep(0.3)  # a scan longer than its interval, too
        return True

    monkeypatch.setattr(operator_module, "run_scan", scanned)
    # The schedule's grace is whole seconds; an interval of 0.1 s keeps it at 1.
    monkeypatch.setattr(
        operator_module, "trigger_for", lambda s: (IntervalTrigger(seconds=s.interval), 1)
    )

    async def main() -> None:
        app.scheduler = AsyncIOScheduler(event_loop=asyncio.get_running_loop(), timezone="UTC")
        app.scheduler.start()
        surges.watch_orphans(API, app.cache, lambda: ["p"], app.acting)
        app.schedule(fast_policy(0.1), "uid-p")
        await asyncio.sleep(1.0)
        assert scans == []  # still listing
        list_everything(app.cache)
        await asyncio.sleep(1.0)
        await operator_module._stop(app)
        await asyncio.sleep(0.1)

    asyncio.run(main())
    assert noisy(caplog) == []
    assert 2 <= len(scans) <= 4  # one at a time, 0.3 s each, in the second after the listing
    skipped = [r for r in caplog.records if "this tick is skipped" in r.getMessage()]
    assert skipped and all(r.levelno == logging.INFO for r in skipped)


def test_a_shutdown_in_the_middle_of_a_scan_logs_one_info_line_and_no_traceback(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan's computation is on a thread when SIGTERM's clean-up cancels the scan."""
    computing = threading.Event()

    def slow_scan(*args: Any, **kwargs: Any) -> Any:
        computing.set()
        time.sleep(0.5)
        raise AssertionError("the scan went on after it was cancelled")  # never read

    monkeypatch.setattr(scan_module, "scan", slow_scan)
    caplog.set_level(logging.DEBUG)
    app = App(api=API)
    list_everything(app.cache)

    async def main() -> None:
        app.scheduler = AsyncIOScheduler(event_loop=asyncio.get_running_loop(), timezone="UTC")
        app.scheduler.start()
        app.schedule(fast_policy(30.0), "uid-p")
        while not computing.is_set():
            await asyncio.sleep(0.01)
        await operator_module._stop(app)  # what kopf's clean-up handler runs on SIGTERM
        await asyncio.sleep(0.1)
        assert app.running == set()

    asyncio.run(main())
    assert noisy(caplog) == []
    stopped = [r for r in caplog.records if "stopped before it ended" in r.getMessage()]
    assert [r.levelno for r in stopped] == [logging.INFO]


def test_a_watch_behind_after_the_first_listing_puts_the_orphan_pass_off_in_one_line(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first listing, a kind relisting for longer than the catch-up is a WARNING line
    (the scans report it too), never an ERROR with a traceback."""
    monkeypatch.setattr(cache_module, "CATCH_UP", 0.1)
    monkeypatch.setattr(surges, "ORPHANS_EVERY", 0.1)
    caplog.set_level(logging.DEBUG)
    cache = ClusterCache()
    list_everything(cache)
    cache.begin_listing("Pod")  # relisting, and it takes long

    async def main() -> None:
        surges.watch_orphans(API, cache, lambda: [], lambda: True)
        await asyncio.sleep(0.6)
        surges.stop_orphans()
        await asyncio.sleep(0.05)

    asyncio.run(main())
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert records, "the pass was never put off"
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in records)
    assert all("orphaned surges pass is put off" in r.getMessage() for r in records)
