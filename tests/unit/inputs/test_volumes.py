"""Pods pinned by their volumes (inputs/volumes.py): claim -> bound volume -> node affinity."""

from __future__ import annotations

import pytest
import yaml

from respread.inputs.objects import load_texts
from respread.inputs.volumes import refusing_volume

ZONE_A = {
    "required": {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
                ]
            }
        ]
    }
}


def _docs(volume_name: str | None, affinity: object, ephemeral: bool = False) -> str:
    volume = (
        {"name": "data", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
        if ephemeral
        else {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}
    )
    claim = "db-0-data" if ephemeral else "data-db-0"
    docs = [
        {"kind": "Node", "metadata": {"name": n, "labels": {"topology.kubernetes.io/zone": z}}}
        for n, z in (("a1", "a"), ("b1", "b"))
    ]
    docs.append(
        {
            "kind": "Pod",
            "metadata": {"name": "db-0", "namespace": "data"},
            "spec": {"nodeName": "a1", "containers": [{"name": "c"}], "volumes": [volume]},
        }
    )
    docs.append(
        {
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": "data"},
            "spec": {"volumeName": volume_name} if volume_name else {},
        }
    )
    spec = {"nodeAffinity": affinity} if affinity is not None else {}
    docs.append({"kind": "PersistentVolume", "metadata": {"name": "pv-0"}, "spec": spec})
    return yaml.safe_dump_all(docs)


# name -> (claim's volumeName, the volume's nodeAffinity, ephemeral, nodes the pod may use)
CASES = {
    "a zonal volume pins the pod to its zone": ("pv-0", ZONE_A, False, ["a1"]),
    "an ephemeral volume's claim is <pod>-<volume>": ("pv-0", ZONE_A, True, ["a1"]),
    "an unbound claim pins nothing": (None, ZONE_A, False, ["a1", "b1"]),
    "a volume without node affinity pins nothing": ("pv-0", None, False, ["a1", "b1"]),
    "a claim bound to a volume not in the snapshot": ("pv-9", ZONE_A, False, ["a1", "b1"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_bound_volume_restricts_the_nodes(name: str) -> None:
    volume, affinity, ephemeral, allowed = CASES[name]
    loaded = load_texts([("x", _docs(volume, affinity, ephemeral))])
    assert loaded.problems == ()
    (pod,) = loaded.state.pods
    assert [n.name for n in loaded.state.nodes if refusing_volume(pod, n) is None] == allowed


def test_a_malformed_volume_affinity_names_the_field() -> None:
    loaded = load_texts([("x", _docs("pv-0", {"required": "zone a"}))])
    assert [(p.kind, p.field) for p in loaded.problems] == [
        ("PersistentVolume", "spec.nodeAffinity.required")
    ]


def test_a_failed_scheduling_event_is_the_evidence_of_a_pod_without_the_condition() -> None:
    docs = [
        {"kind": "Pod", "metadata": {"name": "web-0", "namespace": "shop"}, "spec": {}},
        {
            "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "shop"},
            "spec": {},
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "own condition",
                    }
                ]
            },
        },
        *(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"web-{i}.{n}", "namespace": "shop"},
                "involvedObject": {"kind": "Pod", "name": f"web-{i}", "namespace": "shop"},
                "reason": "FailedScheduling",
                "message": f"0/3 nodes are available ({n})",
                "lastTimestamp": f"2030-01-01T00:0{n}:00Z",
            }
            for i in (0, 1)
            for n in (1, 2)
        ),
        {
            "kind": "Event",
            "metadata": {"name": "other", "namespace": "shop"},
            "involvedObject": {"kind": "Pod", "name": "web-0"},
            "reason": "Scheduled",
            "message": "not evidence",
        },
    ]
    loaded = load_texts([("x", yaml.safe_dump_all(docs))])
    assert loaded.problems == ()
    assert {p.name: p.unschedulable for p in loaded.state.pods} == {
        "web-0": "FailedScheduling: 0/3 nodes are available (2)",
        "web-1": "Unschedulable: own condition",
    }
