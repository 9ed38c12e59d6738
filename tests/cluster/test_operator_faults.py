"""Enforce acts only on fresh state (issue 20), on the real control plane, counted from the API
server's audit log: the API server paused in the middle of an Enforce scan; the operator paused
while nodes and workloads change; two Enforce policies over one namespace, deleted and one
recreated; a deleted policy's metric series.

The operator runs with short bounds (request timeout 2 s, scan deadline 10 s, plans acted on
for 8 s, pauses noticed after 3 s), so that "longer than the request timeout" and "several
minutes" (several times every bound) take seconds. Each eviction is recorded in the eviction
ledger (the ConfigMap respread-system/respread-evictions) before it is sent, with when its plan
was made: that says which plan every eviction in the audit log came from.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from kube_harness import AuditLog, ControlPlane, free_port
from kube_helpers import (
    GROUP,
    PLURAL,
    VERSION,
    FakeNodes,
    evictions,
    list_pods,
    parse_time,
    spread_deployment,
    status_of,
    wait_for,
    wait_pods_ready,
)
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from test_operator_resilience import ReadinessResync

if TYPE_CHECKING:
    from operator_fixtures import OperatorProcess, StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]

FAST = (
    "--connect-timeout", "1s",
    "--request-timeout", "2s",
    "--scan-deadline", "10s",
    "--plan-max-age", "8s",
    "--catch-up", "6s",
    "--pause-threshold", "3s",
)  # fmt: skip
WORKLOADS = ("web-a", "web-b", "web-c")
LEDGER_NS, LEDGER = "respread-system", "respread-evictions"


# --------------------------------------------------------------------------- helpers


def policy_body(name: str, namespace: str, cooldown: str = "10m") -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "RebalancePolicy",
        "metadata": {"name": name},
        "spec": {
            "mode": "Enforce",
            "schedule": {"interval": "10s"},
            "selector": {"namespaces": {"include": [namespace]}},
            "eviction": {"minPodAge": "0s", "cooldown": cooldown, "maxPerWorkload": 1},
        },
    }


@contextlib.contextmanager
def policies(custom: client.CustomObjectsApi, *bodies: dict[str, Any]) -> Iterator[None]:
    for body in bodies:
        custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, body)
    try:
        yield
    finally:
        for body in bodies:
            with contextlib.suppress(ApiException):
                custom.delete_cluster_custom_object(
                    GROUP, VERSION, PLURAL, body["metadata"]["name"]
                )


def skewed_workloads(
    core: client.CoreV1Api, apps: client.AppsV1Api, nodes: FakeNodes, namespace: str
) -> None:
    """Three Deployments of 6 pods spread 3/3 over zones b and c; then zone a's nodes come:
    each is 0/3/3 (skew 3), one eviction apiece away from better."""
    nodes.create_zones({"zone-b": 2, "zone-c": 2})
    for name in WORKLOADS:
        apps.create_namespaced_deployment(
            namespace, spread_deployment(name, 6, node_selector=nodes.node_selector)
        )
    for name in WORKLOADS:
        wait_pods_ready(core, namespace, f"app={name}", 6, timeout=180)
    nodes.create_zones({"zone-a": 2})
    for i in range(2):
        nodes.wait_ready(f"{nodes.pool}-zone-a-{i}")


def workload_of(event: dict[str, Any]) -> str:
    """web-a-<replicaset hash>-<pod suffix> -> web-a."""
    return str(event["objectRef"]["name"]).rsplit("-", 2)[0]


def evicted(audit: AuditLog, since: int, namespace: str) -> list[dict[str, Any]]:
    return [e for e in evictions(audit, since, namespace) if e["responseStatus"]["code"] == 201]


def ledger_entries(core: client.CoreV1Api) -> dict[str, dict[str, Any]]:
    """The eviction ledger's entries by pod name."""
    try:
        data = core.read_namespaced_config_map(LEDGER, LEDGER_NS).data or {}
    except ApiException as err:
        if err.status == 404:
            return {}
        raise
    return {e["pod"]: e for raw in data.values() for e in json.loads(raw)}


def received(event: dict[str, Any]) -> float:
    return parse_time(event["requestReceivedTimestamp"])


def status_writes(audit: AuditLog, since: int, policy: str) -> list[dict[str, Any]]:
    return [
        e
        for e in audit.events(since)
        if e.get("stage") == "ResponseComplete"
        and e.get("objectRef", {}).get("resource") == PLURAL
        and e.get("objectRef", {}).get("subresource") == "status"
        and e.get("objectRef", {}).get("name") == policy
        and e.get("verb") in ("patch", "update")
    ]


def succeeded(write: dict[str, Any]) -> bool:
    status = ((write.get("requestObject") or {}).get("status")) or {}
    return any(
        c.get("type") == "ScanSucceeded" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=3) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except OSError:
        return 0


def series_of(port: int, policy: str) -> list[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return [line for line in text.splitlines() if f'policy="{policy}"' in line]


def pause_process(op: OperatorProcess) -> None:
    os.kill(op.proc.pid, signal.SIGSTOP)


def resume_process(op: OperatorProcess) -> None:
    os.kill(op.proc.pid, signal.SIGCONT)


# --------------------------------------------------------------------------- the API server paused


@pytest.mark.parametrize("pause", [6.0, 40.0], ids=["past-the-request-timeout", "many-deadlines"])
def test_an_api_server_paused_during_an_enforce_scan_gets_no_eviction_from_the_old_plan(
    e2e_cluster: ControlPlane,
    operator_factory: StartOperator,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    audit_log: AuditLog,
    pause: float,
) -> None:
    """The Enforce scan plans three evictions; kube-apiserver is stopped (SIGSTOP) as soon as
    the first is made, for longer than a request's timeout, and (second case) for four times
    the scan's deadline. The scan stops at its next request: nothing it planned is sent while
    the server is stopped, so nothing of it is carried out when the server resumes. Every
    eviction after the resumption comes from a plan made after it; none is refused (the pod
    gone or changed); no workload loses more than maxPerWorkload (1) within its cooldown; no
    status written after the resumption says that a scan begun before the pause succeeded.
    Readiness fails while the server is away (the second case) and comes back; liveness
    stays: no scan is stuck."""
    custom = client.CustomObjectsApi(api_client)
    skewed_workloads(core_v1, apps_v1, fake_nodes, namespace)
    ready_url = f"http://127.0.0.1:{free_port()}/readyz"
    live_url = f"http://127.0.0.1:{free_port()}/healthz"
    op = operator_factory(*FAST, "--readiness", ready_url, "--liveness", live_url)
    wait_for(lambda: http_status(ready_url) == 200, 90, "the operator to be ready")
    mark = audit_log.mark()
    name = f"rbp-{namespace}"
    apiserver = e2e_cluster.components["kube-apiserver"]
    # (The pause disturbs the harness: kwok's nodes may go NotReady for a while after it, and a
    # kubelet would report its pods Ready again; ReadinessResync does.)
    kubelet = ReadinessResync(e2e_cluster.kubeconfig, namespace, fake_nodes.node_selector)
    with kubelet, policies(custom, policy_body(name, namespace)):
        first = wait_for(lambda: evicted(audit_log, mark, namespace), 120, "a first eviction")
        apiserver.pause()
        paused_at = time.time()
        readiness: set[int] = set()
        liveness: set[int] = set()
        try:
            while time.time() < paused_at + pause:
                readiness.add(http_status(ready_url))
                liveness.add(http_status(live_url))
                time.sleep(0.5)
        finally:
            apiserver.resume()
        resumed_at = time.time()
        assert op.alive, op.text()[-3000:]

        def all_evicted() -> bool:
            return {workload_of(e) for e in evicted(audit_log, mark, namespace)} == set(WORKLOADS)

        wait_for(all_evicted, 150, "one eviction from each workload")
        time.sleep(12)  # another scan: nothing more is evicted (cooldown)
        entries = ledger_entries(core_v1)

    done = evictions(audit_log, mark, namespace)
    report = [(e["objectRef"]["name"], e["requestReceivedTimestamp"], e["responseStatus"]["code"])
              for e in done]  # fmt: skip
    assert workload_of(first[0]) in WORKLOADS
    assert all(received(e) < paused_at or received(e) >= resumed_at - 0.2 for e in done), report
    after = [e for e in done if received(e) >= resumed_at - 0.2]
    for e in after:
        pod = e["objectRef"]["name"]
        assert e["responseStatus"]["code"] == 201, ("acted on state that no longer held", report)
        assert pod in entries, (pod, entries)
        planned = parse_time(entries[pod]["planned"])
        assert planned >= resumed_at - 0.5, ("an eviction from a plan made before the resume",
                                             pod, planned, resumed_at, report)  # fmt: skip
    per_workload = Counter(workload_of(e) for e in done if e["responseStatus"]["code"] == 201)
    assert per_workload == dict.fromkeys(WORKLOADS, 1), report

    # No scan begun before the pause is reported as a success after it.
    for write in status_writes(audit_log, mark, name):
        if received(write) >= resumed_at - 0.2 and succeeded(write):
            started = parse_time(write["requestObject"]["status"]["lastScanTime"])
            assert started >= paused_at - 1, (started, paused_at)
    assert liveness == {200}, liveness
    if pause > 20:
        assert 503 in readiness, readiness
    wait_for(lambda: http_status(ready_url) == 200, 60, "readiness after the resumption")
    text = op.text()
    assert "not made" in text or "failed" in text, text[-3000:]


# --------------------------------------------------------------------------- the operator paused


def test_an_operator_paused_while_nodes_and_workloads_change_acts_on_none_of_the_old_state(
    e2e_cluster: ControlPlane,
    operator_factory: StartOperator,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    audit_log: AuditLog,
) -> None:
    """A balanced namespace (web 12 pods and api 6, spread over zones a, b, c) under an Enforce
    policy. The operator is stopped (SIGSTOP) for 25 s while zone a is emptied (its nodes
    deleted, api's pods there replaced in zones b and c) and web is scaled from 12 to 0. When it
    resumes, its watches still hold the old cluster and a scan is due at once: it notices the
    pause and plans from a verified cache, so it finds nothing to do: no eviction, no violation
    told, every status written after the resumption balanced."""
    custom = client.CustomObjectsApi(api_client)
    fake_nodes.create_zones({"zone-a": 2, "zone-b": 2, "zone-c": 2})
    for app, replicas in (("web", 12), ("api", 6)):
        apps_v1.create_namespaced_deployment(
            namespace, spread_deployment(app, replicas, node_selector=fake_nodes.node_selector)
        )
    wait_pods_ready(core_v1, namespace, "app=web", 12, timeout=180)
    wait_pods_ready(core_v1, namespace, "app=api", 6, timeout=180)
    op = operator_factory(*FAST)
    name = f"rbp-{namespace}"
    with policies(custom, policy_body(name, namespace, cooldown="1s")):

        def scanned_balanced() -> bool:
            st = status_of(custom, name)
            return bool(st.get("lastScanTime")) and st["summary"]["violations"] == 0

        wait_for(scanned_balanced, 120, "a first scan, balanced")
        mark = audit_log.mark()
        pause_process(op)
        paused_at = time.monotonic()
        try:
            apps_v1.patch_namespaced_deployment_scale(name="web", namespace=namespace,
                                                      body={"spec": {"replicas": 0}})  # fmt: skip
            zone_a = [f"{fake_nodes.pool}-zone-a-{i}" for i in range(2)]
            for node in zone_a:
                fake_nodes.delete(node, wait=False)
            for pod in list_pods(core_v1, namespace, "app=api"):
                if pod.spec.node_name in zone_a:
                    core_v1.delete_namespaced_pod(pod.metadata.name, namespace,
                                                  grace_period_seconds=0)  # fmt: skip
            wait_pods_ready(core_v1, namespace, "app=api", 6, timeout=120)
            wait_for(lambda: not list_pods(core_v1, namespace, "app=web"), 120, "web gone")
            time.sleep(max(0.0, 25 - (time.monotonic() - paused_at)))
        finally:
            resume_process(op)
        resumed_at = time.time()
        time.sleep(30)  # three scan intervals
        assert op.alive, op.text()[-3000:]
        writes = [w for w in status_writes(audit_log, mark, name) if "summary" in
                  ((w.get("requestObject") or {}).get("status") or {})]  # fmt: skip

    done = evictions(audit_log, mark, namespace)
    assert done == [], [(e["objectRef"]["name"], e["responseStatus"]["code"]) for e in done]
    summaries = [w["requestObject"]["status"]["summary"] for w in writes]
    assert summaries, "no status written after the resumption"
    assert all(s["violations"] == 0 for s in summaries), summaries
    told = [
        e
        for e in core_v1.list_namespaced_event(
            "default", field_selector=f"involvedObject.name={name}"
        ).items
        if e.reason in ("ViolationFound", "ViolationsFound")
        and e.last_timestamp is not None
        and e.last_timestamp.timestamp() >= resumed_at - 1
    ]
    assert told == [], [(e.reason, e.message) for e in told]
    assert "the process was paused" in op.text()


# --------------------------------------------------------------------------- overlapping policies


def test_overlapping_policies_and_a_recreated_one_never_exceed_max_per_workload_in_a_cooldown(
    e2e_cluster: ControlPlane,
    operator_factory: StartOperator,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    audit_log: AuditLog,
) -> None:
    """Two Enforce policies over one namespace (cooldown 5m, maxPerWorkload 1) and three
    workloads that each need more than one move: each workload loses exactly one pod, not one
    per policy. Both policies are then deleted and one is recreated at once: still no second
    eviction within the cooldown (the ledger outlives the policies). The deleted policies leave
    no metric series behind."""
    custom = client.CustomObjectsApi(api_client)
    skewed_workloads(core_v1, apps_v1, fake_nodes, namespace)
    port = free_port()
    op = operator_factory(*FAST, "--metrics-port", str(port))
    mark = audit_log.mark()
    blue, green = f"blue-{namespace}", f"green-{namespace}"
    bodies = [policy_body(n, namespace, cooldown="5m") for n in (blue, green)]
    with policies(custom, *bodies):

        def all_evicted() -> bool:
            return {workload_of(e) for e in evicted(audit_log, mark, namespace)} == set(WORKLOADS)

        wait_for(all_evicted, 150, "one eviction from each workload")
        for policy in (blue, green):
            t = time.time()
            wait_for(lambda p=policy, t=t: parse_time(status_of(custom, p).get("lastScanTime") or
                     "1970-01-01T00:00:00Z") > t, 60, f"another scan of {policy}")  # fmt: skip
        assert series_of(port, blue) and series_of(port, green)
    # Both deleted (the context's end): neither leaves a series behind.
    wait_for(lambda: not series_of(port, blue) and not series_of(port, green), 60,
             "the deleted policies' series to go")  # fmt: skip
    with policies(custom, policy_body(blue, namespace, cooldown="5m")):
        recreated = time.time()

        def scanned_twice() -> bool:
            last = status_of(custom, blue).get("lastScanTime")
            return bool(last) and parse_time(last) > recreated + 10

        wait_for(scanned_twice, 90, "two scans of the recreated policy")
        plan = status_of(custom, blue).get("plan") or []
    done = evicted(audit_log, mark, namespace)
    per_workload = Counter(workload_of(e) for e in done)
    assert per_workload == dict.fromkeys(WORKLOADS, 1), [
        (e["objectRef"]["name"], e["requestReceivedTimestamp"]) for e in done
    ]
    assert any("cooldown: RebalancePolicy" in step.get("reason", "") for step in plan), plan
    assert op.alive
