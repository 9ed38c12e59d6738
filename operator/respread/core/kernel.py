"""The Filter kernel: one constraint's count state and the maxSkew rule on it (section 5).

Modelled on kube-scheduler's ``preFilterState``: a ``CountTable`` is one constraint's
``TpValueToMatchNum`` over its eligible domains, changed a pod at a time (``add``, its
``updateWithPod``), cloned with ``copy`` (its ``Clone``), undone by the opposite ``add``; the
global minimum is kept as pods come and go rather than found again by a scan. ``SpreadRule``
is the Filter's one rule on it, and ``Ceilings`` the one place its comparison is made;
analysis, explain, the what-if simulation, the landing predictor and every remedy judge nodes
through them.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, NamedTuple


@dataclass(frozen=True, slots=True, eq=False)
class DomainSpace:
    """The eligible nodes of one constraint, and each one's domain value. Made once per
    distinct space by the index and shared: equal only to itself (a key for what is derived
    from it)."""

    node_domain: Mapping[str, str]
    domain_nodes: Mapping[str, tuple[str, ...]]
    # Domains left out of the space but counted toward minDomains: in an outage, under
    # KEP-5980's counting (they count toward minDomains, not toward skew).
    absent: int = 0

    @property
    def size(self) -> int:
        return len(self.domain_nodes)


class CountTable:
    """Counted pods per domain. Sparse: an eligible domain missing from ``counts`` holds 0.

    The minimum and maximum of the listed (non-zero) domains are kept through single-pod
    changes with a histogram (how many domains hold each count), built when the table first
    changes: a domain's count moves by one, so a new extreme is the old one or its neighbour.
    A table that never changes (the analysis's) finds them once, by a scan.
    """

    __slots__ = ("_hist", "_known", "_max", "_min", "_size", "counts", "space")

    def __init__(self, space: DomainSpace, counts: dict[str, int]) -> None:
        self.space = space
        self.counts = counts
        self._size = space.size
        self._hist: dict[int, int] | None = None  # count -> listed domains holding it
        self._known = False  # _min and _max hold; always while _hist is kept
        self._min = 0  # of the listed domains (0: none)
        self._max = 0

    def get(self, domain: str) -> int:
        return self.counts.get(domain, 0)

    def _build(self) -> dict[int, int]:
        hist: dict[int, int] = {}
        for n in self.counts.values():
            hist[n] = hist.get(n, 0) + 1
        self._hist = hist
        self._min = min(hist, default=0)
        self._max = max(hist, default=0)
        self._known = True
        return hist

    def _scan(self) -> None:
        values = self.counts.values()
        self._min = min(values, default=0)
        self._max = max(values, default=0)
        self._known = True

    def add(self, domain: str, delta: int) -> None:
        """``delta`` counted pods more (or fewer) in ``domain``: updateWithPod."""
        counts = self.counts
        hist = self._hist
        if delta not in (1, -1):  # the extremes are found again by a scan when asked
            self._hist = hist = None
            self._known = False
        elif hist is None:
            hist = self._build()
        old = counts.get(domain, 0)
        value = old + delta
        if value:
            counts[domain] = value
        else:
            counts.pop(domain, None)
        if hist is None:
            return
        if old:
            left = hist[old] - 1
            if left:
                hist[old] = left
            else:
                del hist[old]
        if value:
            hist[value] = hist.get(value, 0) + 1
        # a new extreme is the old one or its neighbour
        if delta == 1:
            self._rose(old, value, hist)
        else:
            self._fell(old, value, hist)

    def _rose(self, old: int, value: int, hist: dict[int, int]) -> None:
        self._max = max(self._max, value)
        if old == 0:
            self._min = 1
        elif old == self._min and old not in hist:
            self._min = value

    def _fell(self, old: int, value: int, hist: dict[int, int]) -> None:
        if old == self._max and old not in hist:
            self._max = value
        if value:
            self._min = min(self._min, value)
        elif old == self._min and old not in hist:
            # the domain left the listed ones: the next count up, whichever it is
            self._min = min(hist, default=0)

    def raw_min(self) -> int:
        """The minimum over every eligible domain, zeros included (0 when there are none)."""
        if len(self.counts) < self._size:
            return 0
        if not self._known:
            self._scan()
        return self._min

    def global_min(self, min_domains: int, without: str | None = None) -> int:
        """Section 5: 0 below minDomains eligible domains, else the minimum.

        ``without`` names a domain one pod is taken out of first (a bound pod judged as if it
        were being placed again).
        """
        if self._size + self.space.absent < min_domains:
            return 0
        if len(self.counts) < self._size:  # raw_min, inlined (every judgement asks)
            current = 0
        else:
            if not self._known:
                self._scan()
            current = self._min
        if without is None:
            return current
        return min(current, self.counts.get(without, 0) - 1)

    def max_count(self) -> int:
        if not self._known:
            self._scan()
        return self._max

    def skew(self, min_domains: int) -> int:
        """``max(count) - globalMin`` over the eligible domains (0 when there are none)."""
        if not self._size:
            return 0
        return self.max_count() - self.global_min(min_domains)

    def copy(self) -> CountTable:
        """An independent table in the same state: Clone."""
        twin = CountTable(self.space, dict(self.counts))
        if self._hist is not None:
            twin._hist = dict(self._hist)
        if self._known:
            twin._known, twin._min, twin._max = True, self._min, self._max
        return twin


class FilterStatus(StrEnum):
    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    UNRESOLVABLE = "UnschedulableAndUnresolvable"


@dataclass(frozen=True, slots=True)
class Verdict:
    status: FilterStatus
    constraint: int | None = None  # index of the deciding constraint
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status is FilterStatus.SUCCESS


SUCCESS: Final = Verdict(FilterStatus.SUCCESS)


class Ceilings:
    """One rule read against a table's counts as they stand: the most pods a domain may hold
    for the pod judged to pass there, found once (the global minimum does not change while
    nodes are judged), for a pod not counted and for one counted in the node's domain.

    The Filter's comparison, ``matchNum + selfMatch - globalMin > maxSkew``, is made here and
    nowhere else: node by node (``fails``, ``rejections``), class of nodes by class
    (``misplaced``) or domain by domain (``crowded``, ``admits_empty``).
    Counted, the pod leaves its domain first: matchNum falls by one, and the global minimum to
    at most that; both sides falling alike, a domain at or below the minimum passes whenever
    an empty one would (``maxSkew >= selfMatch``).
    """

    __slots__ = ("counted", "counts", "global_min", "uncounted")

    def __init__(self, rule: SpreadRule, table: CountTable) -> None:
        self.counts = table.counts
        self.global_min = gmin = table.global_min(rule.min_domains)
        limit = rule.max_skew - rule.self_match
        self.uncounted = limit + gmin
        self.counted = limit + 1 + gmin if limit >= 0 else -1

    def fails(self, value: str | None, counted: bool = False) -> bool:
        """Whether the Filter rejects a node whose value of the key is ``value`` (None: the
        node lacks the key); ``counted``: the pod judged is in the counts, in that domain."""
        return value is None or self.counts.get(value, 0) > (
            self.counted if counted else self.uncounted
        )

    def misplaced(self, pods_by_class: Mapping[tuple[str | None, bool], int]) -> int:
        """The pods the Filter rejects where they stand, given how many stand in each class of
        nodes (the node's value of the key, or None; whether they are counted there): ``fails``
        summed, for a group judged class by class."""
        counts, uncounted, counted = self.counts, self.uncounted, self.counted
        total = 0
        for (value, in_counts), n in pods_by_class.items():
            if n and (
                value is None or counts.get(value, 0) > (counted if in_counts else uncounted)
            ):
                total += n
        return total

    def rejections(
        self,
        nodes: Iterable[str],
        labels: Mapping[str, Mapping[str, str]],
        key: str,
        counted_on: Container[str],
    ) -> dict[str, FilterStatus]:
        """The nodes the Filter rejects, each with its status: a node whose ``labels`` lack the
        key is unresolvable, one beyond maxSkew unschedulable; on the ``counted_on`` nodes the
        pod judged is in the counts. In the order of ``nodes``."""
        counts, uncounted, counted = self.counts, self.uncounted, self.counted
        out: dict[str, FilterStatus] = {}
        for node in nodes:
            value = labels[node].get(key)
            if value is None:
                out[node] = FilterStatus.UNRESOLVABLE
            elif counts.get(value, 0) > (counted if node in counted_on else uncounted):
                out[node] = FilterStatus.UNSCHEDULABLE
        return out

    def crowded(self) -> list[str]:
        """The listed domains where a pod not counted fails."""
        limit = self.uncounted
        return [domain for domain, n in self.counts.items() if n > limit]

    def admits_empty(self) -> bool:
        """Whether a pod not counted passes in a domain holding none (0 is within the
        ceiling)."""
        return self.uncounted >= 0


class SpreadRule(NamedTuple):
    """One constraint of one pod shape as the Filter applies it (section 5):
    ``matchNum + selfMatch - globalMin > maxSkew`` rejects a node (``Ceilings`` compares).

    ``counted``: the pod judged is itself in the table, in the node's domain (a bound pod
    judged as if it were being placed again, taken out of the counts first). A NamedTuple:
    one is built per constraint of every profile, and it is immutable all the same.
    """

    constraint: int  # its index among the profile's constraints
    key: str
    max_skew: int
    min_domains: int
    self_match: int  # 1 when the constraint's selector matches the pod judged

    def ceiling(self, table: CountTable, counted: bool = False) -> int:
        """The most pods a domain may hold, as ``table`` counts them, for the pod to pass there."""
        ceilings = Ceilings(self, table)
        return ceilings.counted if counted else ceilings.uncounted

    def ceilings(self, table: CountTable) -> Ceilings:
        """The rule against the counts as they stand, to judge many nodes by."""
        return Ceilings(self, table)

    def fails(self, table: CountTable, value: str | None, counted: bool = False) -> bool:
        """Whether the Filter rejects a node whose value of the key is ``value`` (None: the
        node lacks the key)."""
        return Ceilings(self, table).fails(value, counted)

    def verdict(self, table: CountTable, value: str | None, counted: bool = False) -> Verdict:
        """``fails`` with the scheduler's status and the arithmetic behind it."""
        if value is None:
            return Verdict(
                FilterStatus.UNRESOLVABLE,
                self.constraint,
                f"node lacks the topology key {self.key} (missing required label)",
            )
        if not self.fails(table, value, counted):
            return SUCCESS
        match_num = table.get(value) - (1 if counted else 0)
        gmin = table.global_min(self.min_domains, without=value if counted else None)
        return Verdict(
            FilterStatus.UNSCHEDULABLE,
            self.constraint,
            f"{self.key} {value}: {match_num} + {self.self_match} - {gmin} "
            f"> maxSkew {self.max_skew}",
        )
