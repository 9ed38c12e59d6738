"""Kubernetes resource quantities ("100m", "1Gi", "1.5", "2e3") as exact integers.

Read as resource.Quantity reads them (the grammar of k8s.io/apimachinery/pkg/api/resource):
an optional sign, digits with an optional fraction, then one suffix (binary ``Ki``..``Ei``,
decimal ``n``..``E``, or an exponent ``e3``/``E-2``). Anything else, including ``inf``, ``nan``
and YAML/JSON floats that are not finite, is refused. A magnitude above 10^25 is refused as out of
range before it is computed (an exponent such as ``1e1000000`` would otherwise take minutes and
gigabytes); ``milli`` and ``units`` cap their result at 2^63-1, as resource.Quantity caps its
value at the largest int64.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from math import ceil

from respread.core.limits import INT64_MAX, shown

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

# Beyond 10**25 nothing fits an int64 even in thousandths; below 10**-12 rounds up to the
# smallest unit. Exponents outside these are decided without computing the power.
_MAX_MAGNITUDE = 25
_MIN_MAGNITUDE = -12
_MAX_CHARS = 128


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity, or one out of range."""


# <quantity> ::= <signedNumber><suffix>; the exponent form (e3, E-2) is itself a suffix.
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE])?"
)


def parse_quantity(value: object) -> Decimal:
    """The exact value of a quantity; raises QuantityError for anything malformed.

    Values far beyond what an int64 holds are refused here (before computing them).
    """
    if isinstance(value, str):
        return _parse_string(value)
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {shown(value)}")
    if isinstance(value, int):
        if abs(value) > INT64_MAX:
            raise QuantityError(f"out of range: {shown(value)}")
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"not a quantity: {shown(value)}")
        return _bounded(Decimal(repr(value)), value)
    raise QuantityError(f"not a quantity: {shown(value)}")


def _parse_string(value: str) -> Decimal:
    if len(value) > _MAX_CHARS:
        raise QuantityError(f"not a quantity (over {_MAX_CHARS} characters): {shown(value)}")
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise QuantityError(f"not a quantity: {shown(value)}")
    number = Decimal(match.group("number"))
    suffix = match.group("suffix") or ""
    if suffix in _BINARY:
        return _bounded(number * _BINARY[suffix], value)
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return _scaled(number, suffix, value)
    return _bounded(number * _DECIMAL[suffix], value)


def _scaled(number: Decimal, suffix: str, value: str) -> Decimal:
    """``number`` times ten to the exponent suffix (``e3``, ``E-2``), decided without computing
    the power where the magnitude is out of range or below the smallest unit."""
    exponent = int(suffix[1:]) if len(suffix) < 12 else (1 if suffix[1] != "-" else -1) * 10**9
    if number == 0:
        return Decimal(0)
    magnitude = number.adjusted() + exponent
    if magnitude > _MAX_MAGNITUDE:
        raise QuantityError(f"out of range: {shown(value)}")
    if magnitude < _MIN_MAGNITUDE:
        return Decimal("1e-12") if number > 0 else Decimal("-1e-12")
    try:
        return _bounded(number.scaleb(exponent), value)
    except InvalidOperation:
        raise QuantityError(f"out of range: {shown(value)}") from None


def _bounded(amount: Decimal, value: object) -> Decimal:
    if amount.is_finite() and abs(amount) <= 10**_MAX_MAGNITUDE:
        return amount
    raise QuantityError(f"out of range: {shown(value)}")


def _capped(amount: int) -> int:
    return max(-INT64_MAX, min(INT64_MAX, amount))


def milli(value: object) -> int:
    """A quantity in thousandths, rounded up (CPU is accounted in millicores), capped at int64."""
    return _capped(ceil(parse_quantity(value) * 1000))


def units(value: object) -> int:
    """A quantity in whole units, rounded up (memory and storage in bytes), capped at int64."""
    return _capped(ceil(parse_quantity(value)))
