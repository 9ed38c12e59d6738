"""Loading manifests (``kubectl get -o yaml|json``) into a ClusterState (respread.inputs.objects).

A malformed object becomes one Problem (source, kind, namespace/name, field path) and is left
out; everything else still loads. The constraint rules are the API server's (spread-semantics.md
sections 1, 2.3 and 9).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from respread.core.model import (
    Effect,
    Labels,
    LabelSelector,
    Op,
    OwnerRef,
    Phase,
    Policy,
    Requirement,
    Resources,
    Taint,
    When,
)
from respread.inputs.objects import LoadResult, load_texts
from tests.support import kubectl_yaml
from tests.support.tables import cases

SOURCE = "snap.yaml"
MI = 2**20
GI = 2**30


def load_yaml(*docs: Any, source: str = SOURCE) -> LoadResult:
    return load_texts([(source, kubectl_yaml.dump_all(docs))])


def a_node(name: str = "n1", **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "z1"}},
    }
    doc.update(extra)
    return doc


def a_pod(name: str = "p1", namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}], **spec},
    }


def tsc(**fields: Any) -> dict[str, Any]:
    """A valid topology spread constraint, with ``fields`` overriding or (None) removing."""
    c: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    for k, v in fields.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    return c


def only(result: LoadResult) -> None:
    assert result.problems == ()


# --------------------------------------------------------------------------------------------
# Texts and documents


def test_multi_document_yaml_with_empty_documents() -> None:
    text = (
        "---\n"
        + yaml.safe_dump(a_node("n1"))
        + "---\n"
        + "---\n"  # an empty document
        + yaml.safe_dump(a_pod("p1"))
        + "---\n"
        + "# only a comment\n"
        + "---\n"
        + yaml.safe_dump(a_node("n2"))
    )
    result = load_texts([(SOURCE, text)])
    only(result)
    assert [n.name for n in result.state.nodes] == ["n1", "n2"]
    assert [p.name for p in result.state.pods] == ["p1"]


def test_json_object() -> None:
    result = load_texts([("pod.json", json.dumps(a_pod("p1")))])
    only(result)
    assert [p.key for p in result.state.pods] == ["default/p1"]


def test_json_kind_list() -> None:
    doc = {"apiVersion": "v1", "kind": "List", "items": [a_node("n1"), a_pod("p1"), a_pod("p2")]}
    result = load_texts([("all.json", json.dumps(doc, indent=2))])
    only(result)
    assert [n.name for n in result.state.nodes] == ["n1"]
    assert [p.name for p in result.state.pods] == ["p1", "p2"]


def test_yaml_flow_mapping_that_is_not_json() -> None:
    result = load_texts([(SOURCE, "{kind: Node, metadata: {name: n1}}\n")])
    only(result)
    assert [n.name for n in result.state.nodes] == ["n1"]


def test_yaml_pod_list() -> None:
    doc = {"apiVersion": "v1", "kind": "PodList", "items": [a_pod("p1"), a_pod("p2")]}
    result = load_yaml(doc)
    only(result)
    assert [p.name for p in result.state.pods] == ["p1", "p2"]


def test_nested_lists() -> None:
    inner_nodes = {"kind": "NodeList", "items": [a_node("n1"), a_node("n2")]}
    inner_pods = {"kind": "List", "items": [{"kind": "PodList", "items": [a_pod("p1")]}]}
    result = load_yaml({"apiVersion": "v1", "kind": "List", "items": [inner_nodes, inner_pods]})
    only(result)
    assert [n.name for n in result.state.nodes] == ["n1", "n2"]
    assert [p.name for p in result.state.pods] == ["p1"]


def test_empty_list_and_empty_text() -> None:
    result = load_texts([("a.yaml", ""), ("b.json", '{"kind": "List", "items": []}')])
    only(result)
    assert result.state.nodes == ()
    assert result.state.pods == ()


def test_unknown_kinds_are_ignored_silently() -> None:
    result = load_yaml(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}},
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "spec": "nonsense"},
        a_node("n1"),
    )
    only(result)
    assert [n.name for n in result.state.nodes] == ["n1"]


def test_invalid_yaml_text_is_one_problem_and_other_texts_load() -> None:
    bad = "kind: Pod\nmetadata: {name: [unclosed\n  - : : :\n"
    good = yaml.safe_dump(a_node("n1"))
    result = load_texts([("bad.yaml", bad), ("good.yaml", good)])
    assert len(result.problems) == 1
    assert result.problems[0].source == "bad.yaml"
    assert "bad.yaml" in str(result.problems[0])
    assert [n.name for n in result.state.nodes] == ["n1"]


def test_invalid_json_text_is_one_problem() -> None:
    result = load_texts([("bad.json", '{"kind": "Pod", "metadata": {"name": "p"')])
    assert len(result.problems) == 1
    assert result.problems[0].source == "bad.json"


# --------------------------------------------------------------------------------------------
# Malformed objects: one Problem each, with source, kind, namespace/name and field path


def pod_with(**spec: Any) -> dict[str, Any]:
    return a_pod("bad", "prod", **spec)


def pod_constraints(*constraints: dict[str, Any]) -> dict[str, Any]:
    return pod_with(topologySpreadConstraints=list(constraints))


TSC0 = "spec.topologySpreadConstraints[0]"
REQUIRED = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def with_requests(requests: dict[str, Any], key: str = "requests") -> dict[str, Any]:
    return pod_with(containers=[{"name": "c", "resources": {key: requests}}])


def node_affinity_expr(expr: dict[str, Any]) -> dict[str, Any]:
    return pod_with(
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expr]}]
                }
            }
        }
    )


MALFORMED_PODS = [
    # (id, pod document, field path)
    ("maxSkew 0", pod_constraints(tsc(maxSkew=0)), f"{TSC0}.maxSkew"),
    ("maxSkew negative", pod_constraints(tsc(maxSkew=-1)), f"{TSC0}.maxSkew"),
    ("maxSkew a string", pod_constraints(tsc(maxSkew="x")), f"{TSC0}.maxSkew"),
    ("maxSkew omitted", pod_constraints(tsc(maxSkew=None)), f"{TSC0}.maxSkew"),
    ("maxSkew a bool", pod_constraints(tsc(maxSkew=True)), f"{TSC0}.maxSkew"),
    ("topologyKey empty", pod_constraints(tsc(topologyKey="")), f"{TSC0}.topologyKey"),
    ("topologyKey omitted", pod_constraints(tsc(topologyKey=None)), f"{TSC0}.topologyKey"),
    (
        "whenUnsatisfiable unknown",
        pod_constraints(tsc(whenUnsatisfiable="Sometimes")),
        f"{TSC0}.whenUnsatisfiable",
    ),
    (
        "whenUnsatisfiable empty",
        pod_constraints(tsc(whenUnsatisfiable="")),
        f"{TSC0}.whenUnsatisfiable",
    ),
    (
        "whenUnsatisfiable omitted",
        pod_constraints(tsc(whenUnsatisfiable=None)),
        f"{TSC0}.whenUnsatisfiable",
    ),
    (
        "minDomains with ScheduleAnyway",
        pod_constraints(tsc(whenUnsatisfiable="ScheduleAnyway", minDomains=2)),
        f"{TSC0}.minDomains",
    ),
    ("minDomains 0", pod_constraints(tsc(minDomains=0)), f"{TSC0}.minDomains"),
    ("minDomains negative", pod_constraints(tsc(minDomains=-3)), f"{TSC0}.minDomains"),
    (
        "matchLabelKeys without labelSelector",
        pod_constraints(tsc(labelSelector=None, matchLabelKeys=["pod-template-hash"])),
        f"{TSC0}.matchLabelKeys",
    ),
    (
        "nodeAffinityPolicy unknown",
        pod_constraints(tsc(nodeAffinityPolicy="Maybe")),
        f"{TSC0}.nodeAffinityPolicy",
    ),
    (
        "nodeTaintsPolicy unknown",
        pod_constraints(tsc(nodeTaintsPolicy="honor")),
        f"{TSC0}.nodeTaintsPolicy",
    ),
    (
        "labelSelector unknown operator",
        pod_constraints(
            tsc(labelSelector={"matchExpressions": [{"key": "app", "operator": "Like"}]})
        ),
        f"{TSC0}.labelSelector.matchExpressions[0].operator",
    ),
    (
        "labelSelector Gt is not a label-selector operator",
        pod_constraints(
            tsc(
                labelSelector={
                    "matchExpressions": [{"key": "n", "operator": "Gt", "values": ["1"]}]
                }
            )
        ),
        f"{TSC0}.labelSelector.matchExpressions[0].operator",
    ),
    (
        "labelSelector In with no values",
        pod_constraints(
            tsc(labelSelector={"matchExpressions": [{"key": "app", "operator": "In"}]})
        ),
        f"{TSC0}.labelSelector.matchExpressions[0].values",
    ),
    (
        "labelSelector NotIn with empty values",
        pod_constraints(
            tsc(
                labelSelector={
                    "matchExpressions": [{"key": "app", "operator": "NotIn", "values": []}]
                }
            )
        ),
        f"{TSC0}.labelSelector.matchExpressions[0].values",
    ),
    (
        "labelSelector Exists with values",
        pod_constraints(
            tsc(
                labelSelector={
                    "matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]
                }
            )
        ),
        f"{TSC0}.labelSelector.matchExpressions[0].values",
    ),
    (
        "labelSelector second expression bad",
        pod_constraints(
            tsc(
                labelSelector={
                    "matchExpressions": [
                        {"key": "app", "operator": "Exists"},
                        {"key": "tier", "operator": "DoesNotExist", "values": ["a"]},
                    ]
                }
            )
        ),
        f"{TSC0}.labelSelector.matchExpressions[1].values",
    ),
    (
        "second constraint bad",
        pod_constraints(tsc(), tsc(topologyKey="kubernetes.io/hostname", maxSkew=0)),
        "spec.topologySpreadConstraints[1].maxSkew",
    ),
    (
        "bad cpu request",
        with_requests({"cpu": "lots"}),
        "spec.containers[0].resources.requests.cpu",
    ),
    (
        "bad memory request",
        with_requests({"memory": "1GB"}),
        "spec.containers[0].resources.requests.memory",
    ),
    (
        "bad node affinity operator",
        node_affinity_expr({"key": "zone", "operator": "Near", "values": ["a"]}),
        f"{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].operator",
    ),
    (
        "node affinity In with no values",
        node_affinity_expr({"key": "zone", "operator": "In"}),
        f"{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].values",
    ),
    (
        "node affinity Gt with two values",
        node_affinity_expr({"key": "gen", "operator": "Gt", "values": ["1", "2"]}),
        f"{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].values",
    ),
    (
        "toleration with unknown effect",
        pod_with(tolerations=[{"key": "k", "operator": "Exists", "effect": "Sometimes"}]),
        "spec.tolerations[0].effect",
    ),
    (
        "toleration with unknown operator",
        pod_with(tolerations=[{"key": "k", "operator": "Like"}]),
        "spec.tolerations[0].operator",
    ),
]


@cases(("doc", "field"), MALFORMED_PODS)
def test_malformed_pod_is_reported_and_left_out(doc: dict[str, Any], field: str) -> None:
    result = load_yaml(a_node("n1"), doc, a_pod("good", "prod"))
    assert len(result.problems) == 1, result.problems
    problem = result.problems[0]
    assert (problem.source, problem.kind, problem.name, problem.field) == (
        SOURCE,
        "Pod",
        "prod/bad",
        field,
    )
    assert problem.message
    text = str(problem)
    for part in (SOURCE, "Pod", "prod/bad", field):
        assert part in text
    assert [p.key for p in result.state.pods] == ["prod/good"]
    assert [n.name for n in result.state.nodes] == ["n1"]


def a_deployment(**template_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c"}], **template_spec},
            },
        },
    }


MALFORMED_OTHERS = [
    # (id, document, kind, name, field path)
    (
        "node taint with unknown effect",
        a_node("bad", spec={"taints": [{"key": "k", "effect": "Sometimes"}]}),
        "Node",
        "bad",
        "spec.taints[0].effect",
    ),
    (
        "node taint without effect",
        a_node("bad", spec={"taints": [{"key": "k", "value": "v"}]}),
        "Node",
        "bad",
        "spec.taints[0].effect",
    ),
    (
        "node allocatable bad quantity",
        a_node("bad", status={"allocatable": {"cpu": "four"}}),
        "Node",
        "bad",
        "status.allocatable.cpu",
    ),
    (
        "deployment template constraint",
        a_deployment(topologySpreadConstraints=[tsc(maxSkew=0)]),
        "Deployment",
        "shop/web",
        "spec.template.spec.topologySpreadConstraints[0].maxSkew",
    ),
    (
        "pdb selector bad operator",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "Equals"}]}},
        },
        "PodDisruptionBudget",
        "shop/web",
        "spec.selector.matchExpressions[0].operator",
    ),
    (
        "pod without a name",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "shop"}, "spec": {}},
        "Pod",
        None,
        "metadata.name",
    ),
]


@cases(("doc", "kind", "name", "field"), MALFORMED_OTHERS)
def test_malformed_object_is_reported_and_left_out(
    doc: dict[str, Any], kind: str, name: str | None, field: str
) -> None:
    result = load_yaml(doc, a_node("good"), a_pod("ok", "shop"))
    assert len(result.problems) == 1, result.problems
    problem = result.problems[0]
    assert (problem.source, problem.kind, problem.field) == (SOURCE, kind, field)
    if name is not None:
        assert problem.name == name
    assert [n.name for n in result.state.nodes] == ["good"]
    assert [p.key for p in result.state.pods] == ["shop/ok"]
    assert result.state.workloads == ()
    assert result.state.budgets == ()


def test_every_malformed_object_is_reported_once() -> None:
    result = load_yaml(
        pod_constraints(tsc(maxSkew=0)),
        a_pod("good", "prod"),
        a_node("bad", spec={"taints": [{"key": "k", "effect": "Never"}]}),
        a_node("n1"),
    )
    assert sorted((p.kind, p.name) for p in result.problems) == [
        ("Node", "bad"),
        ("Pod", "prod/bad"),
    ]
    assert [p.key for p in result.state.pods] == ["prod/good"]
    assert [n.name for n in result.state.nodes] == ["n1"]


def test_problem_names_the_file_it_came_from() -> None:
    result = load_texts(
        [
            ("a.yaml", yaml.safe_dump(a_node("n1"))),
            ("b.yaml", yaml.safe_dump(pod_constraints(tsc(maxSkew=0)))),
        ]
    )
    assert [p.source for p in result.problems] == ["b.yaml"]


# --------------------------------------------------------------------------------------------
# Constraints as loaded


def test_constraint_fields() -> None:
    doc = pod_constraints(
        tsc(
            maxSkew=2,
            minDomains=3,
            nodeAffinityPolicy="Ignore",
            nodeTaintsPolicy="Honor",
            matchLabelKeys=["pod-template-hash"],
            labelSelector={
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
            },
        ),
        tsc(whenUnsatisfiable="ScheduleAnyway", labelSelector=None),
    )
    result = load_yaml(doc)
    only(result)
    first, second = result.state.pods[0].spec.constraints
    assert first.max_skew == 2
    assert first.topology_key == "topology.kubernetes.io/zone"
    assert first.when is When.DO_NOT_SCHEDULE
    assert first.min_domains == 3
    assert first.node_affinity_policy is Policy.IGNORE
    assert first.node_taints_policy is Policy.HONOR
    assert first.match_label_keys == ("pod-template-hash",)
    assert first.selector == LabelSelector(
        (Requirement("app", Op.IN, ("web",)), Requirement("tier", Op.IN, ("a", "b")))
    )
    assert second.when is When.SCHEDULE_ANYWAY
    assert second.selector is None  # nil: matches nothing
    assert second.min_domains is None
    assert second.node_affinity_policy is None
    assert second.node_taints_policy is None


def test_empty_label_selector_is_not_nil() -> None:
    result = load_yaml(pod_constraints(tsc(labelSelector={})))
    only(result)
    assert result.state.pods[0].spec.constraints[0].selector == LabelSelector(())


def test_hard_and_soft_constraint_on_one_key_are_both_kept() -> None:
    doc = pod_constraints(tsc(), tsc(whenUnsatisfiable="ScheduleAnyway"))
    result = load_yaml(doc)
    only(result)
    assert [c.when for c in result.state.pods[0].spec.constraints] == [
        When.DO_NOT_SCHEDULE,
        When.SCHEDULE_ANYWAY,
    ]


# --------------------------------------------------------------------------------------------
# Pods


def pod_doc(
    meta: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", **(meta or {})},
        "spec": {"containers": [{"name": "c"}], **(spec or {})},
    }
    if status is not None:
        doc["status"] = status
    return doc


def load_pod(doc: dict[str, Any]) -> Any:
    result = load_yaml(doc)
    only(result)
    (p,) = result.state.pods
    return p


PHASES = [
    ("bound without status is Running", {"nodeName": "n1"}, None, Phase.RUNNING),
    ("unbound without status is Pending", {}, None, Phase.PENDING),
    ("status without phase, bound", {"nodeName": "n1"}, {}, Phase.RUNNING),
    ("explicit Succeeded", {"nodeName": "n1"}, {"phase": "Succeeded"}, Phase.SUCCEEDED),
    ("explicit Failed", {"nodeName": "n1"}, {"phase": "Failed"}, Phase.FAILED),
    ("explicit Pending while bound", {"nodeName": "n1"}, {"phase": "Pending"}, Phase.PENDING),
    ("explicit Unknown", {"nodeName": "n1"}, {"phase": "Unknown"}, Phase.UNKNOWN),
]


@cases(("spec", "status", "phase"), PHASES)
def test_pod_phase(spec: dict[str, Any], status: dict[str, Any] | None, phase: Phase) -> None:
    assert load_pod(pod_doc(spec=spec, status=status)).phase is phase


def test_pod_binding_and_namespace_default() -> None:
    doc = pod_doc(spec={"nodeName": "n7"})
    del doc["metadata"]["namespace"]
    p = load_pod(doc)
    assert (p.namespace, p.name, p.node_name) == ("default", "p", "n7")
    assert load_pod(pod_doc()).node_name is None


@pytest.mark.parametrize(
    ("meta", "terminating"),
    [
        ({"deletionTimestamp": "2026-11-22T10:00:00Z"}, True),
        ({"deletionTimestamp": "2026-11-22T10:00:00Z", "deletionGracePeriodSeconds": 30}, True),
        ({}, False),
    ],
    ids=["deletionTimestamp", "deletionTimestamp with grace", "no deletionTimestamp"],
)
def test_deletion_timestamp_means_terminating(meta: dict[str, Any], terminating: bool) -> None:
    assert load_pod(pod_doc(meta=meta, spec={"nodeName": "n1"})).terminating is terminating


def ref(kind: str, name: str, controller: bool | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "u-" + name}
    if controller is not None:
        r["controller"] = controller
    return r


OWNERS = [
    # (id, ownerReferences, expected owner)
    ("no references", None, None),
    ("empty list", [], None),
    ("controller true", [ref("ReplicaSet", "web-1", True)], OwnerRef("ReplicaSet", "web-1")),
    (
        "controller chosen among several",
        [ref("ConfigMap", "cfg", False), ref("StatefulSet", "db", True), ref("Foo", "f")],
        OwnerRef("StatefulSet", "db"),
    ),
    ("single ref without controller field", [ref("Job", "j")], OwnerRef("Job", "j")),
    ("single ref with controller false", [ref("ReplicaSet", "web-1", False)], None),
    ("two refs, no controller", [ref("ReplicaSet", "a"), ref("ReplicaSet", "b")], None),
    (
        "two refs, explicit false and missing",
        [ref("ReplicaSet", "a", False), ref("ReplicaSet", "b")],
        None,
    ),
]


@cases(("refs", "owner"), OWNERS)
def test_owner_reference(refs: list[dict[str, Any]] | None, owner: OwnerRef | None) -> None:
    meta = {"ownerReferences": refs} if refs is not None else {}
    got = load_pod(pod_doc(meta=meta)).owner
    assert got == owner
    if got is not None:
        assert got.controller is True


def container(**resources: Any) -> dict[str, Any]:
    return {"name": "c", "resources": resources}


REQUESTS = [
    # (id, spec fragment, Resources expected)
    ("no resources", {"containers": [{"name": "c"}]}, Resources()),
    (
        "one container",
        {"containers": [container(requests={"cpu": "250m", "memory": "64Mi"})]},
        Resources(cpu=250, memory=64 * MI),
    ),
    (
        "containers are summed",
        {
            "containers": [
                container(requests={"cpu": "100m", "memory": "64Mi"}),
                container(requests={"cpu": "200m", "memory": "128Mi"}),
            ]
        },
        Resources(cpu=300, memory=192 * MI),
    ),
    (
        "a larger init container wins, per resource",
        {
            "containers": [
                container(requests={"cpu": "100m", "memory": "64Mi"}),
                container(requests={"cpu": "200m", "memory": "64Mi"}),
            ],
            "initContainers": [container(requests={"cpu": "500m", "memory": "32Mi"})],
        },
        Resources(cpu=500, memory=128 * MI),
    ),
    (
        "init containers are not summed",
        {
            "containers": [container(requests={"cpu": "100m"})],
            "initContainers": [
                container(requests={"cpu": "300m"}),
                container(requests={"cpu": "400m"}),
            ],
        },
        Resources(cpu=400),
    ),
    (
        "a smaller init container changes nothing",
        {
            "containers": [container(requests={"cpu": "1", "memory": "1Gi"})],
            "initContainers": [container(requests={"cpu": "100m", "memory": "1Mi"})],
        },
        Resources(cpu=1000, memory=GI),
    ),
    (
        "limits stand in for missing requests",
        {"containers": [container(limits={"cpu": "2", "memory": "1Gi"})]},
        Resources(cpu=2000, memory=GI),
    ),
    (
        "requests win over limits, per resource",
        {"containers": [container(requests={"cpu": "500m"}, limits={"cpu": "2", "memory": "1Gi"})]},
        Resources(cpu=500, memory=GI),
    ),
    (
        "overhead is added after the init-container max",
        {
            "containers": [container(requests={"cpu": "300m"})],
            "initContainers": [container(requests={"cpu": "500m"})],
            "overhead": {"cpu": "50m", "memory": "10Mi"},
        },
        Resources(cpu=550, memory=10 * MI),
    ),
    (
        "a sidecar (restartable init container) adds to the containers",
        {
            "containers": [container(requests={"cpu": "100m"})],
            "initContainers": [{**container(requests={"cpu": "200m"}), "restartPolicy": "Always"}],
        },
        Resources(cpu=300),
    ),
    (
        "ephemeral storage and extended resources",
        {
            "containers": [
                container(requests={"ephemeral-storage": "1Gi", "nvidia.com/gpu": 1}),
                container(requests={"nvidia.com/gpu": "2"}),
            ]
        },
        Resources(ephemeral=GI, extended=(("nvidia.com/gpu", 3),)),
    ),
    (
        "numbers in YAML are quantities",
        {"containers": [container(requests={"cpu": 0.5, "memory": 1024})]},
        Resources(cpu=500, memory=1024),
    ),
]


@cases(("spec", "expected"), REQUESTS)
def test_pod_requests(spec: dict[str, Any], expected: Resources) -> None:
    assert load_pod(pod_doc(spec=spec)).spec.requests == expected


VOLUMES = [
    # (id, volumes, local_storage, persistent_volume_claims)
    ("no volumes", [], False, False),
    ("emptyDir", [{"name": "v", "emptyDir": {}}], True, False),
    ("memory emptyDir", [{"name": "v", "emptyDir": {"medium": "Memory"}}], True, False),
    ("hostPath", [{"name": "v", "hostPath": {"path": "/var/log"}}], True, False),
    ("configMap only", [{"name": "v", "configMap": {"name": "cfg"}}], False, False),
    (
        "secret and projected",
        [{"name": "s", "secret": {}}, {"name": "p", "projected": {}}],
        False,
        False,
    ),
    ("PVC", [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}], False, True),
    (
        "emptyDir and PVC",
        [{"name": "a", "emptyDir": {}}, {"name": "b", "persistentVolumeClaim": {"claimName": "d"}}],
        True,
        True,
    ),
]


@cases(("volumes", "local", "pvc"), VOLUMES)
def test_pod_volumes(volumes: list[dict[str, Any]], local: bool, pvc: bool) -> None:
    spec = load_pod(pod_doc(spec={"volumes": volumes})).spec
    assert (spec.local_storage, spec.persistent_volume_claims) == (local, pvc)


def test_pod_scheduling_fields() -> None:
    p = load_pod(
        pod_doc(
            meta={"labels": {"app": "web", "track": "canary"}},
            spec={
                "nodeName": "n1",
                "priority": 1000,
                "priorityClassName": "high",
                "nodeSelector": {"disk": "ssd"},
                "tolerations": [
                    {
                        "key": "dedicated",
                        "operator": "Equal",
                        "value": "db",
                        "effect": "NoSchedule",
                    },
                    {"operator": "Exists"},
                ],
            },
            status={"phase": "Pending", "nominatedNodeName": "n2"},
        )
    )
    assert p.labels == {"app": "web", "track": "canary"}
    assert p.priority == 1000
    assert p.spec.priority_class == "high"
    assert p.spec.affinity.node_selector == {"disk": "ssd"}
    assert p.spec.affinity.required_terms is None
    tol_dedicated, tol_all = p.spec.tolerations
    assert (
        tol_dedicated.key,
        tol_dedicated.operator,
        tol_dedicated.value,
        tol_dedicated.effect,
    ) == (
        "dedicated",
        "Equal",
        "db",
        Effect.NO_SCHEDULE,
    )
    assert (tol_all.key, tol_all.operator, tol_all.effect) == ("", "Exists", None)
    assert p.nominated_node == "n2"


def test_interning_shares_equal_labels_and_specs() -> None:
    result = load_yaml(a_pod("p1"), a_pod("p2"), a_pod("p3", "other"))
    only(result)
    p1, p2, p3 = result.state.pods
    assert p1.labels is p2.labels
    assert p1.labels is p3.labels  # equal labels, even across namespaces
    assert p1.spec is p2.spec


def test_interning_keeps_different_labels_apart() -> None:
    other = copy.deepcopy(a_pod("p2"))
    other["metadata"]["labels"] = {"app": "db"}
    result = load_yaml(a_pod("p1"), other)
    only(result)
    p1, p2 = result.state.pods
    assert p1.labels == {"app": "web"}
    assert p2.labels == {"app": "db"}


# --------------------------------------------------------------------------------------------
# Nodes


def load_node(doc: dict[str, Any]) -> Any:
    result = load_yaml(doc)
    only(result)
    (n,) = result.state.nodes
    return n


def test_node_labels_taints_and_unschedulable() -> None:
    n = load_node(
        a_node(
            "n1",
            spec={
                "unschedulable": True,
                "taints": [
                    {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                    {"key": "dedicated", "value": "db", "effect": "NoExecute"},
                    {"key": "soft", "value": "", "effect": "PreferNoSchedule"},
                ],
            },
        )
    )
    assert n.labels == {"topology.kubernetes.io/zone": "z1"}
    assert n.unschedulable is True
    assert n.taints == (
        Taint("node.kubernetes.io/unschedulable", "", Effect.NO_SCHEDULE),
        Taint("dedicated", "db", Effect.NO_EXECUTE),
        Taint("soft", "", Effect.PREFER_NO_SCHEDULE),
    )


def test_node_defaults() -> None:
    n = load_node(a_node("n1"))
    assert n.unschedulable is False
    assert n.taints == ()
    assert n.allocatable is None  # no status: resources are not modelled
    assert n.max_pods is None


ALLOCATABLE = [
    # (id, status, allocatable, max_pods)
    ("no status", None, None, None),
    ("empty status", {}, None, None),
    (
        "allocatable",
        {"allocatable": {"cpu": "3800m", "memory": "15Gi", "pods": "110"}},
        Resources(cpu=3800, memory=15 * GI),
        110,
    ),
    (
        "capacity when allocatable is missing",
        {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "58"}},
        Resources(cpu=4000, memory=16 * GI),
        58,
    ),
    (
        "allocatable preferred over capacity",
        {"capacity": {"cpu": "4", "pods": "110"}, "allocatable": {"cpu": "3", "pods": "100"}},
        Resources(cpu=3000),
        100,
    ),
    (
        "extended resources",
        {"allocatable": {"cpu": "8", "nvidia.com/gpu": "4", "ephemeral-storage": "100Gi"}},
        Resources(cpu=8000, ephemeral=100 * GI, extended=(("nvidia.com/gpu", 4),)),
        None,
    ),
]


@cases(("status", "allocatable", "max_pods"), ALLOCATABLE)
def test_node_allocatable(
    status: dict[str, Any] | None, allocatable: Resources | None, max_pods: int | None
) -> None:
    doc = a_node("n1") if status is None else a_node("n1", status=status)
    n = load_node(doc)
    assert n.allocatable == allocatable
    assert n.max_pods == max_pods


def test_node_is_cluster_scoped() -> None:
    doc = a_node("n1")
    doc["metadata"]["namespace"] = "ignored"
    assert load_node(doc).name == "n1"


# --------------------------------------------------------------------------------------------
# Workloads, budgets, services


def workload_doc(kind: str, spec: dict[str, Any], api: str = "apps/v1") -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "w", "namespace": "shop"},
        "spec": spec,
    }


APP_WEB_SELECTOR = LabelSelector((Requirement("app", Op.IN, ("web",)),))

WORKLOADS = [
    # (id, document, selector, replicas)
    (
        "ReplicationController map selector",
        workload_doc("ReplicationController", {"replicas": 2, "selector": {"app": "web"}}, "v1"),
        APP_WEB_SELECTOR,
        2,
    ),
    (
        "ReplicaSet matchLabels",
        workload_doc("ReplicaSet", {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}}),
        APP_WEB_SELECTOR,
        3,
    ),
    (
        "StatefulSet matchExpressions",
        workload_doc(
            "StatefulSet",
            {
                "replicas": 5,
                "selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
            },
        ),
        LabelSelector((Requirement("app", Op.EXISTS),)),
        5,
    ),
    (
        "Deployment",
        workload_doc("Deployment", {"replicas": 4, "selector": {"matchLabels": {"app": "web"}}}),
        APP_WEB_SELECTOR,
        4,
    ),
    (
        "Deployment without replicas",
        workload_doc("Deployment", {"selector": {"matchLabels": {"app": "web"}}}),
        APP_WEB_SELECTOR,
        None,
    ),
    (
        "Job parallelism is its replica count",
        workload_doc(
            "Job",
            {"parallelism": 6, "completions": 12, "selector": {"matchLabels": {"app": "web"}}},
            "batch/v1",
        ),
        APP_WEB_SELECTOR,
        6,
    ),
    (
        "DaemonSet has no replica count",
        workload_doc("DaemonSet", {"selector": {"matchLabels": {"app": "web"}}}),
        APP_WEB_SELECTOR,
        None,
    ),
]


@cases(("doc", "selector", "replicas"), WORKLOADS)
def test_workloads(doc: dict[str, Any], selector: LabelSelector, replicas: int | None) -> None:
    result = load_yaml(doc)
    only(result)
    (w,) = result.state.workloads
    assert (w.kind, w.namespace, w.name) == (doc["kind"], "shop", "w")
    assert w.selector == selector
    assert w.replicas == replicas


def test_workload_template_and_owner() -> None:
    doc = a_deployment(topologySpreadConstraints=[tsc()])
    doc["kind"] = "ReplicaSet"
    doc["metadata"]["ownerReferences"] = [ref("Deployment", "web", True)]
    doc["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "7"}
    result = load_yaml(doc)
    only(result)
    (w,) = result.state.workloads
    assert w.template is not None
    assert w.template.labels == {"app": "web"}
    assert [c.max_skew for c in w.template.spec.constraints] == [1]
    assert w.owner == OwnerRef("Deployment", "web")
    assert w.revision == "7"


def test_pdb_fields() -> None:
    doc = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "shop", "generation": 3},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
        "status": {
            "observedGeneration": 2,
            "disruptionsAllowed": 1,
            "currentHealthy": 3,
            "desiredHealthy": 2,
            "expectedPods": 3,
        },
    }
    result = load_yaml(doc)
    only(result)
    (b,) = result.state.budgets
    assert (b.namespace, b.name, b.key) == ("shop", "web", "shop/web")
    assert b.selector == APP_WEB_SELECTOR
    assert (b.generation, b.observed_generation) == (3, 2)
    assert b.stale is True
    assert (b.disruptions_allowed, b.current_healthy, b.desired_healthy, b.expected_pods) == (
        1,
        3,
        2,
        3,
    )


def test_pdb_without_status_allows_nothing() -> None:
    doc = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"maxUnavailable": 1},
    }
    result = load_yaml(doc)
    only(result)
    (b,) = result.state.budgets
    assert b.selector is None
    assert b.disruptions_allowed == 0
    assert b.stale is False


SERVICES = [
    # (id, spec, selector)
    (
        "map selector",
        {"selector": {"app": "web", "tier": "front"}},
        {"app": "web", "tier": "front"},
    ),
    ("no selector (nil)", {"ports": [{"port": 80}]}, None),
    ("explicit null selector", {"selector": None}, None),
    ("no spec", None, None),
]


@cases(("spec", "selector"), SERVICES)
def test_service_selector(spec: dict[str, Any] | None, selector: dict[str, str] | None) -> None:
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    if spec is not None:
        doc["spec"] = spec
    result = load_yaml(doc)
    only(result)
    (svc,) = result.state.services
    assert (svc.namespace, svc.name) == ("default", "s")
    if selector is None:
        assert svc.selector is None
    else:
        assert svc.selector == Labels(selector)


def test_namespaces() -> None:
    result = load_yaml(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "shop", "labels": {"team": "a"}},
        }
    )
    only(result)
    (ns,) = result.state.namespaces
    assert (ns.name, ns.labels) == ("shop", {"team": "a"})


def test_taken_at_is_passed_through() -> None:
    result = load_texts([(SOURCE, yaml.safe_dump(a_node()))], taken_at=123.0)
    assert result.state.taken_at == 123.0


def cost_field(manager: str, annotation: str = "controller.kubernetes.io/pod-deletion-cost") -> Any:
    return {
        "manager": manager,
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, f"f:{annotation}": {}}}},
    }


DELETION_COST_OWNERS = [
    # (id, managedFields, expected owners of the pod-deletion-cost annotation)
    ("no managedFields", None, ()),
    ("another annotation only", [cost_field("kubectl", "team")], ()),
    ("one manager", [cost_field("kubectl-annotate")], ("kubectl-annotate",)),
    (
        "two managers, sorted, each once",
        [cost_field("respread"), cost_field("hpa"), cost_field("respread")],
        ("hpa", "respread"),
    ),
    ("malformed entries are ignored", ["x", {"manager": "m", "fieldsV1": []}], ()),
]


@cases(("fields", "owners"), DELETION_COST_OWNERS)
def test_deletion_cost_annotation_and_its_managers(
    fields: list[Any] | None, owners: tuple[str, ...]
) -> None:
    meta: dict[str, Any] = {"annotations": {"controller.kubernetes.io/pod-deletion-cost": "-5"}}
    if fields is not None:
        meta["managedFields"] = fields
    got = load_pod(pod_doc(meta=meta))
    assert got.annotations["controller.kubernetes.io/pod-deletion-cost"] == "-5"
    assert got.deletion_cost_managers == owners


def test_pods_without_cost_managers_share_the_empty_tuple() -> None:
    result = load_yaml(a_node(), a_pod("p1"), a_pod("p2"))
    a, b = result.state.pods
    assert a.deletion_cost_managers is b.deletion_cost_managers == ()
