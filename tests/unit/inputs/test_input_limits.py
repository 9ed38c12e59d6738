"""Reading untrusted text within bounds (respread.inputs.documents, respread.core.limits,
respread.core.timestamps).

Each class of hostile input ends in an InputError (or a Problem naming the object and field),
never in another exception, a hang or unbounded memory.
"""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from respread.core.limits import Limits, shown
from respread.core.timestamps import parse_rfc3339
from respread.inputs.documents import InputError, decode, documents_from_text
from respread.inputs.objects import load_texts


def docs(text: str, limits: Limits | None = None) -> list[object]:
    return [d for _, d in documents_from_text(text, "t", limits or Limits())]


def alias_bomb(levels: int, fan_out: int) -> str:
    lines = ["l0: &l0 [" + ", ".join(["x"] * fan_out) + "]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan_out) + "]")
    return "\n".join(lines) + f"\nkind: List\nitems: *l{levels - 1}\n"


@pytest.mark.parametrize(
    ("levels", "fan_out"), [(9, 9), (30, 2), (3, 60)], ids=["classic", "deep-binary", "wide"]
)
def test_alias_bombs_are_refused_before_expansion(levels: int, fan_out: int) -> None:
    with pytest.raises(InputError, match="alias"):
        docs(alias_bomb(levels, fan_out))


def test_a_few_aliases_are_fine() -> None:
    text = "base: &b {app: web}\nkind: Node\nmetadata: {name: n1, labels: *b}\n"
    assert docs(text)[0] == {
        "base": {"app": "web"},
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"app": "web"}},
    }


def test_merge_keys_still_work() -> None:
    text = "a: &a {x: 1}\nb: {<<: *a, y: 2}\n"
    assert docs(text)[0] == {"a": {"x": 1}, "b": {"x": 1, "y": 2}}


def test_alias_count_is_bounded() -> None:
    text = "a: &a x\nb: [" + ", ".join(["*a"] * 101) + "]\n"
    with pytest.raises(InputError, match="more than 100 YAML aliases"):
        docs(text)


@pytest.mark.parametrize("text", ["&a [*a]\n", "&a {k: *a}\n", "&a [[[*a]]]\n"])
def test_self_referring_aliases_are_refused(text: str) -> None:
    with pytest.raises(InputError, match="refers to itself"):
        docs(text)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 101 + "]" * 101,
        "- " * 101 + "a\n",
        "".join(f"{'  ' * i}k:\n" for i in range(101)) + "  " * 101 + "k: v\n",
        "{" + '"a":{' * 101 + "}" * 102,
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=["yaml-flow", "yaml-block-seq", "yaml-block-map", "json", "json-100k"],
)
def test_nesting_is_bounded(text: str) -> None:
    with pytest.raises(InputError, match="nested deeper than 100"):
        docs(text)


def test_nesting_at_the_limit_is_fine() -> None:
    assert docs('{"a":' * 100 + "1" + "}" * 100)
    assert docs("{a: " * 100 + "1" + "}" * 100)


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ('{"a": ' + "9" * 5000 + "}", "5000 digits"),
        ("a: " + "9" * 5000 + "\n", "5000 digits"),
        ('{"a": NaN}', "NaN"),
        ('{"a": -Infinity}', "Infinity"),
    ],
)
def test_numbers_json_cannot_hold_are_refused(text: str, what: str) -> None:
    with pytest.raises((InputError, yaml.YAMLError), match=what):
        docs(text)


def test_timestamps_stay_strings() -> None:
    assert docs("t: 2026-02-30T00:00:00Z\n") == [{"t": "2026-02-30T00:00:00Z"}]


@pytest.mark.parametrize("tag", ["!!binary aGk=", "!!set {a: null}", "!!omap [a: 1]", "!foo x"])
def test_tags_outside_json_are_refused(tag: str) -> None:
    with pytest.raises(yaml.YAMLError, match=r"constructor|tag") as info:
        docs(f"a: {tag}\n")
    assert "yaml" in type(info.value).__module__


def test_size_limit() -> None:
    with pytest.raises(InputError, match="larger than the limit of 10 bytes"):
        docs("a: 12345678901\n", Limits(max_bytes=10))


def test_decode_names_the_bad_byte() -> None:
    with pytest.raises(InputError, match=r"byte 0xff at offset 3") as info:
        decode(b"a:\n\xff")
    assert info.value.line == 2
    assert decode("\ufeffa: b".encode()) == "a: b"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2026-01-01T00:00:00Z", 1767225600.0),
        ("2026-01-01T01:00:00+01:00", 1767225600.0),
        ("2026-01-01T00:00:00.5z", 1767225600.5),
    ],
)
def test_rfc3339(text: str, seconds: float) -> None:
    assert parse_rfc3339(text) == seconds


@pytest.mark.parametrize(
    "text",
    [
        "2026-02-30T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T00:00:60Z",
        "2026-01-01",
        "2026-01-01T00:00:00",
        "2026-01-01T00:00:00+25:00",
        "２０２６-01-01T00:00:00Z",
        "",
    ],
)
def test_rfc3339_refusals(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rfc3339(text)


def test_shown_cuts_long_values() -> None:
    assert len(shown("x" * 1_000_000)) < 120
    assert shown("x" * 1_000_000).endswith("(1000000 characters)")
    assert shown(10**5000) == "an integer of about 5001 digits"
    assert shown({"a": 1}) == "a dict of 1 item"
    assert shown("short") == "'short'"


def node(name: object, **meta: object) -> dict[str, object]:
    return {"kind": "Node", "metadata": {"name": name, **meta}}


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (node("n", creationTimestamp="2026-02-30T00:00:00Z"), "metadata.creationTimestamp"),
        (node(7), "metadata.name"),
        (node("n" * 254), "metadata.name"),
        (node("n", labels={"a": {"b": 1}}), "metadata.labels"),
        ({**node("n"), "status": {"allocatable": {"cpu": "1e1000000"}}}, "status.allocatable.cpu"),
        ({**node("n"), "status": {"allocatable": {"memory": 1e300}}}, "status.allocatable.memory"),
        (
            {**node("n"), "spec": {"taints": [{"key": "k", "effect": "NoSchedule", "value": [1]}]}},
            "spec.taints[0].value",
        ),
        ({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": 2**31}}, "spec.priority"),
        ({"kind": "Pod", "metadata": {"name": "p", "namespace": "n" * 64}}, "metadata.namespace"),
        (
            {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2**63}},
            "spec.replicas",
        ),
    ],
)
def test_bad_fields_are_named_and_cut(doc: dict[str, object], field: str) -> None:
    result = load_texts([("s.json", json.dumps(doc))])
    assert len(result.problems) == 1
    problem = result.problems[0]
    assert problem.field == field
    assert len(str(problem)) < 400


def test_duplicates_are_counted_once_and_named_twice() -> None:
    text = json.dumps({"kind": "List", "items": [node("n1"), node("n2"), node("n1")]})
    result = load_texts([("a.json", text), ("b.json", json.dumps(node("n2")))])
    assert [n.name for n in result.state.nodes] == ["n1", "n2"]
    messages = sorted(str(p) for p in result.problems)
    assert messages == [
        "a.json: Node n1: seen twice, in a.json (object 1) and in a.json (object 3): counted once",
        "b.json: Node n2: seen twice, in a.json (object 2) and in b.json (object 1): counted once",
    ]


def test_same_name_in_other_namespaces_or_kinds_is_no_duplicate() -> None:
    pods = [{"kind": "Pod", "metadata": {"name": "x", "namespace": ns}} for ns in ("a", "b")] + [
        node("x"),
        {"kind": "Namespace", "metadata": {"name": "x"}},
    ]
    result = load_texts([("s.json", json.dumps(pods))])
    assert not result.problems
    assert len(result.state.pods) == 2


def test_yaml_infinity_is_not_a_quantity() -> None:
    text = "kind: Node\nmetadata: {name: n}\nstatus: {allocatable: {memory: .inf}}\n"
    result = load_texts([("s.yaml", text)])
    assert [p.field for p in result.problems] == ["status.allocatable.memory"]


# The builder against PyYAML's own safe loader: the same values for the same text.
SAME_AS_SAFE_LOAD = [
    "a: &x {k: v}\nb: *x\nc: [*x, *x]\n",
    "base: &b {a: 1, b: 2}\nm: {<<: *b, b: 3}\n",
    "x: &x {a: 1}\ny: &y {a: 2, b: 2}\nm: {<<: [*x, *y], c: 3}\n",
    "a: 1\na: 2\n",
    "s: !!str 123\nm: !!map {a: b}\nq: !!seq [1]\nf: !!float 1\nn: ~\nb: yes\no: 0o17\nh: 0x1f\n",
    "t: 12:30\nz: 1_000\ne: 1.5e3\ninf: -.inf\n",
    "- &s scalar\n- *s\n",
    "--- a\n--- [b]\n---\n...\n",
    "k: |\n  line\n  two\nj: >\n  folded\n  text\n",
    "? complex key\n: value\n",
]


@pytest.mark.parametrize("text", SAME_AS_SAFE_LOAD)
def test_builder_reads_what_safe_load_reads(text: str) -> None:
    from respread.inputs.documents import _yaml_documents

    assert _yaml_documents(text, Limits()) == list(yaml.safe_load_all(text))


json_like = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=25,
)


@given(json_like, st.booleans())
def test_builder_round_trips_what_safe_dump_writes(value: object, flow: bool) -> None:
    from respread.inputs.documents import _yaml_documents

    text = yaml.safe_dump(value, default_flow_style=flow, allow_unicode=True)
    assert _yaml_documents(text, Limits(max_depth=1000)) == [yaml.safe_load(text)]


@pytest.mark.parametrize(
    "text", ["? [a]\n: v\n", "? {a: b}\n: v\n", "a: {<<: 1}\n", "a: !!set {x: null}\n"]
)
def test_builder_refuses_what_json_cannot_hold(text: str) -> None:
    with pytest.raises((InputError, yaml.YAMLError)):
        docs(text)


def test_problems_stay_on_one_line() -> None:
    doc = {"kind": "Pod", "metadata": {"name": "a\nb", "namespace": "x\ry", "labels": {"k\n": [1]}}}
    (problem,) = load_texts([("s.json", json.dumps(doc))]).problems
    assert "\n" not in str(problem)
    assert "\r" not in str(problem)
    assert "a\\nb" in str(problem)


def test_deep_json_is_refused_even_where_the_caller_raised_the_recursion_limit() -> None:
    """Found by the fuzz suite: under hypothesis (which raises the limit) JSON nested 200,000
    deep overflowed the C stack in json.loads (a segfault); the depth is bounded by respread."""
    import sys

    from respread.inputs.documents import InputError, documents_from_text

    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:
        with pytest.raises(InputError, match="nested deeper"):
            list(documents_from_text("[" * 200_000 + "]" * 200_000, "deep.json"))
        assert sys.getrecursionlimit() == 1_000_000  # given back as it was
    finally:
        sys.setrecursionlimit(previous)
