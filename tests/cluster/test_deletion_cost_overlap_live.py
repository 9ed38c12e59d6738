"""Two policies writing pod-deletion-costs over one Deployment, on the real control plane.

`respread run` as deploy/'s service account scans both every 10 s. The policy that named the
pods first keeps them (cost_owner.py). The other policy, first by name and with different
settings (`maxPatchesPerScan`, `whenUnsatisfiable`, `takeOver`), reports the overlap and never
patches a pod. The audit log counts the patches over several scans of both policies. New pods
from a scale-up go to the owner.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kube_harness import AuditLog
from kube_helpers import (
    OPERATOR_USER,
    costed_by,
    create_policy,
    delete_policy,
    scanned_after,
    wait_for,
)
from kubernetes import client
from scene import Scene

from respread.core.annotations import COST_POLICY

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]  # the fixtures crd and operator


def costing(scene: Scene, name: str, **deletion_cost: Any) -> None:
    """An Enforce policy writing pod-deletion-costs (``deletionCost``'s fields, and ``when``:
    the constraints it orders for) in the scene's namespace, and evicting nothing."""
    when = deletion_cost.pop("when", ["DoNotSchedule"])
    create_policy(
        scene.custom,
        name,
        scene.namespace,
        mode="Enforce",
        constraints={"whenUnsatisfiable": when},
        remediation={"evict": False, "deletionCost": {"enabled": True, **deletion_cost}},
    )


def pod_patches(audit: AuditLog, since: int, namespace: str) -> list[dict[str, Any]]:
    """The operator's pod patches in the namespace since the mark, as the API server logged
    them (with their request bodies)."""
    return [
        e
        for e in audit.events(since)
        if e.get("stage") == "ResponseComplete"
        and (e.get("user") or {}).get("username") == OPERATOR_USER
        and e.get("verb") == "patch"
        and (e.get("objectRef") or {}).get("resource") == "pods"
        and (e.get("objectRef") or {}).get("namespace") == namespace
    ]


def named_in(patch: dict[str, Any]) -> str | None:
    body = patch.get("requestObject") or {}
    value = ((body.get("metadata") or {}).get("annotations") or {}).get(COST_POLICY)
    return value if isinstance(value, str) else None


def costs_written(scene: Scene, policy: str, count: int, what: str) -> None:
    """Every pod carries the policy's cost, and the scan that wrote them has ended.

    A scan writes its patches one by one in removal order: the new pods of a scale-up may get
    their costs before the old pods it reorders do, so every pod can look costed while the
    scan is still writing. Scans of one policy never overlap: once a scan begun after that has
    written the status, the writing scan is over."""
    wait_for(lambda: costed_by(scene.pods("web"), policy, count), 90, what, 0.5)
    since = time.time()
    scanned = partial(scanned_after, scene.custom, policy, since)
    wait_for(scanned, 60, f"{policy}: a scan after {what}")


def scans(custom: client.CustomObjectsApi, names: list[str], count: int) -> dict[str, Any]:
    """Wait until each policy has scanned `count` more times; the last statuses."""
    last: dict[str, Any] = {}
    for _ in range(count):
        since = time.time()
        for name in names:
            last[name] = wait_for(partial(scanned_after, custom, name, since), 60, f"{name} scan")
    return last


def test_two_policies_over_one_deployment_one_owner_and_no_flapping(
    scene: Scene, operator: Path
) -> None:
    custom, audit_log, namespace = scene.custom, scene.audit, scene.namespace
    scene.nodes.create_zones({"zone-a": 1, "zone-b": 1, "zone-c": 1})
    scene.deploy("web", 6)
    scene.ready("web", 6)
    owner, other = f"b-{namespace}", f"a-{namespace}"  # the other is first by name
    costing(scene, owner)
    try:
        costs_written(scene, owner, 6, "the owner's costs")
        when = ["DoNotSchedule", "ScheduleAnyway"]
        costing(scene, other, maxPatchesPerScan=1, takeOver=True, when=when)
        mark = audit_log.mark()
        statuses = scans(custom, [owner, other], 3)
        patches = pod_patches(audit_log, mark, namespace)
        print(f"pod patches over 3 scans of both policies: {len(patches)}")
        assert patches == [], [named_in(p) for p in patches]
        assert costed_by(scene.pods("web"), owner, 6)
        overlap = statuses[other]["deletionCost"]
        assert overlap["overlaps"] == 6, overlap
        (example,) = overlap["overlapping"]
        assert example["policy"] == owner and example["pods"] == 6, example
        assert statuses[owner]["deletionCost"]["overlaps"] == 0, statuses[owner]
        assert statuses[owner]["deletionCost"]["managed"] == 6, statuses[owner]

        # a scale-up: the new pods carry no name; the owner of their ReplicaSet writes them
        mark = audit_log.mark()
        scene.scale("web", 9)
        scene.ready("web", 9)
        costs_written(scene, owner, 9, "the new pods' costs")
        written = pod_patches(audit_log, mark, namespace)
        print(
            f"pod patches after the scale-up: {len(written)}, naming {set(map(named_in, written))}"
        )
        assert written and {named_in(p) for p in written} == {owner}
        mark = audit_log.mark()
        statuses = scans(custom, [owner, other], 3)
        assert pod_patches(audit_log, mark, namespace) == []
        assert statuses[other]["deletionCost"]["overlaps"] == 9
        assert scene.status(other)["deletionCost"]["written"] == 0
        assert "Traceback" not in operator.read_text(errors="replace")
    finally:
        delete_policy(custom, other)
        delete_policy(custom, owner)
