"""What a restarted (or newly elected) operator remembers: status.cooldowns written from the
memory, and the memory read back from a status (respread.report.status, runtime.memory)."""

from __future__ import annotations

from typing import Any

from respread.analysis.causes import Attribution, Cause
from respread.analysis.groups import WorkloadRef
from respread.core.timestamps import format_rfc3339
from respread.pipeline import Memory
from respread.remedies.evict.history import EvictionHistory
from respread.report.contract import cooldown_json
from respread.report.model import WorkloadHistory
from respread.report.status import COOLDOWNS_LIMIT, cooldowns_status
from respread.report.stored import parse_time, remembered
from respread.runtime.memory import PolicyMemory
from tests.support.constants import NOW_EPOCH as NOW
from tests.support.constants import ZONE
from tests.support.tables import cases

COOLDOWN = 600.0
WEB = WorkloadRef("shop", "Deployment", "web")


def entry(name: str, **fields: Any) -> dict[str, Any]:
    return {"namespace": "shop", "workload": {"kind": "Deployment", "name": name}, **fields}


# (case, history) -> kept in status.cooldowns?
KEPT: list[tuple[str, WorkloadHistory, bool]] = [
    ("in cooldown", WorkloadHistory("shop", "Deployment", "a", last_eviction=NOW - 599), True),
    ("cooldown over", WorkloadHistory("shop", "Deployment", "a", last_eviction=NOW - 600), False),
    ("effect still to review", WorkloadHistory("shop", "Deployment", "a",
     last_eviction=NOW - 3600, reviews=((ZONE, 3),)), True),
    ("backed off", WorkloadHistory("shop", "Deployment", "a", last_eviction=NOW - 3600,
     backoff_level=2, backoff_until=NOW + 60), True),
    ("back-off level kept after the back-off ends (it escalates next time)",
     WorkloadHistory("shop", "Deployment", "a", backoff_level=1, backoff_until=NOW - 1), True),
    ("nothing left", WorkloadHistory("shop", "Deployment", "a"), False),
]  # fmt: skip


@cases(("history", "kept"), KEPT)
def test_cooldowns_keep_only_what_still_matters(history: WorkloadHistory, kept: bool) -> None:
    assert bool(cooldowns_status([history], NOW, COOLDOWN)) is kept


def test_cooldowns_entries_are_readable_and_most_recent_first() -> None:
    out = [
        cooldown_json(c)
        for c in cooldowns_status(
            [
                WorkloadHistory("shop", "Deployment", "old", last_eviction=NOW - 300),
                WorkloadHistory(
                    "shop",
                    "Deployment",
                    "new",
                    last_eviction=NOW - 10,
                    reviews=((ZONE, 3),),
                    backoff_level=1,
                    backoff_until=NOW + 1200,
                ),
            ],
            NOW,
            COOLDOWN,
        )
    ]
    assert out == [
        entry(
            "new",
            backoffLevel=1,
            lastEvictionTime="2027-01-15T07:59:50Z",
            backoffUntil="2027-01-15T08:20:00Z",
            pendingReview=[{"topologyKey": ZONE, "skewAtEviction": 3}],
        ),
        entry("old", backoffLevel=0, lastEvictionTime="2027-01-15T07:55:00Z"),
    ]


def test_cooldowns_are_bounded() -> None:
    many = [
        WorkloadHistory("shop", "Deployment", f"w{i}", last_eviction=NOW - i * 0.1)
        for i in range(COOLDOWNS_LIMIT + 50)
    ]
    out = cooldowns_status(many, NOW, COOLDOWN)
    assert len(out) == COOLDOWNS_LIMIT
    assert out[0].workload.name == "w0"  # the most recent kept


def test_a_status_round_trips_through_memory() -> None:
    backed_off = EvictionHistory(backoff_level={WEB: 2}, backoff_until={WEB: NOW + 2400})
    memory = PolicyMemory(Memory(backed_off, holds=True))
    memory.record_eviction(WEB, ZONE, 3, NOW - 30)
    status = {
        "cooldowns": [cooldown_json(c) for c in cooldowns_status(memory.histories(), NOW, COOLDOWN)]
    }
    again = PolicyMemory.from_status(status)
    assert again.scan.evictions == EvictionHistory(
        last_eviction={WEB: NOW - 30},
        skew_at_eviction={(WEB, ZONE): 3},
        backoff_level={WEB: 2},
        backoff_until={WEB: NOW + 2400},
    )
    assert again.scan == memory.scan
    assert again.previous_status == status


def test_causes_and_since_are_read_back_from_the_violations() -> None:
    status = {
        "violations": [
            {
                "namespace": "shop",
                "workload": {"kind": "Deployment", "name": "web"},
                "topologyKey": ZONE,
                "cause": "ScaleDown",
                "causeMessage": "web scaled from 9 to 4 replicas",
                "since": "2027-01-15T07:00:00Z",
            }
        ]
    }
    memory = PolicyMemory.from_status(status)
    assert memory.scan.causes == {
        ("shop", "Deployment", "web", ZONE, ""): Attribution(
            Cause.SCALE_DOWN, "web scaled from 9 to 4 replicas"
        )
    }
    # `since` (and the conditions' transition times, and which violations already had their
    # Event) come from the previous status the next build_status is given.
    assert memory.previous_status == status


MALFORMED: list[tuple[str, dict[str, Any]]] = [
    ("not a list", {"cooldowns": "x", "violations": 3}),
    ("entries not mappings", {"cooldowns": [1, "a", None], "violations": [1, "a"]}),
    ("no workload", {"cooldowns": [{"namespace": "shop"}]}),
    ("workload without a name", {"cooldowns": [{"namespace": "shop", "workload": {"kind": "D"}}]}),
    ("violation without a workload", {"violations": [{"namespace": "shop", "topologyKey": ZONE}]}),
]


@cases("status", MALFORMED)
def test_malformed_entries_are_left_out(status: dict[str, Any]) -> None:
    assert remembered(status).causes == {}
    assert remembered(status).workloads == ()


def test_bad_times_and_levels_read_as_absent() -> None:
    (w,) = remembered(
        {
            "cooldowns": [
                entry(
                    "web",
                    lastEvictionTime="yesterday",
                    backoffLevel=-3,
                    backoffUntil=7,
                    pendingReview=[{"topologyKey": ZONE, "skewAtEviction": "3"}, "x"],
                )
            ]
        }
    ).workloads
    assert w == WorkloadHistory("shop", "Deployment", "web")


def test_no_status_no_memory() -> None:
    memory = PolicyMemory.from_status(None)
    assert memory == PolicyMemory()


def test_times_round_trip_in_whole_seconds() -> None:
    assert format_rfc3339(NOW) == "2027-01-15T08:00:00Z"
    assert parse_time("2027-01-15T08:00:00Z") == NOW
    assert parse_time("2027-01-15T08:00:00") == NOW  # no zone: UTC
    assert parse_time("not a time") is None
    assert parse_time(None) is None
