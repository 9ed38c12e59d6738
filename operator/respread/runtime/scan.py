"""One scan of one policy, the imperative shell around the pure scan (respread.pipeline):
snapshot the cache, scan, act (Enforce: evict, write costs; surges), write the status, post
the Events, log and export the metrics; a failed scan is reported in the status.

Enforce acts only on fresh state (docs/operations.md). Every request of a scan is bound by its
deadline (its guard's, runtime/guard.py). Before an Enforce scan plans, the watch cache is shown
current (runtime/freshness.py) and the eviction ledger is read: what it records, every policy's
recent evictions, is the pipeline's input (cooldowns across policies and leaders). The
evictions go through runtime/enforcing.py, each only while the plan still holds. A scan that
stopped acting (a Halt) writes no costs and advances no surges, reports what it left undone and
why, and never says ScanSucceeded=True (False, with DeadlineExceeded or CacheStale).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from respread.analysis.groups import Analysis
from respread.core.model import ClusterState
from respread.core.timestamps import format_rfc3339
from respread.inputs.policy import Mode, RebalancePolicy
from respread.kube.client import KubeError, within
from respread.kube.writer import PolicyGoneError, patch_status
from respread.pipeline import AnalysisMemo, Scan, scan
from respread.remedies.cost.release import (
    NOT_DELETING,
    CostCounts,
    Lifecycle,
    cost_event,
)
from respread.remedies.evict.ledger import LedgerData
from respread.remedies.evict.planner import Move
from respread.report.changes import change_events
from respread.report.contract import conditions_status_json, status_json, status_patch
from respread.report.health import Verdict, health_conditions, health_events, with_health
from respread.report.model import Execution, Report, Status, StepStatus, match_text
from respread.report.status import (
    build_status,
    cooldowns_status,
    failed_scan_status,
    scan_conditions,
)
from respread.report.stored import holds_deletion_cost, scan_failing
from respread.runtime import metrics, surges
from respread.runtime.acting import Acting, NotLeadingError, always, check
from respread.runtime.cache import CATCH_UP, ClusterCache
from respread.runtime.costs import manage_costs, take_back, tally
from respread.runtime.enforcing import Enforcing, Safety, enforce_moves
from respread.runtime.guard import DEFAULT_LIMITS, Halt, ScanGuard, failure_verdict, halt_verdict
from respread.runtime.memory import PolicyMemory
from respread.runtime.policy_events import tell_policy

log = logging.getLogger(__name__)

Told = tuple[str, bool, str]  # an Event about the policy: reason, warning, message


@dataclass(frozen=True, slots=True)
class Job:
    """What one scan of a policy works with: the API server, the watch cache, the policy and
    its memory, who may act, what keeps it from acting on stale state, and when it began."""

    api: client.ApiClient
    cache: ClusterCache
    policy: RebalancePolicy
    memory: PolicyMemory
    uid: str | None  # the policy's, for its Events
    acting: Acting  # leader election: may this replica still write?
    lifecycle: Lifecycle
    others: tuple[RebalancePolicy, ...]  # the other policies not being deleted
    safety: Safety  # its guard (deadline, pauses, watches, plan age), freshness, the ledger
    now: float  # wall clock, when it began

    @property
    def guard(self) -> ScanGuard:
        return self.safety.guard

    @property
    def run(self) -> str:
        """This scan's name in the eviction ledger: the policy and when it began (ms)."""
        return f"{self.policy.name}@{format_rfc3339(self.now)}.{int(self.now * 1000) % 1000:03d}"


@dataclass(frozen=True, slots=True)
class Acted:
    """What a scan did: its evictions, its cost writes (counted), the surge steps taken, and
    why it stopped acting (None: it did not)."""

    executions: list[Execution]
    counts: CostCounts
    surge_events: list[surges.SurgeEvent]
    halt: Halt | None = None


def _skew(analysis: Analysis, move: Move) -> tuple[str, int]:
    for g in analysis.violations:
        if g.workload == move.workload:
            return g.constraint.key, g.skew
    return "", 0


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
) -> CostCounts | None:
    """`status.deletionCost`: with the remedy on or costs to count; and once written, on with
    zero counts rather than gone."""
    if result.costs is not None or counts != CostCounts() or holds_deletion_cost(previous):
        return counts
    return None


def export_metrics(policy: RebalancePolicy, report: Report) -> None:
    metrics.forget(policy.name)
    metrics.VIOLATIONS.labels(policy.name).set(report.summary.violations)
    for v in report.violations:
        labels = (
            policy.name,
            v.workload.namespace,
            f"{v.workload.kind}/{v.workload.name}",
            v.topology_key,
            match_text(v.match_labels),  # a rollout's two ReplicaSets: two groups, two series
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
    safety: Safety | None = None,
) -> bool:
    """One scan; False when the policy turned out not to exist any more (a deletion that the
    watch missed while it was away: a relisting does not report deletions). `acting` says
    whether this replica may still write (leader election): once it says no, the scan stops
    before its next request. `safety` (the scan's guard, the freshness proof and the eviction
    ledger): every request of the scan is bound by the guard's deadline."""
    safety = safety or Safety(ScanGuard(DEFAULT_LIMITS, cache, acting=acting))
    job = Job(
        api,
        cache,
        policy,
        memory,
        policy_uid,
        acting,
        lifecycle,
        tuple(others),
        safety,
        time.time(),
    )
    started = time.monotonic()
    with within(safety.guard.deadline):
        try:
            await _scan(job, started)
        except PolicyGoneError:
            log.info("RebalancePolicy %s no longer exists; it is not scanned any more", policy.name)
            return False
        except NotLeadingError:
            log.warning(
                "scan of RebalancePolicy %s stopped: this replica no longer leads", policy.name
            )
        except Exception as err:  # a failed scan is reported; the operator keeps running
            _log_failure(job, err)
            return await _report_failure(job, err)
        finally:
            safety.guard.close()
            metrics.SCAN_SECONDS.labels(policy.name).observe(time.monotonic() - started)
    return True


async def _scan(job: Job, started: float) -> None:
    """Scan, act, write the status, tell; or, for a policy being deleted, take its costs back."""
    await _caught_up(job)
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
            now=job.now,
        )
        return
    state, result = await _plan(job)
    acted = await _act(job, state, result)
    verdict = halt_verdict(acted.halt or job.guard.why_not())
    if verdict.failed:
        job.guard.close()  # past the deadline, or stale: it still says what it did not do
    status = _status(job, result, acted, verdict)
    check(job.acting)
    await asyncio.to_thread(patch_status, job.api, job.policy.name, status_patch(status))
    await _tell(job, _events(job, result, acted, verdict))
    _log_scan(job, state, result, acted, started)
    _remember(job, status, result.report, verdict)


async def _caught_up(job: Job) -> None:
    """Every kind listed and watched, and, if the cache is suspect (a failed request, a pause),
    verified against the API server, both within the scan's deadline."""
    await job.cache.wait_ready(min(CATCH_UP, job.guard.left()))
    await job.cache.sweep(job.api, catch_up=min(CATCH_UP, job.guard.left()))


async def _plan(job: Job) -> tuple[ClusterState, Scan]:
    """Snapshot the cache and scan it (in a worker thread: it is CPU-bound). In Enforce, the
    cache is first shown current, so that a plan only acts from a cache that caught up with the
    API server after the scan began, and the ledger's evictions hold their workloads."""
    recorded = await _fresh(job) if job.policy.mode is Mode.ENFORCE else {}
    job.guard.planned()  # Halt if the process was paused since the scan began
    state = job.cache.snapshot()
    memory = job.memory
    result = await asyncio.to_thread(
        scan,
        state,
        job.policy,
        job.now,
        memory.scan,
        others=job.others,
        memo=memory.cost_memo,
        recorded=recorded,
        analyses=memory.analyses,
    )
    memory.scan = result.memory
    return state, result


async def _fresh(job: Job) -> LedgerData:
    """The watch cache shown current, then the eviction ledger as it is now (any policy's, any
    leader's evictions)."""
    safety = job.safety
    if safety.freshness is not None:
        await safety.freshness.establish(min(job.guard.limits.catch_up, job.guard.left()))
    job.guard.check()
    return await safety.ledger.recorded() if safety.ledger is not None else {}


async def _act(job: Job, state: ClusterState, result: Scan) -> Acted:
    """Enforce: the evictions, then the cost writes; surges advanced in either mode. A scan
    that stopped acting (its evictions halted, or its guard says no now) writes and advances
    nothing more."""
    executions, halt = await _evict(job, state, result)
    halt = halt or job.guard.why_not()
    if halt is not None:
        return Acted(executions, _counted(job, state, result), [], halt)
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
        counts = _counted(job, state, result)
    surge_events = await _surges(
        job.api, job.cache, job.policy, result, now=job.now, acting=job.acting, uid=job.uid
    )
    return Acted(executions, counts, surge_events)


def _counted(job: Job, state: ClusterState, result: Scan) -> CostCounts:
    """The deletion costs as they stand, nothing written or taken back."""
    return tally(state.pods, job.policy.name, result.costs, writes=[], releases=None, released=[])


async def _evict(
    job: Job, state: ClusterState, result: Scan
) -> tuple[list[Execution], Halt | None]:
    """Enforce: the planned evictions, each only while the plan still holds
    (runtime/enforcing.py); an evicted pod is remembered (cooldown, loop protection)."""
    if job.policy.mode is not Mode.ENFORCE or not result.plan.moves:
        return [], None

    def on_evicted(move: Move) -> None:
        key, skew = _skew(result.analysis, move)
        job.memory.record_eviction(move.workload, key, skew, time.time())

    work = Enforcing(
        job.api,
        job.cache,
        job.policy,
        job.guard,
        state,
        job.run,
        freshness=job.safety.freshness,
        ledger=job.safety.ledger,
        on_evicted=on_evicted,
    )
    enforced = await enforce_moves(work, result.plan.moves)
    return enforced.executions, enforced.halt


def _status(job: Job, result: Scan, acted: Acted, verdict: Verdict) -> Status:
    """The status to write: the report, bounded, with the evictions' outcomes, the conditions
    (ScanSucceeded False, CacheStale and ScanStalled as the verdict says), the cooldowns
    (after this scan's evictions) and the deletion costs."""
    memory, policy = job.memory, job.policy
    previous = memory.previous_status
    return build_status(
        result.report,
        policy,
        format_rfc3339(job.now),
        previous=previous,
        executions=acted.executions,
        conditions=with_health(scan_conditions(result.report), verdict)
        + health_conditions(verdict, previous),
        cooldowns=cooldowns_status(memory.histories(), time.time(), policy.eviction.cooldown),
        deletion_cost=_cost_status(result, acted.counts, previous),
    )


def _events(job: Job, result: Scan, acted: Acted, verdict: Verdict) -> list[Told]:
    """The Events a scan posts about its policy, in order: CacheStale and ScanStalled turning,
    the violations found and resolved, the domains out, lost and back, the costs, the surges,
    the evictions that failed."""
    out = health_events(verdict, job.memory.previous_status)
    out.extend(change_events(result.changes))
    out.extend(_domain_events(result.report))
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


def _domain_events(report: Report) -> list[Told]:
    """DomainOutage for each outage, DomainLost for each domain a workload lost this scan,
    DomainReturned for each that came back."""
    out: list[Told] = [
        (
            "DomainOutage",
            True,
            f"{o}: all {len(o.nodes)} node(s) NotReady or unreachable; no eviction on its account",
        )
        for o in report.outages
    ]
    domains = report.domains
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
    return out


async def _tell(job: Job, events: Sequence[Told]) -> None:
    for reason, warning, message in events:
        check(job.acting)
        await tell_policy(job.api, job.policy, job.uid, reason, warning=warning, message=message)


def _remember(job: Job, status: Status, report: Report, verdict: Verdict) -> None:
    """What the next scan starts from, and the metrics: a scan that stopped acting counts as
    failed, and does not count as the policy's last scan (liveness)."""
    memory, name = job.memory, job.policy.name
    memory.previous_status = status_json(status)
    export_metrics(job.policy, report)
    if verdict.failed:
        metrics.SCAN_FAILURES.labels(name).inc()
        return
    memory.last_scan = job.now
    metrics.LAST_SCAN.labels(name).set(job.now)


def _log_scan(job: Job, state: ClusterState, result: Scan, acted: Acted, started: float) -> None:
    report = result.report
    log.info(
        "RebalancePolicy %s (%s): %d pods on %d nodes; %d violation(s) (%d new, %d resolved); "
        "%d eviction(s) planned, %d deferred; %d evicted; %.2fs%s%s",
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
        _reuse_note(job.memory.analyses),
        f"; stopped: {acted.halt.message}" if acted.halt is not None else "",
    )


def _reuse_note(analyses: AnalysisMemo) -> str:
    """What the scan took from the last one, or from another policy's, for its log line."""
    if analyses.from_shared:
        return "; the analysis another policy's scan made of this cluster reused"
    if not analyses.reused:
        carried, namespaces = analyses.carried
        if not carried:
            return ""
        plan = ", and the plan reused" if analyses.plan_reused else ""
        return (
            f"; {carried} of {namespaces} namespaces unchanged since the last scan: "
            f"their analysis carried{plan}"
        )
    what = "analysis and plan" if analyses.plan_reused else "analysis"
    return f"; the cluster unchanged since the last scan: its {what} reused"


def _log_failure(job: Job, err: Exception) -> None:
    name = job.policy.name
    if isinstance(err, KubeError | Halt):  # the API server away or refusing: no traceback
        log.error("scan of RebalancePolicy %s failed: %s", name, err)
    else:
        log.error("scan of RebalancePolicy %s failed", name, exc_info=err)
    metrics.SCAN_FAILURES.labels(name).inc()
    job.cache.mark_suspect(f"the scan of {name} failed")  # the API server may be away


async def _report_failure(job: Job, err: Exception) -> bool:
    """Write the failed scan into the status (CacheStale or ScanStalled when that is why; an
    Event when scans start failing, and when those turn); False when the policy turned out not
    to exist any more. The report goes out even past the scan's deadline."""
    policy, memory = job.policy, job.memory
    verdict = failure_verdict(err, job.guard)
    job.guard.close()
    try:
        if not job.acting():
            return True  # a follower writes nothing
        reason = f"{type(err).__name__}: {err}"
        previous = memory.previous_status
        failed = conditions_status_json(
            failed_scan_status(
                policy,
                format_rfc3339(job.now),
                reason,
                previous=previous,
                extra=health_conditions(verdict, previous),
            )
        )
        await asyncio.to_thread(patch_status, job.api, policy.name, failed)
        told = health_events(verdict, previous)
        if not scan_failing(previous):  # an Event when scans start failing, not for every one
            told.append(("ScanFailed", True, reason))
        await _tell(job, told)
        # The object now says the scan failed: the next scan's conditions transition from
        # there (the last good report, its violations and their `since`, stays as it was).
        memory.previous_status = {**(previous or {}), "conditions": failed["conditions"]}
    except PolicyGoneError:
        log.info("RebalancePolicy %s no longer exists; it is not scanned any more", policy.name)
        return False
    except Exception:  # the API server may be the reason the scan failed
        log.warning("could not report the failed scan of %s", policy.name)
    return True
