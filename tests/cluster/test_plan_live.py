"""`respread plan --kubeconfig`: one scan of a live cluster; a clear error when there is none."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml
from kube_harness import ControlPlane
from kube_helpers import FakeNodes, spread_deployment, wait_pods_ready
from kubernetes import client
from tests.support.processes import respread_cli

pytestmark = pytest.mark.cluster


def test_plan_reads_the_live_cluster(
    e2e_cluster: ControlPlane,
    namespace: str,
    fake_nodes: FakeNodes,
    apps_v1: client.AppsV1Api,
    core_v1: client.CoreV1Api,
    audit_log: object,
) -> None:
    # Pods placed 3/0 by hand (nodeName): a skew the scheduler would never have made.
    nodes = fake_nodes.create_zones({"zone-a": 1, "zone-b": 1})
    apps_v1.create_namespaced_deployment(
        namespace, spread_deployment("api", 0, node_selector=fake_nodes.node_selector)
    )
    target = nodes[0].metadata.name
    for i in range(3):
        core_v1.create_namespaced_pod(
            namespace,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"api-{i}", "labels": {"app": "api"}},
                "spec": {
                    "nodeName": target,
                    "containers": [{"name": "app", "image": "x"}],
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": {"matchLabels": {"app": "api"}},
                        }
                    ],
                    "nodeSelector": dict(fake_nodes.node_selector),
                },
            },
        )
    wait_pods_ready(core_v1, namespace, "app=api", 3)

    result = respread_cli("plan", "--kubeconfig", str(e2e_cluster.kubeconfig), "-o", "json", "-q")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    ours = [v for v in report["violations"] if v["namespace"] == namespace]
    # A bare pod is its own workload: one violation each, all seeing the same counts.
    assert sorted(v["workload"]["name"] for v in ours) == ["api-0", "api-1", "api-2"]
    for violation in ours:
        assert violation["workload"]["kind"] == "Pod"
        assert violation["domains"] == {"zone-a": 3, "zone-b": 0}
        assert not violation["fixable"]  # nothing would replace a bare pod
    skipped = {s["pod"] for s in report["skipped"] if s["namespace"] == namespace}
    assert skipped == {"api-0", "api-1", "api-2"}


def test_an_unreachable_api_server_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "x",
                "clusters": [
                    {
                        "name": "x",
                        "cluster": {
                            "server": f"https://127.0.0.1:{port}",
                            "insecure-skip-tls-verify": True,
                        },
                    }
                ],
                "users": [{"name": "x", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
            }
        )
    )
    result = respread_cli("plan", "--kubeconfig", str(kubeconfig), "-q")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("respread: error: cannot reach the API server")
    assert "Traceback" not in result.stderr
