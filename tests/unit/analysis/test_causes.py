"""Causes from evidence: one function decides, from the objects first, then from what changed
since the previous scan; Unknown only where neither holds any.

The scene: Deployment web (ReplicaSet web-h1, revision 1) holds 3/1/1 pods over zones a/b/c
against maxSkew 1, with nothing that says how. Each row adds one piece of evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from respread.analysis.causes import (
    Attribution,
    Cause,
    Facts,
    PreviousScan,
    attribute,
    cause_key,
)
from respread.analysis.groups import Analysis, analyze
from respread.core.model import (
    Autoscaler,
    ClusterState,
    Effect,
    OwnerRef,
    Pod,
    ReplicaStatus,
    Workload,
)
from tests.support.builders import eviction_policy, hard, pod, sel, state, taint, zone_node
from tests.support.constants import ZONE
from tests.support.tables import cases

POLICY = eviction_policy()
T0 = 1_000_000.0  # the nodes' creation
PLACED = T0 + 3600  # the pods'
SPREAD = hard(ZONE, sel(app="web"))
KEYED = hard(ZONE, sel(app="web"), match_label_keys=("pod-template-hash",))


def _pod(i: int, node: str, rs: str = "web-h1", constraint: object = SPREAD) -> Pod:
    h = rs.rsplit("-", 1)[1]
    return pod(
        f"{rs}-{i}",
        node,
        {"app": "web", "pod-template-hash": h},
        constraints=(constraint,),
        owner=OwnerRef("ReplicaSet", rs),
        created=PLACED,
    )


def _deployment(generation: int = 1, revision: str = "1") -> Workload:
    return Workload(
        "Deployment",
        "default",
        "web",
        sel(app="web"),
        replicas=5,
        generation=generation,
        observed_generation=generation,
        revision=revision,
    )


def _rs(name: str, revision: str, replicas: int, status_replicas: int | None = None) -> Workload:
    return Workload(
        "ReplicaSet",
        "default",
        name,
        sel(app="web", **{"pod-template-hash": name.rsplit("-", 1)[1]}),
        replicas=replicas,
        owner=OwnerRef("Deployment", "web"),
        revision=revision,
        status_replicas=status_replicas,
    )


def scene(**changes: Any) -> ClusterState:
    nodes = [zone_node(f"n{z}", z, created=T0) for z in "abc"]
    pods = [_pod(i, n) for i, n in enumerate(["na", "na", "na", "nb", "nc"])]
    base = state(nodes, pods, workloads=[_deployment(), _rs("web-h1", "1", 5)])
    return replace(base, **changes)


def _with_node(name: str, **kw: Any) -> Callable[[ClusterState], ClusterState]:
    def change(s: ClusterState) -> ClusterState:
        nodes = tuple(replace(n, **kw) if n.name == name else n for n in s.nodes)
        return replace(s, nodes=nodes)

    return change


def _workloads(*ws: Workload) -> Callable[[ClusterState], ClusterState]:
    return lambda s: replace(s, workloads=ws)


def _extra_pods(*ps: Pod) -> Callable[[ClusterState], ClusterState]:
    return lambda s: replace(s, pods=s.pods + ps)


def _pods(*ps: Pod) -> Callable[[ClusterState], ClusterState]:
    return lambda s: replace(s, pods=ps)


def _all(*fs: Callable[[ClusterState], ClusterState]) -> Callable[[ClusterState], ClusterState]:
    def change(s: ClusterState) -> ClusterState:
        for f in fs:
            s = f(s)
        return s

    return change


def _hpa(s: ClusterState) -> ClusterState:
    return replace(s, autoscalers=(Autoscaler("default", "web-hpa", "Deployment", "web"),))


def _causes(cluster: ClusterState, previous: PreviousScan | None = None) -> list[Attribution]:
    analysis = analyze(cluster, POLICY)
    facts = Facts(analysis)
    return [attribute(g, facts, previous) for g in analysis.violations]


ROLLOUT_KEYED = _pods(
    *(_pod(i, n, "web-h1", KEYED) for i, n in enumerate(["na", "na", "na"])),
    *(_pod(i, n, "web-h2", KEYED) for i, n in enumerate(["nb", "nc"])),
)

ROWS = [
    ("nothing says", lambda s: s, Cause.UNKNOWN, "nothing in the cluster's objects"),
    (
        "deployment spec changed beyond its revision",
        _workloads(_deployment(generation=3), _rs("web-h1", "1", 5)),
        Cause.SCALE_DOWN,
        "spec changed 2 time(s) without a new template revision",
    ),
    (
        "the revision read from the ReplicaSets",
        _workloads(_deployment(generation=2, revision=""), _rs("web-h1", "1", 5)),
        Cause.SCALE_DOWN,
        "(generation 2, revision 1)",
    ),
    (
        "an autoscaler named",
        _all(_workloads(_deployment(generation=2), _rs("web-h1", "1", 5)), _hpa),
        Cause.SCALE_DOWN,
        "HorizontalPodAutoscaler web-hpa scales it",
    ),
    (
        "a ReplicaSet scaling in",
        _workloads(_deployment(), _rs("web-h1", "1", 5, status_replicas=7)),
        Cause.SCALE_DOWN,
        "ReplicaSet default/web-h1 is scaling in (7 replicas, 5 desired)",
    ),
    (
        "a Deployment scaling in",
        _workloads(
            replace(_deployment(), rollout=ReplicaStatus(replicas=7)), _rs("web-h1", "1", 5)
        ),
        Cause.SCALE_DOWN,
        "Deployment default/web is scaling in (7 replicas, 5 desired)",
    ),
    (
        "a node of the emptiest zone not ready",
        _with_node("nc", ready=False),
        Cause.NODE_LOSS,
        "node nc of topology.kubernetes.io/zone c, the emptiest domain, is not Ready",
    ),
    (
        "a node of the emptiest zone unreachable",
        _with_node(
            "nb", taints=(taint("node.kubernetes.io/unreachable", effect=Effect.NO_EXECUTE),)
        ),
        Cause.NODE_LOSS,
        "is unreachable",
    ),
    (
        "a node being removed by the cluster autoscaler",
        _with_node("nc", taints=(taint("ToBeDeletedByClusterAutoscaler"),)),
        Cause.NODE_LOSS,
        "being removed by the cluster autoscaler",
    ),
    (
        "a cordoned node",
        _with_node("nc", unschedulable=True),
        Cause.NODE_LOSS,
        "is cordoned",
    ),
    (
        "a pod bound to a node the state lacks",
        _extra_pods(_pod(9, "gone")),
        Cause.NODE_LOSS,
        "1 pod(s) of Deployment default/web are bound to node(s) gone",
    ),
    (
        "an emptiest zone whose node joined after the pods",
        _with_node("nc", created=PLACED + 60),
        Cause.NODE_ADDED,
        "topology.kubernetes.io/zone c: its node(s) joined after every pod",
    ),
    (
        "pods of two ReplicaSets in one group",
        _pods(
            *(_pod(i, n) for i, n in enumerate(["na", "na", "nb"])),
            _pod(7, "na", "web-h2"),
            _pod(8, "nc", "web-h2"),
        ),
        Cause.ROLLING_UPDATE,
        "pods come from 2 ReplicaSets (web-h1, web-h2)",
    ),
    (
        "a rollout keyed on pod-template-hash: each ReplicaSet its own group",
        _all(
            ROLLOUT_KEYED,
            _workloads(_deployment(2, "2"), _rs("web-h1", "1", 3), _rs("web-h2", "2", 2)),
        ),
        Cause.ROLLING_UPDATE,
        "Deployment default/web is rolling out: ReplicaSets web-h1 (revision 1, 3 pods)",
    ),
    (
        "a finished rollout whose constraint did not key on pod-template-hash",
        _all(
            _pods(*(_pod(i, n, "web-h2") for i, n in enumerate(["na", "na", "na", "nb", "nc"]))),
            _workloads(_deployment(2, "2"), _rs("web-h1", "1", 0), _rs("web-h2", "2", 5)),
        ),
        Cause.ROLLING_UPDATE,
        "the pods of ReplicaSet web-h2 (revision 2) were placed while those of web-h1",
    ),
    (
        "fewer eligible domains than minDomains",
        _pods(
            *(
                replace(
                    p,
                    spec=replace(p.spec, constraints=(hard(ZONE, sel(app="web"), min_domains=4),)),
                )
                for p in scene().pods
            )
        ),
        Cause.TOO_FEW_DOMAINS,
        "3 eligible topology.kubernetes.io/zone domain(s) for minDomains 4",
    ),
]


@cases(("change", "cause", "says"), ROWS)
def test_the_evidence_decides_the_cause(
    change: Callable[[ClusterState], ClusterState], cause: Cause, says: str
) -> None:
    found = _causes(change(scene()))
    assert found, "the scene is violated"
    assert {a.cause for a in found} == {cause}, found
    assert any(says in a.message for a in found), found


def _previous(cluster: ClusterState) -> PreviousScan:
    return PreviousScan.of(analyze(cluster, POLICY))


def test_without_evidence_in_the_objects_the_previous_scan_decides() -> None:
    now = scene()
    more_pods = replace(now, pods=(*now.pods, _pod(5, "nb"), _pod(6, "nc")))
    assert [a.cause for a in _causes(now, _previous(more_pods))] == [Cause.SCALE_DOWN]
    node_gone = replace(now, nodes=(*now.nodes, zone_node("nx", "c")))
    assert [a.cause for a in _causes(now, _previous(node_gone))] == [Cause.NODE_LOSS]
    node_added = replace(now, nodes=(*now.nodes, zone_node("nd", "d", created=T0)))
    assert [a.cause for a in _causes(node_added, _previous(now))] == [Cause.NODE_ADDED]


def test_the_objects_decide_before_the_previous_scan() -> None:
    """The CLI (no previous scan) and the operator (with one) give the same cause whenever the
    objects hold evidence, whatever each policy's previous scan saw."""
    scaled = scene(workloads=(_deployment(generation=2), _rs("web-h1", "1", 5)))
    more_pods = replace(scaled, pods=(*scaled.pods, _pod(5, "nb")))
    extra_node = replace(scaled, nodes=(*scaled.nodes, zone_node("nx", "c")))
    alone = _causes(scaled)
    assert alone == _causes(scaled, _previous(more_pods)) == _causes(scaled, _previous(extra_node))
    assert [a.cause for a in alone] == [Cause.SCALE_DOWN]


def test_an_ongoing_violation_keeps_its_first_cause() -> None:
    analysis: Analysis = analyze(scene(workloads=(_deployment(generation=2),)), POLICY)
    group = analysis.violations[0]
    w = group.workload
    key = (w.namespace, w.kind, w.name, ZONE, "")
    first = Attribution(Cause.NODE_ADDED, "node nx joined since the previous scan")
    assert attribute(group, Facts(analysis), None, {key: first}) == first
    unknown = Attribution(Cause.UNKNOWN, "nothing")
    assert attribute(group, Facts(analysis), None, {key: unknown}).cause is Cause.SCALE_DOWN


@pytest.mark.parametrize("status", [None, -1, "7", True])
def test_an_unreadable_status_count_is_no_evidence(status: object) -> None:
    from respread.inputs.objects import load_documents

    doc = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-h1", "namespace": "default"},
        "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": status},
    }
    loaded = load_documents([("rs.yaml", doc)])
    assert not loaded.problems
    assert loaded.state.workloads[0].status_replicas is None


def test_a_rollouts_replica_sets_are_two_groups_with_two_keys_both_rolling_update() -> None:
    """With matchLabelKeys pod-template-hash each ReplicaSet's pods are a group of their own:
    two violations, told apart by the fifth part of their key, both RollingUpdate."""
    cluster = _all(
        _pods(
            *(_pod(i, n, "web-h1", KEYED) for i, n in enumerate(["na", "na", "na"])),
            *(_pod(i, n, "web-h2", KEYED) for i, n in enumerate(["nb", "nb"])),
        ),
        _workloads(_deployment(2, "2"), _rs("web-h1", "1", 3), _rs("web-h2", "2", 2)),
    )(scene())
    analysis = analyze(cluster, POLICY)
    facts = Facts(analysis)
    assert sorted(cause_key(g) for g in analysis.violations) == [
        ("default", "Deployment", "web", ZONE, "pod-template-hash=h1"),
        ("default", "Deployment", "web", ZONE, "pod-template-hash=h2"),
    ]
    assert {attribute(g, facts).cause for g in analysis.violations} == {Cause.ROLLING_UPDATE}


def _tracks(a: list[str], b: list[str]) -> ClusterState:
    """Deployment web's pods in two groups of one ReplicaSet, by matchLabelKeys on `track`."""
    spread = hard(ZONE, sel(app="web"), match_label_keys=("track",))
    pods = [
        pod(
            f"web-h1-{track}{i}",
            node,
            {"app": "web", "pod-template-hash": "h1", "track": track},
            constraints=(spread,),
            owner=OwnerRef("ReplicaSet", "web-h1"),
            created=PLACED,
        )
        for track, nodes in (("a", a), ("b", b))
        for i, node in enumerate(nodes)
    ]
    return scene(pods=tuple(pods))


def test_the_previous_scan_counts_a_workloads_pods_over_all_its_groups() -> None:
    """Groups of 4 and 2 pods, as the previous scan saw them: no scale-in (each group against
    the other's count would make one); a pod fewer is one, of the whole workload."""
    four, two = ["na", "na", "na", "nb"], ["na", "na"]
    for unchanged in (_tracks(four, two), _tracks(two, four)):
        assert len(analyze(unchanged, POLICY).violations) == 2
        assert [a.cause for a in _causes(unchanged, _previous(unchanged))] == [Cause.UNKNOWN] * 2
    before = _tracks(four, two)
    fewer = _tracks(four, ["na"])
    found = _causes(fewer, _previous(before))
    assert [a.cause for a in found] == [Cause.SCALE_DOWN] * len(found) and found
    assert all("went from 6 to 5 pods" in a.message for a in found), found
