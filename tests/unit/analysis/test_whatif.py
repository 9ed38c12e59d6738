"""The what-if simulation (respread.analysis.whatif): working tables and positions that moves,
removals and additions change and undo exactly, and the misplaced pods judged on them with the
kernel's rule (the planner's SimCounts, the GroupChecks of the deletion-cost order and surge)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from respread.analysis.groups import Members, analyze, violating_nodes
from respread.analysis.tally import SimCounts, failing, fails
from respread.analysis.whatif import WorkingCounts
from respread.core.kernel import FilterStatus
from respread.core.model import ClusterState, OwnerRef
from respread.inputs.policy import DEFAULT_POLICY
from tests.support.builders import WEB, hard, node, pod, state
from tests.unit.scheduling.test_filter_reference import states


def owned(cluster: ClusterState) -> ClusterState:
    """Every pod owned by one ReplicaSet per app: grouped as a workload, and movable."""
    pods = tuple(replace(p, owner=OwnerRef("ReplicaSet", p.labels["app"])) for p in cluster.pods)
    return replace(cluster, pods=pods)


@given(states(), st.data())
def test_misplaced_pods_match_the_analysis_and_moves_undo_exactly(
    cluster: ClusterState, data: st.DataObject
) -> None:
    cluster = owned(cluster)
    analysis = analyze(cluster, DEFAULT_POLICY)
    counts = SimCounts(analysis, DEFAULT_POLICY.constraints.when_unsatisfiable)
    for g in analysis.groups:
        assert counts.violators(g.members, g.index) == g.violating
    if not analysis.members:
        return
    before = {m: (counts.tally(m), counts.stamp(m)) for m in analysis.members}
    working = [t for m in analysis.members for t in counts.tables(m.profile)]
    tables = {t: dict(t.counts) for t in working}
    names = [n.name for n in cluster.nodes]
    undo = []
    for _ in range(data.draw(st.integers(1, 4))):
        m = data.draw(st.sampled_from(analysis.members))
        here = [(n, p) for n, ps in counts.positions(m).items() for p in ps]
        if not here:
            continue
        source, moving = data.draw(st.sampled_from(here))
        target = data.draw(st.sampled_from(names))
        tabled = counts.tables_counting(moving)
        undo.append(counts.mark())
        counts.shift(tabled, source, -1)
        counts.shift(tabled, target, +1)
        counts.relocate(m, moving, source, target)
        for x in analysis.members:  # the cache follows the change
            judge = counts.judge(x)
            expected = sum(
                len(ps)
                for n, ps in counts.positions(x).items()
                if ps and fails(judge, counts.node_labels[n], n) is not None
            )
            assert counts.violators(x) == expected
    for mark in reversed(undo):
        counts.undo(mark)
    assert {t: dict(t.counts) for t in working} == tables
    for m in analysis.members:
        assert (counts.tally(m), counts.stamp(m)) == before[m]


def test_fails_and_failing_name_the_rules_and_verdict_explains_them() -> None:
    constraints = (hard("zone", WEB), hard("host", WEB))
    pods = [pod(f"p{i}", "a1", {"app": "web"}, constraints=constraints) for i in range(3)]
    pods = [replace(p, owner=OwnerRef("ReplicaSet", "web")) for p in pods]
    nodes = [node("a1", zone="za", host="a1"), node("b1", zone="zb", host="b1"), node("x1")]
    analysis = analyze(state(nodes, pods), DEFAULT_POLICY)
    counts = SimCounts(analysis, DEFAULT_POLICY.constraints.when_unsatisfiable)
    (m,) = analysis.members
    judge = counts.judge(m)
    labels = counts.node_labels
    assert fails(judge, labels["a1"], "a1") == (0, True)  # counted where they stand
    assert failing(judge, labels["a1"], "a1") == [0, 1]
    assert fails(judge, labels["b1"], "b1") is None  # where they would go: 0 + 1 - 0
    assert fails(judge, labels["x1"], "x1") == (0, False)  # no key
    verdict = counts.verdict(m, "a1", (0, True))
    assert verdict.status is FilterStatus.UNSCHEDULABLE
    assert verdict.reason == "zone za: 2 + 1 - 0 > maxSkew 1"
    assert counts.verdict(m, "x1", (0, False)).status is FilterStatus.UNRESOLVABLE
    assert counts.violators(m) == 3 and counts.violators(m, 1) == 3


@given(states(), st.data())
def test_group_checks_follow_pods_added_and_removed_and_undo_restores_everything(
    cluster: ClusterState, data: st.DataObject
) -> None:
    """WorkingCounts with GroupChecks (the deletion-cost order's and surge's judgement): after
    every pod removed or added, each check's misplaced pods equal analysis.violating_nodes on
    the positions as they stand; undone to a mark, the tables, positions and checks are as
    before."""
    cluster = owned(cluster)
    analysis = analyze(cluster, DEFAULT_POLICY)
    if not analysis.members:
        return
    counts = WorkingCounts(analysis)
    checks = [
        counts.check(m, i) for m in analysis.members for i in range(len(m.profile.constraints))
    ]
    working = dict.fromkeys(t for m in analysis.members for t in counts.tables(m.profile))

    def snapshot() -> tuple[object, ...]:
        return (
            [dict(t.counts) for t in working],
            [{n: list(p) for n, p in counts.positions(m).items() if p} for m in analysis.members],
            [c.misplaced() for c in checks],
        )

    before = snapshot()
    names = [n.name for n in cluster.nodes]
    marks = []
    for _ in range(data.draw(st.integers(1, 5))):
        m = data.draw(st.sampled_from(analysis.members))
        here = [(n, p) for n, ps in counts.positions(m).items() for p in ps]
        marks.append(counts.mark())
        if data.draw(st.booleans()) and here:
            node_name, pod_moved = data.draw(st.sampled_from(here))
            counts.remove_pod(pod_moved, node_name, m)
        else:
            template = next(iter(m.by_node.values()))[0]
            counts.add_pod(template, data.draw(st.sampled_from(names)), m)
        for c in checks:
            positions = {n: tuple(p) for n, p in counts.positions(c.members).items() if p}
            view = Members(c.members.workload, c.members.profile, positions)
            bad = (
                violating_nodes(analysis.index, view, counts.tables(view.profile), c.constraint)
                if positions
                else {}
            )
            assert c.misplaced() == sum(len(positions[n]) for n in bad)
    counts.undo(marks[0])
    assert snapshot() == before
