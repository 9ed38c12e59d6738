"""Which k pods a surge's scale-back removes: its victims, the lowest pod-deletion-cost first.

Pending and unassigned pods go first (the ReplicaSet controller takes them first anyway); then,
one at a time, the pod whose removal leaves the fewest misplaced pods (``_greedy``). One pod at
a time is not always the best set: misplaced pods fall in steps (a domain's pods are all placed
once it is within maxSkew of the minimum), so two removals from a domain that reach such a step
may beat two from the most crowded one, each as good alone. Unless the greedy set is the best
already (it leaves no misplaced pod, or it is one pod), or it would make another workload's
group worse (surge/others.py), the sets harming none are searched by node class (``_search``,
at most SEARCH_LIMIT). Each candidate set is tried on the working counts (surge/workload.py)
and undone. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from respread.core.model import Pod
from respread.remedies.surge.others import OthersJudge
from respread.remedies.surge.workload import Domains, SurgedWorkload
from respread.scheduling.controller import INT32_MIN, Tier, tier

VICTIM_COST: Final = INT32_MIN  # the victims' pod-deletion-cost: INT32_MIN, INT32_MIN + 1, ...
SEARCH_LIMIT: Final = 2000  # victim sets searched (by domain class) when the greedy one harms


@dataclass(frozen=True, slots=True)
class Victim:
    pod: Pod
    domains: Domains
    cost: int  # the pod-deletion-cost it gets


@dataclass(frozen=True, slots=True)
class VictimChoice:
    victims: tuple[Victim, ...]
    harm: str | None = None  # why these victims would make another workload's group worse
    # with harm: the set harming no group with the fewest misplaced pods found (None: none)
    harmless: tuple[Victim, ...] | None = None


def newest_first(pods: Iterable[Pod], k: int) -> tuple[Victim, ...]:
    """The k pods a rollback removes when the spread is not judged: the lowest tiers first
    (unassigned, Pending, not Ready: the controller takes them first anyway), then the newest
    (the surge's own pods)."""
    ranked = sorted(pods, key=lambda p: (tier(p), -(p.created or 0.0), p.name))
    return tuple(Victim(p, (), VICTIM_COST + i) for i, p in enumerate(ranked[: max(k, 0)]))


def _greedy(
    sim: SurgedWorkload, candidates: Sequence[Pod], k: int, pending: Sequence[Pod] = ()
) -> tuple[Victim, ...]:
    """Pending and unassigned pods first, then, one at a time, the pod whose removal leaves the
    fewest misplaced pods, from the most crowded domains (then the node with most of the
    workload's pods, the youngest). Leaves the chosen pods taken out of ``sim``."""
    chosen: list[Victim] = []
    for pod in pending[:k]:
        chosen.append(Victim(pod, (), VICTIM_COST + len(chosen)))
    taken = {(v.pod.namespace, v.pod.name) for v in chosen}
    left = [p for p in candidates if p.node_name is not None and (p.namespace, p.name) not in taken]
    while len(chosen) < k and left:
        _, position = min(_removal_score(sim, pod, at) for at, pod in enumerate(left))
        pod = left.pop(position)
        assert pod.node_name is not None
        chosen.append(Victim(pod, sim.domains(pod.node_name), VICTIM_COST + len(chosen)))
        sim.remove(pod)
    return tuple(chosen)


def _removal_score(
    sim: SurgedWorkload, pod: Pod, position: int
) -> tuple[tuple[bool, int, int, int, float, str], int]:
    """How good a victim the pod is, least best: not Ready first, the fewest misplaced pods
    left, the most crowded domains, the node with most of the workload's pods, the youngest;
    with its position among the candidates (the last tie-break)."""
    node = pod.node_name
    assert node is not None
    crowding = sim.crowding(node)
    mark = sim.mark()
    sim.remove(pod)
    score = (
        tier(pod) is Tier.READY,
        sim.misplaced(),
        -crowding,
        -len(sim.positions().get(node, ())),
        -(pod.created or 0.0),
        pod.name,
    )
    sim.undo(mark)
    return score, position


def _removed(victims: Iterable[Victim]) -> list[str]:
    return [v.pod.node_name for v in victims if v.pod.node_name is not None]


def _count_vectors(caps: Sequence[int], k: int, limit: int) -> list[tuple[int, ...]] | None:
    """Every way to take k items from classes holding ``caps`` items (how many from each);
    None when there are more than ``limit``."""
    tail = [sum(caps[i:]) for i in range(len(caps) + 1)]
    out: list[tuple[int, ...]] = []
    stack: list[tuple[int, int, tuple[int, ...]]] = [(0, k, ())]
    while stack:
        i, left, acc = stack.pop()
        if left == 0:
            out.append(acc + (0,) * (len(caps) - i))
            if len(out) > limit:
                return None
            continue
        if i == len(caps) or tail[i] < left:
            continue
        for n in range(min(caps[i], left) + 1):
            stack.append((i + 1, left - n, (*acc, n)))
    return out


def _classes(
    sim: SurgedWorkload, pool: Sequence[Pod], judge: OthersJudge | None
) -> list[list[Pod]]:
    """The pool by node class (pods equivalent for every table involved), each class in victim
    order: not Ready first, the node with most of the workload's pods, the youngest."""
    classes: dict[tuple[object, ...], list[Pod]] = {}
    for pod in pool:
        node = pod.node_name
        assert node is not None
        classes.setdefault(sim.node_class(node, judge), []).append(pod)
    positions = sim.positions()
    return [
        sorted(
            pods,
            key=lambda p: (
                tier(p) is Tier.READY,
                -len(positions.get(p.node_name or "", ())),
                -(p.created or 0.0),
                p.name,
            ),
        )
        for _, pods in sorted(classes.items(), key=lambda kv: repr(kv[0]))
    ]


def _search(
    sim: SurgedWorkload,
    pool: Sequence[Pod],
    fixed: tuple[Victim, ...],
    k: int,
    judge: OthersJudge | None,
) -> tuple[tuple[int, int], tuple[Victim, ...]] | None:
    """The victim set harming no other group with the fewest Ready pods, then the fewest
    misplaced, then from the most crowded domains: ((Ready, misplaced), victims). Pods are
    equivalent when their nodes are in the same domains of every table involved, so the sets
    are searched by how many pods each such class gives. None when no set is harmless, or the
    sets are more than SEARCH_LIMIT."""
    ranked = _classes(sim, pool, judge)
    vectors = _count_vectors([len(pods) for pods in ranked], k - len(fixed), SEARCH_LIMIT)
    if vectors is None:
        return None
    best: tuple[tuple[int, int, int], tuple[Pod, ...]] | None = None
    for vector in vectors:
        pods = tuple(p for n, cls in zip(vector, ranked, strict=True) for p in cls[:n])
        nodes = [p.node_name or "" for p in pods]
        if _harm(judge, [*_removed(fixed), *nodes]) is not None:
            continue
        crowding = sum(sim.crowding(n) for n in nodes)
        mark = sim.mark()
        for pod in pods:
            sim.remove(pod)
        misplaced = sim.misplaced()
        sim.undo(mark)
        ready = sum(tier(p) is Tier.READY for p in (*(v.pod for v in fixed), *pods))
        key = (ready, misplaced, -crowding)
        if best is None or key < best[0]:
            best = (key, pods)
    if best is None:
        return None
    victims = list(fixed)
    for pod in best[1]:
        victims.append(Victim(pod, sim.domains(pod.node_name or ""), VICTIM_COST + len(victims)))
    return best[0][:2], tuple(victims)


def _harm(judge: OthersJudge | None, removed: Iterable[str]) -> str | None:
    if judge is None or not judge.groups:
        return None
    return judge.harm(removed)


def choose_victims(
    sim: SurgedWorkload,
    candidates: Sequence[Pod],
    k: int,
    pending: Sequence[Pod] = (),
    judge: OthersJudge | None = None,
) -> VictimChoice:
    """The k pods to remove, and whether removing them makes another workload's group worse.

    Pending and unassigned pods go first; then the greedy set (``_greedy``). Unless it is the
    best set already (no misplaced pod left, or one pod chosen), the sets harming no group of
    ``judge`` are searched: one with fewer Ready pods or misplaced pods than the greedy set is
    chosen instead, and, when the greedy set would make a group worse, one with as few. Else
    the greedy set is returned, with the harm if any, and the best harmless set found. ``sim``
    is left with the chosen pods taken out."""
    mark = sim.mark()
    chosen = _greedy(sim, candidates, k, pending)
    harm = _harm(judge, _removed(chosen))
    score = (sum(tier(v.pod) is Tier.READY for v in chosen), sim.misplaced())
    fixed = chosen[: min(len(pending), k)]
    if harm is None and (score[1] == 0 or len(chosen) - len(fixed) < 2):
        return VictimChoice(chosen)  # the fewest Ready pods (not Ready first) and misplaced
    sim.undo(mark)  # the greedy set back in: the pending pods were never in
    taken = {(v.pod.namespace, v.pod.name) for v in fixed}
    pool = [p for p in candidates if p.node_name is not None and (p.namespace, p.name) not in taken]
    found = _search(sim, pool, fixed, k, judge)
    better = found is not None and (found[0] < score or (harm is not None and found[0] == score))
    out = found[1] if found is not None and better else chosen
    for v in out[len(fixed) :]:
        sim.remove(v.pod)
    if better or harm is None:
        return VictimChoice(out)
    return VictimChoice(chosen, harm, found[1] if found is not None else None)
