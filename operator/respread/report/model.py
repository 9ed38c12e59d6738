"""The report and the policy status, typed: what the pipeline hands to the text, the JSON, the
status, the Events and the metrics.

Everything here is an immutable record; enums stay enums until report/contract.py writes the
JSON contract (docs/report.md), the only place that knows the field names. Domains are
(key or name, value) pairs in the order they are shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from respread.analysis.causes import Cause
from respread.analysis.domain_memory import NO_VIEW, DomainView
from respread.analysis.groups import WorkloadRef
from respread.analysis.pending import PendingPod
from respread.core.model import When
from respread.inputs.policy import Mode
from respread.remedies.choose import Remedy, RemedyVerdict
from respread.remedies.cost.order import Excluded, OrderState
from respread.remedies.cost.release import CostCounts
from respread.remedies.evict.steps import Move, Skip, Verdict
from respread.remedies.surge.advance import InFlight
from respread.remedies.surge.operation import Phase
from respread.remedies.surge.plan import SurgePlan, SurgeSkip
from respread.scheduling.controller import Tier
from respread.scheduling.outages import Outage

# namespace, workload kind, workload name, topology key, and the pairs matchLabelKeys added
# (match_text; "" without): a rollout's ReplicaSets keyed on pod-template-hash are two groups
ViolationKey = tuple[str, str, str, str, str]
MatchLabels = tuple[tuple[str, str], ...]
Domains = tuple[tuple[str, str], ...]  # (topology key, value)

TIER_NAMES = {  # the ReplicaSet controller's ranking, as the report names it
    Tier.UNASSIGNED: "Unassigned",
    Tier.PENDING: "Pending",
    Tier.UNKNOWN: "Unknown",
    Tier.NOT_READY: "NotReady",
    Tier.READY: "Ready",
}


def match_text(pairs: MatchLabels) -> str:
    """The pairs matchLabelKeys added to a group's selector, as a label selector reads them."""
    return ",".join(f"{k}={v}" for k, v in pairs)


def violation_key(
    workload: WorkloadRef, topology_key: str, match_labels: MatchLabels = ()
) -> ViolationKey:
    return (
        workload.namespace,
        workload.kind,
        workload.name,
        topology_key,
        match_text(match_labels),
    )


# ---- the report (RebalanceReport) -----------------------------------------------------------


class PlannerMethod(StrEnum):
    GREEDY = "greedy"  # step by step, the most misplaced workload first
    EXACT = "exact"  # an exhaustive search found fewer evictions


@dataclass(frozen=True, slots=True)
class PolicyRef:
    name: str
    mode: Mode


@dataclass(frozen=True, slots=True)
class Summary:
    nodes: int
    pods: int
    constraint_groups: int
    violations: int
    unfixable: int  # verdict NotFixable
    planned_evictions: int
    deferred_evictions: int
    blocked: int
    skipped: int
    waiting: int = 0  # verdict Waiting
    partly_fixable: int = 0  # verdict PartlyFixable
    pending: int = 0  # unbound pods that topology spread holds Pending


@dataclass(frozen=True, slots=True)
class Planner:
    method: PlannerMethod
    message: str


@dataclass(frozen=True, slots=True)
class Violation:
    workload: WorkloadRef
    topology_key: str
    when: When
    max_skew: int
    min_domains: int
    skew: int
    global_minimum: int
    domain_count: int
    domains: tuple[tuple[str, int], ...]  # (domain, pods), at most DOMAINS_SHOWN
    pods: int
    violating_pods: int
    pods_on_nodes_without_key: int
    pods_outside_domains: int
    minimum_moves: int | None
    verdict: Verdict
    violating_pods_after_run: int
    cause: Cause
    cause_message: str
    message: str
    domains_truncated: bool = False
    from_default_constraints: bool = False
    remedies: tuple[RemedyVerdict, ...] = ()
    remedy: Remedy | None = None
    incomplete: bool = False  # counted without pods on nodes the state lacks
    waiting_for: str = ""  # verdict Waiting: the holds whose lifting lets eviction fix it
    match_labels: MatchLabels = ()
    pods_pinned_by_volume: int = 0  # kept in their domain by a PersistentVolume's affinity

    @property
    def fixable(self) -> bool:
        return self.verdict is Verdict.FIXABLE

    @property
    def key(self) -> ViolationKey:
        return violation_key(self.workload, self.topology_key, self.match_labels)


@dataclass(frozen=True, slots=True)
class Predicted:
    violations: int
    violating_pods: int
    violations_after_deferred: int


class CostEntry(NamedTuple):
    """One pod of a ReplicaSet's removal order (a NamedTuple: there is one per ordered pod, and
    a frozen dataclass takes twice as long to build)."""

    pod: str
    node: str | None
    domains: Domains
    tier: Tier
    current_cost: int | None
    desired_cost: int
    changed: bool
    within_max_skew: bool
    conflict_managers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CostOrder:
    workload: WorkloadRef
    replica_set: str
    state: OrderState
    pods: int
    steps_within_max_skew: int
    changed: int
    conflicts: int
    message: str
    order: tuple[CostEntry, ...]
    owner: str | None = None  # OrderState.OVERLAP: the policy that orders these pods


@dataclass(frozen=True, slots=True)
class CostPatch:
    namespace: str
    pod: str
    from_cost: int | None
    to_cost: int


@dataclass(frozen=True, slots=True)
class DeletionCostSection:
    enabled: bool
    orders: tuple[CostOrder, ...] = ()
    excluded: tuple[Excluded, ...] = ()
    patches: tuple[CostPatch, ...] = ()
    deferred_patches: int = 0
    overlaps: int | None = None  # None with the remedy disabled


@dataclass(frozen=True, slots=True)
class SurgePlanEntry:
    """A planned surge move: the remedy's plan, with the policy's ready timeout and its steps
    in words."""

    plan: SurgePlan
    ready_timeout_seconds: float
    steps: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SurgeSection:
    enabled: bool
    plans: tuple[SurgePlanEntry, ...] = ()
    skipped: tuple[SurgeSkip, ...] = ()
    operations: tuple[InFlight, ...] = ()


@dataclass(frozen=True, slots=True)
class UnknownNodePod:
    """A live pod bound to a node the scan does not know: left out of every count."""

    namespace: str
    pod: str
    node: str


@dataclass(frozen=True, slots=True)
class CoverageSection:
    """What the scan saw of the cluster and of the policy's scope (analysis/coverage.py)."""

    pods_on_unknown_nodes: tuple[UnknownNodePod, ...] = ()
    incomplete_groups: tuple[tuple[WorkloadRef, str], ...] = ()  # (workload, topology key)
    pods_selected: int = 0
    matching_pod_selector: int | None = None  # None: the policy has no podSelector
    missing_namespaces: tuple[str, ...] = ()
    nothing_selected: str = ""  # why the policy selects no pod ("": it selects some)

    @property
    def complete(self) -> bool:
        return not self.pods_on_unknown_nodes


@dataclass(frozen=True, slots=True)
class Report:
    """The full RebalanceReport: unbounded lists (the CLI's output; the status bounds them)."""

    policy: PolicyRef
    summary: Summary
    planner: Planner
    violations: tuple[Violation, ...]  # worst first
    evictions: tuple[Move, ...]  # planned
    deferred: tuple[Move, ...]  # left for later runs (deferred_by says why)
    skipped: tuple[Skip, ...]
    predicted: Predicted
    deletion_cost: DeletionCostSection
    surge: SurgeSection
    coverage: CoverageSection = CoverageSection()
    pending: tuple[PendingPod, ...] = ()  # pods held Pending by spread, in name order
    outages: tuple[Outage, ...] = ()  # domains whose nodes are all down past the grace period
    domains: DomainView = NO_VIEW  # lost and returned domains, outage and recovery phases


# ---- the RebalancePolicy status ---------------------------------------------------------------


class ConditionType(StrEnum):
    READY = "Ready"
    SCAN_SUCCEEDED = "ScanSucceeded"
    BALANCED = "Balanced"
    INPUT_COMPLETE = "InputComplete"  # every live pod is on a node the scan knows
    PODS_SELECTED = "PodsSelected"  # the policy's selection holds pods
    CACHE_STALE = "CacheStale"  # the scan could not trust the watch cache (report/health.py)
    SCAN_STALLED = "ScanStalled"  # the scan passed its deadline


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class Condition:
    """A condition as a scan decides it; the status adds its transition time. ``status``
    None: Unknown (a Balanced that incomplete input or an empty selection cannot vouch for)."""

    type: ConditionType
    status: bool | None
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class StatusCondition:
    type: str  # a ConditionType for respread's own; a condition read back may be any
    status: ConditionStatus
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None


class StepStatus(StrEnum):
    """A plan step in the status: as planned, or what enforcement did with it."""

    PLANNED = "Planned"
    DEFERRED = "Deferred"
    EVICTED = "Evicted"
    BLOCKED = "Blocked"
    FAILED = "Failed"


@dataclass(frozen=True, slots=True)
class Execution:
    """What enforcement did with one planned eviction."""

    namespace: str
    pod: str
    state: StepStatus
    reason: str


@dataclass(frozen=True, slots=True)
class StatusSummary:
    """The report's summary as the status shows it: ``counts.blocked`` holds the plan's and
    enforcement's, and what enforcement evicted and failed to evict is added."""

    counts: Summary
    evicted: int
    failed: int


@dataclass(frozen=True, slots=True)
class DomainPods:
    name: str
    pods: int


@dataclass(frozen=True, slots=True)
class DomainsDigest:
    count: int
    max: DomainPods | None = None
    min: DomainPods | None = None


@dataclass(frozen=True, slots=True)
class StatusViolation:
    """A violation as the status lists it: the report's (its messages capped), its domains
    digested, and since when it is seen."""

    violation: Violation
    domains: DomainsDigest
    since: str


@dataclass(frozen=True, slots=True)
class StatusPending:
    """A pod spread holds Pending, as the status lists it: the report's entry, with its message
    and its first way out capped."""

    pending: PendingPod
    message: str
    unblock: str  # the first way out ("": none)


@dataclass(frozen=True, slots=True)
class PlanStep:
    """A planned or deferred eviction, with what became of it (``reason``: enforcement's, the
    plan's or the deferral's)."""

    eviction: Move
    state: StepStatus
    reason: str


@dataclass(frozen=True, slots=True)
class WorkloadHistory:
    """What the operator keeps about one workload it evicted from (``cooldowns`` holds it)."""

    namespace: str
    kind: str
    name: str
    last_eviction: float | None = None  # Unix time; the cooldown runs from here
    reviews: tuple[tuple[str, int], ...] = ()  # (topologyKey, skew at the eviction) to check
    backoff_level: int = 0
    backoff_until: float | None = None  # Unix time


@dataclass(frozen=True, slots=True)
class Cooldown:
    workload: WorkloadRef
    backoff_level: int
    last_eviction_time: str | None = None
    backoff_until: str | None = None
    pending_review: tuple[tuple[str, int], ...] = ()  # (topologyKey, skewAtEviction)


class SurgeState(StrEnum):
    PLANNED = "Planned"
    SKIPPED = "Skipped"
    SURGING = Phase.SURGING.value
    MARKING = Phase.MARKING.value
    DRAINING = Phase.DRAINING.value
    ROLLING_BACK = Phase.ROLLING_BACK.value
    ROLLED_BACK = Phase.ROLLED_BACK.value

    @classmethod
    def of(cls, phase: Phase) -> SurgeState:
        return cls(phase.value)


@dataclass(frozen=True, slots=True)
class SurgeDigest:
    workload: WorkloadRef
    state: SurgeState
    reason: str
    replicas: int | None = None  # None for a skip
    target_replicas: int | None = None


@dataclass(frozen=True, slots=True)
class Status:
    """The status a completed scan writes: every field it holds is written, and every field it
    leaves out (``surges``, ``deletionCost``) is cleared (contract.status_patch)."""

    observed_generation: int
    last_scan_time: str
    conditions: tuple[StatusCondition, ...]
    summary: StatusSummary
    violations: tuple[StatusViolation, ...]  # at most spec.report.maxItems
    violations_total: int
    plan: tuple[PlanStep, ...]  # at most spec.report.maxItems
    plan_total: int
    cooldowns: tuple[Cooldown, ...] | None = None  # None: not this write's to say, left alone
    surges: tuple[SurgeDigest, ...] = ()
    deletion_cost: CostCounts | None = None
    evicted_total: int = 0  # evictions since the policy was created (the last scan's added)
    next_eviction_time: str | None = None  # the earliest a held-back eviction is due
    pending: tuple[StatusPending, ...] = ()  # at most spec.report.maxItems
    pending_total: int = 0
    outages: tuple[Outage, ...] = ()  # at most spec.report.maxItems
    domains: DomainView = NO_VIEW  # its lists at most spec.report.maxItems each


@dataclass(frozen=True, slots=True)
class ConditionsStatus:
    """A status of conditions only (a failed scan, a policy that does not parse): the last
    good report stays."""

    observed_generation: int
    conditions: tuple[StatusCondition, ...]
