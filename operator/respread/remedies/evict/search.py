"""The fewest moves that reach a goal, found exhaustively, for problems small enough for it.

Iterative deepening over sequences of moves, each item moved at most once: every sequence of
length 1, then 2, ... up to a limit, so the first sequence found is a shortest one. States
already explored with at least as many moves left are not explored again (two orders of the
same moves often land the same way), and a lower bound on the moves still needed prunes the
rest. A budget of tried moves (every move tried, whether it applies or not: a move that finds
no room costs as much as one that lands) bounds the work: past it the search gives up, and says
so. The bound is a count, not a time, so that the same input always gives the same answer.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol


class Space(Protocol):
    """A mutable state that moves change and undo restores (last applied, first undone)."""

    def items(self) -> Sequence[int]:
        """The items that may still move, in the order to try them."""

    def apply(self, item: int) -> bool:
        """Move the item; False (and nothing applied) when it cannot move now."""

    def undo(self) -> None:
        """Take back the last applied move."""

    def done(self) -> bool:
        """Whether the goal holds."""

    def lower_bound(self) -> int | None:
        """At least this many more moves are needed; None when no moves can reach the goal."""

    def key(self) -> Hashable:
        """The state's identity, for not exploring it twice."""


@dataclass(frozen=True, slots=True)
class Found:
    moves: tuple[int, ...] | None  # a shortest sequence, or None when none within the limit
    complete: bool  # False: the budget ran out first, so a shorter or any answer may exist
    tried: int  # the moves tried while searching (applied or not)


class _BudgetSpentError(Exception):
    pass


def fewest_moves(space: Space, limit: int, budget: int) -> Found:
    """A shortest sequence of at most ``limit`` moves that reaches the goal."""
    search = _Deepening(space, budget)
    try:
        for depth in range(limit + 1):
            if search.explore(depth):
                moves = tuple(search.path)
                for _ in moves:
                    space.undo()
                return Found(moves, True, search.tried)
    except _BudgetSpentError:
        for _ in search.path:
            space.undo()
        return Found(None, False, search.tried)
    return Found(None, True, search.tried)


class _Deepening:
    """One iterative-deepening search: the moves tried so far, the path it stands on, and
    the states explored with the most moves left then."""

    def __init__(self, space: Space, budget: int) -> None:
        self.space = space
        self.budget = budget
        self.tried = 0
        self.seen: dict[Hashable, int] = {}
        self.path: list[int] = []

    def explore(self, left: int) -> bool:
        """Whether the goal is reached within ``left`` more moves (then ``path`` leads there
        and the space stands at its end)."""
        space = self.space
        if space.done():
            return True
        if self._pruned(left):
            return False
        for item in space.items():
            if self.tried >= self.budget:
                raise _BudgetSpentError
            self.tried += 1
            if not space.apply(item):
                continue
            self.path.append(item)
            if self.explore(left - 1):
                return True
            self.path.pop()
            space.undo()
        return False

    def _pruned(self, left: int) -> bool:
        """Whether the state needs more than ``left`` moves, or was explored with as many."""
        bound = self.space.lower_bound()
        if bound is None or bound > left:
            return True
        key = self.space.key()
        if self.seen.get(key, -1) >= left:
            return True
        self.seen[key] = left
        return False
