"""The remedies line of `respread plan`'s text: each remedy's state, the chosen one first."""

from __future__ import annotations

from typing import Any

import pytest

from respread.report.build import _remedies_text


def remedy(name: str, enabled: bool, applies: bool) -> dict[str, Any]:
    return {"name": name, "enabled": enabled, "applies": applies, "reason": ""}


@pytest.mark.parametrize(
    ("enabled", "applies", "chosen", "text"),
    [
        (True, True, True, "Surge (chosen)"),
        (True, True, False, "Surge (applies); none chosen"),
        (True, False, False, "Surge (does not apply); none chosen"),
        (False, True, False, "Surge (applies, not enabled); none chosen"),
        # not enabled, so not evaluated: "does not apply" would claim a judgement never made
        (False, False, False, "Surge (not enabled); none chosen"),
    ],
)
def test_each_remedy_state_reads_as_what_was_judged(
    enabled: bool, applies: bool, chosen: bool, text: str
) -> None:
    violation = {
        "remedies": [remedy("Surge", enabled, applies)],
        "remedy": "Surge" if chosen else None,
    }
    assert _remedies_text(violation) == text
