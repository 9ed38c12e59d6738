"""Domains in an outage and pods spread holds Pending, as text (`plan -o text`, `explain`)."""

from __future__ import annotations

from respread.analysis.pending import PendingPod, UnblockKind
from respread.core.timestamps import format_rfc3339
from respread.scheduling.outages import Outage


def outages_text(outages: tuple[Outage, ...]) -> list[str]:
    """One line per domain in an outage."""
    if not outages:
        return []
    out = ["", f"{len(outages)} domain(s) in an outage (every node NotReady or unreachable):"]
    for o in outages:
        since = format_rfc3339(o.since) if o.since is not None else "an unknown time"
        nodes = ", ".join(o.nodes[:5]) + (
            f" and {len(o.nodes) - 5} more" if len(o.nodes) > 5 else ""
        )
        out.append(f"  {o}: {len(o.nodes)} node(s) down since {since} ({nodes})")
    return out


def pending_text(pending: tuple[PendingPod, ...]) -> list[str]:
    """A section per pod: the binding constraint and domain, why, and what would unblock it."""
    if not pending:
        return []
    out = ["", f"{len(pending)} pod(s) held Pending by topology spread:"]
    for p in pending:
        out.append("")
        out.extend(pending_pod_text(p))
    return out


def pending_pod_text(p: PendingPod) -> list[str]:
    w = p.workload
    counts = ", ".join(f"{d or chr(34) * 2}={n}" for d, n in p.counts) or "none eligible"
    out = [
        f"{p.pod.namespace}/{p.pod.name} ({w.kind} {w.name})  {p.topology_key}  "
        f"maxSkew {p.max_skew}  [Pending: {p.obstacle.value}]",
        f"  domains: {counts} (global minimum {p.global_min}"
        + (f", minDomains {p.min_domains}" if p.min_domains > 1 else "")
        + ")",
        f"  {p.message}",
    ]
    for a in p.admitted:
        for n in a.nodes:
            out.append(f"    {a.domain or chr(34) * 2}: {n.node}: {n.detail}")
    if p.admitted_total > len(p.admitted):
        out.append(f"    ... {p.admitted_total} admitted domains in all")
    out.append(f"  {p.nodes_refused_by_spread} node(s) would take it but for the spread Filter")
    for u in p.unblock:
        label = "respread can plan" if u.kind is UnblockKind.MOVE else "needs"
        out.append(f"  unblock ({label}): {u.message}")
    if p.evidence:
        out.append(f"  scheduler: {p.evidence}")
    return out
