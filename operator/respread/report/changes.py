"""What changed between two scans of a policy, and the Events that say so.

Events are for changes only: a violation found, a violation resolved, the policy starting to
select no pod, pods starting to sit on nodes the scan does not know. A scan that changes nothing
says nothing; many changes at once are told in one Event. A violation the scan no longer looks
at (the policy's spec changed, its namespace left the selection) is not "resolved": it is told
apart, as out of the policy's scope.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from respread.analysis.groups import Analysis, namespace_selected
from respread.inputs.policy import RebalancePolicy
from respread.report.model import CoverageSection, Report, Violation, ViolationKey

EVENT_DETAIL = 5  # up to this many new violations get an Event each; more, one Event for all
EVENT_NAMES = 3  # violations an aggregated Event names

Event = tuple[str, bool, str]  # reason, warning, message


@dataclass(frozen=True, slots=True)
class Changes:
    found: list[Violation]  # the violations new in this scan
    resolved: list[ViolationKey]
    out_of_scope: list[ViolationKey] = field(default_factory=list)  # no longer looked at
    nothing_selected: str = ""  # the policy has just stopped selecting pods: why
    incomplete: str = ""  # pods have just appeared on nodes the scan does not know: which


@dataclass(frozen=True, slots=True)
class Before:
    """What the previous scan of the policy knew, for telling changes."""

    known: frozenset[ViolationKey] = frozenset()  # its violations
    generation: int | None = None  # the policy's generation it scanned (None: not known)
    selected: bool = True  # its policy selected pods
    complete: bool = True  # every pod was on a node it knew


def scope_left(
    analysis: Analysis, policy: RebalancePolicy, respecified: bool
) -> Callable[[ViolationKey], bool]:
    """Whether a violation the last scan reported, and this one does not, left the policy's
    scope rather than being resolved: its group is not looked at any more (no group of its
    workload on that key) and the policy's spec changed or its namespace is no longer
    selected. A group still looked at, balanced now, is resolved."""
    watched = {
        (g.workload.namespace, g.workload.kind, g.workload.name, g.constraint.key)
        for g in analysis.groups
    }
    namespaces = {n.name: n for n in analysis.index.state.namespaces}

    def left(key: ViolationKey) -> bool:
        if key[:4] in watched:  # any group of the workload on that key (matchLabels aside)
            return False
        return respecified or not namespace_selected(key[0], policy, namespaces)

    return left


def _named(key: ViolationKey) -> str:
    namespace, kind, name, topology_key, match = key
    return f"{namespace}/{kind}/{name}{f' [{match}]' if match else ''} {topology_key}"


def _unknown_nodes(c: CoverageSection) -> str:
    shown = ", ".join(f"{p.namespace}/{p.pod} on {p.node}" for p in c.pods_on_unknown_nodes[:3])
    more = len(c.pods_on_unknown_nodes) - 3
    return (
        f"{len(c.pods_on_unknown_nodes)} pod(s) bound to nodes the operator does not know "
        f"({shown}{f' and {more} more' if more > 0 else ''}): {len(c.incomplete_groups)} "
        "constraint group(s) are counted without them"
    )


def changes(
    report: Report,
    before: Before,
    left_scope: Callable[[ViolationKey], bool] = lambda _: False,
) -> Changes:
    """The violations this scan found that the previous one did not, those it resolved, those
    that left the policy's scope; and the selection or the input turning empty or incomplete."""
    current = {v.key: v for v in report.violations}
    found = [v for key, v in current.items() if key not in before.known]
    gone = sorted(before.known - current.keys())
    c = report.coverage
    return Changes(
        found,
        [k for k in gone if not left_scope(k)],
        [k for k in gone if left_scope(k)],
        nothing_selected=c.nothing_selected if before.selected else "",
        incomplete=_unknown_nodes(c) if before.complete and not c.complete else "",
    )


def _found(v: Violation) -> str:
    return (
        f"{v.workload.namespace}/{v.workload.name}: {v.topology_key} skew {v.skew} > maxSkew "
        f"{v.max_skew} ({v.cause.value}); {v.message}"
    )


def _found_events(found: list[Violation]) -> list[Event]:
    if len(found) <= EVENT_DETAIL:
        return [("ViolationFound", True, _found(v)) for v in found]
    named = ", ".join(
        f"{v.workload.namespace}/{v.workload.name} ({v.topology_key} skew {v.skew})"
        for v in found[:EVENT_NAMES]
    )
    return [
        (
            "ViolationsFound",
            True,
            f"{len(found)} new violations: {named} and {len(found) - EVENT_NAMES} more; "
            "the policy's status lists the worst",
        )
    ]


def _listed(keys: list[ViolationKey]) -> str:
    more = len(keys) - EVENT_NAMES
    return ", ".join(_named(k) for k in keys[:EVENT_NAMES]) + (
        f" and {more} more" if more > 0 else ""
    )


def change_events(changes: Changes) -> list[Event]:
    """The Events a scan posts about its policy, as (reason, warning, message): one per new
    violation while there are few, else one naming the first few and counting the rest; one
    for all the violations resolved, one for those out of scope; one when the policy starts
    selecting no pod, one when pods start sitting on unknown nodes. Nothing when nothing
    changed."""
    out: list[Event] = []
    if changes.nothing_selected:
        out.append(
            ("NothingSelected", True, f"the policy selects no pod: {changes.nothing_selected}")
        )
    if changes.incomplete:
        out.append(("IncompleteInput", True, changes.incomplete))
    out.extend(_found_events(changes.found))
    if changes.resolved:
        out.append(
            (
                "ViolationsResolved",
                False,
                f"{len(changes.resolved)} violation(s) resolved: {_listed(changes.resolved)}",
            )
        )
    if changes.out_of_scope:
        out.append(
            (
                "ViolationsOutOfScope",
                False,
                f"{len(changes.out_of_scope)} violation(s) no longer in the policy's scope (its "
                f"spec or the namespaces changed), not resolved: {_listed(changes.out_of_scope)}",
            )
        )
    return out
