"""The victims a surge removes never make another workload's spread worse when a choice as good
for the workload itself that harms no one exists (surge.choose_victims with surge_others'
judge), at Marking (from the real placement) and when planning (from the predicted one) alike.

web spreads over zones (maxSkew 1). Zone a has two nodes, a1 and a2; b and c one each. The
nodes also carry a rack, and watch spreads over racks (maxSkew 1) with a selector that counts
web's pods too (app In [web, watch]), or only its own. The surge (6 -> 8) put its two new pods,
the newest, in zones b and c: two of zone a's four must go. For web's own constraint any two of
them are as good; the racks decide.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from respread.analysis.groups import analyze
from respread.core.annotations import SURGE_STATE
from respread.inputs.objects import load_documents
from respread.remedies.surge.advance import ActionKind, next_operation, operations
from respread.remedies.surge.operation import Phase
from respread.remedies.surge.others import judge_others
from respread.remedies.surge.victims import _count_vectors
from tests.unit.remedies.surge.test_others import watch_pod
from tests.unit.remedies.surge.test_plan import NOW, SURGING, WEB, cluster, policy_with, run

BOTH = ["web", "watch"]


def docs_for(
    web: list[str], racks: dict[str, str], watch: list[str], apps: list[str], **kw: Any
) -> list[dict[str, Any]]:
    """web's pods on the nodes named (n-<name>, oldest first), all Ready; the nodes' zone is
    their name's first letter, their rack from ``racks``; watch's pods on the ``watch`` nodes."""
    docs = cluster([(n, "Ready") for n in web], zones=tuple(racks), **kw)
    for d in docs:
        if d["kind"] == "Node":
            name = d["metadata"]["name"][2:]
            d["metadata"]["labels"] = {"zone": name[0], "rack": racks[name]}
    return docs + [watch_pod(i, f"n-{n}", apps) for i, n in enumerate(watch)]


def at_marking(docs: list[dict[str, Any]]) -> Any:
    state = load_documents([("t", d) for d in docs]).state
    analysis = analyze(state, policy_with())
    (f,) = operations(analysis, "default", NOW)
    return f.action


MARKING = {"replicas": 8, "annotations": {SURGE_STATE: SURGING.to_json()}}
# a1 holds 3 of web's pods, a2 1: the greedy choice takes both victims from a1
UNEVEN = ["a1", "a1", "a1", "a2", "b", "c", "b", "c"]
SPLIT_RACKS = {"a1": "r1", "a2": "r2", "b": "r1", "c": "r2"}  # before: r1 4, r2 2 + 2 watch
ZONE_RACKS = {"a1": "r1", "a2": "r1", "b": "r2", "c": "r2"}  # before: r1 4, r2 2 + 2 watch


@pytest.mark.parametrize(
    ("racks", "watch", "apps", "kind", "nodes", "reason"),
    [
        # watch counts only its own pods: web's own constraint alone decides (a1 has most)
        (SPLIT_RACKS, ["c", "c"], ["watch"], ActionKind.MARK_AND_SCALE_BACK, ["a1", "a1"], ""),
        # both from a1 would leave racks 3 / 5 (skew 2): one from each keeps them 4 / 4
        (SPLIT_RACKS, ["c", "c"], BOTH, ActionKind.MARK_AND_SCALE_BACK, ["a1", "a2"], ""),
        # any pod of zone a leaves rack r1: every choice that fixes web's skew takes watch from
        # balanced to skew 4, so the surge is rolled back, removing its own (newest) pods
        (ZONE_RACKS, ["b", "b"], BOTH, ActionKind.ROLLBACK, ["b", "c"], "watch-rs"),
        # watch already violated before the surge (r2 2 + 4 = 6 against r1 4): removing from
        # zone a raises its skew from 2 to 4; removing the new pods leaves it at 2
        (ZONE_RACKS, ["b"] * 4, BOTH, ActionKind.ROLLBACK, ["b", "c"], "violated, from 2 to"),
        # watch violated the other way (r1 4 + 4 = 8 against r2 2): any choice lowers its skew
        (ZONE_RACKS, ["a1"] * 4, BOTH, ActionKind.MARK_AND_SCALE_BACK, ["a1", "a1"], ""),
    ],
)
def test_the_victims_at_marking_are_judged_on_other_workloads_too(
    racks: dict[str, str],
    watch: list[str],
    apps: list[str],
    kind: ActionKind,
    nodes: list[str],
    reason: str,
) -> None:
    action = at_marking(docs_for(UNEVEN, racks, watch, apps, **MARKING))
    assert action.kind is kind, action.reason
    assert sorted(v.pod.node_name for v in action.victims) == [f"n-{n}" for n in nodes]
    assert reason in action.reason
    if kind is ActionKind.ROLLBACK:  # the surge's own pods: web's 6 from before stay
        assert {v.pod.name for v in action.victims} == {"web-rs-7", "web-rs-8"}
        recorded = next_operation(SURGING, action)  # the reason the report and status show
        assert recorded is not None and recorded.phase is Phase.ROLLING_BACK
        assert reason in recorded.reason


def test_planning_chooses_the_same_harmless_victims() -> None:
    """Before the surge (a1 3, a2 1, b 1, c 1): the prediction lands in b and c, and picks one
    victim from each rack rather than skipping the surge."""
    docs = docs_for(UNEVEN[:6], SPLIT_RACKS, ["c", "c"], BOTH)
    _, _, surge = run(docs, policy_with())
    (p,) = surge.plans
    assert sorted(lnd.node for lnd in p.landings) == ["n-b", "n-c"]
    assert sorted(v.pod.node_name for v in p.victims) == ["n-a1", "n-a2"]
    alone = docs_for(UNEVEN[:6], SPLIT_RACKS, ["c", "c"], ["watch"])
    (p,) = run(alone, policy_with())[2].plans
    assert [v.pod.node_name for v in p.victims] == ["n-a1", "n-a1"]


@pytest.mark.parametrize(
    ("caps", "k", "limit", "expected"),
    [
        ([2, 1], 2, 10, [(1, 1), (2, 0)]),
        ([1, 1, 1], 2, 10, [(0, 1, 1), (1, 0, 1), (1, 1, 0)]),
        ([1], 2, 10, []),
        ([3, 3], 0, 10, [(0, 0)]),
        ([5, 5, 5], 3, 5, None),  # 10 ways, above the limit
    ],
)
def test_count_vectors(
    caps: list[int], k: int, limit: int, expected: list[tuple[int, ...]] | None
) -> None:
    found = _count_vectors(caps, k, limit)
    assert (sorted(found) if found is not None else None) == expected


def _misplaced(docs: list[dict[str, Any]], without: set[str]) -> int:
    """web's misplaced pods once the pods named are gone, by a fresh analysis."""
    kept = [d for d in docs if d["metadata"]["name"] not in without]
    analysis = analyze(load_documents([("t", d) for d in kept]).state, policy_with())
    return sum(g.violating for g in analysis.groups if g.workload == WEB)


NODES = ["a1", "a2", "b", "c"]


@settings(max_examples=15, deadline=None)
@example(web=UNEVEN[:6], watch=["c", "c"], racks=SPLIT_RACKS)  # the greedy pair harms
# b 5, c 3, zone a empty: one pod at a time takes two from b (6 misplaced), each removal as
# good alone as one from c; two from c leave c at 1, placed, and only b's 5 misplaced
@example(web=["b", "b", "b", "b", "c", "c"], watch=[], racks=SPLIT_RACKS)
@given(
    web=st.lists(st.sampled_from(NODES), min_size=6, max_size=6),
    watch=st.lists(st.sampled_from(NODES), max_size=5),
    racks=st.sampled_from([SPLIT_RACKS, ZONE_RACKS]),
)
def test_a_harmless_choice_as_good_as_any_is_never_passed_over(
    web: list[str], watch: list[str], racks: dict[str, str]
) -> None:
    """Against every pair of web's pods (brute force, a fresh analysis each): when some pair
    harms no group and leaves as few misplaced pods as the best pair, the surge scales back
    with a harmless pair; a scale-back never harms."""
    pods = [*web, "b", "c"]  # the surge's two new pods, the newest
    docs = docs_for(pods, racks, watch, BOTH, **MARKING)
    state = load_documents([("t", d) for d in docs]).state
    analysis = analyze(state, policy_with())
    (members,) = [m for m in analysis.members if m.workload == WEB]
    judge = judge_others(analysis, WEB, members.labels, arrived=["n-b", "n-c"])
    names = {f"web-rs-{i}": f"n-{n}" for i, n in enumerate(pods, 1)}
    pairs = [
        (_misplaced(docs, set(pair)), judge.harm(names[p] for p in pair) is None)
        for pair in itertools.combinations(sorted(names), 2)
    ]
    best = min(m for m, _ in pairs)
    action = at_marking(docs)
    if (best, True) in pairs:
        assert action.kind is ActionKind.MARK_AND_SCALE_BACK, action.reason
    if action.kind is ActionKind.MARK_AND_SCALE_BACK:
        assert judge.harm(v.pod.node_name or "" for v in action.victims) is None
        assert _misplaced(docs, {v.pod.name for v in action.victims}) == best or not any(
            ok for m, ok in pairs if m == best
        )
