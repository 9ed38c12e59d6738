"""Text to documents: YAML and JSON read as kubectl reads them, within fixed bounds.

A text is JSON if it starts with ``{`` or ``[`` and reads as JSON (several values one after the
other too, as kubectl reads them; YAML after them is read as YAML); otherwise YAML, split into
its documents where a line starts with ``---`` (as kubectl splits them), so that one document
that cannot be read leaves the others (one parser reads them while they read cleanly; after a
document that does not, each is read by a parser of its own). A byte order mark at the start of
a document, or around its ``---``, is dropped. Scalars mean what they mean to kubectl
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
from respread.inputs.yaml_reader import YamlReader, next_document

__all__ = ["InputError", "LeftOut", "decode", "documents_from_text", "read_documents"]

_JSON_START = re.compile(r"[ \t\r\n]*[{\[]")
# A byte order mark just before or after a line's `---` (files joined with their marks).
_MARKED_SEPARATOR = re.compile(r"^\ufeff(?=---)|(?<=^---)\ufeff", re.MULTILINE)
_MARK_AFTER_SEPARATOR = re.compile(r"^(---[^\n]*\n)\ufeff", re.MULTILINE)


def decode(data: bytes) -> str:
    """UTF-8 text (a byte order mark is dropped); InputError names the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(
            f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})", line
        ) from None


def _unmarked(text: str) -> str:
    """The text without the byte order marks that files joined with theirs leave around a
    ``---`` (before it, after it on its line, or at the start of the line after it): libyaml
    would count one at a line's start as indentation."""
    text = _MARKED_SEPARATOR.sub("", text)
    return _MARK_AFTER_SEPARATOR.sub(lambda m: m.group(1), text)


def _read_yaml(text: str, start: int, limits: Limits) -> Iterator[Any]:
    """The documents from ``start`` on, read by one parser while they read cleanly; from the
    first that does not, each document by a parser of its own (one that cannot be read is
    left out, named, and the next one read)."""
    reader = YamlReader(limits)
    line = text.count("\n", 0, start)
    resume = yield from reader.read(text[start:] if start else text, line)
    while resume is not None and start + resume < len(text):
        begin = start + resume
        line += text.count("\n", start, begin)  # counted on from the last start: linear
        start = next_document(text, begin + 1)
        yield from reader.read(text[begin:start], line, alone=True)
        line += text.count("\n", begin, start)
        resume = 0


def read_documents(text: str, limits: Limits = DEFAULT_LIMITS) -> Iterator[Any]:
    """Every entry of a YAML or JSON text (respread.inputs.entries), in text order.

    Raises InputError only for the text as a whole (its size); anything else that cannot be
    read is a LeftOut naming it, and the rest is read.
    """
    if len(text) > limits.max_bytes:
        raise InputError(f"larger than the limit of {limits.max_bytes} bytes")
    if "\ufeff" in text:
        text = _unmarked(text)
    yaml_from = 0
    start = _JSON_START.match(text)
    if start is not None:
        try:
            yaml_from = yield from JsonReader(limits).read(text, start.end() - 1)
        except NotJson:
            yaml_from = 0
        if yaml_from >= len(text) or not text[yaml_from:].strip():
            return
    yield from _read_yaml(text, yaml_from, limits)


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
