"""The shared ObjectParser (the loader's, and the operator's watch cache's) raises FieldError,
and nothing else, for every malformed object: the parsers themselves are called here, without
the catch-all that ObjectParser.parse keeps as a last resort, so an unforeseen shape fails."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from respread.inputs.objects import _PARSERS, FieldError, ObjectParser, _Interner
from tests.fuzz.test_mutations import EXAMPLE_DOCS, hostile_values, mutated

OBJECTS = [doc for docs in EXAMPLE_DOCS for doc in docs if doc.get("kind") in _PARSERS]


def parse_unguarded(doc: Any) -> None:
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
        return
    parser = _PARSERS.get(doc["kind"])
    if parser is None:
        return
    with contextlib.suppress(FieldError):
        parser(doc, _Interner())


@given(mutated(OBJECTS))
def test_mutated_objects_raise_only_field_errors(docs: list[Any]) -> None:
    for doc in docs:
        parse_unguarded(doc)


@given(st.sampled_from(sorted(_PARSERS)), hostile_values)
def test_any_value_as_a_whole_section(kind: str, value: Any) -> None:
    for section in ("metadata", "spec", "status"):
        parse_unguarded({"kind": kind, "metadata": {"name": "x"}, section: value})


def test_the_guard_turns_the_unforeseen_into_a_field_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(doc: Any, intern: Any) -> Any:
        raise TypeError("unforeseen")

    monkeypatch.setitem(_PARSERS, "Node", broken)
    with pytest.raises(FieldError, match="TypeError"):
        ObjectParser().parse({"kind": "Node", "metadata": {"name": "n"}})


def outcome(doc: Any, intern: _Interner) -> Any:
    """The record a parser makes of ``doc``, or the FieldError's (path, message)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
        return None
    parser = _PARSERS.get(doc["kind"])
    if parser is None:
        return None
    try:
        return parser(doc, intern)
    except FieldError as err:
        return ("FieldError", err.path, err.message)


@given(mutated(OBJECTS))
def test_a_snapshot_loads_the_same_records_with_its_parts_remembered(docs: list[Any]) -> None:
    """The loader remembers specs, labels, owners and times by what they hold (issue 23):
    every object, read after all the others (their parts remembered), reads as it does alone."""
    remembering = _Interner(memo=True)
    for doc in [*docs, *reversed(docs)]:
        assert outcome(doc, remembering) == outcome(doc, _Interner())


def test_remembered_labels_tell_a_number_from_a_boolean_and_a_string() -> None:
    remembering = _Interner(memo=True)
    values = [
        outcome(
            {"kind": "Node", "metadata": {"name": "n", "labels": {"a": v}}}, remembering
        ).labels["a"]
        for v in (1, True, "1", 1.0)
    ]
    assert values == ["1", "true", "1", "1.0"]


def test_pods_of_one_template_on_different_nodes_share_one_spec() -> None:
    remembering = _Interner(memo=True)

    def pod(node: str, cpu: str) -> Any:
        spec = {"nodeName": node, "containers": [{"resources": {"requests": {"cpu": cpu}}}]}
        return outcome({"kind": "Pod", "metadata": {"name": node}, "spec": spec}, remembering)

    a, b, c = pod("n1", "1"), pod("n2", "1"), pod("n3", "2")
    assert a.spec is b.spec
    assert c.spec.requests.cpu == 2000 and a.spec.requests.cpu == 1000
