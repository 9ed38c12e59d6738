"""Taking back the pod-deletion-costs a policy wrote: table-driven rules (cost_release.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from respread.core.annotations import COST_POLICY, COST_WRITTEN, DELETION_COST, ReleaseAction
from respread.core.model import Labels, Namespace, Phase, Pod
from respread.inputs.policy import (
    DEFAULT_POLICY,
    DeletionCostSettings,
    Mode,
    RebalancePolicy,
    RemediationSettings,
    Selection,
)
from respread.remedies.cost.release import (
    FINALIZER,
    FINALIZER_TIMEOUT,
    CostCounts,
    Lifecycle,
    cost_event,
    coverage,
    finalizer_due,
    lifecycle_of,
    plan_releases,
    respread_cost,
    tagged,
)
from tests.support.builders import hard, pod, pod_spec, sel
from tests.support.constants import ZONE

MINE = "p1"


def costed(
    name: str,
    *,
    cost: str | None = "3",
    written: str | None = "3",
    policy: str | None = MINE,
    managers: tuple[str, ...] = ("respread",),
    namespace: str = "default",
    terminating: bool = False,
    phase: Phase | None = None,
) -> Pod:
    annotations = {
        k: v
        for k, v in ((DELETION_COST, cost), (COST_WRITTEN, written), (COST_POLICY, policy))
        if v is not None
    }
    p = pod(name, "n1", namespace=namespace, terminating=terminating, phase=phase)
    return replace(p, annotations=Labels(annotations), deletion_cost_managers=managers)


@pytest.mark.parametrize(
    ("pod_", "ours"),
    [
        (costed("a"), True),
        (costed("a", cost=" 3"), False),  # the controller reads it as invalid (0), not 3
        (costed("a", cost="4"), False),  # changed since respread wrote 3
        (costed("a", managers=("respread", "kubectl")), False),  # shared ownership
        (costed("a", managers=("kubectl",)), False),  # another manager set it
        (costed("a", managers=()), False),  # managedFields cleared: nobody is known to own it
        (costed("a", written=None), False),  # no record of what respread wrote
        (costed("a", cost=None), False),  # the cost is gone
        (costed("a", cost="x", written="x"), False),  # unreadable
    ],
)
def test_a_cost_is_respreads_only_when_it_alone_owns_it_and_the_value_is_the_one_written(
    pod_: Pod, ours: bool
) -> None:
    assert respread_cost(pod_) is ours


def test_only_live_pods_naming_the_policy_are_its_own() -> None:
    pods = [
        costed("b"),
        costed("a"),
        costed("other", policy="p2"),
        costed("none", policy=None),
        costed("leaving", terminating=True),
        costed("done", phase=Phase.SUCCEEDED),
    ]
    assert [p.name for p in tagged(pods, MINE)] == ["a", "b"]


def never(_: Pod) -> str | None:
    return None


@pytest.mark.parametrize(
    ("pod_", "keep", "covered", "expected"),
    [
        (costed("a"), frozenset(), None, (ReleaseAction.REMOVE, None)),
        (costed("a"), frozenset({("default", "a")}), None, None),  # still ordered: kept
        (costed("a"), frozenset(), "p2", (ReleaseAction.HAND_OVER, "p2")),
        (costed("a"), frozenset(), MINE, (ReleaseAction.REMOVE, None)),  # itself is no other
        (costed("a", cost="9"), frozenset(), None, (ReleaseAction.UNTAG, None)),
        (costed("a", managers=("hpa",)), frozenset(), "p2", (ReleaseAction.UNTAG, None)),
        (costed("a", policy="p2"), frozenset(), None, None),  # another policy's
    ],
)
def test_what_a_policy_does_with_a_cost_it_no_longer_keeps(
    pod_: Pod,
    keep: frozenset[tuple[str, str]],
    covered: str | None,
    expected: tuple[ReleaseAction, str | None] | None,
) -> None:
    plan = plan_releases([pod_], MINE, keep=keep, covered_by=lambda _: covered, cap=10)
    got = [(r.action, r.hand_to) for r in plan.releases]
    assert got == ([expected] if expected else [])


@pytest.mark.parametrize(("cap", "now", "deferred"), [(10, 4, 0), (3, 3, 1), (0, 0, 4), (-2, 0, 4)])
def test_releases_are_bounded_and_the_rest_left_for_later(
    cap: int, now: int, deferred: int
) -> None:
    pods = [costed(f"p{i}") for i in range(4)]
    plan = plan_releases(pods, MINE, keep=frozenset(), covered_by=never, cap=cap)
    assert (len(plan.releases), plan.deferred, plan.tagged) == (now, deferred, 4)
    assert [r.pod.name for r in plan.releases] == [f"p{i}" for i in range(now)]


def writer(
    name: str, *, mode: Mode = Mode.ENFORCE, enabled: bool = True, **sel: object
) -> RebalancePolicy:
    return replace(
        DEFAULT_POLICY,
        name=name,
        mode=mode,
        selection=replace(Selection(), **sel),  # type: ignore[arg-type]
        remediation=RemediationSettings(deletion_cost=DeletionCostSettings(enabled=enabled)),
    )


@pytest.mark.parametrize(
    ("others", "namespace", "expected"),
    [
        ([], "default", None),
        ([writer("q")], "default", "q"),
        ([writer("q", mode=Mode.DRY_RUN)], "default", None),  # DryRun writes nothing
        ([writer("q", enabled=False)], "default", None),
        ([writer("q", include_namespaces=frozenset({"team"}))], "default", None),
        ([writer("q", include_namespaces=frozenset({"team"}))], "team", "q"),
        ([writer("z"), writer("b")], "default", "b"),  # the first by name
    ],
)
def test_another_policy_covers_a_pod_when_it_writes_costs_in_its_namespace(
    others: list[RebalancePolicy], namespace: str, expected: str | None
) -> None:
    namespaces = {"team": Namespace("team"), "default": Namespace("default")}
    # a pod with a hard constraint: every policy covering its namespace would order it
    spread = hard(ZONE, sel(app="web"))
    pod_ = replace(costed("a", namespace=namespace), spec=pod_spec((spread,)))
    covered_by = coverage(MINE, others, namespaces, [pod_])
    assert covered_by(pod_) == expected


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({}, Lifecycle()),
        ({"finalizers": [FINALIZER]}, Lifecycle(finalizer=True)),
        ({"finalizers": ["other"]}, Lifecycle()),
        (
            {"deletionTimestamp": "2026-11-25T08:00:00Z", "finalizers": ["x", FINALIZER]},
            Lifecycle(deleting_since=1795593600.0, finalizer=True),
        ),
        ({"deletionTimestamp": "garbage"}, Lifecycle(deleting_since=float("inf"))),
    ],
)
def test_the_policy_objects_lifecycle(meta: dict[str, object], expected: Lifecycle) -> None:
    assert lifecycle_of(meta) == expected


@pytest.mark.parametrize(
    ("since", "now", "due"),
    [
        (None, 1e9, False),
        (1000.0, 1000.0 + FINALIZER_TIMEOUT, False),
        (1000.0, 1000.0 + FINALIZER_TIMEOUT + 1, True),
        (float("inf"), 1e12, False),
    ],
)
def test_the_finalizer_is_removed_anyway_after_the_timeout(
    since: float | None, now: float, due: bool
) -> None:
    assert finalizer_due(Lifecycle(deleting_since=since, finalizer=True), now) is due


@pytest.mark.parametrize(
    ("counts", "reason", "warning", "words"),
    [
        (CostCounts(), None, False, []),
        (CostCounts(conflicts=2, left=1, managed=5), None, False, []),  # nothing done: silent
        (CostCounts(written=3, left=2, managed=3), "DeletionCostUpdated", False, ["3 written"]),
        (CostCounts(removed=4), "DeletionCostUpdated", False, ["4 removed", "0 left"]),
        (CostCounts(handed_over=1), "DeletionCostUpdated", False, ["1 handed over"]),
        (CostCounts(written=1, failed=1), "DeletionCostFailed", True, ["1 failed"]),
    ],
)
def test_one_event_a_scan_only_when_something_was_written_or_taken_back(
    counts: CostCounts, reason: str | None, warning: bool, words: list[str]
) -> None:
    event = cost_event(counts)
    if reason is None:
        assert event is None
        return
    assert event is not None
    assert event[:2] == (reason, warning)
    for w in words:
        assert w in event[2]
