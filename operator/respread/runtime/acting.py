"""Whether this replica may act now (leader election; always, standalone), checked before
every write a scan makes."""

from __future__ import annotations

from collections.abc import Callable

Acting = Callable[[], bool]


def always() -> bool:
    return True


class NotLeadingError(Exception):
    """Leadership was lost during a scan: it writes nothing more."""


def check(acting: Acting) -> None:
    if not acting():
        raise NotLeadingError("this replica no longer leads")
