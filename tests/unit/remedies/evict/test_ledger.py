"""The eviction ledger's rules: cooldowns and maxPerWorkload per workload, whichever policy
evicted and whichever asks; what is written and what is dropped."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from respread.analysis.groups import WorkloadRef
from respread.remedies.evict.ledger import (
    KEY_LIMIT,
    Recorded,
    expired_keys,
    held_workloads,
    hold,
    key_of,
    parse_entries,
    render_entries,
    with_entry,
    without,
)

WEB = WorkloadRef("shop", "Deployment", "web")
NOW = 1_800_000_000.0


def entry(
    at: float, until: float | None = None, policy: str = "a", run: str = "a@1", pod: str = "p"
) -> Recorded:
    return Recorded(pod, f"uid-{pod}-{at}", policy, run, at, until if until is not None else at)


def by(policy: str, run: str, ago: float, cooldown: float) -> list[Recorded]:
    """One eviction by `policy`'s scan `run`, `ago` seconds ago, with its `cooldown`."""
    return [entry(NOW - ago, NOW - ago + cooldown, policy, run)]


HOLD_CASES = [
    ("nothing recorded", [], 600, 1, "a@2", ""),
    ("another policy evicted 10 s ago", by("b", "b@1", 10, 600), 600, 1, "a@2", "cooldown"),
    ("this policy's earlier scan", by("a", "a@1", 10, 600), 600, 1, "a@2", "cooldown"),
    ("a deleted and recreated policy", by("a", "a@old", 46, 600), 600, 1, "a@new", "cooldown"),
    ("past both cooldowns", by("b", "b@1", 700, 600), 600, 1, "a@2", ""),
    # The strictest cooldown wins: the evicting policy's (1 h) though the asker's is 1 min...
    ("the evicter's longer cooldown", by("b", "b@1", 120, 3600), 60, 1, "a@2", "cooldown"),
    # ...and the asker's (10 min) though the evicting policy's was 1 min.
    ("the asker's longer cooldown", by("b", "b@1", 120, 60), 600, 1, "a@2", "cooldown"),
    ("the same scan, within its cap", by("a", "a@2", 1, 600), 600, 2, "a@2", ""),
    ("the same scan, at its cap", by("a", "a@2", 1, 600), 600, 1, "a@2", "maxPerWorkload 1"),
    ("no cap", by("a", "a@2", 1, 600) * 3, 600, None, "a@2", ""),
]


@pytest.mark.parametrize(
    ("entries", "cooldown", "cap", "run", "expected"),
    [c[1:] for c in HOLD_CASES],
    ids=[c[0] for c in HOLD_CASES],
)
def test_which_evictions_hold_a_workload(
    entries: list[Recorded], cooldown: float, cap: int | None, run: str, expected: str
) -> None:
    why = hold(entries, now=NOW, cooldown=cooldown, max_per_workload=cap, run=run)
    assert why.startswith(expected) if expected else why == ""


def test_a_hold_names_the_policy_the_pod_and_how_long() -> None:
    why = hold(
        [entry(NOW - 46, NOW + 554, "blue", "blue@1", pod="web-1")],
        now=NOW,
        cooldown=600,
        max_per_workload=1,
        run="green@1",
    )
    assert why == "cooldown: RebalancePolicy blue evicted web-1 46s ago; held 555s more"


# Any order of scans, any number of policies with their own cooldowns and caps: recording each
# eviction when `hold` allows it never lets more than a cap's worth into any cooldown window.
scans = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=3600),  # when the scan acts
        st.sampled_from(["a", "b", "c"]),  # which policy
        st.integers(min_value=1, max_value=3),  # its maxPerWorkload
        st.sampled_from([60.0, 600.0]),  # its cooldown
        st.integers(min_value=1, max_value=4),  # evictions it would like
    ),
    max_size=25,
)


@given(scans)
def test_overlapping_policies_never_add_up_past_a_cap_within_a_cooldown(
    plan: list[tuple[float, str, int, float, int]],
) -> None:
    entries: tuple[Recorded, ...] = ()
    made: list[tuple[float, float, int]] = []  # (at, cooldown, cap) of each eviction made
    for n, (at, policy, cap, cooldown, wanted) in enumerate(sorted(plan)):
        run = f"{policy}@{n}"
        for i in range(wanted):
            if hold(entries, now=at, cooldown=cooldown, max_per_workload=cap, run=run):
                break
            new = Recorded(f"p{n}-{i}", f"u{n}-{i}", policy, run, at, at + cooldown)
            entries = with_entry(entries, new, now=at, keep=600.0)
            made.append((at, cooldown, cap))
    for at, cooldown, cap in made:
        window = [m for m in made if at <= m[0] < at + cooldown]
        assert len(window) <= cap, (at, cooldown, cap, made)


def test_entries_round_trip_and_what_cannot_be_read_is_left_out() -> None:
    entries = (entry(NOW - 5, NOW + 595, "a", "a@1", "web-1"), entry(NOW - 1, NOW + 59, "b"))
    raw = render_entries(entries)
    back = parse_entries(raw)
    assert [(e.pod, e.policy, e.run) for e in back] == [(e.pod, e.policy, e.run) for e in entries]
    assert all(
        abs(a.at - b.at) < 1e-3 and abs(a.until - b.until) < 1e-3
        for a, b in zip(back, entries, strict=True)
    )
    assert json.loads(raw)[0]["at"].endswith("Z")
    mixed = json.dumps([json.loads(raw)[0], {"pod": "x"}, "junk", {"at": "never"}])
    assert [e.pod for e in parse_entries(mixed)] == ["web-1"]
    assert parse_entries("{not json") == ()
    assert parse_entries(None) == ()


def test_writing_drops_what_holds_nobody_and_replaces_the_same_pod() -> None:
    old = entry(NOW - 1000, NOW - 400, "a", pod="old")
    recent = entry(NOW - 30, NOW + 570, "b", pod="recent")
    again = Recorded("recent", recent.uid, "a", "a@9", NOW, NOW + 600)
    kept = with_entry((old, recent), again, now=NOW, keep=600)
    assert kept == (again,)  # old: past every cooldown; recent: the same pod, recorded anew
    assert without(kept, recent.uid) == ()


def test_keys_whose_entries_hold_nobody_are_removed() -> None:
    data = {
        "a.Deployment.old": render_entries([entry(NOW - 1000, NOW - 400)]),
        "a.Deployment.new": render_entries([entry(NOW - 10, NOW + 590)]),
        "a.Deployment.junk": "???",
    }
    assert expired_keys(data, now=NOW, keep=600) == ["a.Deployment.junk", "a.Deployment.old"]


def test_keys_are_valid_configmap_keys_and_distinct() -> None:
    assert key_of(WEB) == "shop.Deployment.web"
    long = WorkloadRef("n" * 63, "StatefulSet", "x" * 253)
    other = WorkloadRef("n" * 63, "StatefulSet", "x" * 252 + "y")
    assert len(key_of(long)) <= KEY_LIMIT
    assert key_of(long) != key_of(other)


def test_the_planner_defers_the_workloads_earlier_scans_hold() -> None:
    api = WorkloadRef("shop", "Deployment", "api")
    data = {key_of(WEB): render_entries([entry(NOW - 10, NOW + 590, "b", "b@1")])}
    held = held_workloads(data, [WEB, api], now=NOW, cooldown=600, run="a@2")
    assert list(held) == [WEB]
    assert held[WEB].startswith("cooldown: RebalancePolicy b evicted")
