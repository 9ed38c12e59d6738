"""`respread plan --kubeconfig K --policy-name P` computes what the operator computes for P.

Both run the one pipeline (respread.pipeline.scan); the command line seeds P's memory from its
status, as a newly elected leader does. On the same cluster state the two must agree: the
same violations (keys, skew, domains, cause and its message) and the same planned and deferred
evictions. The cause is a scale-down that no change between the operator's last two scans shows
any more, but the Deployment's objects still do (its generation above its revision): causes come
from the objects first (analysis/causes.py), so the operator, the command line with the
policy's memory and the command line without it all say the same. For an Enforce policy both
read the eviction ledger too (another policy's recent evictions), and defer the same moves.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kube_harness import ControlPlane
from kube_helpers import (
    DELETION_COST,
    GROUP,
    PLURAL,
    VERSION,
    FakeNodes,
    create_policy,
    delete_policy,
    list_pods,
    pod_is_ready,
    pods_per_zone,
    replicaset_controller_current,
    scanned_after,
    spread_deployment,
    wait_for,
    wait_pods_ready,
    zone_of_nodes,
)
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from scene import Scene
from tests.support.processes import respread_cli

from respread.analysis.groups import WorkloadRef
from respread.kube import reader
from respread.kube.client import KubeError
from respread.remedies.evict.ledger import LEDGER, Recorded, key_of, render_entries

if TYPE_CHECKING:
    from operator_fixtures import StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]

LEDGER_NS = "respread-system"  # the operator's namespace, outside a pod


def digest(v: Mapping[str, Any]) -> dict[str, Any]:
    """A report violation as the status lists it: key, skew, domains (count, fullest,
    emptiest), cause and message, verdict."""
    domains: Mapping[str, int] = v["domains"]
    fullest = max(domains.items(), key=lambda kv: (kv[1], kv[0]))
    emptiest = min(domains.items(), key=lambda kv: (kv[1], kv[0]))
    return {
        "namespace": v["namespace"],
        "workload": v["workload"],
        "topologyKey": v["topologyKey"],
        "maxSkew": v["maxSkew"],
        "minDomains": v["minDomains"],
        "skew": v["skew"],
        "globalMinimum": v["globalMinimum"],
        "domains": {
            "count": v["domainCount"],
            "max": {"name": fullest[0], "pods": fullest[1]},
            "min": {"name": emptiest[0], "pods": emptiest[1]},
        },
        "pods": v["pods"],
        "violatingPods": v["violatingPods"],
        "cause": v["cause"],
        "causeMessage": v["causeMessage"],
        "fixable": v["fixable"],
        "verdict": v["verdict"],
        "message": v["message"],
    }


STEP = ("namespace", "pod", "node", "workload", "fromDomain", "toDomain", "predictedNode")


def steps(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's evictions and deferred evictions as the status's plan lists them."""

    def step(e: Mapping[str, Any], state: str, reason: str) -> dict[str, Any]:
        return {**{k: e[k] for k in STEP}, "state": state, "reason": reason}

    return [step(e, "Planned", e["reason"]) for e in report["evictions"]] + [
        step(e, "Deferred", e.get("deferredBy", "")) for e in report["deferred"]
    ]


def status_steps(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{k: s[k] for k in (*STEP, "state", "reason")} for s in status.get("plan", ())]


def status_violations(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in s.items() if k not in ("since", "remedy")} for s in status["violations"]
    ]


def test_plan_with_policy_name_agrees_with_the_operator(
    e2e_cluster: ControlPlane,
    operator_factory: StartOperator,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    tmp_path: Path,
) -> None:
    custom = client.CustomObjectsApi(api_client)
    fake_nodes.create_zones({"zone-a": 2, "zone-b": 2, "zone-c": 2})
    node_zones = zone_of_nodes(core_v1, fake_nodes.node_selector)
    apps_v1.create_namespaced_deployment(
        namespace, spread_deployment("web", 9, node_selector=fake_nodes.node_selector)
    )
    pods = wait_pods_ready(core_v1, namespace, "app=web", 9, timeout=180)
    operator_factory()
    name = f"rbp-{namespace}"
    create_policy(custom, name, namespace, mode="DryRun", eviction={"minPodAge": "0s"})
    try:
        wait_for(lambda: scanned_after(custom, name, 0), 90, "a first scan (9 pods, balanced)")
        # The ReplicaSet controller removes the cheapest pods first: all of zone-a's.
        for pod in pods:
            cost = "-100" if node_zones[pod.spec.node_name] == "zone-a" else "100"
            core_v1.patch_namespaced_pod(
                pod.metadata.name, namespace, {"metadata": {"annotations": {DELETION_COST: cost}}}
            )
        replicaset_controller_current(core_v1, apps_v1, namespace)
        apps_v1.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 6}})

        def settled() -> bool:
            current = list_pods(core_v1, namespace, "app=web")
            counts = pods_per_zone(current, node_zones)
            return len(current) == 6 and all(map(pod_is_ready, current)) and counts["zone-a"] == 0

        wait_for(settled, 90, "0/3/3: zone-a's pods gone, nothing terminating")
        # Two scans after that: the last one's previous scan saw 6 pods too, so no change
        # between scans shows the scale-down; the Deployment does (generation 2 above revision
        # 1), and the cause comes from the objects first, for the operator and the CLI alike.
        after = time.time()
        wait_for(lambda: scanned_after(custom, name, after), 60, "a scan of 0/3/3")
        later = time.time()
        status = wait_for(lambda: scanned_after(custom, name, later), 60, "one more scan")
        (violation,) = status["violations"]
        assert violation["cause"] == "ScaleDown", violation
        assert (
            "spec changed 1 time(s) without a new template revision" in (violation["causeMessage"])
        ), violation

        kubeconfig = str(e2e_cluster.kubeconfig)
        started = time.time()
        result = respread_cli(
            "plan", "--kubeconfig", kubeconfig, "--policy-name", name, "-o", "json"
        )
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        # A scan after the command line's read, of the same (settled) state.
        status = wait_for(lambda: scanned_after(custom, name, started + 1), 60, "a later scan")

        assert report["policy"] == {"name": name, "mode": "DryRun"}
        assert [digest(v) for v in report["violations"]] == status_violations(status)
        assert report["violations"][0]["cause"] == "ScaleDown"
        assert steps(report) == status_steps(status)
        assert steps(report), "a plan to compare: 0/3/3 needs two moves"
        assert report["summary"]["violations"] == status["summary"]["violations"] == 1
        assert report["summary"]["plannedEvictions"] == status["summary"]["plannedEvictions"]

        # Without the policy's memory: the same cause, from the same objects.
        policy_file = tmp_path / "policy.json"
        policy_file.write_text(
            json.dumps(custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, name))
        )
        fresh = respread_cli(
            "plan", "--kubeconfig", kubeconfig, "--policy", str(policy_file), "-o", "json"
        )
        assert fresh.returncode == 0, fresh.stderr
        (alone,) = json.loads(fresh.stdout)["violations"]
        assert (alone["cause"], alone["causeMessage"]) == (
            "ScaleDown",
            violation["causeMessage"],
        ), alone
        assert steps(json.loads(fresh.stdout)) == steps(report)
    finally:
        delete_policy(custom, name)


def test_policy_name_errors_are_one_line(
    e2e_cluster: ControlPlane, crd: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = respread_cli(
        "plan", "--kubeconfig", str(e2e_cluster.kubeconfig), "--policy-name", "no-such-policy"
    )
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("respread: error: RebalancePolicy 'no-such-policy' not found at "), line

    # A cluster without the CRD answers 404 for the whole resource, as for this one.
    from respread.kube.client import api_client

    monkeypatch.setattr(reader, "POLICIES", "/apis/respread.invalid/v1alpha1/rebalancepolicies")
    with pytest.raises(KubeError, match=r"^the RebalancePolicy CRD is not installed at https://"):
        reader.read_policies(api_client(str(e2e_cluster.kubeconfig)))


def hold_in_ledger(core: client.CoreV1Api, workload: WorkloadRef, by: str) -> None:
    """An entry in the eviction ledger, as policy `by` writes one just before it evicts: the
    workload lost a pod now, and `by`'s cooldown (10 minutes) holds it."""
    now = time.time()
    entry = render_entries([Recorded(f"{workload.name}-x", "uid-x", by, f"{by}@1", now, now + 600)])
    try:
        core.patch_namespaced_config_map(LEDGER, LEDGER_NS, {"data": {key_of(workload): entry}})
    except ApiException as err:
        if err.status != 404:
            raise
        body = {"metadata": {"name": LEDGER}, "data": {key_of(workload): entry}}
        core.create_namespaced_config_map(LEDGER_NS, body)


def without_seconds(plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Plan steps with the numbers of their reasons blanked ("evicted P 3s ago; held 597s more":
    the two scans read the ledger a few seconds apart)."""
    return [{**s, "reason": re.sub(r"[0-9]+s", "Ns", s["reason"])} for s in plan]


def test_an_enforce_policy_is_planned_with_the_eviction_ledger_as_the_operator_plans_it(
    e2e_cluster: ControlPlane, scene: Scene, operator_factory: StartOperator
) -> None:
    """Another policy evicted from web a moment ago (the ledger, in the operator's namespace,
    says so): the operator's Enforce scan defers web's moves and evicts nothing, and `respread
    plan --policy-name` of the policy reads the same ledger and defers the same moves."""
    scene.zones({"zone-b": 2, "zone-c": 2})
    scene.deploy("web", 6)
    scene.ready("web", 6, timeout=180)
    scene.nodes.create_zones({"zone-a": 2})  # 0/3/3: two moves
    for i in range(2):
        scene.nodes.wait_ready(f"{scene.nodes.pool}-zone-a-{i}")
    hold_in_ledger(scene.core, WorkloadRef(scene.namespace, "Deployment", "web"), "other")
    operator_factory()
    mark = scene.audit.mark()
    name = f"rbp-{scene.namespace}"
    with scene.rebalancing(name, mode="Enforce", eviction={"minPodAge": "0s"}):
        wait_for(lambda: scanned_after(scene.custom, name, 0), 90, "a first scan")
        started = time.time()
        kubeconfig = str(e2e_cluster.kubeconfig)
        result = respread_cli(
            "plan", "--kubeconfig", kubeconfig, "--policy-name", name, "-o", "json"
        )
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        status = wait_for(lambda: scanned_after(scene.custom, name, started + 1), 60, "a scan")
    assert report["policy"] == {"name": name, "mode": "Enforce"}
    assert report["evictions"] == [] and report["deferred"], report
    assert without_seconds(steps(report)) == without_seconds(status_steps(status))
    assert all(
        s["state"] == "Deferred" and s["reason"].startswith("cooldown: RebalancePolicy other")
        for s in status_steps(status)
    ), status_steps(status)
    assert scene.evictions(mark) == []
