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
from respread.core.model import ClusterState
from respread.inputs.policy import Mode, RebalancePolicy
from respread.kube.client import DeadlineExceededError, KubeError, within
from respread.kube.writer import PolicyGoneError, patch_status
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
    cost_status,
)
from respread.remedies.evict.planner import Move, Plan, plan
from respread.remedies.surge.plan import SurgeReport, plan_surges
from respread.report.build import build_report
from respread.report.changes import ViolationKey, change_events, changes
from respread.report.health import (
    HEALTHY,
    Verdict,
    health_conditions,
    health_events,
    with_health,
)
from respread.report.status import (
    Execution,
    build_status,
    cooldowns_status,
    failed_scan_status,
    scan_conditions,
)
from respread.runtime import metrics, surges
from respread.runtime.acting import Acting, NotLeadingError, always, check
from respread.runtime.cache import CATCH_UP, CacheBehindError, ClusterCache
from respread.runtime.costs import manage_costs, take_back, tally
from respread.runtime.enforcing import Enforced, Enforcing, Safety, enforce_moves
from respread.runtime.guard import DEFAULT_LIMITS, Halt, HaltReason, ScanGuard
from respread.runtime.memory import PolicyMemory
from respread.runtime.policy_events import tell_policy

log = logging.getLogger(__name__)


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Computed:
    analysis: Analysis
    plan: Plan
    report: dict[str, Any]
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
    *,
    recorded: Mapping[WorkloadRef, str] | None = None,
) -> Computed:
    """The pure part of a scan (run in a worker thread: it is CPU-bound). ``others``: the
    other policies not being deleted (which of them orders a ReplicaSet's costs);
    ``recorded``: the workloads the eviction ledger holds (any policy's earlier evictions)."""
    with gc_paused():
        return _compute(state, policy, memory, now, others, recorded=recorded or {})


def _compute(
    state: ClusterState,
    policy: RebalancePolicy,
    memory: PolicyMemory,
    now: float,
    others: Sequence[RebalancePolicy],
    *,
    recorded: Mapping[WorkloadRef, str],
) -> Computed:
    analysis = analyze(state, policy)
    memory.review(analysis, now, policy.eviction.cooldown)
    held = (
        {**recorded, **memory.held(now, unready_workloads(state, analysis))}
        if policy.mode is Mode.ENFORCE
        else {}
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
    memory.carry_causes(report)
    memory.remember(analysis)
    return Computed(analysis, result, report, known, costs, surge)


def _skew(analysis: Analysis, move: Move) -> tuple[str, int]:
    for g in analysis.violations:
        if g.workload == move.workload:
            return g.constraint.key, g.skew
    return "", 0


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


def _scan_failing(status: Mapping[str, Any] | None) -> bool:
    for condition in (status or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "ScanSucceeded":
            return condition.get("status") == "False"
    return False


def _export(policy: RebalancePolicy, report: Mapping[str, Any]) -> None:
    metrics.forget(policy.name)
    metrics.VIOLATIONS.labels(policy.name).set(report["summary"]["violations"])
    for v in report["violations"]:
        labels = (
            policy.name,
            v["namespace"],
            f"{v['workload']['kind']}/{v['workload']['name']}",
            v["topologyKey"],
        )
        metrics.SKEW.labels(*labels).set(v["skew"])
        metrics.MISPLACED.labels(*labels).set(v["violatingPods"])
    metrics.PLANNED.labels(policy.name, "Planned").set(len(report["evictions"]))
    metrics.PLANNED.labels(policy.name, "Deferred").set(len(report["deferred"]))
    metrics.PLANNED.labels(policy.name, "Skipped").set(len(report["skipped"]))


@dataclass(frozen=True, slots=True)
class _Scan:
    """One scan of one policy: what it works with, when it started, its name in the ledger."""

    api: client.ApiClient
    cache: ClusterCache
    policy: RebalancePolicy
    memory: PolicyMemory
    uid: str | None  # the policy's, for its Events
    acting: Acting
    lifecycle: Lifecycle
    others: Sequence[RebalancePolicy]
    safety: Safety
    now: float  # wall clock, when it started

    @property
    def run(self) -> str:
        return f"{self.policy.name}@{rfc3339(self.now)}.{int(self.now * 1000) % 1000:03d}"


def _verdict(halt: Halt | None) -> Verdict:
    """What the status says about a scan that stopped acting (HEALTHY: it did not)."""
    if halt is None or halt.reason is HaltReason.CHANGED:
        return HEALTHY  # it plans again at once; nothing is wrong
    if halt.reason is HaltReason.DEADLINE:
        return Verdict(stalled=halt.message)
    return Verdict(stale=halt.message)


def _error_verdict(err: Exception, guard: ScanGuard) -> Verdict:
    if isinstance(err, DeadlineExceededError) or guard.left() <= 0:
        deadline = guard.limits.deadline
        return Verdict(stalled=f"the scan passed its deadline ({deadline:.0f}s): {err}")
    if isinstance(err, CacheBehindError | Halt):
        return Verdict(stale=str(err))
    return HEALTHY


async def _plan(scan: _Scan) -> tuple[ClusterState, Computed]:
    """Snapshot the cache and plan. In Enforce, the cache is first shown current (a plan only
    acts from a cache that caught up with the API server after the scan began), and the
    workloads the eviction ledger holds are deferred."""
    policy, guard = scan.policy, scan.safety.guard
    recorded: Mapping[WorkloadRef, str] = {}
    if policy.mode is Mode.ENFORCE:
        if scan.safety.freshness is not None:
            await scan.safety.freshness.establish(min(guard.limits.catch_up, guard.left()))
        guard.check()
        if scan.safety.ledger is not None:
            workloads = _workloads(scan.cache.snapshot())
            recorded = await scan.safety.ledger.held(
                workloads, cooldown=policy.eviction.cooldown, run=scan.run
            )
    guard.planned()
    state = scan.cache.snapshot()
    computed = await asyncio.to_thread(
        compute, state, policy, scan.memory, scan.now, scan.others, recorded=recorded
    )
    return state, computed


def _workloads(state: ClusterState) -> set[WorkloadRef]:
    return {WorkloadRef(w.namespace, w.kind, w.name) for w in state.workloads if w.owner is None}


async def _enforce(scan: _Scan, state: ClusterState, computed: Computed) -> Enforced:
    def on_evicted(move: Move) -> None:
        key, skew = _skew(computed.analysis, move)
        scan.memory.record_eviction(move.workload, key, skew, time.time())

    job = Enforcing(
        scan.api,
        scan.cache,
        scan.policy,
        scan.safety.guard,
        state,
        scan.run,
        freshness=scan.safety.freshness,
        ledger=scan.safety.ledger,
        on_evicted=on_evicted,
    )
    return await enforce_moves(job, computed.plan.moves)


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
    safety: Safety | None = None,
) -> bool:
    """One scan; False when the policy turned out not to exist any more (a deletion that the
    watch missed while it was away: a relisting does not report deletions). `acting` says
    whether this replica may still write (leader election): once it says no, the scan stops
    before its next request. `safety` (the scan's guard, the freshness proof and the eviction
    ledger): every request of the scan is bound by the guard's deadline."""
    safety = safety or Safety(ScanGuard(DEFAULT_LIMITS, cache, acting=acting))
    scan = _Scan(
        api, cache, policy, memory, policy_uid, acting, lifecycle, others, safety, time.time()
    )
    with within(safety.guard.deadline):
        try:
            return await _run_scan(scan)
        finally:
            safety.guard.close()


async def _run_scan(scan: _Scan) -> bool:
    api, cache, policy, memory = scan.api, scan.cache, scan.policy, scan.memory
    policy_uid, acting, lifecycle, others = scan.uid, scan.acting, scan.lifecycle, scan.others
    guard, now = scan.safety.guard, scan.now
    started = time.monotonic()
    try:
        await cache.wait_ready(min(CATCH_UP, guard.left()))  # no kind relisting or disconnected
        await cache.sweep(api, catch_up=min(CATCH_UP, guard.left()))  # if the cache is suspect
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
        state, computed = await _plan(scan)
        executions: list[Execution] = []
        halt: Halt | None = None
        if policy.mode is Mode.ENFORCE and computed.plan.moves:
            enforced = await _enforce(scan, state, computed)
            executions, halt = enforced.executions, enforced.halt
        if halt is None:
            halt = guard.why_not()
        if policy.mode is Mode.ENFORCE and halt is None:
            counts = await manage_costs(
                api,
                policy,
                computed.costs,
                state,
                lifecycle=lifecycle,
                others=others,
                acting=acting,
            )
        else:  # DryRun writes and takes back nothing; nor does a scan that stopped acting
            counts = tally(
                state.pods, policy.name, computed.costs, writes=[], releases=None, released=[]
            )
        surge_events = (
            await _surges(api, cache, policy, computed, now=now, acting=acting, uid=policy_uid)
            if halt is None
            else []
        )
        verdict = _verdict(halt if halt is not None else guard.why_not())
        if verdict.failed:
            guard.close()  # past the deadline, or stale: it still says what it did not do
        previous = memory.previous_status
        status = build_status(
            computed.report,
            policy,
            rfc3339(now),
            previous=previous,
            executions=executions,
            conditions=with_health(scan_conditions(computed.report), verdict)
            + health_conditions(verdict, previous),
            cooldowns=cooldowns_status(memory.histories(), time.time(), policy.eviction.cooldown),
        )
        if (
            computed.costs is not None
            or counts != CostCounts()
            or "deletionCost" in (memory.previous_status or {})
        ):
            status["deletionCost"] = cost_status(counts)
        check(acting)
        await asyncio.to_thread(patch_status, api, policy.name, status)
        changed = changes(computed.report, computed.known)
        for reason, warning, message in [
            *health_events(verdict, previous),
            *change_events(changed),
        ]:
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
        failed_evictions = [e for e in executions if e.state == "Failed"]
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
        summary = computed.report["summary"]
        log.info(
            "RebalancePolicy %s (%s): %d pods on %d nodes; %d violation(s) (%d new, %d resolved); "
            "%d eviction(s) planned, %d deferred; %d evicted; %.2fs%s",
            policy.name,
            policy.mode.value,
            len(state.pods),
            len(state.nodes),
            summary["violations"],
            len(changed.found),
            len(changed.resolved),
            len(computed.report["evictions"]),
            len(computed.report["deferred"]),
            sum(1 for e in executions if e.state == "Evicted"),
            time.monotonic() - started,
            f"; stopped: {halt.message}" if halt is not None else "",
        )
        memory.previous_status = status
        _export(policy, computed.report)
        if verdict.failed:
            metrics.SCAN_FAILURES.labels(policy.name).inc()
        else:
            memory.last_scan = now
            metrics.LAST_SCAN.labels(policy.name).set(now)
    except PolicyGoneError:
        log.info("RebalancePolicy %s no longer exists; it is not scanned any more", policy.name)
        return False
    except NotLeadingError:
        log.warning("scan of RebalancePolicy %s stopped: this replica no longer leads", policy.name)
    except Exception as err:  # a failed scan is reported; the operator keeps running
        return await _failed(scan, err)
    finally:
        metrics.SCAN_SECONDS.labels(policy.name).observe(time.monotonic() - started)
    return True


async def _failed(scan: _Scan, err: Exception) -> bool:
    """Report a failed scan (False: the policy is gone)."""
    api, cache, policy, memory = scan.api, scan.cache, scan.policy, scan.memory
    policy_uid, acting, now, guard = scan.uid, scan.acting, scan.now, scan.safety.guard
    if isinstance(err, KubeError | Halt):  # the API server away or refusing: no traceback
        log.error("scan of RebalancePolicy %s failed: %s", policy.name, err)
    else:
        log.exception("scan of RebalancePolicy %s failed", policy.name)
    metrics.SCAN_FAILURES.labels(policy.name).inc()
    cache.mark_suspect(f"the scan of {policy.name} failed")  # the API server may be away
    verdict = _error_verdict(err, guard)
    guard.close()  # the report of the failure goes out even past the deadline
    if isinstance(err, Halt) and err.reason.replan:
        guard.replan = True
    try:
        if not acting():
            return True  # a follower writes nothing
        previous = memory.previous_status
        status = failed_scan_status(
            policy,
            rfc3339(now),
            f"{type(err).__name__}: {err}",
            previous=previous,
            extra=health_conditions(verdict, previous),
        )
        was_failing = _scan_failing(previous)
        await asyncio.to_thread(patch_status, api, policy.name, status)
        told = health_events(verdict, previous)
        if not was_failing:  # an Event when scans start failing, not for every failure
            told.append(("ScanFailed", True, f"{type(err).__name__}: {err}"))
        for reason, warning, message in told:
            await tell_policy(api, policy, policy_uid, reason, warning=warning, message=message)
        # The object now says the scan failed: the next scan's conditions transition from
        # there (the last good report, its violations and their `since`, stays as it was).
        memory.previous_status = {
            **(memory.previous_status or {}),
            "conditions": status["conditions"],
        }
    except PolicyGoneError:
        log.info("RebalancePolicy %s no longer exists; it is not scanned any more", policy.name)
        return False
    except Exception:  # the API server may be the reason the scan failed
        log.warning("could not report the failed scan of %s", policy.name)
    return True
