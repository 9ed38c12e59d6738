"""The fewest moves that reach a goal, found exhaustively, for problems small enough for it.

Iterative deepening over sequences of moves, each item moved at most once: every sequence of
length 1, then 2, ... up to a limit, so the first sequence found is a shortest one. States
already explored with at least as many moves left are not explored again (two orders of the
same moves often land the same way), and a lower bound on the moves still needed prunes the
rest. A budget of applied moves bounds the work: past it the search gives up, and says so.
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
    applied: int  # the moves applied while searching


class _BudgetSpentError(Exception):
    pass


def fewest_moves(space: Space, limit: int, budget: int) -> Found:
    """A shortest sequence of at most ``limit`` moves that reaches the goal."""
    applied = 0
    seen: dict[Hashable, int] = {}  # state -> the most moves left it was explored with
    path: list[int] = []

    def explore(left: int) -> bool:
        nonlocal applied
        if space.done():
            return True
        bound = space.lower_bound()
        if bound is None or bound > left:
            return False
        key = space.key()
        if seen.get(key, -1) >= left:
            return False
        seen[key] = left
        for item in space.items():
            if applied >= budget:
                raise _BudgetSpentError
            if not space.apply(item):
                continue
            applied += 1
            path.append(item)
            if explore(left - 1):
                return True
            path.pop()
            space.undo()
        return False

    try:
        for depth in range(limit + 1):
            if explore(depth):
                moves = tuple(path)
                for _ in moves:
                    space.undo()
                return Found(moves, True, applied)
    except _BudgetSpentError:
        for _ in path:
            space.undo()
        return Found(None, False, applied)
    return Found(None, True, applied)
