"""One verdict per violation (issue 21): the plan, the remedies, the summary and the text agree;
holds that lift by themselves (minPodAge, a budget whose pods are not all healthy yet) are
Waiting, with when where it is known, never NOT FIXABLE; a group eviction improves but cannot
balance is PartlyFixable, and its pods' evictions are Evict's."""

from __future__ import annotations

from dataclasses import replace

from respread.core.model import ClusterState, DisruptionBudget, OwnerRef, Pod
from respread.pipeline import scan
from respread.remedies.choose import Remedy
from respread.remedies.evict.evictor import EvictionGate, HoldKind
from respread.remedies.evict.steps import Verdict
from respread.report.contract import report_json
from respread.report.model import Report, Violation
from respread.report.text import render_text
from tests.support.builders import WEB, budget, eviction_policy, hard, node, pod, state
from tests.support.tables import cases

ZONE = "zone"
NODES = (node("a1", zone="a"), node("b1", zone="b"), node("c1", zone="c"))
NOW = 1_800_000_000.0
OWNER = OwnerRef("ReplicaSet", "web-abc")
LABELS = {"app": "web", "pod-template-hash": "abc"}


def web(per_zone: dict[str, int], created: float = NOW - 86_400) -> list[Pod]:
    return [
        pod(
            f"web-{z}{i}",
            f"{z}1",
            LABELS,
            constraints=(hard(ZONE, WEB),),
            owner=OWNER,
            created=created,
        )
        for z, count in per_zone.items()
        for i in range(count)
    ]


SKEWED = web({"a": 4, "b": 1, "c": 1})  # two evictions from a fix it


def report_of(cluster: ClusterState, min_pod_age: float = 0.0) -> Report:
    return scan(cluster, eviction_policy(min_pod_age=min_pod_age), NOW).report


def only(report: Report) -> Violation:
    [v] = report.violations
    return v


def test_a_young_workload_is_waiting_with_when_not_unfixable() -> None:
    young = web({"a": 4, "b": 1, "c": 1}, created=NOW - 600)
    report = report_of(state(NODES, young), min_pod_age=3600.0)
    v = only(report)
    assert v.verdict is Verdict.WAITING and not v.fixable
    assert "minPodAge: 4 pod(s) too young, the first old enough at 2027-01-15T08:50:00Z" in (
        v.waiting_for
    )
    assert v.message.startswith("waiting: eviction fixes it once these holds lift: minPodAge")
    assert (report.summary.waiting, report.summary.unfixable) == (1, 0)
    evict = next(r for r in v.remedies if r.remedy is Remedy.EVICT)
    assert not evict.applies and "holds lift" in evict.reason
    text = render_text(report)
    assert "1 violation(s): 1 waiting for holds to lift." in text
    assert "WAITING]" in text and "NOT FIXABLE" not in text
    assert "Evict (waiting)" in text
    as_json = report_json(report)
    assert as_json["violations"][0]["verdict"] == "Waiting"
    assert as_json["summary"]["waiting"] == 1


UNHEALTHY = budget("web", WEB, allowed=0, healthy=5, desired=5, expected=6)  # one not Ready
FULL = budget("web", WEB, allowed=0, healthy=6, desired=6, expected=6)  # minAvailable: all
STALE = budget("web", WEB, allowed=0, generation=2, observed=1, healthy=6, desired=5, expected=6)


@cases(
    ("pdb", "verdict", "said"),
    [
        ("pods-not-healthy", UNHEALTHY, Verdict.WAITING, "until its pods are healthy"),
        ("status-stale", STALE, Verdict.WAITING, "until the disruption controller"),
        ("allows-none-ever", FULL, Verdict.NOT_FIXABLE, "allows no disruption"),
    ],
)
def test_a_budget_that_lifts_by_itself_is_waiting_one_that_never_does_is_not(
    pdb: DisruptionBudget, verdict: Verdict, said: str
) -> None:
    report = report_of(state(NODES, SKEWED, budgets=[pdb]))
    v = only(report)
    assert v.verdict is verdict
    assert said in v.message
    assert report.evictions == ()
    counts = (report.summary.waiting, report.summary.unfixable)
    assert counts == ((1, 0) if verdict is Verdict.WAITING else (0, 1))


def test_partly_fixable_evictions_are_evicts_and_the_summary_says_so() -> None:
    # zone c has room for one pod only: eviction moves one of a's, then nothing takes the rest
    full = replace(node("c1", zone="c"), max_pods=2)
    others = [pod("filler", "c1", {"app": "other"}, owner=OwnerRef("ReplicaSet", "o"))]
    report = report_of(state((*NODES[:2], full), [*web({"a": 5, "b": 1, "c": 0}), *others]))
    v = only(report)
    assert v.verdict is Verdict.PARTLY_FIXABLE
    assert v.message.startswith("partly fixable by eviction: ")
    assert report.evictions and all(e.workload == v.workload for e in report.evictions)
    assert v.remedy is Remedy.EVICT
    assert (report.summary.partly_fixable, report.summary.unfixable) == (1, 0)
    text = render_text(report)
    assert "1 violation(s): 1 partly fixable by eviction." in text
    assert "PARTLY FIXABLE]" in text


def test_fixable_and_not_fixable_in_one_summary_line() -> None:
    report = report_of(state(NODES, SKEWED, budgets=[FULL]))
    assert "1 violation(s): 1 not fixable by eviction." in render_text(report)
    fixable = report_of(state(NODES, SKEWED))
    assert only(fixable).verdict is Verdict.FIXABLE
    assert "1 violation(s): 1 fixable by eviction." in render_text(fixable)


@cases(
    ("pdb", "created", "kind"),
    [
        ("young", None, NOW - 10, HoldKind.MIN_POD_AGE),
        ("unhealthy", UNHEALTHY, NOW - 86_400, HoldKind.BUDGET),
        ("stale", STALE, NOW - 86_400, HoldKind.BUDGET),
        ("budget-full", FULL, NOW - 86_400, None),
        ("free", None, NOW - 86_400, None),
    ],
)
def test_the_gate_names_holds_that_lift_by_themselves(
    pdb: DisruptionBudget | None, created: float, kind: HoldKind | None
) -> None:
    victim = web({"a": 1}, created=created)[0]
    gate = EvictionGate(eviction_policy(min_pod_age=60.0), (pdb,) if pdb else ())
    hold = gate.hold(victim, NOW)
    assert (hold.kind if hold else None) is kind
    if kind is HoldKind.MIN_POD_AGE:
        assert hold is not None and hold.until == created + 60.0
    lifted = EvictionGate(eviction_policy(min_pod_age=60.0), (pdb,) if pdb else (), lift_holds=True)
    assert (lifted.refusal(victim, NOW) is None) is (kind is not None or pdb is None)
