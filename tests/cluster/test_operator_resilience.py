"""The operator end to end when things go wrong: a node is lost, the API server goes away and
comes back, watch streams expire and are resumed by relisting; and its liveness endpoint.

Each test runs `respread run` as a separate process against the session control plane, with
kube-controller-manager, kube-scheduler and kwok running, so pods are really garbage collected,
replaced, scheduled and made Ready.
"""

from __future__ import annotations

import contextlib
import datetime
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import pytest
import yaml
from kube_harness import ControlPlane, free_port
from kube_helpers import (
    AT_ONCE,
    GROUP,
    PLURAL,
    TWO_PER_ZONE,
    VERSION,
    create_policy,
    list_pods,
    node_is_ready,
    parse_time,
    pod_is_ready,
    pods_per_zone,
    scanned_after,
    skew,
    wait_for,
)
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from scene import Scene
from tests.support.constants import ZONE

if TYPE_CHECKING:
    from operator_fixtures import StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]  # the fixtures crd, operator and operator_factory

# --------------------------------------------------------------------------- helpers


def conditions(st: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in st.get("conditions", ())}


def violation_events(core: client.CoreV1Api, policy_name: str) -> list[client.CoreV1Event]:
    events = core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={policy_name}"
    ).items
    return [e for e in events if e.reason == "ViolationFound"]


def metric_value(port: int, name: str, policy_name: str) -> float | None:
    """One sample of the operator's Prometheus metrics, by name and policy label."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    for line in text.splitlines():
        if line.startswith(f'{name}{{policy="{policy_name}"}} '):
            return float(line.rsplit(" ", 1)[1])
    return None


def skew_by_scale_down(
    scene: Scene, node_zones: dict[str, str], drop: dict[str, int]
) -> Counter[str]:
    """9 ready pods 3/3/3; pod deletion costs make the ReplicaSet drop `drop[zone]` per zone."""
    pods = scene.ready("web", 9, timeout=180)
    by_zone: dict[str, list[str]] = {zone: [] for zone in TWO_PER_ZONE}
    for pod in pods:
        by_zone[node_zones[pod.spec.node_name]].append(pod.metadata.name)
    placed = {zone: len(names) for zone, names in by_zone.items()}
    assert placed == dict.fromkeys(TWO_PER_ZONE, 3), f"the scheduler placed {placed}"
    cheap = {name for zone, n in drop.items() for name in sorted(by_zone[zone])[:n]}
    keep = 9 - len(cheap)
    survivors = scene.scale_in("web", keep, lambda pod: pod.metadata.name in cheap, timeout=180)
    assert not {p.metadata.name for p in survivors} & cheap
    return pods_per_zone(survivors, node_zones)


def web_with_budget(scene: Scene) -> None:
    scene.deploy("web", 9)
    scene.budget("web", max_unavailable=1)


class ApiProxy:
    """A TCP relay in front of kube-apiserver (TLS passes through; the serving certificate is
    for 127.0.0.1, so it verifies). `cut()` drops every relayed connection and refuses new ones
    until `restore()`: the operator behind it loses the API server while everyone else keeps it.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.5)
        self.port = int(self.listener.getsockname()[1])
        self.open = threading.Event()
        self.open.set()
        self.closed = False
        self.lock = threading.Lock()
        self.sockets: set[socket.socket] = set()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True, name="api-proxy").start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not self.open.is_set():
                conn.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                conn.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.sockets |= {conn, upstream}
                self.accepted += 1
            for src, dst in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            self._drop(src, dst)

    def _drop(self, *socks: socket.socket) -> None:
        with self.lock:
            for s in socks:
                self.sockets.discard(s)
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def cut(self) -> None:
        self.open.clear()
        with self.lock:
            socks = list(self.sockets)
        self._drop(*socks)

    def restore(self) -> None:
        self.open.set()

    def close(self) -> None:
        self.closed = True
        self.cut()
        self.listener.close()


def kubeconfig_via(kubeconfig: Path, port: int, path: Path) -> Path:
    """`kubeconfig`, pointed at 127.0.0.1:`port` instead of the API server."""
    cfg = yaml.safe_load(kubeconfig.read_text())
    for cluster in cfg["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path.write_text(yaml.safe_dump(cfg))
    path.chmod(0o600)
    return path


class Poller:
    """Polls the API server in a thread of its own, with its own client (the kubeconfig's), for
    the block the object is entered for: ``_poll(core)`` until ``_stop`` is set."""

    kubeconfig: Path
    _stop: threading.Event

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self._run, daemon=True, name=type(self).__name__)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        api = config.new_client_from_config(config_file=str(self.kubeconfig))
        try:
            self._poll(client.CoreV1Api(api))
        finally:
            api.close()

    def _poll(self, core: client.CoreV1Api) -> None:
        raise NotImplementedError


@dataclass
class AvailabilitySampler(Poller):
    """Samples, in a thread, how many of a workload's `replicas` pods are missing or not Ready.

    Each sample is (sent, answered, missing): the state it shows held at some moment between
    the time its request was sent and the time the answer arrived."""

    kubeconfig: Path
    namespace: str
    selector: str
    replicas: int
    samples: list[tuple[float, float, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _poll(self, core: client.CoreV1Api) -> None:
        while not self._stop.is_set():
            sent = time.time()
            try:
                pods = list_pods(core, self.namespace, self.selector)
            except Exception:  # the API server is being restarted
                time.sleep(0.5)
                continue
            ready = sum(1 for p in pods if pod_is_ready(p))
            self.samples.append((sent, time.time(), self.replicas - ready))
            time.sleep(0.2)

    def missing_before(self, t: float) -> int | None:
        """Replicas missing or unready in the last sample answered before `t`."""
        before = [missing for _, answered, missing in self.samples if answered < t]
        return before[-1] if before else None

    def all_ready_between(self, start: float, end: float) -> bool:
        """Some sample sent after `start` and answered before `end` saw every replica Ready."""
        return any(
            start < sent and answered < end and missing == 0
            for sent, answered, missing in self.samples
        )


@dataclass
class ReadinessResync(Poller):
    """Stands in for the kubelet's periodic status sync, which kwok lacks.

    After kube-apiserver restarts, kwok's node leases lapse for a while (its lease cache is
    stale: 409 Conflict), kube-controller-manager marks the fake nodes NotReady and every pod on
    them NotReady. A kubelet would report its running pods Ready again at its next status sync
    once its node is back; kwok only readies a pod once (its pod-ready stage wants no podIP
    yet). So: a pod that kwok started (it has a podIP), not terminating, on a Ready node, but
    marked NotReady, is reported Ready again. Each one is recorded.
    """

    kubeconfig: Path
    namespace: str
    node_selector: dict[str, str]
    reasserted: list[tuple[float, str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _poll(self, core: client.CoreV1Api) -> None:
        selector = ",".join(f"{k}={v}" for k, v in self.node_selector.items())
        while not self._stop.wait(2.0):
            with contextlib.suppress(Exception):  # the API server may be restarting
                self._sync(core, selector)

    def _sync(self, core: client.CoreV1Api, selector: str) -> None:
        ready_nodes = {
            n.metadata.name
            for n in core.list_node(label_selector=selector).items
            if node_is_ready(n)
        }
        for pod in core.list_namespaced_pod(self.namespace).items:
            if (
                pod.metadata.deletion_timestamp is not None
                or pod.spec.node_name not in ready_nodes
                or not pod.status.pod_ip
                or pod.status.phase != "Running"
            ):
                continue
            ready = next((c for c in pod.status.conditions or () if c.type == "Ready"), None)
            if ready is None or ready.status != "False":
                continue
            now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            conditions = [
                {"type": t, "status": "True", "lastTransitionTime": now}
                for t in ("Ready", "ContainersReady")
            ]
            core.patch_namespaced_pod_status(
                pod.metadata.name, self.namespace, {"status": {"conditions": conditions}}
            )
            self.reasserted.append((time.time(), pod.metadata.name))


# --------------------------------------------------------------------------- 1. node loss


def replacements_refused(scene: Scene, on_lost: set[str]) -> list[client.V1Pod] | None:
    """The two replacements of the lost node's pods, Pending and refused by the scheduler
    (None until the lost pods are gone and both replacements are refused)."""
    current = scene.pods("web")
    if on_lost & {p.metadata.name for p in current}:
        return None
    pending = [p for p in current if not p.spec.node_name]
    unschedulable = [
        p
        for p in pending
        if any(
            c.type == "PodScheduled" and c.reason == "Unschedulable"
            for c in (p.status.conditions or [])
        )
    ]
    return unschedulable if len(current) == 6 and len(unschedulable) == 2 else None


def test_node_loss_is_reported_as_the_cause_while_the_replacements_cannot_land(
    e2e_cluster: ControlPlane, scene: Scene, operator: Path
) -> None:
    """zone-a's second node is cordoned for maintenance, so zone-a's two pods both run on its
    first node. That node is lost: the scheduler no longer counts its pods (0/2/2, skew 2),
    pod GC deletes them, and the real scheduler can place the replacements nowhere (zone-a's
    remaining node is cordoned; zones b and c would go 3 above zone-a). The DryRun policy, which
    scanned before the loss, reports the violation with cause NodeLoss naming the lost node, and
    keeps that cause on later scans; once the cordon is lifted the scheduler repairs it itself.
    """
    custom, fake_nodes = scene.custom, scene.nodes
    node_zones = scene.zones(TWO_PER_ZONE)
    lost, spare = f"{fake_nodes.pool}-zone-a-0", f"{fake_nodes.pool}-zone-a-1"
    fake_nodes.cordon(spare)
    # The scheduler places the pods from its own view of the nodes: one that has not seen the
    # cordon yet may put a pod on the spare node. It has seen it once it has seen a node
    # created after it (one watch stream, in order): the canary of await_scheduler_current.
    e2e_cluster.await_scheduler_current()
    scene.deploy("web", 6)
    pods = scene.ready("web", 6, timeout=180)
    assert pods_per_zone(pods, node_zones) == {"zone-a": 2, "zone-b": 2, "zone-c": 2}
    on_lost = {p.metadata.name for p in pods if p.spec.node_name == lost}
    assert len(on_lost) == 2
    mark = scene.audit.mark()
    name = f"rbp-{scene.namespace}"
    with scene.rebalancing(name, mode="DryRun", eviction=AT_ONCE):
        first = wait_for(lambda: scanned_after(custom, name, 0), 90, "a first scan")
        assert first["summary"]["violations"] == 0, first

        fake_nodes.delete(lost)
        lost_at = time.time()

        def reported() -> dict[str, Any] | None:
            st = scanned_after(custom, name, lost_at)
            return st if st and st["summary"]["violations"] == 1 else None

        st = wait_for(reported, 60, "the violation after the node loss")
        (v,) = st["violations"]
        assert v["workload"] == {"kind": "Deployment", "name": "web"}
        assert v["topologyKey"] == ZONE
        assert (v["skew"], v["maxSkew"]) == (2, 1), v
        assert v["domains"]["min"] == {"name": "zone-a", "pods": 0}, v
        assert v["cause"] == "NodeLoss", v
        assert lost in v["causeMessage"], v
        since = v["since"]

        # kube-controller-manager's pod GC deletes the pods of a node gone for 40 s; the
        # ReplicaSet replaces them; the scheduler refuses every node for the replacements.
        pending = wait_for(
            lambda: replacements_refused(scene, on_lost),
            180,
            "pod GC, and the replacements refused by the scheduler",
        )
        message = next(c.message for c in pending[0].status.conditions if c.type == "PodScheduled")
        assert "didn't match pod topology spread constraints" in message, message
        settled = time.time()

        st = wait_for(
            lambda: scanned_after(custom, name, settled), 60, "a scan after the replacements"
        )
        assert st["summary"]["violations"] == 1, st
        (v,) = st["violations"]
        assert (v["skew"], v["domains"]["min"]["name"]) == (2, "zone-a"), v
        assert v["cause"] == "NodeLoss", v  # still: the violation is the same one
        assert lost in v["causeMessage"], v
        assert v["since"] == since
        # No eviction can help: a replacement could only go to zone-a, whose node is cordoned.
        assert v["fixable"] is False, v
        assert st["summary"]["plannedEvictions"] == 0, st
        assert conditions(st) == {
            "Ready": "True",
            "ScanSucceeded": "True",
            "Balanced": "False",
            "InputComplete": "True",
            "PodsSelected": "True",
        }

        # The cordon lifted, the scheduler places the replacements in zone-a by itself.
        fake_nodes.uncordon(spare)
        pods = scene.ready("web", 6, timeout=120)
        assert pods_per_zone(pods, node_zones) == {"zone-a": 2, "zone-b": 2, "zone-c": 2}
        wait_for(
            lambda: scene.status(name).get("summary", {}).get("violations") == 0,
            60,
            "the status to report the workload balanced again",
        )
        assert scene.evictions(mark) == []  # DryRun


# --------------------------------------------------------------------------- 2. API server outage


def test_an_apiserver_outage_fails_scans_but_the_operator_keeps_running_and_resumes(
    e2e_cluster: ControlPlane, scene: Scene, operator_factory: StartOperator
) -> None:
    """kube-apiserver stops for longer than the scan interval, so a scan runs, and fails, while
    it is down (the failure cannot be written to a server that is down: the operator counts it
    in respread_scan_failures_total and logs it). The operator process keeps running; once the
    server is back, the next scan completes and the status says what it said before the
    outage, with the same `since`, and no second ViolationFound Event."""
    custom, core_v1 = scene.custom, scene.core
    metrics_port = free_port()
    op = operator_factory("--metrics-port", str(metrics_port))
    node_zones = scene.zones(TWO_PER_ZONE)
    web_with_budget(scene)
    scene.ready("web", 9, timeout=180)
    name = f"rbp-{scene.namespace}"
    with scene.rebalancing(name, mode="DryRun", eviction=AT_ONCE):
        wait_for(lambda: scanned_after(custom, name, 0), 90, "a first scan")
        counts = skew_by_scale_down(scene, node_zones, {"zone-a": 3, "zone-b": 2})
        assert counts == {"zone-a": 0, "zone-b": 1, "zone-c": 3}

        def reported() -> dict[str, Any] | None:
            st = scene.status(name)
            return st if st.get("summary", {}).get("violations") == 1 else None

        before = wait_for(reported, 90, "the violation in the policy status")
        (v_before,) = before["violations"]
        assert v_before["cause"] == "ScaleDown", v_before
        wait_for(lambda: len(violation_events(core_v1, name)) == 1, 30, "one ViolationFound")
        failures_before = metric_value(metrics_port, "respread_scan_failures_total", name) or 0

        e2e_cluster.stop_apiserver()
        try:
            time.sleep(25)  # more than two scan intervals
            assert op.alive, op.text()[-3000:]
            # The failed scans are counted (the metrics server does not need the API server).
            failures = metric_value(metrics_port, "respread_scan_failures_total", name) or 0
            assert failures > failures_before, op.text()[-3000:]
        finally:
            e2e_cluster.start_apiserver()
        back = time.time()
        assert f"scan of RebalancePolicy {name} failed" in op.text()

        after = wait_for(lambda: scanned_after(custom, name, back), 120, "a scan after the outage")
        assert op.alive
        # A scan that failed on the watch cache while the server came back (its watches still
        # failing) set CacheStale; a scan since says it is over (False), and stays so.
        assert conditions(after) | {"CacheStale": "False"} == {
            "Ready": "True",
            "ScanSucceeded": "True",
            "Balanced": "False",
            "CacheStale": "False",
            "InputComplete": "True",
            "PodsSelected": "True",
        }
        scan_succeeded = next(c for c in after["conditions"] if c["type"] == "ScanSucceeded")
        assert scan_succeeded["reason"] == "ScanCompleted"
        (v_after,) = after["violations"]
        # (Not `fixable`: kwok's nodes may go NotReady after an outage, see ReadinessResync,
        # and a budget with no disruption left makes the violation unfixable for a while.)
        for key in ("workload", "topologyKey", "skew", "domains", "cause", "since"):
            assert v_after[key] == v_before[key], (key, v_before, v_after)
        assert len(violation_events(core_v1, name)) == 1
        # And it goes on scanning.
        again = time.time()
        wait_for(lambda: scanned_after(custom, name, again), 60, "one more scan")
        assert op.alive


# --------------------------------------------------------------------------- 3. Enforce + restart


def test_enforce_across_an_apiserver_restart_evicts_each_pod_once_within_the_budget(
    e2e_cluster: ControlPlane, scene: Scene, operator: Path
) -> None:
    """A 0/3/3 skew needs two moves. The Enforce policy evicts the first pod; kube-apiserver is
    restarted right then; after it the operator evicts the second, and the skew converges.

    The audit log shows exactly two successful evictions, of two different pods. Each came when
    every replica was Ready (the last sample before it), so none took a second replica away
    while another was missing or unready (the budget: maxUnavailable 1); and between the two,
    the first replacement had become Ready (pacing). The restart itself disturbs the harness
    (kwok's nodes go NotReady for a while, see ReadinessResync): the operator must hold off
    while that lasts, which the same checks cover."""
    custom, namespace = scene.custom, scene.namespace
    node_zones = scene.zones(TWO_PER_ZONE)
    web_with_budget(scene)
    counts = skew_by_scale_down(scene, node_zones, {"zone-a": 3})
    assert counts == {"zone-a": 0, "zone-b": 3, "zone-c": 3}

    def budget_allows_one() -> bool:
        pdb = scene.policy.read_namespaced_pod_disruption_budget("web", namespace)
        return pdb.status is not None and pdb.status.disruptions_allowed == 1

    wait_for(budget_allows_one, 60, "the budget to allow one disruption")
    mark = scene.audit.mark()
    name = f"rbp-{namespace}"

    def evicted() -> list[dict[str, Any]]:
        return [e for e in scene.evictions(mark) if e["responseStatus"]["code"] == 201]

    def converged() -> bool:
        pods = [p for p in scene.pods("web") if pod_is_ready(p)]
        return len(pods) == 6 and skew(pods_per_zone(pods, node_zones)) <= 1

    sampler = AvailabilitySampler(e2e_cluster.kubeconfig, namespace, "app=web", 6)
    kubelet = ReadinessResync(e2e_cluster.kubeconfig, namespace, scene.nodes.node_selector)
    # The scheduler is held until the restart: the first replacement stays Pending, so the
    # budget (and the pacing) keeps the second eviction from being made before the restart,
    # however late this test gets to it after seeing the first.
    with (
        sampler,
        kubelet,
        e2e_cluster.scheduling_held() as release,
        scene.rebalancing(name, mode="Enforce", eviction=AT_ONCE),
    ):
        wait_for(evicted, 90, "the first eviction")
        e2e_cluster.restart_apiserver()
        restarted = time.time()
        release()
        wait_for(converged, 300, "the skew to converge within maxSkew")
        balanced_at = time.time()

        def reported_balanced() -> bool:
            st = scanned_after(custom, name, balanced_at)
            return st is not None and st["summary"]["violations"] == 0

        wait_for(reported_balanced, 90, "the status to report the workload balanced")
        time.sleep(12)  # one more scan: nothing else is evicted

    done = evicted()
    report = [(e["objectRef"]["name"], e["stageTimestamp"]) for e in done]
    names = Counter(e["objectRef"]["name"] for e in done)
    assert all(n == 1 for n in names.values()), report
    assert len(done) == 2, report
    received = [parse_time(e["requestReceivedTimestamp"]) for e in done]
    completed = [parse_time(e["stageTimestamp"]) for e in done]
    assert received[1] > restarted, (report, restarted)
    for at in received:
        assert sampler.missing_before(at) == 0, (report, sampler.samples[-50:])
    assert sampler.all_ready_between(completed[0], received[1]), (
        "the second eviction came before the first replacement was Ready"
    )
    pods = scene.ready("web", 6)
    assert pods_per_zone(pods, node_zones) == {"zone-a": 2, "zone-b": 2, "zone-c": 2}
    print(f"readiness re-reported for {kubelet.reasserted} after the restart")


# --------------------------------------------------------------------------- 4. watch expiry (410)


def test_a_watch_resumed_by_relisting_forgets_objects_deleted_while_it_was_away(
    e2e_cluster: ControlPlane,
    scene: Scene,
    operator_factory: StartOperator,
    tmp_path: Path,
    operator_kubeconfig: Path,
) -> None:
    """The operator reaches the API server through a relay that the test cuts. While it is cut,
    the Deployment is scaled down from 3/3/3 to 0/1/3, a second policy is deleted, and the API
    server is restarted, so the resource versions the operator's watches would resume from are
    gone: on reconnecting every watch gets 410 Gone and lists again. A relisting shows what
    exists, never what was deleted: once relisted, the operator must neither keep counting the
    five deleted pods (which would hide the skew) nor keep scanning the deleted policy.

    And no scan plans from the cache as it was when the relay was cut: the watches come back
    only after their back-off, but the operator's scans failed while the relay was cut, so the
    next scan first checks the cache against the API server and waits for the watches to catch
    up. Every status written after the relay's return reports the skew."""
    custom, audit_log = scene.custom, scene.audit
    proxy = ApiProxy(e2e_cluster.port)
    name, gone = f"rbp-{scene.namespace}", f"rbp-{scene.namespace}-gone"
    try:
        op = operator_factory(
            kubeconfig=kubeconfig_via(
                operator_kubeconfig, proxy.port, tmp_path / "proxied.kubeconfig"
            )
        )
        node_zones = scene.zones(TWO_PER_ZONE)
        web_with_budget(scene)
        scene.ready("web", 9, timeout=180)
        create_policy(custom, gone, scene.namespace, mode="DryRun", eviction=AT_ONCE)
        with scene.rebalancing(name, mode="DryRun", eviction=AT_ONCE):
            first = wait_for(lambda: scanned_after(custom, name, 0), 90, "a first scan")
            assert first["summary"]["violations"] == 0, first
            wait_for(lambda: scanned_after(custom, gone, 0), 90, "a first scan of the other")
            assert proxy.accepted > 0

            proxy.cut()
            cut_at = time.monotonic()
            counts = skew_by_scale_down(scene, node_zones, {"zone-a": 3, "zone-b": 2})
            assert counts == {"zone-a": 0, "zone-b": 1, "zone-c": 3}
            custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, gone)
            e2e_cluster.restart_apiserver()
            # Keep the relay cut for 25 s: the watches retry after 1, 2, 5, 10, 20 s, so
            # they come back some 10-15 s after the relay does, and a scan (every 10 s) runs in
            # between, on a cache that has not seen the scale-down unless it waits for them.
            time.sleep(max(0.0, 25 - (time.monotonic() - cut_at)))
            mark = audit_log.mark()
            proxy.restore()

            def relisted() -> bool:
                return any("Pod: relisted" in line for line in op.text().splitlines())

            wait_for(relisted, 90, "the pods watch to get 410 Gone and relist")
            relisted_at = time.time()
            st = wait_for(
                lambda: scanned_after(custom, name, relisted_at), 120, "a scan after the relisting"
            )
            assert op.alive
            assert st["summary"]["violations"] == 1, st
            (v,) = st["violations"]
            assert (v["skew"], v["pods"]) == (3, 4), v
            assert v["domains"]["max"] == {"name": "zone-c", "pods": 3}, v
            assert v["domains"]["min"] == {"name": "zone-a", "pods": 0}, v
            assert v["cause"] == "ScaleDown", v

            # Two more scan intervals: the deleted policy is not scanned again (a status
            # write to it, refused with 404, may tell the operator that it is gone).
            time.sleep(22)
            writes = [
                e
                for e in audit_log.events(mark)
                if e.get("stage") == "ResponseComplete"
                and e.get("objectRef", {}).get("resource") == PLURAL
                and e.get("objectRef", {}).get("name") == gone
                and e.get("verb") in ("patch", "update")
            ]
            assert len(writes) <= 1, [(e["stageTimestamp"], e["responseStatus"]) for e in writes]

            # No scan since the relay's return planned from the cache as it was when it was cut
            # (3/3/3, no violation): every report written since shows the skew.
            reports = [
                (e["stageTimestamp"], e["requestObject"]["status"]["summary"])
                for e in audit_log.events(mark)
                if e.get("stage") == "ResponseComplete"
                and e.get("objectRef", {}).get("resource") == PLURAL
                and e.get("objectRef", {}).get("subresource") == "status"
                and e.get("objectRef", {}).get("name") == name
                and "summary" in ((e.get("requestObject") or {}).get("status") or {})
            ]
            assert len(reports) >= 2, reports
            stale = [(at, summary) for at, summary in reports if summary["violations"] != 1]
            assert stale == [], (stale, op.text()[-3000:])
            assert op.alive
    finally:
        proxy.close()
        with contextlib.suppress(ApiException):  # deleted above unless the test failed first
            custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, gone)


# --------------------------------------------------------------------------- 5. liveness


def test_liveness_answers_while_scans_stay_fresh_on_a_busy_cluster(
    scene: Scene, operator_factory: StartOperator
) -> None:
    """`--liveness` serves 200 with each policy's last scan time. A cluster where something
    changes every half second must not starve the scans (nor, in turn, the liveness check)."""
    custom, namespace = scene.custom, scene.namespace
    port = free_port()
    url = f"http://127.0.0.1:{port}/healthz"
    op = operator_factory("--liveness", url)
    name = f"rbp-{namespace}"

    def healthz() -> tuple[int, str]:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return int(resp.status), resp.read().decode()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read().decode()

    with scene.rebalancing(name, mode="DryRun", eviction=AT_ONCE):
        first = wait_for(lambda: scanned_after(custom, name, 0), 90, "a first scan")
        status, body = wait_for(healthz, 30, "the liveness endpoint")
        assert status == 200, body
        assert name in body

        stop = threading.Event()

        def churn() -> None:
            i = 0
            while not stop.is_set():
                i += 1
                with contextlib.suppress(Exception):
                    scene.core.patch_namespace(
                        namespace, {"metadata": {"labels": {"tick": str(i)}}}
                    )
                time.sleep(0.5)

        busy = threading.Thread(target=churn, daemon=True)
        busy.start()
        try:
            t0 = parse_time(first["lastScanTime"])
            st = wait_for(lambda: scanned_after(custom, name, t0), 40, "a scan while busy")
            t1 = parse_time(st["lastScanTime"])
            wait_for(lambda: scanned_after(custom, name, t1), 40, "another scan while busy")
            status, body = healthz()
            assert status == 200, body
        finally:
            stop.set()
            busy.join(10)
        assert op.alive
