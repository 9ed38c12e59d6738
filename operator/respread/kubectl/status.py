"""`kubectl respread status`: the RebalancePolicies' statuses as text (pure: dicts in, text out).

A policy's status is what the operator wrote at its last scan (report/status.py builds it): a
summary, conditions, the worst violations and the plan, each list cut to spec.report.maxItems
with its total beside it. This prints one block per policy; with a namespace, only that
namespace's violations, plan steps and surges. Every value is printed escaped (one line, no
terminal control characters): a pod's name is anyone's input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from respread.core.limits import printable

VERDICTS = {
    "Fixable": "fixable",
    "Waiting": "waiting for holds to lift",
    "PartlyFixable": "partly fixable by eviction",
    "NotFixable": "not fixable by eviction",
}
SUMMARY_FIELDS = (
    ("nodes", "nodes"),
    ("pods", "pods"),
    ("constraintGroups", "constraint groups"),
    ("violations", "violations"),
    ("waiting", "waiting"),
    ("partlyFixable", "partly fixable"),
    ("unfixable", "unfixable"),
    ("plannedEvictions", "planned evictions"),
    ("deferredEvictions", "deferred"),
    ("blocked", "blocked"),
    ("evicted", "evicted"),
    ("failed", "failed"),
)


def _s(value: object) -> str:
    return printable(str(value))


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _entries(value: object) -> list[Mapping[str, Any]]:
    return [e for e in value if isinstance(e, Mapping)] if isinstance(value, list) else []


def _workload(entry: Mapping[str, Any]) -> str:
    w = _mapping(entry.get("workload"))
    return f"{_s(entry.get('namespace', '?'))} {_s(w.get('kind', '?'))}/{_s(w.get('name', '?'))}"


def _in(namespace: str | None, entries: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in entries if namespace is None or e.get("namespace") == namespace]


def select(policies: Sequence[Mapping[str, Any]], name: str | None) -> list[Mapping[str, Any]]:
    """The policies to show: all, or the one named (empty if there is none by that name)."""
    if name is None:
        return list(policies)
    return [p for p in policies if _mapping(p.get("metadata")).get("name") == name]


def digest(policy: Mapping[str, Any], namespace: str | None) -> dict[str, Any]:
    """What `-o json|yaml` prints for one policy: its name, mode and status, the status's lists
    narrowed to ``namespace`` when one is given."""
    status = dict(_mapping(policy.get("status")))
    if namespace is not None:
        for key in ("violations", "plan", "surges", "cooldowns"):
            if key in status:
                status[key] = _in(namespace, _entries(status[key]))
    return {
        "name": _mapping(policy.get("metadata")).get("name"),
        "mode": _mapping(policy.get("spec")).get("mode", "DryRun"),
        "status": status,
    }


def _summary(summary: Mapping[str, Any]) -> str:
    parts = [f"{_s(summary[k])} {label}" for k, label in SUMMARY_FIELDS if k in summary]
    return ", ".join(parts) or "none"


def _evictions(status: Mapping[str, Any]) -> list[str]:
    """Evictions since the policy was created, and when the next held-back one is due."""
    total, due = status.get("evictedTotal"), status.get("nextEvictionTime")
    if total is None and due is None:
        return []
    line = f"  Evictions: {_s(total or 0)} since the policy was created"
    return [line + (f"; the next is due at {_s(due)} (cooldown or back-off)" if due else "")]


def _conditions(status: Mapping[str, Any]) -> str:
    parts = []
    for c in _entries(status.get("conditions")):
        text = f"{_s(c.get('type', '?'))}={_s(c.get('status', '?'))}"
        if c.get("status") != "True" and c.get("message"):
            text += f" ({_s(c['message'])})"
        parts.append(text)
    return ", ".join(parts) or "none"


def _domains(v: Mapping[str, Any]) -> str:
    d = _mapping(v.get("domains"))
    most, least = _mapping(d.get("max")), _mapping(d.get("min"))
    if not most:
        return f"{_s(d.get('count', '?'))} domains"
    return (
        f"{_s(d.get('count', '?'))} domains, {_s(most.get('name'))}={_s(most.get('pods'))}"
        f" .. {_s(least.get('name'))}={_s(least.get('pods'))}"
    )


def _violation(v: Mapping[str, Any]) -> str:
    verdict = v.get("verdict")
    fix = (VERDICTS.get(verdict, "") if isinstance(verdict, str) else "") or (
        "fixable" if v.get("fixable") else "not fixable by eviction"
    )
    if not v.get("fixable") and v.get("remedy"):
        fix += f" (remedy {_s(v['remedy'])})"
    return (
        f"    {_workload(v)}  {_s(v.get('topologyKey', '?'))}: skew {_s(v.get('skew'))} > maxSkew"
        f" {_s(v.get('maxSkew'))} ({_domains(v)}); cause {_s(v.get('cause', '?'))}; {fix}"
    )


def _step(e: Mapping[str, Any]) -> str:
    src, dst = _mapping(e.get("fromDomain")), _mapping(e.get("toDomain"))
    where = ", ".join(f"{_s(k)}={_s(v)}" for k, v in src.items()) or "?"
    to = ", ".join(f"{_s(k)}={_s(v)}" for k, v in dst.items()) or "?"
    reason = f": {_s(e['reason'])}" if e.get("reason") else ""
    return (
        f"    {_s(e.get('namespace', '?'))}/{_s(e.get('pod', '?'))} on {_s(e.get('node', '?'))}"
        f" ({where}) -> {to} (node {_s(e.get('predictedNode') or '?')})"
        f"  {_s(e.get('state', '?'))}{reason}"
    )


def _surge(s: Mapping[str, Any]) -> str:
    replicas, target = s.get("replicas"), s.get("targetReplicas")
    sized = replicas is not None and target is not None
    sizes = f" {_s(replicas)} -> {_s(target)}" if sized else ""
    return f"    {_workload(s)}  {_s(s.get('state', '?'))}{sizes}: {_s(s.get('reason', ''))}"


def _section(
    title: str, entries: list[Mapping[str, Any]], total: object, narrowed: bool, line: Any
) -> list[str]:
    if not entries:
        return []
    count = f"{len(entries)} in this namespace" if narrowed else f"{len(entries)} of {_s(total)}"
    return [f"  {title} ({count}):", *(line(e) for e in entries)]


def render_policy(policy: Mapping[str, Any], namespace: str | None) -> str:
    """One policy's block: mode, last scan, summary, conditions, violations, plan, surges."""
    name = _s(_mapping(policy.get("metadata")).get("name", "?"))
    mode = _s(_mapping(policy.get("spec")).get("mode", "DryRun"))
    status = _mapping(policy.get("status"))
    if not status.get("lastScanTime"):
        return f"Policy {name} ({mode}): not scanned yet\n"
    narrowed = namespace is not None
    violations = _in(namespace, _entries(status.get("violations")))
    plan = _in(namespace, _entries(status.get("plan")))
    surges = _in(namespace, _entries(status.get("surges")))
    lines = [
        f"Policy {name} ({mode}), last scan {_s(status['lastScanTime'])}",
        f"  Summary: {_summary(_mapping(status.get('summary')))}",
        *_evictions(status),
        f"  Conditions: {_conditions(status)}",
        *_section("Violations", violations, status.get("violationsTotal"), narrowed, _violation),
        *_section("Plan", plan, status.get("planTotal"), narrowed, _step),
        *_section("Surges", surges, len(surges), narrowed, _surge),
    ]
    if narrowed and not (violations or plan or surges):
        lines.append(f"  Nothing in namespace {_s(namespace)}.")
    return "\n".join(lines) + "\n"


def render(policies: Sequence[Mapping[str, Any]], namespace: str | None) -> str:
    if not policies:
        return "No RebalancePolicy found.\n"
    return "\n".join(render_policy(p, namespace) for p in policies)
