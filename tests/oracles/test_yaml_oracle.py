"""Differential tests: respread reads YAML as kubectl reads it, against kubectl's own YAML code.

The oracle (tests/oracles/yaml/main.go) is sigs.k8s.io/yaml and k8s.io/apimachinery's document
reader at the versions Kubernetes v1.34 uses: ``YAMLToJSON`` (how ``kubectl apply -f`` and the
API server read YAML), ``JSONToYAML`` (what ``kubectl get -o yaml`` writes) and the reader of a
multi-document stream. The properties:

- what kubectl writes, respread reads back as kubectl itself reads it (every string intact):
  generated values, with any character a Go string may hold, and the YAML special words;
- a plain or tagged scalar, and a mapping key, mean to respread what they mean to kubectl, or
  both refuse them (respread leaving the object out);
- a stream of documents: every document kubectl reads before its first error, respread reads
  the same; where kubectl stops, respread leaves that document out and goes on.

    .venv/bin/python -m pytest -m oracle tests/oracles/test_yaml_oracle.py
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from respread.core.limits import Limits
from respread.inputs import scalars
from respread.inputs.documents import LeftOut, documents_from_text

from ..unit.inputs.test_input_limits import KUBECTL_READS
from .test_scheduler_oracle import _uncaptured
from .yaml.build import OracleBuildError, ensure_built

pytestmark = pytest.mark.oracle


class YamlOracle:
    def __init__(self, binary: Path) -> None:
        self._proc = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )

    def ask(self, op: str, text: str) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps({"op": op, "text": text}) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        assert line, f"the YAML oracle died (exit {self._proc.poll()})"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=10)


@pytest.fixture(scope="module")
def oracle(request: pytest.FixtureRequest) -> Iterator[YamlOracle]:
    with _uncaptured(request):
        try:
            binary = ensure_built()
        except OracleBuildError as err:
            pytest.fail(f"cannot build the YAML oracle: {err}", pytrace=False)
    proc = YamlOracle(binary)
    yield proc
    proc.close()


def respread_reads(text: str) -> list[Any]:
    """The values respread reads from a text: plain values, or "LeftOut" where it leaves one."""
    return [
        "LeftOut" if isinstance(d, LeftOut) else d
        for _, d in documents_from_text(text, "t", Limits(max_depth=1000))
    ]


def unwrapped(value: Any) -> Iterator[Any]:
    """The objects in a value, as respread counts them: a list's items (nested too)."""
    if isinstance(value, list):
        for item in value:
            yield from unwrapped(item)
    elif value is not None:
        yield value


def kubectl_reads(oracle: YamlOracle, text: str) -> Any:
    """One document as kubectl reads it: its JSON value, or "error"."""
    answer = oracle.ask("yaml2json", text)
    return json.loads(answer["json"]) if "json" in answer else "error"


SPECIALS = [
    *(plain for plain, _ in KUBECTL_READS),
    *[
        "=",
        "~",
        "<<",
        "0x_",
        "0b_",
        "-0b_",
        "1:20",
        "yes",
        "no",
        "on",
        "off",
        "y",
        "n",
        "Y",
        "N",
        ".inf",
        "-.Inf",
        ".nan",
        "0o17",
        "017",
        "0b101",
        "+1",
    ],
    *[
        "1_000",
        "2001-12-14",
        "2001-12-14T21:59:43.10-05:00",
        "null",
        "Null",
        "NULL",
        "true",
        "True",
        "FALSE",
    ],
    "",
    " ",
    "- a",
    "a: b",
    "#",
    "@x",
    "`x",
    "!x",
    "&a",
    "*a",
    "%x",
    "|",
    ">",
    "'",
    '"',
    "? x",
    "\t",
    "\n",
    "a\nb",
    " lead",
    "trail ",
    "a  b",
    "\\",
    "\x00",
    "\x07",
    "\x1b[31m",
    "\x7f",
    "\x85",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\ufeffx",
    "é",
    "ſun",
    "\U0001f600",
    "---",
    "...",
]
json_strings = st.one_of(
    st.sampled_from(SPECIALS),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
    st.text(st.sampled_from("0123456789_.:+-eExXbBoO yYnN~\n\t#'\"&*!|>%@`\\"), max_size=10),
)
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        json_strings,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(json_strings, inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_respread_reads_what_kubectl_writes_as_kubectl_reads_it(
    oracle: YamlOracle, value: Any
) -> None:
    doc = {"v": value}
    written = oracle.ask("json2yaml", go_json(doc))
    # kubectl cannot write some strings as YAML at all (`kubectl get -o yaml` fails where -o
    # json does not): its writer reads the JSON with go-yaml first, which refuses DEL and the C1
    # controls, and takes NEL, LS and PS for line breaks inside a quoted string.
    assume("error" not in written)
    text = written["yaml"]
    expected = kubectl_reads(oracle, text)
    if expected == "error":
        # kubectl cannot read what it wrote (a key `<<` is written plain, and read as a merge):
        # respread leaves the object out too.
        assert respread_reads(text) == ["LeftOut"], text
        return
    assert respread_reads(text) == [expected], text
    # kubectl's writer keeps every string intact (what it reads back is what was written),
    # except where kubectl garbles it itself (kubectl_garbles).
    if not kubectl_garbles(doc):
        assert expected == json.loads(json.dumps(doc)) or _floats_only_differ(expected, doc)


KUBECTL_FOLDS = "\x85\u2028\u2029"


def kubectl_garbles(value: Any) -> bool:
    """Where `kubectl get -o yaml` does not write what the object holds: it reads its JSON
    input with go-yaml first, which folds YAML 1.1's other line breaks (NEL, LS, PS) inside a
    quoted string into a space; and it writes a key ``<<`` plain, which reads back as a merge."""
    if isinstance(value, str):
        return any(c in value for c in KUBECTL_FOLDS)
    if isinstance(value, list):
        return any(kubectl_garbles(v) for v in value)
    if isinstance(value, dict):
        return any(k == "<<" or kubectl_garbles(k) or kubectl_garbles(v) for k, v in value.items())
    return False


def go_json(value: Any) -> str:
    """JSON as Go's encoder writes it (what kubectl hands its YAML writer): UTF-8, control
    characters below U+0020 and U+2028/U+2029 escaped, everything else as it is."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _floats_only_differ(read: Any, written: Any) -> bool:
    """Go writes an integral float as an integer: the only change a round trip may make."""
    return json.dumps(read, sort_keys=True) == json.dumps(
        json.loads(json.dumps(written), parse_float=_go_number), sort_keys=True
    )


def _go_number(text: str) -> Any:
    return scalars.json_number(float(text), text)


TAGS = [
    "",
    "!!str ",
    "!!int ",
    "!!float ",
    "!!bool ",
    "!!null ",
    "!!timestamp ",
    "!!binary ",
    "! ",
    "!foo ",
    "!!merge ",
    "!!map ",
    "!!python/object ",
]
scalar_texts = st.one_of(
    st.sampled_from(SPECIALS),
    st.text(st.sampled_from("0123456789_.:+-eExXbBoOaAfFpP yYnNtTuUlL~"), min_size=1, max_size=12),
)


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(TAGS), scalar_texts, st.sampled_from(["plain", "'", '"']))
def test_scalars_mean_what_they_mean_to_kubectl(
    oracle: YamlOracle, tag: str, text: str, quote: str
) -> None:
    assume(not any(c in text for c in "\n\r\x85\u2028\u2029") or quote == '"')
    single = "'" + text.replace("'", "''") + "'"
    scalar = json.dumps(text) if quote == '"' else single if quote == "'" else text
    for yaml_text in (f"v: {tag}{scalar}\n", f"{tag}{scalar}: v\n"):
        expected = kubectl_reads(oracle, yaml_text)
        got = respread_reads(yaml_text)
        if expected == "error":
            # kubectl refuses the document: respread leaves it out, or reads no object in it.
            assert "LeftOut" in got or not any(isinstance(g, dict) for g in got), (yaml_text, got)
        else:
            # The same objects (a root list's items are objects to respread).
            objects = [g for g in got if isinstance(g, dict)]
            theirs = [e for e in unwrapped(expected) if isinstance(e, dict)]
            assert objects == theirs, (yaml_text, expected)


@pytest.mark.parametrize(("plain", "value"), KUBECTL_READS, ids=[p for p, _ in KUBECTL_READS])
def test_the_unit_tests_table_is_kubectls(oracle: YamlOracle, plain: str, value: Any) -> None:
    assert kubectl_reads(oracle, f"v: {plain}\n") == {"v": value}


documents = st.lists(
    st.one_of(
        st.builds(lambda v: json.dumps({"kind": "Node", "v": v}), json_strings),
        st.builds(lambda v: f"kind: Node\nv: {v}\n", scalar_texts),
        st.sampled_from(["kind: Node\nv: [a\n", "v: !!bool maybe\n", "\ufeffkind: Node\n", ""]),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(documents, st.sampled_from(["---\n", "---\n\ufeff", "--- \n"]))
def test_streams_read_as_kubectl_reads_them_up_to_its_first_error(
    oracle: YamlOracle, docs: list[str], separator: str
) -> None:
    # kubectl drops a byte order mark after `---` in a YAML stream, not in one that starts as
    # JSON (there it reads a key "\ufeffkind"); respread drops it in both.
    text = "".join((separator if i else "") + d.rstrip("\n") + "\n" for i, d in enumerate(docs))
    assume("\ufeff" not in text or not text.startswith("{"))
    answer = oracle.ask("documents", text)
    ours = [d for d in respread_reads(text) if d is not None]
    theirs = [json.loads(d) for d in answer.get("documents", [])]
    assert ours[: len(theirs)] == theirs, text
    if "error" not in answer:
        assert ours == theirs, text
    # Where kubectl stops, respread goes on: the document at fault left out (or read, where it
    # is YAML after JSON, which kubectl's JSON mode refuses), the ones after it read.
