"""The tests' manifests (tests/support/manifests.py) read back as the records they were written
from: for any record the builders make, the snapshot parser gives that record again. So a test
may state a cluster as records and hand it to the CLI or an API server as objects."""

from __future__ import annotations

import yaml
from hypothesis import given
from hypothesis import strategies as st

from respread.core.model import (
    Autoscaler,
    Effect,
    Labels,
    LabelSelector,
    NodeSelectorTerm,
    Op,
    OwnerRef,
    Phase,
    Policy,
    ReplicaStatus,
    Requirement,
    Resources,
    Toleration,
    When,
)
from respread.inputs.objects import KEPT_ANNOTATIONS, SURGE_MARKERS, load_texts
from tests.support import builders as make
from tests.support.manifests import Record, manifest, manifests

NAMES = st.sampled_from(["a", "b", "web", "db", "x-1"])
KEYS = st.sampled_from(["app", "tier", "zone", "example.com/rack", "kubernetes.io/hostname"])
VALUES = st.sampled_from(["", "a", "b", "web", "1"])
LABELS = st.dictionaries(KEYS, VALUES, max_size=3)
TIMES = st.none() | st.integers(0, 2_000_000_000).map(float)
OWNERS = st.none() | st.builds(OwnerRef, st.sampled_from(["ReplicaSet", "Job", "X"]), NAMES)


@st.composite
def requirements(draw: st.DrawFn, ops: tuple[Op, ...]) -> Requirement:
    op = draw(st.sampled_from(ops))
    if op in (Op.EXISTS, Op.DOES_NOT_EXIST):
        values: tuple[str, ...] = ()
    elif op in (Op.GT, Op.LT):
        values = (str(draw(st.integers(0, 9))),)
    else:
        values = tuple(draw(st.lists(VALUES, min_size=1, max_size=3)))
    return Requirement(draw(KEYS), op, values)


LABEL_OPS = (Op.IN, Op.NOT_IN, Op.EXISTS, Op.DOES_NOT_EXIST)
SELECTORS = st.builds(
    lambda labels, more: LabelSelector(make.sel(**labels).requirements + tuple(more)),
    LABELS,
    st.lists(requirements(LABEL_OPS), max_size=2),
)
RESOURCES = st.builds(
    Resources,
    st.integers(0, 4000),
    st.sampled_from([0, 1000, 64 * 2**20, 2**30]),
    st.integers(0, 10**6),
    st.lists(st.tuples(st.sampled_from(["example.com/gpu", "nvidia.com/gpu"]), st.integers(0, 8)))
    .map(dict)
    .map(lambda d: tuple(sorted(d.items()))),
)


@st.composite
def constraints(draw: st.DrawFn) -> object:
    when = draw(st.sampled_from(When))
    selector = draw(st.none() | SELECTORS)
    return make.constraint(
        draw(KEYS),
        selector,
        when=when,
        max_skew=draw(st.integers(1, 5)),
        min_domains=draw(st.none() | st.integers(1, 4)) if when is When.DO_NOT_SCHEDULE else None,
        affinity=draw(st.none() | st.sampled_from(Policy)),
        taints=draw(st.none() | st.sampled_from(Policy)),
        match_label_keys=tuple(draw(st.lists(KEYS, max_size=2))) if selector else (),
    )


TERMS = st.builds(
    NodeSelectorTerm,
    st.lists(requirements(tuple(Op)), max_size=2).map(tuple),
    st.lists(
        st.builds(Requirement, st.just("metadata.name"), st.just(Op.IN), st.tuples(NAMES))
    ).map(tuple),
)
TOLERATIONS = st.builds(
    Toleration,
    st.sampled_from(["", "dedicated", "gpu"]),
    st.sampled_from(["Equal", "Exists"]),
    VALUES,
    st.none() | st.sampled_from(Effect),
)


@st.composite
def specs(draw: st.DrawFn) -> object:
    return make.pod_spec(
        draw(st.lists(constraints(), max_size=2)),
        node_selector=draw(LABELS),
        required_terms=draw(st.none() | st.lists(TERMS, max_size=2).map(tuple)),
        tolerations=draw(st.lists(TOLERATIONS, max_size=2)),
        requests=draw(RESOURCES),
        priority_class=draw(st.sampled_from(["", "high"])),
        local_storage=draw(st.booleans()),
        persistent_volume_claims=draw(st.booleans()),
    )


@st.composite
def nodes(draw: st.DrawFn) -> Record:
    allocatable = draw(st.none() | RESOURCES)
    return make.node(
        draw(NAMES),
        draw(LABELS),
        taints=draw(st.lists(st.builds(make.taint, KEYS, VALUES, st.sampled_from(Effect)))),
        unschedulable=draw(st.booleans()),
        allocatable=allocatable,
        max_pods=draw(st.none() | st.integers(0, 110)) if allocatable else None,
        ready=draw(st.booleans()),
        created=draw(TIMES),
    )


@st.composite
def pods(draw: st.DrawFn) -> Record:
    node_name = draw(st.none() | NAMES)
    spec = draw(specs())
    return make.pod(
        draw(NAMES),
        node_name,
        draw(LABELS),
        spec=spec,
        claims=("data",) if spec.persistent_volume_claims else (),
        namespace=draw(st.sampled_from(["default", "shop"])),
        phase=draw(st.sampled_from(Phase)),
        annotations=draw(st.dictionaries(st.sampled_from(sorted(KEPT_ANNOTATIONS)), VALUES)),
        nominated=draw(st.none() | NAMES),
        terminating=draw(st.booleans()),
        ready=draw(st.booleans()),
        priority=draw(st.integers(-(2**31), 2**31 - 1)),
        owner=draw(OWNERS),
        created=draw(TIMES),
        uid=draw(st.none() | st.sampled_from(["uid-1", "uid-2"])),
        deletion_cost_managers=tuple(sorted(draw(st.sets(st.sampled_from(["respread", "k"]))))),
    )


@st.composite
def controllers(draw: st.DrawFn) -> Record:
    kind = draw(st.sampled_from(["Deployment", "ReplicaSet", "StatefulSet", "Job"]))
    fields: dict[str, object] = {
        "owner": draw(OWNERS),
        "generation": draw(st.integers(0, 5)),
        "observed_generation": draw(st.integers(0, 5)),
        "created": draw(TIMES),
        "revision": draw(st.none() | st.sampled_from(["1", "7"])),
    }
    if kind == "Deployment":
        fields |= {
            "uid": draw(st.none() | st.just("dep-uid")),
            "resource_version": draw(st.none() | st.just("100")),
            "paused": draw(st.booleans()),
            "rollout": draw(st.builds(ReplicaStatus, *[st.integers(0, 9)] * 4)),
            "markers": Labels(draw(st.dictionaries(st.sampled_from(sorted(SURGE_MARKERS)), NAMES))),
        }
    return make.controller(
        kind,
        draw(NAMES),
        draw(st.integers(0, 9)),
        labels=draw(LABELS.filter(bool)),
        namespace=draw(st.sampled_from(["default", "shop"])),
        template=draw(specs()),
        **fields,
    )


WORKLOADS = st.one_of(
    controllers(),
    st.builds(make.workload, st.sampled_from(["DaemonSet", "StatefulSet"]), NAMES, SELECTORS),
    st.builds(
        make.workload,
        st.just("ReplicationController"),
        NAMES,
        LABELS.map(lambda labels: make.sel(**labels)),
        replicas=st.integers(0, 5),
    ),
)
BUDGETS = st.builds(
    make.budget,
    NAMES,
    st.none() | SELECTORS,
    allowed=st.integers(0, 3),
    generation=st.integers(0, 3),
    observed=st.integers(0, 3),
    healthy=st.integers(0, 9),
    desired=st.integers(0, 9),
    expected=st.integers(0, 9),
)
OTHERS = st.one_of(
    st.builds(make.service, NAMES, st.none() | LABELS.filter(bool)),
    st.builds(lambda name, labels: make.namespace(name, **labels), NAMES, LABELS),
    st.builds(Autoscaler, st.just("default"), NAMES, st.just("Deployment"), NAMES),
)


@given(st.one_of(nodes(), pods(), WORKLOADS, BUDGETS, OTHERS))
def test_a_records_manifest_reads_back_as_the_record(record: Record) -> None:
    result = load_texts([("t.yaml", yaml.safe_dump(manifest(record)))])
    assert result.problems == ()
    state = result.state
    everything = [
        *state.nodes,
        *state.pods,
        *state.budgets,
        *state.workloads,
        *state.services,
        *state.namespaces,
        *state.autoscalers,
    ]
    assert everything == [record]


def test_a_deployments_manifest_is_what_the_api_server_accepts() -> None:
    """The shape the cluster tests send: containers with an image and requests, the spread
    constraint, the selector as matchLabels."""
    web = make.deployment(
        "web",
        3,
        constraints=(make.hard("zone", make.WEB),),
        node_selector={"pool": "p"},
        requests=Resources(cpu=100, memory=64 * 2**20),
    )
    doc = manifest(web)
    assert doc["apiVersion"] == "apps/v1"
    assert doc["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    template = doc["spec"]["template"]
    assert template["metadata"] == {"labels": {"app": "web"}}
    (container,) = template["spec"]["containers"]
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "64Mi"}}
    assert template["spec"]["nodeSelector"] == {"pool": "p"}
    assert template["spec"]["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]


def test_a_spec_the_record_does_not_keep_is_added() -> None:
    doc = manifest(make.budget("web"), spec={"maxUnavailable": 1})
    assert doc["spec"] == {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}


def test_many_records_make_one_snapshot() -> None:
    docs = manifests(make.zone_node("a1", "a"), make.pod("web-1", "a1", make.APP_WEB))
    assert [d["kind"] for d in docs] == ["Node", "Pod"]
