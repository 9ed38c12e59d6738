"""Deterministic synthetic cluster states for benchmarking respread.

A cluster is built the way real skew happens: nodes across zones are created, workloads
(Deployments -> ReplicaSets -> pods, and StatefulSets) are placed evenly, as the scheduler would
have placed them, and then history is replayed on them:

- random scale-downs, which the ReplicaSet controller performs without regard to zones;
- a partial zone outage: nodes of one zone are lost and their pods are recreated in the other
  zones (the "rescheduled unevenly" case descheduler users know);
- new, empty nodes joining the cluster.

The result is a list of manifests shaped like ``kubectl get -o json`` output (no managedFields),
so that the real loader is what gets benchmarked. Everything derives from one
``random.Random(seed)``: the same arguments always give the same manifests.

Manifests of replicas share read-only sub-structures (containers, tolerations, constraints);
treat the returned dicts as read-only.

Usage::

    python bench/generate.py --nodes 500 --pods 15000 --seed 1 -o /tmp/cluster.json
    python bench/generate.py --nodes 500 --pods 15000 --seed 1 -o /tmp/cluster.yaml
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Manifest = dict[str, Any]

ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"
POOL_KEY = "bench.respread.io/pool"
INSTANCE_KEY = "node.kubernetes.io/instance-type"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
REGION = "eu-west-1"

# The instant the snapshot is taken; pass it as ``now`` to the planner.
GENERATED_AT = 1_748_736_000.0  # 2025-06-01T00:00:00Z

HOUR = 3600.0
DAY = 24 * HOUR
OUTAGE_AT = GENERATED_AT - 3 * HOUR
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # what apimachinery's rand.String uses

_TEAMS = (
    "payments",
    "search",
    "identity",
    "catalog",
    "billing",
    "ads",
    "growth",
    "data",
    "platform",
    "media",
    "orders",
    "risk",
    "notify",
    "maps",
    "ml",
    "support",
)
_PARTS = (
    "api",
    "worker",
    "frontend",
    "gateway",
    "cache",
    "consumer",
    "indexer",
    "scheduler",
    "proxy",
    "backend",
    "sync",
    "exporter",
    "router",
    "auth",
    "store",
    "stream",
)


@dataclass(frozen=True, slots=True)
class InstanceType:
    name: str
    cpu_m: int  # allocatable millicores
    memory_mi: int  # allocatable MiB
    max_pods: int
    pool: str


_GENERAL = (
    (InstanceType("m5.4xlarge", 15_890, 62_000, 110, "general"), 0.8),
    (InstanceType("m5.2xlarge", 7_910, 30_500, 58, "general"), 0.2),
)
_GPU = InstanceType("p3.2xlarge", 7_910, 59_000, 58, "gpu")


@dataclass(frozen=True, slots=True)
class Settings:
    """What to generate. Fractions are of nodes or of workloads, as named."""

    nodes: int
    pods: int
    seed: int = 1
    zones: int = 3
    gpu_node_fraction: float = 0.04
    cordoned_node_fraction: float = 0.005
    lost_node_fraction: float = 0.01  # lost in the outage (in addition to ``nodes``)
    new_node_fraction: float = 0.02  # joined after all placement (part of ``nodes``)
    scale_down_fraction: float = 0.2
    workloads_per_namespace: int = 40


# --------------------------------------------------------------------------------------------
# The simulated cluster


@dataclass(slots=True)
class SimNode:
    name: str
    zone: str
    kind: InstanceType
    created: float
    cordoned: bool = False
    lost: bool = False
    pods: int = 0
    cpu_m: int = 0
    memory_mi: int = 0

    def fits(self, cpu_m: int, memory_mi: int) -> bool:
        # One pod slot stays free for the DaemonSet pod every node runs.
        return (
            not self.lost
            and not self.cordoned
            and self.pods < self.kind.max_pods - 1
            and self.cpu_m + cpu_m <= self.kind.cpu_m
            and self.memory_mi + memory_mi <= self.kind.memory_mi
        )

    def take(self, cpu_m: int, memory_mi: int, sign: int = 1) -> None:
        self.pods += sign
        self.cpu_m += sign * cpu_m
        self.memory_mi += sign * memory_mi


@dataclass(frozen=True, slots=True)
class Spread:
    """One topology spread constraint of a workload, before rendering."""

    key: str
    max_skew: int
    hard: bool
    min_domains: int | None
    match_label_keys: bool
    expressions: bool  # labelSelector as matchExpressions instead of matchLabels


@dataclass(slots=True)
class SimWorkload:
    namespace: str
    name: str
    kind: str  # Deployment | StatefulSet
    replicas: int
    spreads: tuple[Spread, ...]
    pool: str  # general | gpu | large
    cpu_m: int
    memory_mi: int
    created: float
    template_hash: str
    old_hash: str
    rolled_at: float
    sidecar: bool = False
    init_container: bool = False
    empty_dir: bool = False
    claims: bool = False
    tolerates_gpu: bool = False
    high_priority: bool = False
    budget: str | None = None  # "minAvailable" | "maxUnavailable" | "all"
    stale_budget: bool = False
    service: bool = False
    rolling: bool = False  # mid-rollout: some pods still belong to the old ReplicaSet
    uid: str = ""
    pods: list[SimPod] = field(default_factory=list)


@dataclass(slots=True)
class SimPod:
    workload: SimWorkload
    name: str
    node: SimNode | None
    created: float
    old: bool = False  # belongs to the old ReplicaSet of a rolling Deployment
    uid: str = ""


class Placer:
    """A small stand-in for the scheduler: round-robin over the nodes of a pool and zone.

    Replicas of one workload go to consecutive zones, and within a zone to consecutive nodes,
    skipping nodes without room: pods end up evenly spread by zone and by node.
    """

    def __init__(self, nodes: list[SimNode], zones: list[str]) -> None:
        self.zones = zones
        self._rings: dict[tuple[str, str], list[SimNode]] = {}
        self._cursor: dict[tuple[str, str], int] = {}
        for node in nodes:
            for pool in _pools_of(node):
                self._rings.setdefault((pool, node.zone), []).append(node)

    def place(self, pool: str, zone: str, cpu_m: int, memory_mi: int) -> SimNode | None:
        ring = self._rings.get((pool, zone), [])
        start = self._cursor.get((pool, zone), 0)
        for step in range(len(ring)):
            node = ring[(start + step) % len(ring)]
            if node.fits(cpu_m, memory_mi):
                self._cursor[(pool, zone)] = start + step + 1
                node.take(cpu_m, memory_mi)
                return node
        return None

    def place_anywhere(
        self, pool: str, first_zone: int, cpu_m: int, memory_mi: int, avoid: str = ""
    ) -> SimNode | None:
        """The first zone from ``first_zone`` on (other than ``avoid``) that has room."""
        for step in range(len(self.zones)):
            zone = self.zones[(first_zone + step) % len(self.zones)]
            if zone == avoid:
                continue
            node = self.place(pool, zone, cpu_m, memory_mi)
            if node is not None:
                return node
        return None


def _pools_of(node: SimNode) -> tuple[str, ...]:
    if node.kind.pool == "gpu":
        return ("gpu",)
    if node.kind.name == "m5.4xlarge":
        return ("general", "large")
    return ("general",)


class Builder:
    """Replays the history of one synthetic cluster; ``manifests()`` renders the result."""

    def __init__(self, settings: Settings) -> None:
        self.s = settings
        self.rng = random.Random(settings.seed)
        self.zones = [f"{REGION}{chr(ord('a') + i)}" for i in range(settings.zones)]
        self.nodes: list[SimNode] = []
        self.workloads: list[SimWorkload] = []
        self.daemon_pods: list[SimPod] = []
        self.kube_proxy: SimWorkload | None = None
        self.pod_names: set[tuple[str, str]] = set()

    # ---- names ---------------------------------------------------------------------------

    def suffix(self, length: int) -> str:
        return "".join(self.rng.choice(_NAME_CHARS) for _ in range(length))

    def unique(self, namespace: str, name: str) -> str:
        """``name``, or ``name-2``, ``name-3``, ... once a pod of the namespace has it (5,000
        kube-proxy pods' random suffixes collide); no random draw, so the rest of the cluster
        is unchanged."""
        found, n = name, 1
        while (namespace, found) in self.pod_names:
            n += 1
            found = f"{name}-{n}"
        self.pod_names.add((namespace, found))
        return found

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    # ---- nodes ---------------------------------------------------------------------------

    def build_nodes(self) -> None:
        s = self.s
        lost = round(s.nodes * s.lost_node_fraction)
        joined = round(s.nodes * s.new_node_fraction)
        initial = s.nodes - joined + lost
        gpu = max(s.zones, round(initial * s.gpu_node_fraction)) if initial >= 10 * s.zones else 0
        for i in range(initial):
            kind = _GPU if i < gpu else self.instance_type()
            zone = self.zones[i % len(self.zones)]
            created = GENERATED_AT - self.rng.uniform(5 * DAY, 200 * DAY)
            self.nodes.append(self.new_node(kind, zone, created))
        for node in self.rng.sample(self.nodes, round(initial * s.cordoned_node_fraction)):
            node.cordoned = True

    def instance_type(self) -> InstanceType:
        kinds = [k for k, _ in _GENERAL]
        weights = [w for _, w in _GENERAL]
        return self.rng.choices(kinds, weights)[0]

    def new_node(self, kind: InstanceType, zone: str, created: float) -> SimNode:
        name = (
            f"ip-10-{self.rng.randrange(256)}-{self.rng.randrange(256)}-{len(self.nodes)}"
            f".{REGION}.compute.internal"
        )
        return SimNode(name, zone, kind, created)

    def join_new_nodes(self) -> None:
        """Empty nodes join until the cluster has the requested size."""
        for _ in range(self.s.nodes - len(self.nodes)):
            zone = self.rng.choice(self.zones)
            created = GENERATED_AT - self.rng.uniform(10 * 60, 2 * HOUR)
            self.nodes.append(self.new_node(self.instance_type(), zone, created))

    # ---- workloads -----------------------------------------------------------------------

    def replica_count(self) -> int:
        r = self.rng.random()
        if r < 0.10:
            return 2
        if r < 0.70:
            return self.rng.randint(3, 15)
        if r < 0.90:
            return self.rng.randint(16, 30)
        if r < 0.97:
            return self.rng.randint(31, 60)
        return self.rng.randint(61, 100)

    def replica_counts(self, total: int) -> list[int]:
        """Workload sizes summing to exactly ``total``."""
        counts: list[int] = []
        left = total
        while left > 0:
            n = min(self.replica_count(), left)
            if n < 2 and counts:  # a last single pod joins a workload with room for it
                counts[next((i for i, c in enumerate(counts) if c < 100), 0)] += n
            else:
                counts.append(n)
            left -= n
        return counts

    def build_workloads(self, total: int) -> None:
        counts = self.replica_counts(total)
        namespaces = max(1, len(counts) // self.s.workloads_per_namespace)
        ns_names = [f"{_TEAMS[i % len(_TEAMS)]}-{i:03d}" for i in range(namespaces)]
        has_gpu = any(n.kind.pool == "gpu" for n in self.nodes)
        for i, replicas in enumerate(counts):
            self.workloads.append(
                self.new_workload(i, replicas, self.rng.choice(ns_names), has_gpu)
            )

    def new_workload(self, i: int, replicas: int, namespace: str, has_gpu: bool) -> SimWorkload:
        rng = self.rng
        kind = "StatefulSet" if rng.random() < 0.12 else "Deployment"
        pool = "general"
        r = rng.random()
        if has_gpu and r < 0.03:
            pool = "gpu"
        elif r < 0.05:
            pool = "large"
        created = GENERATED_AT - rng.uniform(2 * DAY, 400 * DAY)
        w = SimWorkload(
            namespace=namespace,
            name=f"{rng.choice(_TEAMS)}-{rng.choice(_PARTS)}-{i:05d}",
            kind=kind,
            replicas=replicas,
            spreads=self.spreads(kind),
            pool=pool,
            cpu_m=rng.choice((50, 100, 100, 250, 250, 250, 500, 1000)),
            memory_mi=rng.choice((64, 128, 256, 256, 512, 512, 1024, 2048)),
            created=created,
            template_hash=self.suffix(10),
            old_hash=self.suffix(10),
            rolled_at=GENERATED_AT - rng.uniform(HOUR * 6, min(60 * DAY, GENERATED_AT - created)),
            sidecar=rng.random() < 0.2,
            init_container=rng.random() < 0.1,
            empty_dir=rng.random() < 0.1,
            claims=kind == "StatefulSet" and rng.random() < 0.6,
            tolerates_gpu=pool == "gpu" or rng.random() < 0.02,
            high_priority=rng.random() < 0.1,
            budget=self.budget_kind(),
            stale_budget=rng.random() < 0.02,
            service=rng.random() < 0.6,
            rolling=kind == "Deployment" and replicas >= 4 and rng.random() < 0.03,
            uid=self.uid(),
        )
        return w

    def budget_kind(self) -> str | None:
        r = self.rng.random()
        if r < 0.25:
            return "minAvailable"
        if r < 0.35:
            return "maxUnavailable"
        if r < 0.40:
            return "all"  # minAvailable 100%: disruptionsAllowed stays 0
        return None

    def spreads(self, kind: str) -> tuple[Spread, ...]:
        r = self.rng.random()
        keys: tuple[str, ...]
        if r < 0.45:
            keys = (ZONE_KEY,)
        elif r < 0.65:
            keys = (HOSTNAME_KEY,)
        elif r < 0.88:
            keys = (ZONE_KEY, HOSTNAME_KEY)
        else:
            keys = ()
        match_keys = kind == "Deployment" and self.rng.random() < 0.3
        return tuple(self.spread(key, match_keys) for key in keys)

    def spread(self, key: str, match_label_keys: bool) -> Spread:
        rng = self.rng
        hard = rng.random() < 0.85
        min_domains = None
        if hard and key == ZONE_KEY:
            r = rng.random()
            if r < 0.04:
                min_domains = len(self.zones)
            elif r < 0.05:
                min_domains = len(self.zones) + 1  # more zones than exist: globalMin is 0
        return Spread(
            key,
            1 if rng.random() < 0.75 else 2,
            hard,
            min_domains,
            match_label_keys,
            rng.random() < 0.1,
        )

    # ---- placement and history -----------------------------------------------------------

    def pod_name(self, w: SimWorkload, ordinal: int, old: bool = False) -> str:
        if w.kind == "StatefulSet":
            return f"{w.name}-{ordinal}"
        hashed = w.old_hash if old else w.template_hash
        return self.unique(w.namespace, f"{w.name}-{hashed}-{self.suffix(5)}")

    def place_all(self, placer: Placer, scale_downs: dict[int, int]) -> None:
        """Place every workload's replicas (plus those a scale-down will remove) evenly."""
        for i, w in enumerate(self.workloads):
            initial = w.replicas + scale_downs.get(i, 0)
            first = self.rng.randrange(len(self.zones))
            for ordinal in range(initial):
                node = placer.place_anywhere(w.pool, first + ordinal, w.cpu_m, w.memory_mi)
                created = w.rolled_at + self.rng.uniform(0, 120)
                old = w.rolling and ordinal % 3 == 0
                w.pods.append(SimPod(w, self.pod_name(w, ordinal, old), node, created, old))

    def scale_down(self, w: SimWorkload, remove: int) -> None:
        """The ReplicaSet controller's scale-down: blind to zones, sometimes all from one."""
        if w.kind == "StatefulSet":
            victims = w.pods[-remove:]
        elif self.rng.random() < 0.5:
            zone = self.rng.choice(self.zones)
            in_zone = [p for p in w.pods if p.node is not None and p.node.zone == zone]
            others = [p for p in w.pods if p not in in_zone]
            victims = (in_zone + others)[:remove]
        else:
            victims = self.rng.sample(w.pods, remove)
        gone = {id(p) for p in victims}
        for pod in victims:
            if pod.node is not None:
                pod.node.take(w.cpu_m, w.memory_mi, -1)
        w.pods = [p for p in w.pods if id(p) not in gone]

    def outage(self, placer: Placer) -> None:
        """Lose nodes of one zone; the controllers recreate their pods in the other zones."""
        lost_count = round(self.s.nodes * self.s.lost_node_fraction)
        if lost_count == 0 or len(self.zones) < 2:
            return
        zone = self.rng.choice(self.zones)
        candidates = [n for n in self.nodes if n.zone == zone and n.kind.pool == "general"]
        lost = self.rng.sample(candidates, min(lost_count, len(candidates) // 2))
        for node in lost:
            node.lost = True
        lost_ids = {id(n) for n in lost}
        for w in self.workloads:
            for k, pod in enumerate(w.pods):
                if pod.node is not None and id(pod.node) in lost_ids:
                    w.pods[k] = self.reschedule(placer, pod, zone)
        self.nodes = [n for n in self.nodes if not n.lost]

    def reschedule(self, placer: Placer, pod: SimPod, avoid: str) -> SimPod:
        w = pod.workload
        first = self.rng.randrange(len(self.zones))
        node = placer.place_anywhere(w.pool, first, w.cpu_m, w.memory_mi, avoid=avoid)
        name = pod.name if w.kind == "StatefulSet" else self.pod_name(w, 0, pod.old)
        created = OUTAGE_AT + self.rng.uniform(30, 600)
        return SimPod(w, name, node, created, pod.old)

    def young_pods(self) -> None:
        """A few workloads were just scaled up: their newest pods are younger than minPodAge."""
        for w in self.rng.sample(self.workloads, len(self.workloads) // 100):
            for pod in w.pods[-2:]:
                pod.created = GENERATED_AT - self.rng.uniform(20, 240)

    def daemonset(self) -> None:
        """kube-proxy on every node, in kube-system (excluded by the default policy)."""
        w = SimWorkload(
            "kube-system",
            "kube-proxy",
            "DaemonSet",
            len(self.nodes),
            (),
            "general",
            100,
            128,
            GENERATED_AT - 400 * DAY,
            self.suffix(10),
            "",
            GENERATED_AT - 30 * DAY,
            high_priority=True,
            uid=self.uid(),
        )
        self.kube_proxy = w
        for node in self.nodes:
            name = self.unique(w.namespace, f"kube-proxy-{self.suffix(5)}")
            w.pods.append(SimPod(w, name, node, node.created + 60))

    def assign_uids(self) -> None:
        for w in self.workloads:
            for pod in w.pods:
                pod.uid = self.uid()
        if self.kube_proxy is not None:
            for pod in self.kube_proxy.pods:
                pod.uid = self.uid()

    def run(self) -> Builder:
        s = self.s
        self.build_nodes()
        with_daemon = s.pods >= 4 * s.nodes
        self.build_workloads(s.pods - (s.nodes if with_daemon else 0))
        placer = Placer(self.nodes, self.zones)
        picked = self.rng.sample(
            range(len(self.workloads)), round(len(self.workloads) * s.scale_down_fraction)
        )
        scale_downs = {
            i: self.rng.randint(1, max(1, self.workloads[i].replicas // 3)) for i in picked
        }
        self.place_all(placer, scale_downs)
        for i in sorted(scale_downs):
            self.scale_down(self.workloads[i], scale_downs[i])
        self.outage(placer)
        self.join_new_nodes()
        self.young_pods()
        if with_daemon:
            self.daemonset()
        self.assign_uids()
        return self


# --------------------------------------------------------------------------------------------
# Rendering


def timestamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class Renderer:
    """Turns a built cluster into manifests; workload-wide parts are built once and shared."""

    def __init__(self, built: Builder) -> None:
        self.b = built
        self._ip = 0

    def pod_ip(self) -> str:
        self._ip += 1
        return f"100.{64 + (self._ip >> 16) % 64}.{(self._ip >> 8) % 256}.{self._ip % 256}"

    def manifests(self) -> list[Manifest]:
        out: list[Manifest] = [_namespace(ns) for ns in self.namespaces()]
        out.extend(_node(n) for n in self.b.nodes)
        for w in self.b.workloads:
            out.extend(self.workload(w))
        if self.b.kube_proxy is not None:
            out.extend(self.daemonset(self.b.kube_proxy))
        return out

    def namespaces(self) -> list[str]:
        return ["kube-system", *sorted({w.namespace for w in self.b.workloads})]

    def workload(self, w: SimWorkload) -> Iterator[Manifest]:
        template = _template_spec(w)
        if w.kind == "StatefulSet":
            yield _statefulset(w, template)
            owner = _owner("apps/v1", "StatefulSet", w.name, w.uid)
            for pod in w.pods:
                yield self.pod(pod, template, _labels(w, None, pod.name), owner)
        else:
            yield _deployment(w, template)
            yield from self.replicasets_and_pods(w, template)
        if w.budget is not None:
            yield _budget(w)
        if w.service:
            yield _service(w)

    def replicasets_and_pods(self, w: SimWorkload, template: Manifest) -> Iterator[Manifest]:
        for old in (True, False):
            rs_hash = w.old_hash if old else w.template_hash
            pods = [p for p in w.pods if p.old == old]
            rs_uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{w.uid}/{rs_hash}"))
            yield _replicaset(
                w, template, rs_hash, rs_uid, replicas=len(pods), revision=1 if old else 2
            )
            owner = _owner("apps/v1", "ReplicaSet", f"{w.name}-{rs_hash}", rs_uid)
            labels = _labels(w, rs_hash, None)
            for pod in pods:
                yield self.pod(pod, template, labels, owner)

    def daemonset(self, w: SimWorkload) -> Iterator[Manifest]:
        template = _template_spec(w)
        template["tolerations"] = [{"operator": "Exists"}]
        template["priorityClassName"] = "system-node-critical"
        labels = {
            "k8s-app": "kube-proxy",
            "controller-revision-hash": w.template_hash,
            "pod-template-generation": "1",
        }
        yield _daemonset(w, template)
        owner = _owner("apps/v1", "DaemonSet", w.name, w.uid)
        for pod in w.pods:
            yield self.pod(pod, template, labels, owner)

    def pod(
        self, pod: SimPod, template: Manifest, labels: dict[str, str], owner: list[Manifest]
    ) -> Manifest:
        w = pod.workload
        meta: Manifest = {
            "creationTimestamp": timestamp(pod.created),
            "labels": labels,
            "name": pod.name,
            "namespace": w.namespace,
            "ownerReferences": owner,
            "resourceVersion": str(10_000_000 + self._ip),
            "uid": pod.uid,
        }
        if w.kind != "StatefulSet":
            meta["generateName"] = pod.name[:-5]
        spec = {**template, "nodeName": pod.node.name} if pod.node is not None else dict(template)
        spec["priority"] = (
            2_000_001_000 if w.kind == "DaemonSet" else (1000 if w.high_priority else 0)
        )
        if w.claims:
            spec["volumes"] = [
                *template["volumes"],
                {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{pod.name}"}},
            ]
        status = self.pod_status(pod) if pod.node is not None else _pending_status(pod)
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}

    def pod_status(self, pod: SimPod) -> Manifest:
        assert pod.node is not None
        started = timestamp(pod.created + 2)
        ready = timestamp(pod.created + 15)
        ip = self.pod_ip()
        host_ip = _node_ip(pod.node)
        containers = ["app", "istio-proxy"] if pod.workload.sidecar else ["app"]
        return {
            "conditions": [
                {"lastProbeTime": None, "lastTransitionTime": ready, "status": "True", "type": kind}
                for kind in (
                    "PodReadyToStartContainers",
                    "Initialized",
                    "Ready",
                    "ContainersReady",
                    "PodScheduled",
                )
            ],
            "containerStatuses": [
                {
                    "containerID": f"containerd://{pod.uid.replace('-', '')}{i}",
                    "image": f"registry.example.com/{pod.workload.name}:v2",
                    "imageID": f"registry.example.com/{pod.workload.name}@sha256:{pod.uid}",
                    "lastState": {},
                    "name": name,
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": started}},
                }
                for i, name in enumerate(containers)
            ],
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "qosClass": "Burstable",
            "startTime": started,
        }


def _pending_status(pod: SimPod) -> Manifest:
    return {
        "conditions": [
            {
                "lastProbeTime": None,
                "lastTransitionTime": timestamp(pod.created),
                "message": "0/1 nodes are available: 1 Insufficient cpu.",
                "reason": "Unschedulable",
                "status": "False",
                "type": "PodScheduled",
            }
        ],
        "phase": "Pending",
        "qosClass": "Burstable",
    }


def _node_ip(node: SimNode) -> str:
    parts = node.name.split(".")[0].split("-")
    return f"10.{parts[2]}.{parts[3]}.{int(parts[4]) % 250 + 1}"


def _namespace(name: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "creationTimestamp": timestamp(GENERATED_AT - 400 * DAY),
            "labels": {"kubernetes.io/metadata.name": name},
            "name": name,
            "resourceVersion": "1",
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _node(n: SimNode) -> Manifest:
    k = n.kind
    alloc = {
        "cpu": f"{k.cpu_m}m",
        "ephemeral-storage": "95551679124",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{k.memory_mi}Mi",
        "pods": str(k.max_pods),
    }
    capacity = {**alloc, "cpu": str(-(-k.cpu_m // 1000)), "ephemeral-storage": "104845292Ki"}
    if k.pool == "gpu":
        alloc["nvidia.com/gpu"] = capacity["nvidia.com/gpu"] = "1"
    taints: list[Manifest] = [dict(GPU_TAINT)] if k.pool == "gpu" else []
    spec: Manifest = {"providerID": f"aws:///{n.zone}/i-0{zlib.crc32(n.name.encode()):016x}"}
    if n.cordoned:
        spec["unschedulable"] = True
        taints.append(
            {
                "effect": "NoSchedule",
                "key": "node.kubernetes.io/unschedulable",
                "timeAdded": timestamp(GENERATED_AT - HOUR),
            }
        )
    if taints:
        spec["taints"] = taints
    since = timestamp(n.created + 30)
    ip = _node_ip(n)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": timestamp(n.created),
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": k.name,
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                HOSTNAME_KEY: n.name,
                "kubernetes.io/os": "linux",
                INSTANCE_KEY: k.name,
                POOL_KEY: k.pool,
                "topology.kubernetes.io/region": REGION,
                ZONE_KEY: n.zone,
            },
            "name": n.name,
            "resourceVersion": "1000",
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, n.name)),
        },
        "spec": spec,
        "status": {
            "addresses": [
                {"address": ip, "type": "InternalIP"},
                {"address": n.name, "type": "Hostname"},
            ],
            "allocatable": alloc,
            "capacity": capacity,
            "conditions": [
                {
                    "lastHeartbeatTime": timestamp(GENERATED_AT - 30),
                    "lastTransitionTime": since,
                    "message": msg,
                    "reason": reason,
                    "status": status,
                    "type": kind,
                }
                for kind, status, reason, msg in (
                    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "ok"),
                    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "ok"),
                    ("PIDPressure", "False", "KubeletHasSufficientPID", "ok"),
                    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                )
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "containerRuntimeVersion": "containerd://1.7.22",
                "kernelVersion": "6.1.112",
                "kubeProxyVersion": "v1.34.4",
                "kubeletVersion": "v1.34.4",
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2023",
            },
        },
    }


def _owner(api_version: str, kind: str, name: str, uid: str) -> list[Manifest]:
    return [
        {
            "apiVersion": api_version,
            "blockOwnerDeletion": True,
            "controller": True,
            "kind": kind,
            "name": name,
            "uid": uid,
        }
    ]


def _labels(w: SimWorkload, rs_hash: str | None, sts_pod: str | None) -> dict[str, str]:
    labels = {
        "app": w.name,
        "app.kubernetes.io/name": w.name,
        "app.kubernetes.io/part-of": w.namespace,
    }
    if rs_hash is not None:
        labels["pod-template-hash"] = rs_hash
    if sts_pod is not None:
        labels["controller-revision-hash"] = f"{w.name}-{w.template_hash}"
        labels["statefulset.kubernetes.io/pod-name"] = sts_pod
    return labels


def _constraint(w: SimWorkload, c: Spread) -> Manifest:
    selector: Manifest = (
        {"matchExpressions": [{"key": "app", "operator": "In", "values": [w.name]}]}
        if c.expressions
        else {"matchLabels": {"app": w.name}}
    )
    out: Manifest = {
        "labelSelector": selector,
        "maxSkew": c.max_skew,
        "topologyKey": c.key,
        "whenUnsatisfiable": "DoNotSchedule" if c.hard else "ScheduleAnyway",
    }
    if c.min_domains is not None:
        out["minDomains"] = c.min_domains
    if c.match_label_keys:
        out["matchLabelKeys"] = ["pod-template-hash"]
    return out


def _container(name: str, image: str, cpu_m: int, memory_mi: int) -> Manifest:
    return {
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "resources": {
            "limits": {"memory": f"{memory_mi * 2}Mi"},
            "requests": {"cpu": f"{cpu_m}m", "memory": f"{memory_mi}Mi"},
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [
            {
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "name": "kube-api-access",
                "readOnly": True,
            }
        ],
    }


_API_ACCESS_VOLUME: Manifest = {
    "name": "kube-api-access",
    "projected": {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {
                "configMap": {
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    "name": "kube-root-ca.crt",
                }
            },
            {
                "downwardAPI": {
                    "items": [
                        {
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            "path": "namespace",
                        }
                    ]
                }
            },
        ],
    },
}

_DEFAULT_TOLERATIONS = [
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
]


def _template_spec(w: SimWorkload) -> Manifest:
    """The pod spec every replica shares (admission defaults included, as pods show them)."""
    image = f"registry.example.com/{w.name}:v2"
    containers = [_container("app", image, w.cpu_m, w.memory_mi)]
    if w.sidecar:
        containers.append(_container("istio-proxy", "docker.io/istio/proxyv2:1.24.0", 100, 128))
    spec: Manifest = {
        "containers": containers,
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": list(_DEFAULT_TOLERATIONS),
        "volumes": [_API_ACCESS_VOLUME],
    }
    if w.init_container:
        spec["initContainers"] = [_container("migrate", image, 200, 256)]
    if w.empty_dir:
        spec["volumes"] = [*spec["volumes"], {"emptyDir": {}, "name": "scratch"}]
    if w.spreads:
        spec["topologySpreadConstraints"] = [_constraint(w, c) for c in w.spreads]
    if w.pool == "gpu":
        spec["nodeSelector"] = {POOL_KEY: "gpu"}
    elif w.pool == "large":
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": INSTANCE_KEY, "operator": "In", "values": ["m5.4xlarge"]}
                            ]
                        }
                    ]
                }
            }
        }
    if w.tolerates_gpu:
        spec["tolerations"] = [
            *spec["tolerations"],
            {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
        ]
    if w.high_priority:
        spec["priorityClassName"] = "high-priority"
    return spec


def _template(w: SimWorkload, spec: Manifest, labels: dict[str, str]) -> Manifest:
    pod_spec = {k: v for k, v in spec.items() if k not in ("priority", "serviceAccount")}
    return {"metadata": {"labels": labels}, "spec": pod_spec}


def _object_meta(
    w: SimWorkload,
    name: str,
    uid: str,
    labels: dict[str, str],
    *,
    created: float,
    generation: int = 1,
) -> Manifest:
    return {
        "creationTimestamp": timestamp(created),
        "generation": generation,
        "labels": labels,
        "name": name,
        "namespace": w.namespace,
        "resourceVersion": str(5_000_000 + generation),
        "uid": uid,
    }


def _deployment(w: SimWorkload, spec: Manifest) -> Manifest:
    labels = {"app": w.name}
    pod_labels = _labels(w, None, None)
    meta = _object_meta(w, w.name, w.uid, labels, created=w.created, generation=2)
    meta["annotations"] = {"deployment.kubernetes.io/revision": "2"}
    n = len(w.pods)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "progressDeadlineSeconds": 600,
            "replicas": w.replicas,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": w.name}},
            "strategy": {
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                "type": "RollingUpdate",
            },
            "template": _template(w, spec, pod_labels),
        },
        "status": {
            "availableReplicas": n,
            "observedGeneration": 2,
            "readyReplicas": n,
            "replicas": n,
            "updatedReplicas": sum(1 for p in w.pods if not p.old),
        },
    }


def _replicaset(
    w: SimWorkload, spec: Manifest, rs_hash: str, uid: str, *, replicas: int, revision: int
) -> Manifest:
    labels = _labels(w, rs_hash, None)
    created = w.rolled_at if revision == 2 else w.created
    meta = _object_meta(w, f"{w.name}-{rs_hash}", uid, labels, created=created)
    meta["annotations"] = {
        "deployment.kubernetes.io/desired-replicas": str(w.replicas),
        "deployment.kubernetes.io/max-replicas": str(w.replicas + 1),
        "deployment.kubernetes.io/revision": str(revision),
    }
    meta["ownerReferences"] = _owner("apps/v1", "Deployment", w.name, w.uid)
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": w.name, "pod-template-hash": rs_hash}},
            "template": _template(w, spec, labels),
        },
        "status": {
            "availableReplicas": replicas,
            "fullyLabeledReplicas": replicas,
            "observedGeneration": 1,
            "readyReplicas": replicas,
            "replicas": replicas,
        },
    }


def _statefulset(w: SimWorkload, spec: Manifest) -> Manifest:
    labels = {"app": w.name}
    body: Manifest = {
        "podManagementPolicy": "OrderedReady",
        "replicas": w.replicas,
        "revisionHistoryLimit": 10,
        "selector": {"matchLabels": {"app": w.name}},
        "serviceName": w.name,
        "template": _template(w, spec, _labels(w, None, None)),
        "updateStrategy": {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"},
    }
    if w.claims:
        body["volumeClaimTemplates"] = [
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "10Gi"}},
                    "volumeMode": "Filesystem",
                },
            }
        ]
    n = len(w.pods)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _object_meta(w, w.name, w.uid, labels, created=w.created),
        "spec": body,
        "status": {
            "availableReplicas": n,
            "currentReplicas": n,
            "observedGeneration": 1,
            "readyReplicas": n,
            "replicas": n,
            "updatedReplicas": n,
            "currentRevision": f"{w.name}-{w.template_hash}",
            "updateRevision": f"{w.name}-{w.template_hash}",
        },
    }


def _daemonset(w: SimWorkload, spec: Manifest) -> Manifest:
    n = len(w.pods)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _object_meta(w, w.name, w.uid, {"k8s-app": w.name}, created=w.created),
        "spec": {
            "selector": {"matchLabels": {"k8s-app": w.name}},
            "template": _template(w, spec, {"k8s-app": w.name}),
            "updateStrategy": {"rollingUpdate": {"maxUnavailable": 1}, "type": "RollingUpdate"},
        },
        "status": {
            "currentNumberScheduled": n,
            "desiredNumberScheduled": n,
            "numberAvailable": n,
            "numberMisscheduled": 0,
            "numberReady": n,
            "observedGeneration": 1,
            "updatedNumberScheduled": n,
        },
    }


def _budget(w: SimWorkload) -> Manifest:
    healthy = sum(1 for p in w.pods if p.node is not None)
    if w.budget == "maxUnavailable":
        rule: Manifest = {"maxUnavailable": 1}
        desired = max(0, w.replicas - 1)
    elif w.budget == "all":
        rule = {"minAvailable": "100%"}
        desired = w.replicas
    else:
        rule = {"minAvailable": "50%"}
        desired = -(-w.replicas // 2)
    generation = 2 if w.stale_budget else 1
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _object_meta(
            w,
            w.name,
            str(uuid.uuid5(uuid.NAMESPACE_URL, f"{w.uid}/pdb")),
            {"app": w.name},
            created=w.created,
            generation=generation,
        ),
        "spec": {**rule, "selector": {"matchLabels": {"app": w.name}}},
        "status": {
            "conditions": [
                {
                    "lastTransitionTime": timestamp(w.created),
                    "message": "",
                    "observedGeneration": 1,
                    "reason": "SufficientPods" if healthy > desired else "InsufficientPods",
                    "status": "True" if healthy > desired else "False",
                    "type": "DisruptionAllowed",
                }
            ],
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "disruptionsAllowed": max(0, healthy - desired),
            "expectedPods": w.replicas,
            "observedGeneration": 1,
        },
    }


def _service(w: SimWorkload) -> Manifest:
    ip = zlib.crc32(w.uid.encode()) % 65_000
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _object_meta(
            w,
            w.name,
            str(uuid.uuid5(uuid.NAMESPACE_URL, f"{w.uid}/svc")),
            {"app": w.name},
            created=w.created,
        ),
        "spec": {
            "clusterIP": f"172.20.{ip // 256}.{ip % 256}",
            "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
            "selector": {"app": w.name},
            "sessionAffinity": "None",
            "type": "ClusterIP",
        },
        "status": {"loadBalancer": {}},
    }


# --------------------------------------------------------------------------------------------
# API


def generate(nodes: int, pods: int, seed: int = 1, zones: int = 3) -> list[Manifest]:
    """The manifests of a synthetic cluster: ``nodes`` nodes and exactly ``pods`` pods."""
    return generate_from(Settings(nodes=nodes, pods=pods, seed=seed, zones=zones))


def generate_from(settings: Settings) -> list[Manifest]:
    if settings.nodes < settings.zones or settings.pods < 0 or settings.zones < 1:
        raise ValueError("need at least one node per zone, one zone, and pods >= 0")
    return Renderer(Builder(settings).run()).manifests()


def to_json(manifests: list[Manifest]) -> str:
    """``kubectl get -o json`` of several kinds: one ``kind: List``."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": manifests,
            "metadata": {"resourceVersion": ""},
        },
        indent=4,
    )


class _NoAliases(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Shared values written out each time, as kubectl writes them: PyYAML would write an
    anchor and aliases, and respread reads at most 100 aliases per file (docs/limits.md)."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def to_yaml(manifests: list[Manifest]) -> str:
    """Multi-document YAML, one object per document."""
    return yaml.dump_all(manifests, Dumper=_NoAliases, sort_keys=False, default_flow_style=False)


def write(manifests: list[Manifest], path: Path) -> None:
    """JSON ``kind: List`` for ``.json``, multi-document YAML for anything else."""
    text = to_json(manifests) if path.suffix == ".json" else to_yaml(manifests)
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=15_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--zones", type=int, default=3)
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="where to write: .json gives a kind: List, else multi-document YAML",
    )
    args = parser.parse_args(argv)
    manifests = generate(args.nodes, args.pods, args.seed, args.zones)
    write(manifests, args.output)
    kinds: dict[str, int] = {}
    for m in manifests:
        kinds[m["kind"]] = kinds.get(m["kind"], 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    print(f"wrote {args.output}: {summary}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
