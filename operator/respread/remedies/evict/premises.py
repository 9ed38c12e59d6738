"""Whether a plan still holds when the time comes to act on it: its age, and the cluster state
each planned eviction depends on.

A move evicts one pod so that its replacement lands in another domain. What it depends on: the
nodes (their domains, taints, readiness and capacity decide where replacements can go), and, in
the pod's namespace (topology spread constraints count the pods of their own namespace only),
the namespace itself (the policy's selection), its pods, the specs of its workloads (replicas,
selectors, templates), its budgets' specs and its services. Budgets' and workloads' status is
left out (the API server checks the budget on every eviction; the plan counted its own), and so
are the changes the scan's own evictions made: the pods it evicted, and new pods of their owners
(the replacements).

Anything else that differs between the state the plan was made from and the state now (both
from a watch cache shown current) means the move may no longer make sense: the scan stops and
plans again. Pure: the caller gives the two states.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

from respread.core.model import ClusterState, OwnerRef, Pod, Workload


def plan_expired(planned_at: float, now: float, bound: float) -> str:
    """Why a plan made at `planned_at` may not be acted on at `now` ("": it may)."""
    age = now - planned_at
    if age > bound:
        return f"the plan is {age:.0f}s old, older than the {bound:.0f}s a plan may be acted on"
    return ""


@dataclass(frozen=True, slots=True)
class Evicted:
    """A pod this scan evicted: it and its owner's new pods are the scan's own doing."""

    uid: str | None
    owner: OwnerRef | None


def _workload_spec(w: Workload) -> tuple[Hashable, ...]:
    return (w.selector, w.replicas, w.template, w.owner, w.generation, w.paused)


def _scope(state: ClusterState, namespace: str) -> dict[str, Mapping[tuple[str, ...], Hashable]]:
    return {
        "Node": {(n.name,): n for n in state.nodes},
        "Namespace": {(n.name,): n for n in state.namespaces if n.name == namespace},
        "Workload": {
            (w.kind, w.name): _workload_spec(w) for w in state.workloads if w.namespace == namespace
        },
        "PodDisruptionBudget": {
            (b.name,): (b.selector, b.generation) for b in state.budgets if b.namespace == namespace
        },
        "Service": {(s.name,): s.selector for s in state.services if s.namespace == namespace},
    }


def _pods(state: ClusterState, namespace: str) -> dict[str, Pod]:
    return {p.uid or p.name: p for p in state.pods if p.namespace == namespace}


def _differences(
    kind: str, before: Mapping[tuple[str, ...], Hashable], now: Mapping[tuple[str, ...], Hashable]
) -> list[str]:
    out = []
    for key in sorted(before.keys() | now.keys()):
        if before.get(key) != now.get(key):
            what = "appeared" if key not in before else "is gone" if key not in now else "changed"
            out.append(f"{kind} {'/'.join(key)} {what}")
    return out


def _pod_differences(
    before: Mapping[str, Pod], now: Mapping[str, Pod], evicted: Iterable[Evicted]
) -> list[str]:
    own_uids = {e.uid for e in evicted}
    own_owners = {e.owner for e in evicted if e.owner is not None}
    out = []
    for uid in sorted(before.keys() | now.keys()):
        if uid in own_uids:
            continue
        old, new = before.get(uid), now.get(uid)
        if old is None and new is not None and new.owner in own_owners:
            continue  # a replacement of a pod this scan evicted
        if old != new:
            pod = old or new
            assert pod is not None
            what = "appeared" if old is None else "is gone" if new is None else "changed"
            out.append(f"Pod {pod.namespace}/{pod.name} {what}")
    return out


def changed_since_plan(
    planned: ClusterState, now: ClusterState, namespace: str, evicted: Iterable[Evicted] = ()
) -> str:
    """What changed, since the plan, that a move in `namespace` depends on ("": nothing)."""
    before, after = _scope(planned, namespace), _scope(now, namespace)
    changes = []
    for kind in before:
        changes += _differences(kind, before[kind], after[kind])
    changes += _pod_differences(_pods(planned, namespace), _pods(now, namespace), evicted)
    if not changes:
        return ""
    more = f" and {len(changes) - 3} more" if len(changes) > 3 else ""
    return "changed since the plan: " + ", ".join(changes[:3]) + more
