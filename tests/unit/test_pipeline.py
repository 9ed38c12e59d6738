"""The one scan (respread.pipeline): what one scan of a policy hands the next, and what it does
with it: causes carried, violations known, workloads held back."""

from __future__ import annotations

import gc
from dataclasses import replace

import pytest

from respread.analysis.causes import Attribution, Cause
from respread.analysis.groups import Analysis, WorkloadRef, analysis_reads, analyze
from respread.core.model import OwnerRef, Pod, When
from respread.inputs.policy import (
    DEFAULT_POLICY,
    Mode,
    OutageSettings,
    RebalancePolicy,
    RemediationSettings,
    Selection,
)
from respread.pipeline import NO_MEMORY, AnalysisMemo, Memory, SharedAnalyses, scan
from respread.remedies.evict.history import PACING, EvictionHistory
from respread.remedies.evict.ledger import Recorded, key_of, render_entries
from respread.report.model import Report
from tests.support.builders import WEB, hard, node, pod, sel, soft, state

ZONE = "zone"
NODES = (node("a1", zone="a"), node("b1", zone="b"), node("c1", zone="c"))
NOW = 1_800_000_000.0


def web(per_zone: dict[str, int], name: str = "web", ready: bool = True) -> list[Pod]:
    """A Deployment's pods (one ReplicaSet), ``per_zone[z]`` of them on node ``<z>1``."""
    owner = OwnerRef("ReplicaSet", f"{name}-abc")
    labels = {"app": name, "pod-template-hash": "abc"}
    selector = WEB if name == "web" else sel(app=name)
    return [
        replace(
            pod(f"{name}-{zone}{i}", f"{zone}1", labels, constraints=(hard(ZONE, selector),)),
            namespace="shop",
            owner=owner,
            ready=ready or i > 0,
        )
        for zone, count in per_zone.items()
        for i in range(count)
    ]


BEFORE = state(NODES, web({"a": 3, "b": 3, "c": 3}))
AFTER = state(NODES, web({"a": 3, "b": 1, "c": 1}))  # scaled down from 9 to 5, unevenly


def causes(report: Report) -> list[tuple[str, str]]:
    return [(v.cause.value, v.cause_message) for v in report.violations]


def test_an_ongoing_violation_keeps_the_cause_it_was_first_given() -> None:
    first = scan(BEFORE, DEFAULT_POLICY, NOW)
    assert first.report.violations == ()
    seen = scan(AFTER, DEFAULT_POLICY, NOW + 10, first.memory)
    scale_down = ("ScaleDown", "Deployment shop/web went from 9 to 5 pods since the previous scan")
    assert causes(seen.report) == [scale_down]
    assert len(seen.changes.found) == 1

    # The next scan has no evidence left (the previous scan saw 5 pods too): the cause stays.
    again = scan(AFTER, DEFAULT_POLICY, NOW + 20, seen.memory)
    assert causes(again.report) == [scale_down]
    assert again.changes.found == [] and again.changes.resolved == []
    # Without the memory, the same state has no evidence.
    assert causes(scan(AFTER, DEFAULT_POLICY, NOW + 20).report)[0][0] == "Unknown"

    # Resolved, the cause is forgotten; a new violation is given its own.
    balanced = scan(BEFORE, DEFAULT_POLICY, NOW + 30, again.memory)
    assert balanced.memory.causes == {}
    assert balanced.changes.resolved == [("shop", "Deployment", "web", ZONE, "")]
    later = scan(
        state(NODES, web({"a": 3, "b": 2, "c": 1})), DEFAULT_POLICY, NOW + 40, balanced.memory
    )
    assert causes(later.report) == [
        ("ScaleDown", "Deployment shop/web went from 9 to 6 pods since the previous scan")
    ]


def test_an_unknown_cause_is_found_again_when_evidence_appears() -> None:
    first = scan(BEFORE, DEFAULT_POLICY, NOW)
    key = ("shop", "Deployment", "web", ZONE, "")
    unknown = replace(first.memory, causes={key: Attribution(Cause.UNKNOWN, "no evidence")})
    seen = scan(AFTER, DEFAULT_POLICY, NOW + 10, unknown)
    assert causes(seen.report)[0][0] == "ScaleDown"
    assert seen.memory.causes[key].cause is Cause.SCALE_DOWN
    assert seen.changes.found == []  # known already, with its Unknown cause


def test_what_is_new_is_judged_against_every_violation_not_only_those_shown() -> None:
    """The status shows at most report.maxItems violations; the memory holds all of them, so a
    scan that changes nothing finds nothing new."""
    pods = [p for i in range(30) for p in web({"a": 3, "b": 1, "c": 1}, name=f"w{i}")]
    policy = replace(DEFAULT_POLICY, report_max_items=5)
    first = scan(state(NODES, pods), policy, NOW)
    assert len(first.report.violations) == 30
    assert len(first.changes.found) == 30
    second = scan(state(NODES, pods), policy, NOW + 10, first.memory)
    assert second.changes.found == [] and second.changes.resolved == []


def test_the_operator_holds_back_a_workload_whose_replacement_is_not_ready() -> None:
    """Pacing is the operator's, in Enforce: a one-off plan, or DryRun, holds nothing."""
    unready = state(NODES, web({"a": 3, "b": 1, "c": 1}, ready=False))
    enforce = replace(DEFAULT_POLICY, mode=Mode.ENFORCE)
    operator = Memory(holds=True)
    held = scan(unready, enforce, NOW, operator)
    assert held.plan.moves == ()
    assert [d.deferred_by for d in held.report.deferred] == [PACING]
    assert scan(unready, enforce, NOW, NO_MEMORY).plan.moves
    assert scan(unready, DEFAULT_POLICY, NOW, operator).plan.moves


def test_the_operator_holds_back_a_workload_another_policys_eviction_holds() -> None:
    """The eviction ledger's entries (any policy's) are the pipeline's input: in Enforce, with
    the operator's holds, a workload evicted from within the cooldown is deferred, and says by
    whom; once the cooldown has passed, or in DryRun, or for a one-off plan, it is not."""
    skewed = state(NODES, web({"a": 3, "b": 1, "c": 1}))
    enforce = replace(DEFAULT_POLICY, mode=Mode.ENFORCE)
    cooldown = enforce.eviction.cooldown
    entry = Recorded("web-a9", "uid-9", "other", "other@1", NOW - 60, NOW - 60 + cooldown)
    recorded = {key_of(WorkloadRef("shop", "Deployment", "web")): render_entries([entry])}
    operator = Memory(holds=True)

    held = scan(skewed, enforce, NOW, operator, recorded=recorded)
    assert held.plan.moves == ()
    (deferred, *_) = held.report.deferred
    assert deferred.deferred_by.startswith("cooldown: RebalancePolicy other evicted web-a9 60s ago")
    assert scan(skewed, enforce, NOW + cooldown, operator, recorded=recorded).plan.moves
    assert scan(skewed, DEFAULT_POLICY, NOW, operator, recorded=recorded).plan.moves
    assert scan(skewed, enforce, NOW, NO_MEMORY, recorded=recorded).plan.moves
    assert scan(skewed, enforce, NOW, operator).plan.moves


def test_a_scan_changes_no_memory_it_is_given() -> None:
    first = scan(BEFORE, DEFAULT_POLICY, NOW)
    memory = first.memory
    snapshot = (memory.evictions, memory.previous, dict(memory.causes))
    scan(AFTER, DEFAULT_POLICY, NOW + 10, memory)
    assert (memory.evictions, memory.previous, dict(memory.causes)) == snapshot


def test_the_memory_of_a_status_is_the_operators() -> None:
    status = {
        "violations": [
            {
                "namespace": "shop",
                "workload": {"kind": "Deployment", "name": "web"},
                "topologyKey": ZONE,
                "cause": "ScaleDown",
                "causeMessage": "web went from 9 to 5",
            }
        ]
    }
    memory = Memory.from_status(status)
    assert memory.holds
    assert memory.causes == {
        ("shop", "Deployment", "web", ZONE, ""): Attribution(
            Cause.SCALE_DOWN, "web went from 9 to 5"
        )
    }
    assert Memory.from_status(None) == Memory(holds=True)


def test_an_unchanged_state_is_analyzed_once_and_scans_as_a_fresh_analysis() -> None:
    """The operator's analysis memo: reused for the same state object under the same policy,
    with the same report as a scan that analyzes afresh; made again for another state object
    (even an equal one) or a policy that reads otherwise (analysis_reads)."""
    analyses = AnalysisMemo()
    first = scan(AFTER, DEFAULT_POLICY, NOW, analyses=analyses)
    again = scan(AFTER, DEFAULT_POLICY, NOW + 60, first.memory, analyses=analyses)
    assert again.analysis is first.analysis and analyses.reused  # the operator logs it
    fresh = scan(AFTER, DEFAULT_POLICY, NOW + 60, first.memory)
    assert fresh.analysis is not first.analysis
    assert again.report == fresh.report and again.plan.moves  # a plan was made from it
    # the plan's outcomes hold the analysis's groups, which compare by identity: its moves
    assert (again.plan.moves, again.plan.deferred) == (fresh.plan.moves, fresh.plan.deferred)

    rebuilt = state(NODES, web({"a": 3, "b": 1, "c": 1}))
    assert scan(rebuilt, DEFAULT_POLICY, NOW, analyses=analyses).analysis is not first.analysis
    assert not analyses.reused
    other = replace(DEFAULT_POLICY, selection=Selection(exclude_namespaces=frozenset()))
    latest = scan(rebuilt, other, NOW, analyses=analyses).analysis
    assert scan(rebuilt, other, NOW, analyses=analyses).analysis is latest
    assert scan(rebuilt, DEFAULT_POLICY, NOW, analyses=analyses).analysis is not latest


YOUNG = [replace(p, created=NOW - 10) for p in web({"a": 3, "b": 1, "c": 1})]  # minPodAge 300s
EVICTED = Memory(EvictionHistory({WorkloadRef("shop", "Deployment", "web"): NOW - 60}))


@pytest.mark.parametrize(
    ("pods", "memory", "first", "then", "reused"),
    [
        pytest.param(web({"a": 3, "b": 1, "c": 1}), NO_MEMORY, NOW, NOW + 60, True, id="settled"),
        pytest.param(YOUNG, NO_MEMORY, NOW, NOW + 60, False, id="a pod younger than minPodAge"),
        pytest.param(YOUNG, NO_MEMORY, NOW + 289, NOW + 400, False, id="young when planned"),
        pytest.param(YOUNG, NO_MEMORY, NOW + 290, NOW + 400, True, id="every pod old enough"),
        pytest.param(web({"a": 3, "b": 1, "c": 1}), EVICTED, NOW, NOW + 60, False, id="cooldown"),
        pytest.param(web({"a": 3, "b": 1, "c": 1}), EVICTED, NOW + 540, NOW + 600, True, id="over"),
        pytest.param(
            web({"a": 3, "b": 1, "c": 1}), NO_MEMORY, NOW, NOW - 1, False, id="clock back"
        ),
    ],
)
def test_a_reused_analysis_reuses_its_plan_once_the_clock_no_longer_changes_it(
    pods: list[Pod], memory: Memory, first: float, then: float, reused: bool
) -> None:
    """The plan of an unchanged cluster is made again while time can still change it (a pod
    younger than minPodAge, a workload in cooldown) or the clock went back; otherwise it is
    the last scan's. Either way the scan is the one a fresh analysis and plan make."""
    skewed = state(NODES, pods)
    analyses = AnalysisMemo()
    scan(skewed, DEFAULT_POLICY, first, memory, analyses=analyses)
    again = scan(skewed, DEFAULT_POLICY, then, memory, analyses=analyses)
    assert analyses.reused
    assert analyses.plan_reused is reused
    fresh = scan(skewed, DEFAULT_POLICY, then, memory)
    assert again.report == fresh.report
    assert again.plan.skipped == fresh.plan.skipped  # their reasons count seconds
    assert (again.plan.moves, again.plan.deferred) == (fresh.plan.moves, fresh.plan.deferred)


def test_a_plan_is_not_reused_for_other_holds_or_another_analysis() -> None:
    skewed = state(NODES, web({"a": 3, "b": 1, "c": 1}))
    analyses = AnalysisMemo()
    first = scan(skewed, DEFAULT_POLICY, NOW, analyses=analyses)
    held = {WorkloadRef("shop", "Deployment", "web"): "held"}
    assert analyses.plan(first.analysis, DEFAULT_POLICY, NOW + 1, {}, {}) is not None
    assert analyses.plan_reused
    assert analyses.plan(first.analysis, DEFAULT_POLICY, NOW + 1, {}, held).moves == ()
    assert not analyses.plan_reused
    other = scan(state(NODES, web({"a": 3, "b": 1, "c": 1})), DEFAULT_POLICY, NOW).analysis
    analyses.plan(other, DEFAULT_POLICY, NOW + 2, {}, {})
    assert not analyses.plan_reused


def _summary(analysis: Analysis) -> list[tuple[object, ...]]:
    return [
        (g.workload, g.constraint.key, tuple(sorted(g.counts.items())), g.skew, g.violating)
        for g in analysis.groups
    ]


MIXED = state(
    NODES,
    [
        *web({"a": 3, "b": 1, "c": 1}),
        *[replace(p, namespace="kube-system") for p in web({"a": 2, "b": 0, "c": 1}, "dns")],
        *[replace(p, created=NOW - 10) for p in web({"a": 1, "b": 1, "c": 3}, "api")],
        *[
            replace(p, spec=replace(p.spec, constraints=(soft(ZONE, sel(app="jobs")),)))
            for p in web({"a": 4, "b": 0, "c": 1}, "jobs")
        ],
    ],
)
ANY = frozenset({When.DO_NOT_SCHEDULE, When.SCHEDULE_ANYWAY})
EVERY_NAMESPACE = Selection(exclude_namespaces=frozenset())
# policies that read what DEFAULT_POLICY reads (analysis_reads), and some that do not
SAME_READS = [
    replace(DEFAULT_POLICY, name="enforce", mode=Mode.ENFORCE, generation=7),
    replace(DEFAULT_POLICY, eviction=replace(DEFAULT_POLICY.eviction, max_per_run=1)),
    replace(DEFAULT_POLICY, selection=replace(DEFAULT_POLICY.selection, pod_selector=WEB)),
    replace(DEFAULT_POLICY, remediation=RemediationSettings(evict=False)),
    replace(DEFAULT_POLICY, outages=OutageSettings(grace_period=1.0)),
]
OTHER_READS = [
    replace(DEFAULT_POLICY, selection=EVERY_NAMESPACE),
    replace(
        DEFAULT_POLICY, constraints=replace(DEFAULT_POLICY.constraints, when_unsatisfiable=ANY)
    ),
]


@pytest.mark.parametrize("other", SAME_READS)
def test_policies_that_read_the_same_share_one_analysis_of_a_state(other: RebalancePolicy) -> None:
    """Whatever else differs (mode, caps, pod selector, remedies, outages), a policy that reads
    what another reads of its policy (analysis_reads) gets the analysis that one made of the
    same state, and scans as it would alone; another state is analyzed again."""
    assert analysis_reads(other) == analysis_reads(DEFAULT_POLICY)
    assert _summary(analyze(MIXED, other)) == _summary(analyze(MIXED, DEFAULT_POLICY))
    shared = SharedAnalyses()
    first, second = AnalysisMemo(shared), AnalysisMemo(shared)
    made = scan(MIXED, DEFAULT_POLICY, NOW, analyses=first).analysis
    result = scan(MIXED, other, NOW, analyses=second)
    assert result.analysis is made and second.from_shared and not second.reused
    alone = scan(MIXED, other, NOW)
    assert result.report == alone.report
    assert (result.plan.moves, result.plan.skipped) == (alone.plan.moves, alone.plan.skipped)
    again = scan(MIXED, other, NOW + 1, analyses=second)
    assert again.analysis is made and second.reused and not second.from_shared
    rebuilt = state(NODES, list(MIXED.pods))
    assert scan(rebuilt, other, NOW, analyses=second).analysis is not made
    assert not (second.reused or second.from_shared)


@pytest.mark.parametrize("other", OTHER_READS)
def test_policies_that_read_otherwise_analyze_for_themselves(other: RebalancePolicy) -> None:
    assert analysis_reads(other) != analysis_reads(DEFAULT_POLICY)
    assert _summary(analyze(MIXED, other)) != _summary(analyze(MIXED, DEFAULT_POLICY))
    shared = SharedAnalyses()
    made = scan(MIXED, DEFAULT_POLICY, NOW, analyses=AnalysisMemo(shared)).analysis
    memo = AnalysisMemo(shared)
    assert scan(MIXED, other, NOW, analyses=memo).analysis is not made
    assert not memo.from_shared


def test_a_shared_analysis_lives_only_as_long_as_a_policys_memo_holds_it() -> None:
    shared = SharedAnalyses()
    memo = AnalysisMemo(shared)
    scan(MIXED, DEFAULT_POLICY, NOW, analyses=memo)
    del memo
    gc.collect()
    later = AnalysisMemo(shared)
    scan(MIXED, DEFAULT_POLICY, NOW, analyses=later)
    assert not later.from_shared


TEAMS = state(
    NODES,
    [replace(p, namespace=ns) for ns in ("shop", "blog", "wiki") for p in web({"a": 3, "b": 1})],
)


def test_the_scan_after_a_one_pod_change_carries_every_other_namespace_and_scans_as_fresh() -> None:
    """The operator's memo hands its last analysis to the analysis of a changed state: the
    namespaces the change left alone are carried (issue 23), and the scan is the fresh one."""
    analyses = AnalysisMemo()
    first = scan(TEAMS, DEFAULT_POLICY, NOW, analyses=analyses)
    assert first.analysis.carried == frozenset()
    moved = next(i for i, p in enumerate(TEAMS.pods) if (p.namespace, p.name) == ("blog", "web-a0"))
    pods = list(TEAMS.pods)
    pods[moved] = replace(pods[moved], node_name="c1")
    changed = replace(TEAMS, pods=tuple(pods))  # the other records the same objects, as cached
    again = scan(changed, DEFAULT_POLICY, NOW + 60, first.memory, analyses=analyses)
    assert not analyses.reused
    assert again.analysis.carried == {"shop", "wiki"}
    fresh = scan(changed, DEFAULT_POLICY, NOW + 60, first.memory)
    assert again.report == fresh.report
    assert again.plan.moves and again.plan.skipped == fresh.plan.skipped
    assert (again.plan.moves, again.plan.deferred) == (fresh.plan.moves, fresh.plan.deferred)
    assert again.changes == fresh.changes
