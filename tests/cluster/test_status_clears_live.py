"""Status fields that became empty are cleared in the stored object (the real API server
applying the operator's merge patch of the status subresource).

A DryRun policy with surge enabled over two Deployments placed while only zone-a existed
(4 pods there, 0 in zone-b and zone-c: skew 4 over maxSkew 1): `web`, whose budget refuses
every eviction, gets a surge planned; `api`, with no budget, gets evictions planned (and a
surge skipped: eviction fixes it). The status then lists both violations, the plan and the
surges. Once both Deployments are deleted, the next scan finds nothing: `violations` and
`plan` are stored empty, and `surges` is gone (a merge patch that left it out would keep the
last surges for good: a finished surge stayed `Planned`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kube_harness import ControlPlane
from kube_helpers import (
    FakeNodes,
    list_pods,
    scanned_after,
    spread_deployment,
    status_of,
    wait_for,
    wait_pods_ready,
)
from kubernetes import client
from test_surge_live import policy, skewed, surge_spec

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]


def test_violations_plan_and_surges_clear_once_their_cause_is_gone(
    e2e_cluster: ControlPlane,
    operator: Path,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    policy_v1: client.PolicyV1Api,
) -> None:
    custom = client.CustomObjectsApi(api_client)
    skewed(fake_nodes, core_v1, apps_v1, policy_v1, namespace, {"web": {}}, later_zones=False)
    apps_v1.create_namespaced_deployment(
        namespace, spread_deployment("api", 4, node_selector=fake_nodes.node_selector)
    )
    wait_pods_ready(core_v1, namespace, "app=api", 4)
    fake_nodes.create_zones({"zone-b": 1, "zone-c": 1})
    name = f"rbp-{namespace}"
    spec = surge_spec("DryRun") | {"eviction": {"minPodAge": "0s"}}
    with policy(custom, name, namespace, **spec):

        def filled() -> dict[str, Any] | None:
            st = status_of(custom, name)
            surged = {s["workload"]["name"]: s["state"] for s in st.get("surges") or ()}
            planned = {p["workload"]["name"] for p in st.get("plan") or ()}
            return st if surged.get("web") == "Planned" and "api" in planned else None

        st = wait_for(filled, 90, "the violations, the plan and the surges in the status")
        assert {v["workload"]["name"] for v in st["violations"]} == {"web", "api"}
        assert {s["workload"]["name"]: s["state"] for s in st["surges"]} == {
            "web": "Planned",
            "api": "Skipped",
        }

        for app in ("web", "api"):
            apps_v1.delete_namespaced_deployment(app, namespace, propagation_policy="Foreground")
        wait_for(
            lambda: not list_pods(core_v1, namespace, "app in (web, api)"), 60, "the pods gone"
        )
        gone = time.time()
        after = wait_for(lambda: scanned_after(custom, name, gone), 60, "a scan after that")
        print("status after:", {k: after.get(k) for k in ("violations", "plan", "surges")})
        assert after["violations"] == [] and after["violationsTotal"] == 0
        assert after["plan"] == [] and after["planTotal"] == 0
        assert "surges" not in after, after["surges"]
        balanced = {c["type"]: c["status"] for c in after["conditions"]}["Balanced"]
        assert balanced == "True"
    assert "Traceback" not in operator.read_text(errors="replace")
