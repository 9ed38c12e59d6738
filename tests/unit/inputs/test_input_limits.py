"""Reading untrusted text within bounds (respread.inputs.documents, respread.core.limits,
respread.core.timestamps).

Each class of hostile input ends in a LeftOut (a Problem naming the object and field, or the
document and its line) for that object or document alone, or in an InputError for the text as a
whole (its size), never in another exception, a hang or unbounded memory.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from respread.core.limits import Limits, shown
from respread.core.timestamps import parse_rfc3339
from respread.inputs.documents import InputError, LeftOut, decode, documents_from_text
from respread.inputs.objects import load_texts
from tests.support import kubectl_yaml


def docs(text: str, limits: Limits | None = None) -> list[object]:
    return [d for _, d in documents_from_text(text, "t", limits or Limits())]


def left_out(text: str, limits: Limits | None = None) -> str:
    """The one LeftOut's message (the text holds one thing that cannot be read)."""
    found = [d for d in docs(text, limits) if isinstance(d, LeftOut)]
    assert len(found) == 1, found
    return found[0].message


def alias_bomb(levels: int, fan_out: int) -> str:
    lines = ["l0: &l0 [" + ", ".join(["x"] * fan_out) + "]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan_out) + "]")
    return "\n".join(lines) + f"\nkind: List\nitems: *l{levels - 1}\n"


@pytest.mark.parametrize(
    ("levels", "fan_out"), [(9, 9), (30, 2), (3, 60)], ids=["classic", "deep-binary", "wide"]
)
def test_alias_bombs_are_refused_before_expansion(levels: int, fan_out: int) -> None:
    assert "alias" in left_out(alias_bomb(levels, fan_out))


def test_a_few_aliases_are_fine() -> None:
    text = "base: &b {app: web}\nkind: Node\nmetadata: {name: n1, labels: *b}\n"
    assert docs(text)[0] == {
        "base": {"app": "web"},
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"app": "web"}},
    }


def test_merge_keys_still_work() -> None:
    text = "a: &a {x: 1}\nb: {<<: *a, z: 2}\n"
    assert docs(text)[0] == {"a": {"x": 1}, "b": {"x": 1, "z": 2}}


def test_alias_count_is_bounded() -> None:
    text = "a: &a x\nb: [" + ", ".join(["*a"] * 101) + "]\n"
    assert "more than 100 YAML aliases" in left_out(text)


def test_anchor_count_is_bounded() -> None:
    text = "".join(f"- &a{i} {{}}\n" for i in range(11))
    assert "more than 10 YAML anchors" in left_out(text, Limits(max_anchors=10))


@pytest.mark.parametrize("text", ["&a [*a]\n", "&a {k: *a}\n", "&a [[[*a]]]\n"])
def test_self_referring_aliases_are_refused(text: str) -> None:
    assert "refers to itself" in left_out(text)


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
    assert "nested deeper than 100" in left_out(text)


def test_nesting_at_the_limit_is_fine() -> None:
    assert docs('{"a":' * 100 + "1" + "}" * 100)
    assert docs("{a: " * 100 + "1" + "}" * 100)


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ('{"a": ' + "9" * 5000 + "}", "5000 digits"),
        ('{"a": NaN}', "NaN"),
        ('{"a": -Infinity}', "Infinity"),
        ("a: .inf\n", "not a number JSON can hold"),
        ("a: [.NaN]\n", "not a number JSON can hold"),
    ],
)
def test_numbers_json_cannot_hold_leave_their_object_out(text: str, what: str) -> None:
    assert what in left_out(text)


def test_yaml_digits_beyond_a_float_are_a_string() -> None:
    """go-yaml v2 reads a number it cannot hold as its text (never converting 5,000 digits)."""
    assert docs("a: " + "9" * 5000 + "\n") == [{"a": "9" * 5000}]
    assert docs("a: 99999999999999999999\n") == [{"a": 10**20}]  # a float, written back as such


def test_timestamps_stay_strings() -> None:
    assert docs("t: 2026-02-30T00:00:00Z\n") == [{"t": "2026-02-30T00:00:00Z"}]


@pytest.mark.parametrize(
    ("tagged", "value"),
    [
        ("!!binary aGk=", "hi"),
        ("!!set {a: null}", {"a": None}),
        ("!!omap [a: 1]", [{"a": 1}]),
        ("!foo x", "x"),
        ("!!python/object/apply:os.system [echo hi]", ["echo hi"]),
        ("!!str 0x1F", "0x1F"),
        ("!!float 1", 1),
        ("!!int '0x1F'", 31),
    ],
)
def test_tags_are_read_as_kubectl_reads_them(tagged: str, value: object) -> None:
    assert docs(f"a: {tagged}\n") == [{"a": value}]


@pytest.mark.parametrize(
    "tagged",
    [
        "!!bool maybe",
        '!!bool ""',
        '!!int ""',
        '!!int "-"',
        '!!float ""',
        "!!int 1.5",
        "!!null x",
        "!!timestamp x",
        "!!binary '!!'",
        "!!float .inf",
    ],
)
def test_a_tag_its_text_does_not_fit_leaves_the_object_out(tagged: str) -> None:
    text = f"kind: Pod\nmetadata: {{name: p, labels: {{a: {tagged}}}}}\n---\nkind: Node\n"
    found = docs(text)
    assert found[1] == {"kind": "Node"}
    assert isinstance(found[0], LeftOut)
    assert found[0].field == "metadata.labels.a"
    assert "line 2" in found[0].message


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


# Plain scalars as kubectl (go-yaml v2, then JSON) reads them; each row is checked against the
# Go code itself in tests/oracles/test_yaml_oracle.py.
KUBECTL_READS = [
    ("=", "="),
    ("~", None),
    ("0x_", "0x_"),
    ("0b_", "0b_"),
    ("-0b_", "-0b_"),
    ("1:20", "1:20"),
    ("190:20:30.15", "190:20:30.15"),
    ("yes", True),
    ("No", False),
    ("on", True),
    ("OFF", False),
    ("y", True),
    ("n", False),
    ("yEs", "yEs"),
    ("0o17", 15),
    ("017", 15),
    ("0755", 493),
    ("08", 8),
    ("0b101", 5),
    ("0b-101", -5),
    ("+1", 1),
    ("1_000", 1000),
    ("0x_1F", 31),
    ("1e3", 1000),
    ("1.5", 1.5),
    (".5_0", 0.5),
    ("1.", 1),
    ("2001-12-14", "2001-12-14"),
    ("null", None),
    ("Null", None),
    ("NULL", None),
    ("nULL", "nULL"),
    ("True", True),
    ("0x1p3", "0x1p3"),
    ("1e400", "1e400"),
    ("18446744073709551615", 18446744073709551615),
    ("18446744073709551616", 18446744073709552000),
    ("1e21", 1e21),
    ("Inf", "Inf"),
    ("=value", "=value"),
]


@pytest.mark.parametrize(("plain", "value"), KUBECTL_READS, ids=[p for p, _ in KUBECTL_READS])
def test_plain_scalars_mean_what_they_mean_to_kubectl(plain: str, value: object) -> None:
    (doc,) = docs(f"v: {plain}\n")
    assert doc == {"v": value}
    assert type(doc["v"]) is type(value)  # type: ignore[index]


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("1", "1"),
        ("yes", "true"),
        ("n", "false"),
        ("1.5", "1.5"),
        ("1e20", "1e+20"),
        ("0x10", "16"),
        ("'<<x'", "<<x"),
        ("1e39", ".inf"),
    ],
)
def test_keys_become_strings_as_kubectl_writes_them(key: str, text: str) -> None:
    assert docs(f"{key}: v\n") == [{text: "v"}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 2\n<<: {a: 1, b: 1}\n", {"a": 1, "b": 1}),  # where `<<` stands: later keys win
        ("<<: {a: 1, b: 1}\na: 2\n", {"a": 2, "b": 1}),
        ("v: {<<: [{a: 1}, {a: 2, b: 2}]}\n", {"v": {"a": 1, "b": 2}}),  # the first wins
        ("v: [<<, 1]\n", {"v": ["<<", 1]}),
        ("v: {'<<': {a: 1}}\n", {"v": {"<<": {"a": 1}}}),
        ("m: &m {x: 1}\nv: {<<: *m}\n", {"m": {"x": 1}, "v": {"x": 1}}),
    ],
)
def test_merge_keys_as_go_yaml_applies_them(text: str, expected: object) -> None:
    assert docs(text) == [expected]


@pytest.mark.parametrize(
    "text", ["? [a]\n: v\n", "? {a: b}\n: v\n", "a: {<<: 1}\n", "~: v\n", "a: {<<: [1]}\n"]
)
def test_what_json_cannot_hold_leaves_the_object_out(text: str) -> None:
    assert left_out(text)


# PyYAML's emitter folds YAML 1.1's other line breaks (NEL, LS, PS) in some styles where
# kubectl's does not: tests/oracles/test_yaml_oracle.py checks those against the real writer.
texts = st.text(
    st.characters(blacklist_characters="\x85\u2028\u2029", blacklist_categories=("Cs",)),
    max_size=12,
)
json_like = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),  # beyond int64, go-yaml reads a float
        st.floats(allow_nan=False, allow_infinity=False),
        texts,
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=25,
)


@given(json_like, st.booleans())
def test_what_kubectl_writes_reads_back(value: object, flow: bool) -> None:
    doc = {"v": value}
    text = kubectl_yaml.dump(doc, flow=flow)
    assert docs(text, Limits(max_depth=1000)) == [as_json(doc)]


def as_json(value: object) -> object:
    """What JSON makes of a value: an integral float is an integer, written with the float's
    shortest digits, as Go's encoder writes it."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(Decimal(repr(value)))
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    return value


def test_one_unreadable_document_leaves_the_others() -> None:
    text = (
        "kind: Node\nmetadata: {name: a}\n"
        "---\nkind: Node\nmetadata: {name: [b\n"
        "---\n\ufeffkind: Node\nmetadata: {name: c}\n"
        "---\ufeff\nkind: Node\nmetadata: {name: d}\n"
    )
    found = docs(text)
    names = [d["metadata"]["name"] for d in found if isinstance(d, dict)]
    assert names == ["a", "c", "d"]
    (bad,) = [d for d in found if isinstance(d, LeftOut)]
    assert "the document at line 4" in bad.message


def test_a_list_cut_short_keeps_its_items_read_so_far() -> None:
    listed = {"apiVersion": "v1", "items": [node("a"), node("b")], "kind": "List"}
    as_json_text, as_yaml = json.dumps(listed), kubectl_yaml.dump(listed)
    for cut in (
        as_json_text[: as_json_text.index('"b"')],
        as_yaml[: as_yaml.index("name: b")] + "name: [b\n",
    ):
        result = load_texts([("cut", cut)])
        assert [n.name for n in result.state.nodes] == ["a"], result.problems
        assert len(result.problems) == 1


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

    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:
        assert "nested deeper" in left_out("[" * 200_000 + "]" * 200_000)
        assert sys.getrecursionlimit() == 1_000_000  # given back as it was
    finally:
        sys.setrecursionlimit(previous)


@pytest.mark.parametrize("wrapped", [False, True], ids=["array", "List items"])
def test_the_scanner_itself_bounds_the_depth_so_no_item_is_walked(
    wrapped: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Items of a large file are read under a recursion limit found so that the C scanner reads
    exactly as deep as allowed (issue 23: walking every pod was a tenth of a 150,000-pod load):
    the deepest allowed item is read without a walk; one level more is left out alone, and the
    items after it are read."""
    from respread.inputs import json_reader

    walked: list[object] = []
    real = json_reader.check_depth
    monkeypatch.setattr(
        json_reader, "check_depth", lambda doc, *a: (walked.append(doc), real(doc, *a))[1]
    )
    above = 2 if wrapped else 1
    room = Limits().max_depth - above  # levels an item may hold

    def item(levels: int) -> str:  # a mapping holding levels - 1 nested lists
        return '{"kind": "Pod", "x": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"

    items = f"[{item(room)}, {item(room + 1)}, {item(2)}]"
    text = f'{{"kind": "List", "items": {items}}}' if wrapped else items
    entries = [d for _, d in documents_from_text(text, "deep.json")]
    assert [type(e).__name__ for e in entries] == ["dict", "LeftOut", "dict"]
    assert "nested deeper" in entries[1].message
    pods = [d for d in walked if isinstance(d, dict) and d.get("kind") == "Pod"]
    assert len(pods) == 1  # only the item the scanner refused, read again to name it
