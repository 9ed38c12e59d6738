"""Surges whose policy is gone (surge_orphans.py): each ends at its original count, never left
at n + k, with the same stand-down rule as any operation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from respread.analysis.groups import analyze
from respread.core.annotations import SURGE_STATE
from respread.core.model import ClusterState
from respread.inputs.objects import load_documents
from respread.inputs.policy import RebalancePolicy, RemediationSettings, Selection, SurgeSettings
from respread.remedies.surge.advance import ActionKind, next_operation, operations
from respread.remedies.surge.operation import Operation, Phase
from respread.remedies.surge.orphans import (
    deployment_pods,
    in_flight_count,
    newest_first,
    orphans,
    overdue,
    unknown_policies,
)
from respread.remedies.surge.victims import VICTIM_COST
from tests.unit.remedies.surge.test_plan import (
    AFTER,
    BEFORE,
    NOW,
    SURGING,
    WEB,
    cluster,
    policy_with,
)


def state_of(pods: list[tuple[str, str]], op: Operation | None, **kw: Any) -> ClusterState:
    annotations = {SURGE_STATE: op.to_json()} if op is not None else {}
    docs = cluster(pods, annotations=annotations, **kw)
    return load_documents([("t", d) for d in docs]).state


def step(pods: list[tuple[str, str]], op: Operation, **kw: Any) -> Any:
    (f,) = orphans(state_of(pods, op, **kw), {op.policy})
    assert f.orphaned
    return f.action


MARKING = replace(SURGING, phase=Phase.MARKING, victims=("uid-1", "uid-2"))


@pytest.mark.parametrize(
    ("pods", "op", "replicas", "kind"),
    [
        # Surging: rolled back, whether the new pods are Ready or not (the policy that wanted
        # the change is gone: back to the pods the owner had)
        (AFTER, SURGING, 8, ActionKind.ROLLBACK),
        ([*BEFORE, ("b", "Pending"), ("c", "Ready")], SURGING, 8, ActionKind.ROLLBACK),
        (BEFORE, SURGING, 8, ActionKind.ROLLBACK),  # the new pods not even created yet
        # Marking with its victims recorded: the decision was taken, scale back with them
        (AFTER, MARKING, 8, ActionKind.SCALE_BACK),
        # Marking whose victims are gone: rolled back
        (AFTER, replace(MARKING, victims=("uid-1", "uid-99")), 8, ActionKind.ROLLBACK),
        # Draining and RollingBack: waited for, then done
        (AFTER, replace(SURGING, phase=Phase.DRAINING), 6, ActionKind.WAIT),
        (AFTER[2:], replace(SURGING, phase=Phase.DRAINING), 6, ActionKind.DONE),
        (BEFORE, replace(SURGING, phase=Phase.ROLLING_BACK), 6, ActionKind.DONE),
        # A record of a rollback: removed
        (BEFORE, replace(SURGING, phase=Phase.ROLLED_BACK), 6, ActionKind.DONE),
        # Someone else changed spec.replicas: stand down, whatever the phase
        (AFTER, SURGING, 9, ActionKind.STAND_DOWN),
        (AFTER, MARKING, 6, ActionKind.STAND_DOWN),
        (AFTER, replace(SURGING, phase=Phase.DRAINING), 8, ActionKind.STAND_DOWN),
    ],
)
def test_orphan_action(
    pods: list[tuple[str, str]], op: Operation, replicas: int, kind: ActionKind
) -> None:
    assert step(pods, op, replicas=replicas).kind is kind


def test_a_rollback_removes_the_new_pods_not_ready_first_then_the_newest() -> None:
    pods = [*BEFORE, ("b", "Ready"), ("c", "Pending")]
    action = step(pods, SURGING, replicas=8)
    assert [v.pod.uid for v in action.victims] == ["uid-8", "uid-7"]
    assert [v.cost for v in action.victims] == [VICTIM_COST, VICTIM_COST + 1]
    assert "is gone" in action.reason


def test_a_marking_scales_back_with_the_recorded_victims() -> None:
    action = step(AFTER, MARKING, replicas=8)
    assert [v.pod.uid for v in action.victims] == ["uid-1", "uid-2"]


def test_an_orphan_leaves_no_record_once_back() -> None:
    rolling = replace(SURGING, phase=Phase.ROLLING_BACK)
    (f,) = orphans(state_of(BEFORE, rolling, replicas=6), {"default"})
    assert next_operation(rolling, f.action, keep_record=f.orphaned is False) is None
    # while a policy's own rollback keeps its record for the cooldown
    kept = next_operation(rolling, f.action)
    assert kept is not None and kept.phase is Phase.ROLLED_BACK


def test_only_the_operations_of_policies_confirmed_gone_are_orphans() -> None:
    state = state_of(AFTER, SURGING, replicas=8)
    assert orphans(state, {"other"}) == ()
    assert unknown_policies(state, {"default"}) == frozenset()
    assert unknown_policies(state, {"other"}) == {"default"}
    assert unknown_policies(state_of(AFTER, None), set()) == frozenset()


def test_the_deployment_pods_are_found_through_its_replica_sets() -> None:
    state = state_of(AFTER, SURGING, replicas=8)
    assert len(deployment_pods(state, WEB)) == 8
    assert deployment_pods(state, replace(WEB, name="other")) == []


def test_the_gauges() -> None:
    state = state_of(AFTER, SURGING, replicas=8)
    assert in_flight_count(state) == 1
    assert overdue(state, NOW) == 0.0
    assert overdue(state, SURGING.deadline + 42) == 42.0
    done = state_of(BEFORE, replace(SURGING, phase=Phase.ROLLED_BACK), replicas=6)
    assert in_flight_count(done) == 0
    assert overdue(done, NOW + 10_000) == 0.0


@given(
    ready=st.integers(0, 2),
    pending=st.integers(0, 2),
    not_ready=st.integers(0, 2),
    phase=st.sampled_from([Phase.SURGING, Phase.MARKING]),
)
def test_an_orphan_never_takes_ready_pods_below_the_original_count(
    ready: int, pending: int, not_ready: int, phase: Phase
) -> None:
    """Whatever the new pods' states, the pods an orphan's scale-back removes leave at least the
    original count of Ready pods (the originals are Ready), and it removes only what was added."""
    extra = [("b", "Ready")] * ready + [("c", "Pending")] * pending
    extra += [("c", "NotReady")] * not_ready
    op = replace(SURGING, target=SURGING.original + len(extra), phase=phase)
    pods = BEFORE + extra
    action = step(pods, op, replicas=op.target)
    assert action.kind in (ActionKind.ROLLBACK, ActionKind.SCALE_BACK)
    removed = {v.pod.uid for v in action.victims}
    assert len(removed) == len(action.victims) == len(extra)
    all_pods = deployment_pods(state_of(pods, op, replicas=op.target), WEB)
    left_ready = [p for p in all_pods if p.uid not in removed and p.ready and p.node_name]
    assert len(left_ready) >= op.original


def test_newest_first_takes_nothing_for_nothing() -> None:
    assert newest_first([], 3) == ()
    state = state_of(BEFORE, None)
    assert newest_first(deployment_pods(state, WEB), 0) == ()


@pytest.mark.parametrize(
    "policy",
    [
        # no longer selects the namespace
        replace(policy_with(), selection=Selection(exclude_namespaces=frozenset({"ns1"}))),
        # the remedy disabled
        replace(policy_with(), remediation=RemediationSettings(surge=SurgeSettings())),
        # DryRun (the default mode of policy_with)
        policy_with(),
    ],
)
def test_a_policy_that_no_longer_allows_new_surges_still_ends_its_own(
    policy: RebalancePolicy,
) -> None:
    """Its rounds keep advancing the operation: all Ready, scaled back by k, 2 victims (the
    crowded domain's when the namespace is analysed, the newest pods when it is not)."""
    state = state_of(AFTER, SURGING, replicas=8)
    (f,) = operations(analyze(state, policy), policy.name, NOW)
    assert f.action.kind is ActionKind.MARK_AND_SCALE_BACK
    assert len({v.pod.uid for v in f.action.victims}) == 2
