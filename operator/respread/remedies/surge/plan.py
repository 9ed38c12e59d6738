"""Surge moves (make before break): fix a Deployment's skew without evicting anything.

For a violated Deployment whose eviction plan is blocked (budgets, caps, protections), or every
violated Deployment with ``when: Always``, a surge move:

1. raises spec.replicas from n to n + k, k being the moves needed (analysis.minimum_moves, the
   largest over the workload's violated hard constraints), at most ``maxSurge``. The scheduler
   places the k new pods; its PodTopologySpread filter only admits them to domains where
   ``count + 1 - min <= maxSkew``, so they land in the least crowded domains;
2. waits (at most ``readyTimeout``) until every one of the n + k pods is Ready;
3. gives the k pods in the crowded domains the lowest pod-deletion-cost and scales back to n:
   the ReplicaSet controller deletes exactly those pods (all pods are Ready: the cost decides).
   Victims that would make another workload's spread worse (surge/others.py) are avoided when
   others as good exist; when none does, the surge is rolled back.

Availability never drops below n and no budget is consumed. The parts, one job each: the
operation's state, an annotation on the Deployment (surge/operation.py); why a Deployment is
left alone (surge/guards.py); the Deployment on the what-if working counts (surge/workload.py);
the victims (surge/victims.py); the prediction of a surge of k (surge/predict.py); advancing an
operation in flight (surge/advance.py); this module decides which Deployments to surge.

Everything here is pure: ``plan_surges`` decides, ``advance`` steps an operation, and
runtime/surges.py writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from respread.analysis.groups import Analysis, Group, WorkloadRef
from respread.core.annotations import SURGE_STATE
from respread.core.model import Workload
from respread.inputs.policy import RebalancePolicy, SurgeWhen
from respread.remedies.surge.advance import InFlight, operations
from respread.remedies.surge.guards import deployments, guard
from respread.remedies.surge.operation import Operation, Phase, operation_of
from respread.remedies.surge.others import harm_to_others
from respread.remedies.surge.predict import Landing, predict
from respread.remedies.surge.victims import Victim
from respread.remedies.surge.workload import members_of


@dataclass(frozen=True, slots=True)
class SurgePlan:
    workload: WorkloadRef
    deployment: Workload
    original: int
    surge: int  # k: the extra replicas
    landings: tuple[Landing, ...]  # where the scheduler is predicted to place them
    victims: tuple[Victim, ...]  # predicted: chosen again from the real placement
    misplaced_after: int  # predicted misplaced pods of the workload after the surge
    # after the worst admissible placement (each new pod in the most crowded domain the Filter
    # admits), when the landing is not determined; else misplaced_after
    worst_misplaced: int = 0

    @property
    def target(self) -> int:
        """spec.replicas during the surge."""
        return self.original + self.surge

    @property
    def determined(self) -> bool:
        """Whether the Filter admits each new pod to one domain only (no choice left to the
        scheduler's scoring)."""
        return not any(lnd.others for lnd in self.landings)


@dataclass(frozen=True, slots=True)
class SurgeSkip:
    workload: WorkloadRef
    reason: str


@dataclass(frozen=True, slots=True)
class SurgeReport:
    enabled: bool
    plans: tuple[SurgePlan, ...] = ()
    skips: tuple[SurgeSkip, ...] = ()
    in_flight: tuple[InFlight, ...] = ()
    notes: Mapping[WorkloadRef, str] = field(default_factory=dict)  # per workload: why/what
    # per workload, the first of its operations in flight, else plans, else skips (what the
    # report says of it; looked up once per violation)
    said: Mapping[WorkloadRef, InFlight | SurgePlan | SurgeSkip] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        said: dict[WorkloadRef, InFlight | SurgePlan | SurgeSkip] = {}
        entries: list[InFlight | SurgePlan | SurgeSkip] = [
            *self.in_flight,
            *self.plans,
            *self.skips,
        ]
        for entry in entries:
            said.setdefault(entry.workload, entry)
        object.__setattr__(self, "said", said)

    @property
    def busy(self) -> frozenset[WorkloadRef]:
        """Workloads a surge plans or holds: no eviction and no cost rewrite for them."""
        return frozenset(p.workload for p in self.plans) | frozenset(
            f.workload for f in self.in_flight
        )


def plan_surges(
    analysis: Analysis,
    eviction_blocked: frozenset[WorkloadRef],
    policy: RebalancePolicy,
    now: float,
) -> SurgeReport:
    """Per violated Deployment: a surge plan or the reason there is none; and every operation
    in flight (of any policy: only this policy's are advanced), with its next action.
    ``eviction_blocked``: the violated workloads that eviction does not fix (the chooser's)."""
    in_flight = operations(analysis, policy.name, now)
    if not policy.remediation.surge.enabled:
        return SurgeReport(False, in_flight=in_flight)
    flying = {f.workload for f in in_flight}
    deps = deployments(analysis)
    by_workload: dict[WorkloadRef, list[Group]] = {}
    for g in analysis.violations:
        by_workload.setdefault(g.workload, []).append(g)
    plans: list[SurgePlan] = []
    skips: list[SurgeSkip] = []
    for ref, groups in sorted(by_workload.items()):
        if ref.kind != "Deployment" or ref in flying:
            continue
        found = _plan_one(
            analysis,
            ref,
            groups,
            dep=deps.get(ref),
            eviction_blocked=eviction_blocked,
            policy=policy,
            now=now,
        )
        if isinstance(found, SurgePlan):
            plans.append(found)
        else:
            skips.append(SurgeSkip(ref, found))
    return SurgeReport(True, tuple(plans), tuple(skips), in_flight)


def _plan_one(
    analysis: Analysis,
    ref: WorkloadRef,
    groups: list[Group],
    *,
    dep: Workload | None,
    eviction_blocked: frozenset[WorkloadRef],
    policy: RebalancePolicy,
    now: float,
) -> SurgePlan | str:
    """The surge of one violated Deployment, or why there is none."""
    if dep is None:
        return "the Deployment is not in the cluster state"
    why = _recorded(dep, policy, now)
    if why is None and policy.remediation.surge.when is SurgeWhen.WHEN_EVICTION_BLOCKED:
        why = (
            None
            if ref in eviction_blocked
            else "eviction fixes it (surge.when is WhenEvictionBlocked)"
        )
    why = why or guard(analysis, dep, policy)
    if why is not None:
        return why
    needed = _moves_needed(groups, policy.remediation.surge.max_surge)
    if isinstance(needed, str):
        return needed
    return _predicted(analysis, ref, dep, policy.remediation.surge.max_surge, needed)


def _recorded(dep: Workload, policy: RebalancePolicy, now: float) -> str | None:
    """Why the Deployment's operation annotation forbids a new surge (None: it does not)."""
    other = operation_of(dep)
    if other is None and dep.markers.get(SURGE_STATE):
        # A surge's record damaged (edited by hand?): its replicas may still be raised, and
        # a new surge would take them for the original count.
        return (
            f"its {SURGE_STATE} annotation is unreadable: set spec.replicas as wanted"
            " and remove the annotation"
        )
    if other is not None and other.phase is Phase.ROLLED_BACK:
        if now < other.deadline + policy.eviction.cooldown:
            return (
                f"the last surge was rolled back ({other.reason}); not retried within "
                "spec.eviction.cooldown"
            )
        return None
    if other is not None:
        return f"a surge of policy {other.policy} is in flight"
    return None


def _moves_needed(groups: list[Group], max_surge: int) -> int | str:
    """The extra replicas the violated hard constraints need (the most any one needs), or why
    a surge cannot fix them."""
    hard = [g for g in groups if g.constraint.hard]
    if not hard:
        return "only soft constraints are violated"
    moves = [g.minimum_moves for g in hard]
    if any(m is None for m in moves):
        return "moves cannot fix it (too few eligible domains)"
    needed = max(m for m in moves if m is not None)
    if needed > max_surge:
        return f"needs {needed} extra replicas, above maxSurge {max_surge}"
    return needed


def _predicted(
    analysis: Analysis, ref: WorkloadRef, dep: Workload, max_surge: int, needed: int
) -> SurgePlan | str:
    """The plan for the smallest surge predicted to fix the Deployment harming no other
    workload, or why there is none."""
    members = members_of(analysis, ref)
    assert dep.replicas is not None
    found = (
        predict(analysis, members, dep.replicas, max_surge, needed) if members is not None else None
    )
    if found is None or members is None:
        return "no node would take a new pod"
    if found.misplaced:
        return (
            f"a surge of up to {found.surge} is predicted to leave {found.misplaced}"
            " misplaced pod(s)"
        )
    harm = harm_to_others(
        analysis,
        ref,
        members.labels,
        (lnd.node for lnd in found.landings),
        (v.pod.node_name for v in found.victims if v.pod.node_name is not None),
    )
    if harm is not None:
        return harm
    return SurgePlan(
        ref,
        dep,
        dep.replicas,
        found.surge,
        found.landings,
        found.victims,
        found.misplaced,
        found.worst,
    )


def start(plan: SurgePlan, policy: RebalancePolicy, now: float) -> Operation:
    """The operation a ScaleUp writes."""
    return Operation(
        policy=policy.name,
        original=plan.original,
        target=plan.original + plan.surge,
        started=now,
        deadline=now + policy.remediation.surge.ready_timeout,
    )
