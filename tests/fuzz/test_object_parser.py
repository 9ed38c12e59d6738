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
