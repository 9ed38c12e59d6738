"""Prometheus metrics."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

REGISTRY = CollectorRegistry()
VIOLATIONS = Gauge(
    "respread_violations",
    "Violated constraint groups found by the last scan",
    ["policy"],
    registry=REGISTRY,
)
SKEW = Gauge(
    "respread_skew",
    "Skew of a violated constraint group",
    ["policy", "namespace", "workload", "topology_key", "match_labels"],
    registry=REGISTRY,
)
MISPLACED = Gauge(
    "respread_misplaced_pods",
    "Pods of a violated group the scheduler would not place where they are",
    ["policy", "namespace", "workload", "topology_key", "match_labels"],
    registry=REGISTRY,
)
OUTAGES = Gauge(
    "respread_domain_outages",
    "Domains whose nodes are all NotReady or unreachable past the grace period (1 each)",
    ["policy", "topology_key", "domain"],
    registry=REGISTRY,
)
PLANNED = Gauge(
    "respread_planned_evictions",
    "Evictions planned by the last scan",
    ["policy", "state"],
    registry=REGISTRY,
)
EVICTIONS = Counter(
    "respread_evictions_total",
    "Evictions attempted, by result",
    ["policy", "result"],
    registry=REGISTRY,
)
COST_PATCHES = Counter(
    "respread_deletion_cost_patches_total",
    "pod-deletion-cost patches attempted (writes, and costs taken back), by result",
    ["policy", "result"],
    registry=REGISTRY,
)
SCAN_SECONDS = Histogram(
    "respread_scan_duration_seconds", "Time taken by a scan", ["policy"], registry=REGISTRY
)
SCAN_FAILURES = Counter(
    "respread_scan_failures_total", "Scans that failed", ["policy"], registry=REGISTRY
)
LAST_SCAN = Gauge(
    "respread_last_scan_timestamp_seconds",
    "When the last scan completed",
    ["policy"],
    registry=REGISTRY,
)
LEADER = Gauge(
    "respread_leader",
    "1 while this replica acts (holds the leader election Lease, or runs standalone), else 0",
    registry=REGISTRY,
)

SURGES = Counter(
    "respread_surges_total",
    "Surge operations by outcome: started, finished, rolled_back, stood_down, failed",
    ["policy", "outcome"],
    registry=REGISTRY,
)
SURGES_IN_FLIGHT = Gauge(
    "respread_surges_in_flight",
    "Surge operations in flight (Deployments carrying respread's operation annotation)",
    registry=REGISTRY,
)
SURGE_OVERDUE = Gauge(
    "respread_surge_overdue_seconds",
    "How long past its readyTimeout deadline the oldest surge in flight is (0: none is)",
    registry=REGISTRY,
)


def serve(port: int) -> None:
    start_http_server(port, registry=REGISTRY)


# Every metric labelled with a policy (its first label): a deleted policy leaves none behind.
PER_POLICY = (
    VIOLATIONS,
    SKEW,
    MISPLACED,
    OUTAGES,
    PLANNED,
    EVICTIONS,
    COST_PATCHES,
    SCAN_SECONDS,
    SCAN_FAILURES,
    LAST_SCAN,
    SURGES,
)


def _remove(metrics: tuple[Any, ...], policy: str) -> None:
    for metric in metrics:
        for labels in list(metric._metrics):
            if labels[0] == policy:
                metric.remove(*labels)


def forget(policy: str) -> None:
    """The policy's findings (skew and misplaced pods per group, outages): a scan exports them
    afresh."""
    _remove((SKEW, MISPLACED, OUTAGES), policy)


def forget_policy(policy: str) -> None:
    """Every series of a policy that is gone (deleted, or no longer valid)."""
    _remove(PER_POLICY, policy)


def series_of(policy: str) -> list[str]:
    """The names of the series exported for `policy` (what forget_policy removes)."""
    out = []
    for family in REGISTRY.collect():
        out += [s.name for s in family.samples if s.labels.get("policy") == policy]
    return sorted(out)
