"""Bounds on what respread reads: sizes, nesting, aliases, integers, and how values are shown.

Every reader of untrusted input (snapshot files, standard input, policies, objects from the API
server) applies these, so that bad input ends in a one-line error instead of a traceback, a
hang or a crash of the YAML parser.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1

# Shown values are cut to this many characters (a 1 MB label value must not be printed whole).
SHOWN_CHARS = 80


@dataclass(frozen=True, slots=True)
class Limits:
    """How much input a single read may hold.

    ``max_depth`` counts nested mappings and sequences (a ``kind: List`` of pods needs about 15;
    kubectl's output never exceeds 30). ``max_aliases`` counts YAML aliases (``*name``) in one
    text: kubectl never writes them, hand-written manifests use a few. ``max_alias_nodes`` bounds
    the nodes those aliases stand for once expanded, which is what an alias bomb multiplies.
    ``max_anchors`` counts YAML anchors (``&name``) in one text: each keeps its value for the
    aliases that may follow it, so they are bounded too.
    """

    max_bytes: int = 512 * 2**20
    max_depth: int = 100
    max_aliases: int = 100
    max_alias_nodes: int = 10_000
    max_anchors: int = 10_000


DEFAULT_LIMITS = Limits()


def shown(value: object, width: int = SHOWN_CHARS) -> str:
    """``repr(value)``, cut to ``width`` characters with the length of what was left out.

    Containers are not rendered whole first: a shared, deeply aliased structure could be huge.
    """
    if isinstance(value, dict | list | tuple | set | frozenset):
        kind = type(value).__name__
        text = f"a {kind} of {len(value)} item{'s' if len(value) != 1 else ''}"
        return text if len(value) else ("{}" if isinstance(value, dict) else "[]")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        digits = int(value.bit_length() * 0.30103) + 1
        return f"an integer of about {digits} digits"
    if isinstance(value, str) and len(value) > width * 4:
        # repr of a huge string costs its whole length: cut before rendering.
        head = repr(value[:width])[: width - 1]
        return f"{head}… ({len(value)} characters)"
    text = repr(value)
    if len(text) <= width:
        return text
    return f"{text[: width - 1]}… ({len(text)} characters)"


def printable(text: str) -> str:
    """``text`` on one line: line breaks and other unprintable characters escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


FEW_NAMES = 3  # names listed in a message; beyond, counted


def few_named(names: Iterable[str], few: int = FEW_NAMES) -> str:
    """``a, b, c`` or ``a, b, c and 4,997 more``: names in a message, listed up to a few and
    counted beyond (5,000 budgets covering each of 2,000 pods would otherwise make a report of
    70 MB)."""
    listed = list(names)
    head = ", ".join(listed[:few])
    return head if len(listed) <= few else f"{head} and {len(listed) - few:,} more"


def printable_lines(text: str) -> str:
    """``text`` safe for a terminal: its line breaks kept, every other control character (ESC,
    BEL, carriage return, ...) and unprintable character escaped, line by line."""
    if text.isprintable():
        return text
    return "\n".join(line if line.isprintable() else printable(line) for line in text.split("\n"))


def is_int64(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX
