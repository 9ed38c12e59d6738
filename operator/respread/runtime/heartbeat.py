"""Noticing that the process was paused (SIGSTOP, a frozen VM or container, a stop-the-world
stall): a task on the event loop ticks every `period` seconds on the monotonic clock, which
keeps counting while the process is stopped. A gap longer than `threshold` between two ticks
is a pause: everything the operator believed about the cluster may be old, and the watches'
streams still hold what happened meanwhile.

After a pause the watch cache is marked suspect (the next scan verifies it against the API
server first), and every scan that planned before it stops acting (`pauses` changed since it
planned). Between the resumption and the next tick, `stalled()` says so already, so that a
worker thread resuming first (an eviction about to be sent) can ask before it sends.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PauseSettings:
    period: float = 0.5  # seconds between ticks
    threshold: float = 5.0  # a gap longer than this between ticks is a pause


DEFAULT_PAUSES = PauseSettings()


class Heartbeat:
    def __init__(
        self,
        settings: PauseSettings = DEFAULT_PAUSES,
        on_pause: Callable[[float], None] = lambda gap: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.on_pause = on_pause
        self.clock = clock
        self.last = clock()
        self.pauses = 0  # pauses noticed since the start
        self.longest = 0.0

    def tick(self) -> float | None:
        """One beat: the gap since the last one if it was a pause, else None."""
        now = self.clock()
        gap, self.last = now - self.last, now
        if gap <= self.settings.threshold:
            return None
        self.pauses += 1
        self.longest = max(self.longest, gap)
        log.warning(
            "the process was paused for %.1fs (no heartbeat): the watch cache is verified and "
            "every plan made before is dropped",
            gap,
        )
        self.on_pause(gap)
        return gap

    def stalled(self) -> float:
        """Seconds since the last beat if that is longer than the threshold (the process has
        just resumed from a pause, or the event loop is blocked), else 0."""
        since = self.clock() - self.last
        return since if since > self.settings.threshold else 0.0

    def paused_since(self, count: int) -> bool:
        """A pause has been noticed since `pauses` was `count`, or one is under way."""
        return self.pauses != count or self.stalled() > 0

    async def run(self) -> None:
        self.last = self.clock()
        while True:
            await asyncio.sleep(self.settings.period)
            self.tick()
