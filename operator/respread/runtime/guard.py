"""What a scan must check before each thing it does: that it is within its deadline, that the
process was not paused since it planned, that every watch is still current, that its plan is not
too old, and that this replica still leads (runtime.acting).

A ScanGuard is made when the scan starts; `planned()` marks the moment its plan was made from
the cache. `check()` raises Halt (or NotLeadingError) when something says the scan must stop
acting; `refusal()` says the same as text, for a worker thread to ask right before it sends a
request. The scan's requests are bound by `deadline` (kube.client.Deadline) as well: past it,
none is sent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from respread.kube.client import Deadline, DeadlineExceededError
from respread.remedies.evict.premises import plan_expired
from respread.report.health import HEALTHY, Verdict
from respread.runtime.acting import Acting, NotLeadingError, always
from respread.runtime.cache import CacheBehindError, ClusterCache
from respread.runtime.heartbeat import Heartbeat


@dataclass(frozen=True, slots=True)
class ScanLimits:
    """Seconds: how long a scan may take, how old a plan may be acted on, and how long a scan
    waits for the watch cache to be shown current."""

    deadline: float = 120.0
    plan_age: float = 60.0
    catch_up: float = 30.0


DEFAULT_LIMITS = ScanLimits()


class HaltReason(StrEnum):
    DEADLINE = "DeadlineExceeded"  # the scan passed its deadline
    STALE = "CacheStale"  # a watch failed, or the cache could not be shown current
    PAUSED = "ProcessPaused"  # the process was paused since the plan was made
    EXPIRED = "PlanExpired"  # the plan is older than it may be acted on
    CHANGED = "ClusterChanged"  # what a move depends on changed since the plan
    NO_ANSWER = "NoAnswer"  # the API server did not answer a request that changes something

    @property
    def replan(self) -> bool:
        """Whether the policy is scanned again at once (a fresh plan may act)."""
        return self in (HaltReason.PAUSED, HaltReason.EXPIRED, HaltReason.CHANGED)

    @property
    def stale(self) -> bool:
        """Whether the scan could not trust its picture of the cluster."""
        return self in (
            HaltReason.STALE,
            HaltReason.PAUSED,
            HaltReason.EXPIRED,
            HaltReason.NO_ANSWER,
        )


class Halt(Exception):  # noqa: N818 (a stop, not an error: the scan reports it and goes on)
    """The scan stops acting: why, in words the status can carry."""

    def __init__(self, reason: HaltReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class ScanGuard:
    def __init__(
        self,
        limits: ScanLimits,
        cache: ClusterCache,
        heartbeat: Heartbeat | None = None,
        acting: Acting = always,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits
        self.cache = cache
        self.heartbeat = heartbeat
        self.acting = acting
        self.clock = clock
        self.started = clock()
        self.deadline = Deadline(self.started + limits.deadline)
        self.planned_at = self.started
        self.planned_wall = time.time()  # the same moment, on the wall clock (for audits)
        self.pauses = heartbeat.pauses if heartbeat is not None else 0
        self.replan = False  # set when the scan stopped so that a fresh plan may act at once

    def planned(self) -> None:
        """The plan is being made from the cache now: Halt if the process was paused since the
        scan began (what the cache was shown to hold may be old; the policy is planned again,
        from a verified cache)."""
        if self.heartbeat is not None and self.heartbeat.paused_since(self.pauses):
            self.replan = True
            raise Halt(
                HaltReason.PAUSED,
                "the process was paused during the scan: the watch cache is verified and the "
                "policy planned again",
            )
        self.planned_at = self.clock()
        self.planned_wall = time.time()

    def left(self) -> float:
        return self.started + self.limits.deadline - self.clock()

    def why_not(self) -> Halt | None:
        """What forbids acting now (None: nothing does). Leadership is `check`'s."""
        now = self.clock()
        if now - self.started > self.limits.deadline:
            return Halt(
                HaltReason.DEADLINE,
                f"the scan passed its deadline ({self.limits.deadline:.0f}s)",
            )
        if self.heartbeat is not None and self.heartbeat.paused_since(self.pauses):
            return Halt(
                HaltReason.PAUSED,
                "the process was paused since the plan was made: the watch cache is verified "
                "and the policy planned again",
            )
        failing = sorted(self.cache.failing)
        if failing or not self.cache.ready():
            kinds = failing or self.cache.unsynced()
            return Halt(
                HaltReason.STALE,
                f"the watches of {', '.join(kinds)} are failing or relisting",
            )
        expired = plan_expired(self.planned_at, now, self.limits.plan_age)
        if expired:
            return Halt(HaltReason.EXPIRED, expired)
        return None

    def check(self) -> None:
        if not self.acting():
            raise NotLeadingError("this replica no longer leads")
        halt = self.why_not()
        if halt is not None:
            raise halt

    def refusal(self) -> str:
        """Why a request that changes something must not be sent now ("": it may)."""
        if not self.acting():
            return "this replica no longer leads"
        halt = self.why_not()
        return halt.message if halt is not None else ""

    def close(self) -> None:
        """The scan is over (or only reports now): its deadline binds nothing more."""
        self.deadline.close()


def halt_verdict(halt: Halt | None) -> Verdict:
    """What the status says about a scan that stopped acting (HEALTHY: it did not, or it stopped
    only so that a fresh plan may act at once)."""
    if halt is None or halt.reason is HaltReason.CHANGED:
        return HEALTHY
    if halt.reason is HaltReason.DEADLINE:
        return Verdict(stalled=halt.message)
    return Verdict(stale=halt.message)


def failure_verdict(err: Exception, guard: ScanGuard) -> Verdict:
    """What the status says about a scan that failed with `err`: past its deadline (stalled),
    on a cache not known to be current (stale), or neither. A scan halted so that a fresh plan
    may act (a pause) is planned again at once."""
    if isinstance(err, Halt) and err.reason.replan:
        guard.replan = True
    if isinstance(err, DeadlineExceededError) or guard.left() <= 0:
        deadline = guard.limits.deadline
        return Verdict(stalled=f"the scan passed its deadline ({deadline:.0f}s): {err}")
    if isinstance(err, CacheBehindError | Halt):
        return Verdict(stale=str(err))
    return HEALTHY
