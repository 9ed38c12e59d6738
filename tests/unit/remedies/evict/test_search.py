"""search.fewest_moves on a toy space: coins of given values, each used at most once, whose sum
must reach a target exactly; the answer is checked against every subset."""

from __future__ import annotations

from itertools import combinations

from hypothesis import given
from hypothesis import strategies as st

from respread.remedies.evict.search import fewest_moves


class Coins:
    def __init__(self, values: list[int], target: int) -> None:
        self.values, self.target = values, target
        self.used: list[int] = []
        self.undone = 0

    def items(self) -> list[int]:
        return [i for i in range(len(self.values)) if i not in self.used]

    def apply(self, item: int) -> bool:
        if sum(self.values[i] for i in self.used) + self.values[item] > self.target:
            return False  # cannot move now: nothing applied
        self.used.append(item)
        return True

    def undo(self) -> None:
        self.used.pop()
        self.undone += 1

    def done(self) -> bool:
        return sum(self.values[i] for i in self.used) == self.target

    def lower_bound(self) -> int | None:
        left = self.target - sum(self.values[i] for i in self.used)
        return 0 if left == 0 else 1

    def key(self) -> frozenset[int]:
        return frozenset(self.used)


def _fewest(values: list[int], target: int) -> int | None:
    for size in range(len(values) + 1):
        if any(sum(c) == target for c in combinations(values, size)):
            return size
    return None


@given(st.lists(st.integers(1, 9), max_size=8), st.integers(0, 30))
def test_the_shortest_sequence_is_found_and_the_state_restored(
    values: list[int], target: int
) -> None:
    space = Coins(values, target)
    found = fewest_moves(space, len(values), budget=100_000)
    assert found.complete
    expected = _fewest(values, target)
    if expected is None:
        assert found.moves is None
    else:
        assert found.moves is not None and len(found.moves) == expected
        assert sum(values[i] for i in found.moves) == target
    assert space.used == []  # every applied move undone


def test_the_budget_bounds_the_work_and_is_reported() -> None:
    space = Coins([1] * 12, 13)  # unreachable: every order is tried
    found = fewest_moves(space, 12, budget=50)
    assert found == type(found)(None, False, 50)
    assert space.used == []


def test_a_limit_below_the_answer_finds_nothing() -> None:
    found = fewest_moves(Coins([5, 5, 5], 15), 2, budget=1000)
    assert found.moves is None and found.complete


def test_moves_that_cannot_apply_count_against_the_budget() -> None:
    space = Coins([9] * 6, 8)  # no coin fits: every move is tried and refused
    found = fewest_moves(space, 6, budget=4)
    assert found == type(found)(None, False, 4)
    assert space.used == []
