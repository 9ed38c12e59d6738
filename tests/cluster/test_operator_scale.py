"""A guard against the operator's cost per pod growing back (bench/operator_scale.py measures
it; this only fails when it returns).

Two populations of a few thousand ReplicaSet-owned pods, bound directly to fake nodes, are
scanned by `respread run` as deploy/'s service account. The operator's memory growth between
them, per pod added, must stay far below what kopf-fed watches cost (about 31 KB a pod); a
periodic scan must make no LIST, and Events come only with changes.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kube_harness import AuditLog, ControlPlane
from kube_helpers import (
    GROUP,
    OPERATOR_USER,
    PLURAL,
    VERSION,
    create_policy,
    scanned_after,
    status_of,
    wait_for,
)
from kubernetes import client
from population import Population, populate, remove, wait_removed

if TYPE_CHECKING:
    from operator_fixtures import StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]

PODS = 2500  # per population
NODES = 60
MAX_KB_PER_POD = 10.0  # kopf-fed watches cost about 31 KB a pod; slim records about 1 KB


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


@pytest.fixture
def populations(
    api_client: client.ApiClient, control_plane: ControlPlane
) -> Iterator[list[Population]]:
    """The populations a test makes, removed after it; the next test starts once the removal
    is over and kube-scheduler has caught up with it (120 node and 5,000 pod deletions), so
    that it does not place the next test's pods from a node list still being updated. (Without
    the controller-manager nothing deletes the namespaces' contents, nor lags behind.)"""
    made: list[Population] = []
    yield made
    for population in made:
        remove(api_client, population)
    if control_plane.e2e_running:
        started = time.monotonic()
        wait_removed(api_client, made, timeout=300)
        control_plane.await_scheduler_current()
        print(f"populations removed, the scheduler current: {time.monotonic() - started:.0f}s")


def wait_scans(custom: client.CustomObjectsApi, name: str, count: int) -> dict[str, Any]:
    status: dict[str, Any] = {}
    for _ in range(count):
        after = time.time()
        status = wait_for(lambda a=after: scanned_after(custom, name, a), 120, "a scan")
    return status


def operator_lists(audit: AuditLog, since: int) -> list[str]:
    """What the operator LISTed since `since` (the resources)."""
    return [
        (e.get("objectRef") or {}).get("resource", "")
        for e in audit.events(since)
        if e.get("stage") == "ResponseComplete"
        and (e.get("user") or {}).get("username") == OPERATOR_USER
        and e.get("verb") == "list"
    ]


def violation_keys(status: dict[str, Any]) -> set[tuple[str, str]]:
    return {(v["namespace"], v["workload"]["name"]) for v in status.get("violations", [])}


def policy_events(core: client.CoreV1Api, policy: str) -> dict[str, str]:
    """The Events about one policy's violations (other test modules may have left policies of
    theirs, which this operator scans too, with Events of their own). Outage Events are left
    out: this population's nodes have no kubelet, so once the e2e controllers run they go
    NotReady zone by zone, each a change the operator tells at once (a prompted scan)."""
    found = core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={policy}"
    ).items
    return {
        e.metadata.name: f"{e.reason}: {e.message}"
        for e in found
        if str(e.reason).startswith("Violation")
    }


def test_memory_per_pod_requests_and_events_per_scan_stay_small(
    control_plane: ControlPlane,
    api_client: client.ApiClient,
    operator_factory: StartOperator,
    audit_log: AuditLog,
    populations: list[Population],
) -> None:
    custom = client.CustomObjectsApi(api_client)
    core = client.CoreV1Api(api_client)
    suffix = uuid.uuid4().hex[:6]
    labels = {"respread.test/scale": suffix}
    populations.append(
        populate(api_client, NODES, PODS, prefix=f"s1{suffix}", namespace_labels=labels)
    )
    skewed = populations[0].skewed
    op = operator_factory()
    name = f"scale-{suffix}"
    create_policy(
        custom, name, mode="DryRun", selector={"namespaceSelector": {"matchLabels": labels}}
    )
    try:
        first = wait_for(lambda: scanned_after(custom, name, 0), 180, "a first scan")
        assert first["summary"]["violations"] == skewed, first["summary"]
        wait_scans(custom, name, 1)

        # Steady scans: no LIST; Events only for what changed. (Nodes without a kubelet go
        # NotReady after a while when the e2e controllers run: that is a change, and is told.)
        mark = audit_log.mark()
        events_before = policy_events(core, name)
        assert 1 <= len(events_before) <= min(skewed, 5), events_before  # aggregated
        keys_before = violation_keys(status_of(custom, name))
        before = rss_samples(op.proc.pid, 4)
        wait_scans(custom, name, 2)
        assert operator_lists(audit_log, mark) == []
        if violation_keys(status_of(custom, name)) == keys_before:
            assert policy_events(core, name) == events_before  # nothing changed, nothing said

        # A second population: memory grows by the slim records, not by raw objects. Its
        # namespaces join the policy's selector once every pod exists: scans during the
        # creation would otherwise find its workloads half made (transient violations, Events
        # as many as the scans that fell in it, which the machine's speed decides).
        populations.append(populate(api_client, NODES, PODS, prefix=f"s2{suffix}"))
        for ns in populations[1].namespaces:
            core.patch_namespace(ns, {"metadata": {"labels": labels}})
        wait_scans(custom, name, 2)  # both after every pod was created: the cache holds them
        after = rss_samples(op.proc.pid, 4)
        per_pod_kb = (after - before) * 1024 / PODS
        print(f"operator RSS {before:.0f} -> {after:.0f} MB: {per_pod_kb:.1f} KB per pod added")
        assert per_pod_kb < MAX_KB_PER_POD, (before, after)
        # Its new violations are told, never more Events than changes (one per violation while
        # a scan finds few, one for all when it finds many; the old operator posted one per
        # violation in every scan whose status did not list it).
        after_events = policy_events(core, name)
        new_events = [text for key, text in after_events.items() if key not in events_before]
        assert any(f"s2{suffix}" in text for text in new_events), new_events
        assert len(new_events) <= skewed, new_events
        assert op.alive
        # Nothing per object in the log, even at DEBUG (-v): no line names a pod or node here.
        objects = (f"s1{suffix}", f"s2{suffix}")  # the prefix of every namespace, node and pod
        per_object = [line for line in op.text().splitlines() if any(o in line for o in objects)]
        assert per_object == [], per_object[:20]
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)


def rss_samples(pid: int, count: int) -> float:
    samples = []
    for _ in range(count):
        samples.append(rss_mb(pid))
        time.sleep(0.5)
    return statistics.median(samples)
