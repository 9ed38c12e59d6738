"""Where the scheduler puts a pod: the landing predictor, for an evicted pod's replacement and
for a surge's new pods alike.

The nodes it may go to are those where every wanted spread constraint passes the Filter (the
kernel's rule, with an evicted pod already out of the counts; a new pod is in none) and, with
requireFit, the static filters (affinity, taints, cordons) and resources do too; a surge also
leaves out nodes that are not Ready. Among them, one tie-break, everywhere:

1. the lowest score: the matching pods in the node's domains, summed over the constraints.
   That is what PodTopologySpread's scoring prefers (fewer matching pods in the node's domain;
   for a hostname key the domain is the node itself);
2. then the least node name. PodTopologySpread scores every node of one domain alike, and the
   scheduler breaks equal totals at random: a fixed order keeps the prediction deterministic
   without claiming a preference the scheduler does not have (in particular not "the node
   with fewer of the workload's pods", which only a hostname constraint expresses, through
   the score).

The room a landing takes is reserved (and released when a simulated move is undone), so the
next prediction sees it gone. Judged domain by domain on node bit sets (``NodeSets``) rather
than node by node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

from respread.core.kernel import CountTable
from respread.core.model import Node, Pod, Resources
from respread.scheduling.nodesets import NodeSets, bits
from respread.scheduling.placement import CapacityLedger
from respread.scheduling.spread import Profile, rule

NOT_READY = "node is not Ready"


class LandingPredictor:
    """The scheduler's choice of node, over the capacity left by earlier landings.

    ``require_fit``: the static filters and resources decide too (else the spread alone);
    ``ready_only``: nodes that are not Ready take nothing (a surge's new pods)."""

    def __init__(
        self,
        nodes: tuple[Node, ...],
        pods: tuple[Pod, ...],
        require_fit: bool,
        *,
        ready_only: bool = False,
    ) -> None:
        self.ledger = CapacityLedger(nodes, pods)
        self.node_sets = NodeSets(nodes)
        self.require_fit = require_fit
        self._ranks: dict[str, int] = {}  # node name -> its bit (bits, for a repeated name)
        for rank, node in enumerate(self.node_sets.by_rank):
            self._ranks[node.name] = self._ranks.get(node.name, 0) | 1 << rank
        # the nodes holding as many pods as they may, kept as landings reserve and release
        # room: ``land`` passes over them at once rather than asking each for its room
        self._full = (
            bits(r for r, n in enumerate(self.node_sets.by_rank) if self.ledger.full(n.name))
            if require_fit
            else 0
        )
        self.not_ready = (
            bits(r for r, n in enumerate(self.node_sets.by_rank) if not n.ready)
            if ready_only
            else 0
        )

    def reserve(self, node: str, requests: Resources) -> None:
        self.ledger.reserve(node, requests)
        self._refresh(node)

    def release(self, node: str, requests: Resources) -> None:
        self.ledger.release(node, requests)
        self._refresh(node)

    def _refresh(self, node: str) -> None:
        """Whether ``node`` is full, after its room changed."""
        if self.require_fit:
            bit = self._ranks[node]
            self._full = self._full | bit if self.ledger.full(node) else self._full & ~bit

    def land(
        self,
        profile: Profile,
        tables: tuple[CountTable, ...],
        wanted: Sequence[int],
        pod: Pod,
    ) -> tuple[Node | None, str]:
        """The node ``pod`` (a pod of ``profile``, ``tables`` its working counts, an evicted
        pod already taken out) is predicted to land on; or None and why."""
        candidates, refused = self._filtered(profile, tables, wanted, pod)
        full = candidates & self._full  # no room, whatever the pod requests
        for _, bit, node, fit in self._preferred(profile, tables, wanted, candidates ^ full, pod):
            if not fit:
                return node, ""
            why = "no room" if "full" in fit else "insufficient resources"
            refused[why] = refused.get(why, 0) | bit
        if full:
            refused["no room"] = refused.get("no room", 0) | full
        return None, f"no node would take the replacement ({self._refusal(refused) or 'no nodes'})"

    def admitted(
        self,
        profile: Profile,
        tables: tuple[CountTable, ...],
        wanted: Sequence[int],
        pod: Pod,
    ) -> list[tuple[int, Node]]:
        """Every node ``pod`` may land on, with its score, best first (``land`` takes the
        first): what a caller weighing the scheduler's other choices reads."""
        candidates, _ = self._filtered(profile, tables, wanted, pod)
        candidates &= ~self._full  # no room there, whatever the pod requests
        return [
            (score, node)
            for score, _, node, fit in self._preferred(profile, tables, wanted, candidates, pod)
            if not fit
        ]

    def _filtered(
        self,
        profile: Profile,
        tables: tuple[CountTable, ...],
        wanted: Sequence[int],
        pod: Pod,
    ) -> tuple[int, dict[str, int]]:
        """The nodes passing every filter but resources, and the others by the first reason."""
        sets = self.node_sets
        spread_ok = sets.all
        for i in wanted:
            spread_ok &= self.passing(profile, i, tables[i])
        refused: dict[str, int] = {"topology spread": sets.all & ~spread_ok}
        candidates = spread_ok
        if pod.volume_pins:  # VolumeBinding refuses other nodes, requireFit or not
            admitted = sets.volumes(pod)
            refused["pinned by volume"] = spread_ok & ~admitted
            candidates &= admitted
        if self.require_fit:
            allowed, static_refused = sets.static(pod.spec)
            candidates &= allowed
            for why, nodes in static_refused.items():
                refused[why] = refused.get(why, 0) | (nodes & spread_ok)
        if self.not_ready:
            refused[NOT_READY] = candidates & self.not_ready
            candidates &= ~self.not_ready
        return candidates, refused

    def _preferred(
        self,
        profile: Profile,
        tables: tuple[CountTable, ...],
        wanted: Sequence[int],
        candidates: int,
        pod: Pod,
    ) -> Iterator[tuple[int, int, Node, str | None]]:
        """The candidates in the order of the tie-break, as they are asked for: each with its
        score, its bit, and why it lacks room (None: it has room, or room is not modelled)."""
        levels = self.score_levels(profile, tables, wanted, candidates)
        by_rank = self.node_sets.by_rank
        ledger, require_fit, requests = self.ledger, self.require_fit, pod.spec.requests
        for score in sorted(levels):
            nodes = levels[score]
            while nodes:
                lowest = nodes & -nodes  # the least name left
                nodes ^= lowest
                node = by_rank[lowest.bit_length() - 1]
                yield (
                    score,
                    lowest,
                    node,
                    ledger.fit_reason(node.name, requests) if require_fit else None,
                )

    def passing(self, profile: Profile, index: int, table: CountTable) -> int:
        """The nodes where the Filter passes the constraint (not counted), as a set."""
        judge = rule(profile, index)
        has_key, by_value = self.node_sets.domains(judge.key)
        ceilings = judge.ceilings(table)
        passing = has_key
        if not ceilings.admits_empty():  # only the listed domains within the ceiling, if any
            listed = 0
            for domain in table.counts:
                listed |= by_value.get(domain, 0)
            passing &= listed
        for domain in ceilings.crowded():
            passing &= ~by_value.get(domain, 0)
        return passing

    def score_levels(
        self, profile: Profile, tables: tuple[CountTable, ...], wanted: Sequence[int], nodes: int
    ) -> dict[int, int]:
        """``nodes`` by score: the sum over the wanted constraints of the count of their domain."""
        levels = {0: nodes} if nodes else {}
        for i in wanted:
            counts = tables[i].counts
            by_value = self.node_sets.domains(profile.constraints[i].key)[1]
            scored: dict[int, int] = {}
            for score, level in levels.items():
                rest = level
                for domain, n in counts.items():
                    part = rest & by_value.get(domain, 0)
                    if part:
                        scored[score + n] = scored.get(score + n, 0) | part
                        rest ^= part
                if rest:
                    scored[score] = scored.get(score, 0) | rest
            levels = scored
        return levels

    def _refusal(self, refused: dict[str, int]) -> str:
        """The nodes refused, counted by reason ('topology spread: 2 node(s); ...'), most first;
        ties in the order the nodes are listed."""
        sets = self.node_sets
        counted = [(why, nodes.bit_count(), nodes) for why, nodes in refused.items() if nodes]
        ties = Counter(n for _, n, _ in counted)

        def order(item: tuple[str, int, int]) -> tuple[int, int]:
            _, n, nodes = item
            first = min(sets.position[r] for r in sets.ranks(nodes)) if ties[n] > 1 else 0
            return (-n, first)

        return "; ".join(f"{why}: {n} node(s)" for why, n, _ in sorted(counted, key=order))
