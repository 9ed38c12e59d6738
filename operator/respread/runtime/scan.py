"""One scan of one policy: snapshot, analyse, plan, (enforce), report."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from respread.analysis.groups import Analysis, WorkloadRef, analyze, workload_of
from respread.core.collector import gc_paused
from respread.core.model import ClusterState, Pod
from respread.inputs.policy import Mode, RebalancePolicy
from respread.kube.client import KubeError
from respread.kube.evictions import Result, evict
from respread.kube.writer import PolicyGoneError, patch_status, post_event
from respread.remedies.choose import (
    apply_remediation,
    defer_surged,
    eviction_blocked,
    hold_costs,
)
from respread.remedies.cost.order import CostPlan, plan_costs
from respread.remedies.cost.owner import Ownership
from respread.remedies.cost.release import (
    NOT_DELETING,
    CostCounts,
    Lifecycle,
    cost_event,
)
from respread.remedies.evict.planner import Move, Plan, plan
from respread.remedies.surge.plan import SurgeReport, plan_surges
from respread.report.build import build_report
from respread.report.changes import change_events, changes
from respread.report.contract import conditions_status_json, status_json, status_patch
from respread.report.model import (
    DeletionCostStatus,
    Execution,
    Report,
    StepStatus,
    ViolationKey,
)
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
class Computed:
    analysis: Analysis
    plan: Plan
    report: Report
    known: frozenset[ViolationKey]  # the violations known before this scan
    costs: CostPlan | None = None  # the deletion-cost order, when the policy enables it
    surge: SurgeReport | None = None  # surge moves planned, skipped and in flight


def unready_workloads(state: ClusterState, analysis: Analysis) -> set[WorkloadRef]:
    """Workloads with a pod not Ready yet (pacing: a replacement must be Ready first)."""
    out = set()
    for pod in state.pods:
        if pod.owner is None or pod.terminating or pod.finished:
            continue
        if pod.node_name is None or not pod.ready:
            out.add(workload_of(pod, analysis.index))
    return out


def compute(
    state: ClusterState,
    policy: RebalancePolicy,
    memory: PolicyMemory,
    now: float,
    others: Sequence[RebalancePolicy] = (),
) -> Computed:
    """The pure part of a scan (run in a worker thread: it is CPU-bound). ``others``: the
    other policies not being deleted (which of them orders a ReplicaSet's costs)."""
    with gc_paused():
        return _compute(state, policy, memory, now, others)


def _compute(
    state: ClusterState,
    policy: RebalancePolicy,
    memory: PolicyMemory,
    now: float,
    others: Sequence[RebalancePolicy],
) -> Computed:
    analysis = analyze(state, policy)
    memory.review(analysis, now, policy.eviction.cooldown)
    held = (
        memory.held(now, unready_workloads(state, analysis)) if policy.mode is Mode.ENFORCE else {}
    )
    result = apply_remediation(
        plan(analysis, policy, now=now, history=memory.last_eviction, held=held), policy
    )
    surge = plan_surges(analysis, eviction_blocked(result, policy.remediation.evict), policy, now)
    result = defer_surged(result, surge.busy)
    settings = policy.remediation.deletion_cost
    ownership = Ownership.of(policy.name, others, {n.name: n for n in state.namespaces})
    ordered = (
        plan_costs(analysis, settings, memory.cost_memo, ownership) if settings.enabled else None
    )
    costs = hold_costs(ordered, surge.busy)
    report = build_report(analysis, result, policy, memory.previous, costs=costs, surge=surge)
    known = frozenset(memory.causes)  # every violation of the last scan, not just those shown
    report = memory.carry_causes(report)
    memory.remember(analysis)
    return Computed(analysis, result, report, known, costs, surge)


def _skew(analysis: Analysis, move: Move) -> tuple[str, int]:
    for g in analysis.violations:
        if g.workload == move.workload:
            return g.constraint.key, g.skew
    return "", 0


async def enforce(
    api: client.ApiClient,
    *,
    policy: RebalancePolicy,
    computed: Computed,
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
            current = cache_pods.get((move.pod.namespace, move.pod.name))
            if (
                current is None
                or current.uid != move.pod.uid
                or current.node_name != move.from_node
                or current.terminating
            ):
                executions.append(
                    Execution(
                        move.pod.namespace,
                        move.pod.name,
                        StepStatus.FAILED,
                        "the pod changed since the scan; not evicted",
                    )
                )
                continue
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
            executions.append(
                Execution(
                    move.pod.namespace, move.pod.name, EXECUTED[outcome.result], outcome.reason
                )
            )
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
    return executions


async def _surges(
    api: client.ApiClient,
    cache: ClusterCache,
    policy: RebalancePolicy,
    computed: Computed,
    *,
    now: float,
    acting: Acting,
    uid: str | None = None,
) -> list[surges.SurgeEvent]:
    """Surge moves: started (Enforce) and advanced; a follower advances them until done."""
    surge = computed.surge
    if surge is None or not (surge.in_flight or (surge.plans and policy.mode is Mode.ENFORCE)):
        return []
    events = await surges.run_round(api, policy, surge, now, acting)
    surges.follow(api, cache, policy, acting, uid)
    return events


def _cost_status(
    computed: Computed, counts: CostCounts, previous: Mapping[str, Any] | None
) -> DeletionCostStatus | None:
    """`status.deletionCost`: with the remedy on or costs to count; and once written, on with
    zero counts rather than gone."""
    if computed.costs is not None or counts != CostCounts() or holds_deletion_cost(previous):
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
    started = time.monotonic()
    now = time.time()
    try:
        await cache.wait_ready()  # no kind relisting or disconnected
        await cache.sweep(api)  # if a failed request made the cache suspect
        if lifecycle.deleting_since is not None:
            await take_back(
                api,
                cache,
                policy,
                memory,
                policy_uid,
                lifecycle=lifecycle,
                others=others,
                acting=acting,
                now=now,
            )
            return True
        state = cache.snapshot()
        computed = await asyncio.to_thread(compute, state, policy, memory, now, others)
        executions: list[Execution] = []
        if policy.mode is Mode.ENFORCE and computed.plan.moves:
            pods = {(p.namespace, p.name): p for p in cache.snapshot().pods}
            executions = await enforce(
                api,
                policy=policy,
                computed=computed,
                cache_pods=pods,
                memory=memory,
                now=now,
                acting=acting,
            )
        if policy.mode is Mode.ENFORCE:
            counts = await manage_costs(
                api,
                policy,
                computed.costs,
                state,
                lifecycle=lifecycle,
                others=others,
                acting=acting,
            )
        else:  # DryRun writes and takes back nothing
            counts = tally(
                state.pods, policy.name, computed.costs, writes=[], releases=None, released=[]
            )
        surge_events = await _surges(
            api, cache, policy, computed, now=now, acting=acting, uid=policy_uid
        )
        status = build_status(
            computed.report,
            policy,
            rfc3339(now),
            previous=memory.previous_status,
            executions=executions,
            cooldowns=cooldowns_status(memory.histories(), time.time(), policy.eviction.cooldown),
            deletion_cost=_cost_status(computed, counts, memory.previous_status),
        )
        check(acting)
        await asyncio.to_thread(patch_status, api, policy.name, status_patch(status))
        changed = changes(computed.report, computed.known)
        for reason, warning, message in change_events(changed):
            check(acting)
            await tell_policy(
                api,
                policy,
                policy_uid,
                reason,
                warning=warning,
                message=message,
            )
        told = cost_event(counts)
        if told is not None:
            check(acting)
            reason, warning, message = told
            await tell_policy(api, policy, policy_uid, reason, warning=warning, message=message)
        for event in surge_events:
            check(acting)
            await tell_policy(
                api,
                policy,
                policy_uid,
                event.reason,
                warning=event.warning,
                message=f"{event.workload}: {event.message}",
            )
        failed_evictions = [e for e in executions if e.state is StepStatus.FAILED]
        if failed_evictions:
            check(acting)
            first = failed_evictions[0]
            await tell_policy(
                api,
                policy,
                policy_uid,
                "EvictionFailed",
                warning=True,
                message=f"{len(failed_evictions)} eviction(s) failed; first "
                f"{first.namespace}/{first.pod}: {first.reason}",
            )
        log.info(
            "RebalancePolicy %s (%s): %d pods on %d nodes; %d violation(s) (%d new, %d resolved); "
            "%d eviction(s) planned, %d deferred; %d evicted; %.2fs",
            policy.name,
            policy.mode.value,
            len(state.pods),
            len(state.nodes),
            computed.report.summary.violations,
            len(changed.found),
            len(changed.resolved),
            len(computed.report.evictions),
            len(computed.report.deferred),
            sum(1 for e in executions if e.state is StepStatus.EVICTED),
            time.monotonic() - started,
        )
        memory.previous_status = status_json(status)
        memory.last_scan = now
        _export(policy, computed.report)
        metrics.LAST_SCAN.labels(policy.name).set(now)
    except PolicyGoneError:
        log.info("RebalancePolicy %s no longer exists; it is not scanned any more", policy.name)
        return False
    except NotLeadingError:
        log.warning("scan of RebalancePolicy %s stopped: this replica no longer leads", policy.name)
    except Exception as err:  # a failed scan is reported; the operator keeps running
        if isinstance(err, KubeError):  # the API server away or refusing: no traceback
            log.error("scan of RebalancePolicy %s failed: %s", policy.name, err)
        else:
            log.exception("scan of RebalancePolicy %s failed", policy.name)
        metrics.SCAN_FAILURES.labels(policy.name).inc()
        cache.mark_suspect(f"the scan of {policy.name} failed")  # the API server may be away
        try:
            if not acting():
                return True  # a follower writes nothing
            failed = conditions_status_json(
                failed_scan_status(
                    policy,
                    rfc3339(now),
                    f"{type(err).__name__}: {err}",
                    previous=memory.previous_status,
                )
            )
            was_failing = scan_failing(memory.previous_status)
            await asyncio.to_thread(patch_status, api, policy.name, failed)
            if not was_failing:  # an Event when scans start failing, not for every failure
                await tell_policy(
                    api,
                    policy,
                    policy_uid,
                    "ScanFailed",
                    warning=True,
                    message=f"{type(err).__name__}: {err}",
                )
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
    finally:
        metrics.SCAN_SECONDS.labels(policy.name).observe(time.monotonic() - started)
    return True
