"""Hypothesis mutations of the example snapshots and of policies, each run through the real
command (`respread.cli.main`) in a forked process under a 1 GiB memory limit and a timeout.

A mutation picks places in the documents and puts a hostile value there (huge or non-finite
numbers, odd quantities and dates, long strings, nested containers, non-string keys, nulls),
deletes a key, duplicates an object, or damages the text itself (cut, bytes inserted, an
alias bomb or deep nesting spliced in). The case passes if the command ends as runner.check
requires. The ci profile (tests/conftest.py) keeps the whole suite within about two minutes.
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.runner import Outcome, check, run_forked
from tests.support.constants import NOW

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*/cluster.yaml"))
EXAMPLE_DOCS = [list(yaml.safe_load_all(p.read_text())) for p in EXAMPLES]
POLICY = yaml.safe_load((ROOT / "deploy" / "example-policy.yaml").read_text())
FULL_POLICY = {
    "apiVersion": "respread.io/v1alpha1",
    "kind": "RebalancePolicy",
    "metadata": {"name": "full"},
    "spec": {
        "mode": "DryRun",
        "schedule": {"cron": "*/10 * * * 1-5"},
        "selector": {
            "namespaces": {"include": ["shop"], "exclude": ["kube-system"]},
            "namespaceSelector": {"matchLabels": {"team": "a"}},
            "podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
        },
        "constraints": {
            "whenUnsatisfiable": ["DoNotSchedule", "ScheduleAnyway"],
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ],
            "emptySelectorMatchesAll": False,
        },
        "eviction": {
            "maxPerRun": 5,
            "maxPerNode": None,
            "maxPerWorkload": 1,
            "requireFit": True,
            "minPodAge": "1m",
            "cooldown": "10m",
            "protections": {"localStorage": True},
            "gracePeriodSeconds": 30,
        },
        "report": {"maxItems": 20},
    },
}
GOOD = str(EXAMPLES[0])

hostile_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**31, 2**63, -(2**63) - 1, 10**30, 0, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([5.0, 0.5, 1e300]),
    st.text(max_size=20),
    st.sampled_from(
        [
            "1e1000000",
            "1e999",
            ".inf",
            "nan",
            "-1",
            "1Ei",
            "9" * 40,
            "1e-1000000",
            "0.1m",
            "2026-02-30T00:00:00Z",
            "2026-11-22T10:00:00",
            "0000-00-00T00:00:00Z",
            "² * * * *",
            "*/² * * * *",
            "3000000h",
            "5.5m",
            "-5m",
            "",
            "x" * 5000,
            "a/b/c",
            "DoNotSchedule",
            "Honor",
            "In",
            "NoSchedule",
            "Running",
            # what kubectl writes unquoted, and names and durations the API server reads
            # otherwise than a first guess (issue 22)
            "=",
            "0x_",
            "-0b_",
            "1:20",
            "0 0 * * \u017fun",
            "0" * 19 + "5 * * * *",
            "9999.9999999999999ms",
            "2562047h47m16.854775808s",
            "\x1b[31m\x07",
            "\ufeff",
        ]
    ),
)
hostile_values = st.recursive(
    hostile_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers(0, 9)), inner, max_size=3),
    ),
    max_leaves=6,
)


def _places(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in a document."""
    out = [path]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.extend(_places(value, (*path, key)))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out.extend(_places(value, (*path, i)))
    return out


@st.composite
def mutated(draw: st.DrawFn, docs: list[Any]) -> list[Any]:
    docs = copy.deepcopy(docs)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(docs) - 1))
        places = _places(docs[i])
        path = draw(st.sampled_from(places))
        action = draw(st.sampled_from(["set", "set", "set", "delete", "duplicate"]))
        if action == "duplicate":
            docs.append(copy.deepcopy(docs[i]))
            continue
        if not path:
            docs[i] = draw(hostile_values)
            continue
        parent = docs[i]
        for step in path[:-1]:
            parent = parent[step]
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(hostile_values)
    return docs


def _dump(docs: list[Any], form: str) -> bytes:
    if form == "json":
        return json.dumps({"kind": "List", "items": docs}, default=str).encode()
    return yaml.safe_dump_all(docs, allow_unicode=True).encode("utf-8", "surrogatepass")


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """The text itself damaged, sometimes."""
    how = draw(st.sampled_from(["none", "none", "cut", "bytes", "splice"]))
    at = draw(st.integers(0, len(data)))
    if how == "cut":
        return data[:at]
    if how == "bytes":
        return data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    if how == "splice":
        piece = draw(
            st.sampled_from(
                [
                    b"[" * 2000,
                    b"- " * 2000 + b"x\n",
                    b"\n&a [*a, *a]\n",
                    b"\nx: &x [y, y, y, y]\nz: [*x, *x, *x, *x, *x, *x, *x]\n",
                    b"\n---\n!!binary aGk=\n",
                    b"\nv: =\nw: 0x_\nx: 1:20\ny: 0b_\n",
                    b'\nv: !!bool maybe\nw: !!int ""\nx: !!float ""\n',
                    b"\n---\n\xef\xbb\xbfkind: Node\nmetadata: {name: bom}\n---\xef\xbb\xbf\n",
                    b"\n- &a1 {}\n- &a2 {}\n- *a1\n",
                    b"\nv: .inf\nw: [.nan]\n? [k]\n: v\n",
                ]
            )
        )
        return data[:at] + piece + data[at:]
    return data


def _run(snapshot: bytes, name: str, extra: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, name)
        path.write_bytes(snapshot)
        check(
            run_forked(["plan", "--snapshot", str(path), *extra, "--now", NOW, "-o", "json"]),
            (str(path), GOOD),
        )


@given(st.data())
def test_mutated_examples(data: st.DataObject) -> None:
    docs = data.draw(st.sampled_from(EXAMPLE_DOCS))
    form = data.draw(st.sampled_from(["yaml", "json"]))
    text = data.draw(damaged(_dump(data.draw(mutated(docs)), form)))
    _run(text, f"cluster.{form}", [])


@given(st.data())
def test_mutated_policies(data: st.DataObject) -> None:
    policy = data.draw(st.sampled_from([POLICY, FULL_POLICY]))
    form = data.draw(st.sampled_from(["yaml", "json"]))
    raw = data.draw(damaged(_dump(data.draw(mutated([policy])), form)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, f"policy.{form}")
        path.write_bytes(raw)
        check(
            run_forked(
                ["plan", "--snapshot", GOOD, "--policy", str(path), "--now", NOW, "-o", "json"]
            ),
            (GOOD,),
        )


def test_the_runner_sees_success_failure_and_crashes() -> None:
    """The harness itself: a good run passes check; a traceback and a signal do not."""
    good = run_forked(["plan", "--snapshot", GOOD, "--now", NOW, "-o", "json"])
    assert good.returncode == 0
    check(good)
    bad = run_forked(["plan", "--snapshot", "/nonexistent", "-o", "json"])
    assert bad.returncode == 2
    check(bad)
    crashed = Outcome(("x",), 1, "", "Traceback (most recent call last):\n  boom\n")
    killed = Outcome(("x",), -11, "", "")
    for outcome in (crashed, killed):
        try:
            check(outcome)
        except AssertionError:
            continue
        raise AssertionError(f"check accepted {outcome}")
