"""Advancing a surge in flight: the state machine. One observed Deployment and its pods in, one
action out (``advance``); the annotation that action writes (``next_operation``); the costs it
writes (``costs_to_write``). runtime/surges.py acts. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from respread.analysis.groups import Analysis, WorkloadRef, workload_of
from respread.core.model import Pod, Workload
from respread.remedies.surge.guards import deployments
from respread.remedies.surge.operation import Operation, Phase, operation_of
from respread.remedies.surge.others import judge_others
from respread.remedies.surge.victims import (
    VICTIM_COST,
    Victim,
    VictimChoice,
    choose_victims,
    newest_first,
)
from respread.remedies.surge.workload import SurgedWorkload, hard_domains, members_of
from respread.scheduling.controller import Tier, current_cost, tier
from respread.scheduling.spread import pod_counts


class ActionKind(StrEnum):
    SCALE_UP = "ScaleUp"
    WAIT = "Wait"
    MARK_AND_SCALE_BACK = "MarkVictimsAndScaleBack"
    SCALE_BACK = "ScaleBack"  # victims already recorded (a resumed Marking)
    ROLLBACK = "Rollback"
    STAND_DOWN = "StandDown"
    DONE = "Done"


@dataclass(frozen=True, slots=True)
class Action:
    kind: ActionKind
    reason: str
    victims: tuple[Victim, ...] = ()  # MarkVictimsAndScaleBack, ScaleBack, Rollback


@dataclass(frozen=True, slots=True)
class InFlight:
    workload: WorkloadRef
    deployment: Workload
    operation: Operation
    action: Action
    orphaned: bool = False  # its policy is gone (surge/orphans.py): no RolledBack record kept

    @property
    def ready_replicas(self) -> int:
        rollout = self.deployment.rollout
        return rollout.ready if rollout is not None else 0


def operations(analysis: Analysis, policy: str, now: float) -> tuple[InFlight, ...]:
    """The surges of this policy in flight (their Deployments' annotations), each with its next
    action."""
    return tuple(
        InFlight(ref, dep, op, advance(op, dep, analysis, ref, now))
        for ref, dep in sorted(deployments(analysis).items())
        if (op := operation_of(dep)) is not None
        and op.policy == policy
        and op.phase is not Phase.ROLLED_BACK
    )


def _pods_of(analysis: Analysis, workload: WorkloadRef) -> list[Pod]:
    """The workload's active pods (not terminating, not finished), bound or not."""
    index = analysis.index
    return [
        p
        for p in index.state.pods
        if p.namespace == workload.namespace
        and p.owner is not None
        and pod_counts(p)
        and workload_of(p, index) == workload
    ]


def stand_down(op: Operation, deployment: Workload) -> Action | None:
    """Stand down when spec.replicas is not the value respread set (someone else changed it)."""
    expected = op.target if op.phase in (Phase.SURGING, Phase.MARKING) else op.original
    if deployment.replicas != expected:
        return Action(
            ActionKind.STAND_DOWN,
            f"spec.replicas is {deployment.replicas}, not the {expected} respread set: "
            "changed by someone else",
        )
    return None


def drained(op: Operation, deployment: Workload, pods: Sequence[Pod]) -> Action:
    """Draining or rolling back: done once the Deployment is back at its original count."""
    status = deployment.rollout
    if (
        deployment.observed_generation >= deployment.generation
        and status is not None
        and status.replicas == op.original
        and len(pods) == op.original
    ):
        return Action(ActionKind.DONE, f"back to {op.original} replicas")
    return Action(ActionKind.WAIT, f"{len(pods)} pods, scaling back to {op.original}")


def opening(op: Operation, deployment: Workload, pods: Sequence[Pod]) -> Action | None:
    """What every operation does first, its policy alive or gone: stand down when someone else
    changed spec.replicas; once scaling back (Draining, RollingBack), wait until it is over."""
    down = stand_down(op, deployment)
    if down is not None:
        return down
    if op.phase in (Phase.DRAINING, Phase.ROLLING_BACK):
        return drained(op, deployment, pods)
    return None


def advance(
    op: Operation, deployment: Workload, analysis: Analysis, workload: WorkloadRef, now: float
) -> Action:
    """The next step of an operation, from the Deployment and its pods as observed now."""
    pods = _pods_of(analysis, workload)
    first = opening(op, deployment, pods)
    if first is not None:
        return first
    k = op.target - op.original
    if op.phase is Phase.MARKING:
        recorded = _recorded(op, analysis, workload, pods, k)
        if recorded is not None:
            return recorded
    ready = [p for p in pods if p.node_name is not None and tier(p) is Tier.READY]
    if _all_ready(op, deployment, pods, ready):
        return _scale_back(op, analysis, workload, pods, k)
    if now >= op.deadline:
        return _timed_out(op, analysis, workload, pods, len(ready))
    return Action(ActionKind.WAIT, f"{len(ready)} of {op.target} replicas Ready")


def _all_ready(
    op: Operation, deployment: Workload, pods: Sequence[Pod], ready: Sequence[Pod]
) -> bool:
    status = deployment.rollout
    return (
        deployment.observed_generation >= deployment.generation
        and status is not None
        and status.ready >= op.target
        and len(pods) == op.target
        and len(ready) == op.target
    )


def _recorded(
    op: Operation, analysis: Analysis, workload: WorkloadRef, pods: Sequence[Pod], k: int
) -> Action | None:
    """A resumed Marking whose victims are recorded and all there: scale back with them."""
    by_uid = {p.uid: p for p in pods}
    if not (all(uid in by_uid for uid in op.victims) and len(op.victims) == k):
        return None
    members = members_of(analysis, workload)
    victims = tuple(
        Victim(
            by_uid[uid],
            ()
            if members is None
            else hard_domains(analysis.index, members.profile, by_uid[uid].node_name or ""),
            VICTIM_COST + rank,
        )
        for rank, uid in enumerate(op.victims)
    )
    return Action(ActionKind.SCALE_BACK, "victims recorded; scaling back", victims)


def _scale_back(
    op: Operation, analysis: Analysis, workload: WorkloadRef, pods: Sequence[Pod], k: int
) -> Action:
    """Every replica Ready: the k victims that fix the skew best, unless they would make
    another workload's spread worse. The plan judged the predicted placement harmless; when
    the real one is not, the surge ends as a rollback (kept as RolledBack: not retried within
    the cooldown), with the best harmless victims."""
    choice = _victims(analysis, workload, pods, k, rollback=False)
    if choice.harm is None:
        return Action(
            ActionKind.MARK_AND_SCALE_BACK,
            f"all {op.target} replicas Ready; removing the {k} that fix the skew best",
            choice.victims,
        )
    return Action(
        ActionKind.ROLLBACK,
        f"all {op.target} replicas Ready, but removing the {k} that fix the skew best "
        f"would make another workload's spread worse ({choice.harm})",
        choice.harmless or newest_first(pods, k),
    )


def _timed_out(
    op: Operation, analysis: Analysis, workload: WorkloadRef, pods: Sequence[Pod], ready: int
) -> Action:
    """Not every replica Ready at the deadline: roll back, the pods not Ready first."""
    k = op.target - op.original
    choice = _victims(analysis, workload, pods, k, rollback=True)
    reason = f"{ready} of {op.target} replicas Ready at the deadline (readyTimeout)"
    if choice.harm is None:
        return Action(ActionKind.ROLLBACK, reason, choice.victims)
    if choice.harmless is None:
        reason = (
            f"{reason}; the newest pods go, as the crowded ones would make another "
            f"workload's spread worse ({choice.harm})"
        )
    return Action(ActionKind.ROLLBACK, reason, choice.harmless or newest_first(pods, k))


def _arrived(pods: Sequence[Pod], k: int) -> list[str]:
    """The nodes of the surge's new pods that are bound: the k newest pods of the Deployment
    (a creation timestamp is the API server's, so no clock of ours is compared with it)."""
    newest = sorted(pods, key=lambda p: (-(p.created or 0.0), p.name))[: max(k, 0)]
    return [p.node_name for p in newest if p.node_name is not None]


def _victims(
    analysis: Analysis, workload: WorkloadRef, pods: Sequence[Pod], k: int, *, rollback: bool
) -> VictimChoice:
    pending = [p for p in pods if tier(p) < Tier.NOT_READY] if rollback else []
    members = members_of(analysis, workload)
    if members is None:  # not analysed (its namespace no longer selected): the surge's own pods
        return VictimChoice(newest_first(pods, k))
    sim = SurgedWorkload(analysis, members)
    bound = [p for node in sim.positions().values() for p in node]
    judge = judge_others(analysis, workload, members.labels, arrived=_arrived(pods, k))
    return choose_victims(sim, bound, k, pending, judge)


def next_operation(
    current: Operation, action: Action, *, keep_record: bool = True
) -> Operation | None:
    """The annotation an action writes (None: removed). A rollback, once over, stays as
    RolledBack: the Deployment is not surged again within spec.eviction.cooldown (unless
    ``keep_record`` is False: an orphan's policy is gone, no cooldown is left to keep)."""
    if action.kind is ActionKind.DONE and current.phase is Phase.ROLLING_BACK and keep_record:
        return replace(current, phase=Phase.ROLLED_BACK, victims=())
    if action.kind in (ActionKind.DONE, ActionKind.STAND_DOWN):
        return None
    if action.kind is ActionKind.MARK_AND_SCALE_BACK:
        return replace(
            current, phase=Phase.MARKING, victims=tuple(v.pod.uid or "" for v in action.victims)
        )
    if action.kind is ActionKind.ROLLBACK:
        return replace(
            current,
            phase=Phase.ROLLING_BACK,
            victims=tuple(v.pod.uid or "" for v in action.victims),
            reason=action.reason,
        )
    return current


def costs_to_write(victims: Sequence[Victim]) -> list[tuple[Pod, int | None, int]]:
    """(pod, its cost now, the cost to write) for each victim whose cost differs."""
    return [(v.pod, current_cost(v.pod), v.cost) for v in victims if current_cost(v.pod) != v.cost]
