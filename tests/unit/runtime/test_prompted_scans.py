"""Scans prompted by change (runtime/prompt.py): which watch events prompt, how a burst of
them becomes one prompt, the budget that spaces prompted scans, and which policies a prompt
scans, when."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from kubernetes import client

from respread.inputs.policy import RebalancePolicy, parse_policy
from respread.remedies.cost.release import Lifecycle
from respread.runtime.cache import ClusterCache
from respread.runtime.operator import App
from respread.runtime.prompt import Prompter, PromptSettings, ScanBudget
from tests.support import builders as make
from tests.support.manifests import manifest

API = cast(client.ApiClient, object())  # never called


def make_policy(name: str, schedule: dict[str, str]) -> RebalancePolicy:
    return parse_policy(
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": name, "generation": 1},
            "spec": {"schedule": schedule},
        }
    )


def pod(name: str, node: str = "n1", **kwargs: Any) -> dict[str, Any]:
    return manifest(make.pod(name, node, namespace="ns", uid=f"uid-{name}", **kwargs))


# ---- which watch events prompt ---------------------------------------------------------------


def counting_cache() -> tuple[ClusterCache, list[int]]:
    cache, calls = ClusterCache(), []
    cache.on_change = lambda: calls.append(1)
    return cache, calls


def with_resource_version(body: dict[str, Any], version: str) -> dict[str, Any]:
    return {**body, "metadata": {**body["metadata"], "resourceVersion": version}}


# (case, events applied after the listing of pod "a" on n1, prompts)
EVENTS = [
    ("a pod added", [("ADDED", pod("b"))], 1),
    ("a pod deleted", [("DELETED", pod("a"))], 1),
    ("a pod moved to another node", [("MODIFIED", pod("a", "n2"))], 1),
    ("a pod whose record did not change", [("MODIFIED", with_resource_version(pod("a"), "9"))], 0),
    ("a deletion of a pod never seen", [("DELETED", pod("z"))], 0),
    ("a pod that turned unready", [("MODIFIED", pod("a", ready=False))], 1),
    ("two changes", [("ADDED", pod("b")), ("DELETED", pod("a"))], 2),
]


@pytest.mark.parametrize(("events", "prompts"), [c[1:] for c in EVENTS], ids=[c[0] for c in EVENTS])
def test_watch_events_prompt_when_they_change_a_record(
    events: list[tuple[str, dict[str, Any]]], prompts: int
) -> None:
    cache, calls = counting_cache()
    cache.apply("Pod", None, pod("a"))
    for event_type, body in events:
        cache.apply("Pod", event_type, body)
    assert len(calls) == prompts


def test_a_listing_never_prompts() -> None:
    cache, calls = counting_cache()
    cache.begin_listing("Pod")
    for name in ("a", "b", "c"):
        cache.apply("Pod", None, pod(name))
    cache.end_listing("Pod", {("ns", n) for n in ("a", "b", "c")})
    assert calls == []


# ---- a burst of changes is one prompt ---------------------------------------------------------


async def pokes(prompter: Prompter, count: int, every: float) -> None:
    for _ in range(count):
        prompter.poke()
        await asyncio.sleep(every)


@contextlib.asynccontextmanager
async def prompting(quiet: float, longest: float) -> AsyncIterator[tuple[Prompter, list[float]]]:
    """A running Prompter, and the monotonic times at which it fired."""
    fired: list[float] = []
    prompter = Prompter(PromptSettings(quiet, longest), lambda: fired.append(time.monotonic()))
    task = asyncio.create_task(prompter.run())
    await asyncio.sleep(0)
    try:
        yield prompter, fired
    finally:
        task.cancel()


def test_a_burst_of_changes_fires_once_after_it_has_been_quiet() -> None:
    async def scenario() -> tuple[int, float]:
        async with prompting(quiet=0.2, longest=5.0) as (prompter, fired):
            t0 = time.monotonic()
            await pokes(prompter, 10, 0.02)  # 0.2 s of changes
            while not fired and time.monotonic() - t0 < 3:
                await asyncio.sleep(0.01)
            took = time.monotonic() - t0
            await asyncio.sleep(0.4)  # nothing more comes
            return len(fired), took

    fired, took = asyncio.run(scenario())
    assert fired == 1
    assert 0.35 <= took < 1.5, took  # the burst (0.2 s), then quiet (0.2 s)


def test_changes_that_never_stop_fire_every_longest_wait() -> None:
    """Pokes every 10 ms never leave 0.2 s of quiet: each burst fires when it has lasted the
    longest wait (0.5 s), so never sooner than that after the previous fire, however slowly
    a loaded machine turns the loop."""

    async def scenario() -> tuple[float, list[float]]:
        async with prompting(quiet=0.2, longest=0.5) as (prompter, fired):
            t0 = time.monotonic()
            await pokes(prompter, 110, 0.01)  # 1.1 s or more
            return t0, list(fired)

    t0, fired = asyncio.run(scenario())
    assert len(fired) >= 2, fired
    gaps = [b - a for a, b in zip([t0, *fired], fired, strict=False)]
    assert all(gap >= 0.5 - 0.01 for gap in gaps), gaps


def test_pokes_from_other_threads_reach_the_loop() -> None:
    async def scenario() -> int:
        async with prompting(quiet=0.05, longest=1.0) as (prompter, fired):
            await asyncio.to_thread(prompter.poke)
            await asyncio.sleep(0.3)
            return len(fired)

    assert asyncio.run(scenario()) == 1


# ---- the budget: a change after a quiet spell at once, a cluster that keeps changing at duty ---


def budget_after(scans: list[tuple[float, float]], settings: PromptSettings) -> ScanBudget:
    budget = ScanBudget()
    for started, ended in scans:
        budget = budget.after(started, ended, settings)
    return budget


# (case, settings, scans as (start, end), now, seconds to wait)
BUDGETS = [
    ("no scan yet", PromptSettings(), [], 0.0, 0.0),
    ("one scan: a change right after it is scanned at once", PromptSettings(), [(0, 4)], 4, 0),
    # 4 s scans at duty 0.25 owe 16 s each; a burst of 3 lets 2 be owed when the next starts
    ("three scans in a row: the fourth waits", PromptSettings(), [(0, 4), (4, 8), (8, 12)], 12, 4),
    ("... and after a quiet spell none waits", PromptSettings(), [(0, 4), (4, 8), (8, 12)], 40, 0),
    ("a burst of 1 is a gap of 3 scans", PromptSettings(burst=1), [(0, 4)], 4, 12),
    ("half the time: a gap of 1 scan", PromptSettings(burst=1, duty=0.5), [(0, 4)], 4, 4),
    ("the time between scans is paid back", PromptSettings(burst=1), [(0, 4), (30, 34)], 34, 12),
]


@pytest.mark.parametrize(
    ("settings", "scans", "now", "wait"), [c[1:] for c in BUDGETS], ids=[c[0] for c in BUDGETS]
)
def test_a_prompted_scan_waits_for_its_budget(
    settings: PromptSettings, scans: list[tuple[float, float]], now: float, wait: float
) -> None:
    assert budget_after(scans, settings).wait(now, settings) == pytest.approx(wait)


def test_scans_as_fast_as_the_budget_allows_take_duty_of_the_time() -> None:
    """However long each scan takes, back-to-back prompted scans (each started the moment its
    budget allows) take no more than `duty` of the time, plus the first burst."""
    settings = PromptSettings(duty=0.25, burst=3)
    budget, now, busy = ScanBudget(), 0.0, 0.0
    for took in [4.0, 1.0, 7.5, 2.0, 0.3, 4.0] * 20:
        now += budget.wait(now, settings)
        budget = budget.after(now, now + took, settings)
        now, busy = now + took, busy + took
    burst = 3 * 7.5
    assert busy <= settings.duty * now + burst
    assert busy >= 0.9 * settings.duty * now  # and the budget is used, not wasted


def test_prompting_can_be_turned_off() -> None:
    assert not PromptSettings(quiet=0).enabled
    assert PromptSettings().enabled


# ---- which policies a prompt scans ------------------------------------------------------------


class Recorder(App):
    """An App whose rescans are recorded instead of modifying scheduler jobs."""

    rescanned: list[str]

    def rescan(self, name: str) -> None:
        self.rescanned.append(name)


def app_with(*policies: RebalancePolicy) -> Recorder:
    app = Recorder(api=API)
    app.rescanned = []
    for p in policies:
        app.policies[p.name] = (p, None)
    return app


def test_a_prompt_scans_interval_policies_but_never_a_cron_one() -> None:
    app = app_with(
        make_policy("every", {"interval": "5m"}),
        make_policy("nightly", {"cron": "0 2 * * *"}),
    )
    asyncio.run(_prompt(app))
    assert app.rescanned == ["every"]


def test_a_policy_being_deleted_is_not_prompted() -> None:
    app = app_with(make_policy("going", {"interval": "5m"}))
    app.lifecycles["going"] = Lifecycle(deleting_since=1.0, finalizer=True)
    asyncio.run(_prompt(app))
    assert app.rescanned == []


def test_a_follower_is_not_prompted() -> None:
    app = app_with(make_policy("every", {"interval": "5m"}))
    app.acting = lambda: False  # type: ignore[method-assign]
    asyncio.run(_prompt(app))
    assert app.rescanned == []


def test_a_prompt_beyond_the_burst_waits_for_its_budget_then_scans() -> None:
    async def scenario(app: Recorder) -> tuple[list[str], list[str]]:
        now = time.monotonic()
        app.prompts = PromptSettings(quiet=0.05, duty=0.25, burst=1)
        app.budgets["every"] = ScanBudget().after(now - 0.1, now, app.prompts)  # a 0.3 s gap
        app.prompted()
        at_once = list(app.rescanned)
        await asyncio.sleep(0.5)
        return at_once, app.rescanned

    app = app_with(make_policy("every", {"interval": "5m"}))
    at_once, later = asyncio.run(scenario(app))
    assert at_once == []
    assert later == ["every"]


def test_a_prompt_after_one_scan_scans_at_once() -> None:
    async def scenario(app: Recorder) -> list[str]:
        now = time.monotonic()
        app.budgets["every"] = ScanBudget().after(now - 5.0, now, app.prompts)
        app.prompted()
        return list(app.rescanned)

    app = app_with(make_policy("every", {"interval": "5m"}))
    assert asyncio.run(scenario(app)) == ["every"]


def test_a_prompt_during_a_scan_waits_for_it_to_end() -> None:
    async def scenario(app: Recorder) -> list[str]:
        running = asyncio.get_running_loop().create_future()
        app.scanning["every"] = cast(asyncio.Task[None], running)
        app.prompted()
        return list(app.rescanned)

    app = app_with(make_policy("every", {"interval": "5m"}))
    assert asyncio.run(scenario(app)) == []
    assert app.waiting == {"every"}  # scan() prompts it again when the running scan ends


async def _prompt(app: App) -> None:
    app.prompted()
    await asyncio.sleep(0)


def test_only_prompted_scans_are_paid_from_the_budget() -> None:
    """A prompt marks the scan it starts; that scan's time (not the wait for the listing) is
    paid from the budget. A scan at the interval (or a first, cold one) is not."""

    async def scenario(app: Recorder) -> tuple[ScanBudget, ScanBudget]:
        async def listed() -> None:
            await asyncio.sleep(0.2)  # the listing: no scan's cost

        async def scanned(name: str) -> None:
            await asyncio.sleep(0.05)

        app.warm = listed  # type: ignore[method-assign]
        app._scan = scanned  # type: ignore[method-assign]
        app.prompted(["every"])  # marks it and asks for the scan
        await app.scan("every")
        paid = app.budgets["every"]
        await app.scan("every")  # the next one, at the interval
        return paid, app.budgets["every"]

    app = app_with(make_policy("every", {"interval": "5m"}))
    paid, after = asyncio.run(scenario(app))
    assert app.rescanned == ["every"]
    assert 0.04 <= paid.last_took < 0.19  # the prompted scan alone, without the listing
    assert after is paid  # the interval's scan paid nothing
    assert app.prompting == set()
