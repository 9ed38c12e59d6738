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
from kube_harness import free_port
from kube_helpers import (
    AT_ONCE,
    LEASE,
    LEASE_NS,
    TWO_PER_ZONE,
    forget_lease,
    lease_holder,
    parse_time,
    pod_is_ready,
    pods_per_zone,
    skew,
    status_writes,
    wait_for,
)
from kubernetes import client
from scene import Scene

if TYPE_CHECKING:
    from operator_fixtures import StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]

LEASE_DURATION = 6.0


def replica(event: dict[str, Any]) -> str:
    """The identity in `respread/<identity>`, or '' for any other client."""
    agent = str(event.get("userAgent") or "")
    return agent.removeprefix("respread/") if agent.startswith("respread/") else ""


def leader_metric(port: int) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("respread_leader "):
                return float(line.split()[1])
    return None


def lease_requests(scene: Scene, mark: int, identity: str, verbs: tuple[str, ...]) -> list[float]:
    """When the API server received ``identity``'s requests of ``verbs`` on the operator's
    Lease that it answered with success (2xx) since the audit mark, in log order."""
    return [
        parse_time(e["requestReceivedTimestamp"])
        for e in scene.audit.events(mark)
        if e.get("stage") == "ResponseComplete"
        and replica(e) == identity
        and e.get("verb") in verbs
        and e.get("objectRef", {}).get("resource") == "leases"
        and e.get("objectRef", {}).get("namespace") == LEASE_NS
        and e.get("objectRef", {}).get("name") == LEASE
        and 200 <= (e.get("responseStatus") or {}).get("code", 0) < 300
    ]


def assert_each_acted_only_while_leading(
    scene: Scene, mark: int, name: str, first: tuple[str, float], second: tuple[str, float]
) -> None:
    """Two evictions in all, no pod twice; every eviction request and status write made by the
    first leader while it lived (until it was killed), or by the second after the API server
    received its write taking the Lease over (``took_over``, from the audit log)."""
    (first_id, killed), (second_id, took_over) = first, second
    done = [e for e in scene.evictions(mark) if e["responseStatus"]["code"] == 201]
    report = [(replica(e), e["objectRef"]["name"], e["requestReceivedTimestamp"]) for e in done]
    assert len(done) == 2, report
    assert all(n == 1 for n in Counter(e["objectRef"]["name"] for e in done).values()), report
    for e in scene.evictions(mark):  # every request, whatever its answer
        at = parse_time(e["requestReceivedTimestamp"])
        who = replica(e)
        assert who in (first_id, second_id), report
        # the first leader only while it lived; the second only once it held the Lease
        assert (who == first_id and at < killed) or (who == second_id and at > took_over), (
            who,
            at,
            killed,
            took_over,
            report,
        )
    writes = status_writes(scene.audit, mark, name)
    for e in writes:
        at = parse_time(e["requestReceivedTimestamp"])
        assert (replica(e) == first_id and at < killed) or (
            replica(e) == second_id and at > took_over
        ), (replica(e), at, killed, took_over)
    assert any(replica(e) == second_id for e in writes), "the new leader wrote no status"


def test_one_replica_acts_and_a_killed_leader_is_replaced_within_the_lease_duration(
    scene: Scene, operator_factory: StartOperator
) -> None:
    """Two replicas elect one leader; only it writes the Enforce policy's status and evicts.
    A 0/3/3 skew needs two moves: the leader makes the first, then is killed (SIGKILL: no
    release). The follower takes the Lease over one lease duration later (not before) and makes
    the second move; no pod is evicted twice and no replica evicts while the other leads."""
    coordination = client.CoordinationV1Api(scene.api)
    forget_lease(coordination)

    node_zones = scene.zones(TWO_PER_ZONE)
    scene.deploy("web", 9)
    scene.budget("web", max_unavailable=1)
    scene.ready("web", 9, timeout=180)

    def in_zone_a(pod: client.V1Pod) -> bool:  # the scale-down removes them: 0/3/3
        return node_zones[pod.spec.node_name] == "zone-a"

    survivors = scene.scale_in("web", 6, in_zone_a, timeout=180)
    assert pods_per_zone(survivors, node_zones) == {"zone-a": 0, "zone-b": 3, "zone-c": 3}

    ports = {"op-a": free_port(), "op-b": free_port()}
    elected = scene.audit.mark()  # (identities are reused by other tests)
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
    first = wait_for(lambda: lease_holder(coordination), 60, "a replica to acquire the Lease")
    second = next(i for i in ops if i != first)
    assert wait_for(lambda: leader_metric(ports[first]) == 1, 30, "respread_leader 1")
    assert wait_for(lambda: leader_metric(ports[second]) == 0, 30, "respread_leader 0")

    mark = scene.audit.mark()
    name = f"rbp-{scene.namespace}"
    with scene.rebalancing(name, mode="Enforce", eviction=AT_ONCE):
        done = wait_for(
            lambda: [e for e in scene.evictions(mark) if e["responseStatus"]["code"] == 201],
            90,
            "the leader's first eviction",
        )
        assert {replica(e) for e in done} == {first}, [replica(e) for e in done]
        # (the scan that evicted writes its status afterwards)
        writes = wait_for(lambda: status_writes(scene.audit, mark, name), 30, "a status write")
        assert {replica(e) for e in writes} == {first}, Counter(replica(e) for e in writes)
        assert lease_holder(coordination) == first

        ops[first].kill()
        killed = time.time()
        wait_for(
            lambda: lease_holder(coordination) == second,
            LEASE_DURATION + 20,
            f"{second} to take the Lease over",
        )
        # Timed from the audit log, not from the kill and this test's polling: the follower
        # counts the lease duration from when it saw the last renewal, and a leader busy with
        # its scan on a loaded machine may have renewed last well before it was killed.
        renewed = max(lease_requests(scene, elected, first, ("create", "update")))
        took_over = lease_requests(scene, elected, second, ("create", "update"))[0]
        # Not before the Lease expired: the last renewal was stored before the follower could
        # see it, and it writes only once the record has stayed unchanged for the duration.
        print(f"{second} took over {took_over - renewed:.1f}s after {first}'s last renewal, "
              f"{took_over - killed:.1f}s after the kill")  # fmt: skip
        assert took_over - renewed >= LEASE_DURATION, (renewed, took_over)
        # And not much later than the kill (a retry period to see the last renewal, the
        # duration, a retry period to notice it expired, and time for a loaded machine).
        assert took_over - killed <= LEASE_DURATION + 5, took_over - killed
        assert wait_for(lambda: leader_metric(ports[second]) == 1, 30, "respread_leader 1")

        def converged() -> bool:
            ready = [p for p in scene.pods("web") if pod_is_ready(p)]
            return len(ready) == 6 and skew(pods_per_zone(ready, node_zones)) <= 1

        wait_for(converged, 180, "the new leader to finish the rebalancing")
        balanced = time.time()

        def scanned_balanced() -> bool:  # a whole scan after convergence: nothing more to do
            st = scene.status(name)
            last = st.get("lastScanTime")
            return (
                bool(last) and parse_time(last) > balanced + 1 and st["summary"]["violations"] == 0
            )

        wait_for(scanned_balanced, 60, "a scan reporting the workload balanced")

    assert_each_acted_only_while_leading(scene, mark, name, (first, killed), (second, took_over))
    assert ops[second].alive
    assert f"acquired Lease {LEASE_NS}/{LEASE}" in ops[second].text()

    # A clean shutdown (SIGTERM) releases the Lease, for a fast failover.
    ops[second].stop()
    assert ops[second].proc.returncode in (0, -15)
    lease = coordination.read_namespaced_lease(LEASE, LEASE_NS)
    assert lease.spec.holder_identity in (None, ""), lease.spec
    assert f"released Lease {LEASE_NS}/{LEASE}" in ops[second].text()


def test_a_leader_paused_past_its_lease_hands_over_and_names_no_stale_holder(
    scene: Scene, operator_factory: StartOperator
) -> None:
    """The leader's process is stopped (SIGSTOP) for twice the lease duration: the other
    replica takes the Lease over. When the old leader resumes, it stops leading at once (its
    renewals lapsed on its own clock), writes nothing more, and its log does not claim the
    Lease is now held by itself; then it follows the new leader."""
    coordination = client.CoordinationV1Api(scene.api)
    forget_lease(coordination)
    ops = {
        identity: operator_factory(
            "--leader-elect", "--lease-duration", f"{LEASE_DURATION:g}s", "--identity", identity,
            "--pause-threshold", "2s",
        )
        for identity in ("pa", "pb")
    }  # fmt: skip
    first = wait_for(lambda: lease_holder(coordination), 60, "a replica to acquire the Lease")
    second = next(i for i in ops if i != first)
    paused = ops[first]
    # The Lease names it as soon as the API server has stored the write; it leads once the
    # answer arrived (an answer after a pause past the renew deadline does not make it lead).
    wait_for(lambda: f"{first} leads" in paused.text(), 30, f"{first} to lead")
    paused.proc.send_signal(signal.SIGSTOP)
    try:
        wait_for(lambda: lease_holder(coordination) == second, LEASE_DURATION + 20, "the takeover")
        time.sleep(LEASE_DURATION)  # well past the lease
    finally:
        paused.proc.send_signal(signal.SIGCONT)
    resumed = time.time()
    mark = scene.audit.mark()

    def lapsed() -> bool:
        return f"{first} stopped leading" in paused.text()

    wait_for(lapsed, 20, "the old leader to notice it no longer leads")

    def read_again() -> bool:  # twice: what it did with the first read has been done
        reads = lease_requests(scene, mark, first, ("get",))
        return len([t for t in reads if t >= resumed]) >= 2

    wait_for(read_again, 30, f"{first} to read the Lease again, twice")
    assert lease_holder(coordination) == second
    lines = [line for line in paused.text().splitlines() if "stopped leading" in line]
    assert all(f"now held by {first}" not in line for line in lines), lines
    writes = [
        e
        for e in scene.audit.events(mark)
        if e.get("stage") == "ResponseComplete"
        and replica(e) == first
        and e.get("verb") in ("create", "update", "patch")
        and parse_time(e["requestReceivedTimestamp"]) >= resumed
        and e.get("objectRef", {}).get("resource") != "events"
    ]
    assert writes == [], [(e["verb"], e["objectRef"], e["responseStatus"]) for e in writes]
    assert paused.alive and ops[second].alive
