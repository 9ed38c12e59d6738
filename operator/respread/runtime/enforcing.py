"""Carrying out a scan's planned evictions, each only on a cluster known to be as planned.

Before each eviction:

- the scan's guard (runtime/guard.py): within the deadline, no process pause since the plan,
  every watch current, the plan not too old, this replica still leading;
- from the second eviction on, the watch cache is shown current again (runtime/freshness.py),
  and whatever the move depends on must be as the plan saw it
  (remedies/evict/premises.py: nodes, and the namespace's pods, workloads, budgets and
  services, less the scan's own evictions); the first one's plan was made from a cache shown
  current when the scan started, and is compared with the cache as it is;
- the pod itself must be the one planned (uid, node, not terminating; the eviction carries its
  uid as a precondition too);
- a slot in the eviction ledger (runtime/ledger.py): no other scan, of any policy, evicted from
  the workload within the cooldowns, and this scan stays within maxPerWorkload.

Anything that fails stops the scan's evictions (Halt): the ones left are reported as deferred,
and why. An eviction the API server never answered may still happen: it keeps its ledger slot,
and nothing more is sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kubernetes import client

from respread.core.model import ClusterState, Pod
from respread.inputs.policy import RebalancePolicy
from respread.kube.client import KubeError
from respread.kube.evictions import Outcome, Result, evict
from respread.kube.writer import post_event
from respread.remedies.evict.premises import Evicted, changed_since_plan
from respread.remedies.evict.steps import Move
from respread.report.model import Execution, StepStatus
from respread.runtime import metrics
from respread.runtime.cache import ClusterCache
from respread.runtime.freshness import Freshness
from respread.runtime.guard import Halt, HaltReason, ScanGuard
from respread.runtime.ledger import Ledger, Slot

log = logging.getLogger(__name__)

# One policy evicts at a time, whatever the number of policies.
ENFORCEMENT = asyncio.Lock()

EXECUTED = {  # what an eviction request's answer makes of its plan step
    Result.EVICTED: StepStatus.EVICTED,
    Result.BLOCKED: StepStatus.BLOCKED,
    Result.FAILED: StepStatus.FAILED,
}


@dataclass(frozen=True, slots=True)
class Safety:
    """What keeps a scan from acting on stale state: its guard (deadline, pauses, watches, plan
    age, leadership), the freshness proof (None: the cache is taken as current) and the
    eviction ledger (None: the policy's own cooldowns only)."""

    guard: ScanGuard
    freshness: Freshness | None = None
    ledger: Ledger | None = None


@dataclass
class Enforcing:
    """What a scan's evictions work with."""

    api: client.ApiClient
    cache: ClusterCache
    policy: RebalancePolicy
    guard: ScanGuard
    planned: ClusterState  # the snapshot the plan was made from
    run: str  # this scan, in the ledger
    freshness: Freshness | None = None  # None: the cache is taken as current (tests)
    ledger: Ledger | None = None  # None: no ledger (the policy's own cooldown only)
    on_evicted: Callable[[Move], None] = lambda move: None
    evicted: list[Evicted] = field(default_factory=list)
    sent: bool = False  # an eviction was sent since the cache was last shown current


@dataclass(frozen=True, slots=True)
class Enforced:
    executions: list[Execution]
    halt: Halt | None = None


def _pod_changed(move: Move, current: Pod | None) -> bool:
    return (
        current is None
        or current.uid != move.pod.uid
        or current.node_name != move.from_node
        or current.terminating
    )


def _deferred(moves: Sequence[Move], why: str) -> list[Execution]:
    return [
        Execution(m.pod.namespace, m.pod.name, StepStatus.DEFERRED, f"not evicted: {why}")
        for m in moves
    ]


async def _shown_current(job: Enforcing) -> None:
    if job.freshness is None:
        return
    bound = min(job.guard.limits.catch_up, job.guard.left())
    if bound <= 0:
        return  # the guard's check says why
    try:
        await job.freshness.establish(bound)
    except KubeError as err:
        raise Halt(HaltReason.STALE, f"the watch cache is not known to be current: {err}") from None


def _premises(job: Enforcing, move: Move) -> None:
    changed = changed_since_plan(job.planned, job.cache.snapshot(), move.pod.namespace, job.evicted)
    if changed:
        raise Halt(HaltReason.CHANGED, changed)


async def _reserve(job: Enforcing, move: Move) -> str:
    if job.ledger is None:
        return ""
    ev = job.policy.eviction
    slot = Slot(
        move.workload,
        move.pod.name,
        move.pod.uid or move.pod.name,
        job.policy.name,
        job.run,
        ev.cooldown,
        ev.max_per_workload,
        job.guard.planned_wall,
    )
    try:
        return await job.ledger.reserve(slot)
    except KubeError as err:
        raise Halt(HaltReason.NO_ANSWER, f"the eviction ledger: {err}") from None


async def _evict(job: Enforcing, move: Move) -> Outcome:
    outcome = await asyncio.to_thread(
        evict,
        job.api,
        move.pod.namespace,
        move.pod.name,
        uid=move.pod.uid,
        grace_period_seconds=job.policy.eviction.grace_period_seconds,
        allowed=job.guard.acting,
        refusal=job.guard.refusal,
    )
    metrics.EVICTIONS.labels(job.policy.name, outcome.result.value).inc()
    return outcome


async def _tell_evicted(job: Enforcing, move: Move) -> None:
    where = ", ".join(f"{k}={v}" for k, v in move.to_domain)
    await asyncio.to_thread(
        post_event,
        job.api,
        kind="Pod",
        name=move.pod.name,
        namespace=move.pod.namespace,
        uid=move.pod.uid,
        reason="Rebalanced",
        message=f"evicted by RebalancePolicy {job.policy.name}: {move.reason}; the "
        f"replacement is expected at {where}",
    )


async def _one(job: Enforcing, move: Move) -> Execution:
    """One planned eviction, if everything it depends on holds; Halt when the scan must stop."""
    job.guard.check()
    if job.sent:
        await _shown_current(job)
        job.sent = False
        job.guard.check()
    _premises(job, move)
    pods = {(p.namespace, p.name): p for p in job.cache.snapshot().pods}
    if _pod_changed(move, pods.get((move.pod.namespace, move.pod.name))):
        why = "the pod changed since the scan; not evicted"
        return Execution(move.pod.namespace, move.pod.name, StepStatus.FAILED, why)
    held = await _reserve(job, move)
    if held:
        return Execution(move.pod.namespace, move.pod.name, StepStatus.DEFERRED, held)
    job.guard.check()
    job.sent = True
    outcome = await _evict(job, move)
    execution = Execution(
        move.pod.namespace, move.pod.name, EXECUTED[outcome.result], outcome.reason
    )
    if outcome.result is Result.EVICTED:
        job.evicted.append(Evicted(move.pod.uid, move.pod.owner))
        job.on_evicted(move)
        await _tell_evicted(job, move)
    elif not outcome.answered:
        job.evicted.append(Evicted(move.pod.uid, move.pod.owner))  # it may still happen
        job.cache.mark_suspect(f"an eviction got no answer: {outcome.reason}")
        raise _Unanswered(execution)
    elif job.ledger is not None and move.pod.uid is not None:
        await job.ledger.release(move.workload, move.pod.uid)  # refused: it did not happen
    return execution


class _Unanswered(Exception):  # noqa: N818
    def __init__(self, execution: Execution) -> None:
        super().__init__(execution.reason)
        self.execution = execution


async def enforce_moves(job: Enforcing, moves: Sequence[Move]) -> Enforced:
    """Evict the planned pods in order, each only if it still may be (see the module doc)."""
    executions: list[Execution] = []
    async with ENFORCEMENT:
        for i, move in enumerate(moves):
            try:
                executions.append(await _one(job, move))
            except _Unanswered as stop:
                executions.append(stop.execution)
                halt = Halt(HaltReason.NO_ANSWER, "the API server did not answer an eviction")
                return Enforced(executions + _deferred(moves[i + 1 :], halt.message), halt)
            except Halt as halt:
                log.warning(
                    "RebalancePolicy %s: %d eviction(s) not made: %s",
                    job.policy.name,
                    len(moves) - i,
                    halt.message,
                )
                job.guard.replan = job.guard.replan or halt.reason.replan
                return Enforced(executions + _deferred(moves[i:], halt.message), halt)
    return Enforced(executions)
