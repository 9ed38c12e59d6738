"""Where the scheduler puts an evicted pod's replacement: the landing predictor.

Of the nodes where every wanted spread constraint passes the Filter (the kernel's rule, with
the victim already out of the counts) and, with requireFit, the static filters (affinity,
taints, cordons) and resources do too: the fewest matching pods in the node's domains (what
the scheduler's scoring prefers), then the least node name. The room a landing takes is
reserved, so the next prediction sees it gone. Judged domain by domain on node bit sets
(``NodeSets``) rather than node by node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from respread.core.kernel import CountTable
from respread.core.model import Node, Pod, Resources
from respread.scheduling.nodesets import NodeSets
from respread.scheduling.placement import CapacityLedger
from respread.scheduling.spread import Profile, rule


class LandingPredictor:
    """The scheduler's choice of node, over the capacity left by earlier landings."""

    def __init__(self, nodes: tuple[Node, ...], pods: tuple[Pod, ...], require_fit: bool) -> None:
        self.ledger = CapacityLedger(nodes, pods)
        self.node_sets = NodeSets(nodes)
        self.require_fit = require_fit

    def reserve(self, node: str, requests: Resources) -> None:
        self.ledger.reserve(node, requests)

    def release(self, node: str, requests: Resources) -> None:
        self.ledger.release(node, requests)

    def land(
        self,
        profile: Profile,
        tables: tuple[CountTable, ...],
        wanted: Sequence[int],
        pod: Pod,
    ) -> tuple[Node | None, str]:
        """The node the replacement of ``pod`` (a pod of ``profile``, ``tables`` its working
        counts with the pod already taken out) is predicted to land on; or None and why."""
        require_fit = self.require_fit
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
        if require_fit:
            allowed, static_refused = sets.static(pod.spec)
            candidates &= allowed
            for why, nodes in static_refused.items():
                refused[why] = refused.get(why, 0) | (nodes & spread_ok)
        levels = self.score_levels(profile, tables, wanted, candidates)
        for score in sorted(levels):
            nodes = levels[score]
            while nodes:
                lowest = nodes & -nodes
                nodes ^= lowest
                node = sets.by_rank[lowest.bit_length() - 1]
                fit = self.ledger.fit_reason(node.name, pod.spec.requests) if require_fit else None
                if not fit:
                    return node, ""
                why = "no room" if "full" in fit else "insufficient resources"
                refused[why] = refused.get(why, 0) | lowest
        return None, f"no node would take the replacement ({self._refusal(refused) or 'no nodes'})"

    def passing(self, profile: Profile, index: int, table: CountTable) -> int:
        """The nodes where the Filter passes the constraint (not counted), as a set."""
        judge = rule(profile, index)
        has_key, by_value = self.node_sets.domains(judge.key)
        limit = judge.ceiling(table)
        passing = has_key
        if limit < 0:  # not even an empty domain passes: only the listed ones at or below it
            listed = 0
            for domain, n in table.counts.items():
                if n <= limit:
                    listed |= by_value.get(domain, 0)
            passing &= listed
        for domain, n in table.counts.items():
            if n > limit:
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
        """Node counts by reason, most first; ties in the order the nodes are listed."""
        sets = self.node_sets
        counted = [(why, nodes.bit_count(), nodes) for why, nodes in refused.items() if nodes]
        ties = Counter(n for _, n, _ in counted)

        def order(item: tuple[str, int, int]) -> tuple[int, int]:
            _, n, nodes = item
            first = min(sets.position[r] for r in sets.ranks(nodes)) if ties[n] > 1 else 0
            return (-n, first)

        return ", ".join(f"{n} {why}" for why, n, _ in sorted(counted, key=order))
