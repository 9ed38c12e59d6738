"""A large cluster made fast, for the operator's scale benchmark and its regression test.

Nodes over three zones and ReplicaSets whose pods are created already bound to them (no
scheduler needed), a tenth of the workloads skewed into two zones. Nodes carry no kwok
annotation: nothing else writes to the pods. Creation runs on 8 connections at once.

Each ReplicaSet exists before its pods (they name its uid as their owner), so where a
controller-manager runs, its ReplicaSet controller would create replicas of its own in between
and later delete the surplus, changing the spread the tests count. A ValidatingAdmissionPolicy,
bound to the population's namespaces, refuses it pod creation there.
"""

from __future__ import annotations

import concurrent.futures
import random
import sys
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client

ZONES = ("zone-a", "zone-b", "zone-c")
PODS_PER_WORKLOAD = 15
WORKLOADS_PER_NAMESPACE = 50


POPULATION_LABEL = "respread.test/population"
REPLICASET_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"
PROBE_LABEL = "respread.test/admission-probe"  # a dry-run pod the policy refuses, to see it work


@dataclass(frozen=True)
class Population:
    namespaces: list[str]
    nodes: list[str]
    workloads: int
    skewed: int
    admission_policy: str


def remove(api: client.ApiClient, population: Population) -> None:
    """Pods first, forced (no kubelet will ever confirm their end), then namespaces, nodes and
    the admission policy."""
    core = client.CoreV1Api(api)
    for ns in population.namespaces:
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
        core.delete_namespace(ns)
    for node in population.nodes:
        core.delete_node(node)
    admission = client.AdmissionregistrationV1Api(api)
    admission.delete_validating_admission_policy_binding(population.admission_policy)
    admission.delete_validating_admission_policy(population.admission_policy)


def wait_removed(api: client.ApiClient, populations: list[Population], timeout: float) -> None:
    """Return once the populations' namespaces (their contents deleted by the namespace
    controller) and nodes are gone: until then the control plane is still digesting thousands
    of deletions, and its controllers' caches lag behind what a next test writes."""
    core = client.CoreV1Api(api)
    namespaces = {ns for p in populations for ns in p.namespaces}
    nodes = {node for p in populations for node in p.nodes}
    deadline = time.monotonic() + timeout
    while True:
        left = namespaces & {n.metadata.name for n in core.list_namespace().items}
        left |= nodes & {n.metadata.name for n in core.list_node().items}
        if not left:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{len(left)} namespaces and nodes still there after {timeout:.0f} s"
            )
        time.sleep(1)


def _refuse_controller_replicas(api: client.ApiClient, prefix: str, probe_ns: str) -> str:
    """Bind a policy refusing the ReplicaSet controller (and probe pods) pod creation in the
    namespaces labelled with this population; return once the API server enforces it."""
    name = f"respread-test-population-{prefix}"
    admission = client.AdmissionregistrationV1Api(api)
    admission.create_validating_admission_policy(
        {
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["pods"],
                        }
                    ]
                },
                "validations": [
                    {
                        "expression": f"request.userInfo.username != '{REPLICASET_CONTROLLER}'"
                        " && !(has(object.metadata.labels)"
                        f" && '{PROBE_LABEL}' in object.metadata.labels)",
                        "message": "a test population binds its own pods",
                        "reason": "Forbidden",
                    }
                ],
            },
        }
    )
    admission.create_validating_admission_policy_binding(
        {
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {POPULATION_LABEL: prefix}}
                },
            },
        }
    )
    core = client.CoreV1Api(api)
    probe = {
        "metadata": {"generateName": "probe-", "labels": {PROBE_LABEL: "1"}},
        "spec": {"containers": [{"name": "c", "image": "registry.example/probe:1"}]},
    }
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            core.create_namespaced_pod(probe_ns, probe, dry_run="All")
        except client.ApiException as exc:
            if exc.status == 403 and "population" in str(exc.body):
                return name
            if exc.status != 403:  # e.g. the namespace's ServiceAccount not found yet
                raise
        time.sleep(0.2)
    raise RuntimeError(f"admission policy {name} not enforced after 60 s")


def _post(api: client.ApiClient, path: str, body: dict[str, Any]) -> None:
    method, url, headers, payload, _ = api.param_serialize(
        "POST",
        path,
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    for attempt in range(5):
        resp = api.call_api(method, url, header_params=headers, body=payload)
        resp.read()
        if resp.status in (200, 201, 409):
            return
        if resp.status in (429, 500, 503, 504) and attempt < 4:
            time.sleep(0.5 * (attempt + 1))
            continue
        raise RuntimeError(f"POST {path}: {resp.status} {resp.data[:300]!r}")


def _node(name: str, zone: str) -> dict[str, Any]:
    resources = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "topology.kubernetes.io/zone": zone,
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "type": "kwok",
            },
        },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _template(app: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app, "pod-template-hash": "5d8f7c"}},
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example/app:1.0",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
            # The nodes have no kubelet: under the e2e controllers of the session's control
            # plane they go NotReady, and the taint manager would evict these pods after 300 s
            # (the default toleration), changing the skew the tests count.
            "tolerations": [
                {"key": key, "operator": "Exists", "effect": "NoExecute"}
                for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
            ],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": app}},
                    "matchLabelKeys": ["pod-template-hash"],
                }
            ],
        },
    }


def populate(
    api: client.ApiClient,
    nodes: int,
    pods: int,
    *,
    prefix: str,
    namespace_labels: dict[str, str] | None = None,
    seed: int = 1,
    progress: bool = True,
) -> Population:
    """N nodes over three zones; ReplicaSets of PODS_PER_WORKLOAD pods bound round-robin
    across the zones, a tenth of them all in two zones (skewed). Names start with `prefix`."""
    rng = random.Random(seed)
    by_zone: dict[str, list[str]] = {z: [] for z in ZONES}
    node_bodies = []
    for i in range(nodes):
        zone = ZONES[i % len(ZONES)]
        name = f"{prefix}-node-{i:05d}"
        by_zone[zone].append(name)
        node_bodies.append(_node(name, zone))
    workloads = pods // PODS_PER_WORKLOAD
    namespaces = [f"{prefix}-{i:03d}" for i in range(-(-workloads // WORKLOADS_PER_NAMESPACE))]
    skewed = 0
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda b: _post(api, "/api/v1/nodes", b), node_bodies))
        for ns in namespaces:
            meta = {"name": ns, "labels": {**(namespace_labels or {}), POPULATION_LABEL: prefix}}
            _post(api, "/api/v1/namespaces", {"metadata": meta})
            _post(
                api,
                f"/api/v1/namespaces/{ns}/serviceaccounts",
                {"metadata": {"name": "default"}},
            )
        policy = _refuse_controller_replicas(api, prefix, namespaces[0])
        apps = client.AppsV1Api(api)
        done = 0
        started = time.monotonic()
        for w in range(workloads):
            ns, app = namespaces[w // WORKLOADS_PER_NAMESPACE], f"app-{w:05d}"
            template = _template(app)
            rs = apps.create_namespaced_replica_set(
                ns,
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {"name": f"{app}-5d8f7c", "labels": {"app": app}},
                    "spec": {
                        "replicas": PODS_PER_WORKLOAD,
                        "selector": {"matchLabels": {"app": app}},
                        "template": template,
                    },
                },
            )
            owner = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": rs.metadata.name,
                "uid": rs.metadata.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
            zones = list(ZONES)
            if w % 10 == 0:  # skewed: every replica in two of the three zones
                zones = zones[:2]
                skewed += 1
            bodies = []
            for r in range(PODS_PER_WORKLOAD):
                zone = zones[r % len(zones)]
                node = rng.choice(by_zone[zone])
                bodies.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {
                            "name": f"{app}-5d8f7c-{r:03d}",
                            "labels": template["metadata"]["labels"],
                            "ownerReferences": [owner],
                        },
                        "spec": {**template["spec"], "nodeName": node},
                    }
                )
            path = f"/api/v1/namespaces/{ns}/pods"
            list(pool.map(lambda b, p=path: _post(api, p, b), bodies))
            done += len(bodies)
            if progress and done % 5000 < PODS_PER_WORKLOAD:
                rate = done / (time.monotonic() - started)
                print(f"  created {done}/{pods} pods ({rate:.0f}/s)", file=sys.stderr, flush=True)
    node_names = [b["metadata"]["name"] for b in node_bodies]
    return Population(namespaces, node_names, workloads, skewed, policy)
