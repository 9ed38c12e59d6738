"""Kubernetes resource quantities ("100m", "1Gi", "1.5", "2e3") as exact integers."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from math import ceil

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Decimal:
    """The exact value of a quantity; raises QuantityError for anything malformed."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if not isinstance(value, str) or not value.strip():
        raise QuantityError(f"not a quantity: {value!r}")
    text = value.strip()
    for suffix, factor in _BINARY.items():
        if text.endswith(suffix):
            return _number(text[: -len(suffix)], value) * factor
    if text[-1] in _DECIMAL and text[-1] != "":
        return _number(text[:-1], value) * _DECIMAL[text[-1]]
    return _number(text, value)


def _number(text: str, original: object) -> Decimal:
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise QuantityError(f"not a quantity: {original!r}") from None
    if not number.is_finite():
        raise QuantityError(f"not a quantity: {original!r}")
    return number


def milli(value: object) -> int:
    """A quantity in thousandths, rounded up (CPU is accounted in millicores)."""
    return ceil(parse_quantity(value) * 1000)


def units(value: object) -> int:
    """A quantity in whole units, rounded up (memory and storage in bytes, pods in pods)."""
    return ceil(parse_quantity(value))
