"""Kubernetes resource quantities (k8s.io/apimachinery resource.Quantity), as exact integers.

Grammar: ``<signed number><suffix>``, where the suffix is a binary SI suffix (Ki..Ei), a decimal
SI suffix (n u m "" k M G T P E) or a decimal exponent (e3, E-3). ``milli`` and ``units`` round
up, as Quantity.MilliValue and Quantity.Value do.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from respread.core.quantity import QuantityError, milli, parse_quantity, units
from tests.support.tables import cases

# (input, milli(input), units(input))
TABLE = [
    # plain numbers
    ("0", 0, 0),
    ("1", 1000, 1),
    ("2", 2000, 2),
    ("1.5", 1500, 2),
    ("0.5", 500, 1),
    (".5", 500, 1),
    ("+3", 3000, 3),
    ("-1", -1000, -1),
    # decimal SI suffixes
    ("1n", 1, 1),  # 1e-9: rounds up to one milli and to one unit
    ("1u", 1, 1),
    ("1500u", 2, 1),  # 1.5 milli rounds up to 2
    ("100m", 100, 1),
    ("1000m", 1000, 1),
    ("1001m", 1001, 2),
    ("1.5m", 2, 1),
    ("250m", 250, 1),
    ("1k", 1_000_000, 1000),
    ("1.5k", 1_500_000, 1500),
    ("1M", 10**9, 10**6),
    ("1G", 10**12, 10**9),
    ("2T", 2 * 10**15, 2 * 10**12),
    ("1P", 10**18, 10**15),
    ("1E", 2**63 - 1, 10**18),  # the thousandths pass int64: capped, as Quantity caps
    # binary SI suffixes
    ("1Ki", 1024_000, 1024),
    ("1Mi", 2**20 * 1000, 2**20),
    ("64Mi", 64 * 2**20 * 1000, 64 * 2**20),
    ("1Gi", 2**30 * 1000, 2**30),
    ("0.5Gi", 2**29 * 1000, 2**29),
    ("3Ki", 3072_000, 3072),
    ("1.5Ki", 1536_000, 1536),
    ("0.1Ki", 102_400, 103),  # 102.4 bytes round up to 103
    ("1Ti", 2**40 * 1000, 2**40),
    ("1Pi", 2**50 * 1000, 2**50),
    ("1Ei", 2**63 - 1, 2**60),
    # decimal exponents
    ("2e3", 2_000_000, 2000),
    ("1E3", 1_000_000, 1000),
    ("1e-3", 1, 1),
    ("2e-3", 2, 1),
    ("1e0", 1000, 1),
]


@pytest.mark.parametrize(("text", "want_milli", "want_units"), TABLE, ids=[t[0] for t in TABLE])
def test_milli_and_units(text: str, want_milli: int, want_units: int) -> None:
    assert milli(text) == want_milli
    assert units(text) == want_units


NUMBERS = [
    ("int", 2, 2000, 2),
    ("zero int", 0, 0, 0),
    ("float half", 0.5, 500, 1),
    ("float tenth is exact", 0.1, 100, 1),
    ("float 1.25", 1.25, 1250, 2),
]


@cases(("value", "want_milli", "want_units"), NUMBERS)
def test_yaml_numbers_are_quantities(value: float, want_milli: int, want_units: int) -> None:
    """YAML gives ``cpu: 2`` or ``cpu: 0.5`` as numbers, not strings."""
    assert milli(value) == want_milli
    assert units(value) == want_units


def test_parse_quantity_is_exact() -> None:
    assert parse_quantity("100m") == Decimal("0.1")
    assert parse_quantity("1Gi") == Decimal(2**30)
    assert parse_quantity("3n") == Decimal("3e-9")


MALFORMED = [
    ("empty", ""),
    ("blank", "   "),
    ("word", "abc"),
    ("two dots", "1.2.3"),
    ("only a dot", "."),
    ("only a sign", "+"),
    ("suffix without number", "Ki"),
    ("milli without number", "m"),
    ("unknown suffix KiB", "1KiB"),
    ("upper-case K is not a suffix", "1K"),
    ("lower-case ki", "1ki"),
    ("bytes suffix", "1kb"),
    ("dangling exponent", "1e"),
    ("fractional exponent", "1e3.5"),
    ("hex", "0x10"),
    ("nan", "NaN"),
    ("infinity", "Infinity"),
    ("inf", "inf"),
    ("digit separator", "1_000"),
    ("space inside", "1 Ki"),
    ("exponent and suffix", "1e3Ki"),
    ("none", None),
    ("bool true", True),
    ("bool false", False),
    ("list", ["1"]),
    ("mapping", {"cpu": "1"}),
    ("yaml infinity", float("inf")),
    ("yaml nan", float("nan")),
    ("exponent far out of range", "1e1000000"),
    ("exponent beyond any int", "1e99999999999999999999"),
    ("decimal far out of range", "9" * 40),
    ("int beyond int64", 2**64),
    ("over 128 characters", "1" + "0" * 200 + "m"),
]


@cases("value", MALFORMED)
def test_malformed_raises_quantity_error(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)
    with pytest.raises(QuantityError):
        milli(value)
    with pytest.raises(QuantityError):
        units(value)


def test_quantity_error_is_a_value_error() -> None:
    """Callers that catch ValueError (argument parsing, loaders) see it too."""
    assert issubclass(QuantityError, ValueError)


def test_tiny_exponents_round_up_without_computing_the_power() -> None:
    assert milli("1e-1000000") == 1
    assert units("1e-99999999999999999999") == 1
    assert milli("0e999999") == 0


def test_magnitudes_an_int64_holds_are_exact() -> None:
    assert units("9223372036854775807") == 2**63 - 1
    assert milli("1e15") == 10**18
    assert units("1e25") == 2**63 - 1  # capped, not refused
