"""What changed between two scans of a policy, and the Events that say so.

Events are for changes only: a violation found, a violation resolved. A scan that changes
nothing says nothing; many changes at once are told in one Event.
"""

from __future__ import annotations

from dataclasses import dataclass

from respread.report.model import Report, Violation, ViolationKey

EVENT_DETAIL = 5  # up to this many new violations get an Event each; more, one Event for all
EVENT_NAMES = 3  # violations an aggregated Event names


@dataclass(frozen=True, slots=True)
class Changes:
    found: list[Violation]  # the violations new in this scan
    resolved: list[ViolationKey]


def _named(key: ViolationKey) -> str:
    namespace, kind, name, topology_key = key
    return f"{namespace}/{kind}/{name} {topology_key}"


def changes(report: Report, known: frozenset[ViolationKey]) -> Changes:
    """The violations this scan found that the previous one did not, and those it resolved."""
    current = {v.key: v for v in report.violations}
    found = [v for key, v in current.items() if key not in known]
    resolved = sorted(known - current.keys())
    return Changes(found, resolved)


def _found(v: Violation) -> str:
    return (
        f"{v.workload.namespace}/{v.workload.name}: {v.topology_key} skew {v.skew} > maxSkew "
        f"{v.max_skew} ({v.cause.value}); {v.message}"
    )


def change_events(changes: Changes) -> list[tuple[str, bool, str]]:
    """The Events a scan posts about its policy, as (reason, warning, message): one per new
    violation while there are few, else one naming the first few and counting the rest; one
    for all the violations resolved. Nothing when nothing changed."""
    out: list[tuple[str, bool, str]] = []
    found = changes.found
    if 0 < len(found) <= EVENT_DETAIL:
        out.extend(("ViolationFound", True, _found(v)) for v in found)
    elif found:
        named = ", ".join(
            f"{v.workload.namespace}/{v.workload.name} ({v.topology_key} skew {v.skew})"
            for v in found[:EVENT_NAMES]
        )
        out.append(
            (
                "ViolationsFound",
                True,
                f"{len(found)} new violations: {named} and {len(found) - EVENT_NAMES} more; "
                "the policy's status lists the worst",
            )
        )
    if changes.resolved:
        named = ", ".join(_named(k) for k in changes.resolved[:EVENT_NAMES])
        more = len(changes.resolved) - EVENT_NAMES
        out.append(
            (
                "ViolationsResolved",
                False,
                f"{len(changes.resolved)} violation(s) resolved: {named}"
                + (f" and {more} more" if more > 0 else ""),
            )
        )
    return out
