"""The follower analyses only the namespaces of the policy's surging Deployments
(surge_scope.py), with the same operations and actions as an analysis of the whole cluster:
another workload of the namespace whose selector counts the Deployment's pods is still seen.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from respread.analysis.groups import analyze
from respread.core.annotations import SURGE_STATE
from respread.inputs.objects import load_documents
from respread.remedies.surge.advance import operations
from respread.remedies.surge.operation import Operation, Phase
from respread.remedies.surge.scope import follower_state, surging_namespaces
from tests.unit.remedies.surge.test_plan import NOW, SURGING, policy_with
from tests.unit.remedies.surge.test_victims import BOTH, MARKING, SPLIT_RACKS, UNEVEN, docs_for


def in_namespace(docs: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """The namespaced objects of ``docs`` again, in ``namespace``."""
    out = []
    for d in copy.deepcopy(docs):
        if d["kind"] in ("Node", "Namespace"):
            continue
        d["metadata"]["namespace"] = namespace
        if "uid" in d["metadata"]:
            d["metadata"]["uid"] = f"{namespace}-{d['metadata']['uid']}"
        out.append(d)
    return out


def annotated(docs: list[dict[str, Any]], op: Operation | None) -> list[dict[str, Any]]:
    for d in docs:
        if d["kind"] == "Deployment":
            notes = d["metadata"]["annotations"]
            notes.pop(SURGE_STATE, None)
            if op is not None:
                notes[SURGE_STATE] = op.to_json()
    return docs


def digest(state: Any) -> list[tuple[object, ...]]:
    flights = operations(analyze(state, policy_with()), "default", NOW)
    return [
        (f.workload, f.action.kind, f.action.reason, [v.pod.uid for v in f.action.victims])
        for f in flights
    ]


# ns1: web surging at Marking, watch counting its pods decides the victims (a1 and a2)
NS1 = docs_for(UNEVEN, SPLIT_RACKS, ["c", "c"], BOTH, **MARKING)


@pytest.mark.parametrize(
    ("ns2_op", "namespaces"),
    [
        (None, {"ns1"}),  # ns2: the same workloads, no surge
        (SURGING, {"ns1", "ns2"}),  # ns2 surging too, under the same policy
        (replace(SURGING, policy="other"), {"ns1"}),  # another policy's surge
        (replace(SURGING, phase=Phase.ROLLED_BACK), {"ns1"}),  # over: not in flight
    ],
)
def test_the_follower_sees_what_the_whole_cluster_shows(
    ns2_op: Operation | None, namespaces: set[str]
) -> None:
    docs = NS1 + annotated(in_namespace(NS1, "ns2"), ns2_op)
    state = load_documents([("t", d) for d in docs]).state
    assert surging_namespaces(state, "default") == namespaces
    scope = follower_state(state, "default")
    assert {p.namespace for p in scope.pods} == namespaces
    assert {w.namespace for w in scope.workloads} == namespaces
    assert scope.nodes == state.nodes
    flights = digest(scope)
    assert flights == digest(state)
    web = [f for f in flights if f[0].namespace == "ns1"]
    victims = [u for _, _, _, uids in web for u in uids]
    by_uid = {p.uid: p.node_name for p in state.pods}
    assert sorted(by_uid[u] for u in victims) == ["n-a1", "n-a2"]  # watch was seen


def test_no_surge_no_pods_analysed() -> None:
    state = load_documents([("t", d) for d in annotated(copy.deepcopy(NS1), None)]).state
    scope = follower_state(state, "default")
    assert scope.pods == () and scope.workloads == ()
    assert digest(scope) == digest(state) == []
