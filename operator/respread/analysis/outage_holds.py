"""Which workloads a domain outage holds back, and what the report says of it.

Under the scheduler's counting, a domain in an outage still counts (its nodes exist) while its
pods are evicted by the taint manager and their replacements pack the survivors: the skew that
follows is the outage's, and evicting for it would only move pods towards nodes that are down.
A workload with a group over a domain in an outage is therefore held: no eviction on its
account. Under KEP-5980's counting the domain is out of the skew (scheduling/spread.py), and
the survivors are judged, and balanced, among themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from respread.analysis.groups import Analysis, Group, WorkloadRef
from respread.core.timestamps import format_rfc3339
from respread.inputs.policy import OutageCounting, RebalancePolicy
from respread.scheduling.outages import Outage


def touching(group: Group, found: Iterable[Outage]) -> list[Outage]:
    """The outages of the group's key among its eligible domains, or holding its pods (on
    nodes its inclusion policies leave out: a tainted domain under nodeTaintsPolicy Honor)."""
    key = group.constraint.key
    domains = set(group.domains)
    on = group.members.by_node
    return [
        o for o in found if o.key == key and (o.domain in domains or any(n in on for n in o.nodes))
    ]


def outage_note(outages: Iterable[Outage]) -> str:
    parts = []
    for o in outages:
        since = format_rfc3339(o.since) if o.since is not None else "an unknown time"
        parts.append(f"{o} is in an outage ({len(o.nodes)} node(s) down since {since})")
    return "; ".join(parts)


def held_by_outages(
    analysis: Analysis, found: tuple[Outage, ...], policy: RebalancePolicy
) -> Mapping[WorkloadRef, str]:
    """The workloads held back, with the reason (none under KEP-5980 counting)."""
    if not found or policy.outages.counting is OutageCounting.KEP5980:
        return {}
    out: dict[WorkloadRef, str] = {}
    for g in analysis.violations:
        hit = touching(g, found)
        if hit and g.workload not in out:
            out[g.workload] = f"held: {outage_note(hit)}; no eviction on its account"
    return out
