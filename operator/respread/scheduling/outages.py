"""Domain outages: every node of a domain NotReady or unreachable past a grace period.

A node is down when its Ready condition is not True, or when it carries the node lifecycle
controller's ``node.kubernetes.io/unreachable`` or ``node.kubernetes.io/not-ready`` taint (any
effect). A domain (one value of a topology key) is in an outage when it has nodes and every one
of them has been down for at least the grace period, counted from the latest Ready transition
among its nodes; when no node of it says when, it is taken as down long enough (holding
evictions back is the safe side).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from respread.core.model import ClusterState, Node, SpreadConstraint

DOWN_TAINTS: Final = frozenset({"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"})


@dataclass(frozen=True, slots=True)
class Outage:
    key: str
    domain: str
    nodes: tuple[str, ...]
    since: float | None  # the latest time a node of it was said to go down; None: not said

    def __str__(self) -> str:
        return f"{self.key}={self.domain}"


def down(node: Node) -> bool:
    return not node.ready or any(t.key in DOWN_TAINTS for t in node.taints)


def outages(
    nodes: Iterable[Node], keys: Iterable[str], now: float | None, grace: float
) -> tuple[Outage, ...]:
    """The domains of ``keys`` whose nodes are all down for at least ``grace`` seconds."""
    nodes = tuple(nodes)
    out = []
    for key in sorted(set(keys)):
        by_domain: dict[str, list[Node]] = {}
        for n in nodes:
            value = n.labels.get(key)
            if value is not None:
                by_domain.setdefault(value, []).append(n)
        for domain, members in sorted(by_domain.items()):
            if not all(down(n) for n in members):
                continue
            times = [n.ready_changed for n in members if n.ready_changed is not None]
            since = max(times) if times else None
            if since is not None and now is not None and now - since < grace:
                continue
            out.append(Outage(key, domain, tuple(n.name for n in members), since))
    return tuple(out)


def constraint_keys(
    state: ClusterState, defaults: Iterable[SpreadConstraint] = ()
) -> frozenset[str]:
    """Every topology key a pod, a pod template or the policy's defaults spreads over."""
    seen: set[int] = set()
    keys = {c.topology_key for c in defaults}
    specs = [p.spec for p in state.pods]
    specs.extend(w.template.spec for w in state.workloads if w.template is not None)
    for spec in specs:
        if id(spec.constraints) in seen:
            continue
        seen.add(id(spec.constraints))
        keys.update(c.topology_key for c in spec.constraints)
    return frozenset(keys)


def by_key(found: Iterable[Outage]) -> Mapping[str, frozenset[str]]:
    """The outage domains of each key."""
    out: dict[str, set[str]] = {}
    for o in found:
        out.setdefault(o.key, set()).add(o.domain)
    return {k: frozenset(v) for k, v in out.items()}
