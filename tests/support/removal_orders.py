"""Brute force over scale-in removal orders, for the deletion-cost tests.

The ReplicaSet controller removes a lower tier (deletion_cost.tier) before any higher one; within
a tier any order is possible. Pods of one tier on one node are interchangeable for every count,
so the search branches on (tier, node) buckets, taking their pods in name order, and remembers
the states it has seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Protocol

from respread.core.model import Pod
from respread.scheduling.controller import tier


class StateJudge(Protocol):
    def within(self, removed: frozenset[str]) -> bool:
        """Whether the cluster without the pods named is within maxSkew."""


def most_safe_removals(judge: StateJudge, pods: Sequence[Pod]) -> int:
    """The most removals, from the first, that any order (lowest tier first) keeps within
    maxSkew; ``len(pods)`` when some order keeps every state within it."""
    buckets: dict[tuple[int, str], list[str]] = {}
    for p in sorted(pods, key=lambda p: p.name):
        buckets.setdefault((tier(p), p.node_name or ""), []).append(p.name)
    keys = sorted(buckets)

    @cache
    def search(left: tuple[int, ...]) -> int:
        remaining = sum(left)
        if not remaining:
            return 0
        lowest = min(keys[b][0] for b, n in enumerate(left) if n)
        best = 0
        for b, n in enumerate(left):
            if not n or keys[b][0] != lowest:
                continue
            after = (*left[:b], n - 1, *left[b + 1 :])
            removed = frozenset(
                name for key, m in zip(keys, after, strict=True) for name in buckets[key][m:]
            )
            if judge.within(removed):
                best = max(best, 1 + search(after))
                if best == remaining:  # every pod left goes safely: no order does better
                    break
        return best

    return search(tuple(len(buckets[k]) for k in keys))
