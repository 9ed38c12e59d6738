"""PodDisruptionBudget accounting, anticipated before any API call.

The Eviction API refuses a pod covered by more than one budget (HTTP 500), by a budget whose
status is stale (``observedGeneration < generation``), or by one with no disruption allowed
(HTTP 429). A dry-run eviction checks a budget without consuming it, so the plan counts its own
evictions against each budget here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from respread.core.limits import few_named
from respread.core.model import DisruptionBudget, Labels, Pod
from respread.core.selectors import selector_matches


class BudgetVerdict(StrEnum):
    ALLOWED = "Allowed"
    BLOCKED = "Blocked"  # refused now and by every retry this run: pick another pod
    EXHAUSTED = "Exhausted"  # this plan used what the budget allows: a later run may do it


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    verdict: BudgetVerdict
    reason: str = ""
    budget: str | None = None
    lifts_when: str = ""  # blocked only until then: its pods healthy, its status current


ALLOWED = BudgetCheck(BudgetVerdict.ALLOWED)


def lifts_by_itself(b: DisruptionBudget) -> bool:
    """Whether a budget that refuses every eviction now will allow one without anyone changing
    it: its status is stale (the disruption controller has yet to observe it), or some of its
    pods are not healthy and, once they are, it allows a disruption."""
    return b.stale or b.expected_pods > b.desired_healthy


def allowed_once_healthy(b: DisruptionBudget) -> int:
    """The disruptions the budget allows once every pod it expects is healthy."""
    return max(b.disruptions_allowed, b.expected_pods - b.desired_healthy, 1 if b.stale else 0)


class BudgetLedger:
    """Budgets per namespace, and how many disruptions this plan has used of each.
    ``lift_holds``: budgets that refuse now but lift by themselves (``lifts_by_itself``) are
    counted as they will be once they lift (to find what waits on them)."""

    def __init__(self, budgets: Iterable[DisruptionBudget], *, lift_holds: bool = False) -> None:
        self.lift_holds = lift_holds
        self._by_ns: dict[str, list[DisruptionBudget]] = {}
        for b in budgets:
            self._by_ns.setdefault(b.namespace, []).append(b)
        self._used: dict[str, int] = {}
        self._covering: dict[tuple[str, Labels], list[DisruptionBudget]] = {}

    def covering(self, pod: Pod) -> list[DisruptionBudget]:
        key = (pod.namespace, pod.labels)
        hit = self._covering.get(key)
        if hit is None:
            hit = self._covering[key] = [
                b
                for b in self._by_ns.get(pod.namespace, ())
                if b.selector is not None and selector_matches(b.selector, pod.labels)
            ]
        return hit

    def check(self, pod: Pod) -> BudgetCheck:
        budgets = self.covering(pod)
        if not budgets:
            return ALLOWED
        if len(budgets) > 1:
            names = few_named(sorted(b.name for b in budgets))
            return BudgetCheck(
                BudgetVerdict.BLOCKED,
                f"covered by {len(budgets)} PodDisruptionBudgets ({names}); "
                "the Eviction API refuses such pods",
                budgets[0].key,
            )
        b = budgets[0]
        allowed = b.disruptions_allowed
        if self.lift_holds and lifts_by_itself(b):
            allowed = allowed_once_healthy(b)
        elif b.stale:
            return BudgetCheck(
                BudgetVerdict.BLOCKED,
                f"PodDisruptionBudget {b.name} status is stale (observedGeneration "
                f"{b.observed_generation} < generation {b.generation})",
                b.key,
                lifts_when="until the disruption controller has observed it",
            )
        elif allowed <= 0:
            return BudgetCheck(
                BudgetVerdict.BLOCKED,
                f"PodDisruptionBudget {b.name} allows no disruption "
                f"({b.current_healthy} healthy, {b.desired_healthy} desired)",
                b.key,
                lifts_when="until its pods are healthy" if lifts_by_itself(b) else "",
            )
        used = self._used.get(b.key, 0)
        if used >= allowed:
            return BudgetCheck(
                BudgetVerdict.EXHAUSTED,
                f"PodDisruptionBudget {b.name} allows {allowed} "
                "disruption(s), all used by this plan",
                b.key,
            )
        return ALLOWED

    def consume(self, pod: Pod) -> None:
        for b in self.covering(pod):
            self._used[b.key] = self._used.get(b.key, 0) + 1

    def give_back(self, pod: Pod) -> None:
        """Undo a ``consume`` (a planned eviction taken back)."""
        for b in self.covering(pod):
            self._used[b.key] -= 1

    def used(self) -> dict[str, int]:
        return dict(self._used)
