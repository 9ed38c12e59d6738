"""Every example and conformance scenario prints, byte for byte, what outputs/ recorded.

A refactor leaves outputs/ as it is. A change meant to alter what respread prints re-records
(`python -m tests.golden.record`) and the diff of outputs/ shows, case by case, what changed.
"""

from __future__ import annotations

import pytest

from tests.golden.cases import OUTPUTS, Case, cases, run

CASES = cases()


def test_every_case_has_an_output_and_every_output_a_case() -> None:
    recorded = {p.name for p in OUTPUTS.iterdir()}
    assert recorded == {f"{c.name}{c.suffix}" for c in CASES}
    assert len(CASES) > 300


@pytest.mark.parametrize("case", CASES, ids=[f"{c.name}{c.suffix}" for c in CASES])
def test_the_output_is_the_recorded_one(case: Case) -> None:
    assert run(case).decode() == (OUTPUTS / f"{case.name}{case.suffix}").read_text()
