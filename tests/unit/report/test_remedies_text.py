"""The remedies line of `respread plan`'s text: each remedy's state, the chosen one first."""

from __future__ import annotations

import pytest

from respread.remedies.choose import Remedy, RemedyVerdict
from respread.report.text import remedies_text
from tests.support.reports import violation


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
    v = violation(
        remedies=(RemedyVerdict(Remedy.SURGE, enabled, applies, ""),),
        remedy=Remedy.SURGE if chosen else None,
    )
    assert remedies_text(v) == text
