"""`explain` against a naive transcription of the reference Filter (spread-semantics.md 5.1).

The reference below is written straight from the specification's pseudocode, with none of
respread's machinery (no sparse tables, caches, interning or profiles). Generated clusters mix
zones and hostnames, missing keys, taints, node selectors and affinity, both inclusion
policies, minDomains, matchLabelKeys, nil and `{}` selectors, several namespaces, and
terminating, finished and unbound pods; every node's verdict must agree, for unbound pods and
for bound pods judged as if placed again.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from respread.analysis.groups import analyze
from respread.core.model import (
    ClusterState,
    Effect,
    Labels,
    LabelSelector,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    Op,
    OwnerRef,
    Phase,
    Pod,
    PodSpec,
    Policy,
    Requirement,
    SpreadConstraint,
    Toleration,
    When,
)
from respread.core.selectors import affinity_matches, selector_matches, untolerated_taint
from respread.inputs.policy import DEFAULT_POLICY
from respread.scheduling.explain import explain_pod
from respread.scheduling.spread import SpreadIndex
from tests.support.builders import EVERYTHING, node, pod, sel, state, taint

KEYS = ("zone", "host", "rack")


def reference_constraints(incoming: Pod) -> list[tuple[SpreadConstraint, LabelSelector | None]]:
    """The incoming pod's hard constraints, each with its selector and matchLabelKeys merged."""
    cons = []
    for c in incoming.spec.constraints:
        if c.when is not When.DO_NOT_SCHEDULE:
            continue
        selector = c.selector
        if selector is not None and c.match_label_keys:
            extra = tuple(
                Requirement(k, Op.IN, (incoming.labels[k],))
                for k in c.match_label_keys
                if k in incoming.labels
            )
            selector = LabelSelector(selector.requirements + extra)
        cons.append((c, selector))
    return cons


def reference_counts(
    incoming: Pod, nodes: tuple[Node, ...], pods: tuple[Pod, ...]
) -> tuple[list[tuple[SpreadConstraint, LabelSelector | None]], list[dict[str, int]]]:
    """Section 5.1's PreFilter: the hard constraints (with matchLabelKeys merged) and each
    one's count per eligible domain (the incoming pod itself not counted)."""
    cons = reference_constraints(incoming)

    def counts_pod(selector: LabelSelector | None, labels: Labels) -> bool:
        if selector is None or not selector.requirements:  # nil, and the `{}` bug (2.4)
            return False
        return selector_matches(selector, labels)

    counts: list[dict[str, int]] = [{} for _ in cons]
    for n in nodes:
        if any(c.topology_key not in n.labels for c, _ in cons):
            continue
        for i, (c, selector) in enumerate(cons):
            if c.node_affinity_policy is not Policy.IGNORE and not affinity_matches(
                incoming.spec.affinity, n
            ):
                continue
            if (
                c.node_taints_policy is Policy.HONOR
                and untolerated_taint(incoming.spec.tolerations, n.taints) is not None
            ):
                continue
            v = n.labels[c.topology_key]
            counts[i][v] = counts[i].get(v, 0) + sum(
                1
                for p in pods
                if p is not incoming
                and p.node_name == n.name
                and p.namespace == incoming.namespace
                and not p.terminating
                and p.phase not in (Phase.SUCCEEDED, Phase.FAILED)
                and counts_pod(selector, p.labels)
            )
    return cons, counts


def reference_filter(
    incoming: Pod, nodes: tuple[Node, ...], pods: tuple[Pod, ...]
) -> dict[str, str]:
    """Section 5.1, transcribed: every node's PodTopologySpread Filter status."""
    cons, counts = reference_counts(incoming, nodes, pods)
    if not cons:
        return {n.name: "Success" for n in nodes}
    gmin = [
        0 if len(cnt) < (c.min_domains or 1) else min(cnt.values())
        for (c, _), cnt in zip(cons, counts, strict=True)
    ]
    out = {}
    for n in nodes:
        status = "Success"
        for i, (c, selector) in enumerate(cons):
            if c.topology_key not in n.labels:
                status = "UnschedulableAndUnresolvable"
                break
            self_match = (
                1 if selector is not None and selector_matches(selector, incoming.labels) else 0
            )
            if counts[i].get(n.labels[c.topology_key], 0) + self_match - gmin[i] > c.max_skew:
                status = "Unschedulable"
                break
        out[n.name] = status
    return out


label_values = st.sampled_from(["a", "b", "c"])


@st.composite
def nodes_strategy(draw: st.DrawFn) -> tuple[Node, ...]:
    count = draw(st.integers(1, 7))
    nodes = []
    for i in range(count):
        labels = {"zone": draw(st.sampled_from(["z1", "z2", "z3"])), "host": f"h{i}"}
        if draw(st.integers(0, 5)) == 0:
            del labels["zone"]  # a node missing a key
        if draw(st.booleans()):
            labels["rack"] = draw(st.sampled_from(["r1", "r2"]))
        if draw(st.booleans()):
            labels["disk"] = "ssd"
        taints = (
            (taint("dedicated", "x", draw(st.sampled_from(list(Effect)))),)
            if draw(st.integers(0, 3)) == 0
            else ()
        )
        nodes.append(node(f"node-{i}", labels, taints=taints))
    return tuple(nodes)


selectors = st.one_of(
    st.none(),
    st.just(EVERYTHING),
    st.builds(lambda v: sel(app=v), label_values),
    st.builds(lambda: LabelSelector((Requirement("app", Op.EXISTS),))),
    st.builds(lambda v: LabelSelector((Requirement("app", Op.NOT_IN, (v,)),)), label_values),
)

constraints = st.builds(
    SpreadConstraint,
    max_skew=st.integers(1, 3),
    topology_key=st.sampled_from(KEYS),
    when=st.sampled_from(list(When)),
    selector=selectors,
    min_domains=st.sampled_from([None, None, 2, 4]),
    node_affinity_policy=st.sampled_from([None, Policy.HONOR, Policy.IGNORE]),
    node_taints_policy=st.sampled_from([None, Policy.HONOR, Policy.IGNORE]),
    match_label_keys=st.sampled_from([(), ("version",)]),
)

affinities = st.one_of(
    st.just(NodeAffinity()),
    st.just(NodeAffinity(Labels({"disk": "ssd"}))),
    st.just(
        NodeAffinity(required_terms=(NodeSelectorTerm((Requirement("zone", Op.NOT_IN, ("z3",)),)),))
    ),
)


@st.composite
def pods_strategy(draw: st.DrawFn, nodes: tuple[Node, ...]) -> tuple[Pod, ...]:
    pods = []
    for i in range(draw(st.integers(1, 14))):
        labels = {"app": draw(label_values), "version": draw(st.sampled_from(["1", "2"]))}
        spec = PodSpec(
            constraints=tuple(draw(st.lists(constraints, max_size=2))),
            affinity=draw(affinities),
            tolerations=(Toleration("dedicated", "Exists"),) if draw(st.booleans()) else (),
        )
        namespace = draw(st.sampled_from(["default", "default", "other"]))
        pods.append(
            pod(
                f"p{i}",
                draw(st.sampled_from([n.name for n in nodes] + [None, "gone"])),
                labels,
                spec=spec,
                namespace=namespace,
                phase=draw(st.sampled_from([Phase.RUNNING] * 4 + [Phase.SUCCEEDED, Phase.FAILED])),
                terminating=draw(st.integers(0, 6)) == 0,
            )
        )
    return tuple(pods)


@st.composite
def states(draw: st.DrawFn) -> ClusterState:
    nodes = draw(nodes_strategy())
    return state(nodes, draw(pods_strategy(nodes)))


@given(states(), st.data())
def test_every_node_verdict_matches_the_reference(state: ClusterState, data: st.DataObject) -> None:
    incoming = data.draw(st.sampled_from(state.pods))
    index = SpreadIndex(state)
    got = {n.name: n.spread_filter.value for n in explain_pod(index, incoming).nodes}
    # A bound pod is judged as if it were being placed again: taken out of the counts.
    others = tuple(p for p in state.pods if p is not incoming)
    expected = reference_filter(incoming, state.nodes, others)
    assert got == expected


@given(states())
def test_constraints_carried_by_the_owner_are_judged_alike(state: ClusterState) -> None:
    # A pod without constraints of its own is judged with its owner's (its replacement's).
    owner = OwnerRef("ReplicaSet", "rs")
    carrier = next((p for p in state.pods if p.spec.constraints), None)
    if carrier is None:
        return
    bare = replace(carrier, name="sibling", spec=replace(carrier.spec, constraints=()), owner=owner)
    carrier = replace(carrier, owner=owner)
    pods = (*tuple(carrier if p.name == carrier.name else p for p in state.pods), bare)
    index = SpreadIndex(replace(state, pods=pods))
    sibling_view = {n.name: n.spread_filter for n in explain_pod(index, bare).nodes}
    expected = reference_filter(
        replace(bare, spec=carrier.spec), state.nodes, tuple(p for p in pods if p is not bare)
    )
    assert {k: v.value for k, v in sibling_view.items()} == expected


def reference_failing(pod: Pod, nodes: tuple[Node, ...], pods: tuple[Pod, ...]) -> list[int]:
    """The hard constraints (indexes among them, in spec order) a bound pod breaks where it
    is, each judged alone (taken out of the counts, as if being placed again)."""
    others = tuple(p for p in pods if p is not pod)
    cons, counts = reference_counts(pod, nodes, others)
    node = next(n for n in nodes if n.name == pod.node_name)
    out = []
    for i, ((c, selector), cnt) in enumerate(zip(cons, counts, strict=True)):
        gmin = 0 if len(cnt) < (c.min_domains or 1) else min(cnt.values())
        if c.topology_key not in node.labels:
            out.append(i)
            continue
        self_match = 1 if selector is not None and selector_matches(selector, pod.labels) else 0
        if cnt.get(node.labels[c.topology_key], 0) + self_match - gmin > c.max_skew:
            out.append(i)
    return out


@given(states())
def test_the_analysis_counts_the_misplaced_pods_the_reference_finds(state: ClusterState) -> None:
    """The analysis's own (inlined) Filter rule, group by group: each group's misplaced pods
    are the member pods that break that constraint by the reference."""
    names = {n.name for n in state.nodes}
    for g in analyze(state, DEFAULT_POLICY).groups:
        members = [p for pods in g.members.by_node.values() for p in pods]
        if any(not p.spec.constraints for p in members):
            continue  # judged by its owner's constraints: test_constraints_carried_by_...
        expected = sum(
            1
            for p in members
            if p.node_name in names and g.index in reference_failing(p, state.nodes, state.pods)
        )
        assert g.violating == expected
