"""What the operator remembers survives a restart: it is kept in the policy's status (the
violations' causes and `since`, `status.cooldowns`) and read back by the next operator."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest
from kube_helpers import TWO_PER_ZONE, pod_is_ready, pods_per_zone, scanned_after, wait_for
from scene import Scene

if TYPE_CHECKING:
    from operator_fixtures import StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]


def evicted(scene: Scene, since: int) -> list[dict[str, Any]]:
    return [e for e in scene.evictions(since) if e["responseStatus"]["code"] == 201]


def test_a_restarted_operator_keeps_causes_since_and_cooldowns(
    scene: Scene, operator_factory: StartOperator
) -> None:
    """A scale-down leaves 0/3/3 (two moves needed, one per workload and cooldown of 10
    minutes). The Enforce policy reports cause ScaleDown and evicts one pod; the replacement
    lands in zone-a. The operator is killed (SIGKILL) and a new one started: its scans still say
    ScaleDown (the new operator saw no scale-down itself) with the same `since`, and the
    workload, in cooldown, is not evicted from again: the plan defers it."""
    custom = scene.custom
    node_zones = scene.zones(TWO_PER_ZONE)
    scene.deploy("web", 9)
    pods = scene.ready("web", 9, timeout=180)
    op = operator_factory()
    name = f"rbp-{scene.namespace}"
    eviction = {"minPodAge": "0s", "cooldown": "10m"}
    with scene.rebalancing(name, mode="Enforce", eviction=eviction):
        mark = scene.audit.mark()
        wait_for(lambda: scanned_after(custom, name, 0), 90, "a first scan (9 pods, balanced)")
        for pod in pods:
            in_zone_a = node_zones[pod.spec.node_name] == "zone-a"
            scene.cost(pod.metadata.name, "-100" if in_zone_a else "100")
        scene.costs_seen()
        scene.scale("web", 6)

        wait_for(lambda: evicted(scene, mark), 90, "the first eviction")

        def one_moved() -> list[Any] | None:
            ready = [p for p in scene.pods("web") if pod_is_ready(p)]
            counts = pods_per_zone(ready, node_zones)
            return ready if len(ready) == 6 and counts["zone-a"] == 1 else None

        wait_for(one_moved, 120, "the replacement to land in zone-a (1/2/3 or 1/3/2)")

        def in_cooldown() -> dict[str, Any] | None:
            st = scene.status(name)
            deferred = [s for s in st.get("plan", ()) if s["state"] == "Deferred"]
            cooling = any("cooldown" in s.get("reason", "") for s in deferred)
            return st if cooling and st.get("cooldowns") else None

        before = wait_for(in_cooldown, 60, "a scan deferring the next move for the cooldown")
        (v_before,) = before["violations"]
        assert v_before["cause"] == "ScaleDown", v_before
        (cooling,) = before["cooldowns"]
        assert cooling["workload"] == {"kind": "Deployment", "name": "web"}, cooling
        assert "lastEvictionTime" in cooling, cooling

        op.kill()
        restarted = time.time()
        op2 = operator_factory()
        after = wait_for(
            lambda: scanned_after(custom, name, restarted + 1), 90, "a scan by the new operator"
        )
        (v_after,) = after["violations"]
        assert v_after["cause"] == "ScaleDown", v_after
        assert v_after["causeMessage"] == v_before["causeMessage"]
        assert v_after["since"] == v_before["since"]
        assert any(
            s["state"] == "Deferred" and "cooldown" in s.get("reason", "") for s in after["plan"]
        ), after["plan"]
        assert after["cooldowns"][0]["lastEvictionTime"] == cooling["lastEvictionTime"]
        # Two more scans (10 s apart): still in cooldown, nothing more is evicted.
        later = time.time()
        wait_for(lambda: scanned_after(custom, name, later + 10), 60, "two more scans")
        done = evicted(scene, mark)
        assert len(done) == 1, [(e["objectRef"]["name"], e["stageTimestamp"]) for e in done]
        assert op2.alive
