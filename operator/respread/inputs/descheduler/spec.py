"""The RebalancePolicy spec a draft makes, with the notes on what respread reads differently."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from respread.inputs.descheduler.fields import Draft


def merged_selector(selectors: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Several label selectors that must all match, as one: every matchLabels pair becomes a
    requirement, so that two values for one key match nothing, as both selectors would."""
    if not selectors:
        return None
    if len(selectors) == 1:
        return selectors[0]
    expressions: list[dict[str, Any]] = []
    for selector in selectors:
        for key, value in (selector.get("matchLabels") or {}).items():
            expressions.append({"key": key, "operator": "In", "values": [value]})
        expressions.extend(selector.get("matchExpressions") or [])
    return {"matchExpressions": expressions}


SEMANTICS = (
    (
        ("spec", "mode"),
        "DryRun: respread reports what it would evict and evicts nothing. Compare"
        " with the descheduler first (docs/from-descheduler.md), then set Enforce.",
    ),
    (
        ("spec", "selector"),
        "Counting differs: the descheduler counts only the pods its filters"
        " let it evict (its evictor, namespaces and labelSelector); respread counts every pod"
        " kube-scheduler counts, and these selectors only choose what may be evicted.",
    ),
    (
        ("spec", "constraints"),
        "minDomains: the descheduler ignores it; respread honours it as"
        " kube-scheduler does, so a constraint with minDomains may be violated for one and not the"
        " other.",
    ),
    (
        ("spec", "eviction", "requireFit"),
        "The descheduler checks that a pod fits a node of a"
        " domain below average; respread predicts the replacement's node with the scheduler's"
        " filters and evicts only if it lands better.",
    ),
    (
        ("spec", "eviction", "maxPerWorkload"),
        "null: no cap, as the descheduler has none;"
        " respread's default is 1 eviction per workload per scan.",
    ),
    (
        ("spec", "eviction", "cooldown"),
        "0s: the descheduler keeps no memory between cycles;"
        " respread's default waits 10m before evicting from a workload again.",
    ),
    (
        ("spec", "schedule"),
        "The descheduler's cycle is its command line's"
        " --descheduling-interval, not in the policy; set the same interval here.",
    ),
)


def spec_of(draft: Draft) -> dict[str, Any]:
    selector = dict(draft.selector)
    pods = merged_selector(draft.pod_selectors)
    if pods is not None:
        selector["podSelector"] = pods
    eviction = {
        **{k: draft.eviction.get(k) for k in ("maxPerRun", "maxPerNode", "maxPerNamespace")},
        "maxPerWorkload": None,
        "requireFit": any(draft.require_fit),
        "minPodAge": draft.eviction.get("minPodAge", "0s"),
        "cooldown": "0s",
        "protections": dict(draft.protections),
    }
    if "gracePeriodSeconds" in draft.eviction:
        eviction["gracePeriodSeconds"] = draft.eviction["gracePeriodSeconds"]
    return {
        "mode": "DryRun",
        "schedule": {"interval": "5m"},
        "selector": selector,
        "constraints": dict(draft.constraints),
        "eviction": eviction,
    }


def dns_name(text: str) -> str:
    """A profile's name as a RebalancePolicy name (a DNS-1123 subdomain)."""
    name = re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-.")[:253].strip("-.")
    return name or "descheduler"
