"""The JSON contract: the typed report and status (report/model.py) as the documents respread
prints and writes (docs/report.md). This is the only place that knows the field names and their
order; fields are only ever added.

A status is written as a JSON merge patch of the status subresource, where a field left out is
left as it was. ``status_patch`` therefore clears, with an explicit null (which the API server
removes), every field a completed scan's status can leave out; lists that can become empty are
written as ``[]``.
"""

from __future__ import annotations

from typing import Any

from respread.analysis.domain_memory import DomainView, LostDomain, PhaseEntry, ReturnedDomain
from respread.analysis.groups import WorkloadRef
from respread.analysis.pending import PendingPod, Unblock
from respread.core.timestamps import format_rfc3339
from respread.inputs.policy import API_VERSION
from respread.remedies.choose import RemedyVerdict
from respread.remedies.cost.order import Excluded
from respread.remedies.cost.release import CostCounts
from respread.remedies.evict.steps import Move, Skip
from respread.remedies.surge.advance import InFlight
from respread.report.model import (
    TIER_NAMES,
    ConditionsStatus,
    Cooldown,
    CostEntry,
    CostOrder,
    CostPatch,
    CoverageSection,
    DeletionCostSection,
    DomainPods,
    DomainsDigest,
    MatchLabels,
    PlanStep,
    Report,
    Status,
    StatusCondition,
    StatusPending,
    StatusSummary,
    StatusViolation,
    Summary,
    SurgeDigest,
    SurgePlanEntry,
    SurgeSection,
    Violation,
)
from respread.report.move import MoveAnswer
from respread.scheduling.outages import Outage

Json = dict[str, Any]
OUTAGE_NODES_LISTED = 20  # an outage lists its first nodes (a zone may have thousands)


def _workload(w: WorkloadRef) -> Json:
    return {"kind": w.kind, "name": w.name}


def _ref(w: WorkloadRef) -> Json:
    return {"namespace": w.namespace, "workload": _workload(w)}


def _optional(out: Json, **fields: object) -> Json:
    """``out`` with each field that is set (not None, False, empty or zero-length)."""
    out.update((k, v) for k, v in fields.items() if v)
    return out


# ---- the report ---------------------------------------------------------------------------


def _summary(s: Summary, enforcement: Json | None = None) -> Json:
    """The report's summary; the status's adds what enforcement did (``enforcement``)."""
    return {
        "nodes": s.nodes,
        "pods": s.pods,
        "constraintGroups": s.constraint_groups,
        "violations": s.violations,
        "unfixable": s.unfixable,
        "plannedEvictions": s.planned_evictions,
        "deferredEvictions": s.deferred_evictions,
        "blocked": s.blocked,
        "skipped": s.skipped,
        **(enforcement or {}),
        "waiting": s.waiting,
        "partlyFixable": s.partly_fixable,
        "pendingPods": s.pending,
    }


def _remedy(v: RemedyVerdict) -> Json:
    return {
        "name": v.remedy.value,
        "enabled": v.enabled,
        "applies": v.applies,
        "reason": v.reason,
    }


def _match_labels(pairs: MatchLabels) -> Json:
    """`matchLabels`, only for a constraint with matchLabelKeys: the pairs that make this group
    one of several of its workload (a rollout's ReplicaSets, by pod-template-hash)."""
    return {"matchLabels": dict(pairs)} if pairs else {}


def violation_json(v: Violation) -> Json:
    entry: Json = {
        "namespace": v.workload.namespace,
        "workload": _workload(v.workload),
        "topologyKey": v.topology_key,
        **_match_labels(v.match_labels),
        "whenUnsatisfiable": v.when.value,
        "maxSkew": v.max_skew,
        "minDomains": v.min_domains,
        "skew": v.skew,
        "globalMinimum": v.global_minimum,
        "domainCount": v.domain_count,
        "domains": dict(v.domains),
        "pods": v.pods,
        "violatingPods": v.violating_pods,
        "podsOnNodesWithoutKey": v.pods_on_nodes_without_key,
        "podsOutsideDomains": v.pods_outside_domains,
        "minimumMoves": v.minimum_moves,
        "fixable": v.fixable,
        "verdict": v.verdict.value,
        "violatingPodsAfterRun": v.violating_pods_after_run,
        "cause": v.cause.value,
        "causeMessage": v.cause_message,
        "message": v.message,
    }
    _optional(
        entry,
        domainsTruncated=v.domains_truncated,
        fromDefaultConstraints=v.from_default_constraints,
        incomplete=v.incomplete,
        waitingFor=v.waiting_for,
        podsPinnedByVolume=v.pods_pinned_by_volume,
    )
    entry["remedies"] = [_remedy(r) for r in v.remedies]
    entry["remedy"] = v.remedy.value if v.remedy is not None else None
    return entry


def _landing(e: Move) -> Json:
    """Where an eviction moves its pod from and to."""
    return {
        "fromDomain": dict(e.from_domain),
        "toDomain": dict(e.to_domain),
        "predictedNode": e.to_node,
    }


def eviction_json(e: Move) -> Json:
    entry: Json = {
        "namespace": e.pod.namespace,
        "pod": e.pod.name,
        "workload": _workload(e.workload),
        "node": e.from_node,
        **_landing(e),
        "reason": e.reason,
    }
    return _optional(entry, deferredBy=e.deferred_by)


def _skipped(s: Skip) -> Json:
    return {
        "namespace": s.pod.namespace,
        "pod": s.pod.name,
        "workload": _workload(s.workload),
        "node": s.pod.node_name,
        "kind": s.kind.value,
        "reason": s.reason,
    }


def _cost_entry(e: CostEntry) -> Json:
    out: Json = {
        "pod": e.pod,
        "node": e.node,
        "domains": dict(e.domains),
        "tier": TIER_NAMES[e.tier],
        "currentCost": e.current_cost,
        "desiredCost": e.desired_cost,
        "changed": e.changed,
        "withinMaxSkew": e.within_max_skew,
    }
    if e.conflict_managers:
        out["conflictManagers"] = list(e.conflict_managers)
    return out


def _order(o: CostOrder) -> Json:
    out = _ref(o.workload) | {
        "replicaSet": o.replica_set,
        "state": o.state.value,
        "pods": o.pods,
        "stepsWithinMaxSkew": o.steps_within_max_skew,
        "changed": o.changed,
        "conflicts": o.conflicts,
        "message": o.message,
        "order": [_cost_entry(e) for e in o.order],
    }
    if o.owner is not None:
        out["owner"] = o.owner
    return out


def _excluded(x: Excluded) -> Json:
    return _ref(x.workload) | {"pods": x.pods, "reason": x.reason}


def _patch(p: CostPatch) -> Json:
    return {"namespace": p.namespace, "pod": p.pod, "from": p.from_cost, "to": p.to_cost}


def deletion_cost_json(section: DeletionCostSection) -> Json:
    out: Json = {
        "enabled": section.enabled,
        "orders": [_order(o) for o in section.orders],
        "excluded": [_excluded(x) for x in section.excluded],
        "patches": [_patch(p) for p in section.patches],
        "deferredPatches": section.deferred_patches,
    }
    if section.overlaps is not None:
        out["overlaps"] = section.overlaps
    return out


def surge_plan_json(entry: SurgePlanEntry) -> Json:
    p = entry.plan
    return _ref(p.workload) | {
        "replicas": p.original,
        "surge": p.surge,
        "targetReplicas": p.target,
        "readyTimeoutSeconds": entry.ready_timeout_seconds,
        "landings": [
            {
                "node": lnd.node,
                "domains": dict(lnd.domains),
                "alsoAdmitted": [dict(d) for d in lnd.others],
            }
            for lnd in p.landings
        ],
        "victims": [
            {"pod": v.pod.name, "node": v.pod.node_name, "domains": dict(v.domains)}
            for v in p.victims
        ],
        "predictedMisplacedAfter": p.misplaced_after,
        "landingDetermined": p.determined,
        "worstCaseMisplacedAfter": p.worst_misplaced,
        "steps": list(entry.steps),
    }


def _operation(f: InFlight) -> Json:
    op = f.operation
    return _ref(f.workload) | {
        "policy": op.policy,
        "phase": op.phase.value,
        "originalReplicas": op.original,
        "targetReplicas": op.target,
        "replicas": f.deployment.replicas,
        "readyReplicas": f.ready_replicas,
        "started": op.started,
        "deadline": op.deadline,
        "next": {"action": f.action.kind.value, "reason": f.action.reason},
        "victims": [v.pod.name for v in f.action.victims],
    }


def surge_json(section: SurgeSection) -> Json:
    return {
        "enabled": section.enabled,
        "plans": [surge_plan_json(p) for p in section.plans],
        "skipped": [_ref(s.workload) | {"reason": s.reason} for s in section.skipped],
        "operations": [_operation(op) for op in section.operations],
    }


def coverage_json(c: CoverageSection) -> Json:
    """What the scan saw: pods on nodes it lacks, the groups counted without them, the pods
    the policy selects (and why none)."""
    out: Json = {
        "complete": c.complete,
        "podsOnUnknownNodes": [
            {"namespace": p.namespace, "pod": p.pod, "node": p.node}
            for p in c.pods_on_unknown_nodes
        ],
        "incompleteGroups": [_ref(w) | {"topologyKey": key} for w, key in c.incomplete_groups],
        "podsSelected": c.pods_selected,
    }
    if c.matching_pod_selector is not None:
        out["podsMatchingPodSelector"] = c.matching_pod_selector
    return _optional(
        out, missingNamespaces=list(c.missing_namespaces), nothingSelected=c.nothing_selected
    )


def _unblock(u: Unblock) -> Json:
    out: Json = {"kind": u.kind.value, "message": u.message}
    if u.domain:
        out["domain"] = u.domain
    if u.evict is not None:
        out["evict"] = {"namespace": u.evict.namespace, "pod": u.evict.name, "node": u.node}
        out["predictedNode"] = u.predicted_node
    return out


def pending_json(p: PendingPod) -> Json:
    """One pod spread holds Pending (`pending[]`)."""
    return {
        "namespace": p.pod.namespace,
        "pod": p.pod.name,
        "workload": _workload(p.workload),
        "topologyKey": p.topology_key,
        "maxSkew": p.max_skew,
        "minDomains": p.min_domains,
        "globalMinimum": p.global_min,
        "domains": dict(p.counts),
        "nodesRefusedBySpread": p.nodes_refused_by_spread,
        "reason": p.obstacle.value,
        "admittedDomains": [
            {
                "name": a.domain,
                "pods": a.pods,
                "reason": a.obstacle.value,
                "nodes": [
                    {"name": n.node, "reason": n.obstacle.value, "detail": n.detail}
                    for n in a.nodes
                ],
            }
            for a in p.admitted
        ],
        "admittedDomainsTotal": p.admitted_total,
        "message": p.message,
        "unblock": [_unblock(u) for u in p.unblock],
        "evidence": p.evidence,
    }


def outage_json(o: Outage) -> Json:
    """A domain whose nodes are all down past the grace period (`outages[]`)."""
    return {
        "topologyKey": o.key,
        "domain": o.domain,
        "nodes": list(o.nodes[:OUTAGE_NODES_LISTED]),
        "nodeCount": len(o.nodes),
        "since": format_rfc3339(o.since) if o.since is not None else None,
    }


def _time(t: float | None) -> str | None:
    return format_rfc3339(t) if t is not None else None


def lost_json(d: LostDomain) -> Json:
    """A domain a workload lost (`lostDomains[]`): its last node went, not in an outage."""
    return _ref(d.workload) | {
        "topologyKey": d.topology_key,
        "domain": d.domain,
        "since": _time(d.since),
        "minDomains": d.min_domains,
        "eligibleDomains": d.eligible,
        "minDomainsUnmet": d.min_domains_unmet,
    }


def returned_json(d: ReturnedDomain) -> Json:
    return _ref(d.workload) | {
        "topologyKey": d.topology_key,
        "domain": d.domain,
        "lostSince": _time(d.lost_since),
    }


def phase_json(p: PhaseEntry) -> Json:
    """An outage domain's phase (`domainPhases[]`): Outage, Recovering, then Normal once."""
    return {
        "topologyKey": p.topology_key,
        "domain": p.domain,
        "phase": p.phase.value,
        "since": _time(p.since),
        "workloads": p.workloads,
        "workloadsAtStart": p.workloads_at_start,
    }


def domains_json(view: DomainView) -> Json:
    return {
        "lostDomains": [lost_json(d) for d in view.lost],
        "returnedDomains": [returned_json(d) for d in view.returned],
        "domainPhases": [phase_json(p) for p in view.phases],
    }


def report_json(report: Report) -> Json:
    """The RebalanceReport (`respread plan -o json|yaml`)."""
    p = report.predicted
    return {
        "apiVersion": API_VERSION,
        "kind": "RebalanceReport",
        "policy": {"name": report.policy.name, "mode": report.policy.mode.value},
        "summary": _summary(report.summary),
        "planner": {"method": report.planner.method.value, "message": report.planner.message},
        "violations": [violation_json(v) for v in report.violations],
        "evictions": [eviction_json(e) for e in report.evictions],
        "deferred": [eviction_json(e) for e in report.deferred],
        "skipped": [_skipped(s) for s in report.skipped],
        "predicted": {
            "violations": p.violations,
            "violatingPods": p.violating_pods,
            "violationsAfterDeferred": p.violations_after_deferred,
        },
        "deletionCost": deletion_cost_json(report.deletion_cost),
        "surge": surge_json(report.surge),
        "coverage": coverage_json(report.coverage),
        "pending": [pending_json(p) for p in report.pending],
        "outages": [outage_json(o) for o in report.outages],
        **domains_json(report.domains),
    }


def move_json(answer: MoveAnswer) -> Json:
    """`respread explain`'s `move`: whether the plan moves the pod, and every reason not now."""
    out: Json = {"verdict": answer.verdict.value}
    if answer.step is not None:
        out["step"] = answer.step
    if answer.predicted_node is not None:
        out["predictedNode"] = answer.predicted_node
    out["reasons"] = [
        {"kind": r.kind.value, "reason": r.text}
        | ({"until": format_rfc3339(r.until)} if r.until is not None else {})
        for r in answer.reasons
    ]
    return out


# ---- the status ---------------------------------------------------------------------------


def condition_json(c: StatusCondition) -> Json:
    out: Json = {"type": c.type, "status": c.status.value}
    fields = (
        ("reason", c.reason),
        ("message", c.message),
        ("lastTransitionTime", c.last_transition_time),
        ("observedGeneration", c.observed_generation),
    )
    out.update((k, v) for k, v in fields if v is not None)
    return out


def _status_summary(s: StatusSummary) -> Json:
    return _summary(s.counts, {"evicted": s.evicted, "failed": s.failed})


def _status_pending(s: StatusPending) -> Json:
    p = s.pending
    return _ref(p.workload) | {
        "pod": p.pod.name,
        "topologyKey": p.topology_key,
        "domains": [a.domain for a in p.admitted],
        "reason": p.obstacle.value,
        "message": s.message,
        "unblock": s.unblock,
    }


def _domain_pods(d: DomainPods) -> Json:
    return {"name": d.name, "pods": d.pods}


def _digest(d: DomainsDigest) -> Json:
    out: Json = {"count": d.count}
    if d.max is not None:
        out["max"] = _domain_pods(d.max)
    if d.min is not None:
        out["min"] = _domain_pods(d.min)
    return out


def _status_violation(s: StatusViolation) -> Json:
    v = s.violation
    entry = _ref(v.workload) | {
        "topologyKey": v.topology_key,
        **_match_labels(v.match_labels),
        "maxSkew": v.max_skew,
        "minDomains": v.min_domains,
        "skew": v.skew,
        "globalMinimum": v.global_minimum,
        "domains": _digest(s.domains),
        "pods": v.pods,
        "violatingPods": v.violating_pods,
        "cause": v.cause.value,
        "causeMessage": v.cause_message,
        "since": s.since,
        "fixable": v.fixable,
        "verdict": v.verdict.value,
        "message": v.message,
    }
    if v.remedy is not None:
        entry["remedy"] = v.remedy.value
    if v.incomplete:
        entry["incomplete"] = True
    return entry


def _step(s: PlanStep) -> Json:
    e = s.eviction
    return {
        "namespace": e.pod.namespace,
        "pod": e.pod.name,
        "node": e.from_node,
        "workload": _workload(e.workload),
        **_landing(e),
        "state": s.state.value,
        "reason": s.reason,
    }


def cooldown_json(c: Cooldown) -> Json:
    out = _ref(c.workload) | {"backoffLevel": c.backoff_level}
    if c.last_eviction_time is not None:
        out["lastEvictionTime"] = c.last_eviction_time
    if c.backoff_until is not None:
        out["backoffUntil"] = c.backoff_until
    if c.pending_review:
        out["pendingReview"] = [
            {"topologyKey": key, "skewAtEviction": skew} for key, skew in c.pending_review
        ]
    return out


def _surge_digest(s: SurgeDigest) -> Json:
    out = _ref(s.workload) | {"state": s.state.value}
    if s.replicas is not None:
        out["replicas"] = s.replicas
    if s.target_replicas is not None:
        out["targetReplicas"] = s.target_replicas
    out["reason"] = s.reason
    return out


def deletion_cost_status_json(d: CostCounts) -> Json:
    """`status.deletionCost`: what the last scan (or deletion pass) wrote and took back."""
    return {
        "written": d.written,
        "removed": d.removed,
        "handedOver": d.handed_over,
        "conflicts": d.conflicts,
        "overlaps": d.overlaps,
        "overlapping": [
            {
                "namespace": o.namespace,
                "replicaSet": o.replica_set,
                "pods": o.pods,
                "policy": o.policy,
            }
            for o in d.overlapping
        ],
        "skipped": d.skipped,
        "failed": d.failed,
        "leftForLaterScans": d.left,
        "managed": d.managed,
    }


def status_json(status: Status) -> Json:
    """The status as the object holds it once written (what the next scan reads back)."""
    out: Json = {
        "observedGeneration": status.observed_generation,
        "lastScanTime": status.last_scan_time,
        "conditions": [condition_json(x) for x in status.conditions],
        "summary": _status_summary(status.summary),
        "violations": [_status_violation(x) for x in status.violations],
        "violationsTotal": status.violations_total,
        "plan": [_step(x) for x in status.plan],
        "planTotal": status.plan_total,
        "evictedTotal": status.evicted_total,
    }
    if status.next_eviction_time is not None:
        out["nextEvictionTime"] = status.next_eviction_time
    if status.cooldowns is not None:
        out["cooldowns"] = [cooldown_json(x) for x in status.cooldowns]
    if status.surges:
        out["surges"] = [_surge_digest(x) for x in status.surges]
    if status.deletion_cost is not None:
        out["deletionCost"] = deletion_cost_status_json(status.deletion_cost)
    out["outages"] = [outage_json(o) for o in status.outages]
    out.update(domains_json(status.domains))
    out["pending"] = [_status_pending(x) for x in status.pending]
    out["pendingTotal"] = status.pending_total
    return out


# A completed scan's status leaves these out when it has nothing to say; the merge patch must
# then remove them, or the last value written would stay for good. (The other fields are
# always written: the lists as `[]` when empty. `summary` and `deletionCost` are objects that a
# merge patch merges key by key: every one of their keys is always written.)
CLEARED_WHEN_ABSENT = ("surges", "deletionCost", "nextEvictionTime")


def status_patch(status: Status) -> Json:
    """The JSON merge patch of the status subresource that makes it `status`."""
    out = status_json(status)
    for name in CLEARED_WHEN_ABSENT:
        out.setdefault(name, None)
    return out


def conditions_status_json(status: ConditionsStatus) -> Json:
    """The merge patch of a conditions-only status: the rest of the status stays as it was."""
    return {
        "observedGeneration": status.observed_generation,
        "conditions": [condition_json(x) for x in status.conditions],
    }
