"""Leader election: the loop that reads, acquires and renews the Lease (rules:
respread.runtime.leadership).

Every replica watches and keeps its cache warm; only the one whose `leading` is true scans
(writes statuses, posts events, evicts). `leading` is computed from the clock: it turns false
by itself `renew_deadline` after the last successful renewal was sent, whether or not the loop
gets to run, so a leader cut off from the API server stops acting before any other candidate
may take the Lease over (the lease duration, counted from when that candidate saw the last
renewal).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from kubernetes import client

from respread.core.timestamps import format_rfc3339
from respread.kube.lease import read_lease, write_lease
from respread.runtime import metrics
from respread.runtime.leadership import (
    Action,
    LeaseTiming,
    Observation,
    decide,
    leading_until,
    lease_spec,
    observe,
    parse_lease,
    released,
)

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE = "respread-system"


def default_identity() -> str:
    """The pod's name (POD_NAME, from the downward API), else hostname_pid."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}_{os.getpid()}"


def default_namespace(path: Path = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """The pod's namespace (from its service account), else respread-system."""
    try:
        return path.read_text().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


Callback = Callable[[bool], Awaitable[None]]


class LeaderElector:
    def __init__(
        self,
        api: client.ApiClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        timing: LeaseTiming,
        on_change: Callback | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.timing = timing
        self.on_change = on_change
        self.on_error = on_error
        self.holder = ""  # as last read
        self.last_attempt = time.monotonic()  # liveness: the loop is turning
        self._valid_until = 0.0  # monotonic
        self._observed: Observation | None = None
        self._was_leading = False
        self._wake = asyncio.Event()
        self._stopped = False

    @property
    def leading(self) -> bool:
        return time.monotonic() < self._valid_until

    @property
    def where(self) -> str:
        return f"Lease {self.namespace}/{self.name}"

    async def run(self) -> None:
        log.info("leader election: %s, identity %s", self.where, self.identity)
        metrics.LEADER.set(0)
        while not self._stopped:
            await self.attempt()
            await self._notice()
            delay = self.timing.retry_period
            if self.leading:  # wake up in time to notice a lapse
                delay = min(delay, max(0.05, self._valid_until - time.monotonic()))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)
            await self._notice()

    async def attempt(self) -> None:
        """Read the Lease and act on it once; errors leave `leading` to lapse on its own."""
        sent = time.monotonic()
        timeout = self.timing.retry_period + 1
        try:
            current = await asyncio.to_thread(
                read_lease, self.api, self.namespace, self.name, timeout
            )
            record = parse_lease(current.spec) if current is not None else None
            self._observed = observe(self._observed, record, time.monotonic())
            decision = decide(
                self._observed,
                identity=self.identity,
                now=time.monotonic(),
                timestamp=format_rfc3339(time.time(), micro=True),
                timing=self.timing,
            )
            if decision.action is Action.FOLLOW:
                self.holder = decision.holder
                self._valid_until = 0.0  # someone else holds it: whatever I thought, I follow
                return
            assert decision.write is not None
            won = await asyncio.to_thread(
                write_lease,
                self.api,
                self.namespace,
                self.name,
                lease_spec(decision.write),
                resource_version=current.resource_version if current is not None else None,
                timeout=timeout,
            )
        except Exception as err:
            if self.on_error is not None:
                self.on_error(err)
            if self.leading:
                log.warning("could not renew %s (%s); still leading for %.1fs",
                            self.where, err, self._valid_until - time.monotonic())  # fmt: skip
            else:
                log.debug("leader election: %s", err)
            return
        finally:
            self.last_attempt = time.monotonic()
        if not won:
            log.info("%s: another candidate wrote it first (409 Conflict); following", self.where)
            self._valid_until = 0.0
            self._observed = None
            return
        self.holder = self.identity
        self._observed = Observation(decision.write, time.monotonic())
        self._valid_until = leading_until(sent, self.timing)
        late = time.monotonic() - self._valid_until
        if late >= 0:  # the answer came after the renew deadline (a pause, a stalled request)
            log.warning("%s wrote %s, but the answer came %.1fs after the renew deadline: "
                        "not leading on it", self.identity, self.where, late)  # fmt: skip
        elif decision.action is Action.ACQUIRE:
            log.info("acquired %s: %s", self.where, decision.reason)

    async def _notice(self) -> None:
        leading = self.leading
        if leading == self._was_leading:
            return
        self._was_leading = leading
        metrics.LEADER.set(1 if leading else 0)
        if leading:
            log.info("%s leads (%s): scanning", self.identity, self.where)
        else:
            log.warning("%s stopped leading (%s): no more scans", self.identity, self.lapse())
        if self.on_change is not None:
            await self.on_change(leading)

    def lapse(self) -> str:
        """Why this replica no longer leads, as far as it knows. A leader whose renewals
        lapsed (cut off from the API server, or its process paused past the Lease) has not read
        the Lease since: it names nobody as the holder, least of all itself."""
        if self._stopped:
            return f"{self.where} given up"
        if self.holder and self.holder != self.identity:
            return f"{self.where} now held by {self.holder}"
        renewed = self._valid_until - self.timing.renew_deadline
        ago = time.monotonic() - renewed if self._valid_until else None
        since = f", last renewed {ago:.1f}s ago" if ago is not None else ""
        return f"{self.where} not renewed within the renew deadline{since}"

    async def stop(self) -> None:
        """Stop leading and release the Lease (an empty holder), so that another replica can
        take over at once rather than after the lease duration."""
        self._stopped = True
        self._wake.set()
        was_leading = self.leading
        self._valid_until = 0.0
        await self._notice()
        if not was_leading:
            return
        try:
            current = await asyncio.to_thread(
                read_lease, self.api, self.namespace, self.name, self.timing.retry_period + 1
            )
            if current is None:
                return
            record = released(
                parse_lease(current.spec), self.identity, format_rfc3339(time.time(), micro=True)
            )
            if record is None:
                return
            if await asyncio.to_thread(
                write_lease,
                self.api,
                self.namespace,
                self.name,
                lease_spec(record),
                resource_version=current.resource_version,
                timeout=self.timing.retry_period + 1,
            ):
                log.info("released %s", self.where)
        except Exception as err:
            log.warning("could not release %s: %s", self.where, err)
