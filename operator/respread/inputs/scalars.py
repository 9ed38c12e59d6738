"""YAML scalars as kubectl reads them: go-yaml v2's resolver, then sigs.k8s.io/yaml's JSON.

kubectl reads and writes YAML with sigs.k8s.io/yaml, which decodes YAML with go-yaml v2 and
converts the result to JSON (``YAMLToJSON``); its writer (``JSONToYAML``, what ``kubectl get -o
yaml`` prints) leaves a string unquoted exactly when go-yaml v2 would read it back as a string.
So a manifest means what this module reads, and PyYAML's YAML 1.1 resolver is not used: it reads
``=`` as a ``!!value`` tag, ``0x_`` as a broken integer and ``1:20`` as the integer 80, all of
which kubectl writes unquoted or reads as strings.

A plain scalar (``plain``) is resolved as go-yaml v2's ``resolve("", text)``:

- ``y Y yes Yes YES true True TRUE on On ON`` are true, ``n N no No NO false False FALSE off Off
  OFF`` false, ``"" ~ null Null NULL`` null, ``.inf``/``.nan`` (three spellings each) infinities
  and NaN; only text whose first character is one of ``+-0123456789yYnNtTfFoO~.`` is resolved
  at all (``<<`` is the merge key only as a mapping key);
- text starting with ``.`` is a float if Go's ``strconv.ParseFloat`` reads it;
- text starting with a sign or digit is, with every ``_`` removed, an integer as Go's
  ``strconv.ParseInt(text, 0, 64)`` or ``ParseUint`` reads it (``0x1F``, ``0o17``, ``017`` octal,
  ``0b101``), else a float if it is ``[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?`` and
  fits a float64, else ``0b``/``-0b`` binary; a timestamp stays its text;
- everything else is a string (``=``, ``0x_``, ``1:20``, ``0x1p3``, ``1e400``, 400 digits).

An explicit tag (``tagged``) is resolved the same way and must agree (``!!bool maybe`` is an
error; ``!!float 1`` is 1.0); ``!!str`` keeps the text, ``!!binary`` is base64, other tags are
ignored as kubectl ignores them. Then sigs.k8s.io/yaml's conversion: a float is what JSON makes of
it (``1e3`` is the integer 1000, as the API server reads it; infinities and NaN are refused: JSON
cannot hold them) and a mapping key becomes a string (``1`` -> ``"1"``, ``yes`` -> ``"true"``;
null and integers beyond int64 are refused). ``tests/oracles/test_yaml_oracle.py`` holds all of
this to the Go code itself.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import codecs
import math
import re
import struct
from decimal import Decimal
from typing import Any

from respread.core.limits import INT64_MAX, INT64_MIN, shown

UINT64_MAX = 2**64 - 1

STR = "tag:yaml.org,2002:str"
BOOL = "tag:yaml.org,2002:bool"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
NULL = "tag:yaml.org,2002:null"
TIMESTAMP = "tag:yaml.org,2002:timestamp"
BINARY = "tag:yaml.org,2002:binary"
MERGE = "tag:yaml.org,2002:merge"
_RESOLVABLE = frozenset({STR, BOOL, INT, FLOAT, NULL, TIMESTAMP})
_LONG_PREFIX = "tag:yaml.org,2002:"


class ScalarError(ValueError):
    """A scalar kubectl cannot read (the message is go-yaml's or sigs.k8s.io/yaml's reason)."""


_WORDS: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE"), (BOOL, True)),
    **dict.fromkeys(("on", "On", "ON"), (BOOL, True)),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE"), (BOOL, False)),
    **dict.fromkeys(("off", "Off", "OFF"), (BOOL, False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), (NULL, None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), (FLOAT, math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (FLOAT, math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), (FLOAT, -math.inf)),
    "<<": (MERGE, "<<"),
}
_WORD_HINT = frozenset("yYnNtTfFoO~")
_NUMBER_HINT = frozenset("+-0123456789")

# strconv.ParseUint(text, 0, 64)'s grammar, underscores already removed: a base prefix, or a
# leading 0 for octal. The digits after a prefix must be there ("0x" alone is not a number).
_GO_UINT = re.compile(r"0[xX]([0-9a-fA-F]+)|0[bB]([01]+)|0[oO]([0-7]+)|0([0-7]*)|([1-9][0-9]*)")
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
# strconv.ParseFloat of text starting with ".": a fraction and an exponent; underscores between
# digits (checked apart, as strconv's underscoreOK checks them).
_GO_DOT_FLOAT = re.compile(r"\.[0-9_]+([eE][-+]?[0-9_]+)?")
_SIGNED_BITS = re.compile(r"[+-]?[01]+")
_BITS = re.compile(r"[01]+")
_TIMESTAMP = re.compile(
    r"(?P<y>[0-9]{4})-(?P<m>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"(?:(?:[Tt](?P<tz_time>[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]+)?)"
    r"(?:[Zz]|[+-][0-9]{2}:[0-9]{2}))"
    r"|(?: (?P<time>[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]+)?)))?"
)


def _go_uint(text: str) -> int | None:
    """strconv.ParseUint(text, 0, 64), None where it fails."""
    match = _GO_UINT.fullmatch(text)
    if match is None:
        return None
    hexa, bits, octal, zero_octal, decimal = match.groups()
    if decimal is not None:
        if len(decimal) > 20:  # beyond uint64: refused before a quadratic conversion
            return None
        value = int(decimal)
    elif hexa is not None:
        value = int(hexa, 16)
    elif bits is not None:
        value = int(bits, 2)
    else:
        value = int(octal if octal is not None else zero_octal or "0", 8)
    return value if value <= UINT64_MAX else None


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64): an optional sign, then ParseUint's grammar, int64."""
    sign = -1 if text[:1] == "-" else 1
    magnitude = _go_uint(text[1:] if text[:1] in "+-" else text)
    if magnitude is None:
        return None
    value = sign * magnitude
    return value if INT64_MIN <= value <= INT64_MAX else None


def _underscores_ok(text: str) -> bool:
    """strconv's underscoreOK for decimal text: each ``_`` between two digits."""
    previous = "^"
    for char in text:
        if char == "_":
            if previous != "0":
                return False
            previous = "_"
        elif char.isdigit():
            previous = "0"
        elif previous == "_":
            return False
        else:
            previous = "!"
    return previous != "_"


def _finite(text: str) -> float | None:
    """strconv.ParseFloat of text already known to be decimal float syntax: None on overflow
    (Go reports a range error there; an underflow to zero is no error)."""
    value = float(text)
    return None if math.isinf(value) else value


def _numeric(text: str) -> tuple[str, Any] | None:
    """go-yaml v2's reading of text starting with a sign or a digit (after timestamps)."""
    plain = text.replace("_", "")
    number = _go_int(plain)
    if number is None and plain[:1] not in "+-":
        number = _go_uint(plain)
    if number is not None:
        return INT, number
    if _YAML_FLOAT.fullmatch(plain):
        value = _finite(plain)
        if value is not None:
            return FLOAT, value
    if plain.startswith("0b") and _SIGNED_BITS.fullmatch(plain[2:]):
        value_int = int(plain[2:], 2)  # ParseInt(.., 2, 64) takes a sign, ParseUint none
        limit = UINT64_MAX if plain[2] not in "+-" else INT64_MAX
        if INT64_MIN <= value_int <= limit:
            return INT, value_int
    elif plain.startswith("-0b") and _BITS.fullmatch(plain[3:]):
        value_int = -int(plain[3:], 2)
        if value_int >= INT64_MIN:
            return INT, value_int
    return None


def is_timestamp(text: str) -> bool:
    """go-yaml v2's parseTimestamp: the layouts it tries, with a real calendar date."""
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return False
    year, month, day = int(match["y"]), int(match["m"]), int(match["d"])
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year or 2000, month)[1]:
        return False
    clock = match["tz_time"] or match["time"]
    if clock is None:
        return True
    hour, minute, second = (int(float(part)) for part in clock.split(":"))
    return hour < 24 and minute < 60 and second < 60


def resolve(tag: str, text: str) -> tuple[str, Any]:
    """go-yaml v2's ``resolve(tag, text)`` for a resolvable tag ("" for a plain scalar):
    the tag the text resolves to and its value."""
    hint = text[:1]
    if tag in (STR, BINARY) or (text and hint not in _WORD_HINT | _NUMBER_HINT and hint != "."):
        return STR, text
    word = _WORDS.get(text)
    if word is not None:
        return word
    if hint == ".":
        if _GO_DOT_FLOAT.fullmatch(text) and _underscores_ok(text):
            value = _finite(text.replace("_", ""))
            if value is not None:
                return FLOAT, value
    elif hint in _NUMBER_HINT:
        if tag in ("", TIMESTAMP) and is_timestamp(text):
            return TIMESTAMP, text
        found = _numeric(text)
        if found is not None:
            return found
    return STR, text


def short_tag(tag: str) -> str:
    return "!!" + tag[len(_LONG_PREFIX) :] if tag.startswith(_LONG_PREFIX) else tag


def plain(text: str) -> Any:
    """The JSON value of an untagged plain scalar (ScalarError for infinities and NaN)."""
    rtag, value = resolve("", text)
    if rtag == FLOAT:
        return json_number(value, text)
    return value


def tagged(tag: str, text: str) -> Any:
    """The JSON value of an explicitly tagged scalar, as go-yaml v2 and then JSON read it."""
    rtag, value = _tagged(tag, text)
    return json_number(value, text) if rtag == FLOAT else value


def _tagged(tag: str, text: str) -> tuple[str, Any]:
    """go-yaml v2's value of a tagged scalar (before JSON), or ScalarError."""
    if tag == BINARY:
        return STR, _binary(text)
    if tag not in _RESOLVABLE:
        return STR, text  # other tags (custom, !!map on a scalar, !!merge) are ignored
    if tag == STR:
        return STR, text
    rtag, value = resolve(tag, text)
    if tag == FLOAT and rtag == INT and INT64_MIN <= value <= INT64_MAX:
        rtag, value = FLOAT, float(value)
    if rtag != tag:
        raise ScalarError(f"cannot decode {short_tag(rtag)} {shown(text)} as a {short_tag(tag)}")
    return rtag, value


def json_number(value: float, text: str) -> int | float:
    """What JSON makes of a float: Go's encoder writes an integral float under 1e21 with no
    fraction (so it is read back as an integer, as the API server reads it), and cannot write
    an infinity or NaN at all."""
    if not math.isfinite(value):
        raise ScalarError(f"{shown(text)} is not a number JSON can hold")
    if value.is_integer() and abs(value) < 1e21:
        return int(Decimal(repr(value)))  # the shortest digits, as Go writes them
    return value


def _go_replace(error: UnicodeError) -> tuple[str, int]:
    # Go's encoding/json replaces each invalid byte with U+FFFD (Python's "replace" would
    # replace a whole invalid sequence with one).
    assert isinstance(error, UnicodeDecodeError)
    return "\ufffd", error.start + 1


codecs.register_error("respread-go-replace", _go_replace)


def _binary(text: str) -> str:
    """A !!binary scalar: base64 (line breaks ignored, as Go's decoder ignores them), its bytes
    read as JSON's encoder reads a Go string (invalid UTF-8 replaced byte by byte)."""
    try:
        data = base64.b64decode(text.replace("\n", "").replace("\r", ""), validate=True)
    except (binascii.Error, ValueError):
        raise ScalarError("!!binary value contains invalid base64 data") from None
    return data.decode("utf-8", "respread-go-replace")


def raw_key(tag: str | None, text: str) -> Any:
    """A scalar key's value as go-yaml v2 hands it to sigs.k8s.io/yaml: a float stays a float
    (``1e20`` -> ``"1e+20"``, ``.inf`` -> ``".inf"``) where a value would be made JSON's."""
    return resolve("", text)[1] if tag is None else _tagged(tag, text)[1]


def key_text(key: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml writes it into JSON (a string), or ScalarError."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        if key > INT64_MAX:
            raise ScalarError(f"unsupported map key of type uint64 ({key})")
        return str(key)
    if isinstance(key, float):
        return _float32_text(key)
    raise ScalarError(f"unsupported map key {shown(key)}")


def _float32_text(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32): the shortest digits that read back as the same
    float32, in %e form when the exponent is below -4 or at least 6 (Go's shortest %g), and
    the names sigs.k8s.io/yaml gives infinities and NaN."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:  # beyond float32: Go's conversion gives an infinity
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    for digits in range(1, 10):
        text = f"{single:.{digits - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent_text = text.split("e")
    exponent = int(exponent_text)
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    if exponent < -4 or exponent >= 6:
        return f"{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    return format(Decimal(f"{mantissa}e{exponent}"), "f")
