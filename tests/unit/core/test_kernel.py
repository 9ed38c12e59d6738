"""The Filter kernel (respread.core.kernel) against the reference rule.

Two levels. The count state alone: a table changed pod by pod, cloned and undone, keeps its
minimum, maximum and every rule's verdict equal to the rule computed from scratch. And on
generated clusters: the tables of a pod's constraints, changed as other pods move (and moves
are undone), give every node the verdict of the reference transcription of the Filter
(test_filter_reference.reference_filter, spread-semantics.md 5.1) recomputed from scratch.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from respread.core.kernel import CountTable, DomainSpace, FilterStatus, SpreadRule
from respread.core.model import ClusterState, Pod
from respread.scheduling.spread import SpreadIndex, filter_node
from tests.unit.scheduling.test_filter_reference import reference_filter, states

DOMAINS = ("a", "b", "c", "d", "e")


def space_of(domains: tuple[str, ...]) -> DomainSpace:
    return DomainSpace({f"n-{d}": d for d in domains}, {d: (f"n-{d}",) for d in domains})


def reference_fails(
    counts: dict[str, int], domains: tuple[str, ...], r: SpreadRule, value: str, counted: bool
) -> bool:
    """Section 5, from scratch: the judged pod taken out first when it is counted."""
    counts = {d: counts.get(d, 0) for d in domains}
    if counted:
        counts[value] -= 1
    gmin = 0 if len(domains) < r.min_domains else min(counts.values())
    return counts.get(value, 0) + r.self_match - gmin > r.max_skew


# (op, domain): +1 / -1 a pod in a domain, "clone" (go on with a copy), "undo" the last change
ops = st.lists(
    st.tuples(st.sampled_from(["+", "-", "clone", "undo"]), st.sampled_from(DOMAINS)),
    max_size=40,
)
rules = st.builds(
    SpreadRule,
    constraint=st.just(0),
    key=st.just("zone"),
    max_skew=st.integers(0, 3),  # 0 is invalid in the API; it exercises a negative limit
    min_domains=st.integers(1, 6),
    self_match=st.integers(0, 1),
)


def _changed(table: CountTable, op: str, domain: str, undo: list[tuple[str, int]]) -> CountTable:
    """The table after one change: a clone (checked independent of the original), the undo of
    the last add, or an add of +1 or -1 (a -1 only where the domain has a pod)."""
    if op == "clone":
        twin = table.copy()
        before = dict(table.counts)
        twin.add(domain, +1)  # the clone is independent of the original
        assert table.counts == before
        twin.add(domain, -1)
        return twin
    if op == "undo":
        if undo:
            d, delta = undo.pop()
            table.add(d, -delta)
    elif op == "+" or table.get(domain) > 0:
        delta = 1 if op == "+" else -1
        table.add(domain, delta)
        undo.append((domain, delta))
    return table


@given(
    st.integers(1, len(DOMAINS)),
    st.lists(st.integers(0, 4), min_size=len(DOMAINS), max_size=len(DOMAINS)),
    ops,
    st.lists(rules, min_size=1, max_size=3),
    st.booleans(),
)
def test_the_count_state_follows_adds_removes_clones_and_undos(
    size: int,
    start: list[int],
    changes: list[tuple[str, str]],
    judged: list[SpreadRule],
    ask_early: bool,
) -> None:
    domains = DOMAINS[:size]
    table = CountTable(
        space_of(domains), {d: n for d, n in zip(domains, start[:size], strict=True) if n}
    )
    if ask_early:  # the extremes found by a scan before the changes, then kept through them
        table.max_count()
    undo: list[tuple[str, int]] = []
    for op, domain in changes:
        if domain not in domains:
            continue
        table = _changed(table, op, domain, undo)
        values = [table.get(d) for d in domains]
        assert table.raw_min() == min(values)
        assert table.max_count() == max(values)
        for r in judged:
            assert table.global_min(r.min_domains) == (0 if size < r.min_domains else min(values))
            ceilings = r.ceilings(table)
            assert (ceilings.global_min, ceilings.uncounted, ceilings.counted) == (
                table.global_min(r.min_domains),
                r.ceiling(table),
                r.ceiling(table, counted=True),
            )
            gmin = 0 if size < r.min_domains else min(values)
            assert ceilings.admits_empty() is (0 + r.self_match - gmin <= r.max_skew)
            for value in domains:
                assert (value in ceilings.crowded()) is (
                    table.get(value) > 0 and reference_fails(table.counts, domains, r, value, False)
                )
                for counted in (False, True) if table.get(value) else (False,):
                    want = reference_fails(table.counts, domains, r, value, counted)
                    assert r.fails(table, value, counted) is want
                    verdict = r.verdict(table, value, counted)
                    assert verdict.ok is not want
    assert all(n > 0 for n in table.counts.values())  # sparse: no zeros listed


@pytest.mark.parametrize(
    ("counts", "max_skew", "self_match", "value", "counted", "fails"),
    [
        # zone a holds 3, b 1: placing one more in a gives 3 + 1 - 1 = 3 > 1
        ({"a": 3, "b": 1}, 1, 1, "a", False, True),
        ({"a": 3, "b": 1}, 1, 1, "b", False, False),
        # the same pod already in a, judged again: 2 + 1 - 1 = 2 > 1
        ({"a": 3, "b": 1}, 1, 1, "a", True, True),
        ({"a": 2, "b": 1}, 1, 1, "a", True, False),
        # counted in the only minimum domain: the minimum falls with it (0 + 1 - 0)
        ({"a": 1, "b": 1}, 1, 1, "a", True, False),
        # a selector that does not match the pod: no self-match
        ({"a": 2, "b": 0}, 1, 0, "a", False, True),
        ({"a": 1, "b": 0}, 1, 0, "a", False, False),
    ],
)
def test_rule_table(
    counts: dict[str, int], max_skew: int, self_match: int, value: str, counted: bool, fails: bool
) -> None:
    table = CountTable(space_of(("a", "b")), {d: n for d, n in counts.items() if n})
    r = SpreadRule(0, "zone", max_skew, 1, self_match)
    assert r.fails(table, value, counted) is fails
    assert r.fails(table, None) is True  # a node without the key: unresolvable
    assert r.verdict(table, None).status is FilterStatus.UNRESOLVABLE


def test_min_domains_unmet_makes_the_global_minimum_zero() -> None:
    table = CountTable(space_of(("a", "b")), {"a": 2, "b": 2})
    assert SpreadRule(0, "zone", 1, 3, 1).fails(table, "a") is True  # 2 + 1 - 0 > 1
    assert SpreadRule(0, "zone", 1, 2, 1).fails(table, "a") is False  # 2 + 1 - 2 <= 1


def _moved(pod: Pod, node: str | None) -> Pod:
    return replace(pod, node_name=node)


def _without(tables: list[CountTable], counted: list[bool], pod: Pod) -> list[CountTable]:
    """The tables with ``pod`` taken out of those that count it (copies; the others as they are)."""
    view = []
    for i, table in enumerate(tables):
        if counted[i]:
            assert pod.node_name is not None
            without = table.copy()
            without.add(table.space.node_domain[pod.node_name], -1)
            view.append(without)
        else:
            view.append(table)
    return view


@given(states(), st.data())
def test_kernel_tables_judge_like_the_reference_as_pods_move(
    state: ClusterState, data: st.DataObject
) -> None:
    incoming = data.draw(st.sampled_from(state.pods))
    index = SpreadIndex(state)
    profile = index.profile_of(incoming)
    tables = [t.copy() for t in index.tables(profile)]
    others = [p for p in state.pods if p is not incoming]
    names = [n.name for n in state.nodes]
    history: list[tuple[int, Pod, Pod]] = []

    def shift(pod: Pod, delta: int) -> None:
        for i, table in enumerate(tables):
            if index.is_counted(profile, i, pod):
                assert pod.node_name is not None
                table.add(table.space.node_domain[pod.node_name], delta)

    def check() -> None:
        expected = reference_filter(incoming, state.nodes, tuple(others))
        counted = [index.is_counted(profile, i, incoming) for i in range(len(tables))]
        for node in state.nodes:
            if node.name == incoming.node_name:
                # judged where it is: in the counts, taken out by the rule itself
                verdict = filter_node(profile, tuple(tables), node, tuple(counted))
            else:
                view = _without(tables, counted, incoming)
                verdict = filter_node(profile, tuple(view), node)
            assert verdict.status.value == expected[node.name], node.name

    check()
    steps = data.draw(st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)), max_size=6))
    for which, where in steps:
        if not others:
            break
        if where % 4 == 0 and history:  # undo the last move
            position, old, new = history.pop()
            shift(new, -1)
            shift(old, +1)
            others[position] = old
        else:
            position = which % len(others)
            old = others[position]
            new = _moved(old, names[where % len(names)])
            shift(old, -1)
            shift(new, +1)
            others[position] = new
            history.append((position, old, new))
        check()
