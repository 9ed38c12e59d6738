"""One scan of one policy, the imperative shell around the pure scan (respread.pipeline):
snapshot the cache, scan, act (Enforce: evict, write costs; surges), write the status, post
the Events, log and export the metrics; a failed scan is reported in the status."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from respread.analysis.groups import Analysis
from respread.core.model import ClusterState, Pod
from respread.inputs.policy import Mode, RebalancePolicy
from respread.kube.client import KubeError
from respread.kube.evictions import Result, evict
from respread.kube.writer import PolicyGoneError, patch_status, post_event
from respread.pipeline import Scan, scan
from respread.remedies.cost.release import (
    NOT_DELETING,
    CostCounts,
    Lifecycle,
    cost_event,
)
from respread.remedies.evict.planner import Move
from respread.report.changes import change_events
from respread.report.contract import conditions_status_json, status_json, status_patch
from respread.report.model import DeletionCostStatus, Execution, Report, Status, StepStatus
from respread.report.status import (
    build_status,
    cooldowns_status,
    deletion_cost_status,
    failed_scan_status,
)
from respread.report.stored import holds_deletion_cost, scan_failing
from respread.runtime import metrics, surges
from respread.runtime.acting import Acting, NotLeadingError, always, check
from respread.runtime.cache import ClusterCache
from respread.runtime.costs import manage_costs, take_back, tally
from respread.runtime.memory import PolicyMemory
from respread.runtime.policy_events import tell_policy

log = logging.getLogger(__name__)

# One policy evicts at a time, whatever the number of policies.
ENFORCEMENT = asyncio.Lock()


EXECUTED = {  # what an eviction request's answer makes of its plan step
    Result.EVICTED: StepStatus.EVICTED,
    Result.BLOCKED: StepStatus.BLOCKED,
    Result.FAILED: StepStatus.FAILED,
}


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Job:
    """What one scan of a policy works with: the API server, the watch cache, the policy and
    its memory, and who may act."""

    api: client.ApiClient
    cache: ClusterCache
    policy: RebalancePolicy
    memory: PolicyMemory
    uid: str | None  # the policy's, for its Events
    acting: Acting  # leader election: may this replica still write?
    lifecycle: Lifecycle
    others: tuple[RebalancePolicy, ...]  # the other policies not being deleted


@dataclass(frozen=True, slots=True)
class Acted:
    """What a scan did: its evictions, its cost writes (counted), the surge steps taken."""

    executions: list[Execution]
    counts: CostCounts
    surge_events: list[surges.SurgeEvent]


def _skew(analysis: Analysis, move: Move) -> tuple[str, int]:
    for g in analysis.violations:
        if g.workload == move.workload:
            return g.constraint.key, g.skew
    return "", 0


def _changed(move: Move, current: Pod | None) -> bool:
    """The pod the plan would evict is not the one the cache holds now."""
    return (
        current is None
        or current.uid != move.pod.uid
        or current.node_name != move.from_node
        or current.terminating
    )


async def enforce(
    api: client.ApiClient,
    *,
    policy: RebalancePolicy,
    computed: Scan,
    cache_pods: Mapping[tuple[str, str], Pod],
    memory: PolicyMemory,
    now: float,
    acting: Acting = always,
) -> list[Execution]:
    """Evict the planned pods in order; budgets and caps were already counted by the plan.
    `acting` is asked before every request: a replica that stopped leading evicts nothing."""
    executions: list[Execution] = []
    async with ENFORCEMENT:
        for move in computed.plan.moves:
            check(acting)
            if _changed(move, cache_pods.get((move.pod.namespace, move.pod.name))):
                executions.append(
                    Execution(
                        move.pod.namespace,
                        move.pod.name,
                        StepStatus.FAILED,
                        "the pod changed since the scan; not evicted",
                    )
                )
                continue
            executions.append(
                await _evict(api, policy, move, computed=computed, memory=memory, acting=acting)
            )
    return executions


async def _evict(
    api: client.ApiClient,
    policy: RebalancePolicy,
    move: Move,
    *,
    computed: Scan,
    memory: PolicyMemory,
    acting: Acting,
) -> Execution:
    """One eviction; an evicted pod is remembered (cooldown, loop protection) and told."""
    outcome = await asyncio.to_thread(
        evict,
        api,
        move.pod.namespace,
        move.pod.name,
        uid=move.pod.uid,
        grace_period_seconds=policy.eviction.grace_period_seconds,
        allowed=acting,
    )
    metrics.EVICTIONS.labels(policy.name, outcome.result.value).inc()
    if outcome.result is Result.EVICTED:
        key, skew = _skew(computed.analysis, move)
        memory.record_eviction(move.workload, key, skew, time.time())
        where = ", ".join(f"{k}={v}" for k, v in move.to_domain)
        await asyncio.to_thread(
            post_event,
            api,
            kind="Pod",
            name=move.pod.name,
            namespace=move.pod.namespace,
            uid=move.pod.uid,
            reason="Rebalanced",
            message=f"evicted by RebalancePolicy {policy.name}: {move.reason}; the "
            f"replacement is expected at {where}",
        )
    return Execution(move.pod.namespace, move.pod.name, EXECUTED[outcome.result], outcome.reason)


async def _surges(
    api: client.ApiClient,
    cache: ClusterCache,
    policy: RebalancePolicy,
    computed: Scan,
    *,
    now: float,
    acting: Acting,
    uid: str | None = None,
) -> list[surges.SurgeEvent]:
    """Surge moves: started (Enforce) and advanced; a follower advances them until done."""
    surge = computed.surge
    if not (surge.in_flight or (surge.plans and policy.mode is Mode.ENFORCE)):
        return []
    events = await surges.run_round(api, policy, surge, now, acting)
    surges.follow(api, cache, policy, acting, uid)
    return events


def _cost_status(
    result: Scan, counts: CostCounts, previous: Mapping[str, Any] | None
) -> DeletionCostStatus | None:
    """`status.deletionCost`: with the remedy on or costs to count; and once written, on with
    zero counts rather than gone."""
    if result.costs is not None or counts != CostCounts() or holds_deletion_cost(previous):
        return deletion_cost_status(counts)
    return None


def _export(policy: RebalancePolicy, report: Report) -> None:
    metrics.forget(policy.name)
    metrics.VIOLATIONS.labels(policy.name).set(report.summary.violations)
    for v in report.violations:
        labels = (
            policy.name,
            v.workload.namespace,
            f"{v.workload.kind}/{v.workload.name}",
            v.topology_key,
        )
        metrics.SKEW.labels(*labels).set(v.skew)
        metrics.MISPLACED.labels(*labels).set(v.violating_pods)
    for o in report.outages:
        metrics.OUTAGES.labels(policy.name, o.key, o.domain).set(1)
    metrics.PLANNED.labels(policy.name, "Planned").set(len(report.evictions))
    metrics.PLANNED.labels(policy.name, "Deferred").set(len(report.deferred))
    metrics.PLANNED.labels(policy.name, "Skipped").set(len(report.skipped))


async def run_scan(
    api: client.ApiClient,
    cache: ClusterCache,
    policy: RebalancePolicy,
    memory: PolicyMemory,
    policy_uid: str | None = None,
    *,
    acting: Acting = always,
    lifecycle: Lifecycle = NOT_DELETING,
    others: Sequence[RebalancePolicy] = (),
) -> bool:
    """One scan; False when the policy turned out not to exist any more (a deletion that the
    watch missed while it was away: a relisting does not report deletions). `acting` says
    whether this replica may still write (leader election): once it says no, the scan stops
    before its next request."""
    job = Job(api, cache, policy, memory, policy_uid, acting, lifecycle, tuple(others))
    started = time.monotonic()
    now = time.time()
    try:
        await _scan(job, now, started)
    except PolicyGoneError:
        log.info("RebalancePolicy %s no longer exists; it is not scanned any more", policy.name)
        return False
    except NotLeadingError:
        log.warning("scan of RebalancePolicy %s stopped: this replica no longer leads", policy.name)
    except Exception as err:  # a failed scan is reported; the operator keeps running
        _log_failure(job, err)
        return await _report_failure(job, err, now)
    finally:
        metrics.SCAN_SECONDS.labels(policy.name).observe(time.monotonic() - started)
    return True


async def _scan(job: Job, now: float, started: float) -> None:
    """Scan, act, write the status, tell; or, for a policy being deleted, take its costs back."""
    await job.cache.wait_ready()  # no kind relisting or disconnected
    await job.cache.sweep(job.api)  # if a failed request made the cache suspect
    if job.lifecycle.deleting_since is not None:
        await take_back(
            job.api,
            job.cache,
            job.policy,
            job.memory,
            job.uid,
            lifecycle=job.lifecycle,
            others=job.others,
            acting=job.acting,
            now=now,
        )
        return
    state = job.cache.snapshot()
    memory = job.memory
    result = await asyncio.to_thread(
        scan, state, job.policy, now, memory.scan, others=job.others, memo=memory.cost_memo
    )
    memory.scan = result.memory
    acted = await _act(job, state, result, now)
    status = _status(job, result, acted, now)
    check(job.acting)
    await asyncio.to_thread(patch_status, job.api, job.policy.name, status_patch(status))
    await _tell(job, _events(result, acted))
    _log_scan(job, state, result, acted, started)
    memory.previous_status = status_json(status)
    memory.last_scan = now
    _export(job.policy, result.report)
    metrics.LAST_SCAN.labels(job.policy.name).set(now)


async def _act(job: Job, state: ClusterState, result: Scan, now: float) -> Acted:
    """Enforce: the evictions and the cost writes; surges advanced in either mode."""
    executions: list[Execution] = []
    if job.policy.mode is Mode.ENFORCE and result.plan.moves:
        pods = {(p.namespace, p.name): p for p in job.cache.snapshot().pods}
        executions = await enforce(
            job.api,
            policy=job.policy,
            computed=result,
            cache_pods=pods,
            memory=job.memory,
            now=now,
            acting=job.acting,
        )
    if job.policy.mode is Mode.ENFORCE:
        counts = await manage_costs(
            job.api,
            job.policy,
            result.costs,
            state,
            lifecycle=job.lifecycle,
            others=job.others,
            acting=job.acting,
        )
    else:  # DryRun writes and takes back nothing
        counts = tally(
            state.pods, job.policy.name, result.costs, writes=[], releases=None, released=[]
        )
    surge_events = await _surges(
        job.api, job.cache, job.policy, result, now=now, acting=job.acting, uid=job.uid
    )
    return Acted(executions, counts, surge_events)


def _status(job: Job, result: Scan, acted: Acted, now: float) -> Status:
    """The status to write: the report, bounded, with the evictions' outcomes, the cooldowns
    (after this scan's evictions) and the deletion costs."""
    memory, policy = job.memory, job.policy
    return build_status(
        result.report,
        policy,
        rfc3339(now),
        previous=memory.previous_status,
        executions=acted.executions,
        cooldowns=cooldowns_status(memory.histories(), time.time(), policy.eviction.cooldown),
        deletion_cost=_cost_status(result, acted.counts, memory.previous_status),
    )


def _events(result: Scan, acted: Acted) -> list[tuple[str, bool, str]]:
    """The Events a scan posts about its policy, as (reason, warning, message), in order: the
    violations found and resolved, the costs, the surges, the evictions that failed."""
    out = change_events(result.changes)
    out.extend(
        (
            "DomainOutage",
            True,
            f"{o}: all {len(o.nodes)} node(s) NotReady or unreachable; no eviction on its account",
        )
        for o in result.report.outages
    )
    domains = result.report.domains
    out.extend(
        (
            "DomainLost",
            True,
            f"{d.workload} lost {d.topology_key}={d.domain}"
            + (f"; minDomains {d.min_domains} unmet" if d.min_domains_unmet else ""),
        )
        for d in domains.lost
        if d.new
    )
    out.extend(
        ("DomainReturned", False, f"{r.workload}: {r.topology_key}={r.domain} is back")
        for r in domains.returned
    )
    told = cost_event(acted.counts)
    if told is not None:
        out.append(told)
    out.extend((e.reason, e.warning, f"{e.workload}: {e.message}") for e in acted.surge_events)
    failed = [e for e in acted.executions if e.state is StepStatus.FAILED]
    if failed:
        first = failed[0]
        out.append(
            (
                "EvictionFailed",
                True,
                f"{len(failed)} eviction(s) failed; first {first.namespace}/{first.pod}: "
                f"{first.reason}",
            )
        )
    return out


async def _tell(job: Job, events: Sequence[tuple[str, bool, str]]) -> None:
    for reason, warning, message in events:
        check(job.acting)
        await tell_policy(job.api, job.policy, job.uid, reason, warning=warning, message=message)


def _log_scan(job: Job, state: ClusterState, result: Scan, acted: Acted, started: float) -> None:
    report = result.report
    log.info(
        "RebalancePolicy %s (%s): %d pods on %d nodes; %d violation(s) (%d new, %d resolved); "
        "%d eviction(s) planned, %d deferred; %d evicted; %.2fs",
        job.policy.name,
        job.policy.mode.value,
        len(state.pods),
        len(state.nodes),
        report.summary.violations,
        len(result.changes.found),
        len(result.changes.resolved),
        len(report.evictions),
        len(report.deferred),
        sum(1 for e in acted.executions if e.state is StepStatus.EVICTED),
        time.monotonic() - started,
    )


def _log_failure(job: Job, err: Exception) -> None:
    name = job.policy.name
    if isinstance(err, KubeError):  # the API server away or refusing: no traceback
        log.error("scan of RebalancePolicy %s failed: %s", name, err)
    else:
        log.error("scan of RebalancePolicy %s failed", name, exc_info=err)
    metrics.SCAN_FAILURES.labels(name).inc()
    job.cache.mark_suspect(f"the scan of {name} failed")  # the API server may be away


async def _report_failure(job: Job, err: Exception, now: float) -> bool:
    """Write the failed scan into the status (and an Event when scans start failing); False
    when the policy turned out not to exist any more."""
    policy, memory = job.policy, job.memory
    try:
        if not job.acting():
            return True  # a follower writes nothing
        reason = f"{type(err).__name__}: {err}"
        failed = conditions_status_json(
            failed_scan_status(policy, rfc3339(now), reason, previous=memory.previous_status)
        )
        was_failing = scan_failing(memory.previous_status)
        await asyncio.to_thread(patch_status, job.api, policy.name, failed)
        if not was_failing:  # an Event when scans start failing, not for every failure
            await tell_policy(job.api, policy, job.uid, "ScanFailed", warning=True, message=reason)
        # The object now says the scan failed: the next scan's conditions transition from
        # there (the last good report, its violations and their `since`, stays as it was).
        memory.previous_status = {
            **(memory.previous_status or {}),
            "conditions": failed["conditions"],
        }
    except PolicyGoneError:
        log.info("RebalancePolicy %s no longer exists; it is not scanned any more", policy.name)
        return False
    except Exception:  # the API server may be the reason the scan failed
        log.warning("could not report the failed scan of %s", policy.name)
    return True
