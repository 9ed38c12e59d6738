"""Objects the API server accepts but respread cannot use are left out and reported, and the
operator's scans go on (the same ObjectParser rules as the command line's loader).

In a namespace with a balanced Deployment (2 pods in each of two zones, maxSkew 1), pods are
created directly on the zone-a node:
- two with a request respread refuses (a CPU request of 1e30, a memory request of 1e26: both
  beyond what an int64 holds, both valid resource.Quantity values, kept as written where a
  binary-suffixed one would be capped) and the Deployment's label:
  were they counted, zone-a would hold 4 pods to zone-b's 2, a violation;
- one with 1,000 labels of 63 characters, and one whose controller is a kind nobody serves:
  both usable, and counted.
The policy's status must then come from a scan after they exist, succeed, report no violation
and count the usable pods; the operator's log must name each left-out pod and its field.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kube_helpers import scanned_after, wait_for
from scene import Scene

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]


def bare_pod(name: str, node: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    requests = extra.pop("requests", {"cpu": "10m"})
    meta = {"name": name, "labels": labels, **extra}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node,
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.invalid/respread/fake:1",
                    "resources": {"requests": requests},
                }
            ],
        },
    }


def test_unusable_objects_are_left_out_and_reported_and_the_scan_goes_on(
    scene: Scene, operator: Path
) -> None:
    custom, namespace = scene.custom, scene.namespace
    zones = scene.zones({"zone-a": 1, "zone-b": 1})
    node_a = next(node for node, zone in zones.items() if zone == "zone-a")
    scene.deploy("web", 4)
    scene.ready("web", 4)

    web = {"app": "web"}
    refused = {
        "odd-cpu": bare_pod("odd-cpu", node_a, web, requests={"cpu": "1e30"}),
        "odd-memory": bare_pod("odd-memory", node_a, web, requests={"memory": "1e26"}),
    }
    usable = {
        "many-labels": bare_pod(
            "many-labels", node_a, {f"label-{i}": "v" * 63 for i in range(1000)}
        ),
        "unknown-owner": bare_pod(
            "unknown-owner",
            node_a,
            {"app": "widget"},
            ownerReferences=[
                {
                    "apiVersion": "example.invalid/v1",
                    "kind": "Widget",
                    "name": "w",
                    "uid": str(uuid.uuid4()),
                    "controller": True,
                }
            ],
        ),
    }
    for body in (*refused.values(), *usable.values()):
        scene.core.create_namespaced_pod(namespace, body)  # the API server accepts every one

    name = f"rbp-{namespace}"
    started = time.time()
    with scene.rebalancing(name):
        # A scan that began after the pods were created may still run on a cache whose pod
        # watch has not delivered them (a loaded machine): wait for one that counts the usable
        # ones. The watch delivers in order, so its cache has ingested (and logged) the refused
        # ones, created first, too.
        def scanned_them() -> dict[str, Any] | None:
            st = scanned_after(custom, name, started)
            return st if st and st.get("summary", {}).get("pods", 0) >= 4 + len(usable) else None

        status = wait_for(scanned_them, 90, "a scan counting the hostile pods")
        conditions = {c["type"]: c["status"] for c in status["conditions"]}
        assert conditions["ScanSucceeded"] == "True", status["conditions"]
        assert status["summary"]["violations"] == 0, status.get("violations")

        log = Path(operator).read_text(errors="replace")
        for pod, field in (
            ("odd-cpu", "spec.containers[0].resources.requests.cpu"),
            ("odd-memory", "spec.containers[0].resources.requests.memory"),
        ):
            assert f"left out Pod {namespace}/{pod}: field {field}: out of range" in log, pod
        for pod in usable:
            assert f"{namespace}/{pod}" not in log, pod
        assert max(len(line) for line in log.splitlines()) < 2000

        # And the scans go on: a later one succeeds too.
        later = time.time()
        status = wait_for(lambda: scanned_after(custom, name, later), 60, "another scan")
        assert {c["type"]: c["status"] for c in status["conditions"]}["ScanSucceeded"] == "True"
