"""The deletion-cost remedy's writes in a scan: the costs written (the finalizer first), the
costs taken back from pods the policy no longer orders, and the pass over a deleted policy that
takes back the rest (deletion_cost.py orders, cost_release.py decides what to take back)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from kubernetes import client

from respread.core.annotations import COST_POLICY
from respread.core.model import ClusterState, Pod
from respread.inputs.policy import RebalancePolicy
from respread.kube.annotations import CostResult, CostWrite, release_cost, write_cost
from respread.kube.client import KubeError
from respread.kube.writer import patch_status, set_finalizer
from respread.remedies.cost.order import CostPlan
from respread.remedies.cost.release import (
    FINALIZER,
    FINALIZER_TIMEOUT,
    CostCounts,
    Lifecycle,
    ReleasePlan,
    cost_event,
    coverage,
    finalizer_due,
    ordered_pods,
    plan_conflicts,
    plan_overlaps,
    plan_releases,
    settled,
    tagged,
)
from respread.report.contract import deletion_cost_status_json
from respread.runtime import metrics
from respread.runtime.acting import Acting, always, check
from respread.runtime.cache import ClusterCache
from respread.runtime.memory import PolicyMemory
from respread.runtime.policy_events import tell_policy

log = logging.getLogger(__name__)


async def write_costs(
    api: client.ApiClient, policy: RebalancePolicy, costs: CostPlan, acting: Acting = always
) -> list[CostWrite]:
    """Write this scan's pod-deletion-cost patches (already bounded by maxPatchesPerScan)."""
    writes = []
    for entry in costs.patches:
        write = await _cost_request(
            api,
            policy,
            acting,
            write_cost,
            entry.pod,
            expected=entry.current,
            cost=entry.desired,
            take_over=policy.remediation.deletion_cost.take_over,
            seen_policy=entry.pod.annotations.get(COST_POLICY),
        )
        writes.append(write)
    _summarise(policy, writes, "pod-deletion-cost", costs.deferred_patches)
    return writes


async def _cost_request(
    api: client.ApiClient,
    policy: RebalancePolicy,
    acting: Acting,
    request: Callable[..., CostWrite],
    pod: Pod,
    **fields: Any,
) -> CostWrite:
    """One pod's cost write or take-back (``request``) in the policy's name, on a thread (the
    client blocks), once this replica may still act; counted and logged."""
    check(acting)
    write = await asyncio.to_thread(
        request, api, pod.namespace, pod.name, uid=pod.uid, policy=policy.name, **fields
    )
    metrics.COST_PATCHES.labels(policy.name, write.result.value).inc()
    log.debug(
        "pod-deletion-cost of %s/%s: %s (%s)",
        write.namespace,
        write.pod,
        write.result.value,
        write.reason,
    )
    return write


def _summarise(policy: RebalancePolicy, writes: Sequence[CostWrite], what: str, left: int) -> None:
    if writes:
        results = Counter(w.result.value for w in writes)
        log.info(
            "RebalancePolicy %s: %s %s; %d left for later scans",
            policy.name,
            what,
            ", ".join(f"{n} {r.lower()}" for r, n in sorted(results.items())),
            left,
        )


async def release_costs(
    api: client.ApiClient, policy: RebalancePolicy, plan: ReleasePlan, acting: Acting = always
) -> list[CostWrite]:
    """Take back this scan's costs (cost_release.py; already bounded). A cost handed over to
    another policy is handed over only once that policy carries the finalizer (its deletion
    then takes the cost back); one whose finalizer cannot be set now waits for a later scan."""
    out = []
    secured: dict[str, bool] = {}
    for target in sorted({e.hand_to for e in plan.releases if e.hand_to is not None}):
        check(acting)
        try:
            secured[target] = await asyncio.to_thread(
                set_finalizer, api, target, FINALIZER, present=True
            )
        except KubeError as err:  # PolicyGoneError included: deleted since
            log.info(
                "RebalancePolicy %s: cannot hand costs over to %s: %s", policy.name, target, err
            )
            secured[target] = False
    for entry in plan.releases:
        if entry.hand_to is not None and not secured.get(entry.hand_to):
            out.append(
                CostWrite(
                    entry.pod.namespace,
                    entry.pod.name,
                    CostResult.SKIPPED,
                    f"RebalancePolicy {entry.hand_to} could not be given the finalizer",
                )
            )
            continue
        done = await _cost_request(
            api, policy, acting, release_cost, entry.pod, action=entry.action, hand_to=entry.hand_to
        )
        out.append(done)
    _summarise(policy, out, "pod-deletion-cost taken back:", plan.deferred)
    return out


TAKEN_BACK = frozenset({CostResult.REMOVED, CostResult.HANDED_OVER, CostResult.UNTAGGED})


def tally(
    pods: Sequence[Pod],
    policy: str,
    costs: CostPlan | None,
    *,
    writes: Sequence[CostWrite],
    releases: ReleasePlan | None,
    released: Sequence[CostWrite],
    written_skipped: int = 0,
) -> CostCounts:
    """What a scan did with the policy's costs (the status's deletionCost, its Event)."""
    before = {(p.namespace, p.name) for p in tagged(pods, policy)}
    gone = {(w.namespace, w.pod) for w in released if w.result in TAKEN_BACK}
    added = {(w.namespace, w.pod) for w in writes if w.result is CostResult.WRITTEN}
    done = [*writes, *released]
    overlaps, overlapping = plan_overlaps(costs)
    return CostCounts(
        written=len(added),
        removed=sum(1 for w in released if w.result is CostResult.REMOVED),
        handed_over=sum(1 for w in released if w.result is CostResult.HANDED_OVER),
        conflicts=plan_conflicts(costs)
        + sum(1 for w in released if w.result is CostResult.UNTAGGED),
        overlaps=overlaps + sum(1 for w in writes if w.result is CostResult.OVERLAP),
        overlapping=overlapping,
        skipped=sum(1 for w in done if w.result is CostResult.SKIPPED),
        failed=sum(1 for w in done if w.result is CostResult.FAILED),
        left=(costs.deferred_patches if costs is not None else 0)
        + (releases.deferred if releases is not None else 0)
        + written_skipped,
        managed=len((before - gone) | added),
    )


async def manage_costs(
    api: client.ApiClient,
    policy: RebalancePolicy,
    costs: CostPlan | None,
    state: ClusterState,
    *,
    lifecycle: Lifecycle,
    others: Sequence[RebalancePolicy],
    acting: Acting = always,
) -> CostCounts:
    """Enforce: write this scan's costs (the finalizer first: a policy deleted later takes
    them back), then take back the costs the policy wrote on pods it no longer orders (all of
    them when the remedy is off); the finalizer goes once none is left."""
    writes: list[CostWrite] = []
    held = 0
    # The finalizer before any write, and on a policy that keeps costs written under another
    # (handed over) or whose finalizer was removed by hand while its costs remain.
    if costs is not None and (costs.patches or tagged(state.pods, policy.name)):
        check(acting)
        if lifecycle.finalizer or await asyncio.to_thread(
            set_finalizer, api, policy.name, FINALIZER, present=True
        ):
            if costs.patches:
                writes = await write_costs(api, policy, costs, acting)
        else:
            held = len(costs.patches)  # the policy changed under us: the next scan writes
    cap = policy.remediation.deletion_cost.max_patches_per_scan - len(writes) - held
    namespaces = {n.name: n for n in state.namespaces}
    releases = plan_releases(
        state.pods,
        policy.name,
        keep=ordered_pods(costs),
        covered_by=coverage(policy.name, others, namespaces, state.pods),
        cap=cap,
    )
    released = await release_costs(api, policy, releases, acting)
    counts = tally(
        state.pods,
        policy.name,
        costs,
        writes=writes,
        releases=releases,
        released=released,
        written_skipped=held,
    )
    if costs is None and lifecycle.finalizer and counts.managed == 0:
        check(acting)
        await asyncio.to_thread(set_finalizer, api, policy.name, FINALIZER, present=False)
    return counts


async def take_back(
    api: client.ApiClient,
    cache: ClusterCache,
    policy: RebalancePolicy,
    memory: PolicyMemory,
    policy_uid: str | None,
    *,
    lifecycle: Lifecycle,
    others: Sequence[RebalancePolicy],
    acting: Acting,
    now: float,
) -> None:
    """A pass over a policy being deleted that carries respread's finalizer: take back its
    costs (bounded, as a scan), and remove the finalizer once none is left, or once the
    deletion is older than FINALIZER_TIMEOUT (a Warning Event says how many remain)."""
    if not lifecycle.finalizer:
        return
    state = cache.snapshot()
    namespaces = {n.name: n for n in state.namespaces}
    releases = plan_releases(
        state.pods,
        policy.name,
        keep=frozenset(),
        covered_by=coverage(policy.name, others, namespaces, state.pods),
        cap=policy.remediation.deletion_cost.max_patches_per_scan,
    )
    released = await release_costs(api, policy, releases, acting)
    counts = tally(state.pods, policy.name, None, writes=[], releases=releases, released=released)
    check(acting)
    cost_status = deletion_cost_status_json(counts)
    await asyncio.to_thread(patch_status, api, policy.name, {"deletionCost": cost_status})
    event = cost_event(counts)
    if event is not None:
        reason, warning, message = event
        await tell_policy(api, policy, policy_uid, reason, warning=warning, message=message)
    timed_out = finalizer_due(lifecycle, now)
    if (counts.managed == 0 and settled(lifecycle, now)) or timed_out:
        if counts.managed:
            await tell_policy(
                api,
                policy,
                policy_uid,
                "DeletionCostAbandoned",
                warning=True,
                message=f"the policy has been deleting for over {FINALIZER_TIMEOUT:.0f}s: its "
                f"finalizer is removed with {counts.managed} pod-deletion-cost annotation(s) "
                "not taken back",
            )
        check(acting)
        await asyncio.to_thread(set_finalizer, api, policy.name, FINALIZER, present=False)
        log.info(
            "RebalancePolicy %s: deletion-cost finalizer removed (%d cost(s) left)",
            policy.name,
            counts.managed,
        )
    memory.last_scan = now
