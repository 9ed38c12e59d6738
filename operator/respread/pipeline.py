"""The one pure scan: cluster state + policy (+ memory) -> report, for the CLI and the operator.

    analyze -> plan evictions -> the chooser -> plan surges -> defer what surges take over
            -> order deletion costs -> hold what surges take over -> pods spread holds Pending
            -> the report

`scan` is all of it, and nothing else assembles a scan: `respread plan` (a snapshot, or a live
cluster read once) and the operator (runtime/scan.py, which then acts on the result and writes
the status) both call it. What one scan of a policy hands the next is a `Memory` value, given
and returned, never changed: the operator keeps the one returned (with the evictions it then
made, `recorded`), a newly elected leader or `respread plan --policy-name` starts from the one
the policy's status holds (`Memory.from_status`), and a one-off plan has none (`NO_MEMORY`).

Beside the memory, which is the policy's own, `recorded` is what the eviction ledger holds
(remedies/evict/ledger.py): every policy's recent evictions, as the operator (or `respread plan
--policy-name`) read them before planning. In Enforce, the workloads they hold are deferred, as
the workloads the memory holds back are.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from respread.analysis.causes import Attribution, CauseKey, PreviousScan
from respread.analysis.coverage import coverage_of
from respread.analysis.domain_memory import NO_DOMAINS, DomainMemory, DomainView, remember
from respread.analysis.groups import (
    Analysis,
    WorkloadRef,
    analysis_reads,
    analyze,
    build_index,
)
from respread.analysis.outage_holds import held_by_outages
from respread.analysis.pending import pending_pods
from respread.core.collector import gc_paused
from respread.core.model import ClusterState
from respread.inputs.policy import Mode, OutageCounting, RebalancePolicy
from respread.remedies.choose import apply_remediation, defer_surged, eviction_blocked, hold_costs
from respread.remedies.cost.memo import CostMemo
from respread.remedies.cost.order import CostPlan, plan_costs
from respread.remedies.cost.owner import Ownership
from respread.remedies.evict.clock import settled
from respread.remedies.evict.history import EvictionHistory, unready_workloads
from respread.remedies.evict.ledger import LedgerData, held_workloads
from respread.remedies.evict.planner import Plan, plan
from respread.remedies.evict.ramp import ramp_holds, ramp_plan
from respread.remedies.evict.reads import plan_unchanged
from respread.remedies.evict.unblock import with_unblocking
from respread.remedies.surge.plan import SurgeReport, plan_surges
from respread.report.build import build_report
from respread.report.changes import Before, Changes, changes, scope_left
from respread.report.model import Report, WorkloadHistory
from respread.report.stored import remembered, scanned_generation, still_true
from respread.report.stored_domains import stored_domains
from respread.scheduling.outages import Outage, by_key, constraint_keys, outages


@dataclass(frozen=True, slots=True)
class Memory:
    """What one scan of a policy hands the next."""

    evictions: EvictionHistory = field(default_factory=EvictionHistory)  # cooldown, back-off
    previous: PreviousScan | None = None  # the last scan's view: evidence for new causes
    causes: Mapping[CauseKey, Attribution] = field(default_factory=dict)  # of its violations
    # Hold workloads back in Enforce (a replacement not Ready yet, a back-off), as the operator
    # does from one scan to the next; a one-off plan holds nothing.
    holds: bool = False
    # What the Events of the next scan compare with: the policy's generation scanned (a
    # violation gone after a change of spec left the scope rather than being resolved),
    # whether the policy selected pods and whether every pod was on a known node.
    generation: int | None = None
    selected: bool = True
    complete: bool = True
    domains: DomainMemory = NO_DOMAINS  # lost domains, outages, recoveries

    @classmethod
    def from_status(cls, status: Mapping[str, Any] | None) -> Memory:
        """What a policy's status says its last scan knew, as an operator that starts, or is
        elected, reads it: the causes of its violations and the eviction history
        (`status.cooldowns`); the previous scan's view of the cluster starts afresh."""
        known = remembered(status)
        last: dict[WorkloadRef, float] = {}
        pending: dict[tuple[WorkloadRef, str], int] = {}
        level: dict[WorkloadRef, int] = {}
        until: dict[WorkloadRef, float] = {}
        for w in known.workloads:
            ref = WorkloadRef(w.namespace, w.kind, w.name)
            if w.last_eviction is not None:
                last[ref] = w.last_eviction
            for key, skew in w.reviews:
                pending[(ref, key)] = skew
            if w.backoff_level:
                level[ref] = w.backoff_level
            if w.backoff_until is not None:
                until[ref] = w.backoff_until
        causes = {key: Attribution(c, m) for key, (c, m) in known.causes.items()}
        return cls(
            EvictionHistory(last, pending, level, until),
            None,
            causes,
            holds=True,
            generation=scanned_generation(status),
            selected=still_true(status, "PodsSelected"),
            complete=still_true(status, "InputComplete"),
            domains=stored_domains(status),
        )

    def histories(self) -> list[WorkloadHistory]:
        """Every workload the eviction history knows something about (`status.cooldowns`)."""
        h = self.evictions
        return [
            WorkloadHistory(
                ref.namespace,
                ref.kind,
                ref.name,
                last_eviction=h.last_eviction.get(ref),
                reviews=tuple(
                    sorted((key, skew) for (w, key), skew in h.skew_at_eviction.items() if w == ref)
                ),
                backoff_level=h.backoff_level.get(ref, 0),
                backoff_until=h.backoff_until.get(ref),
            )
            for ref in h.workloads()
        ]

    def recorded(self, workload: WorkloadRef, key: str, skew: int, now: float) -> Memory:
        """With an eviction the operator made after the scan."""
        return replace(self, evictions=self.evictions.recorded(workload, key, skew, now))


NO_MEMORY = Memory()

_Domains = Mapping[str, frozenset[str]] | None  # KEP-5980's outage domains, or none
_Planned = tuple[float, RebalancePolicy, dict[WorkloadRef, float], dict[WorkloadRef, str]]


class SharedAnalyses:
    """The latest analysis for each distinct way of analyzing (``analysis_reads``), shared by
    the operator's policies: several policies over the same namespaces with the same
    constraint settings (one per remedy, or a DryRun beside an Enforce) analyze a state once
    between them, and hold one analysis, not one each. Held weakly: an analysis lives as long
    as a policy's memo holds it. Policies scan in worker threads, hence the lock; two that miss
    at once both analyze, and either result is exact."""

    __slots__ = ("_entries", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (what the analysis read of the policy, the outage domains, the analysis)
        self._entries: list[tuple[tuple[object, ...], _Domains, weakref.ref[Analysis]]] = []

    def get(
        self, reads: tuple[object, ...], domains: _Domains, state: ClusterState
    ) -> Analysis | None:
        """The analysis of ``state`` (the same object) made with these, or None."""
        with self._lock:
            for r, d, ref in self._entries:
                analysis = ref()
                if (
                    analysis is not None
                    and analysis.index.state is state
                    and (r, d) == (reads, domains)
                ):
                    return analysis
        return None

    def put(self, reads: tuple[object, ...], domains: _Domains, analysis: Analysis) -> None:
        """The newest analysis for ``reads``: the one before it, and those freed, dropped."""
        with self._lock:
            kept = [e for e in self._entries if e[2]() is not None and e[0] != reads]
            self._entries = [*kept, (reads, domains, weakref.ref(analysis))]


class AnalysisMemo:
    """The last scan's analysis and eviction plan. The analysis is reused by a scan of the same
    state with the same outage domains, under a policy that reads the same (``analysis_reads``:
    the namespaces it selects, its constraint settings). It is a pure function of those three
    (it reads no clock), so its reuse is exact. The state is compared by identity: the operator's
    watch cache hands out one snapshot object until a record it keeps changes
    (runtime/cache.py), so a cluster that did not change is analyzed once. A changed state is
    analyzed from the last analysis: the namespaces whose pods, owners and services did not
    change, over the same nodes, are carried from it (analysis/groups.py); a changed node, and
    every namespace is analyzed again. Either way, another policy that reads the same of its
    policy (``analysis_reads``) may already have analyzed that state (``shared``).

    The plan is reused too when the history and holds it was planned with are the same and it
    was made at an instant the clock no longer changes it from (remedies/evict/clock.py: no pod
    younger than minPodAge, no workload in cooldown), no later than this scan's, and the
    analysis is the same or differs only where the planner does not read
    (remedies/evict/reads.py: namespaces without a violated group, changed without taking or
    freeing room on a node). Kept by the caller, one per policy."""

    __slots__ = (
        "_analysis",
        "_domains",
        "_plan",
        "_planned",
        "_planned_on",
        "_reads",
        "_shared",
        "_state",
        "carried",
        "from_shared",
        "plan_reused",
        "reused",
    )

    def __init__(self, shared: SharedAnalyses | None = None) -> None:
        self.reused = False  # whether the last scan reused the analysis before it
        self.from_shared = False  # or took the one another policy made of its state
        self.plan_reused = False  # and the plan before it
        # the namespaces the analysis made by the last scan carried from the one before, of all
        self.carried = (0, 0)
        self._shared = shared
        self._state: ClusterState | None = None
        self._reads: tuple[object, ...] = ()  # what the analysis read of its policy
        self._domains: _Domains = None
        self._analysis: Analysis | None = None
        self._plan: Plan | None = None
        # what the plan was made from beside the analysis: when, the policy, history, holds
        self._planned: _Planned | None = None
        self._planned_on: Analysis | None = None  # and the analysis (kept past a change)

    def analysis(
        self,
        state: ClusterState,
        policy: RebalancePolicy,
        domains: _Domains,
    ) -> Analysis:
        """The analysis of ``state`` under ``policy`` with ``domains`` (KEP-5980: the outage
        domains, which count toward minDomains only): remembered, or made and remembered."""
        reads = analysis_reads(policy)
        last = self._analysis
        self.reused = (
            last is not None
            and self._state is state
            and self._reads == reads
            and self._domains == domains
        )
        self.carried = (0, 0)
        if self.reused:
            assert last is not None
            self.from_shared = False
            return last
        self._analysis = None  # the plan is kept: it may be the new analysis' too
        found = self._shared.get(reads, domains, state) if self._shared is not None else None
        self.from_shared = found is not None
        if found is None:
            # the namespaces a change left as they were are carried from the last analysis
            found = analyze(state, policy, build_index(state, policy, domains), previous=last)
            self.carried = (len(found.carried), len(found.inputs))
            if self._shared is not None:
                self._shared.put(reads, domains, found)
        self._state, self._reads, self._domains, self._analysis = state, reads, domains, found
        return found

    def plan(
        self,
        analysis: Analysis,
        policy: RebalancePolicy,
        now: float,
        history: Mapping[WorkloadRef, float],
        held: Mapping[WorkloadRef, str],
    ) -> Plan:
        """The eviction plan of ``analysis`` (this memo's last) at ``now``: remembered, or made
        and remembered where the clock can no longer change it. A plan made from the analysis
        before a change is this one's too when the change left what the planner reads as it was
        (remedies/evict/reads.py)."""
        last, planned, on = self._plan, self._planned, self._planned_on
        self.plan_reused = (
            last is not None
            and planned is not None
            and on is not None
            and analysis is self._analysis
            and planned[0] <= now
            and planned[1] == policy
            and planned[2] == history
            and planned[3] == held
            and plan_unchanged(on, analysis)
        )
        if self.plan_reused:
            assert last is not None
            self._planned_on = analysis  # the analysis before is let go
            return last
        self._plan = self._planned = self._planned_on = None
        made = plan(analysis, policy, now=now, history=history, held=held)
        if analysis is self._analysis and settled(analysis.index.state.pods, policy, now, history):
            self._plan, self._planned = made, (now, policy, dict(history), dict(held))
            self._planned_on = analysis
        return made


@dataclass(frozen=True, slots=True)
class Scan:
    """One scan's result, and the memory for the next."""

    analysis: Analysis
    plan: Plan  # the evictions, after the chooser and the surges' deferrals
    surge: SurgeReport  # surge moves planned, skipped and in flight
    costs: CostPlan | None  # the deletion-cost order, when the policy enables it
    report: Report
    changes: Changes  # violations found and resolved since the memory's scan
    memory: Memory  # for the next scan
    held: Mapping[WorkloadRef, str] = field(default_factory=dict)  # workloads held back, why


def scan(
    state: ClusterState,
    policy: RebalancePolicy,
    now: float,
    memory: Memory = NO_MEMORY,
    *,
    others: Sequence[RebalancePolicy] = (),
    memo: CostMemo | None = None,
    recorded: LedgerData | None = None,
    analyses: AnalysisMemo | None = None,
) -> Scan:
    """One scan of ``policy`` over ``state`` at ``now``. ``others``: the other policies not being
    deleted (which of them orders a ReplicaSet's costs); ``memo``: the deletion-cost orders of
    the policy's last scan, an exact cache (the plan is the same without it), updated in place;
    ``recorded``: the eviction ledger's data (every policy's recent evictions); ``analyses``:
    the policy's last analysis, an exact cache too (reused for the same state object).
    CPU-bound: the operator runs it in a worker thread."""
    with gc_paused():  # the analysis makes many long-lived, acyclic objects
        return _scan(
            state,
            policy,
            now,
            memory,
            others=others,
            memo=memo,
            recorded=recorded or {},
            analyses=analyses or AnalysisMemo(),
        )


def _scan(
    state: ClusterState,
    policy: RebalancePolicy,
    now: float,
    memory: Memory,
    *,
    others: Sequence[RebalancePolicy],
    memo: CostMemo | None,
    recorded: LedgerData,
    analyses: AnalysisMemo,
) -> Scan:
    found, analysis = _analyze(state, policy, now, analyses)
    covered = coverage_of(analysis, policy)
    history = memory.evictions.reviewed(analysis, now, policy.eviction.cooldown)
    domains, view = remember(memory.domains, analysis, found, now)
    outage_held = held_by_outages(analysis, found, policy)
    held = {
        **_held(state, analysis, policy, now, memory=memory, history=history, recorded=recorded),
        **ramp_holds(analysis, view, policy, history.last_eviction, now),
        **outage_held,
    }
    evictions = _planned(
        analysis,
        policy,
        now,
        history=history,
        held=held,
        view=view,
        outage_held=outage_held,
        analyses=analyses,
    )
    chosen = apply_remediation(evictions, policy)
    surge = plan_surges(analysis, eviction_blocked(chosen, policy.remediation.evict), policy, now)
    chosen = defer_surged(chosen, surge.busy)
    costs = hold_costs(_costs(analysis, policy, others, memo), surge.busy)
    pending = tuple(pending_pods(analysis, policy, now))
    chosen = with_unblocking(
        chosen,
        pending,
        analysis,
        policy,
        now=now,
        last_eviction=history.last_eviction,
        held=held,
    )
    report = build_report(
        analysis,
        chosen,
        policy,
        memory.previous,
        costs,
        surge=surge,
        carried=memory.causes,
        coverage=covered,
        pending=pending,
        outages=found,
        domains=view,
    )
    after = Memory(
        history,
        PreviousScan.of(analysis),
        _causes(report),
        memory.holds,
        generation=policy.generation,
        selected=not covered.nothing_selected,
        complete=not covered.pods_on_unknown_nodes,
        domains=domains,
    )
    changed = _changes(report, analysis, policy, memory)
    return Scan(analysis, chosen, surge, costs, report, changed, after, held)


def _analyze(
    state: ClusterState, policy: RebalancePolicy, now: float, analyses: AnalysisMemo
) -> tuple[tuple[Outage, ...], Analysis]:
    """The domains in an outage, and the analysis: under KEP-5980's counting, without them
    (they count toward minDomains only)."""
    found = outages(
        state.nodes,
        constraint_keys(state, policy.constraints.default_constraints),
        now,
        policy.outages.grace_period,
    )
    kep = policy.outages.counting is OutageCounting.KEP5980
    return found, analyses.analysis(state, policy, by_key(found) if kep and found else None)


def _planned(
    analysis: Analysis,
    policy: RebalancePolicy,
    now: float,
    *,
    history: EvictionHistory,
    held: Mapping[WorkloadRef, str],
    view: DomainView,
    outage_held: Mapping[WorkloadRef, str],
    analyses: AnalysisMemo,
) -> Plan:
    """The evictions: planned, paced while domains recover, and none deferred on account of an
    outage (not even for later runs while it lasts)."""
    evictions = analyses.plan(analysis, policy, now, history.last_eviction, held)
    evictions = ramp_plan(evictions, analysis, view, policy)
    if outage_held:
        kept = tuple(m for m in evictions.deferred if m.workload not in outage_held)
        evictions = replace(evictions, deferred=kept)
    return evictions


def _changes(
    report: Report, analysis: Analysis, policy: RebalancePolicy, memory: Memory
) -> Changes:
    """What changed since the memory's scan: every violation, not just those shown."""
    respecified = memory.generation is not None and memory.generation != policy.generation
    before = Before(frozenset(memory.causes), memory.generation, memory.selected, memory.complete)
    return changes(report, before, scope_left(analysis, policy, respecified))


def _held(
    state: ClusterState,
    analysis: Analysis,
    policy: RebalancePolicy,
    now: float,
    *,
    memory: Memory,
    history: EvictionHistory,
    recorded: LedgerData,
) -> dict[WorkloadRef, str]:
    """The workloads held back this scan (Enforce, with holds), with why: those another scan's
    evictions hold (the ledger: cooldowns across policies and leaders), then those the policy's
    own history holds (a replacement not Ready yet, a back-off); held by both, the history's
    reason is the one given."""
    if not (memory.holds and policy.mode is Mode.ENFORCE):
        return {}
    workloads = {g.workload for g in analysis.groups}  # those a move can evict from
    ledger = held_workloads(recorded, workloads, now=now, cooldown=policy.eviction.cooldown)
    return {**ledger, **history.held(now, unready_workloads(state, analysis))}


def _costs(
    analysis: Analysis,
    policy: RebalancePolicy,
    others: Sequence[RebalancePolicy],
    memo: CostMemo | None,
) -> CostPlan | None:
    settings = policy.remediation.deletion_cost
    if not settings.enabled:
        return None
    namespaces = {n.name: n for n in analysis.index.state.namespaces}
    return plan_costs(analysis, settings, memo, Ownership.of(policy.name, others, namespaces))


def _causes(report: Report) -> dict[CauseKey, Attribution]:
    """The cause of every violation reported, to carry to the next scan."""
    return {v.key: Attribution(v.cause, v.cause_message) for v in report.violations}
