"""The PodTopologySpread Filter, rule by rule (spread-semantics.md sections 2-5, 11 and 12).

Each case is a small cluster, one incoming pod and the Filter status expected on every node, as
reported by ``respread.scheduling.explain.explain_pod``. Expected answers are worked out by hand
from the spec: count[i][domain] over eligible nodes, globalMin, then ``matchNum + selfMatch -
globalMin > maxSkew`` per node. Status abbreviations: OK = Success, NO = Unschedulable, UU =
UnschedulableAndUnresolvable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from respread.core.model import (
    ClusterState,
    Effect,
    Labels,
    NodeSelectorTerm,
    Op,
    OwnerRef,
    Phase,
    Pod,
    Policy,
    Requirement,
    SpreadConstraint,
    Toleration,
)
from respread.scheduling.explain import Explanation, explain_pod
from respread.scheduling.spread import SpreadIndex
from tests.support.builders import (
    APP_WEB,
    EVERYTHING,
    WEB,
    hard,
    node,
    pod,
    pod_spec,
    pods_on,
    sel,
    service,
    soft,
    state,
    stateful_set,
    taint,
    workload,
)

OK = "Success"
NO = "Unschedulable"
UU = "UnschedulableAndUnresolvable"


@dataclass
class Case:
    id: str
    cluster: ClusterState
    incoming: Pod
    expected: Mapping[str, str]
    index: dict[str, Any] = field(default_factory=dict)  # SpreadIndex keyword arguments
    domains: tuple[Mapping[str, int], ...] | None = None  # per constraint, when checked
    global_min: tuple[int, ...] | None = None


def explain(case: Case) -> Explanation:
    return explain_pod(SpreadIndex(case.cluster, **case.index), case.incoming)


def statuses(ex: Explanation) -> dict[str, str]:
    return {n.name: n.spread_filter.value for n in ex.nodes}


def incoming(
    constraints: tuple[SpreadConstraint, ...], labels: Mapping[str, str] = APP_WEB, **kw: Any
) -> Pod:
    """An unbound pod being scheduled."""
    return pod("incoming", None, labels, constraints=constraints, **kw)


def zones(*counts: int, key: str = "zone") -> tuple[list[Any], list[Pod]]:
    """Node ``n<i>`` in zone ``z<i>`` holding ``counts[i-1]`` web pods."""
    nodes = [node(f"n{i}", {key: f"z{i}"}) for i in range(1, len(counts) + 1)]
    pods = [p for i, c in enumerate(counts, 1) for p in pods_on(f"n{i}", c)]
    return nodes, pods


def case_zones(
    id: str,
    counts: tuple[int, ...],
    max_skew: int,
    min_domains: int | None,
    expected: tuple[str, ...],
    global_min: int | None,
    labels: Mapping[str, str] = APP_WEB,
) -> Case:
    """A row of the zone tables: web pods per zone (node n<i> in zone z<i>), the incoming pod's
    hard zone constraint (selector app=web), the Filter per node, the global minimum (None:
    not checked) and the incoming pod's labels (``API``: it does not match the selector)."""
    nodes, pods = zones(*counts)
    constraint = hard("zone", WEB, max_skew=max_skew, min_domains=min_domains)
    return Case(
        id,
        state(nodes, pods),
        incoming((constraint,), labels),
        {f"n{i}": s for i, s in enumerate(expected, 1)},
        global_min=None if global_min is None else (global_min,),
    )


API = {"app": "api"}


# --------------------------------------------------------------------------------------------
# Section 6: the worked example. node-a, node-b in zone1; node-x, node-y in zone2; foo pods 2/1/0/3.

WORKED_NODES = [
    node("node-a", zone="zone1", node="node-a"),
    node("node-b", zone="zone1", node="node-b"),
    node("node-x", zone="zone2", node="node-x"),
    node("node-y", zone="zone2", node="node-y"),
]
FOO = {"foo": ""}
WORKED_PODS = [
    *pods_on("node-a", 2, FOO),
    *pods_on("node-b", 1, FOO),
    *pods_on("node-y", 3, FOO),
]
FOO_SEL = sel(foo="")


def worked(
    id: str, c: SpreadConstraint, labels: Mapping[str, str], expected: tuple[str, ...]
) -> Case:
    names = ("node-a", "node-b", "node-x", "node-y")
    return Case(
        id,
        state(WORKED_NODES, WORKED_PODS),
        incoming((c,), labels),
        dict(zip(names, expected, strict=True)),
    )


WORKED = [
    worked("zone maxSkew 1: 3/3, all pass", hard("zone", FOO_SEL), FOO, (OK, OK, OK, OK)),
    worked("node maxSkew 1: only node-x", hard("node", FOO_SEL), FOO, (NO, NO, OK, NO)),
    worked(
        "node maxSkew 2: node-b and node-x",
        hard("node", FOO_SEL, max_skew=2),
        FOO,
        (NO, OK, OK, NO),
    ),
    worked("node maxSkew 1, pod lacks foo", hard("node", FOO_SEL), {"bar": ""}, (NO, OK, OK, NO)),
]


# --------------------------------------------------------------------------------------------
# All-keys gate (sections 3.1, 5; rule 12.5)


def gate_cases() -> list[Case]:
    both = (hard("zone", WEB), hard("host", WEB))
    n1 = node("n1", zone="z1", host="n1")
    n2 = node("n2", zone="z2", host="n2")
    out = [
        # n3 (zone z2, no host) carries 3 web pods. They must not count for zone either:
        # zone counts z1=1, z2=0 (n2 only), min 0 -> n1 1+1-0=2 > 1. If counted: z2=3, min 1,
        # n1 would pass and n2 fail.
        Case(
            "node missing one hard key: unresolvable, its pods not counted for any constraint",
            state([n1, n2, node("n3", zone="z2")], [*pods_on("n1", 1), *pods_on("n3", 3)]),
            incoming(both),
            {"n1": NO, "n2": OK, "n3": UU},
            domains=({"z1": 1, "z2": 0}, {"n1": 1, "n2": 0}),
            global_min=(0, 0),
        ),
        Case(
            "node missing the first key",
            state([n1, n2, node("n3", host="n3")], pods_on("n1", 1)),
            incoming(both),
            {"n1": NO, "n2": OK, "n3": UU},
        ),
        # Constraints are checked in spec order and the first failure decides: n3 fails the
        # zone skew (z1: 1+1-0 = 2 > 1) before its missing host key is looked at.
        Case(
            "first failing constraint decides: skew before a later missing key",
            state([n1, n2, node("n3", zone="z1")], pods_on("n1", 1)),
            incoming(both),
            {"n1": NO, "n2": OK, "n3": NO},
        ),
        Case(
            "node with neither key",
            state([n1, n2, node("n3")], pods_on("n3", 5)),
            incoming(both),
            {"n1": OK, "n2": OK, "n3": UU},
        ),
        Case(
            "single constraint: node without the key is unresolvable even with room",
            state([node("n1", zone="z1"), node("n2")], []),
            incoming((hard("zone", WEB, max_skew=5),)),
            {"n1": OK, "n2": UU},
        ),
        # A node labelled zone="" has the key: "" is a legitimate domain (section 3).
        Case(
            "empty label value is a domain",
            state([node("n1", zone=""), node("n2", zone="z2")], pods_on("n2", 1)),
            incoming((hard("zone", WEB),)),
            {"n1": OK, "n2": NO},
            domains=({"": 0, "z2": 1},),
            global_min=(0,),
        ),
        # Cordoned and full nodes still count (rule 12.1): the cordoned n2 makes z2=0 the minimum.
        Case(
            "cordoned node still forms a domain",
            state(
                [node("n1", zone="z1"), node("n2", zone="z2", unschedulable=True)],
                pods_on("n1", 1),
            ),
            incoming((hard("zone", WEB),)),
            {"n1": NO, "n2": OK},
            global_min=(0,),
        ),
    ]
    return out


# --------------------------------------------------------------------------------------------
# minDomains (section 5; 11; rule 12.8)


MIN_DOMAINS = [
    # (id, web pods per zone, maxSkew, minDomains, the Filter per node, global minimum)
    case_zones("no minDomains: min 1", (1, 1), 1, None, (OK, OK), 1),
    case_zones("minDomains 3 > 2 domains forces min 0", (1, 1), 1, 3, (NO, NO), 0),
    case_zones("minDomains 2 == 2 domains: no effect", (1, 1), 1, 2, (OK, OK), 1),
    case_zones("minDomains 3 <= 3 domains: no effect", (2, 1, 1), 1, 3, (NO, OK, OK), 1),
    case_zones("minDomains 4 > 3 domains: min 0", (2, 1, 1), 1, 4, (NO, NO, NO), 0),
    # With too few domains each domain holds at most maxSkew matching pods, the new one included.
    case_zones("minDomains: a domain may reach maxSkew", (1, 2), 2, 3, (OK, NO), 0),
    case_zones("selfMatch 0 under minDomains", (1, 1), 1, 3, (OK, OK), 0, API),
    # z3's only node is excluded by the pod's nodeSelector: 2 eligible domains < 3, min 0.
    # (Were z3 counted, 3 domains with 1 pod each would give min 1 and n1, n2 would pass.)
    Case(
        "domain with no eligible node does not count toward minDomains",
        state(
            [
                node("n1", zone="z1", disk="ssd"),
                node("n2", zone="z2", disk="ssd"),
                node("n3", zone="z3"),
            ],
            [*pods_on("n1", 1), *pods_on("n2", 1), *pods_on("n3", 1)],
        ),
        incoming((hard("zone", WEB, min_domains=3),), node_selector={"disk": "ssd"}),
        {"n1": NO, "n2": NO, "n3": OK},
        domains=({"z1": 1, "z2": 1},),
        global_min=(0,),
    ),
]


# --------------------------------------------------------------------------------------------
# nodeAffinityPolicy (section 3.2; rule 12.6)

SSD = {"disk": "ssd"}
AFFINITY_NODES = [
    node("n1", zone="z1", disk="ssd"),
    node("n2", zone="z2", disk="ssd"),
    node("n3", zone="z3"),
]
AFFINITY_PODS = [*pods_on("n1", 1), *pods_on("n2", 1)]
ZONE_IN_Z1_Z2 = (NodeSelectorTerm(match_expressions=(Requirement("zone", Op.IN, ("z1", "z2")),)),)


def affinity_case(
    id: str, policy: Policy | None, expected: tuple[str, str, str], **pod_kw: Any
) -> Case:
    return Case(
        id,
        state(AFFINITY_NODES, AFFINITY_PODS),
        incoming((hard("zone", WEB, affinity=policy),), **pod_kw),
        dict(zip(("n1", "n2", "n3"), expected, strict=True)),
    )


AFFINITY = [
    # Honor: z3 (n3 lacks disk=ssd) is not a domain; min 1; n1, n2: 1+1-1 = 1. n3 has the key and
    # is not rejected by this plugin: its domain is not eligible, matchNum 0 (section 5 notes).
    affinity_case("nodeSelector, default policy is Honor", None, (OK, OK, OK), node_selector=SSD),
    affinity_case("nodeSelector, Honor", Policy.HONOR, (OK, OK, OK), node_selector=SSD),
    # Ignore: z3 eligible with 0 pods; min 0; n1, n2: 1+1-0 = 2 > 1.
    affinity_case("nodeSelector, Ignore", Policy.IGNORE, (NO, NO, OK), node_selector=SSD),
    affinity_case("required affinity, Honor", None, (OK, OK, OK), required_terms=ZONE_IN_Z1_Z2),
    affinity_case(
        "required affinity, Ignore", Policy.IGNORE, (NO, NO, OK), required_terms=ZONE_IN_Z1_Z2
    ),
    affinity_case("no affinity, Honor", Policy.HONOR, (NO, NO, OK)),
    # A domain with some eligible and some ineligible nodes: only eligible nodes' pods count.
    Case(
        "ineligible node's pods do not count toward its domain",
        state(
            [
                node("n1", zone="z1", disk="ssd"),
                node("n2", zone="z1"),
                node("n3", zone="z2", disk="ssd"),
            ],
            [*pods_on("n1", 1), *pods_on("n2", 3), *pods_on("n3", 1)],
        ),
        incoming((hard("zone", WEB),), node_selector=SSD),
        {"n1": OK, "n2": OK, "n3": OK},
        domains=({"z1": 1, "z2": 1},),
        global_min=(1,),
    ),
    Case(
        "no eligible domain at all: min 0, every node with the key passes",
        state(AFFINITY_NODES, AFFINITY_PODS),
        incoming((hard("zone", WEB),), node_selector={"disk": "nvme"}),
        {"n1": OK, "n2": OK, "n3": OK},
        domains=({},),
        global_min=(0,),
    ),
]


# --------------------------------------------------------------------------------------------
# nodeTaintsPolicy (section 3.2; 11; rules 12.6, 12.7)


def taints_case(
    id: str,
    policy: Policy | None,
    n3_taints: tuple[Any, ...],
    expected: tuple[str, str, str],
    *,
    tolerations: tuple[Toleration, ...] = (),
    unschedulable: bool = False,
) -> Case:
    nodes = [
        node("n1", zone="z1"),
        node("n2", zone="z2"),
        node("n3", zone="z3", taints=n3_taints, unschedulable=unschedulable),
    ]
    return Case(
        id,
        state(nodes, [*pods_on("n1", 1), *pods_on("n2", 1)]),
        incoming((hard("zone", WEB, taints=policy),), tolerations=tolerations),
        dict(zip(("n1", "n2", "n3"), expected, strict=True)),
    )


DEDICATED = taint("dedicated", "db")
# Honored and untolerated: z3 disappears, min 1, everyone passes. Otherwise z3 (0) is the min and
# n1, n2 hold 1+1-0 = 2 > 1.
GONE = (OK, OK, OK)
STAYS = (NO, NO, OK)
TAINTS = [
    taints_case("NoSchedule, default policy is Ignore", None, (DEDICATED,), STAYS),
    taints_case("NoSchedule, Ignore", Policy.IGNORE, (DEDICATED,), STAYS),
    taints_case("NoSchedule, Honor", Policy.HONOR, (DEDICATED,), GONE),
    taints_case(
        "NoExecute, Honor", Policy.HONOR, (taint("dedicated", "db", Effect.NO_EXECUTE),), GONE
    ),
    taints_case(
        "PreferNoSchedule, Honor: ignored",
        Policy.HONOR,
        (taint("dedicated", "db", Effect.PREFER_NO_SCHEDULE),),
        STAYS,
    ),
    taints_case(
        "tolerated NoSchedule, Honor",
        Policy.HONOR,
        (DEDICATED,),
        STAYS,
        tolerations=(Toleration("dedicated", "Equal", "db", Effect.NO_SCHEDULE),),
    ),
    taints_case(
        "toleration with another value, Honor",
        Policy.HONOR,
        (DEDICATED,),
        GONE,
        tolerations=(Toleration("dedicated", "Equal", "web"),),
    ),
    taints_case(
        "empty key Exists tolerates everything, Honor",
        Policy.HONOR,
        (DEDICATED, taint("other", "", Effect.NO_EXECUTE)),
        STAYS,
        tolerations=(Toleration("", "Exists"),),
    ),
    taints_case(
        "toleration for NoSchedule leaves NoExecute untolerated, Honor",
        Policy.HONOR,
        (DEDICATED, taint("dedicated", "db", Effect.NO_EXECUTE)),
        GONE,
        tolerations=(Toleration("dedicated", "Exists", "", Effect.NO_SCHEDULE),),
    ),
    taints_case("cordoned without the taint, Honor", Policy.HONOR, (), STAYS, unschedulable=True),
    taints_case(
        "cordoned with the unschedulable taint, Honor",
        Policy.HONOR,
        (taint("node.kubernetes.io/unschedulable"),),
        GONE,
        unschedulable=True,
    ),
    taints_case(
        "cordoned with the unschedulable taint, Ignore",
        None,
        (taint("node.kubernetes.io/unschedulable"),),
        STAYS,
        unschedulable=True,
    ),
    # Per-constraint inclusion: tainted n3 is invisible to zone (Honor) only, and still counts
    # for host (Ignore). zone: z1=1, z2=0 -> n1 2 > 1. host: n1=1, n2=0, n3=2 -> n3 2+1-0 > 1.
    Case(
        "inclusion failure hides a node from that constraint only",
        state(
            [
                node("n1", zone="z1", host="n1"),
                node("n2", zone="z2", host="n2"),
                node("n3", zone="z2", host="n3", taints=(DEDICATED,)),
            ],
            [*pods_on("n1", 1), *pods_on("n3", 2)],
        ),
        incoming((hard("zone", WEB, taints=Policy.HONOR), hard("host", WEB))),
        {"n1": NO, "n2": OK, "n3": NO},
        domains=({"z1": 1, "z2": 0}, {"n1": 1, "n2": 0, "n3": 2}),
        global_min=(0, 0),
    ),
]


# --------------------------------------------------------------------------------------------
# Selectors: nil, {} and its bug, matchLabelKeys (sections 2.2-2.4, 11; rules 12.4, 12.10)

OTHER_NS = {"namespace": "other"}

SELECTORS = [
    # nil: counts 0 and selfMatch 0: never fails on skew, still rejects nodes lacking the key.
    Case(
        "nil selector counts nothing",
        state([node("n1", zone="z1"), node("n2", zone="z2"), node("n3")], pods_on("n1", 3)),
        incoming((hard("zone", None),)),
        {"n1": OK, "n2": OK, "n3": UU},
        domains=({"z1": 0, "z2": 0},),
        global_min=(0,),
    ),
    # {} with the upstream bug: every domain counts 0, selfMatch 1, skew 1 <= maxSkew.
    Case(
        "{} counts nothing by default (the upstream bug)",
        state([node("n1", zone="z1"), node("n2", zone="z2"), node("n3")], pods_on("n1", 3)),
        incoming((hard("zone", EVERYTHING),)),
        {"n1": OK, "n2": OK, "n3": UU},
        domains=({"z1": 0, "z2": 0},),
        global_min=(0,),
    ),
    # After the fix: z1 counts its one same-namespace pod, whatever its labels, and z2 the
    # other-namespace pods not at all: z1=1, z2=0 -> n1 1+1-0 = 2 > 1.
    Case(
        "{} counts every same-namespace pod when empty_selector_matches_all",
        state(
            [node("n1", zone="z1"), node("n2", zone="z2"), node("n3")],
            [*pods_on("n1", 1, {"unrelated": "x"}), *pods_on("n2", 2, **OTHER_NS)],
        ),
        incoming((hard("zone", EVERYTHING),), labels={"app": "whatever"}),
        {"n1": NO, "n2": OK, "n3": UU},
        index={"empty_selector_matches_all": True},
        domains=({"z1": 1, "z2": 0},),
        global_min=(0,),
    ),
    # With matchLabelKeys the merged selector is no longer empty, so the bug does not apply.
    Case(
        "{} plus matchLabelKeys counts, even by default",
        state([node("n1", zone="z1"), node("n2", zone="z2")], pods_on("n1", 2)),
        incoming((hard("zone", EVERYTHING, match_label_keys=("app",)),)),
        {"n1": NO, "n2": OK},
        domains=({"z1": 2, "z2": 0},),
    ),
    # matchLabelKeys: selector app=web AND version=v2. z1 holds v1 pods (0), z2 one v2 pod.
    Case(
        "matchLabelKeys ANDs the pod's label value",
        state(
            [node("n1", zone="z1"), node("n2", zone="z2")],
            [
                *pods_on("n1", 2, {"app": "web", "version": "v1"}),
                *pods_on("n2", 1, {"app": "web", "version": "v2"}),
            ],
        ),
        incoming(
            (hard("zone", WEB, match_label_keys=("version",)),),
            labels={"app": "web", "version": "v2"},
        ),
        {"n1": OK, "n2": NO},
        domains=({"z1": 0, "z2": 1},),
        global_min=(0,),
    ),
    Case(
        "matchLabelKeys skips keys the pod lacks",
        state(
            [node("n1", zone="z1"), node("n2", zone="z2")],
            [
                *pods_on("n1", 2, {"app": "web", "version": "v1"}),
                *pods_on("n2", 1, {"app": "web", "version": "v2"}),
            ],
        ),
        incoming(
            (hard("zone", WEB, match_label_keys=("track", "version")),),
            labels={"app": "web", "version": "v2"},
        ),
        {"n1": OK, "n2": NO},
        domains=({"z1": 0, "z2": 1},),
    ),
    # Without the keys on the pod, the plain selector: z1=2, z2=1, min 1.
    Case(
        "matchLabelKeys all absent: the plain selector",
        state(
            [node("n1", zone="z1"), node("n2", zone="z2")],
            [
                *pods_on("n1", 2, {"app": "web", "version": "v1"}),
                *pods_on("n2", 1, {"app": "web", "version": "v2"}),
            ],
        ),
        incoming((hard("zone", WEB, match_label_keys=("track",)),)),
        {"n1": NO, "n2": OK},
        domains=({"z1": 2, "z2": 1},),
        global_min=(1,),
    ),
    Case(
        "matchLabelKeys on a nil selector stays nothing",
        state([node("n1", zone="z1"), node("n2", zone="z2")], pods_on("n1", 3)),
        incoming((hard("zone", None, match_label_keys=("app",)),)),
        {"n1": OK, "n2": OK},
        domains=({"z1": 0, "z2": 0},),
    ),
]


# --------------------------------------------------------------------------------------------
# Which pods count (section 4; 11; rule 12.9)
# n1 (z1) holds one counted web pod; n2 (z2) holds 3 pods of the kind under test. Not counted:
# z2=0, min 0 -> n1 1+1-0 = 2 > 1 (NO), n2 OK. Counted: z2=3, min 1 -> n1 OK, n2 3+1-1 = 3 (NO).

NOT_COUNTED = (NO, OK)
COUNTED = (OK, NO)


def counting_case(id: str, on_n2: tuple[Pod, ...], expected: tuple[str, str]) -> Case:
    nodes = [node("n1", zone="z1"), node("n2", zone="z2")]
    return Case(
        id,
        state(nodes, [*pods_on("n1", 1), *on_n2]),
        incoming((hard("zone", WEB),)),
        dict(zip(("n1", "n2"), expected, strict=True)),
    )


COUNTING = [
    counting_case("running pods count", pods_on("n2", 3), COUNTED),
    counting_case("bound Pending pods count", pods_on("n2", 3, phase=Phase.PENDING), COUNTED),
    counting_case("Unknown-phase pods count", pods_on("n2", 3, phase=Phase.UNKNOWN), COUNTED),
    counting_case("other namespace", pods_on("n2", 3, namespace="other"), NOT_COUNTED),
    counting_case("terminating", pods_on("n2", 3, terminating=True), NOT_COUNTED),
    counting_case("Succeeded", pods_on("n2", 3, phase=Phase.SUCCEEDED), NOT_COUNTED),
    counting_case("Failed", pods_on("n2", 3, phase=Phase.FAILED), NOT_COUNTED),
    counting_case("not matching the selector", pods_on("n2", 3, {"app": "db"}), NOT_COUNTED),
    counting_case("unbound pending pods", pods_on(None, 3), NOT_COUNTED),
    # A pod bound to a node that is not in the snapshot counts nowhere.
    Case(
        "pods bound to a node missing from the snapshot",
        state(
            [node("n1", zone="z1"), node("n2", zone="z2")],
            [*pods_on("n1", 1), *pods_on("ghost", 3)],
        ),
        incoming((hard("zone", WEB),)),
        {"n1": NO, "n2": OK},
        domains=({"z1": 1, "z2": 0},),
    ),
    # Nominated pending pods of >= priority count for their nominated node's domain while that
    # node is evaluated: n2 sees z2=2 (min 1), 2+1-1 = 2 > 1. n1 is evaluated without them.
    counting_case(
        "nominated pods of equal priority count on their node",
        pods_on(None, 2, nominated="n2"),
        (NO, NO),
    ),
    counting_case(
        "nominated pods of lower priority do not count",
        pods_on(None, 2, nominated="n2", priority=-1),
        NOT_COUNTED,
    ),
    counting_case(
        "nominated pods in another namespace do not count",
        pods_on(None, 2, nominated="n2", namespace="other"),
        NOT_COUNTED,
    ),
]


# --------------------------------------------------------------------------------------------
# selfMatch, strict comparison, domains by value (section 5; rules 12.3, 12.4)

COMPARISON = [
    # (id, web pods per zone, maxSkew, minDomains, the Filter per node, global minimum)
    # selector app=web, pod app=api: z1=2, z2=1, min 1; n1 2+0-1 = 1 passes.
    case_zones("selfMatch 0 when the pod does not match", (2, 1), 1, None, (OK, OK), None, API),
    case_zones(
        "selfMatch 0: count - min > maxSkew still fails", (3, 1), 1, None, (NO, OK), None, API
    ),
    case_zones("== maxSkew 1 passes", (1, 2), 1, None, (OK, NO), 1),
    case_zones("empty cluster: the first replica goes anywhere", (0, 0), 1, None, (OK, OK), None),
    case_zones("one over maxSkew fails", (2, 0), 2, None, (NO, OK), None),
    case_zones("exactly maxSkew 2 passes", (1, 0), 2, None, (OK, OK), None),
    case_zones("large maxSkew", (5, 0), 6, None, (OK, OK), None),
    case_zones("large maxSkew exceeded", (6, 0), 6, None, (NO, OK), None),
    # Two nodes sharing hostname value h1 are one domain: n2 holds no pod itself but its domain
    # holds n1's, 1+1-0 = 2 > 1 (rule 12.3: per domain, not per node).
    Case(
        "two nodes sharing a hostname value form one domain",
        state(
            [
                node("n1", {"kubernetes.io/hostname": "h1"}),
                node("n2", {"kubernetes.io/hostname": "h1"}),
                node("n3", {"kubernetes.io/hostname": "h3"}),
            ],
            pods_on("n1", 1),
        ),
        incoming((hard("kubernetes.io/hostname", WEB),)),
        {"n1": NO, "n2": NO, "n3": OK},
        domains=({"h1": 1, "h3": 0},),
        global_min=(0,),
    ),
    Case(
        "a domain's count is the sum over its nodes",
        state(
            [node("a", zone="z1"), node("b", zone="z1"), node("c", zone="z2")],
            [*pods_on("a", 1), *pods_on("b", 1), *pods_on("c", 1)],
        ),
        incoming((hard("zone", WEB),)),
        {"a": NO, "b": NO, "c": OK},
        domains=({"z1": 2, "z2": 1},),
        global_min=(1,),
    ),
]


# --------------------------------------------------------------------------------------------
# A bound pod is judged as if placed again: removed from the counts first (section 5)


def bound_case(
    id: str,
    on_n1: int,
    on_n2: int,
    expected: tuple[str, str],
    *,
    domains: dict[str, int],
    gmin: int,
) -> Case:
    """The pod under test is bound to n1 (z1), next to ``on_n1 - 1`` other web pods."""
    c = (hard("zone", WEB),)
    me = pod("me", "n1", APP_WEB, constraints=c)
    others = [*pods_on("n1", on_n1 - 1, constraints=c), *pods_on("n2", on_n2, constraints=c)]
    return Case(
        id,
        state([node("n1", zone="z1"), node("n2", zone="z2")], [me, *others]),
        me,
        dict(zip(("n1", "n2"), expected, strict=True)),
        domains=(domains,),
        global_min=(gmin,),
    )


BOUND = [
    # Without it: z1=1, z2=1, min 1 -> both pass. Counting it: z1=2, n1 2+1-1 = 2 > 1.
    bound_case(
        "bound pod is removed from its own domain",
        2,
        1,
        (OK, OK),
        domains={"z1": 1, "z2": 1},
        gmin=1,
    ),
    bound_case(
        "bound pod still over skew without itself",
        3,
        1,
        (NO, OK),
        domains={"z1": 2, "z2": 1},
        gmin=1,
    ),
    # Removing it lowers the minimum: z1=0, z2=1, min 0 -> n2 1+1-0 = 2 > 1.
    bound_case(
        "removing the pod can lower the minimum", 1, 1, (OK, NO), domains={"z1": 0, "z2": 1}, gmin=0
    ),
]


# --------------------------------------------------------------------------------------------
# Soft constraints play no part in the Filter (section 2; 7)

SOFT_NODES = [
    node("n1", zone="z1", host="n1"),
    node("n2", zone="z2"),
    node("n3", zone="z1", host="n3"),
]
SOFT_PODS = pods_on("n1", 5)

SOFT = [
    # Hard zone maxSkew 10 passes everywhere (z1: 5+1-0). The soft host constraint would reject
    # n1 and the missing host key would make n2 unresolvable, if the Filter looked at it.
    Case(
        "soft constraint ignored by the Filter",
        state(SOFT_NODES, SOFT_PODS),
        incoming((hard("zone", WEB, max_skew=10), soft("host", WEB))),
        {"n1": OK, "n2": OK, "n3": OK},
    ),
    Case(
        "soft constraint ignored by the Filter, soft constraints analysed",
        state(SOFT_NODES, SOFT_PODS),
        incoming((hard("zone", WEB, max_skew=10), soft("host", WEB))),
        {"n1": OK, "n2": OK, "n3": OK},
        index={"include_soft": True},
    ),
    # Soft keys do not gate the hard constraints' counts: n3 (zone z2, no host) still counts its
    # 3 pods for zone. z1=1, z2=3, min 1 -> n1 passes, n2 and n3 3+1-1 = 3 > 1.
    Case(
        "soft keys do not gate hard counting",
        state(
            [
                node("n1", zone="z1", host="n1"),
                node("n2", zone="z2", host="n2"),
                node("n3", zone="z2"),
            ],
            [*pods_on("n1", 1), *pods_on("n3", 3)],
        ),
        incoming((hard("zone", WEB), soft("host", WEB))),
        {"n1": OK, "n2": NO, "n3": NO},
        index={"include_soft": True},
    ),
    Case(
        "only soft constraints: no hard constraint, the Filter passes everywhere",
        state([*SOFT_NODES, node("n4")], SOFT_PODS),
        incoming((soft("host", WEB), soft("zone", WEB))),
        {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
        index={"include_soft": True},
    ),
    Case(
        "no constraints at all: the Filter passes everywhere",
        state([*SOFT_NODES, node("n4")], SOFT_PODS),
        incoming(()),
        {"n1": OK, "n2": OK, "n3": OK, "n4": OK},
    ),
]


# --------------------------------------------------------------------------------------------
# Default constraints (sections 2.1, 8; rule 12.11)
# Defaults: hard zone maxSkew 1. Nodes n1 (z1, 2 web pods), n2 (z2), n3 (no zone).
# When the defaults apply with selector app=web: n1 2+1-0 = 3 > 1, n2 passes, n3 unresolvable.

DEFAULTS = (hard("zone", None),)
APPLIES = {"n1": NO, "n2": OK, "n3": UU}
NOTHING = {"n1": OK, "n2": OK, "n3": OK}
DEFAULT_NODES = [node("n1", zone="z1"), node("n2", zone="z2"), node("n3", host="n3")]


def defaults_case(
    id: str,
    expected: Mapping[str, str],
    *,
    owner: OwnerRef | None = None,
    constraints: tuple[SpreadConstraint, ...] = (),
    workloads: tuple[Any, ...] = (),
    services: tuple[Any, ...] = (),
) -> Case:
    existing = pods_on("n1", 2, owner=owner)
    return Case(
        id,
        state(DEFAULT_NODES, existing, workloads=workloads, services=services),
        pod("incoming", None, APP_WEB, constraints=constraints, owner=owner),
        expected,
        index={"default_constraints": DEFAULTS},
    )


RS = OwnerRef("ReplicaSet", "web-1")
DEFAULT_CASES = [
    defaults_case("bare pod, no service: no default constraints", NOTHING),
    defaults_case("service selecting the pod", APPLIES, services=(service("web", {"app": "web"}),)),
    defaults_case(
        "service in another namespace",
        NOTHING,
        services=(service("web", {"app": "web"}, namespace="other"),),
    ),
    defaults_case(
        "service not selecting the pod", NOTHING, services=(service("api", {"app": "api"}),)
    ),
    defaults_case("service with nil selector", NOTHING, services=(service("headless", None),)),
    defaults_case(
        "owning ReplicaSet", APPLIES, owner=RS, workloads=(workload("ReplicaSet", "web-1", WEB),)
    ),
    defaults_case(
        "owning StatefulSet",
        APPLIES,
        owner=OwnerRef("StatefulSet", "web"),
        workloads=(workload("StatefulSet", "web", WEB),),
    ),
    defaults_case(
        "owning ReplicationController",
        APPLIES,
        owner=OwnerRef("ReplicationController", "web"),
        workloads=(workload("ReplicationController", "web", WEB),),
    ),
    defaults_case("owning ReplicaSet missing from the snapshot", NOTHING, owner=RS),
    defaults_case(
        "owning Job adds nothing",
        NOTHING,
        owner=OwnerRef("Job", "batch"),
        workloads=(workload("Job", "batch", WEB),),
    ),
    defaults_case(
        "owning DaemonSet adds nothing",
        NOTHING,
        owner=OwnerRef("DaemonSet", "agent"),
        workloads=(workload("DaemonSet", "agent", WEB),),
    ),
    defaults_case(
        "pod with only a ScheduleAnyway constraint gets no default hard constraint",
        NOTHING,
        constraints=(soft("zone", WEB),),
        services=(service("web", {"app": "web"}),),
    ),
    # The pod's own hard constraint on host replaces the defaults: n3 has host and passes,
    # n1 and n2 lack host.
    defaults_case(
        "pod's own hard constraint replaces the defaults",
        {"n1": UU, "n2": UU, "n3": OK},
        constraints=(hard("host", WEB),),
        services=(service("web", {"app": "web"}),),
    ),
]


ALL_CASES = [
    *WORKED,
    *gate_cases(),
    *MIN_DOMAINS,
    *AFFINITY,
    *TAINTS,
    *SELECTORS,
    *COUNTING,
    *COMPARISON,
    *BOUND,
    *SOFT,
    *DEFAULT_CASES,
]


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_filter_status(case: Case) -> None:
    ex = explain(case)
    assert statuses(ex) == dict(case.expected)
    if case.domains is not None:
        assert tuple(c.domains for c in ex.constraints) == case.domains
    if case.global_min is not None:
        assert tuple(c.global_minimum for c in ex.constraints) == case.global_min


def test_case_ids_are_unique() -> None:
    ids = [c.id for c in ALL_CASES]
    assert len(ids) == len(set(ids))


# --------------------------------------------------------------------------------------------
# What explain reports about the constraints themselves


def test_explain_reports_effective_constraint_defaults() -> None:
    nodes, pods = zones(1, 0)
    ex = explain_pod(SpreadIndex(state(nodes, pods)), incoming((hard("zone", WEB, max_skew=2),)))
    (c,) = ex.constraints
    assert (c.topology_key, c.max_skew, c.min_domains, c.when) == ("zone", 2, 1, "DoNotSchedule")
    assert c.self_match is True
    assert ex.pod == "default/incoming"
    assert ex.bound_to is None


def test_explain_self_match_false_for_nil_selector() -> None:
    nodes, pods = zones(1, 0)
    ex = explain_pod(SpreadIndex(state(nodes, pods)), incoming((hard("zone", None),)))
    assert [c.self_match for c in ex.constraints] == [False]


def test_default_constraints_do_not_apply_to_pods_with_constraints() -> None:
    """Defaults appear in the explanation only for pods with no constraints of their own."""
    index = SpreadIndex(
        state(DEFAULT_NODES, services=(service("web", {"app": "web"}),)),
        default_constraints=DEFAULTS,
    )
    own = explain_pod(index, pod("own", None, APP_WEB, constraints=(hard("host", WEB),)))
    assert [c.topology_key for c in own.constraints] == ["host"]
    bare = explain_pod(index, pod("bare", None, APP_WEB))
    assert [c.topology_key for c in bare.constraints] == ["zone"]
    assert [c.self_match for c in bare.constraints] == [True]


def test_spread_filter_success_does_not_mean_feasible() -> None:
    """A cordoned node passes the spread Filter but is not feasible (section 5, companions)."""
    cluster = state([node("n1", zone="z1"), node("n2", zone="z2", unschedulable=True)], [])
    ex = explain_pod(SpreadIndex(cluster), incoming((hard("zone", WEB),)))
    by_name = {n.name: n for n in ex.nodes}
    assert by_name["n2"].spread_filter.value == OK
    assert by_name["n2"].feasible is False
    assert by_name["n2"].reasons
    assert by_name["n1"].feasible is True
    assert by_name["n1"].reasons == ()


def test_explain_judges_a_bound_pod_by_its_own_constraints() -> None:
    """Section 5: remove P and run the Filter with P as the incoming pod, with P's constraints.

    The StatefulSet's template was since changed to maxSkew 3 (pods keep the constraints they
    were created with: they are immutable). P carries maxSkew 1. Without P: z1=2, z2=0, min 0,
    so P's own node n1 gives 2+1-0 = 3 > 1: its placement violates its constraints.
    """
    old = (hard("zone", WEB),)
    new = (hard("zone", WEB, max_skew=3),)
    owner = OwnerRef("StatefulSet", "web")
    me = pod("web-0", "n1", APP_WEB, constraints=old, owner=owner)
    others = pods_on("n1", 2, constraints=old, owner=owner)
    sts = stateful_set("web", 3, constraints=new)
    cluster = state([node("n1", zone="z1"), node("n2", zone="z2")], [me, *others], workloads=[sts])
    ex = explain_pod(SpreadIndex(cluster), me)
    assert [c.max_skew for c in ex.constraints] == [1]
    assert statuses(ex) == {"n1": NO, "n2": OK}


def test_profile_for_with_short_lived_specs_and_constraints() -> None:
    """The profile cache is keyed by identity: objects freed between calls must not hand a
    later, different spec the profile of an earlier one whose id was reused."""
    index = SpreadIndex(state([node("n1", zone="z1")]))
    labels = Labels(APP_WEB)
    for i in range(2000):
        skew = 1 + i % 5
        constraints = (hard("zone", WEB, max_skew=skew),)
        profile = index.profile_for("default", labels, pod_spec(constraints), constraints)
        assert profile.constraints[0].max_skew == skew
        del constraints, profile


def test_profile_for_defaults_with_short_lived_labels() -> None:
    index = SpreadIndex(
        state(
            [node("n1", zone="z1")],
            services=[service("a", {"app": "a"}), service("b", {"app": "b"})],
        ),
        default_constraints=(hard("zone", None),),
    )
    for i in range(2000):
        app = "a" if i % 2 else "b"
        p = pod(f"p{i}", "n1", {"app": app})
        profile = index.profile_for("default", p.labels, p.spec, (), p)
        (c,) = profile.constraints
        assert c.selector is not None and c.selector.requirements[0].values == (app,)
        del p, profile
