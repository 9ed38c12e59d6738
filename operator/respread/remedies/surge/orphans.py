"""Surges whose policy is gone: ended well, never left at n + k (issue 14).

A surge is advanced by its policy's rounds (runtime/surges.py) whatever becomes of the policy
while it exists: switched to DryRun, the surge remedy disabled, or the Deployment no longer
selected, its operations in flight are still finished (they were started in Enforce; freezing at
n + k would be worse than finishing, and finishing only scales back). Once the policy itself is
gone (deleted, being deleted, or no longer valid), no round of it runs: the runtime's orphan
pass finds the Deployments carrying respread's operation annotation naming it and steps them
here:

- `Surging` (or `Marking` otherwise): rolled back. The lowest cost goes on the newest pods (not
  Ready ones first), and replicas go back to n.
- `Marking` with its victims recorded and every pod Ready: scaled back with those victims (the
  decision was taken).
- `Draining`, `RollingBack`: waited for until back at n, then the annotation is removed.
- `RolledBack`: the annotation is removed (no cooldown is left to keep).

The stand-down rule is the same as for any operation: spec.replicas not the value respread set
means someone else changed it; respread removes its annotation and leaves the replicas alone.

Pure: the runtime says which policies are confirmed gone (read from the API server, not merely
absent from its watch: a restarted operator may not have listed them yet).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from respread.analysis.groups import WorkloadRef
from respread.core.model import ClusterState, Pod, Workload
from respread.remedies.surge.advance import Action, ActionKind, InFlight, opening
from respread.remedies.surge.operation import Operation, Phase, operation_of
from respread.remedies.surge.victims import VICTIM_COST, Victim, newest_first
from respread.scheduling.controller import Tier, tier
from respread.scheduling.spread import pod_counts


def annotated(state: ClusterState) -> list[tuple[WorkloadRef, Workload, Operation]]:
    """Every Deployment carrying respread's operation annotation (any phase)."""
    out = []
    for w in state.workloads:
        if w.kind != "Deployment":
            continue
        op = operation_of(w)
        if op is not None:
            out.append((WorkloadRef(w.namespace, w.kind, w.name), w, op))
    return sorted(out, key=lambda t: t[0])


def unknown_policies(state: ClusterState, known: Collection[str]) -> frozenset[str]:
    """The policies named by operations that the runtime does not know (to be read)."""
    return frozenset(op.policy for _, _, op in annotated(state) if op.policy not in known)


def deployment_pods(state: ClusterState, ref: WorkloadRef) -> list[Pod]:
    """The Deployment's active pods (not terminating, not finished), bound or not: those of its
    ReplicaSets (by owner, or by the <deployment>-<pod-template-hash> name if the ReplicaSet is
    not in the state)."""
    sets = {
        w.name
        for w in state.workloads
        if w.kind == "ReplicaSet"
        and w.namespace == ref.namespace
        and w.owner is not None
        and w.owner.kind == "Deployment"
        and w.owner.name == ref.name
    }
    known = {w.name for w in state.workloads if w.kind == "ReplicaSet"}
    out = []
    for p in state.pods:
        if p.namespace != ref.namespace or p.owner is None or p.owner.kind != "ReplicaSet":
            continue
        if not pod_counts(p):
            continue
        rs = p.owner.name
        h = p.labels.get("pod-template-hash")
        if rs in sets or (rs not in known and h is not None and rs == f"{ref.name}-{h}"):
            out.append(p)
    return out


def orphan_action(op: Operation, deployment: Workload, pods: Sequence[Pod]) -> Action:
    """The next step of an operation whose policy is gone."""
    gone = f"RebalancePolicy {op.policy} is gone"
    if op.phase is Phase.ROLLED_BACK:
        return Action(ActionKind.DONE, f"{gone}: its rollback record is removed")
    first = opening(op, deployment, pods)
    if first is not None:
        return first
    k = op.target - op.original
    by_uid = {p.uid: p for p in pods if p.uid is not None}
    all_ready = len(pods) == op.target and all(tier(p) is Tier.READY for p in pods)
    if (
        op.phase is Phase.MARKING
        and all_ready
        and len(op.victims) == k
        and all(uid in by_uid for uid in op.victims)
    ):
        victims = tuple(
            Victim(by_uid[uid], (), VICTIM_COST + rank) for rank, uid in enumerate(op.victims)
        )
        return Action(ActionKind.SCALE_BACK, f"{gone}; victims recorded: scaling back", victims)
    return Action(
        ActionKind.ROLLBACK,
        f"{gone}: rolling back to {op.original} replicas, the newest pods removed",
        newest_first(pods, len(pods) - op.original),
    )


def orphans(state: ClusterState, gone: Collection[str]) -> tuple[InFlight, ...]:
    """The operations of the policies confirmed gone, each with its next action."""
    return tuple(
        InFlight(ref, dep, op, orphan_action(op, dep, deployment_pods(state, ref)), orphaned=True)
        for ref, dep, op in annotated(state)
        if op.policy in gone
    )


def in_flight_count(state: ClusterState) -> int:
    """Operations in flight, any policy (RolledBack records are not in flight)."""
    return sum(1 for _, _, op in annotated(state) if op.phase is not Phase.ROLLED_BACK)


def overdue(state: ClusterState, now: float) -> float:
    """How far past its deadline the oldest operation in flight is (0: none is)."""
    late = [now - op.deadline for _, _, op in annotated(state) if op.phase is not Phase.ROLLED_BACK]
    return max([0.0, *late])
