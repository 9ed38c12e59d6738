"""Deletion-cost orders remembered from one scan to the next, by their exact inputs.

Ordering a ReplicaSet simulates its scale-in; a ReplicaSet whose current costs do not keep
maxSkew in every state (a violated workload, or one no order can keep within it) is searched
again on every scan, with the same result while nothing it reads has changed. The memo keys each
ReplicaSet's order by everything the simulation reads, compared by equality (never by a hash
alone), so a remembered order is reused only when its inputs are the same as when it was found:

- the ReplicaSet's pods, in the order listed: name, node, phase, readiness, creation time,
  labels and cost annotation (the tiers, the controller's ranking, the counting);
- its namespace, every member group of it (the simulation's checks come from there): the
  workload, the profile (its constraints), the members by node with their names and labels,
  which of its groups are balanced, and each hard constraint's count table (every domain's
  count) and eligible nodes (every node's domain);
- every node's labels, and whether an empty selector matches all pods.

The namespace and the cluster-wide parts become small tokens once per scan, so a ReplicaSet's key
is compared in time linear in its own pods. Orders not used in a scan are forgotten.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import count

from respread.analysis.groups import Analysis, Members, WorkloadRef
from respread.core.annotations import DELETION_COST
from respread.core.kernel import CountTable, DomainSpace
from respread.core.model import Pod


@dataclass(frozen=True, slots=True)
class Remembered:
    """An order found in an earlier scan, by positions in the ReplicaSet's pod list."""

    order: tuple[int, ...]
    safe: tuple[bool, ...]
    kept: bool  # the current costs' order
    keys: tuple[str, ...]  # the topology keys of the workload's hard constraints
    violated: bool = False  # a checked group is beyond maxSkew before any removal


class CostMemo:
    """What one policy's scans remember; kept by the caller from one scan to the next."""

    __slots__ = ("_next_orders", "_next_tokens", "_orders", "_serial", "_tokens")

    def __init__(self) -> None:
        self._orders: dict[Hashable, Remembered] = {}
        self._tokens: dict[Hashable, int] = {}
        self._next_orders: dict[Hashable, Remembered] = {}
        self._next_tokens: dict[Hashable, int] = {}
        self._serial = count()

    def begin_scan(self) -> None:
        self._next_orders, self._next_tokens = {}, {}

    def end_scan(self) -> None:
        """Forget what this scan did not use."""
        self._orders, self._next_orders = self._next_orders, {}
        self._tokens, self._next_tokens = self._next_tokens, {}

    def recall(self, key: Hashable) -> Remembered | None:
        found = self._next_orders.get(key) or self._orders.get(key)
        if found is not None:
            self._next_orders[key] = found
        return found

    def store(self, key: Hashable, remembered: Remembered) -> None:
        self._next_orders[key] = remembered

    def token(self, value: Hashable) -> int:
        """A number standing for ``value``: the same for an equal value in this scan and the
        last, never reused for another (so keys holding it compare as the value would)."""
        found = self._next_tokens.get(value)
        if found is None:
            found = self._tokens.get(value)
            if found is None:
                found = next(self._serial)
            self._next_tokens[value] = found
        return found


class ScanKeys:
    """The memo's keys for one scan's ReplicaSets (namespaces and shared parts built once)."""

    def __init__(
        self,
        memo: CostMemo,
        analysis: Analysis,
        members_by_namespace: Mapping[str, Sequence[Members]],
        balanced: frozenset[tuple[Members, int]],
    ) -> None:
        index = analysis.index
        self._memo = memo
        self._analysis = analysis
        self._members = members_by_namespace
        self._balanced = balanced
        self._cluster = memo.token(
            (
                index.empty_selector_matches_all,
                tuple((name, node.labels) for name, node in index.nodes.items()),
            )
        )
        self._namespaces: dict[str, int] = {}
        self._tables: dict[CountTable, int] = {}
        self._spaces: dict[DomainSpace, int] = {}

    @property
    def memo(self) -> CostMemo:
        return self._memo

    def replica_set(
        self, workload: WorkloadRef, replica_set: str, pods: Sequence[Pod]
    ) -> tuple[Hashable, ...]:
        return (self._namespace(workload.namespace), workload, replica_set, *map(_pod_key, pods))

    def _namespace(self, namespace: str) -> int:
        found = self._namespaces.get(namespace)
        if found is None:
            groups = tuple(self._group(m) for m in self._members.get(namespace, ()))
            found = self._namespaces[namespace] = self._memo.token((self._cluster, groups))
        return found

    def _group(self, m: Members) -> Hashable:
        index = self._analysis.index
        profile = m.profile
        hard = [i for i, c in enumerate(profile.constraints) if c.hard]
        tables = index.tables(profile)
        return (
            m.workload,
            profile,
            tuple(
                (node, tuple((p.name, p.labels) for p in pods)) for node, pods in m.by_node.items()
            ),
            tuple((m, i) in self._balanced for i in hard),
            tuple((self._table(tables[i]), self._space(index.space(profile, i))) for i in hard),
        )

    def _table(self, table: CountTable) -> int:
        found = self._tables.get(table)
        if found is None:
            value = (frozenset(table.counts.items()), self._space(table.space))
            found = self._tables[table] = self._memo.token(value)
        return found

    def _space(self, space: DomainSpace) -> int:
        found = self._spaces.get(space)
        if found is None:
            value = frozenset(space.node_domain.items())
            found = self._spaces[space] = self._memo.token(value)
        return found


def _pod_key(p: Pod) -> Hashable:
    cost = p.annotations.get(DELETION_COST)
    return (p.name, p.node_name, p.phase, p.ready, p.created, p.labels, cost)
