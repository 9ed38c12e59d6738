"""Label selectors, required node affinity and tolerations (spread-semantics.md 2.3 and 3)."""

from __future__ import annotations

from respread.core.model import (
    Effect,
    Labels,
    LabelSelector,
    NodeAffinity,
    NodeSelectorTerm,
    Op,
    Requirement,
    Taint,
    Toleration,
)
from respread.core.selectors import (
    affinity_matches,
    requirement_matches,
    selector_matches,
    tolerates,
    untolerated_taint,
)
from tests.support.builders import node
from tests.support.tables import cases


def test_a_term_with_a_value_the_api_cannot_parse_never_matches() -> None:
    # labels.NewRequirement rejects "-1" (not a valid label value), so the scheduler's
    # NodeAffinity never matches the term (found by the kube-scheduler oracle).
    term = NodeSelectorTerm(match_expressions=(Requirement("gen", Op.GT, ("-1",)),))
    assert not affinity_matches(NodeAffinity(required_terms=(term,)), node("n1", {"gen": "2"}))


# --------------------------------------------------------------------------------------------
# Label selectors (section 2.3)


def req(key: str, op: Op, *values: str) -> Requirement:
    return Requirement(key, op, values)


SELECTOR_CASES = [
    # (id, selector, labels, matches)
    ("nil matches nothing", None, {"app": "web"}, False),
    ("nil matches nothing, not even no labels", None, {}, False),
    ("{} matches everything", LabelSelector(()), {"app": "web"}, True),
    ("{} matches a pod with no labels", LabelSelector(()), {}, True),
    ("matchLabels equal", LabelSelector((req("app", Op.IN, "web"),)), {"app": "web"}, True),
    ("matchLabels other value", LabelSelector((req("app", Op.IN, "web"),)), {"app": "db"}, False),
    ("matchLabels absent", LabelSelector((req("app", Op.IN, "web"),)), {}, False),
    (
        "matchLabels empty value present",
        LabelSelector((req("tier", Op.IN, ""),)),
        {"tier": ""},
        True,
    ),
    ("matchLabels empty value absent", LabelSelector((req("tier", Op.IN, ""),)), {}, False),
    ("In listed", LabelSelector((req("env", Op.IN, "a", "b"),)), {"env": "b"}, True),
    ("In not listed", LabelSelector((req("env", Op.IN, "a", "b"),)), {"env": "c"}, False),
    ("In absent", LabelSelector((req("env", Op.IN, "a", "b"),)), {}, False),
    ("NotIn absent", LabelSelector((req("env", Op.NOT_IN, "a"),)), {}, True),
    ("NotIn listed", LabelSelector((req("env", Op.NOT_IN, "a"),)), {"env": "a"}, False),
    ("NotIn other value", LabelSelector((req("env", Op.NOT_IN, "a"),)), {"env": "b"}, True),
    ("Exists present", LabelSelector((req("env", Op.EXISTS),)), {"env": ""}, True),
    ("Exists absent", LabelSelector((req("env", Op.EXISTS),)), {"other": "x"}, False),
    ("DoesNotExist absent", LabelSelector((req("env", Op.DOES_NOT_EXIST),)), {}, True),
    ("DoesNotExist present", LabelSelector((req("env", Op.DOES_NOT_EXIST),)), {"env": "a"}, False),
    (
        "requirements are ANDed: all hold",
        LabelSelector((req("app", Op.IN, "web"), req("env", Op.NOT_IN, "dev"))),
        {"app": "web", "env": "prod"},
        True,
    ),
    (
        "requirements are ANDed: one fails",
        LabelSelector((req("app", Op.IN, "web"), req("env", Op.NOT_IN, "dev"))),
        {"app": "web", "env": "dev"},
        False,
    ),
    (
        "value comparison is exact (case)",
        LabelSelector((req("app", Op.IN, "web"),)),
        {"app": "Web"},
        False,
    ),
]


@cases(("selector", "labels", "expected"), SELECTOR_CASES)
def test_selector_matches(
    selector: LabelSelector | None, labels: dict[str, str], expected: bool
) -> None:
    assert selector_matches(selector, Labels(labels)) is expected


# --------------------------------------------------------------------------------------------
# Gt / Lt: strconv.ParseInt(value, 10, 64) on both sides; anything unparsable never matches

GT_LT_CASES = [
    # (id, op, label value or None for absent, requirement value, matches)
    ("Gt greater", Op.GT, "5", "3", True),
    ("Gt equal is not greater", Op.GT, "3", "3", False),
    ("Gt smaller", Op.GT, "2", "3", False),
    ("Lt smaller", Op.LT, "2", "3", True),
    ("Lt equal is not smaller", Op.LT, "3", "3", False),
    ("Lt greater", Op.LT, "4", "3", False),
    ("Gt compares numerically not as text", Op.GT, "10", "9", True),
    ("Lt negative label", Op.LT, "-5", "0", True),
    ("Gt explicit plus sign", Op.GT, "+5", "4", True),
    ("Gt leading zeros", Op.GT, "007", "6", True),
    ("Gt max int64", Op.GT, "9223372036854775807", "0", True),
    ("Lt min int64", Op.LT, "-9223372036854775808", "0", True),
    ("Gt int64 overflow does not parse", Op.GT, "9223372036854775808", "0", False),
    ("Lt int64 underflow does not parse", Op.LT, "-9223372036854775809", "0", False),
    ("Gt absent label", Op.GT, None, "0", False),
    ("Gt label not an int", Op.GT, "abc", "0", False),
    ("Gt label empty", Op.GT, "", "-1", False),
    ("Gt label decimal", Op.GT, "5.0", "1", False),
    ("Gt label underscore", Op.GT, "1_000", "1", False),
    ("Lt label underscore", Op.LT, "1_0", "100", False),
    ("Gt requirement underscore", Op.GT, "5000", "1_000", False),
    ("Gt label leading space", Op.GT, " 5", "1", False),
    ("Gt label trailing space", Op.GT, "5 ", "1", False),
    ("Gt label hex", Op.GT, "0x10", "1", False),
    ("Gt label sign only", Op.GT, "-", "-5", False),
    ("Gt label double sign", Op.GT, "--5", "-10", False),
    ("Gt label non-ASCII digits", Op.GT, "\u0665", "1", False),  # ARABIC-INDIC FIVE
    ("Gt label exponent", Op.GT, "1e3", "1", False),
    ("Lt requirement not an int", Op.LT, "1", "ten", False),
]


@cases(("op", "value", "bound", "expected"), GT_LT_CASES)
def test_gt_lt_integer_comparison(op: Op, value: str | None, bound: str, expected: bool) -> None:
    labels = Labels({} if value is None else {"gen": value})
    assert requirement_matches(Requirement("gen", op, (bound,)), labels) is expected
    term = NodeSelectorTerm(match_expressions=(Requirement("gen", op, (bound,)),))
    n = node("n1", {} if value is None else {"gen": value})
    assert affinity_matches(NodeAffinity(required_terms=(term,)), n) is expected


# --------------------------------------------------------------------------------------------
# Required node affinity (section 3, step 2)


def expr(key: str, op: Op, *values: str) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_expressions=(Requirement(key, op, values),))


def name_is(op: Op, name: str) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_fields=(Requirement("metadata.name", op, (name,)),))


SSD_A = node("n1", zone="a", disk="ssd")
HDD_B = node("n2", zone="b", disk="hdd")
BARE = node("n3")

AFFINITY_CASES = [
    # (id, affinity, node, matches)
    ("no affinity matches any node", NodeAffinity(), BARE, True),
    ("nodeSelector equal", NodeAffinity(Labels({"zone": "a"})), SSD_A, True),
    ("nodeSelector other value", NodeAffinity(Labels({"zone": "a"})), HDD_B, False),
    ("nodeSelector label absent", NodeAffinity(Labels({"zone": "a"})), BARE, False),
    (
        "nodeSelector pairs are ANDed",
        NodeAffinity(Labels({"zone": "a", "disk": "hdd"})),
        SSD_A,
        False,
    ),
    (
        "nodeSelector empty value needs the label",
        NodeAffinity(Labels({"gpu": ""})),
        BARE,
        False,
    ),
    ("no terms at all matches nothing", NodeAffinity(required_terms=()), SSD_A, False),
    (
        "empty term matches nothing",
        NodeAffinity(required_terms=(NodeSelectorTerm(),)),
        SSD_A,
        False,
    ),
    (
        "empty term ORed with a matching term",
        NodeAffinity(required_terms=(NodeSelectorTerm(), expr("zone", Op.IN, "a"))),
        SSD_A,
        True,
    ),
    (
        "terms are ORed: second matches",
        NodeAffinity(required_terms=(expr("zone", Op.IN, "x"), expr("disk", Op.IN, "hdd"))),
        HDD_B,
        True,
    ),
    (
        "terms are ORed: none matches",
        NodeAffinity(required_terms=(expr("zone", Op.IN, "x"), expr("disk", Op.IN, "nvme"))),
        HDD_B,
        False,
    ),
    (
        "expressions within a term are ANDed",
        NodeAffinity(
            required_terms=(
                NodeSelectorTerm(
                    match_expressions=(
                        Requirement("zone", Op.IN, ("a",)),
                        Requirement("disk", Op.IN, ("hdd",)),
                    )
                ),
            )
        ),
        SSD_A,
        False,
    ),
    (
        "NotIn on absent label",
        NodeAffinity(required_terms=(expr("zone", Op.NOT_IN, "a"),)),
        BARE,
        True,
    ),
    (
        "NotIn on listed value",
        NodeAffinity(required_terms=(expr("zone", Op.NOT_IN, "a"),)),
        SSD_A,
        False,
    ),
    ("Exists", NodeAffinity(required_terms=(expr("disk", Op.EXISTS),)), HDD_B, True),
    ("DoesNotExist", NodeAffinity(required_terms=(expr("disk", Op.DOES_NOT_EXIST),)), HDD_B, False),
    ("matchFields name In", NodeAffinity(required_terms=(name_is(Op.IN, "n1"),)), SSD_A, True),
    (
        "matchFields name In other",
        NodeAffinity(required_terms=(name_is(Op.IN, "n1"),)),
        HDD_B,
        False,
    ),
    (
        "matchFields name NotIn",
        NodeAffinity(required_terms=(name_is(Op.NOT_IN, "n1"),)),
        HDD_B,
        True,
    ),
    (
        "matchFields name NotIn itself",
        NodeAffinity(required_terms=(name_is(Op.NOT_IN, "n1"),)),
        SSD_A,
        False,
    ),
    (
        "matchFields look at the name, not a label called metadata.name",
        NodeAffinity(required_terms=(name_is(Op.IN, "n1"),)),
        node("n9", {"metadata.name": "n1"}),
        False,
    ),
    (
        "matchFields and matchExpressions are ANDed",
        NodeAffinity(
            required_terms=(
                NodeSelectorTerm(
                    match_expressions=(Requirement("zone", Op.IN, ("b",)),),
                    match_fields=(Requirement("metadata.name", Op.IN, ("n1",)),),
                ),
            )
        ),
        SSD_A,
        False,
    ),
    (
        "nodeSelector AND terms: both hold",
        NodeAffinity(Labels({"disk": "ssd"}), (expr("zone", Op.IN, "a", "b"),)),
        SSD_A,
        True,
    ),
    (
        "nodeSelector AND terms: term fails",
        NodeAffinity(Labels({"disk": "ssd"}), (expr("zone", Op.IN, "b"),)),
        SSD_A,
        False,
    ),
    (
        "nodeSelector AND terms: nodeSelector fails",
        NodeAffinity(Labels({"disk": "hdd"}), (expr("zone", Op.IN, "a"),)),
        SSD_A,
        False,
    ),
]


@cases(("affinity", "the_node", "expected"), AFFINITY_CASES)
def test_affinity_matches(affinity: NodeAffinity, the_node: object, expected: bool) -> None:
    assert affinity_matches(affinity, the_node) is expected  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Tolerations (v1.Toleration.ToleratesTaint; section 3 step 2 and rule 12.7)

NS, PNS, NE = Effect.NO_SCHEDULE, Effect.PREFER_NO_SCHEDULE, Effect.NO_EXECUTE

TOLERATION_CASES = [
    # (id, toleration, taint, tolerated)
    ("Equal same key value effect", Toleration("k", "Equal", "v", NS), Taint("k", "v", NS), True),
    ("Equal other value", Toleration("k", "Equal", "v", NS), Taint("k", "w", NS), False),
    ("Equal other key", Toleration("k", "Equal", "v", NS), Taint("j", "v", NS), False),
    ("Equal other effect", Toleration("k", "Equal", "v", NS), Taint("k", "v", NE), False),
    ("Equal empty values", Toleration("k", "Equal", "", NS), Taint("k", "", NS), True),
    (
        "Equal empty value vs set value",
        Toleration("k", "Equal", "", NS),
        Taint("k", "v", NS),
        False,
    ),
    ("empty operator means Equal", Toleration("k", "", "v", NS), Taint("k", "v", NS), True),
    ("empty operator compares values", Toleration("k", "", "v", NS), Taint("k", "w", NS), False),
    ("empty effect matches NoSchedule", Toleration("k", "Equal", "v"), Taint("k", "v", NS), True),
    ("empty effect matches NoExecute", Toleration("k", "Equal", "v"), Taint("k", "v", NE), True),
    (
        "empty effect matches PreferNoSchedule",
        Toleration("k", "Equal", "v"),
        Taint("k", "v", PNS),
        True,
    ),
    ("Exists any value", Toleration("k", "Exists", "", NS), Taint("k", "anything", NS), True),
    ("Exists other key", Toleration("k", "Exists", "", NS), Taint("j", "", NS), False),
    ("Exists other effect", Toleration("k", "Exists", "", NE), Taint("k", "", NS), False),
    ("empty key Exists matches every taint", Toleration("", "Exists"), Taint("any", "x", NE), True),
    ("empty key Exists, no effect, NoSchedule", Toleration("", "Exists"), Taint("z", "", NS), True),
    (
        "empty key Exists with an effect matches only that effect",
        Toleration("", "Exists", "", NS),
        Taint("any", "x", NE),
        False,
    ),
    (
        "empty key Exists with an effect, same effect",
        Toleration("", "Exists", "", NE),
        Taint("any", "x", NE),
        True,
    ),
    ("key is case sensitive", Toleration("K", "Exists"), Taint("k", "", NS), False),
]


@cases(("toleration", "the_taint", "expected"), TOLERATION_CASES)
def test_tolerates(toleration: Toleration, the_taint: Taint, expected: bool) -> None:
    assert tolerates(toleration, the_taint) is expected


DEDICATED_NS = Taint("dedicated", "db", NS)
DEDICATED_NE = Taint("dedicated", "db", NE)
GPU_NS = Taint("gpu", "", NS)
SOFT = Taint("soft", "", PNS)
TOL_DEDICATED = Toleration("dedicated", "Equal", "db")
TOL_GPU_NS = Toleration("gpu", "Exists", "", NS)
TOL_ALL = Toleration("", "Exists")

UNTOLERATED_CASES = [
    # (id, tolerations, taints, first untolerated NoSchedule/NoExecute taint or None)
    ("no taints", (), (), None),
    ("PreferNoSchedule is ignored", (), (SOFT,), None),
    ("NoSchedule untolerated", (), (DEDICATED_NS,), DEDICATED_NS),
    ("NoExecute untolerated", (), (DEDICATED_NE,), DEDICATED_NE),
    ("tolerated NoSchedule", (TOL_DEDICATED,), (DEDICATED_NS,), None),
    ("one toleration covers both effects", (TOL_DEDICATED,), (DEDICATED_NS, DEDICATED_NE), None),
    ("tolerate-everything toleration", (TOL_ALL,), (DEDICATED_NS, GPU_NS, DEDICATED_NE), None),
    ("second taint untolerated", (TOL_DEDICATED,), (DEDICATED_NS, GPU_NS), GPU_NS),
    ("first untolerated in node order", (), (SOFT, GPU_NS, DEDICATED_NS), GPU_NS),
    (
        "toleration for NoSchedule does not cover NoExecute",
        (TOL_GPU_NS,),
        (GPU_NS, Taint("gpu", "", NE)),
        Taint("gpu", "", NE),
    ),
    (
        "untolerated PreferNoSchedule beside tolerated NoSchedule",
        (TOL_GPU_NS,),
        (SOFT, GPU_NS),
        None,
    ),
]


@cases(("tolerations", "taints", "expected"), UNTOLERATED_CASES)
def test_untolerated_taint(
    tolerations: tuple[Toleration, ...], taints: tuple[Taint, ...], expected: Taint | None
) -> None:
    assert untolerated_taint(tolerations, taints) == expected


def test_untolerated_taint_accepts_one_shot_iterables() -> None:
    """Tolerations may be a generator: each taint must still see all of them."""
    tols = (t for t in (TOL_DEDICATED, TOL_GPU_NS))
    assert untolerated_taint(tols, (DEDICATED_NS, GPU_NS, DEDICATED_NE)) is None
