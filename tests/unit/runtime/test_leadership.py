"""Leader election decisions (respread.runtime.leadership): client-go's rules, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from respread.runtime.leadership import (
    Action,
    LeadershipError,
    LeaseRecord,
    LeaseTiming,
    Observation,
    decide,
    leading_until,
    lease_spec,
    observe,
    parse_lease,
    released,
)
from tests.support.tables import cases

ME, OTHER = "respread-7d9-a", "respread-7d9-b"
TIMING = LeaseTiming(duration=15, renew_deadline=10, retry_period=2)
T0 = "2026-11-22T10:00:00.000000Z"
NOW_TS = "2026-11-22T10:00:20.000000Z"


def held(holder: str, transitions: int = 3, seconds: int = 15) -> LeaseRecord:
    return LeaseRecord(holder, seconds, T0, T0, transitions)


# (case, lease as observed (record, first seen at), now) -> (action, holder written, transitions)
CASES: list[tuple[str, Observation | None, float, Action, str | None, int | None]] = [
    ("no lease: create it, first holder", None, 100.0, Action.ACQUIRE, ME, 0),
    ("released (empty holder): take it at once", Observation(held(""), 99.0), 100.0,
     Action.ACQUIRE, ME, 4),
    ("mine: renew, same transitions", Observation(held(ME), 50.0), 100.0, Action.RENEW, ME, 3),
    ("mine even if it looks expired: renew", Observation(held(ME), 0.0), 100.0,
     Action.RENEW, ME, 3),
    ("another's, just seen: follow", Observation(held(OTHER), 100.0), 100.0,
     Action.FOLLOW, None, None),
    ("another's, unchanged 14.9s of 15: follow", Observation(held(OTHER), 85.1), 100.0,
     Action.FOLLOW, None, None),
    ("another's, unchanged 15s: expired, take over", Observation(held(OTHER), 85.0), 100.0,
     Action.ACQUIRE, ME, 4),
    ("another's with its own short duration 6s: expired after 6s",
     Observation(held(OTHER, seconds=6), 94.0), 100.0, Action.ACQUIRE, ME, 4),
    ("another's with duration 6s, 5s unchanged: follow",
     Observation(held(OTHER, seconds=6), 95.0), 100.0, Action.FOLLOW, None, None),
    ("another's without a duration: mine applies (15s)", Observation(held(OTHER, seconds=0), 90.0),
     100.0, Action.FOLLOW, None, None),
]  # fmt: skip


@cases(("observed", "now", "action", "holder", "transitions"), CASES)
def test_decide(
    observed: Observation | None,
    now: float,
    action: Action,
    holder: str | None,
    transitions: int | None,
) -> None:
    decision = decide(observed, identity=ME, now=now, timestamp=NOW_TS, timing=TIMING)
    assert decision.action is action, decision.reason
    if holder is None:
        assert decision.write is None
        assert observed is not None
        assert decision.holder == observed.record.holder
        return
    assert decision.write is not None
    assert (decision.write.holder, decision.write.transitions) == (holder, transitions)
    assert decision.write.renew_time == NOW_TS
    assert decision.write.duration_seconds == 15
    assert decision.holder == ME


def test_taking_over_restarts_acquire_time_and_renewing_keeps_it() -> None:
    renewed = decide(
        Observation(held(ME), 0.0), identity=ME, now=1.0, timestamp=NOW_TS, timing=TIMING
    )
    assert renewed.write is not None and renewed.write.acquire_time == T0
    taken = decide(
        Observation(held(OTHER), 0.0), identity=ME, now=99.0, timestamp=NOW_TS, timing=TIMING
    )
    assert taken.write is not None and taken.write.acquire_time == NOW_TS


def test_an_observation_keeps_its_time_while_the_record_is_unchanged() -> None:
    first = observe(None, held(OTHER), 10.0)
    assert first == Observation(held(OTHER), 10.0)
    assert observe(first, held(OTHER), 14.0) is first  # still the same record: time kept
    renewed = LeaseRecord(OTHER, 15, T0, "2026-11-22T10:00:02.000000Z", 3)
    assert observe(first, renewed, 14.0) == Observation(renewed, 14.0)  # renewed: clock restarts
    assert observe(first, None, 14.0) is None  # the Lease was deleted


def test_a_follower_takes_over_only_a_full_duration_after_the_last_renewal_it_saw() -> None:
    """Renewals every 2 s keep a follower following; once they stop, it takes over exactly one
    lease duration after it saw the last one, which is after the leader's renew deadline."""
    observed: Observation | None = None
    t, renewed_at = 0.0, 0.0
    for i in range(5):  # the leader renews at 0, 2, 4, 6, 8 (sent then, seen 0.1 s later)
        renewed_at = 2.0 * i
        record = LeaseRecord(OTHER, 15, T0, f"2026-11-22T10:00:{2 * i:02d}.000000Z", 0)
        observed = observe(observed, record, renewed_at + 0.1)
        t = renewed_at + 0.1
        assert decide(observed, identity=ME, now=t, timestamp=NOW_TS, timing=TIMING).action is (
            Action.FOLLOW
        )
    first_acquire = None
    while first_acquire is None:
        t += 0.5
        if decide(observed, identity=ME, now=t, timestamp=NOW_TS, timing=TIMING).action is (
            Action.ACQUIRE
        ):
            first_acquire = t
    assert first_acquire == pytest.approx(renewed_at + 0.1 + 15, abs=0.5)
    assert leading_until(renewed_at, TIMING) < first_acquire  # the old leader stopped first


def test_release_empties_the_holder_only_for_the_holder() -> None:
    assert released(held(ME), ME, NOW_TS) == LeaseRecord("", 1, T0, NOW_TS, 3)
    assert released(held(OTHER), ME, NOW_TS) is None
    assert released(held(""), ME, NOW_TS) is None


TIMINGS: list[tuple[tuple[float, float, float], bool]] = [
    ((15, 10, 2), True),
    ((6, 4, 0.8), True),
    ((15, 15, 2), False),  # the renew deadline must end before anyone may take over
    ((15, 20, 2), False),
    ((15, 10, 10), False),
    ((15, 10, 0), False),
    ((0.5, 0.3, 0.1), False),
]


@pytest.mark.parametrize(("durations", "valid"), TIMINGS, ids=[str(t[0]) for t in TIMINGS])
def test_timings_must_keep_the_renew_deadline_inside_the_lease(
    durations: tuple[float, float, float], valid: bool
) -> None:
    if valid:
        assert LeaseTiming(*durations).renew_deadline < LeaseTiming(*durations).duration
    else:
        with pytest.raises(LeadershipError):
            LeaseTiming(*durations)


def test_timings_for_a_duration_keep_client_go_proportions() -> None:
    timing = LeaseTiming.for_duration(6)
    assert (timing.duration, timing.renew_deadline, timing.retry_period) == pytest.approx(
        (6, 4, 0.8)
    )
    assert LeaseTiming.for_duration(6).seconds == 6
    assert LeaseTiming(7.5, 5, 1).seconds == 8  # rounded up: never shorter than configured


SPECS: list[tuple[dict[str, Any] | None, LeaseRecord]] = [
    (None, LeaseRecord()),
    ({}, LeaseRecord()),
    (
        {"holderIdentity": ME, "leaseDurationSeconds": 15, "acquireTime": T0,
         "renewTime": NOW_TS, "leaseTransitions": 2},
        LeaseRecord(ME, 15, T0, NOW_TS, 2),
    ),
    ({"holderIdentity": None, "leaseDurationSeconds": "15", "leaseTransitions": True},
     LeaseRecord()),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "record"), SPECS)
def test_parse_lease(spec: dict[str, Any] | None, record: LeaseRecord) -> None:
    assert parse_lease(spec) == record


def test_lease_spec_round_trips() -> None:
    record = LeaseRecord(ME, 15, T0, NOW_TS, 2)
    assert parse_lease(lease_spec(record)) == record
    assert "acquireTime" not in lease_spec(LeaseRecord(ME, 15))


def test_an_empty_identity_is_refused() -> None:
    with pytest.raises(LeadershipError):
        decide(None, identity="", now=0.0, timestamp=NOW_TS, timing=TIMING)
