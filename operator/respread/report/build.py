"""The report: the CLI's JSON/YAML contract and its text for a person at a terminal.

The JSON shape (``RebalanceReport``) is documented in docs/report.md and is a stable contract:
fields are only ever added.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from respread.analysis.causes import PreviousScan, attribute
from respread.analysis.groups import Analysis, Group
from respread.inputs.policy import API_VERSION, RebalancePolicy
from respread.remedies.choose import chosen, remedies
from respread.remedies.cost.order import CostPlan, Excluded, PodCost, ReplicaSetOrder
from respread.remedies.evict.planner import Move, Outcome, Plan, Skip
from respread.remedies.surge.advance import InFlight
from respread.remedies.surge.plan import SurgePlan, SurgeReport

DOMAINS_SHOWN = 50  # a violation lists at most this many domains (the fullest and the emptiest)


def _domains(group: Group, limit: int = DOMAINS_SHOWN) -> tuple[dict[str, int], bool]:
    if len(group.domains) <= limit:
        return {d: group.domain_count(d) for d in group.domains}, False
    ordered = sorted(group.domains, key=lambda d: (-group.domain_count(d), d))
    keep = ordered[: limit - limit // 5] + ordered[-(limit // 5) :]
    return {d: group.domain_count(d) for d in sorted(keep)}, True


def violation_entry(
    outcome: Outcome, analysis: Analysis, previous: PreviousScan | None = None
) -> dict[str, Any]:
    g = outcome.group
    c = g.constraint
    domains, truncated = _domains(g)
    why = attribute(g, analysis, previous)
    entry: dict[str, Any] = {
        "namespace": g.workload.namespace,
        "workload": {"kind": g.workload.kind, "name": g.workload.name},
        "topologyKey": c.key,
        "whenUnsatisfiable": c.when.value,
        "maxSkew": c.max_skew,
        "minDomains": c.min_domains,
        "skew": g.skew,
        "globalMinimum": g.global_min,
        "domainCount": len(g.domains),
        "domains": domains,
        "pods": g.members.count,
        "violatingPods": g.violating,
        "podsOnNodesWithoutKey": g.unresolvable,
        "podsOutsideDomains": g.outside,
        "minimumMoves": g.minimum_moves,
        "fixable": outcome.fixable,
        "violatingPodsAfterRun": outcome.violating_after_run,
        "cause": why.cause.value,
        "causeMessage": why.message,
        "message": outcome.message,
    }
    if truncated:
        entry["domainsTruncated"] = True
    if c.from_defaults:
        entry["fromDefaultConstraints"] = True
    return entry


def _domain_map(pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    return dict(pairs)


def move_entry(move: Move) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "namespace": move.pod.namespace,
        "pod": move.pod.name,
        "workload": {"kind": move.workload.kind, "name": move.workload.name},
        "node": move.from_node,
        "fromDomain": _domain_map(move.from_domain),
        "toDomain": _domain_map(move.to_domain),
        "predictedNode": move.to_node,
        "reason": move.reason,
    }
    if move.deferred_by:
        entry["deferredBy"] = move.deferred_by
    return entry


def skip_entry(skip: Skip) -> dict[str, Any]:
    return {
        "namespace": skip.pod.namespace,
        "pod": skip.pod.name,
        "workload": {"kind": skip.workload.kind, "name": skip.workload.name},
        "node": skip.pod.node_name,
        "kind": skip.kind.value,
        "reason": skip.reason,
    }


def worst_first(outcomes: tuple[Outcome, ...]) -> list[Outcome]:
    return sorted(
        outcomes,
        key=lambda o: (
            -(o.group.skew - o.group.constraint.max_skew),
            -o.group.violating,
            o.group.workload,
            o.group.constraint.key,
        ),
    )


def remedy_fields(
    outcome: Outcome, policy: RebalancePolicy, surge: SurgeReport | None = None
) -> dict[str, Any]:
    verdicts = remedies(outcome, policy, surge)
    pick = chosen(verdicts)
    return {
        "remedies": [
            {
                "name": v.remedy.value,
                "enabled": v.enabled,
                "applies": v.applies,
                "reason": v.reason,
            }
            for v in verdicts
        ],
        "remedy": pick.value if pick is not None else None,
    }


TIER_NAMES = ("Unassigned", "Pending", "Unknown", "NotReady", "Ready")


def cost_entry(entry: PodCost) -> dict[str, Any]:
    out: dict[str, Any] = {
        "pod": entry.pod.name,
        "node": entry.pod.node_name,
        "domains": dict(entry.domains),
        "tier": TIER_NAMES[entry.tier],
        "currentCost": entry.current,
        "desiredCost": entry.desired,
        "changed": entry.changed,
        "withinMaxSkew": entry.within_max_skew,
    }
    if entry.foreign:
        out["conflictManagers"] = list(entry.foreign)
    return out


def order_entry(order: ReplicaSetOrder) -> dict[str, Any]:
    out: dict[str, Any] = {
        "namespace": order.workload.namespace,
        "workload": {"kind": order.workload.kind, "name": order.workload.name},
        "replicaSet": order.replica_set,
        "state": order.state.value,
        "pods": len(order.pods),
        "stepsWithinMaxSkew": order.safe_steps,
        "changed": len(order.changed),
        "conflicts": len(order.conflicts),
        "message": order.message,
        "order": [cost_entry(e) for e in order.pods],
    }
    if order.owner is not None:
        out["owner"] = order.owner
    return out


def excluded_entry(excluded: Excluded) -> dict[str, Any]:
    return {
        "namespace": excluded.workload.namespace,
        "workload": {"kind": excluded.workload.kind, "name": excluded.workload.name},
        "pods": excluded.pods,
        "reason": excluded.reason,
    }


def deletion_cost_section(costs: CostPlan | None) -> dict[str, Any]:
    if costs is None:
        return {
            "enabled": False,
            "orders": [],
            "excluded": [],
            "patches": [],
            "deferredPatches": 0,
        }
    return {
        "enabled": True,
        "orders": [order_entry(o) for o in costs.orders],
        "excluded": [excluded_entry(e) for e in costs.excluded],
        "patches": [
            {
                "namespace": p.pod.namespace,
                "pod": p.pod.name,
                "from": p.current,
                "to": p.desired,
            }
            for p in costs.patches
        ],
        "deferredPatches": costs.deferred_patches,
        "overlaps": sum(len(o.pods) for o in costs.overlapping),
    }


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds % 60:
        return f"{seconds}s"
    return f"{seconds // 60}m"


def _undetermined(p: SurgePlan) -> str:
    if p.determined:
        return ""
    others = sorted({_where(dict(d)) for lnd in p.landings for d in lnd.others})
    worst = (
        f"would leave {p.worst_misplaced} misplaced pod(s)"
        if p.worst_misplaced
        else "would also fix it"
    )
    return (
        f" (likely, not determined: the Filter also admits {', '.join(others)}; the worst "
        f"admissible placement {worst}; the victims are chosen again from the real placement)"
    )


def surge_steps(p: SurgePlan, policy: RebalancePolicy) -> list[str]:
    n, k = p.original, p.surge
    where = ", ".join(f"{lnd.node} ({_where(dict(lnd.domains))})" for lnd in p.landings)
    victims = ", ".join(
        f"{v.pod.name} ({_where(dict(v.domains))})" for v in p.victims if v.pod.node_name
    )
    timeout = _duration(policy.remediation.surge.ready_timeout)
    return [
        f"scale spec.replicas {n} -> {n + k}; the scheduler is predicted to place the new pods "
        f"on {where}" + _undetermined(p),
        f"wait until all {n + k} replicas are Ready (at most {timeout}; else roll back to {n})",
        f"give the lowest pod-deletion-cost to {k} pod(s) in the crowded domains (predicted: "
        f"{victims}; chosen again from the real placement)",
        f"scale spec.replicas {n + k} -> {n}: the ReplicaSet controller deletes those pods",
    ]


def _ref(namespace: str, kind: str, name: str) -> dict[str, Any]:
    return {"namespace": namespace, "workload": {"kind": kind, "name": name}}


def surge_plan_entry(p: SurgePlan, policy: RebalancePolicy) -> dict[str, Any]:
    return _ref(p.workload.namespace, p.workload.kind, p.workload.name) | {
        "replicas": p.original,
        "surge": p.surge,
        "targetReplicas": p.original + p.surge,
        "readyTimeoutSeconds": policy.remediation.surge.ready_timeout,
        "landings": [
            {
                "node": lnd.node,
                "domains": dict(lnd.domains),
                "alsoAdmitted": [dict(d) for d in lnd.others],
            }
            for lnd in p.landings
        ],
        "victims": [
            {"pod": v.pod.name, "node": v.pod.node_name, "domains": dict(v.domains)}
            for v in p.victims
        ],
        "predictedMisplacedAfter": p.misplaced_after,
        "landingDetermined": p.determined,
        "worstCaseMisplacedAfter": p.worst_misplaced,
        "steps": surge_steps(p, policy),
    }


def surge_operation_entry(f: InFlight) -> dict[str, Any]:
    op = f.operation
    return _ref(f.workload.namespace, f.workload.kind, f.workload.name) | {
        "policy": op.policy,
        "phase": op.phase.value,
        "originalReplicas": op.original,
        "targetReplicas": op.target,
        "replicas": f.deployment.replicas,
        "readyReplicas": f.deployment.rollout.ready if f.deployment.rollout else 0,
        "started": op.started,
        "deadline": op.deadline,
        "next": {"action": f.action.kind.value, "reason": f.action.reason},
        "victims": [v.pod.name for v in f.action.victims],
    }


def surge_section(surge: SurgeReport | None, policy: RebalancePolicy) -> dict[str, Any]:
    if surge is None:
        return {"enabled": False, "plans": [], "skipped": [], "operations": []}
    return {
        "enabled": surge.enabled,
        "plans": [surge_plan_entry(p, policy) for p in surge.plans],
        "skipped": [
            _ref(s.workload.namespace, s.workload.kind, s.workload.name) | {"reason": s.reason}
            for s in surge.skips
        ],
        "operations": [surge_operation_entry(f) for f in surge.in_flight],
    }


def build_report(
    analysis: Analysis,
    plan: Plan,
    policy: RebalancePolicy,
    previous: PreviousScan | None = None,
    costs: CostPlan | None = None,
    *,
    surge: SurgeReport | None = None,
) -> dict[str, Any]:
    """The full RebalanceReport (unbounded lists: the CLI's output; status.py bounds them).

    ``costs`` is the deletion-cost plan, when the policy enables that remedy.
    """
    state = analysis.index.state
    outcomes = worst_first(plan.outcomes)
    blocked = sum(1 for s in plan.skipped if s.kind.value == "Blocked")
    return {
        "apiVersion": API_VERSION,
        "kind": "RebalanceReport",
        "policy": {"name": policy.name, "mode": policy.mode.value},
        "summary": {
            "nodes": len(state.nodes),
            "pods": len(state.pods),
            "constraintGroups": len(analysis.groups),
            "violations": len(plan.outcomes),
            "unfixable": sum(1 for o in plan.outcomes if not o.fixable),
            "plannedEvictions": len(plan.moves),
            "deferredEvictions": len(plan.deferred),
            "blocked": blocked,
            "skipped": len(plan.skipped),
        },
        "planner": {"method": plan.method, "message": plan.method_note},
        "violations": [
            violation_entry(o, analysis, previous) | remedy_fields(o, policy, surge)
            for o in outcomes
        ],
        "evictions": [move_entry(m) for m in plan.moves],
        "deferred": [move_entry(m) for m in plan.deferred],
        "skipped": [skip_entry(s) for s in plan.skipped],
        "predicted": {
            "violations": plan.predicted_violations,
            "violatingPods": sum(o.violating_after_run for o in plan.outcomes),
            "violationsAfterDeferred": sum(1 for o in plan.outcomes if not o.fixable),
        },
        "deletionCost": deletion_cost_section(costs),
        "surge": surge_section(surge, policy),
    }


# --------------------------------------------------------------------------------------------
# Text


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
        for r in rows
    ]


def _where(domain: Mapping[str, str]) -> str:
    return ",".join(domain.values()) or "-"


def render_text(report: Mapping[str, Any]) -> str:
    s = report["summary"]
    mode = report["policy"]["mode"]
    out = [
        f"Scanned {s['nodes']} nodes, {s['pods']} pods, {s['constraintGroups']} constraint groups "
        f"(policy {report['policy']['name']}, mode {mode}).",
    ]
    if not report["violations"]:
        out.append("No topology spread violations.")
        out.extend(_deletion_cost_text(report))
        out.extend(_surge_text(report))
        return "\n".join(out) + "\n"
    out.append(f"{s['violations']} violation(s), {s['unfixable']} not fixable by eviction.")
    for v in report["violations"]:
        out.append("")
        state = "fixable" if v["fixable"] else "NOT FIXABLE"
        relation = ">" if v["skew"] > v["maxSkew"] else "<="
        keyless = v.get("podsOnNodesWithoutKey", 0)
        where = f", {keyless} on nodes without the key" if keyless else ""
        if outside := v.get("podsOutsideDomains", 0):
            where += f", {outside} on nodes its inclusion policies leave out of the counts"
        out.append(
            f"{v['namespace']}/{v['workload']['name']} ({v['workload']['kind']})  "
            f"{v['topologyKey']}  skew {v['skew']} {relation} maxSkew {v['maxSkew']}  "
            f"[{v['violatingPods']} of {v['pods']} pods misplaced{where}, {state}]"
        )
        gmin = v["globalMinimum"]
        rows = [["DOMAIN", "PODS", ""]]
        for name, pods in sorted(v["domains"].items(), key=lambda kv: (-kv[1], kv[0])):
            mark = (
                f"+{pods - gmin} over min"
                if pods - gmin > v["maxSkew"]
                else ("min" if pods == gmin else "")
            )
            rows.append([name or '""', str(pods), mark])
        out.extend(_table(rows))
        if v.get("domainsTruncated"):
            out.append(f"  ... {v['domainCount']} domains in all")
        if v["minDomains"] > 1:
            out.append(f"  minDomains {v['minDomains']}, {v['domainCount']} eligible domain(s)")
        out.append(f"  cause: {v['cause']} ({v['causeMessage']})")
        out.append(f"  {v['message']}")
        if "remedies" in v:
            out.append(f"  remedies: {_remedies_text(v)}")

    out.append("")
    verb = "Would evict" if mode == "DryRun" else "Evicting"
    if report["evictions"]:
        out.append(f"{verb} {len(report['evictions'])} pod(s), in this order:")
        rows = [["#", "POD", "NODE", "FROM", "TO", "PREDICTED NODE"]]
        for i, e in enumerate(report["evictions"], 1):
            rows.append(
                [
                    str(i),
                    f"{e['namespace']}/{e['pod']}",
                    e["node"],
                    _where(e["fromDomain"]),
                    _where(e["toDomain"]),
                    e["predictedNode"],
                ]
            )
        out.extend(_table(rows))
    else:
        out.append("No eviction planned for this run.")
    planner = report.get("planner", {})
    if planner.get("message"):
        out.append(f"Planned by {planner['message']}.")
    if report["deferred"]:
        reasons = Counter(d["deferredBy"] for d in report["deferred"])
        detail = "; ".join(f"{n} by {r}" for r, n in reasons.most_common(3))
        out.append(f"{len(report['deferred'])} more eviction(s) left for later runs ({detail}).")
    if report["skipped"]:
        out.append("")
        out.append(f"Not evicted ({len(report['skipped'])} pod(s)):")
        by_reason: dict[tuple[str, str], list[str]] = {}
        for sk in report["skipped"]:
            key = (f"{sk['namespace']}/{sk['workload']['name']}", sk["reason"])
            by_reason.setdefault(key, []).append(sk["pod"])
        rows = [["WORKLOAD", "PODS", "REASON"]]
        for (workload, reason), pods in by_reason.items():
            shown = ", ".join(pods[:3]) + (f" and {len(pods) - 3} more" if len(pods) > 3 else "")
            rows.append([workload, shown, reason])
        out.extend(_table(rows))
    p = report["predicted"]
    out.append("")
    out.append(
        f"Predicted after this run: {p['violations']} violation(s), "
        f"{p['violatingPods']} misplaced pod(s); after the deferred evictions: "
        f"{p['violationsAfterDeferred']} violation(s)."
    )
    out.extend(_deletion_cost_text(report))
    out.extend(_surge_text(report))
    return "\n".join(out) + "\n"


def _surge_text(report: Mapping[str, Any]) -> list[str]:
    section = report.get("surge") or {}
    if not (section.get("enabled") or section.get("operations")):
        return []
    verb = "Would surge" if report["policy"]["mode"] == "DryRun" else "Surging"
    out = [""]
    if not section["plans"]:
        out.append("No surge move planned.")
    for p in section["plans"]:
        out.append(
            f"{verb} {p['namespace']}/{p['workload']['name']} (Deployment) "
            f"{p['replicas']} -> {p['targetReplicas']} -> {p['replicas']} replicas:"
        )
        out.extend(f"  {i}. {step}" for i, step in enumerate(p["steps"], 1))
    for sk in section["skipped"]:
        out.append(f"Not surged: {sk['namespace']}/{sk['workload']['name']}: {sk['reason']}")
    for op in section["operations"]:
        out.append(
            f"Surge in flight: {op['namespace']}/{op['workload']['name']} {op['phase']} "
            f"({op['originalReplicas']} -> {op['targetReplicas']}, {op['readyReplicas']} Ready); "
            f"next: {op['next']['action']} ({op['next']['reason']})"
        )
    return out


def _remedies_text(v: Mapping[str, Any]) -> str:
    parts = []
    for r in v["remedies"]:
        if r["name"] == v.get("remedy"):
            state = "chosen"
        elif not r["enabled"]:
            state = "applies, not enabled" if r["applies"] else "not enabled"
        elif not r["applies"]:
            state = "does not apply"
        else:
            state = "applies"
        parts.append(f"{r['name']} ({state})")
    return ", ".join(parts) + ("" if v.get("remedy") else "; none chosen")


ORDER_ROWS_SHOWN = 30  # pods of one ReplicaSet listed in the text (JSON lists them all)


def _cost(value: int | None) -> str:
    return "-" if value is None else str(value)


def _deletion_cost_text(report: Mapping[str, Any]) -> list[str]:
    section = report.get("deletionCost") or {}
    if not section.get("enabled"):
        return []
    out = ["", "Deletion-cost order (a scale-in removes the lowest cost first):"]
    if not section["orders"]:
        out.append("  No Deployment or ReplicaSet with hard spread constraints to order.")
    for o in section["orders"]:
        out.append(
            f"{o['namespace']}/{o['workload']['name']} ({o['workload']['kind']}), ReplicaSet "
            f"{o['replicaSet']}: {o['state']}, {o['stepsWithinMaxSkew']} of {o['pods']} "
            "removal(s) within maxSkew from the first"
        )
        out.append(f"  {o['message']}")
        if o.get("owner"):
            continue  # another policy's order: not this policy's to show
        rows = [["#", "POD", "NODE", "DOMAINS", "COST", "WITHIN MAXSKEW"]]
        for i, e in enumerate(o["order"][:ORDER_ROWS_SHOWN], 1):
            cost = (
                f"{_cost(e['currentCost'])} -> {e['desiredCost']}"
                if e["changed"]
                else _cost(e["currentCost"])
            )
            if e.get("conflictManagers"):
                cost += f" (owned by {', '.join(e['conflictManagers'])})"
            within = "yes" if e["withinMaxSkew"] else "no"
            if e["tier"] != "Ready":
                within += f" ({e['tier']}: goes first whatever its cost)"
            rows.append([str(i), e["pod"], e["node"] or "-", _where(e["domains"]), cost, within])
        out.extend(_table(rows))
        if len(o["order"]) > ORDER_ROWS_SHOWN:
            out.append(f"  ... {len(o['order'])} pods in all")
    for x in section["excluded"]:
        out.append(
            f"Not ordered: {x['namespace']}/{x['workload']['name']} ({x['workload']['kind']},"
            f" {x['pods']} pod(s)): {x['reason']}"
        )
    out.append(
        f"Would write {len(section['patches'])} pod-deletion-cost annotation(s) this scan; "
        f"{section['deferredPatches']} left for later scans."
    )
    return out
