"""Carrying out surge moves (surge.py plans them and steps them; kube/ writes).

Each scan starts the surges it plans (Enforce only) and advances every operation in flight. While
one is in flight, a follower task per policy advances them every FOLLOW seconds, so that a surge
does not wait a whole scan interval between its steps; it ends when none is left. Operations in
flight are advanced in DryRun too: they were started in Enforce, and stopping one half-way would
leave the Deployment surged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from kubernetes import client

from respread.analysis import WorkloadRef, analyze
from respread.kube.annotations import CostResult, write_cost
from respread.kube.deployments import DeploymentWrite, PatchResult, patch_surge, read_surge
from respread.kube.writer import post_event
from respread.model import ClusterState
from respread.policy import Mode, RebalancePolicy
from respread.runtime.cache import ClusterCache
from respread.surge import (
    ActionKind,
    InFlight,
    Operation,
    Phase,
    SurgePlan,
    SurgeReport,
    Victim,
    costs_to_write,
    next_operation,
    operations,
    start,
)

log = logging.getLogger(__name__)

FOLLOW = 5.0  # seconds between rounds while a surge is in flight
SURGES = asyncio.Lock()  # one round at a time (a scan's and the follower's)

Acting = Callable[[], bool]


@dataclass(frozen=True, slots=True)
class SurgeEvent:
    workload: WorkloadRef
    reason: str  # SurgeStarted, SurgeFinished, SurgeRolledBack, SurgeStoodDown, SurgeFailed
    message: str
    warning: bool = False


def _tell(api: client.ApiClient, f: WorkloadRef, uid: str | None, e: SurgeEvent) -> None:
    post_event(
        api,
        kind="Deployment",
        name=f.name,
        namespace=f.namespace,
        uid=uid,
        api_version="apps/v1",
        reason=e.reason,
        warning=e.warning,
        message=e.message,
    )


def _write_victims(api: client.ApiClient, victims: tuple[Victim, ...]) -> list[str]:
    """The victims' lowest pod-deletion-costs; the failures, as messages."""
    failed = []
    for pod, current, cost in costs_to_write(victims):
        write = write_cost(
            api, pod.namespace, pod.name, uid=pod.uid, expected=current, cost=cost, take_over=True
        )
        if write.result is not CostResult.WRITTEN:
            failed.append(f"{pod.name}: {write.reason}")
    return failed


def _start(api: client.ApiClient, p: SurgePlan, policy: RebalancePolicy, now: float) -> SurgeEvent:
    op = start(p, policy, now)
    write = patch_surge(
        api,
        p.workload.namespace,
        p.workload.name,
        resource_version=p.deployment.resource_version,
        operation=op.to_json(),
        replicas=op.target,
    )
    if write.result is PatchResult.WRITTEN:
        return SurgeEvent(
            p.workload,
            "SurgeStarted",
            f"RebalancePolicy {policy.name}: spec.replicas {op.original} -> {op.target} "
            f"(make before break; back to {op.original} once the new pods are Ready)",
        )
    return SurgeEvent(
        p.workload, "SurgeFailed", f"could not start the surge: {write.reason}", warning=True
    )


def _patch_unchanged(
    api: client.ApiClient,
    ref: WorkloadRef,
    version: str | None,
    seen: Operation,
    after: Operation,
    *,
    replicas: int | None = None,
) -> DeploymentWrite:
    """Write ``after`` (and ``replicas``) if the Deployment is at ``version``. On a conflict,
    read it once more: if its replicas and respread's annotation are still as the step saw them
    (the Deployment controller writes its status and revision in between), retry at once with
    the version read; else leave it to the next round (someone else changed it)."""
    write = patch_surge(
        api,
        ref.namespace,
        ref.name,
        resource_version=version,
        operation=after.to_json(),
        replicas=replicas,
    )
    if write.result is not PatchResult.CONFLICT:
        return write
    now = read_surge(api, ref.namespace, ref.name)
    if now is None or now.replicas != seen.target or Operation.parse(now.operation) != seen:
        return write
    return patch_surge(
        api,
        ref.namespace,
        ref.name,
        resource_version=now.resource_version,
        operation=after.to_json(),
        replicas=replicas,
    )


def _advance(api: client.ApiClient, f: InFlight) -> SurgeEvent | None:
    """One step of an operation in flight (blocking: run in a thread)."""
    op, action, ref = f.operation, f.action, f.workload
    dep = f.deployment
    kind = action.kind
    if kind is ActionKind.WAIT:
        return None
    if kind in (ActionKind.DONE, ActionKind.STAND_DOWN):
        after = next_operation(op, action)
        write = patch_surge(
            api,
            ref.namespace,
            ref.name,
            resource_version=dep.resource_version,
            operation=after.to_json() if after is not None else None,
        )
        if write.result is not PatchResult.WRITTEN:
            return None  # the next round sees why
        if kind is ActionKind.DONE:
            rolled = op.phase is Phase.ROLLING_BACK
            return SurgeEvent(
                ref,
                "SurgeRolledBack" if rolled else "SurgeFinished",
                f"{action.reason}" + (f" after a rollback: {op.reason}" if rolled else ""),
                warning=rolled,
            )
        return SurgeEvent(ref, "SurgeStoodDown", action.reason, warning=True)
    version = dep.resource_version
    if kind is ActionKind.MARK_AND_SCALE_BACK:
        marking = next_operation(op, action)
        assert marking is not None
        write = _patch_unchanged(api, ref, version, op, marking)
        if write.result is not PatchResult.WRITTEN:
            return None
        version, op = write.resource_version, marking
    if kind is ActionKind.ROLLBACK:
        rolling = next_operation(op, action)
        assert rolling is not None
        final = rolling
    else:
        final = replace(op, phase=Phase.DRAINING)
    failed = _write_victims(api, action.victims)
    if failed:
        log.warning("surge of %s: pod-deletion-cost not written on %s", ref, "; ".join(failed))
        return SurgeEvent(
            ref, "SurgeFailed", f"victims' costs not written: {failed[0]}", warning=True
        )
    write = _patch_unchanged(api, ref, version, op, final, replicas=op.original)
    if write.result is not PatchResult.WRITTEN:
        return None
    names = ", ".join(v.pod.name for v in action.victims)
    if kind is ActionKind.ROLLBACK:
        return SurgeEvent(
            ref,
            "SurgeRollingBack",
            f"{action.reason}: spec.replicas {op.target} -> {op.original}, removing {names}",
            warning=True,
        )
    return SurgeEvent(
        ref,
        "SurgeScalingBack",
        f"{action.reason}: spec.replicas {op.target} -> {op.original}, removing {names}",
    )


async def run_round(
    api: client.ApiClient,
    policy: RebalancePolicy,
    surge: SurgeReport,
    now: float,
    acting: Acting,
) -> list[SurgeEvent]:
    """Advance the operations in flight; in Enforce, start the planned surges."""
    events: list[SurgeEvent] = []
    async with SURGES:
        for f in surge.in_flight:
            if not acting():
                return events
            event = await asyncio.to_thread(_advance, api, f)
            if event is not None:
                events.append(event)
                await asyncio.to_thread(_tell, api, f.workload, f.deployment.uid, event)
        if policy.mode is Mode.ENFORCE:
            for p in surge.plans:
                if not acting():
                    return events
                event = await asyncio.to_thread(_start, api, p, policy, now)
                events.append(event)
                await asyncio.to_thread(_tell, api, p.workload, p.deployment.uid, event)
    for e in events:
        log.info("surge of %s: %s: %s", e.workload, e.reason, e.message)
    return events


_followers: dict[str, asyncio.Task[None]] = {}
_policies: dict[str, RebalancePolicy] = {}


def follow(
    api: client.ApiClient, cache: ClusterCache, policy: RebalancePolicy, acting: Acting
) -> None:
    """Advance this policy's surges every FOLLOW seconds until none is in flight."""
    _policies[policy.name] = policy
    task = _followers.get(policy.name)
    if task is not None and not task.done():
        return
    _followers[policy.name] = asyncio.get_running_loop().create_task(
        _follow(api, cache, policy.name, acting), name=f"surges of {policy.name}"
    )


def _in_flight(state: ClusterState, policy: RebalancePolicy, now: float) -> tuple[InFlight, ...]:
    return operations(analyze(state, policy), policy.name, now)


async def _follow(api: client.ApiClient, cache: ClusterCache, name: str, acting: Acting) -> None:
    idle = 0
    while idle < 3:  # a few rounds past the last operation: the watch may lag our own write
        await asyncio.sleep(FOLLOW)
        policy = _policies[name]
        try:
            if not acting():  # a follower replica: the leader's scans take over
                idle += 1
                continue
            await cache.wait_ready()
            state = cache.snapshot()
            now = time.time()
            flights = await asyncio.to_thread(_in_flight, state, policy, now)
            idle = 0 if flights else idle + 1
            if flights:
                await run_round(api, policy, SurgeReport(False, in_flight=flights), now, acting)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("advancing the surges of RebalancePolicy %s failed", name)
