"""Surge moves (surge.py): planning, guards, the state machine, and what the report says.

The cluster states are written as the API server returns objects (snapshot.load_documents reads
them), so the fields surge moves read (Deployment status, markers, HPAs) are parsed as in the
operator.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from respread.analysis.groups import WorkloadRef, analyze
from respread.cli import main
from respread.core.annotations import SURGE_STATE
from respread.core.model import Autoscaler, OwnerRef, ReplicaStatus, Resources
from respread.inputs.objects import load_documents
from respread.inputs.policy import (
    DEFAULT_POLICY,
    DeletionCostSettings,
    PolicyError,
    RebalancePolicy,
    RemediationSettings,
    SurgeSettings,
    SurgeWhen,
    parse_policy,
)
from respread.remedies.choose import (
    Remedy,
    apply_remediation,
    defer_surged,
    eviction_blocked,
    hold_costs,
)
from respread.remedies.cost.order import plan_costs
from respread.remedies.evict.planner import plan
from respread.remedies.surge.advance import ActionKind, next_operation, operations
from respread.remedies.surge.operation import Operation, Phase
from respread.remedies.surge.plan import SurgeReport, SurgeSkip, plan_surges
from respread.remedies.surge.victims import VICTIM_COST
from respread.report.build import build_report
from respread.report.contract import report_json
from respread.report.model import SurgeState
from respread.report.status import surge_digest
from respread.report.text import render_text
from tests.support.builders import (
    APP_WEB,
    budget,
    deployment,
    hard,
    node,
    pod,
    pod_spec,
    replica_set,
    sel,
)
from tests.support.constants import NOW_EPOCH
from tests.support.manifests import manifest

NOW = NOW_EPOCH
WEB = WorkloadRef("ns1", "Deployment", "web")
TEMPLATE = pod_spec((hard("zone", sel(app="web")),), requests=Resources(cpu=100))
CREATED = 1_795_168_800.0  # 2026-11-20T10:00:00Z: pod i is created i seconds later


def cluster(
    pods: list[tuple[str, str]],
    *,
    replicas: int | None = None,
    zones: tuple[str, ...] = ("a", "b", "c"),
    pdb: bool = True,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    hpa: bool = False,
    paused: bool = False,
    status: dict[str, int] | None = None,
    generation: tuple[int, int] = (1, 1),
) -> list[dict[str, Any]]:
    """Nodes n-<zone>, one per zone; a Deployment web and its ReplicaSet; its pods, each
    (zone, state) with state Ready, NotReady or Pending (unbound); a budget maxUnavailable 0.
    The Deployment's labels and annotations are written as given, for the parser to read."""
    n = len(pods)
    ready = sum(1 for _, s in pods if s == "Ready")
    replicas = n if replicas is None else replicas
    counts = status or {
        "replicas": n,
        "updatedReplicas": n,
        "readyReplicas": ready,
        "availableReplicas": ready,
    }
    fields = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
    web = deployment(
        "web",
        replicas,
        namespace="ns1",
        template=TEMPLATE,
        uid="dep-uid",
        resource_version="100",
        generation=generation[0],
        observed_generation=generation[1],
        paused=paused,
        rollout=ReplicaStatus(*(counts.get(f, 0) for f in fields)),
    )
    web_doc = manifest(web)
    web_doc["metadata"] |= {"labels": labels or {}, "annotations": annotations or {}}
    allocatable = Resources(cpu=8000, memory=16 * 2**30)
    docs = [manifest(node(f"n-{z}", zone=z, allocatable=allocatable, max_pods=110)) for z in zones]
    rs = replica_set(
        "web-rs",
        replicas,
        labels=APP_WEB,
        namespace="ns1",
        template=TEMPLATE,
        owner=OwnerRef("Deployment", "web"),
    )
    docs += [web_doc, manifest(rs)]
    for i, (zone, state) in enumerate(pods, 1):
        where = f"n-{zone}" if state != "Pending" else None
        web_pod = pod(
            f"web-rs-{i}",
            where,
            APP_WEB,
            spec=TEMPLATE,
            namespace="ns1",
            uid=f"uid-{i}",
            created=CREATED + i,
            owner=OwnerRef("ReplicaSet", "web-rs"),
            ready=state == "Ready",
        )
        docs.append(manifest(web_pod))
    if pdb:
        web_budget = budget("web", namespace="ns1", healthy=ready, desired=n, expected=n)
        docs.append(manifest(web_budget, spec={"maxUnavailable": 0}))
    if hpa:
        docs.append(manifest(Autoscaler("ns1", "web-hpa", "Deployment", "web")))
    return docs


def skewed(**kw: Any) -> list[dict[str, Any]]:
    """4 / 1 / 1 over zones a, b, c (maxSkew 1): two moves fix it."""
    return cluster([("a", "Ready")] * 4 + [("b", "Ready"), ("c", "Ready")], **kw)


def policy_with(**surge: Any) -> RebalancePolicy:
    settings = SurgeSettings(enabled=True, **surge)
    return replace(DEFAULT_POLICY, remediation=RemediationSettings(surge=settings))


def run(docs: list[dict[str, Any]], policy: RebalancePolicy) -> tuple[Any, Any, Any]:
    state = load_documents([("test", d) for d in docs]).state
    analysis = analyze(state, policy)
    result = apply_remediation(plan(analysis, policy, now=NOW), policy)
    surge = plan_surges(analysis, eviction_blocked(result, policy.remediation.evict), policy, NOW)
    return analysis, defer_surged(result, surge.busy), surge


# --------------------------------------------------------------------------------------------
# Planning


def test_a_skew_that_budgets_block_is_planned_as_a_surge_of_the_moves_needed() -> None:
    _, result, surge = run(skewed(), policy_with())
    assert not result.moves  # the budget refuses every eviction
    (p,) = surge.plans
    assert (p.workload, p.original, p.surge) == (WEB, 6, 2)
    assert sorted(dict(lnd.domains)["zone"] for lnd in p.landings) == ["b", "c"]
    assert [dict(v.domains)["zone"] for v in p.victims] == ["a", "a"]
    assert p.misplaced_after == 0


@pytest.mark.parametrize(
    ("kw", "settings", "reason"),
    [
        ({"labels": {"kustomize.toolkit.fluxcd.io/name": "apps"}}, {}, "Flux (Kustomization)"),
        ({"labels": {"helm.toolkit.fluxcd.io/name": "web"}}, {}, "Flux (HelmRelease)"),
        ({"labels": {"argocd.argoproj.io/instance": "web"}}, {}, "Argo CD (label tracking)"),
        (
            {"annotations": {"argocd.argoproj.io/tracking-id": "web:apps/Deployment:ns1/web"}},
            {},
            "Argo CD (annotation tracking)",
        ),
        ({"annotations": {"respread.io/surge": "false"}}, {}, "opted out"),
        (
            {"annotations": {"respread.io/surge-operation": '{"phase": "Marking"}'}},
            {},
            "respread.io/surge-operation annotation is unreadable",
        ),
        ({"hpa": True}, {}, "HorizontalPodAutoscaler web-hpa scales it"),
        ({"paused": True}, {}, "paused"),
        ({"generation": (2, 1)}, {}, "a rollout is in progress"),
        (
            {"status": {"replicas": 6, "updatedReplicas": 4, "readyReplicas": 6}},
            {},
            "a rollout is in progress",
        ),
        (
            {"status": {"replicas": 6, "updatedReplicas": 6, "readyReplicas": 5}},
            {},
            "5 of 6 replicas Ready",
        ),
        ({}, {"max_surge": 1}, "needs 2 extra replicas, above maxSurge 1"),
        ({"pdb": False}, {}, "eviction fixes it"),
        ({"zones": ("a", "b", "c", "d")}, {}, ""),  # d: an empty zone, still a plan
    ],
)
def test_guards_skip_with_the_reason(
    kw: dict[str, Any], settings: dict[str, Any], reason: str
) -> None:
    docs = skewed(**kw)
    _, _, surge = run(docs, policy_with(**settings))
    if not reason:
        assert surge.plans and not surge.skips
        return
    assert not surge.plans
    (skip,) = surge.skips
    assert skip.workload == WEB
    assert reason in skip.reason


def test_an_opt_in_annotation_overrides_a_gitops_marker() -> None:
    docs = skewed(
        labels={"kustomize.toolkit.fluxcd.io/name": "apps"},
        annotations={"respread.io/surge": "true"},
    )
    assert run(docs, policy_with())[2].plans


def test_allow_autoscaled_surges_a_deployment_an_hpa_targets() -> None:
    assert run(skewed(hpa=True), policy_with(allow_autoscaled=True))[2].plans


def test_when_always_surges_instead_of_evicting() -> None:
    policy = replace(
        policy_with(when=SurgeWhen.ALWAYS),
        eviction=replace(DEFAULT_POLICY.eviction, min_pod_age=0.0, max_per_workload=None),
    )
    state = load_documents([("t", d) for d in skewed(pdb=False)]).state
    analysis = analyze(state, policy)
    evicting = apply_remediation(plan(analysis, policy, now=NOW), policy)
    assert evicting.moves  # eviction alone would evict
    _, result, surge = run(skewed(pdb=False), policy)
    assert surge.plans
    assert not result.moves
    assert all("surge" in d.deferred_by for d in result.deferred)


def test_surge_disabled_plans_nothing() -> None:
    _, _, surge = run(skewed(), DEFAULT_POLICY)
    assert not surge.enabled and not surge.plans and not surge.skips


def test_a_deployment_with_an_operation_in_flight_is_not_planned_again() -> None:
    op = Operation("default", 6, 8, NOW - 10, NOW + 290)
    _, result, surge = run(
        skewed(annotations={SURGE_STATE: op.to_json()}, replicas=8), policy_with()
    )
    assert not surge.plans
    assert not result.moves
    (f,) = surge.in_flight
    assert f.operation == op


def test_a_rolled_back_deployment_is_not_surged_again_within_the_cooldown() -> None:
    op = Operation("default", 6, 8, NOW - 400, NOW - 100, Phase.ROLLED_BACK, (), "pods Pending")
    docs = skewed(annotations={SURGE_STATE: op.to_json()})
    _, _, surge = run(docs, policy_with())
    assert not surge.plans and not surge.in_flight
    assert "rolled back (pods Pending)" in surge.skips[0].reason
    later = replace(op, deadline=NOW - 601)
    _, _, surge = run(skewed(annotations={SURGE_STATE: later.to_json()}), policy_with())
    assert surge.plans


def test_a_finished_rollback_is_kept_as_rolled_back() -> None:
    rolling = replace(SURGING, phase=Phase.ROLLING_BACK, reason="late")
    done = step(BEFORE, rolling, NOW + 900, replicas=6)
    after = next_operation(rolling, done)
    assert after is not None and after.phase is Phase.ROLLED_BACK


def test_an_operation_of_another_policy_is_a_skip() -> None:
    op = Operation("other", 6, 8, NOW - 10, NOW + 290)
    _, _, surge = run(skewed(annotations={SURGE_STATE: op.to_json()}, replicas=8), policy_with())
    assert not surge.in_flight
    assert [s.reason for s in surge.skips] == ["a surge of policy other is in flight"]


# --------------------------------------------------------------------------------------------
# The state machine


def step(pods: list[tuple[str, str]], op: Operation, now: float = NOW, **kw: Any) -> Any:
    docs = cluster(pods, annotations={SURGE_STATE: op.to_json()}, **kw)
    state = load_documents([("t", d) for d in docs]).state
    (f,) = operations(analyze(state, policy_with()), "default", now)
    return f.action


SURGING = Operation("default", 6, 8, NOW - 10, NOW + 290)
BEFORE = [("a", "Ready")] * 4 + [("b", "Ready"), ("c", "Ready")]
AFTER = [*BEFORE, ("b", "Ready"), ("c", "Ready")]  # the scheduler placed the two new pods


@pytest.mark.parametrize(
    ("pods", "op", "kw", "now", "kind"),
    [
        # Surging
        (AFTER, SURGING, {"replicas": 8}, NOW, ActionKind.MARK_AND_SCALE_BACK),
        (
            [*BEFORE, ("b", "Pending"), ("c", "Ready")],
            SURGING,
            {"replicas": 8},
            NOW,
            ActionKind.WAIT,
        ),
        (
            [*BEFORE, ("b", "NotReady"), ("c", "Ready")],
            SURGING,
            {"replicas": 8},
            NOW,
            ActionKind.WAIT,
        ),
        (
            [*BEFORE, ("b", "Pending"), ("c", "Ready")],
            SURGING,
            {"replicas": 8},
            NOW + 300,
            ActionKind.ROLLBACK,
        ),
        (AFTER, SURGING, {"replicas": 9}, NOW, ActionKind.STAND_DOWN),
        (BEFORE, SURGING, {"replicas": 6}, NOW, ActionKind.STAND_DOWN),
        # Marking: the victims recorded still exist
        (
            AFTER,
            replace(SURGING, phase=Phase.MARKING, victims=("uid-1", "uid-2")),
            {"replicas": 8},
            NOW,
            ActionKind.SCALE_BACK,
        ),
        # Marking: a victim is gone: chosen again
        (
            AFTER,
            replace(SURGING, phase=Phase.MARKING, victims=("uid-1", "uid-99")),
            {"replicas": 8},
            NOW,
            ActionKind.MARK_AND_SCALE_BACK,
        ),
        (
            AFTER,
            replace(SURGING, phase=Phase.MARKING, victims=("uid-1", "uid-2")),
            {"replicas": 3},
            NOW,
            ActionKind.STAND_DOWN,
        ),
        # Draining and RollingBack
        (AFTER, replace(SURGING, phase=Phase.DRAINING), {"replicas": 6}, NOW, ActionKind.WAIT),
        (
            AFTER[2:],
            replace(SURGING, phase=Phase.DRAINING),
            {"replicas": 6},
            NOW,
            ActionKind.DONE,
        ),
        (
            AFTER,
            replace(SURGING, phase=Phase.DRAINING),
            {"replicas": 8},
            NOW,
            ActionKind.STAND_DOWN,
        ),
        (
            BEFORE,
            replace(SURGING, phase=Phase.ROLLING_BACK),
            {"replicas": 6},
            NOW + 900,
            ActionKind.DONE,
        ),
    ],
)
def test_advance(
    pods: list[tuple[str, str]], op: Operation, kw: dict[str, Any], now: float, kind: ActionKind
) -> None:
    assert step(pods, op, now, **kw).kind is kind


def test_the_victims_are_the_pods_in_the_crowded_domain_with_the_lowest_costs() -> None:
    action = step(AFTER, SURGING, replicas=8)
    assert [v.pod.node_name for v in action.victims] == ["n-a", "n-a"]
    assert [v.cost for v in action.victims] == [VICTIM_COST, VICTIM_COST + 1]


def test_a_rollback_removes_the_pending_pods_first() -> None:
    pods = [*BEFORE, ("b", "Pending"), ("c", "Ready")]
    action = step(pods, SURGING, NOW + 300, replicas=8)
    assert action.victims[0].pod.node_name is None  # the Pending one
    assert action.victims[1].pod.node_name == "n-a"  # then the crowded domain


def test_next_operation_records_the_phase_and_the_victims() -> None:
    action = step(AFTER, SURGING, replicas=8)
    marking = next_operation(SURGING, action)
    assert marking is not None and marking.phase is Phase.MARKING
    assert marking.victims == tuple(v.pod.uid for v in action.victims)
    done = step(AFTER[2:], replace(SURGING, phase=Phase.DRAINING), replicas=6)
    assert next_operation(SURGING, done) is None


@given(
    original=st.integers(0, 1000),
    extra=st.integers(1, 100),
    started=st.floats(0, 2e9),
    phase=st.sampled_from(list(Phase)),
    victims=st.lists(st.text(min_size=1, max_size=20), max_size=5),
)
def test_the_annotation_round_trips(
    original: int, extra: int, started: float, phase: Phase, victims: list[str]
) -> None:
    op = Operation("p", original, original + extra, started, started + 300, phase, tuple(victims))
    assert Operation.parse(op.to_json()) == op


@pytest.mark.parametrize(
    "raw", [None, "", "{", "[]", '{"policy": "p"}', '{"policy":"p","originalReplicas":"x"}']
)
def test_an_unreadable_annotation_is_no_operation(raw: str | None) -> None:
    assert Operation.parse(raw) is None


# --------------------------------------------------------------------------------------------
# Deletion costs, report, status, policy


def test_deletion_costs_are_not_rewritten_while_a_surge_holds_the_deployment() -> None:
    policy = replace(
        policy_with(),
        remediation=RemediationSettings(
            deletion_cost=DeletionCostSettings(enabled=True), surge=SurgeSettings(enabled=True)
        ),
    )
    analysis, _, surge = run(skewed(), policy)
    costs = plan_costs(analysis, policy.remediation.deletion_cost)
    assert costs.patches
    held = hold_costs(costs, surge.busy)
    assert held is not None and not held.patches


def test_the_report_names_the_remedies_and_the_surge_steps() -> None:
    policy = policy_with()
    analysis, result, surge = run(skewed(), policy)
    report = build_report(analysis, result, policy, surge=surge)
    (v,) = report.violations
    assert v.remedy is Remedy.SURGE
    assert [r.remedy for r in v.remedies] == [Remedy.EVICT, Remedy.DELETION_COST, Remedy.SURGE]
    (p,) = report.surge.plans
    assert (p.plan.original, p.plan.target, len(p.steps)) == (6, 8, 4)
    text = render_text(report)
    assert "Would surge ns1/web (Deployment) 6 -> 8 -> 6 replicas:" in text
    assert "scale spec.replicas 8 -> 6" in text
    (digest,) = surge_digest(report)
    assert digest.state is SurgeState.PLANNED


def test_a_skip_is_reported_with_its_reason() -> None:
    policy = policy_with()
    analysis, result, surge = run(skewed(labels={"helm.toolkit.fluxcd.io/name": "w"}), policy)
    report = build_report(analysis, result, policy, surge=surge)
    (sk,) = report.surge.skipped
    assert "Flux (HelmRelease)" in sk.reason
    surge_remedy = report.violations[0].remedies[2]
    assert surge_remedy.applies is False and "Flux" in surge_remedy.reason
    assert "Not surged: ns1/web" in render_text(report)


def test_without_surge_the_report_section_is_disabled() -> None:
    policy = DEFAULT_POLICY
    analysis, result, surge = run(skewed(), policy)
    report = build_report(analysis, result, policy, surge=surge)
    assert report_json(report)["surge"] == {
        "enabled": False,
        "plans": [],
        "skipped": [],
        "operations": [],
    }


def _policy(surge: dict[str, Any]) -> RebalancePolicy:
    return parse_policy(
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": "p"},
            "spec": {"remediation": {"surge": surge}},
        }
    )


def test_policy_defaults_and_values() -> None:
    assert _policy({}).remediation.surge == SurgeSettings()
    s = _policy(
        {
            "enabled": True,
            "when": "Always",
            "maxSurge": 5,
            "readyTimeout": "90s",
            "allowAutoscaled": True,
        }
    ).remediation.surge
    assert s == SurgeSettings(True, SurgeWhen.ALWAYS, 5, 90.0, True)


@pytest.mark.parametrize(
    ("surge", "field"),
    [
        ({"maxSurge": 0}, "maxSurge"),
        ({"maxSurge": 101}, "maxSurge"),
        ({"when": "Sometimes"}, "when"),
        ({"readyTimeout": "5s"}, "readyTimeout"),
        ({"readyTimeout": "5"}, "readyTimeout"),
        ({"enabled": "yes"}, "enabled"),
        ({"surplus": 1}, "surplus"),
    ],
)
def test_policy_errors(surge: dict[str, Any], field: str) -> None:
    with pytest.raises(PolicyError) as err:
        _policy(surge)
    assert field in str(err.value)


# --------------------------------------------------------------------------------------------
# Snapshots and the command line


def test_a_snapshot_carries_what_the_guards_read() -> None:
    docs = skewed(hpa=True, paused=True, labels={"helm.toolkit.fluxcd.io/name": "w", "x": "y"})
    state = load_documents([("t", d) for d in docs]).state
    (dep,) = [w for w in state.workloads if w.kind == "Deployment"]
    assert (dep.uid, dep.resource_version, dep.paused) == ("dep-uid", "100", True)
    assert dep.rollout is not None and (dep.rollout.replicas, dep.rollout.ready) == (6, 6)
    assert dict(dep.markers) == {"helm.toolkit.fluxcd.io/name": "w"}  # "x" is not kept
    (hpa,) = state.autoscalers
    assert (hpa.namespace, hpa.target_kind, hpa.target_name) == ("ns1", "Deployment", "web")


def test_the_command_shows_the_surge_steps_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = tmp_path / "cluster.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": skewed()}))
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: respread.io/v1alpha1\nkind: RebalancePolicy\nmetadata: {name: p}\n"
        "spec: {remediation: {surge: {enabled: true, readyTimeout: 90s}}}\n"
    )
    args = ["plan", "--snapshot", str(snapshot), "--policy", str(policy)]
    assert main([*args, "--now", "2027-01-15T08:00:00Z"]) == 0
    text = capsys.readouterr().out
    assert "Would surge ns1/web (Deployment) 6 -> 8 -> 6 replicas:" in text
    assert "2. wait until all 8 replicas are Ready (at most 90s; else roll back to 6)" in text
    assert main([*args, "--now", "2027-01-15T08:00:00Z", "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (p,) = report["surge"]["plans"]
    assert (p["surge"], p["readyTimeoutSeconds"]) == (2, 90.0)
    assert report["violations"][0]["remedy"] == "Surge"


# --------------------------------------------------------------------------------------------
# Properties


@given(
    counts=st.lists(st.integers(0, 6), min_size=2, max_size=4).filter(
        lambda c: sum(c) >= 2 and max(c) - min(c) > 1
    ),
    max_surge=st.integers(1, 6),
)
def test_a_planned_surge_fixes_the_skew_within_the_cap_and_removes_as_many_as_it_adds(
    counts: list[int], max_surge: int
) -> None:
    zones = tuple("abcd"[: len(counts)])
    pods = [(z, "Ready") for z, n in zip(zones, counts, strict=True) for _ in range(n)]
    _, result, surge = run(cluster(pods, zones=zones), policy_with(max_surge=max_surge))
    assert not result.moves  # the budget blocks every eviction
    for p in surge.plans:
        assert 1 <= p.surge <= max_surge
        assert len(p.landings) == len(p.victims) == p.surge
        assert len({v.pod.uid for v in p.victims}) == p.surge  # distinct, existing pods
        assert p.misplaced_after == 0
        final = dict(zip(zones, counts, strict=True))
        for lnd in p.landings:
            final[dict(lnd.domains)["zone"]] += 1
        for v in p.victims:
            final[dict(v.domains)["zone"]] -= 1
        assert max(final.values()) - min(final.values()) <= 1, final
    for sk in surge.skips:
        assert sk.reason  # every Deployment not planned says why
    assert len(surge.plans) + len(surge.skips) == 1


@given(
    ready=st.integers(0, 2),
    pending=st.integers(0, 2),
    late=st.booleans(),
)
def test_no_action_removes_more_than_the_surge_added(ready: int, pending: int, late: bool) -> None:
    extra = [("b", "Ready")] * ready + [("c", "Pending")] * pending
    action = step(BEFORE + extra, SURGING, NOW + (300 if late else 0), replicas=8)
    assert len(action.victims) <= SURGING.target - SURGING.original
    if action.kind in (ActionKind.MARK_AND_SCALE_BACK, ActionKind.ROLLBACK):
        assert len(action.victims) == 2
        assert len({v.pod.uid for v in action.victims}) == 2


def test_what_a_surge_report_says_of_a_workload_is_its_first_entry_kept_through_replace() -> None:
    web, api = WorkloadRef("ns1", "Deployment", "web"), WorkloadRef("ns1", "Deployment", "api")
    report = SurgeReport(True, skips=(SurgeSkip(web, "first"), SurgeSkip(web, "second")))
    assert {w: s.reason for w, s in report.said.items() if isinstance(s, SurgeSkip)} == {
        web: "first"
    }
    other = replace(report, skips=(SurgeSkip(api, "api's"),))
    assert set(other.said) == {api}
    assert report == SurgeReport(True, skips=report.skips)  # compared by what it holds
