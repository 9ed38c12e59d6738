"""Carrying out surge moves (surge.py plans them and steps them; kube/ writes).

Each scan starts the surges it plans (Enforce only) and advances every operation in flight. While
one is in flight, a follower task per policy advances them every FOLLOW seconds, so that a surge
does not wait a whole scan interval between its steps; it ends when none is left. Operations in
flight are advanced in DryRun too: they were started in Enforce, and stopping one half-way would
leave the Deployment surged. From the operator's start-up, an orphan pass every ORPHANS_EVERY
seconds (even with no policy at all) ends the operations whose policy is gone
(surge_orphans.py decides) and sets the surge gauges.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, replace

from kubernetes import client

from respread.analysis.groups import WorkloadRef, analyze
from respread.core.model import ClusterState
from respread.inputs.policy import Mode, PolicyError, RebalancePolicy, parse_policy
from respread.kube.annotations import CostResult, write_cost
from respread.kube.deployments import DeploymentWrite, PatchResult, patch_surge, read_surge
from respread.kube.policies import Presence, read_policy
from respread.kube.writer import post_event, post_policy_event
from respread.remedies.surge.advance import (
    ActionKind,
    InFlight,
    costs_to_write,
    next_operation,
    operations,
)
from respread.remedies.surge.operation import Operation, Phase
from respread.remedies.surge.orphans import in_flight_count, orphans, overdue, unknown_policies
from respread.remedies.surge.plan import SurgePlan, SurgeReport, start
from respread.remedies.surge.scope import follower_state
from respread.remedies.surge.victims import Victim
from respread.runtime import metrics
from respread.runtime.acting import Acting
from respread.runtime.cache import WATCHED, CacheBehindError, ClusterCache

log = logging.getLogger(__name__)

LISTED = frozenset(w.kind for w in WATCHED)
FOLLOW = 5.0  # seconds between rounds while a surge is in flight
SURGES = asyncio.Lock()  # one round at a time (a scan's and the follower's)


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


def aggregate(events: Iterable[SurgeEvent]) -> list[tuple[str, bool, str]]:
    """The Events a follower round posts on its policy: one per reason, naming every
    Deployment that took that step (a round that took no step posts none)."""
    by_reason: dict[str, list[SurgeEvent]] = {}
    for e in events:
        by_reason.setdefault(e.reason, []).append(e)
    out = []
    for reason, same in sorted(by_reason.items()):
        message = "; ".join(f"{e.workload}: {e.message}" for e in same)
        out.append((reason, any(e.warning for e in same), message))
    return out


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
    kind = f.action.kind
    if kind is ActionKind.WAIT:
        return None
    if kind in (ActionKind.DONE, ActionKind.STAND_DOWN):
        return _conclude(api, f)
    return _scale_back(api, f)


def _conclude(api: client.ApiClient, f: InFlight) -> SurgeEvent | None:
    """An operation that is over (done, or stood down): its record updated or removed."""
    op, action, ref = f.operation, f.action, f.workload
    after = next_operation(op, action, keep_record=not f.orphaned)
    write = patch_surge(
        api,
        ref.namespace,
        ref.name,
        resource_version=f.deployment.resource_version,
        operation=after.to_json() if after is not None else None,
    )
    if write.result is not PatchResult.WRITTEN:
        return None  # the next round sees why
    if op.phase is Phase.ROLLED_BACK:  # an orphan's record removed: nothing happened
        log.info("surge of %s: %s", ref, action.reason)
        return None
    if action.kind is ActionKind.DONE:
        rolled = op.phase is Phase.ROLLING_BACK
        return SurgeEvent(
            ref,
            "SurgeRolledBack" if rolled else "SurgeFinished",
            f"{action.reason}" + (f" after a rollback: {op.reason}" if rolled else ""),
            warning=rolled,
        )
    return SurgeEvent(ref, "SurgeStoodDown", action.reason, warning=True)


def _scale_back(api: client.ApiClient, f: InFlight) -> SurgeEvent | None:
    """Back to the original replicas, the victims' costs written first (marking the record
    first where the action says so; a rollback records itself as rolling back)."""
    op, action, ref = f.operation, f.action, f.workload
    kind = action.kind
    version = f.deployment.resource_version
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
    count(policy.name, events)
    return events


def count(policy: str, events: Iterable[SurgeEvent]) -> None:
    """The surge counters (runtime/metrics.py), by outcome."""
    for e in events:
        outcome = OUTCOMES.get(e.reason)
        if outcome is not None:
            metrics.SURGES.labels(policy, outcome).inc()


OUTCOMES = {
    "SurgeStarted": "started",
    "SurgeFinished": "finished",
    "SurgeRolledBack": "rolled_back",
    "SurgeStoodDown": "stood_down",
    "SurgeFailed": "failed",
}


_followers: dict[str, asyncio.Task[None]] = {}
_policies: dict[str, RebalancePolicy] = {}


_uids: dict[str, str | None] = {}


def follow(
    api: client.ApiClient,
    cache: ClusterCache,
    policy: RebalancePolicy,
    acting: Acting,
    uid: str | None = None,
) -> None:
    """Advance this policy's surges every FOLLOW seconds until none is in flight; the steps it
    takes are told on the Deployments and, aggregated per round, on the policy."""
    _policies[policy.name] = policy
    _uids[policy.name] = uid
    task = _followers.get(policy.name)
    if task is not None and not task.done():
        return
    _followers[policy.name] = asyncio.get_running_loop().create_task(
        _follow(api, cache, policy.name, acting), name=f"surges of {policy.name}"
    )


def _in_flight(state: ClusterState, policy: RebalancePolicy, now: float) -> tuple[InFlight, ...]:
    """The policy's operations, from the namespaces of its surging Deployments only."""
    return operations(analyze(follower_state(state, policy.name), policy), policy.name, now)


async def _follow(api: client.ApiClient, cache: ClusterCache, name: str, acting: Acting) -> None:
    idle = 0
    while idle < 3:  # a few rounds past the last operation: the watch may lag our own write
        await asyncio.sleep(FOLLOW)
        policy = _policies[name]
        if _orphans.known is not None and name not in _orphans.known():
            return  # the policy is gone: the orphan pass ends its surges
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
                events = await run_round(
                    api, policy, SurgeReport(False, in_flight=flights), now, acting
                )
                for reason, warning, message in aggregate(events):
                    if not acting():
                        break
                    await asyncio.to_thread(
                        post_policy_event,
                        api,
                        policy.name,
                        _uids.get(policy.name),
                        reason,
                        message=message,
                        warning=warning,
                    )
        except asyncio.CancelledError:
            raise
        except CacheBehindError as err:  # the scans report it; the next round tries again
            log.warning("surges of RebalancePolicy %s not advanced: %s", name, err)
        except Exception:
            log.exception("advancing the surges of RebalancePolicy %s failed", name)


# --------------------------------------------------------------------------------------------
# Orphans: surges whose policy is gone (surge_orphans.py decides)

ORPHANS_EVERY = 10.0  # seconds between orphan passes, from the operator's start-up
Known = Callable[[], Collection[str]]  # the policies the operator's watch knows now


@dataclass
class _Orphans:
    known: Known | None = None  # set from start-up: a follower of a gone policy then stops
    task: asyncio.Task[None] | None = None


_orphans = _Orphans()


def watch_orphans(api: client.ApiClient, cache: ClusterCache, known: Known, acting: Acting) -> None:
    """Start the periodic orphan pass (it runs even when no policy exists at all)."""
    _orphans.known = known
    if _orphans.task is None or _orphans.task.done():
        _orphans.task = asyncio.get_running_loop().create_task(
            _orphan_loop(api, cache, known, acting), name="orphaned surges"
        )


def stop_orphans() -> None:
    if _orphans.task is not None:
        _orphans.task.cancel()
        _orphans.task = None


async def _orphan_loop(
    api: client.ApiClient, cache: ClusterCache, known: Known, acting: Acting
) -> None:
    while True:
        await asyncio.sleep(ORPHANS_EVERY)
        if not cache.listed >= LISTED:
            continue  # the first listing is still under way (minutes at 150,000 pods)
        try:
            await orphan_round(api, cache, known, acting)
        except asyncio.CancelledError:
            raise
        except CacheBehindError as err:  # a watch relisting or away: the next pass tries again
            log.warning("the orphaned surges pass is put off: %s", err)
        except Exception:
            log.exception("the orphaned surges pass failed")


def _gone(api: client.ApiClient, names: Collection[str]) -> frozenset[str]:
    """The policies confirmed gone by a read: absent, being deleted, or no longer valid."""
    out = set()
    for name in sorted(names):
        read = read_policy(api, name)
        if read.presence is Presence.GONE:
            out.add(name)
        elif read.presence is Presence.PRESENT and read.body is not None:
            try:
                parse_policy(read.body)
            except PolicyError:
                out.add(name)  # an invalid policy is never scanned: nothing else ends it
    return frozenset(out)


async def orphan_round(
    api: client.ApiClient, cache: ClusterCache, known: Known, acting: Acting
) -> list[SurgeEvent]:
    """One pass: the surge gauges (every replica: its cache is warm, so a former leader's gauges
    are not left frozen), then, if this replica acts, every operation whose policy is gone, one
    step."""
    await cache.wait_ready()
    state = cache.snapshot()
    now = time.time()
    metrics.SURGES_IN_FLIGHT.set(in_flight_count(state))
    metrics.SURGE_OVERDUE.set(overdue(state, now))
    names = unknown_policies(state, set(known()))
    if not names or not acting():
        return []
    gone = await asyncio.to_thread(_gone, api, names)
    events: list[SurgeEvent] = []
    async with SURGES:
        for f in orphans(state, gone):
            if not acting():
                break
            event = await asyncio.to_thread(_advance, api, f)
            if event is not None:
                events.append(event)
                await asyncio.to_thread(_tell, api, f.workload, f.deployment.uid, event)
                log.info("orphaned surge of %s: %s: %s", f.workload, event.reason, event.message)
                count(f.operation.policy, [event])
    return events
