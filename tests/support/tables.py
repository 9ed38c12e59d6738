"""Table-driven tests: rows whose first element is the case's id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest


def cases(names: str | Sequence[str], rows: Sequence[Sequence[Any]]) -> pytest.MarkDecorator:
    """``pytest.mark.parametrize`` over ``rows``, each ``(id, *values)``: the test takes the
    values as ``names`` (one name: the row's one value) and is named by the id."""
    single = isinstance(names, str) and "," not in names
    values = [row[1] if single else row[1:] for row in rows]
    if single:
        assert all(len(row) == 2 for row in rows), f"one name, {names}: rows of (id, value)"
    return pytest.mark.parametrize(names, values, ids=[row[0] for row in rows])
