"""The fewest evictions that leave a small cluster with no misplaced pod, by brute force.

Independent of the planner: breadth-first over sets of evicted pods (each pod at most once, in
every order, since where a replacement lands depends on the moves before it). A replacement
lands where the reference Filter transcription (test_filter_reference.py) passes, the static
filters pass and the node has room: a free pod slot and, where the node reports allocatable
resources, the pod's requests free (NodeResourcesFit; an evicted pod holds its room until it is
gone, as in the scheduler's cache); of those, where its domains hold the fewest matching pods,
then the least node name, as the design predicts. A pod may be evicted when it has an owner,
is not protected, no budget blocks it outright (a budget used up by the plan defers, it does
not forbid) and it has hard spread constraints of its own: respread moves no pod without any,
since where the scheduler puts such a replacement is decided by scoring it does not model.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from respread.core.model import ClusterState, Node, Phase, Pod, Resources, When
from respread.inputs.policy import RebalancePolicy
from respread.scheduling.budgets import BudgetLedger, BudgetVerdict
from respread.scheduling.placement import static_reasons
from respread.scheduling.safety import protection
from tests.unit.scheduling.test_filter_reference import reference_counts, reference_filter


def _live(pod: Pod) -> bool:
    return (
        pod.node_name is not None
        and not pod.terminating
        and pod.phase not in (Phase.SUCCEEDED, Phase.FAILED)
    )


def misplaced(nodes: tuple[Node, ...], pods: tuple[Pod, ...]) -> list[Pod]:
    """Bound pods the Filter would not place where they are (each taken out of the counts)."""
    names = {n.name for n in nodes}
    out = []
    for pod in pods:
        if not _live(pod) or pod.node_name not in names or not pod.spec.constraints:
            continue
        if reference_filter(pod, nodes, pods)[pod.node_name or ""] != "Success":
            out.append(pod)
    return out


@dataclass(frozen=True)
class _Situation:
    pods: tuple[Pod, ...]  # the live pods the scheduler counts
    held: tuple[tuple[str, int, Resources], ...]  # pods and requests holding room per node
    # (evicted ones included)


def _landing(nodes: tuple[Node, ...], situation: _Situation, evicted: Pod) -> Node | None:
    incoming = replace(evicted, node_name=None, phase=Phase.PENDING)
    others = tuple(p for p in situation.pods if p is not evicted)
    verdicts = reference_filter(incoming, nodes, others)
    cons, counts = reference_counts(incoming, nodes, others)
    held = {name: (n, used) for name, n, used in situation.held}
    best: tuple[int, str, Node] | None = None
    for node in nodes:
        if verdicts[node.name] != "Success" or static_reasons(evicted.spec, node):
            continue
        pods, used = held.get(node.name, (0, Resources()))
        if node.max_pods is not None and pods + 1 > node.max_pods:
            continue
        if node.allocatable is not None and not evicted.spec.requests.fits_in(
            node.allocatable - used
        ):
            continue
        score = sum(counts[i].get(node.labels[c.topology_key], 0) for i, (c, _) in enumerate(cons))
        if best is None or (score, node.name) < best[:2]:
            best = (score, node.name, node)
    return None if best is None else best[2]


def _evictable(state: ClusterState, policy: RebalancePolicy) -> list[Pod]:
    budgets = BudgetLedger(state.budgets)
    return [
        p
        for p in state.pods
        if _live(p)
        and p.owner is not None
        and any(c.when is When.DO_NOT_SCHEDULE for c in p.spec.constraints)
        and protection(p, policy, None) is None
        and budgets.check(p).verdict is not BudgetVerdict.BLOCKED
    ]


def _held(pods: Iterable[Pod]) -> tuple[tuple[str, int, Resources], ...]:
    held: dict[str, tuple[int, Resources]] = {}
    for p in pods:
        if p.node_name is not None and p.phase not in (Phase.SUCCEEDED, Phase.FAILED):
            held[p.node_name] = _plus(held.get(p.node_name), p)
    return tuple((name, n, used) for name, (n, used) in sorted(held.items()))


def _plus(held: tuple[int, Resources] | None, pod: Pod) -> tuple[int, Resources]:
    n, used = held or (0, Resources())
    return n + 1, used + pod.spec.requests


def fewest_evictions(state: ClusterState, policy: RebalancePolicy, limit: int) -> int | None:
    """The fewest evictions (at most ``limit``) after which no pod is misplaced; None if
    there is no such set of evictions within the limit."""
    nodes = state.nodes
    live = tuple(p for p in state.pods if _live(p))
    start = _Situation(live, _held(state.pods))
    if not misplaced(nodes, live):
        return 0
    candidates = _evictable(state, policy)
    level: dict[frozenset[tuple[int, str]], _Situation] = {frozenset(): start}
    for depth in range(1, limit + 1):
        following: dict[frozenset[tuple[int, str]], _Situation] = {}
        for key, situation in level.items():
            moved = {i for i, _ in key}
            for i, pod in enumerate(candidates):
                if i in moved:
                    continue
                target = _landing(nodes, situation, pod)
                if target is None:
                    continue
                new_key = key | {(i, target.name)}
                if new_key in following:
                    continue
                held = {name: (n, used) for name, n, used in situation.held}
                held[target.name] = _plus(held.get(target.name), pod)
                replacement = replace(pod, name=f"{pod.name}-r", node_name=target.name)
                pods = tuple(replacement if p is pod else p for p in situation.pods)
                following[new_key] = _Situation(
                    pods, tuple((name, n, used) for name, (n, used) in sorted(held.items()))
                )
                if not misplaced(nodes, pods):
                    return depth
        level = following
        if not level:
            return None
    return None


def describe(state: ClusterState) -> str:
    """The cluster in a few lines, for a failing example's message."""
    lines = [f"node {n.name} {dict(n.labels)} max_pods={n.max_pods}" for n in state.nodes]
    for p in state.pods:
        cons = [
            (c.topology_key.split("/")[-1], c.max_skew, c.selector, c.min_domains)
            for c in p.spec.constraints
        ]
        pinned = dict(p.spec.affinity.node_selector)
        lines.append(
            f"pod {p.name} on {p.node_name} {dict(p.labels)} owner={p.owner is not None} "
            f"pinned={pinned} {cons}"
        )
    lines += [
        f"budget {b.name} allowed={b.disruptions_allowed} stale={b.stale}" for b in state.budgets
    ]
    return "\n".join(lines)
