"""A richer population for the operator's scale benchmark, and the changes of its churn phase.

On etcd + kube-apiserver alone (no controller-manager, scheduler or kubelet: nothing else
writes), as a cluster whose controllers have settled:

- nodes over four zones, Ready, and **untainted**: the API server's TaintNodesByCondition
  admission taints every node it creates `node.kubernetes.io/not-ready:NoSchedule`, and with no
  node lifecycle controller nothing lifts it, so every violation read as unfixable and the
  planner did almost nothing (issue 23). `untaint` lifts it and checks that it is gone;
- Deployments of 3 to 30 replicas (most about 10), each with its ReplicaSet (revision 1,
  pod-template-hash) and its pods bound round-robin over the zones and, within a zone, to random
  nodes; Running and Ready (status written as a kubelet would); statuses of the Deployment and
  the ReplicaSet as their controllers would write them;
- a zone constraint (maxSkew 1, matchLabelKeys pod-template-hash) on every workload, a hostname
  constraint (maxSkew 2) too on half;
- a PodDisruptionBudget (maxUnavailable 1) on a third, with the status the disruption controller
  would write (one disruption allowed);
- a tenth of the workloads skewed: their pods in two of the four zones.

The churn changes (`scale_down`, `lose_node`, `add_nodes`, `roll_out`) change the cluster as
the controllers would have, and say what the operator's status should show once it saw them.
A ValidatingAdmissionPolicy (tests/cluster/population.py) refuses the ReplicaSet controller pod
creation in the population's namespaces, should one run.
"""

from __future__ import annotations

import concurrent.futures
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

ZONE_KEY = "topology.kubernetes.io/zone"
HOST_KEY = "kubernetes.io/hostname"
ZONES = ("zone-a", "zone-b", "zone-c", "zone-d")
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
WORKLOADS_PER_NAMESPACE = 50
POPULATION_LABEL = "respread.test/population"
RV_TIME = "2026-11-26T00:00:00Z"


@dataclass
class Workload:
    namespace: str
    name: str
    replicas: int
    rs_hash: str
    two_constraints: bool
    budget: bool
    skewed: bool
    uid: str = ""
    rs_uid: str = ""
    pods: dict[str, str] = field(default_factory=dict)  # pod name -> node
    revision: int = 1


@dataclass
class Population:
    namespaces: list[str]
    nodes: dict[str, str]  # node -> zone
    workloads: list[Workload]
    prefix: str

    @property
    def pods(self) -> int:
        return sum(len(w.pods) for w in self.workloads)


# --------------------------------------------------------------------------- requests


class Requests:
    """Raw JSON requests on 8 connections (the typed client is too slow for 150,000 pods)."""

    def __init__(self, api: client.ApiClient, threads: int = 16) -> None:
        self.api = api
        self.pool = concurrent.futures.ThreadPoolExecutor(threads)

    def call(
        self, method: str, path: str, body: Any = None, content: str = "application/json"
    ) -> dict[str, Any]:
        m, url, headers, payload, _ = self.api.param_serialize(
            method,
            path,
            header_params={"Content-Type": content, "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
        )
        for attempt in range(6):
            resp = self.api.call_api(m, url, header_params=headers, body=payload)
            data = resp.read()
            if resp.status in (200, 201):
                import json

                return dict(json.loads(data)) if data else {}
            if resp.status == 409 and method == "POST":
                return {}
            if resp.status in (404,) and method == "DELETE":
                return {}
            if resp.status in (429, 500, 503, 504) and attempt < 5:
                time.sleep(0.5 * (attempt + 1))
                continue
            raise RuntimeError(f"{method} {path}: {resp.status} {data[:300]!r}")
        raise AssertionError("unreachable")

    def post(self, path: str, body: Any) -> dict[str, Any]:
        return self.call("POST", path, body)

    def merge(self, path: str, body: Any) -> dict[str, Any]:
        return self.call("PATCH", path, body, "application/merge-patch+json")

    def delete(self, path: str) -> dict[str, Any]:
        return self.call("DELETE", path, {"gracePeriodSeconds": 0})

    def each(self, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        return list(self.pool.map(fn, items))


# --------------------------------------------------------------------------- bodies


def _node(name: str, zone: str) -> dict[str, Any]:
    resources = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {ZONE_KEY: zone, HOST_KEY: name, "kubernetes.io/os": "linux"},
        },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _labels(w: Workload, rs_hash: str | None = None) -> dict[str, str]:
    return {"app": w.name, "pod-template-hash": rs_hash or w.rs_hash}


def _template(w: Workload, rs_hash: str | None = None) -> dict[str, Any]:
    selector = {"matchLabels": {"app": w.name}}
    constraints = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE_KEY,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector,
            "matchLabelKeys": ["pod-template-hash"],
        }
    ]
    if w.two_constraints:
        constraints.append(
            {
                "maxSkew": 2,
                "topologyKey": HOST_KEY,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector,
                "matchLabelKeys": ["pod-template-hash"],
            }
        )
    return {
        "metadata": {"labels": _labels(w, rs_hash)},
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example/app:1.0",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
            "topologySpreadConstraints": constraints,
        },
    }


def _deployment(w: Workload) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": w.name,
            "labels": {"app": w.name},
            "annotations": {"deployment.kubernetes.io/revision": str(w.revision)},
        },
        "spec": {
            "replicas": w.replicas,
            "selector": {"matchLabels": {"app": w.name}},
            "template": _deployment_template(w),
        },
    }


def _deployment_template(w: Workload) -> dict[str, Any]:
    """The Deployment's own template: the ReplicaSet controller adds pod-template-hash."""
    template = _template(w)
    template["metadata"]["labels"] = {"app": w.name}
    return template


def _replica_set(w: Workload, rs_hash: str, replicas: int, revision: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{w.name}-{rs_hash}",
            "labels": _labels(w, rs_hash),
            "annotations": {
                "deployment.kubernetes.io/revision": str(revision),
                "deployment.kubernetes.io/desired-replicas": str(w.replicas),
            },
            "ownerReferences": [_owner("Deployment", w.name, w.uid)],
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": _labels(w, rs_hash)},
            "template": _template(w, rs_hash),
        },
    }


def _owner(kind: str, name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _pod(w: Workload, name: str, node: str, rs_hash: str, rs_uid: str) -> dict[str, Any]:
    template = _template(w, rs_hash)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": template["metadata"]["labels"],
            "ownerReferences": [_owner("ReplicaSet", f"{w.name}-{rs_hash}", rs_uid)],
        },
        "spec": {**template["spec"], "nodeName": node},
    }


RUNNING = {
    "status": {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "PodScheduled", "status": "True"},
        ],
        "startTime": RV_TIME,
    }
}


def _replica_status(replicas: int, generation: int = 1) -> dict[str, Any]:
    return {
        "status": {
            "observedGeneration": generation,
            "replicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "updatedReplicas": replicas,
        }
    }


def _budget_status(w: Workload, pods: int) -> dict[str, Any]:
    return {
        "status": {
            "observedGeneration": 1,
            "currentHealthy": pods,
            "desiredHealthy": max(0, w.replicas - 1),
            "disruptionsAllowed": max(0, pods - (w.replicas - 1)),
            "expectedPods": w.replicas,
        }
    }


# --------------------------------------------------------------------------- building


def _add_nodes(req: Requests, names: list[tuple[str, str]]) -> None:
    req.each(lambda nz: req.post("/api/v1/nodes", _node(*nz)), names)
    untaint(req, [n for n, _ in names])


def untaint(req: Requests, nodes: list[str]) -> None:
    """Lift the not-ready taint TaintNodesByCondition put on each node at its creation (and
    write the Ready condition), then check that no node holds it any more."""

    def lift(name: str) -> None:
        req.merge(f"/api/v1/nodes/{name}", {"spec": {"taints": None}})
        req.merge(
            f"/api/v1/nodes/{name}/status",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        )

    req.each(lift, nodes)
    tainted = [
        n
        for n in nodes
        if any(
            t.get("key") == NOT_READY_TAINT
            for t in (req.call("GET", f"/api/v1/nodes/{n}").get("spec") or {}).get("taints") or []
        )
    ][:5]
    if tainted:
        raise RuntimeError(f"nodes still tainted {NOT_READY_TAINT}: {tainted}")


def _place(
    rng: random.Random, by_zone: dict[str, list[str]], zones: tuple[str, ...], count: int
) -> list[str]:
    return [rng.choice(by_zone[zones[r % len(zones)]]) for r in range(count)]


def _create_workload(req: Requests, w: Workload, nodes: list[str]) -> None:
    """One workload, its requests one after the other (workloads are created in parallel)."""
    ns = w.namespace
    dep = req.post(f"/apis/apps/v1/namespaces/{ns}/deployments", _deployment(w))
    w.uid = dep["metadata"]["uid"]
    req.merge(
        f"/apis/apps/v1/namespaces/{ns}/deployments/{w.name}/status", _replica_status(w.replicas)
    )
    rs = req.post(
        f"/apis/apps/v1/namespaces/{ns}/replicasets", _replica_set(w, w.rs_hash, w.replicas, 1)
    )
    w.rs_uid = rs["metadata"]["uid"]
    req.merge(
        f"/apis/apps/v1/namespaces/{ns}/replicasets/{w.name}-{w.rs_hash}/status",
        _replica_status(w.replicas),
    )
    names = [f"{w.name}-{w.rs_hash}-{i:03d}" for i in range(len(nodes))]
    _create_pods(req, w, list(zip(names, nodes, strict=True)), w.rs_hash, w.rs_uid, parallel=False)
    if w.budget:
        req.post(
            f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": w.name},
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": w.name}}},
            },
        )
        req.merge(
            f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{w.name}/status",
            _budget_status(w, len(nodes)),
        )


def _create_pods(
    req: Requests,
    w: Workload,
    placed: list[tuple[str, str]],
    rs_hash: str,
    rs_uid: str,
    *,
    parallel: bool = True,
) -> None:
    ns = w.namespace

    def one(item: tuple[str, str]) -> None:
        name, node = item
        req.post(f"/api/v1/namespaces/{ns}/pods", _pod(w, name, node, rs_hash, rs_uid))
        req.merge(f"/api/v1/namespaces/{ns}/pods/{name}/status", RUNNING)

    if parallel:
        req.each(one, placed)
    else:
        for item in placed:
            one(item)
    w.pods.update(placed)


def populate(
    api: client.ApiClient, nodes: int, pods: int, *, prefix: str, seed: int = 1
) -> Population:
    """About `pods` pods (whole workloads) over `nodes` nodes in four zones; see the module."""
    sys.path.insert(
        0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "tests" / "cluster")
    )
    from population import _refuse_controller_replicas

    rng = random.Random(seed)
    req = Requests(api)
    node_zone = {f"{prefix}-node-{i:05d}": ZONES[i % len(ZONES)] for i in range(nodes)}
    _add_nodes(req, list(node_zone.items()))
    by_zone: dict[str, list[str]] = {z: [] for z in ZONES}
    for n, z in node_zone.items():
        by_zone[z].append(n)
    workloads: list[Workload] = []
    total = 0
    while total < pods:
        replicas = min(max(3, int(rng.gauss(10, 6))), 30, max(3, pods - total))
        i = len(workloads)
        workloads.append(
            Workload(
                namespace=f"{prefix}-{i // WORKLOADS_PER_NAMESPACE:03d}",
                name=f"app-{i:05d}",
                replicas=replicas,
                rs_hash=f"{rng.getrandbits(32):08x}"[:10],
                two_constraints=i % 2 == 0,
                budget=i % 3 == 0,
                skewed=i % 10 == 5,
            )
        )
        total += replicas
    namespaces = sorted({w.namespace for w in workloads})
    for ns in namespaces:
        req.post(
            "/api/v1/namespaces", {"metadata": {"name": ns, "labels": {POPULATION_LABEL: prefix}}}
        )
        req.post(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "default"}})
    _refuse_controller_replicas(api, prefix, namespaces[0])
    started = time.monotonic()
    placements = [
        _place(rng, by_zone, ZONES[:2] if w.skewed else ZONES, w.replicas) for w in workloads
    ]
    batch = 200  # workloads in flight per progress line
    for first in range(0, len(workloads), batch):
        chunk = list(range(first, min(first + batch, len(workloads))))
        req.each(lambda i: _create_workload(req, workloads[i], placements[i]), chunk)
        done = sum(w.replicas for w in workloads[: chunk[-1] + 1])
        rate = done / (time.monotonic() - started)
        print(f"  created {done}/{total} pods ({rate:.0f}/s)", file=sys.stderr, flush=True)
    return Population(namespaces, node_zone, workloads, prefix)


# --------------------------------------------------------------------------- churn


@dataclass
class Change:
    """One change of the churn phase: what was done, when it was complete, and how to tell
    that a policy status reflects it."""

    kind: str
    what: str
    done_wall: float
    seen: Callable[[dict[str, Any]], bool]
    # "namespace/name" of the workload whose new violation a ViolationFound Event names
    workload: str | None = None


def _violations_of(status: dict[str, Any], w: Workload) -> list[dict[str, Any]]:
    return [
        v
        for v in status.get("violations") or []
        if v.get("namespace") == w.namespace and (v.get("workload") or {}).get("name") == w.name
    ]


def scale_down(req: Requests, pop: Population, rng: random.Random) -> Change:
    """A balanced workload of 8+ replicas scaled in by the ReplicaSet controller without regard
    to the spread: every pod of one zone goes (the Deployment's generation rises, its revision
    does not)."""
    w = rng.choice(
        [w for w in pop.workloads if not w.skewed and w.replicas >= 8 and w.revision == 1]
    )
    zone = rng.choice(ZONES)
    gone = [p for p, n in w.pods.items() if pop.nodes.get(n) == zone]
    w.replicas -= len(gone)
    ns = w.namespace
    req.merge(
        f"/apis/apps/v1/namespaces/{ns}/deployments/{w.name}", {"spec": {"replicas": w.replicas}}
    )
    req.merge(
        f"/apis/apps/v1/namespaces/{ns}/replicasets/{w.name}-{w.rs_hash}",
        {"spec": {"replicas": w.replicas}},
    )
    req.each(lambda p: req.delete(f"/api/v1/namespaces/{ns}/pods/{p}"), gone)
    for p in gone:
        w.pods.pop(p)
    w.skewed = True
    return Change(
        "scale-down",
        f"{ns}/{w.name} {w.replicas + len(gone)} -> {w.replicas} (all of {zone})",
        time.time(),
        lambda st: bool(_violations_of(st, w)),
        f"{ns}/{w.name}",
    )


def lose_node(req: Requests, pop: Population, rng: random.Random) -> Change:
    """A node gone with its pods (as the node lifecycle controller and the garbage collector
    would leave it); the ReplicaSets' replacements are not made (no controller runs)."""
    node = rng.choice(
        sorted(n for n in pop.nodes if any(n in w.pods.values() for w in pop.workloads[:200]))
    )
    expected = len(pop.nodes) - 1
    for w in pop.workloads:
        gone = [p for p, n in w.pods.items() if n == node]
        req.each(lambda p, ns=w.namespace: req.delete(f"/api/v1/namespaces/{ns}/pods/{p}"), gone)
        for p in gone:
            w.pods.pop(p)
    req.delete(f"/api/v1/nodes/{node}")
    pop.nodes.pop(node)
    return Change(
        "node loss",
        f"{node} and its pods",
        time.time(),
        lambda st: (st.get("summary") or {}).get("nodes") == expected,
    )


def add_nodes(req: Requests, pop: Population, rng: random.Random, count: int = 3) -> Change:
    """Empty nodes join one zone (Ready, untainted)."""
    zone = rng.choice(ZONES)
    start = len(pop.nodes) + 100_000
    names = [(f"{pop.prefix}-node-{start + i:06d}", zone) for i in range(count)]
    _add_nodes(req, names)
    pop.nodes.update(names)
    expected = len(pop.nodes)
    return Change(
        "node add",
        f"{count} nodes in {zone}",
        time.time(),
        lambda st: (st.get("summary") or {}).get("nodes") == expected,
    )


def roll_out(req: Requests, pop: Population, rng: random.Random) -> Change:
    """Half a rollout, as the Deployment controller leaves one in progress: revision 2, a new
    ReplicaSet holding half the replicas (placed, skewed, in one zone), the old one the rest."""
    w = rng.choice(
        [w for w in pop.workloads if w.replicas >= 6 and w.revision == 1 and not w.skewed]
    )
    ns, old_hash = w.namespace, w.rs_hash
    new_hash = f"{rng.getrandbits(32):08x}"
    moving = sorted(w.pods)[: w.replicas // 2]
    w.revision = 2
    req.merge(
        f"/apis/apps/v1/namespaces/{ns}/deployments/{w.name}",
        {
            "metadata": {"annotations": {"deployment.kubernetes.io/revision": "2"}},
            "spec": {"template": {"metadata": {"labels": {"track": "2"}}}},
        },
    )
    rs = req.post(
        f"/apis/apps/v1/namespaces/{ns}/replicasets", _replica_set(w, new_hash, len(moving), 2)
    )
    req.merge(
        f"/apis/apps/v1/namespaces/{ns}/replicasets/{w.name}-{old_hash}",
        {"spec": {"replicas": w.replicas - len(moving)}},
    )
    req.each(lambda p: req.delete(f"/api/v1/namespaces/{ns}/pods/{p}"), moving)
    for p in moving:
        w.pods.pop(p)
    zone = rng.choice(ZONES)
    in_zone = [n for n, z in pop.nodes.items() if z == zone]
    placed = [(f"{w.name}-{new_hash}-{i:03d}", rng.choice(in_zone)) for i in range(len(moving))]
    _create_pods(req, w, placed, new_hash, rs["metadata"]["uid"])

    def seen(st: dict[str, Any]) -> bool:
        return any(
            (v.get("matchLabels") or {}).get("pod-template-hash") == new_hash
            for v in _violations_of(st, w)
        )

    return Change(
        "rollout",
        f"{ns}/{w.name} half rolled to {new_hash} (new pods in {zone})",
        time.time(),
        seen,
        f"{ns}/{w.name}",
    )
