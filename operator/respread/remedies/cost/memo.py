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

An order recalled for the very same pod objects (not merely equal ones: who manages a pod's
cost, which the recall does not read, is part of the order's report) also gives the last
scan's assembled order (costs, state, message) again, with the same object.

What the memo holds between scans is small beside the cluster: references to the objects the
scan read (its pods, each group's pods by node), never copies of their fields, and each count
table and domain space as two tuples of references (its domains, its counts). Unchanged
objects are the same objects from one scan to the next (the operator's cache keeps them), so
most comparisons stop at identity; an object replaced by an equal one compares by the fields
above. Keys that hold sequences compare them in order: an equal mapping listed in another order
is a miss (searched again), never a wrong hit.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import count
from operator import is_
from weakref import ref

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


@dataclass(frozen=True, slots=True)
class _Entry:
    """A ReplicaSet's order and what it was found from."""

    namespace: int  # the namespace's token (ScanKeys)
    workload: WorkloadRef
    pods: tuple[Pod, ...]  # the ReplicaSet's pods, in the order listed
    remembered: Remembered


@dataclass(frozen=True, slots=True)
class _Assembled:
    """A ReplicaSet's order as a scan assembled it (costs, state, message) and its inputs."""

    pods: tuple[Pod, ...]
    remembered: Remembered
    inputs: Hashable
    made: object


@dataclass(frozen=True, slots=True)
class _NamespaceView:
    """What a namespace's orders read beyond their own pods: the cluster's token, and per
    member group its workload, profile, balanced constraints and tables' tokens (``groups``)
    and its pods by node (``positions``, the analysis' own mappings, compared by
    ``_same_positions``)."""

    cluster: int
    groups: tuple[Hashable, ...]
    positions: tuple[Mapping[str, tuple[Pod, ...]], ...]

    def same(self, other: _NamespaceView) -> bool:
        return (
            self.cluster == other.cluster
            and self.groups == other.groups
            and len(self.positions) == len(other.positions)
            and all(map(_same_positions, self.positions, other.positions))
        )


class CostMemo:
    """What one policy's scans remember; kept by the caller from one scan to the next."""

    __slots__ = (
        "_assembled",
        "_last",
        "_namespaces",
        "_next_assembled",
        "_next_namespaces",
        "_next_orders",
        "_next_tokens",
        "_orders",
        "_serial",
        "_tokens",
    )

    def __init__(self) -> None:
        self._orders: dict[tuple[str, str], _Entry] = {}  # (namespace, ReplicaSet) ->
        self._tokens: dict[Hashable, int] = {}
        self._namespaces: dict[str, tuple[_NamespaceView, int]] = {}
        self._next_orders: dict[tuple[str, str], _Entry] = {}
        self._next_tokens: dict[Hashable, int] = {}
        self._next_namespaces: dict[str, tuple[_NamespaceView, int]] = {}
        # (namespace, ReplicaSet) -> the order made from a remembered order: its pods, the
        # Remembered, the other inputs, the order
        self._assembled: dict[tuple[str, str], _Assembled] = {}
        self._next_assembled: dict[tuple[str, str], _Assembled] = {}
        self._serial = count()
        self._last: tuple[ref[Analysis], tuple[object, ...], object] | None = None

    def last_plan(self, analysis: Analysis, inputs: tuple[object, ...]) -> object | None:
        """The plan the last scan made, when it was made from this very analysis (the same
        object: the operator hands an unchanged cluster's analysis again) and equal other
        inputs; the plan is a function of them. Otherwise None, and the last plan is let go
        before the new one is made. The analysis is held weakly: never kept alive beside the
        next one."""
        last = self._last
        if last is None or last[0]() is not analysis or last[1] != inputs:
            self._last = None
            return None
        return last[2]

    def keep_plan(self, analysis: Analysis, inputs: tuple[object, ...], plan: object) -> None:
        self._last = (ref(analysis), inputs, plan)

    def begin_scan(self) -> None:
        self._next_orders, self._next_tokens, self._next_namespaces = {}, {}, {}
        self._next_assembled = {}

    def end_scan(self) -> None:
        """Forget what this scan did not use."""
        self._orders, self._next_orders = self._next_orders, {}
        self._tokens, self._next_tokens = self._next_tokens, {}
        self._namespaces, self._next_namespaces = self._next_namespaces, {}
        self._assembled, self._next_assembled = self._next_assembled, {}

    def assembled(
        self,
        key: tuple[str, str],
        pods: Sequence[Pod],
        remembered: Remembered,
        inputs: Hashable,
    ) -> object | None:
        """What the last scan made of ``remembered`` for the very same pods (the same objects:
        everything an order reads of a pod, its costs, tier and field managers, is unchanged)
        and equal other ``inputs``; None otherwise. ``remembered`` is compared by identity: a
        recalled order is the same object, one searched again is new."""
        last = self._assembled.get(key)
        if (
            last is None
            or last.remembered is not remembered
            or last.inputs != inputs
            or len(last.pods) != len(pods)
            or not all(map(is_, last.pods, pods))
        ):
            return None
        self._next_assembled[key] = last
        return last.made

    def keep_assembled(
        self,
        key: tuple[str, str],
        pods: Sequence[Pod],
        remembered: Remembered,
        inputs: Hashable,
        made: object,
    ) -> None:
        self._next_assembled[key] = _Assembled(tuple(pods), remembered, inputs, made)

    def recall(
        self, namespace: int, workload: WorkloadRef, replica_set: str, pods: Sequence[Pod]
    ) -> Remembered | None:
        """The order remembered for these exact inputs (``namespace``: the namespace's token)."""
        key = (workload.namespace, replica_set)
        found = self._next_orders.get(key) or self._orders.get(key)
        if (
            found is None
            or found.namespace != namespace
            or found.workload != workload
            or not _same_pods(found.pods, pods)
        ):
            return None
        self._next_orders[key] = _Entry(namespace, workload, tuple(pods), found.remembered)
        return found.remembered

    def store(
        self,
        namespace: int,
        workload: WorkloadRef,
        replica_set: str,
        pods: Sequence[Pod],
        remembered: Remembered,
    ) -> None:
        key = (workload.namespace, replica_set)
        self._next_orders[key] = _Entry(namespace, workload, tuple(pods), remembered)

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

    def namespace_token(self, namespace: str, view: _NamespaceView) -> int:
        """A number standing for what the namespace's orders read: the last scan's when
        ``view`` is the same as its, else a new one."""
        last = self._namespaces.get(namespace)
        token = last[1] if last is not None and last[0].same(view) else next(self._serial)
        self._next_namespaces[namespace] = (view, token)
        return token


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

    def recall(
        self, workload: WorkloadRef, replica_set: str, pods: Sequence[Pod]
    ) -> Remembered | None:
        namespace = self._namespace(workload.namespace)
        return self._memo.recall(namespace, workload, replica_set, pods)

    def store(
        self, workload: WorkloadRef, replica_set: str, pods: Sequence[Pod], found: Remembered
    ) -> None:
        namespace = self._namespace(workload.namespace)
        self._memo.store(namespace, workload, replica_set, pods, found)

    def _namespace(self, namespace: str) -> int:
        found = self._namespaces.get(namespace)
        if found is None:
            members = self._members.get(namespace, ())
            view = _NamespaceView(
                self._cluster,
                tuple(self._group(m) for m in members),
                tuple(m.by_node for m in members),
            )
            found = self._namespaces[namespace] = self._memo.namespace_token(namespace, view)
        return found

    def _group(self, m: Members) -> Hashable:
        index = self._analysis.index
        profile = m.profile
        hard = [i for i, c in enumerate(profile.constraints) if c.hard]
        tables = index.tables(profile)
        return (
            m.workload,
            profile,
            tuple((m, i) in self._balanced for i in hard),
            tuple((self._table(tables[i]), self._space(index.space(profile, i))) for i in hard),
        )

    def _table(self, table: CountTable) -> int:
        found = self._tables.get(table)
        if found is None:
            counts = table.counts
            value = (tuple(counts), tuple(counts.values()), self._space(table.space))
            found = self._tables[table] = self._memo.token(value)
        return found

    def _space(self, space: DomainSpace) -> int:
        found = self._spaces.get(space)
        if found is None:
            domains = space.node_domain
            value = (tuple(domains), tuple(domains.values()))
            found = self._spaces[space] = self._memo.token(value)
        return found


def _pod_key(p: Pod) -> Hashable:
    cost = p.annotations.get(DELETION_COST)
    return (p.name, p.node_name, p.phase, p.ready, p.created, p.labels, cost)


def _same_pods(old: Sequence[Pod], new: Sequence[Pod]) -> bool:
    """The same pods as far as an order reads them, in the same order."""
    if len(old) != len(new):
        return False
    if all(map(is_, old, new)):
        return True
    return all(a is b or _pod_key(a) == _pod_key(b) for a, b in zip(old, new, strict=True))


def _same_positions(old: Mapping[str, tuple[Pod, ...]], new: Mapping[str, tuple[Pod, ...]]) -> bool:
    """A group's pods by node, the same nodes in the same order, each with the same pods (by
    name and labels) in the same order."""
    if old is new:
        return True
    if len(old) != len(new):
        return False
    for (node_a, pods_a), (node_b, pods_b) in zip(old.items(), new.items(), strict=True):
        if node_a != node_b or len(pods_a) != len(pods_b):
            return False
        for a, b in zip(pods_a, pods_b, strict=True):
            if a is not b and (a.name != b.name or a.labels != b.labels):
                return False
    return True
