"""The victim strategy: which pods a step tries to evict for a violated group, in what order.

A group's own misplaced pods, in victim order (planner.py's docstring lists the keys): pods
on a node lacking a topology key first, then those breaking the most constraints, from the
most crowded domain, lowest priority, unpinned, on the node holding the most of them, the
youngest. Across workloads: *foreign* pods, other workloads' pods that a failing constraint
of the group counts in the domains where the group fails (moving one relieves the group, and
may be the only way), and *followers*, pods of a workload that a move of the group's would
break, whose own move mends it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from respread.analysis.groups import Members
from respread.analysis.tally import SimCounts, failing
from respread.core.model import Pod, PodName
from respread.remedies.evict.steps import Skip
from respread.scheduling.safety import pinned

# How many pods of other workloads a step tries for a group their pods crowd.
FOREIGN_TRIALS = 8


def candidates(
    counts: SimCounts,
    m: Members,
    moved: set[PodName],
    skipped: Mapping[PodName, Skip],
    refused_too: bool = False,
) -> list[tuple[Pod, tuple[int, bool]]]:
    """The members' misplaced pods in victim order, with the rule each fails first, less
    those moved or skipped (but for ``refused_too``, those refused only for what the counts
    were)."""
    found = []
    judge = counts.judge(m)
    node_labels = counts.node_labels
    single = len(judge) == 1
    # each rule's key, its domains' counts and global minimum: read once, not once per node
    crowding = [(key, ceilings.counts, ceilings.global_min) for _, key, ceilings, _ in judge]
    for node_name, pods, verdict in counts.misplaced(m):
        live = _live(pods, moved, skipped, refused_too)
        if not live:
            continue
        labels = node_labels[node_name]
        excess = 0
        keyless = False  # on a node without a key: every fix moves the pod
        for key, domain_counts, global_min in crowding:
            value = labels.get(key)
            if value is None:
                keyless = True
            else:
                excess = max(excess, domain_counts.get(value, 0) - global_min)
        broken = 1 if single else len(failing(judge, labels, node_name))
        crowd = len(pods)
        for pod in live:
            found.append(
                (
                    pod,
                    verdict,
                    (
                        not keyless,
                        -broken,
                        -excess,
                        pod.priority,
                        pinned(pod),
                        -crowd,
                        -(pod.created or 0.0),
                        pod.namespace,
                        pod.name,
                    ),
                )
            )
    found.sort(key=_victim_order)
    return [(pod, verdict) for pod, verdict, _ in found]


def _victim_order(item: tuple[Pod, tuple[int, bool], tuple[object, ...]]) -> tuple[object, ...]:
    return item[2]


def _live(
    pods: Sequence[Pod],
    moved: set[PodName],
    skipped: Mapping[PodName, Skip],
    refused_too: bool,
) -> list[Pod]:
    """The pods neither moved nor skipped (but for ``refused_too``, those refused only for
    what the counts were)."""
    if not moved and not skipped:
        return list(pods)
    live = []
    for p in pods:
        name = (p.namespace, p.name)
        if name in moved:
            continue
        skip = skipped.get(name)
        if skip is None or (refused_too and skip.kind.for_the_counts):
            live.append(p)
    return live


def foreign(
    counts: SimCounts,
    m: Members,
    moved: set[PodName],
    skipped: Mapping[PodName, Skip],
    *,
    anywhere: bool = False,
) -> list[tuple[Members, Pod, str]]:
    """Other workloads' pods that one of ``m``'s failing constraints counts, in the domains
    where ``m``'s pods fail it, with the reason to move them; at most ``FOREIGN_TRIALS``,
    lowest priority, unpinned, youngest first. ``anywhere``: in its other domains too, after
    those (a pod whose move lowers a count where ``m``'s pods could go)."""
    counted = counts.counted_others(m)
    if not counted:
        return []
    tables = counts.tables(m.profile)
    crowded: dict[int, set[str]] = {}
    for node_name, _, first in counts.misplaced(m):
        c = m.profile.constraints[first[0]]
        value = counts.node_labels[node_name].get(c.key)
        if value is not None:  # a node without the key: only moving the pod itself helps
            crowded.setdefault(first[0], set()).add(value)
    found: list[tuple[tuple[object, ...], Members, Pod, str]] = []
    for i, domains in crowded.items():
        c = m.profile.constraints[i]
        node_domain = tables[i].space.node_domain
        for x in counted.get(i, ()):
            for node_name, pods in counts.positions(x).items():
                domain = node_domain.get(node_name)
                outside = domain not in domains
                if (outside and not anywhere) or domain is None or not pods:
                    continue
                reason = (
                    f"counted by the {c.key} spread of {m.workload}: "
                    f"{c.key} {domain} holds {tables[i].get(domain)} of its pods"
                )
                for pod in _live(pods, moved, skipped, refused_too=False):
                    key = (outside, pod.priority, pinned(pod), -(pod.created or 0.0), pod.name)
                    found.append((key, x, pod, reason))
    found.sort(key=lambda item: item[0])
    return [(x, pod, reason) for _, x, pod, reason in found[:FOREIGN_TRIALS]]


def followers(
    counts: SimCounts, m: Members, pod: Pod, moved: set[PodName], skipped: Mapping[PodName, Skip]
) -> list[tuple[Members, Pod]]:
    """With ``pod`` (one of ``m``'s) moved: the misplaced pods of each other workload the
    move touched and left misplaced, in victim order, refused ones included, at most
    ``FOREIGN_TRIALS`` of each. Moving one may mend what the first move broke."""
    return [
        (x, follower)
        for x in counts.affected(m, pod)
        if x is not m and counts.violators(x)
        for follower, _ in candidates(counts, x, moved, skipped, refused_too=True)[:FOREIGN_TRIALS]
    ]
