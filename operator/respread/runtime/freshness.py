"""Knowing that the watch cache is current: that it holds everything the API server held at a
given moment (`Freshness.establish`), before a scan acts on what it planned.

For each watched kind, in parallel:

1. a consistent read of the kind (kube/freshness.current_version: one LIST of one object's
   metadata) gives the resourceVersion R the API server is at now;
2. if the operator's watch of the kind has reached R already (a busy kind), the kind is
   current;
3. otherwise a short probe watch from where the operator's watch stands replays whatever
   changed since, up to a bookmark at or past R (about a second later): the kind is current
   once the operator's watch has delivered the last of those changes (none, for a quiet kind);
4. a probe that proves nothing (no bookmark: a server without a watch cache; an expired
   version) falls back on the verification the cache already knows (ClusterCache.sweep:
   metadata-only lists of every kind, and a wait until the watches hold what they listed).

A watch that fails or relists meanwhile, or no proof within the bound, means the cache is not
known to be current: CacheBehindError, and nothing is done from it.

Cost: a dozen one-object LISTs and a few short watches (the quiet kinds), about 1 to 2 s, and
only before a scan acts (Enforce); a DryRun scan plans from the cache as it is, unless
something made it suspect.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from kubernetes import client

from respread.kube.client import DEFAULT_TIMEOUTS, KubeError, Timeouts, pooled_client
from respread.kube.freshness import current_version, probe, version_number
from respread.runtime.cache import WATCHED, CacheBehindError, ClusterCache, Watched
from respread.runtime.reflector import WatchPosition

log = logging.getLogger(__name__)

POLL = 0.05  # seconds between looks at a watch's progress
SETTLE = 0.3  # seconds a busy kind's own watch is given to pass the target before a probe


Positions = Callable[[str], WatchPosition]


class Freshness:
    def __init__(
        self,
        api: client.ApiClient,
        cache: ClusterCache,
        positions: Positions,
        *,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        kinds: Sequence[Watched] = WATCHED,
    ) -> None:
        self.api = pooled_client(api, len(kinds) + 2, timeouts)
        self.cache = cache
        self.positions = positions
        self.timeouts = timeouts
        self.kinds = tuple(kinds)
        self._executor = ThreadPoolExecutor(len(kinds), thread_name_prefix="freshness")
        self.established = 0  # how many times the cache was shown current
        self.failing: str | None = None  # why the last attempt failed (None: it did not)
        self.failed_at = 0.0  # when (monotonic)

    async def establish(self, timeout: float) -> float:
        """Wait until the cache holds everything the API server held when this was called;
        returns that moment (monotonic). CacheBehindError when that cannot be shown within
        `timeout` seconds (a watch failing or relisting, a probe without an answer)."""
        try:
            started = await self._establish(timeout)
        except KubeError as err:
            self.failing, self.failed_at = str(err)[:300], time.monotonic()
            raise
        self.failing = None
        return started

    async def _establish(self, timeout: float) -> float:
        started = time.monotonic()
        deadline = started + timeout
        await self.cache.wait_ready(timeout)
        await self.cache.sweep(self.api, catch_up=max(0.0, deadline - time.monotonic()))
        loop = asyncio.get_running_loop()
        verdicts = await asyncio.gather(
            *(loop.run_in_executor(self._executor, self._kind, w, deadline) for w in self.kinds)
        )
        unproven = {w.kind: why for w, why in zip(self.kinds, verdicts, strict=True) if why}
        if unproven:
            log.info("the watch cache could not be shown current (%s); verifying it", unproven)
            self.cache.mark_suspect(f"not shown current: {unproven}")
            await self.cache.sweep(self.api, catch_up=max(0.0, deadline - time.monotonic()))
        if not self.cache.ready():
            raise CacheBehindError(
                f"the watches of {', '.join(self.cache.unsynced())} failed or relisted while the "
                "cache was being shown current; not acting"
            )
        self.established += 1
        log.debug("the watch cache is current (%.2fs)", time.monotonic() - started)
        return started

    def recent_failure(self, within: float) -> str | None:
        """Why the last attempt failed, if it failed within the last `within` seconds and none
        succeeded since."""
        if self.failing is None or time.monotonic() - self.failed_at > within:
            return None
        return self.failing

    def _kind(self, watched: Watched, deadline: float) -> str:
        """Show one kind current ("" when shown; else why not)."""
        before = self.positions(watched.kind)
        try:
            target = version_number(current_version(self.api, watched.path))
        except KubeError as err:
            raise CacheBehindError(f"{watched.kind}: {err}") from None
        if target is None:
            return "resourceVersions are not numbers"
        if self._reached(watched.kind, target, min(deadline, time.monotonic() + SETTLE)):
            return self._same_listing(watched.kind, before)
        since = self.positions(watched.kind).version
        if since is None:
            return "relisting"
        try:
            seen = probe(self.api, watched.path, since, target, self.timeouts)
        except KubeError as err:
            raise CacheBehindError(f"{watched.kind}: {err}") from None
        if seen.gone:
            return "its watch's version expired"
        if not seen.reached:
            return "no bookmark from the API server"
        if seen.changed is not None and not self._reached(watched.kind, seen.changed, deadline):
            return f"its watch did not deliver version {seen.changed} in time"
        return self._same_listing(watched.kind, before)

    def _reached(self, kind: str, version: int, until: float) -> bool:
        while True:
            seen = version_number(self.positions(kind).version or "")
            if seen is not None and seen >= version:
                return True
            if time.monotonic() >= until:
                return False
            time.sleep(POLL)

    def _same_listing(self, kind: str, before: WatchPosition) -> str:
        if self.positions(kind).listings != before.listings or kind not in self.cache.synced:
            return "it relisted meanwhile"
        return ""

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
