"""Text to documents: YAML and JSON read as kubectl reads them, within fixed bounds.

A text is JSON if it starts with ``{`` or ``[`` and reads as JSON (several values one after the
other too, as kubectl reads them; YAML after them is read as YAML); otherwise YAML, split into
its documents where a line starts with ``---`` (as kubectl splits them), each read on its own,
so that one document that cannot be read leaves the others. A byte order mark at the start of a
document, or around its ``---``, is dropped. Scalars mean what they mean to kubectl
(respread.inputs.scalars); bounds are respread.core.limits'. ``read_documents`` hands on every
object as soon as it is read (respread.inputs.entries); ``documents_from_text`` waits for each
List to be known as one, for callers that want plain objects.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from respread.core.limits import DEFAULT_LIMITS, Limits
from respread.inputs.entries import LIST_ITEMS, InputError, LeftOut, Settled
from respread.inputs.json_reader import JsonReader, NotJson
from respread.inputs.yaml_reader import YamlReader

__all__ = ["InputError", "LeftOut", "decode", "documents_from_text", "read_documents"]

_JSON_START = re.compile(r"[ \t\r\n]*[{\[]")
# A byte order mark just before or after a line's `---` (files joined with their marks).
_MARKED_SEPARATOR = re.compile(r"^\ufeff(?=---)|(?<=^---)\ufeff", re.MULTILINE)


def decode(data: bytes) -> str:
    """UTF-8 text (a byte order mark is dropped); InputError names the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(
            f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})", line
        ) from None


def split_documents(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """(lines before it, its text) for each YAML document of ``text`` from ``start``: split
    before every line that is ``---``, alone or followed by a space, as kubectl splits them."""
    begin, line = start, text.count("\n", 0, start)
    pos = text.find("\n---", start)
    while pos != -1:
        after = pos + 4
        if after == len(text) or text[after] in " \t\r\n":
            yield line, _unmarked(text[begin : pos + 1])
            line += text.count("\n", begin, pos + 1)
            begin = pos + 1
        pos = text.find("\n---", after)
    yield line, _unmarked(text[begin:])


def _unmarked(document: str) -> str:
    """The document without a byte order mark at the start of its first line of content (a
    file joined to others with its mark): libyaml would count it as indentation."""
    if document.startswith("---"):
        end = document.find("\n") + 1
        if end and document.startswith("\ufeff", end):
            return document[:end] + document[end + 1 :]
    return document


def read_documents(text: str, limits: Limits = DEFAULT_LIMITS) -> Iterator[Any]:
    """Every entry of a YAML or JSON text (respread.inputs.entries), in text order.

    Raises InputError only for the text as a whole (its size); anything else that cannot be
    read is a LeftOut naming it, and the rest is read.
    """
    if len(text) > limits.max_bytes:
        raise InputError(f"larger than the limit of {limits.max_bytes} bytes")
    if "\ufeff" in text:
        text = _MARKED_SEPARATOR.sub("", text)
    yaml_from = 0
    start = _JSON_START.match(text)
    if start is not None:
        try:
            yaml_from = yield from JsonReader(limits).read(text, start.end() - 1)
        except NotJson:
            yaml_from = 0
        if yaml_from >= len(text) or not text[yaml_from:].strip():
            return
    reader = YamlReader(limits)
    for line, document in split_documents(text, yaml_from):
        yield from reader.read(document, line)


def documents_from_text(
    text: str, source: str, limits: Limits = DEFAULT_LIMITS
) -> Iterator[tuple[str, Any]]:
    """(source, object) for every object of the text (a LeftOut for what cannot be read), the
    items of a ``kind: List`` unwrapped; each List's items are held until it is known to be one.

    Raises InputError for a text larger than the limit.
    """
    pending: list[Any] | None = None
    for entry in read_documents(text, limits):
        if entry is LIST_ITEMS:
            pending = []
        elif isinstance(entry, Settled):
            pending = pending or []
            if entry.is_list:
                yield from ((source, item) for item in pending)
            elif isinstance(entry.root, dict):
                items = [item for item in pending if not isinstance(item, LeftOut)]
                yield source, {**entry.root, "items": items}
            elif entry.root is not None:
                yield source, entry.root
            pending = None
        elif pending is not None:
            pending.append(entry)
        else:
            yield source, entry
