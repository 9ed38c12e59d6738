"""Status fields that became empty are cleared in the stored object (the real API server
applying the operator's merge patch of the status subresource).

A DryRun policy with surge enabled over two Deployments placed while only zone-a existed
(4 pods there, 0 in zone-b and zone-c: skew 4 over maxSkew 1): `web`, whose budget refuses
every eviction, gets a surge planned; `api`, with no budget, gets evictions planned (and a
surge skipped: eviction fixes it). The status then lists both violations, the plan and the
surges. Once both Deployments are deleted, the next scan finds nothing: `violations` and
`plan` are stored empty, and `surges` is gone (a merge patch that left it out would keep the
last surges for good: a finished surge stayed `Planned`); Balanced is Unknown (NothingSelected),
not True, as the policy now selects no pod."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kube_helpers import list_pods, scanned_after, wait_for
from scene import Scene
from test_surge_live import skewed, surge_spec

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]


def test_violations_plan_and_surges_clear_once_their_cause_is_gone(
    scene: Scene, operator: Path
) -> None:
    skewed(scene, {"web": {}}, later_zones=False)
    scene.deploy("api", 4)
    scene.ready("api", 4)
    scene.nodes.create_zones({"zone-b": 1, "zone-c": 1})
    name = f"rbp-{scene.namespace}"
    spec = surge_spec("DryRun") | {"eviction": {"minPodAge": "0s"}}
    with scene.rebalancing(name, **spec):

        def filled() -> dict[str, Any] | None:
            st = scene.status(name)
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
            scene.apps.delete_namespaced_deployment(
                app, scene.namespace, propagation_policy="Foreground"
            )
        wait_for(
            lambda: not list_pods(scene.core, scene.namespace, "app in (web, api)"),
            60,
            "the pods gone",
        )
        gone = time.time()
        after = wait_for(lambda: scanned_after(scene.custom, name, gone), 60, "a scan after that")
        assert after["violations"] == [] and after["violationsTotal"] == 0
        assert after["plan"] == [] and after["planTotal"] == 0
        assert "surges" not in after, after["surges"]
        # no all-clear from an empty scope (issue 21): the namespace holds no pod any more
        balanced = {c["type"]: c for c in after["conditions"]}["Balanced"]
        assert (balanced["status"], balanced["reason"]) == ("Unknown", "NothingSelected"), balanced
    assert "Traceback" not in operator.read_text(errors="replace")
