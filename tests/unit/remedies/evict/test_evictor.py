"""The eviction gate (respread.remedies.evict.evictor): what may never be evicted, and what defers
an eviction."""

from __future__ import annotations

from dataclasses import replace

import pytest

from respread.analysis.groups import WorkloadRef
from respread.core.model import DisruptionBudget, Labels, OwnerRef, Pod
from respread.inputs.policy import DEFAULT_POLICY, EvictionSettings, RebalancePolicy
from respread.remedies.evict.evictor import EvictionGate
from respread.remedies.evict.steps import SkipKind
from tests.support.builders import APP_WEB, WEB, budget, pod

RS = OwnerRef("ReplicaSet", "web-1")
WEB_REF = WorkloadRef("default", "Deployment", "web")
OTHER_REF = WorkloadRef("default", "Deployment", "other")
NOW = 10_000.0


def web(name: str = "web-a", node: str = "n1", **kw: object) -> Pod:
    return pod(name, node, APP_WEB, owner=RS, created=0.0, **kw)


def policy(**eviction: object) -> RebalancePolicy:
    settings = EvictionSettings(**{"min_pod_age": 0.0, **eviction})  # type: ignore[arg-type]
    return replace(DEFAULT_POLICY, eviction=settings)


def web_budget(allowed: int, stale: bool = False, name: str = "web") -> DisruptionBudget:
    return budget(name, WEB, allowed=allowed, generation=2 if stale else 1, observed=1)


@pytest.mark.parametrize(
    ("victim", "budgets", "refusal"),
    [
        (web(), (), None),
        (replace(web(), owner=None), (), SkipKind.PROTECTED),  # bare pod
        (replace(web(), owner=OwnerRef("DaemonSet", "ds")), (), SkipKind.PROTECTED),
        (
            replace(web(), annotations=Labels({"respread.io/evict": "false"})),
            (),
            SkipKind.PROTECTED,
        ),
        (web(), (web_budget(0, stale=True),), SkipKind.BLOCKED),  # a stale budget
        (web(), (web_budget(1), web_budget(1, name="web-too")), SkipKind.BLOCKED),  # two budgets
        (web(), (web_budget(1),), None),
    ],
    ids=["free", "bare", "daemonset", "opted-out", "stale-budget", "two-budgets", "budget-ok"],
)
def test_refusal(
    victim: Pod, budgets: tuple[DisruptionBudget, ...], refusal: SkipKind | None
) -> None:
    gate = EvictionGate(policy(), budgets)
    found = gate.refusal(victim, NOW)
    assert (found[0] if found else None) is refusal


def test_a_budget_allowing_no_disruption_blocks_outright() -> None:
    found = EvictionGate(policy(), (web_budget(0),)).refusal(web(), NOW)
    assert found is not None and found[0] is SkipKind.BLOCKED


def test_too_young_is_protected() -> None:
    young = replace(web(), created=NOW - 10)
    found = EvictionGate(policy(min_pod_age=300.0), ()).refusal(young, NOW)
    assert found is not None and found[0] is SkipKind.PROTECTED
    assert "minPodAge" in found[1]


# Each row: the policy, evictions committed first (pod name, node, workload), the pod asked
# about, and the start of the deferral ("" when this run may evict it).
DEFERRALS = [
    ({}, [], ("web-z", "n1", WEB_REF), ""),
    ({"max_per_run": 1}, [("web-a", "n1", OTHER_REF)], ("web-z", "n2", WEB_REF), "maxPerRun 1"),
    (
        {"max_per_workload": 1},
        [("web-a", "n1", WEB_REF)],
        ("web-z", "n2", WEB_REF),
        "maxPerWorkload 1",
    ),
    ({"max_per_workload": 1}, [("web-a", "n1", OTHER_REF)], ("web-z", "n2", WEB_REF), ""),
    (
        {"max_per_namespace": 1, "max_per_workload": None},
        [("web-a", "n1", OTHER_REF)],
        ("web-z", "n2", WEB_REF),
        "maxPerNamespace 1",
    ),
    (
        {"max_per_node": 1, "max_per_workload": None},
        [("web-a", "n1", OTHER_REF)],
        ("web-z", "n1", WEB_REF),
        "maxPerNode 1 reached on n1",
    ),
    (
        {"max_per_node": 1, "max_per_workload": None},
        [("web-a", "n1", OTHER_REF)],
        ("web-z", "n2", WEB_REF),
        "",
    ),
]


@pytest.mark.parametrize(("settings", "committed", "asked", "deferral"), DEFERRALS)
def test_caps(
    settings: dict[str, object],
    committed: list[tuple[str, str, WorkloadRef]],
    asked: tuple[str, str, WorkloadRef],
    deferral: str,
) -> None:
    gate = EvictionGate(policy(**settings), ())
    for name, node, ref in committed:
        gate.commit(web(name, node), ref)
    name, node, ref = asked
    assert gate.deferral(web(name, node), ref, NOW, {}).startswith(deferral)
    assert bool(gate.deferral(web(name, node), ref, NOW, {})) is bool(deferral)


def test_cooldown_and_hold() -> None:
    gate = EvictionGate(policy(cooldown=600.0), (), held={OTHER_REF: "replacement not Ready"})
    said = gate.deferral(web(), WEB_REF, NOW, {WEB_REF: NOW - 60})
    assert said.startswith("cooldown") and "had an eviction 60s ago" in said
    assert said.endswith("the next is due at 1970-01-01T02:55:40Z")  # NOW - 60 + 600
    assert gate.deferral(web(), WEB_REF, NOW, {WEB_REF: NOW - 6000}) == ""
    assert gate.deferral(web(), OTHER_REF, NOW, {}) == "replacement not Ready"
    assert gate.deferral(web(), WEB_REF, None, {WEB_REF: NOW}) == ""  # no clock: no cooldown


def test_a_budget_used_up_by_the_runs_own_evictions_defers_and_uncommit_gives_back() -> None:
    gate = EvictionGate(policy(max_per_workload=None), (web_budget(1),))
    assert gate.deferral(web("web-z"), WEB_REF, NOW, {}) == ""
    gate.commit(web("web-a"), WEB_REF)
    assert gate.used() == {"default/web": 1}
    assert gate.deferral(web("web-z"), WEB_REF, NOW, {}) != ""
    assert gate.refusal(web("web-z"), NOW) is None  # deferred, not blocked
    gate.uncommit(web("web-a"), WEB_REF)
    assert gate.deferral(web("web-z"), WEB_REF, NOW, {}) == ""
    assert gate.planned == 0 and gate.per_node["n1"] == 0
