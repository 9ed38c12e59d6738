"""Taking back the pod-deletion-cost annotations a policy wrote.

Each cost respread writes carries two companion annotations, written in the same patch:
``respread.io/deletion-cost-policy`` (the RebalancePolicy that wrote it) and
``respread.io/deletion-cost-written`` (the value written). A policy takes its costs back when it
is deleted (a finalizer holds the deletion until that is done), when its remedy is switched off
(``deletionCost.enabled: false`` in Enforce), and for pods it no longer orders (a namespace left
its selector, a workload lost its hard constraints). For each pod that names the policy:

- the cost is respread's (``respread`` is the only field manager of the annotation and its value
  is the one written) and another policy that writes costs covers the pod: the cost stays, and
  the policy annotation names that policy (``HandOver``): the owner of the pod's ReplicaSet by
  cost_owner.py's rule, this policy left out (so a ReplicaSet another policy owns is handed
  to it, and the policies' scans agree on who keeps what);
- the cost is respread's and no other policy covers the pod: the cost and both companions are
  removed (``Remove``);
- the cost is no longer respread's (another manager set or owns it): the cost stays as it is,
  only respread's two companions are removed (``Untag``).

At most a bounded number a scan (what the scan's writes leave of ``maxPatchesPerScan``); the
rest is left for later scans. DryRun never writes or removes anything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from respread.core.annotations import (
    COST_POLICY,
    COST_WRITTEN,
    DELETION_COST,
    FIELD_MANAGER,
    ReleaseAction,
)
from respread.core.model import Namespace, Pod
from respread.core.timestamps import parse_rfc3339
from respread.inputs.policy import RebalancePolicy
from respread.remedies.cost.order import CostPlan, OrderState
from respread.remedies.cost.owner import OVERLAP_EXAMPLES, Ownership, replica_set_key
from respread.scheduling.controller import parse_cost
from respread.scheduling.spread import pod_counts

FINALIZER: Final = "respread.io/deletion-cost"  # on a policy while costs it wrote may remain
FINALIZER_TIMEOUT: Final = 600.0  # seconds after deletion: the finalizer is then removed anyway
RELEASE_INTERVAL: Final = 10.0  # seconds between passes over a policy being deleted
# A pass finding nothing left removes the finalizer only this long after this operator saw the
# deletion: a write made by a scan that was running then has reached the watch cache by then.
SETTLE: Final = 5.0


@dataclass(frozen=True, slots=True)
class Release:
    pod: Pod
    action: ReleaseAction
    hand_to: str | None = None  # HandOver: the policy that keeps the cost


@dataclass(frozen=True, slots=True)
class ReleasePlan:
    releases: tuple[Release, ...]  # this scan's, bounded
    deferred: int  # left for later scans by the cap
    tagged: int  # live pods whose cost names the policy (before this scan's releases)


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """What the policy object says beyond its spec."""

    deleting_since: float | None = None  # metadata.deletionTimestamp (epoch seconds)
    finalizer: bool = False  # respread's finalizer is in metadata.finalizers
    seen: float | None = None  # when this operator saw the deletion first (its own clock)


NOT_DELETING: Final = Lifecycle()


def respread_cost(pod: Pod) -> bool:
    """The pod's cost is the one respread wrote: respread's field manager alone owns the
    annotation (metadata.managedFields) and its value is the value recorded beside it."""
    cost = parse_cost(pod.annotations.get(DELETION_COST))
    return (
        pod.deletion_cost_managers == (FIELD_MANAGER,)
        and cost is not None
        and cost == parse_cost(pod.annotations.get(COST_WRITTEN))
    )


def tagged(pods: Iterable[Pod], policy: str) -> list[Pod]:
    """Live pods whose cost annotation names the policy, by namespace and name."""
    out = [p for p in pods if p.annotations.get(COST_POLICY) == policy and pod_counts(p)]
    return sorted(out, key=lambda p: (p.namespace, p.name))


def coverage(
    policy: str,
    others: Sequence[RebalancePolicy],
    namespaces: Mapping[str, Namespace],
    pods: Iterable[Pod],
) -> Callable[[Pod], str | None]:
    """The policy that keeps a pod's cost when this one lets it go: of the other policies that
    write costs and select its namespace, the owner of its ReplicaSet (cost_owner.py: the first
    by name that one of its pods names, else the first by name); None when there is none."""
    ownership = Ownership.of(policy, others, namespaces)
    siblings: dict[tuple[str, str, str], list[Pod]] = defaultdict(list)
    for p in pods:
        if pod_counts(p):
            siblings[replica_set_key(p)].append(p)

    def covered_by(pod: Pod) -> str | None:
        together = siblings.get(replica_set_key(pod)) or [pod]
        return ownership.next_owner(pod.namespace, together)

    return covered_by


def ordered_pods(costs: CostPlan | None) -> frozenset[tuple[str, str]]:
    """The pods the policy's cost plan orders and owns (namespace, name): their costs are kept
    (those of a ReplicaSet another policy owns are handed over to it)."""
    if costs is None:
        return frozenset()
    return frozenset(
        (e.pod.namespace, e.pod.name)
        for o in costs.orders
        if o.state is not OrderState.OVERLAP
        for e in o.pods
    )


def plan_releases(
    pods: Iterable[Pod],
    policy: str,
    *,
    keep: frozenset[tuple[str, str]],
    covered_by: Callable[[Pod], str | None],
    cap: int,
) -> ReleasePlan:
    """The costs the policy takes back this scan: every pod naming it that it does not keep."""
    mine = tagged(pods, policy)
    out: list[Release] = []
    for pod in mine:
        if (pod.namespace, pod.name) in keep:
            continue
        if not respread_cost(pod):
            out.append(Release(pod, ReleaseAction.UNTAG))
            continue
        other = covered_by(pod)
        if other is not None and other != policy:
            out.append(Release(pod, ReleaseAction.HAND_OVER, other))
        else:
            out.append(Release(pod, ReleaseAction.REMOVE))
    room = max(cap, 0)
    return ReleasePlan(tuple(out[:room]), max(len(out) - room, 0), len(mine))


# --------------------------------------------------------------------------------------------
# What a scan did, for the status, the Event and the log


class Overlapping(NamedTuple):
    """ReplicaSets another RebalancePolicy orders: an example the status names."""

    namespace: str
    replica_set: str
    pods: int
    policy: str  # the policy that owns their costs


@dataclass(frozen=True, slots=True)
class CostCounts:
    """What a scan (or a deletion pass) did with pod-deletion-cost: `status.deletionCost`."""

    written: int = 0
    removed: int = 0
    handed_over: int = 0
    conflicts: int = 0  # pods left alone: another manager owns their cost
    overlaps: int = 0  # pods left alone: another RebalancePolicy orders them (cost_owner.py)
    skipped: int = 0  # the pod changed since the scan (the next scan sees it)
    failed: int = 0
    left: int = 0  # patches left for later scans by maxPatchesPerScan
    managed: int = 0  # live pods whose cost names the policy, after this scan
    overlapping: tuple[Overlapping, ...] = ()  # at most OVERLAP_EXAMPLES, sorted


def plan_conflicts(costs: CostPlan | None) -> int:
    if costs is None:
        return 0
    return sum(len(o.conflicts) for o in costs.orders if o.state is OrderState.CONFLICT)


def plan_overlaps(costs: CostPlan | None) -> tuple[int, tuple[Overlapping, ...]]:
    """The pods another policy orders, and the first ReplicaSets of them (bounded examples)."""
    if costs is None:
        return 0, ()
    found = costs.overlapping
    examples = tuple(
        Overlapping(o.workload.namespace, o.replica_set, len(o.pods), o.owner or "")
        for o in found[:OVERLAP_EXAMPLES]
    )
    return sum(len(o.pods) for o in found), examples


def cost_event(counts: CostCounts) -> tuple[str, bool, str] | None:
    """The one Event a scan posts about its costs (reason, warning, message); None when it
    wrote and removed nothing."""
    if not (counts.written or counts.removed or counts.handed_over or counts.failed):
        return None
    parts = [f"{counts.written} written", f"{counts.removed} removed"]
    if counts.handed_over:
        parts.append(f"{counts.handed_over} handed over to another policy")
    if counts.conflicts:
        parts.append(f"{counts.conflicts} left alone (another field manager owns them)")
    if counts.overlaps:
        parts.append(f"{counts.overlaps} left to another RebalancePolicy that orders them")
    if counts.skipped:
        parts.append(f"{counts.skipped} skipped (the pod changed since the scan)")
    if counts.failed:
        parts.append(f"{counts.failed} failed")
    parts.append(f"{counts.left} left for later scans")
    return (
        "DeletionCostFailed" if counts.failed else "DeletionCostUpdated",
        counts.failed > 0,
        "pod-deletion-cost: " + ", ".join(parts) + f"; {counts.managed} pod(s) carry this"
        " policy's cost",
    )


def settled(lifecycle: Lifecycle, now: float) -> bool:
    """Long enough since the deletion was seen for the watch cache to hold every write."""
    return lifecycle.seen is None or now - lifecycle.seen >= SETTLE


def finalizer_due(lifecycle: Lifecycle, now: float) -> bool:
    """The finalizer is removed anyway: the policy has been deleting for longer than the
    timeout (a cluster where the costs cannot be taken back must not hold it forever)."""
    return (
        lifecycle.deleting_since is not None and now - lifecycle.deleting_since > FINALIZER_TIMEOUT
    )


def lifecycle_of(meta: Mapping[str, object]) -> Lifecycle:
    """A policy object's metadata: deleting since when, and whether it carries the finalizer."""
    raw = meta.get("deletionTimestamp")
    since: float | None = None
    if isinstance(raw, str):
        try:
            since = parse_rfc3339(raw)
        except ValueError:  # deleting, since an unreadable time: never timed out
            since = float("inf")
    finalizers = meta.get("finalizers")
    present = isinstance(finalizers, list | tuple) and FINALIZER in finalizers
    return Lifecycle(deleting_since=since, finalizer=present)
