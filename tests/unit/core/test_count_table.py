"""CountTable's cached minimum and maximum against recomputation, over random single-pod moves."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from respread.core.kernel import CountTable, DomainSpace

DOMAINS = ("a", "b", "c", "d")
SPACE = DomainSpace({f"n-{d}": d for d in DOMAINS}, {d: (f"n-{d}",) for d in DOMAINS})


@given(
    st.lists(st.integers(0, 4), min_size=4, max_size=4),
    st.lists(st.tuples(st.sampled_from(DOMAINS), st.sampled_from(DOMAINS), st.booleans())),
)
def test_cached_extremes_follow_moves(start: list[int], moves: list[tuple[str, str, bool]]) -> None:
    table = CountTable(SPACE, {d: n for d, n in zip(DOMAINS, start, strict=True) if n})
    for source, target, ask in moves:
        if table.get(source) == 0:
            continue
        table.add(source, -1)
        if ask:  # asking between the halves of a move caches a state the next add must update
            assert table.max_count() == max(table.get(d) for d in DOMAINS)
        table.add(target, +1)
        values = [table.get(d) for d in DOMAINS]
        assert table.max_count() == max(values)
        assert table.raw_min() == min(values)
        assert table.skew(1) == max(values) - min(values)
        assert table.skew(5) == max(values)  # below minDomains the global minimum is 0
