"""Scans prompted by change: a scale-down, a lost node or a new one is reported within seconds,
not at the next interval.

The watch cache calls `Prompter.poke` (from the reflectors' threads) whenever a watch event
changes what respread keeps of the cluster. A burst of changes is one prompt: it fires once no
change has come for `quiet` seconds, or `longest` seconds after the burst began, whichever is
first. The operator then scans the policies that run on an interval (a cron schedule means
"only then", so it is never prompted), each as soon as its `ScanBudget` allows: after a quiet
spell a change is scanned at once (and up to `burst` changes in a row), while on a cluster
that never stops changing prompted scans take at most `duty` of the time, a bounded share of
a CPU beside the interval's own scans; the interval stays the upper bound.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PromptSettings:
    """`quiet` 0 turns prompted scans off."""

    quiet: float = 1.0
    longest: float = 5.0
    duty: float = 0.25
    burst: int = 3

    @property
    def enabled(self) -> bool:
        return self.quiet > 0


@dataclass(frozen=True, slots=True)
class ScanBudget:
    """A policy's prompted scans' share of the time, as a token bucket kept as the time it is
    full again.

    Each prompted scan costs `took / duty` seconds of the bucket, its own duration included,
    so prompted scans one after another as fast as the budget lets them take `duty` of the
    time; the scans at the interval are the policy's own choice and are not paid from it. A
    prompted scan may start while what is owed is no more than `burst - 1` scans like the
    last: a change after a quiet spell is scanned at once, not after a gap."""

    full_at: float = 0.0  # monotonic
    last_took: float = 0.0

    def after(self, started: float, ended: float, settings: PromptSettings) -> ScanBudget:
        took = max(0.0, ended - started)
        return ScanBudget(max(self.full_at, started) + took / settings.duty, took)

    def wait(self, now: float, settings: PromptSettings) -> float:
        """Seconds until a prompted scan may start (0: now)."""
        owed_at_most = max(0, settings.burst - 1) * self.last_took / settings.duty
        return max(0.0, self.full_at - owed_at_most - now)


class Prompter:
    """Turns pokes from any thread into debounced calls of `fire` on the event loop."""

    def __init__(self, settings: PromptSettings, fire: Callable[[], None]) -> None:
        self.settings = settings
        self._fire = fire
        self._loop: asyncio.AbstractEventLoop | None = None
        self._poked = asyncio.Event()
        self._pending = False  # a wake-up is on its way to the loop (fewer cross-thread calls)
        self.fired = 0

    def poke(self) -> None:
        """Something changed (any thread)."""
        loop = self._loop
        if loop is None or self._pending or loop.is_closed():
            return
        self._pending = True
        loop.call_soon_threadsafe(self._poked.set)

    async def run(self) -> None:
        """Until cancelled: wait for a burst of changes to end, then fire."""
        self._loop = asyncio.get_running_loop()
        while True:
            await self._poked.wait()
            await self._burst(time.monotonic())
            self.fired += 1
            self._fire()

    async def _burst(self, began: float) -> None:
        while True:
            self._poked.clear()
            self._pending = False
            left = self.settings.longest - (time.monotonic() - began)
            if left <= 0:
                return
            try:
                await asyncio.wait_for(self._poked.wait(), min(self.settings.quiet, left))
            except TimeoutError:
                return
