"""Leader election on a coordination.k8s.io/v1 Lease: the decisions, without the I/O.

The rules are client-go's (k8s.io/client-go/tools/leaderelection):

- A candidate reads the Lease. Nobody holds it (no Lease, or an empty holderIdentity, as a
  leader leaves it when it shuts down cleanly): acquire it.
- I hold it: renew it (a new renewTime).
- Someone else holds it: follow, until the record has stayed *unchanged* for its
  leaseDurationSeconds as measured on my own clock since I first saw it (the observed time, not
  the renewTime written by another machine, so clock skew between nodes does not matter); then
  it has expired and I take it over.
- Every write is a create or a replace carrying the resourceVersion that was read, so of two
  candidates racing for an expired Lease the API server lets exactly one win (the other gets
  409 Conflict and follows).
- A leader that has not renewed successfully within its renew deadline stops acting. The renew
  deadline is shorter than the lease duration, so it stops before anyone else may acquire.

`decide` says what to do with the Lease as read; `LeaseTiming` holds the three durations.
Times given to `decide` are the candidate's local clock (monotonic is best); timestamps written
into the Lease are RFC 3339 strings the caller makes from its wall clock
(`respread.core.timestamps.format_rfc3339(..., micro=True)`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any


class LeadershipError(ValueError):
    """Inconsistent election timings."""


@dataclass(frozen=True, slots=True)
class LeaseTiming:
    """client-go's LeaseDuration, RenewDeadline and RetryPeriod (15 s, 10 s and 2 s there)."""

    duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.duration:
            raise LeadershipError(
                "leader election needs 0 < retry period < renew deadline < lease duration, got "
                f"{self.retry_period:g}s, {self.renew_deadline:g}s and {self.duration:g}s"
            )
        if self.duration < 1:
            raise LeadershipError(f"the lease duration must be at least 1s, got {self.duration:g}s")

    @classmethod
    def for_duration(cls, duration: float) -> LeaseTiming:
        """client-go's proportions (15 : 10 : 2) scaled to `duration`."""
        return cls(duration, duration * 2 / 3, duration * 2 / 15)

    @property
    def seconds(self) -> int:
        """leaseDurationSeconds as written (whole seconds, rounded up)."""
        whole = int(self.duration)
        return whole if whole == self.duration else whole + 1


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The fields of a Lease's spec that leader election uses."""

    holder: str = ""  # "" = nobody
    duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0


@dataclass(frozen=True, slots=True)
class Observation:
    """A Lease record, and when (on my clock) I first saw it as it is."""

    record: LeaseRecord
    since: float


class Action(StrEnum):
    ACQUIRE = "Acquire"  # write myself in as the holder
    RENEW = "Renew"  # I hold it: write a new renewTime
    FOLLOW = "Follow"  # someone else holds it: write nothing


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    write: LeaseRecord | None  # the spec to write; None when following
    holder: str  # who holds the Lease if the write succeeds (or as read, when following)
    reason: str


def observe(
    previous: Observation | None, record: LeaseRecord | None, now: float
) -> Observation | None:
    """Keep the time the record was first seen while it stays the same."""
    if record is None:
        return None
    if previous is not None and previous.record == record:
        return previous
    return Observation(record, now)


def decide(
    observed: Observation | None,
    *,
    identity: str,
    now: float,
    timestamp: str,
    timing: LeaseTiming,
) -> Decision:
    """What a candidate does with the Lease it has just read (None: there is no Lease)."""
    if not identity:
        raise LeadershipError("a leader election identity must not be empty")
    if observed is None:
        return Decision(
            Action.ACQUIRE,
            LeaseRecord(identity, timing.seconds, timestamp, timestamp, 0),
            identity,
            "there is no Lease yet",
        )
    record = observed.record
    if record.holder == identity:
        return Decision(
            Action.RENEW,
            replace(
                record,
                duration_seconds=timing.seconds,
                acquire_time=record.acquire_time or timestamp,
                renew_time=timestamp,
            ),
            identity,
            "I hold the Lease",
        )
    taken_over = LeaseRecord(identity, timing.seconds, timestamp, timestamp, record.transitions + 1)
    if not record.holder:
        return Decision(Action.ACQUIRE, taken_over, identity, "nobody holds the Lease")
    lasts = record.duration_seconds if record.duration_seconds > 0 else timing.seconds
    left = observed.since + lasts - now
    if left > 0:
        return Decision(
            Action.FOLLOW,
            None,
            record.holder,
            f"{record.holder} holds the Lease (it expires in {left:.1f}s unless renewed)",
        )
    return Decision(
        Action.ACQUIRE,
        taken_over,
        identity,
        f"the Lease of {record.holder} expired: unchanged for {now - observed.since:.1f}s "
        f"(leaseDurationSeconds {lasts})",
    )


def released(record: LeaseRecord, identity: str, timestamp: str) -> LeaseRecord | None:
    """The record a leader writes when it stops cleanly, so that another may take over at once;
    None if `identity` does not hold it (nothing to release)."""
    if record.holder != identity:
        return None
    return replace(record, holder="", duration_seconds=1, renew_time=timestamp)


def leading_until(renewed_at: float, timing: LeaseTiming) -> float:
    """Until when a leader whose last successful renewal was *sent* at `renewed_at` may act."""
    return renewed_at + timing.renew_deadline


# ---- the Lease object ----------------------------------------------------------------------


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def parse_lease(spec: Mapping[str, Any] | None) -> LeaseRecord:
    """A Lease's spec (as the API server returns it) as a LeaseRecord; missing fields are
    empty, as client-go reads them."""
    spec = spec or {}
    return LeaseRecord(
        holder=_str(spec.get("holderIdentity")) or "",
        duration_seconds=_int(spec.get("leaseDurationSeconds")),
        acquire_time=_str(spec.get("acquireTime")),
        renew_time=_str(spec.get("renewTime")),
        transitions=_int(spec.get("leaseTransitions")),
    )


def lease_spec(record: LeaseRecord) -> dict[str, Any]:
    """The spec to write for `record`."""
    spec: dict[str, Any] = {
        "holderIdentity": record.holder,
        "leaseDurationSeconds": record.duration_seconds,
        "leaseTransitions": record.transitions,
    }
    if record.acquire_time is not None:
        spec["acquireTime"] = record.acquire_time
    if record.renew_time is not None:
        spec["renewTime"] = record.renew_time
    return spec
