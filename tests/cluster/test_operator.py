"""The operator end to end on the real control plane: a scale-down leaves a zone skew; in
dry-run the policy's status reports it (cause ScaleDown, the right plan) and the audit log shows
no eviction; switched to Enforce, it evicts, the real scheduler places the replacement and the
skew converges within maxSkew, without exceeding the budget."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kube_helpers import AT_ONCE, TWO_PER_ZONE, pods_per_zone, skew, wait_for, zone_a_and_two_of_b
from scene import Scene

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]  # the fixtures crd and operator


def skew_by_scale_down(scene: Scene, node_zones: dict[str, str]) -> None:
    """9 pods 3/3/3 scaled to 4; deletion costs make the ReplicaSet leave 0/1/3."""
    cheap = zone_a_and_two_of_b(scene.ready("web", 9), node_zones)
    survivors = scene.scale_in("web", 4, lambda pod: pod.metadata.name in cheap)
    assert pods_per_zone(survivors, node_zones) == {"zone-a": 0, "zone-b": 1, "zone-c": 3}


def test_dry_run_reports_the_scale_down_and_evicts_nothing_then_enforce_converges(
    scene: Scene, operator: Path
) -> None:
    node_zones = scene.zones(TWO_PER_ZONE)
    scene.deploy("web", 9)
    scene.budget("web", max_unavailable=1)
    scene.ready("web", 9)
    mark = scene.audit.mark()
    name = f"rbp-{scene.namespace}"
    with scene.rebalancing(name, mode="DryRun", eviction=AT_ONCE):
        # The first scan sees the balanced workload (and remembers its 9 pods).
        wait_for(lambda: scene.status(name).get("lastScanTime"), 90, "a first scan")
        assert scene.status(name)["summary"]["violations"] == 0

        skew_by_scale_down(scene, node_zones)

        def reported() -> dict[str, Any] | None:
            st = scene.status(name)
            return st if st.get("summary", {}).get("violations") == 1 else None

        st = wait_for(reported, 90, "the violation in the policy status")
        (violation,) = st["violations"]
        assert violation["namespace"] == scene.namespace
        assert violation["workload"] == {"kind": "Deployment", "name": "web"}
        assert violation["topologyKey"] == "topology.kubernetes.io/zone"
        assert (violation["skew"], violation["maxSkew"], violation["fixable"]) == (3, 1, True)
        assert violation["verdict"] == "Fixable"
        assert violation["cause"] == "ScaleDown", violation["causeMessage"]
        assert violation["domains"]["max"] == {"name": "zone-c", "pods": 3}
        (step,) = st["plan"]
        assert step["state"] == "Planned"
        assert step["fromDomain"]["topology.kubernetes.io/zone"] == "zone-c"
        assert step["toDomain"]["topology.kubernetes.io/zone"] == "zone-a"
        conditions = {c["type"]: c["status"] for c in st["conditions"]}
        assert conditions == {
            "Ready": "True",
            "ScanSucceeded": "True",
            "Balanced": "False",
            "InputComplete": "True",
            "PodsSelected": "True",
        }

        # Dry-run: the API server saw no eviction request at all.
        time.sleep(12)  # at least one more scan
        assert scene.evictions(mark) == []

        # Enforce: the operator evicts, the scheduler places the replacement, skew converges.
        scene.patch_policy(name, mode="Enforce")

        def converged() -> bool:
            pods = [
                p
                for p in scene.pods("web")
                if p.metadata.deletion_timestamp is None and p.spec.node_name
            ]
            ready = len(pods) == 4 and all(
                any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))
                for p in pods
            )
            return ready and skew(pods_per_zone(pods, node_zones)) <= 1

        wait_for(converged, 120, "the skew to converge within maxSkew")
        done = scene.evictions(mark)
        assert done, "Enforce mode made no eviction request"
        assert all(e["responseStatus"]["code"] == 201 for e in done), done
        assert len(done) == 1  # 0/1/3 needs exactly one move: zone-c to zone-a
        wait_for(
            lambda: scene.status(name).get("summary", {}).get("violations") == 0,
            90,
            "the status to report the workload balanced",
        )


def test_a_scale_down_is_reported_within_seconds_not_at_the_next_interval(
    scene: Scene, operator: Path
) -> None:
    """With a 5-minute interval, the scale-down is in the status within seconds of the
    ReplicaSet settling: the watch events prompt a scan (runtime/prompt.py, default 1 s of
    quiet), the interval does not."""
    node_zones = scene.zones(TWO_PER_ZONE)
    scene.deploy("web", 9)
    scene.ready("web", 9)
    name = f"rbp-{scene.namespace}"
    with scene.rebalancing(name, mode="DryRun", schedule={"interval": "5m"}):
        wait_for(lambda: scene.status(name).get("lastScanTime"), 90, "a first scan")
        assert scene.status(name)["summary"]["violations"] == 0
        skew_by_scale_down(scene, node_zones)
        settled = time.monotonic()

        def reported() -> bool:
            return bool(scene.status(name).get("summary", {}).get("violations") == 1)

        wait_for(reported, 60, "the violation in the status, well before the 5 m interval")
        took = time.monotonic() - settled
        print(f"the scale-down was in the status {took:.1f}s after the pods settled")
        assert scene.status(name)["violations"][0]["cause"] == "ScaleDown"
