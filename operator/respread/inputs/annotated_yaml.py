"""YAML with comments: a mapping written in block style, each note as a `#` comment above the
key it is about (PyYAML writes no comments). Used by `respread convert` to say, beside a
converted field, where the descheduler's setting has no equivalent or means something else.

Scalars and lists are written as JSON (valid YAML, and never re-read as another type: `"on"`,
`"0x_"` or `"1:20"` stay strings); plain keys and strings where they cannot be misread.
Reading the text back with any YAML reader gives the mapping unchanged.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from respread.core.limits import printable
from respread.inputs import scalars

WIDTH = 98
# A string written plain holds no YAML indicator and is read back as that string by a YAML 1.1
# reader (PyYAML: no bool, null, sexagesimal or 0x_ number), a YAML 1.2 core-schema reader
# (no 0o17, 0x1F or 1e3 number) and kubectl (respread.inputs.scalars: go-yaml v2's resolver).
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./-]*")
_CORE_NUMBER = re.compile(
    r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?"
)
_RESERVED = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"}


def _plain(text: str) -> bool:
    return (
        bool(_PLAIN.fullmatch(text))
        and not _CORE_NUMBER.fullmatch(text)
        and text.lower() not in _RESERVED
        and yaml.safe_load(text) == text
        and scalars.resolve("", text) == (scalars.STR, text)
    )


# Characters JSON leaves raw that a YAML reader refuses (DEL, C1 controls, non-characters) or
# reads as a line break inside a quoted string (NEL, LS, PS): written as \u escapes.
_UNSAFE_IN_YAML = re.compile("[\x7f-\x9f\u2028\u2029\ufffe\uffff]")


def scalar(value: Any) -> str:
    """One value on one line: a plain string where safe, else JSON (with the characters YAML
    refuses escaped)."""
    if isinstance(value, str) and _plain(value):
        return value
    text = json.dumps(value, ensure_ascii=False)
    return _UNSAFE_IN_YAML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _comment(text: str, indent: int) -> list[str]:
    pad = " " * indent + "# "
    wrapped = textwrap.wrap(printable(text), width=max(40, WIDTH - len(pad)))
    return [pad + line for line in wrapped]


def _emit(
    node: Mapping[str, Any],
    path: tuple[str, ...],
    notes: Mapping[tuple[str, ...], Sequence[str]],
    indent: int,
    out: list[str],
) -> None:
    for key, value in node.items():
        here = (*path, str(key))
        for text in notes.get(here, ()):
            out.extend(_comment(text, indent))
        head = " " * indent + scalar(str(key)) + ":"
        if isinstance(value, Mapping) and value:
            out.append(head)
            _emit(value, here, notes, indent + 2, out)
        else:
            out.append(f"{head} {scalar(value)}")


def _paths(node: Mapping[str, Any], path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    found = set()
    for key, value in node.items():
        here = (*path, str(key))
        found.add(here)
        if isinstance(value, Mapping):
            found |= _paths(value, here)
    return found


def render(document: Mapping[str, Any], notes: Sequence[tuple[tuple[str, ...], str]]) -> str:
    """``document`` as block YAML with each (path, text) note above the key at ``path``; notes
    whose path the document does not hold (or the empty path) head the document."""
    present = _paths(document)
    by_path: dict[tuple[str, ...], list[str]] = {}
    head: list[str] = []
    for path, text in notes:
        if path and path in present:
            by_path.setdefault(path, []).append(text)
        elif text not in head:
            head.append(text)
    out: list[str] = []
    for text in head:
        out.extend(_comment(text, 0))
    _emit(document, (), by_path, 0, out)
    return "\n".join(out) + "\n"
