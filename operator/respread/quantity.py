"""Kubernetes resource quantities ("100m", "1Gi", "1.5", "2e3") as exact integers."""

from __future__ import annotations

import re
from decimal import Decimal
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


# <quantity> ::= <signedNumber><suffix>; the exponent form (e3, E-2) is itself a suffix.
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE])?"
)


def parse_quantity(value: object) -> Decimal:
    """The exact value of a quantity; raises QuantityError for anything malformed."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"not a quantity: {value!r}")
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise QuantityError(f"not a quantity: {value!r}")
    number = Decimal(match.group("number"))
    suffix = match.group("suffix") or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return number * (Decimal(10) ** int(suffix[1:]))
    return number * _DECIMAL[suffix]


def milli(value: object) -> int:
    """A quantity in thousandths, rounded up (CPU is accounted in millicores)."""
    return ceil(parse_quantity(value) * 1000)


def units(value: object) -> int:
    """A quantity in whole units, rounded up (memory and storage in bytes, pods in pods)."""
    return ceil(parse_quantity(value))
