"""The indexes that keep matching linear (respread.core.selectors): taints looked up among a
spec's tolerations, and a requirement's values as a set, answer exactly as comparing each one
does (v1.Toleration.ToleratesTaint; labels.Requirement.Matches)."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from respread.core.model import (
    Effect,
    Labels,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    Op,
    Requirement,
    Taint,
    Toleration,
)
from respread.core.selectors import affinity_matches, tolerates, untolerated_taint

KEYS = st.sampled_from(["", "a", "b", "gpu"])
VALUES = st.sampled_from(["", "1", "2", "10", "-3", "x", "99999999999999999999"])
EFFECTS = st.sampled_from([Effect.NO_SCHEDULE, Effect.NO_EXECUTE, Effect.PREFER_NO_SCHEDULE])
tolerations = st.builds(
    Toleration,
    key=KEYS,
    operator=st.sampled_from(["", "Equal", "Exists", "Lt", "Gt", "Other"]),
    value=VALUES,
    effect=st.one_of(st.none(), EFFECTS),
)
taints = st.builds(Taint, key=KEYS.filter(bool), value=VALUES, effect=EFFECTS)


def compared_one_by_one(tols: tuple[Toleration, ...], marks: list[Taint]) -> Taint | None:
    hard = (Effect.NO_SCHEDULE, Effect.NO_EXECUTE)
    for taint in marks:
        if taint.effect in hard and not any(tolerates(t, taint) for t in tols):
            return taint
    return None


@given(st.lists(tolerations, min_size=9, max_size=40), st.lists(taints, max_size=12))
def test_indexed_tolerations_answer_as_each_compared(
    tols: list[Toleration], marks: list[Taint]
) -> None:
    assert untolerated_taint(tuple(tols), marks) == compared_one_by_one(tuple(tols), marks)


def test_six_thousand_taints_against_six_thousand_tolerations_is_linear() -> None:
    marks = tuple(Taint(f"k{i}", "v", Effect.NO_SCHEDULE) for i in range(6000))
    tols = tuple(Toleration(f"k{i}", "Equal", "v") for i in range(6000))
    started = time.perf_counter()
    for _ in range(10):
        assert untolerated_taint(tols, marks) is None
    assert time.perf_counter() - started < 2.0  # compared one by one: minutes


def test_an_in_of_100000_values_over_1000_nodes_is_linear() -> None:
    values = (*(f"v{i}" for i in range(100_000)), "z0")
    term = NodeSelectorTerm((Requirement("zone", Op.IN, values),))
    affinity = NodeAffinity(required_terms=(term,))
    nodes = [Node(f"n{i}", Labels({"zone": f"z{i % 3}"})) for i in range(1000)]
    started = time.perf_counter()
    matched = sum(affinity_matches(affinity, n) for n in nodes)
    assert matched == 334
    assert time.perf_counter() - started < 5.0  # checked value by value per node: a minute


@given(st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=6), st.sampled_from("abcdx"))
def test_value_sets_match_as_value_tuples(values: list[str], label: str) -> None:
    for op in (Op.IN, Op.NOT_IN):
        req = Requirement("k", op, tuple(values))
        assert req.value_set == frozenset(values)
        assert hash(req) == hash(Requirement("k", op, tuple(values)))
        assert req == Requirement("k", op, tuple(values))
