"""Leader election on the real control plane: two `respread run --leader-elect` processes (as
the operator's service account, with deploy/'s RBAC), one Lease, one actor.

Every request of the operator names its replica in the User-Agent (`respread/<identity>`), so
the API server's audit log says which replica wrote each status and made each eviction.
"""

from __future__ import annotations

import signal
import time
import urllib.request
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from kube_harness import AuditLog, ControlPlane, free_port
from kube_helpers import (
    DELETION_COST,
    GROUP,
    PLURAL,
    VERSION,
    FakeNodes,
    evictions,
    list_pods,
    parse_time,
    pod_is_ready,
    pods_per_zone,
    skew,
    spread_deployment,
    wait_for,
    wait_pods_ready,
    zone_of_nodes,
)
from kubernetes import client
from kubernetes.client.exceptions import ApiException

if TYPE_CHECKING:
    from operator_fixtures import StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]

ZONES = {"zone-a": 2, "zone-b": 2, "zone-c": 2}
LEASE_NS, LEASE = "respread-system", "respread"  # deploy/'s Role allows this Lease only
LEASE_DURATION = 6.0


def holder(coordination: client.CoordinationV1Api) -> str:
    try:
        lease = coordination.read_namespaced_lease(LEASE, LEASE_NS)
    except ApiException as err:
        if err.status == 404:
            return ""
        raise
    return str(lease.spec.holder_identity or "")


def replica(event: dict[str, Any]) -> str:
    """The identity in `respread/<identity>`, or '' for any other client."""
    agent = str(event.get("userAgent") or "")
    return agent.removeprefix("respread/") if agent.startswith("respread/") else ""


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


def leader_metric(port: int) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("respread_leader "):
                return float(line.split()[1])
    return None


def test_one_replica_acts_and_a_killed_leader_is_replaced_within_the_lease_duration(
    e2e_cluster: ControlPlane,
    operator_factory: StartOperator,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    policy_v1: client.PolicyV1Api,
    audit_log: AuditLog,
) -> None:
    """Two replicas elect one leader; only it writes the Enforce policy's status and evicts.
    A 0/3/3 skew needs two moves: the leader makes the first, then is killed (SIGKILL: no
    release). The follower takes the Lease over one lease duration later (not before) and makes
    the second move; no pod is evicted twice and no replica evicts while the other leads."""
    custom = client.CustomObjectsApi(api_client)
    coordination = client.CoordinationV1Api(api_client)
    try:  # a Lease left by an earlier test would hold a dead identity for one duration
        coordination.delete_namespaced_lease(LEASE, LEASE_NS)
    except ApiException as err:
        if err.status != 404:
            raise

    fake_nodes.create_zones(ZONES)
    node_zones = zone_of_nodes(core_v1, fake_nodes.node_selector)
    apps_v1.create_namespaced_deployment(
        namespace, spread_deployment("web", 9, node_selector=fake_nodes.node_selector)
    )
    policy_v1.create_namespaced_pod_disruption_budget(
        namespace,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    pods = wait_pods_ready(core_v1, namespace, "app=web", 9, timeout=180)
    for pod in pods:  # scale-down removes zone-a's three pods: 0/3/3
        cost = "-100" if node_zones[pod.spec.node_name] == "zone-a" else "100"
        core_v1.patch_namespaced_pod(
            pod.metadata.name, namespace, {"metadata": {"annotations": {DELETION_COST: cost}}}
        )
    apps_v1.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 6}})
    survivors = wait_pods_ready(core_v1, namespace, "app=web", 6, timeout=180)
    assert pods_per_zone(survivors, node_zones) == {"zone-a": 0, "zone-b": 3, "zone-c": 3}

    ports = {"op-a": free_port(), "op-b": free_port()}
    ops = {
        identity: operator_factory(
            "--leader-elect",
            "--lease-duration",
            f"{LEASE_DURATION:g}s",
            "--identity",
            identity,
            "--metrics-port",
            str(port),
        )
        for identity, port in ports.items()
    }
    first = wait_for(lambda: holder(coordination), 60, "a replica to acquire the Lease")
    second = next(i for i in ops if i != first)
    assert wait_for(lambda: leader_metric(ports[first]) == 1, 30, "respread_leader 1")
    assert wait_for(lambda: leader_metric(ports[second]) == 0, 30, "respread_leader 0")

    mark = audit_log.mark()
    name = f"rbp-{namespace}"
    custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        PLURAL,
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "RebalancePolicy",
            "metadata": {"name": name},
            "spec": {
                "mode": "Enforce",
                "schedule": {"interval": "10s"},
                "selector": {"namespaces": {"include": [namespace]}},
                "eviction": {"minPodAge": "0s", "cooldown": "1s"},
            },
        },
    )
    try:
        done = wait_for(
            lambda: [e for e in evictions(audit_log, mark, namespace)
                     if e["responseStatus"]["code"] == 201],
            90,
            "the leader's first eviction",
        )  # fmt: skip
        assert {replica(e) for e in done} == {first}, [replica(e) for e in done]
        # (the scan that evicted writes its status afterwards)
        writes = wait_for(lambda: status_writes(audit_log, mark, name), 30, "a status write")
        assert {replica(e) for e in writes} == {first}, Counter(replica(e) for e in writes)
        assert holder(coordination) == first

        ops[first].kill()
        killed = time.time()
        took_over = wait_for(
            lambda: holder(coordination) == second and time.time(),
            LEASE_DURATION + 20,
            f"{second} to take the Lease over",
        )
        # Not before the Lease expired (counted from the last renewal the follower saw, which
        # was at most a retry period, 0.8 s, before the kill), and not much later.
        assert LEASE_DURATION - 2 <= took_over - killed <= LEASE_DURATION + 5, took_over - killed
        assert wait_for(lambda: leader_metric(ports[second]) == 1, 30, "respread_leader 1")

        def converged() -> bool:
            ready = [p for p in list_pods(core_v1, namespace, "app=web") if pod_is_ready(p)]
            return len(ready) == 6 and skew(pods_per_zone(ready, node_zones)) <= 1

        wait_for(converged, 180, "the new leader to finish the rebalancing")
        balanced = time.time()

        def scanned_balanced() -> bool:  # a whole scan after convergence: nothing more to do
            st = (custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)).get("status")
            last = (st or {}).get("lastScanTime")
            return (
                bool(last) and parse_time(last) > balanced + 1 and st["summary"]["violations"] == 0
            )

        wait_for(scanned_balanced, 60, "a scan reporting the workload balanced")
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)

    done = [e for e in evictions(audit_log, mark, namespace) if e["responseStatus"]["code"] == 201]
    report = [(replica(e), e["objectRef"]["name"], e["requestReceivedTimestamp"]) for e in done]
    assert len(done) == 2, report
    assert all(n == 1 for n in Counter(e["objectRef"]["name"] for e in done).values()), report
    for e in evictions(audit_log, mark, namespace):  # every request, whatever its answer
        at = parse_time(e["requestReceivedTimestamp"])
        who = replica(e)
        assert who in (first, second), report
        # the first leader only while it lived; the second only once it held the Lease
        assert (who == first and at < killed) or (who == second and at >= took_over - 1), (
            who,
            at,
            killed,
            took_over,
            report,
        )
    writes = status_writes(audit_log, mark, name)
    for e in writes:
        at = parse_time(e["requestReceivedTimestamp"])
        assert (replica(e) == first and at < killed) or (
            replica(e) == second and at >= took_over - 1
        ), (replica(e), at, killed, took_over)
    assert any(replica(e) == second for e in writes), "the new leader wrote no status"
    assert ops[second].alive
    assert f"acquired Lease {LEASE_NS}/{LEASE}" in ops[second].text()

    # A clean shutdown (SIGTERM) releases the Lease, for a fast failover.
    ops[second].stop()
    assert ops[second].proc.returncode in (0, -15)
    lease = coordination.read_namespaced_lease(LEASE, LEASE_NS)
    assert lease.spec.holder_identity in (None, ""), lease.spec
    assert f"released Lease {LEASE_NS}/{LEASE}" in ops[second].text()


def test_a_leader_paused_past_its_lease_hands_over_and_names_no_stale_holder(
    e2e_cluster: ControlPlane,
    operator_factory: StartOperator,
    api_client: client.ApiClient,
    audit_log: AuditLog,
) -> None:
    """The leader's process is stopped (SIGSTOP) for twice the lease duration: the other
    replica takes the Lease over. When the old leader resumes, it stops leading at once (its
    renewals lapsed on its own clock), writes nothing more, and its log does not claim the
    Lease is now held by itself; then it follows the new leader."""
    coordination = client.CoordinationV1Api(api_client)
    try:
        coordination.delete_namespaced_lease(LEASE, LEASE_NS)
    except ApiException as err:
        if err.status != 404:
            raise
    ops = {
        identity: operator_factory(
            "--leader-elect", "--lease-duration", f"{LEASE_DURATION:g}s", "--identity", identity,
            "--pause-threshold", "2s",
        )
        for identity in ("pa", "pb")
    }  # fmt: skip
    first = wait_for(lambda: holder(coordination), 60, "a replica to acquire the Lease")
    second = next(i for i in ops if i != first)
    paused = ops[first]
    paused.proc.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: holder(coordination) == second, LEASE_DURATION + 20, "the takeover")
        time.sleep(LEASE_DURATION)  # well past the lease
    finally:
        paused.proc.send_signal(signal.SIGCONT)
    resumed = time.time()
    mark = audit_log.mark()

    def lapsed() -> bool:
        return f"{first} stopped leading" in paused.text()

    wait_for(lapsed, 20, "the old leader to notice it no longer leads")
    time.sleep(2 * LEASE_DURATION / 15 * 3)  # a few retry periods: it reads the Lease again
    assert holder(coordination) == second
    lines = [line for line in paused.text().splitlines() if "stopped leading" in line]
    assert all(f"now held by {first}" not in line for line in lines), lines
    writes = [
        e
        for e in audit_log.events(mark)
        if e.get("stage") == "ResponseComplete"
        and replica(e) == first
        and e.get("verb") in ("create", "update", "patch")
        and parse_time(e["requestReceivedTimestamp"]) >= resumed
        and e.get("objectRef", {}).get("resource") != "events"
    ]
    assert writes == [], [(e["verb"], e["objectRef"], e["responseStatus"]) for e in writes]
    assert paused.alive and ops[second].alive
