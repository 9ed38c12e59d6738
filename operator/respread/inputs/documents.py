"""Text to documents: YAML and JSON read within fixed bounds (respread.core.limits).

The YAML parser's events are built into values here, iteratively, instead of by the C
composer (which recurses and can exhaust the stack on deep nesting, and holds a node tree
several times the size of the values): nesting deeper than
``Limits.max_depth``, more aliases than ``Limits.max_aliases``, aliases that stand for more than
``Limits.max_alias_nodes`` nodes once expanded (an alias bomb), and an alias that refers to its
own enclosing node are refused before anything is built from them. Timestamps stay strings
(their fields parse them as RFC 3339, with a clear error); tags outside JSON's data model
(``!!binary``, ``!!set``, ``!!omap``, ``!!pairs``, custom tags) are refused. JSON is bounded the
same way: depth, ``NaN``/``Infinity`` refused, integers of more than a few hundred digits refused.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import ScalarNode

from respread.core.limits import DEFAULT_LIMITS, Limits, shown

# Longer than any int64; refused before Python converts it (which is quadratic in the digits).
MAX_INTEGER_CHARS = 400


class InputError(ValueError):
    """A text that cannot be read as YAML or JSON within the limits; ``line`` is 1-based."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line

    def __str__(self) -> str:
        return f"{self.message} at line {self.line}" if self.line else self.message


def decode(data: bytes) -> str:
    """UTF-8 text (a byte order mark is dropped); InputError names the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(
            f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})", line
        ) from None


def documents_from_text(
    text: str, source: str, limits: Limits = DEFAULT_LIMITS
) -> Iterator[tuple[str, Any]]:
    """Every object in a YAML or JSON text, with ``kind: List`` (and ``*List``) unwrapped.

    Raises InputError (or yaml.YAMLError, for text that is not YAML at all).
    """
    if len(text) > limits.max_bytes:
        raise InputError(f"larger than the limit of {limits.max_bytes} bytes")
    if text.lstrip().startswith(("{", "[")):
        try:
            docs: list[Any] = [_json_document(text, limits)]
        except json.JSONDecodeError:
            docs = _yaml_documents(text, limits)
    else:
        docs = _yaml_documents(text, limits)
    for doc in docs:
        yield from _unwrap(doc, source)


def _unwrap(doc: Any, source: str) -> Iterator[tuple[str, Any]]:
    # Recursion is bounded by the depth limit: every document was checked.
    if doc is None:
        return
    if isinstance(doc, list):
        for item in doc:
            yield from _unwrap(item, source)
        return
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            yield from _unwrap(item, source)
        return
    yield source, doc


# --------------------------------------------------------------------------------------------
# JSON


def _refuse_constant(name: str) -> Any:
    raise InputError(f"{name} is not a JSON number Kubernetes accepts")


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INTEGER_CHARS:
        raise InputError(f"an integer of {len(text)} digits is out of range")
    return int(text)


def _stack_depth() -> int:
    frame: Any = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def _json_document(text: str, limits: Limits) -> Any:
    # The C decoder recurses once per level, checked against the recursion limit: a caller that
    # raised the limit (a test runner, an embedding program) would let deep input overflow the
    # C stack. Bound it here, just past the depth respread accepts, and restore it after.
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(min(previous, _stack_depth() + limits.max_depth + 50))
    try:
        doc = json.loads(text, parse_constant=_refuse_constant, parse_int=_bounded_int)
    except RecursionError:
        raise InputError(f"nested deeper than {limits.max_depth} levels") from None
    finally:
        sys.setrecursionlimit(previous)
    _check_depth(doc, limits.max_depth)
    return doc


def _check_depth(doc: Any, max_depth: int) -> None:
    """Refuse containers nested deeper than ``max_depth`` (iteratively: no recursion)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, dict | list):
                if depth >= max_depth:
                    raise InputError(f"nested deeper than {max_depth} levels")
                stack.append((child, depth + 1))
    if isinstance(doc, dict | list) and max_depth < 1:
        raise InputError(f"nested deeper than {max_depth} levels")


# --------------------------------------------------------------------------------------------
# YAML

_BASE_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_REFUSED_TAGS = (
    "tag:yaml.org,2002:binary",
    "tag:yaml.org,2002:set",
    "tag:yaml.org,2002:omap",
    "tag:yaml.org,2002:pairs",
    "tag:yaml.org,2002:timestamp",
)


class _Loader(_BASE_LOADER):  # type: ignore[misc]
    """The safe loader's constructors for JSON's data model only; timestamps stay strings."""

    yaml_constructors: ClassVar[dict[Any, Any]] = {
        tag: ctor
        for tag, ctor in _BASE_LOADER.yaml_constructors.items()
        if tag not in _REFUSED_TAGS
    }

    def construct_bounded_int(self, node: ScalarNode) -> int:
        if len(node.value) > MAX_INTEGER_CHARS:
            raise ConstructorError(
                None,
                None,
                f"an integer of {len(node.value)} digits is out of range",
                node.start_mark,
            )
        value: int = self.construct_yaml_int(node)
        return value


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_bounded_int)
# A timestamp-looking plain scalar is resolved as a string: its field parses it (RFC 3339).
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _BASE_LOADER.construct_yaml_str)


def _line(event: Any) -> int | None:
    mark = getattr(event, "start_mark", None)
    return mark.line + 1 if mark is not None else None


_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_STR = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_MERGE = object()  # the `<<` key of a mapping


class _Frame:
    """An open sequence or mapping: what it holds so far, and its size in nodes."""

    __slots__ = ("anchor", "items", "key", "merges", "size", "start")

    def __init__(self, items: Any, anchor: str | None, start: Any) -> None:
        self.items = items
        self.anchor = anchor
        self.start = start  # its start event, for messages
        self.key: Any = _NO_KEY
        self.size = 1
        self.merges: list[Any] = []


_NO_KEY = object()


class _Builder:
    """Builds the Python value of each document straight from parser events, within the limits.

    No node tree is kept (the safe loader's composer would hold one for the whole document,
    several times the size of the values): scalars are resolved and constructed one at a time
    by the safe loader's own resolver and constructors, collections are built here. Merge keys
    (``<<``) are applied as the safe loader applies them.
    """

    def __init__(self, loader: Any, limits: Limits) -> None:
        self.loader = loader
        self.limits = limits
        self.aliases = 0
        self.alias_nodes = 0
        self._tags: dict[str, str] = {}  # plain scalar -> resolved tag (the resolver is slow)

    def _tag(self, ev: Any) -> str:
        tag: str | None = ev.tag
        if tag is not None and tag != "!":
            return tag
        if not ev.implicit[0]:  # quoted: a string (the resolver's own rule)
            return _STR
        value: str = ev.value
        tag = self._tags.get(value)
        if tag is None:
            tag = self.loader.resolve(ScalarNode, value, ev.implicit)
            if len(value) <= 64:
                if len(self._tags) >= 100_000:
                    self._tags.clear()
                self._tags[value] = tag
        return tag

    def _scalar(self, ev: Any) -> Any:
        tag = self._tag(ev)
        if tag == _STR:
            return ev.value
        if tag == _MERGE_TAG:
            return _MERGE
        loader = self.loader
        constructor = loader.yaml_constructors.get(tag)
        if constructor is None:
            raise ConstructorError(
                None,
                None,
                f"could not determine a constructor for the tag {tag!r}",
                ev.start_mark,
            )
        node = ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, style=ev.style)
        try:
            return constructor(loader, node)
        except (ValueError, OverflowError, TypeError) as err:
            raise InputError(f"cannot read a value ({type(err).__name__})", _line(ev)) from None

    def _alias(self, ev: Any, anchors: dict[str, tuple[Any, int, bool]]) -> tuple[Any, int]:
        target = anchors.get(ev.anchor)
        if target is None:
            raise InputError(f"undefined alias {shown(ev.anchor)}", _line(ev))
        value, size, still_open = target
        if still_open:
            raise InputError(f"alias {shown(ev.anchor)} refers to itself", _line(ev))
        self.aliases += 1
        self.alias_nodes += size
        if self.aliases > self.limits.max_aliases:
            raise InputError(f"more than {self.limits.max_aliases} YAML aliases", _line(ev))
        if self.alias_nodes > self.limits.max_alias_nodes:
            raise InputError(
                f"YAML aliases expand to more than {self.limits.max_alias_nodes} nodes",
                _line(ev),
            )
        return value, size

    def _open(self, ev: Any, depth: int, is_seq: bool) -> _Frame:
        if depth >= self.limits.max_depth:
            raise InputError(f"nested deeper than {self.limits.max_depth} levels", _line(ev))
        tag = ev.tag
        if tag is not None and tag not in ("!", _SEQ if is_seq else _MAP):
            raise ConstructorError(
                None,
                None,
                f"could not determine a constructor for the tag {tag!r}",
                ev.start_mark,
            )
        return _Frame([] if is_seq else {}, ev.anchor, ev)

    def document(self) -> Any:
        """The value of the next document (its DocumentStart event already read)."""
        stack: list[_Frame] = []  # the collections open around the next node
        root: Any = None
        # Each node, once complete, joins the collection open around it (or is the root): a
        # sequence's next item, or a mapping's next key, its value, or a merge key's mappings.
        for value, size, ev in self._nodes(stack):
            if not stack:
                root = value
                continue
            frame = stack[-1]
            frame.size += size
            items = frame.items
            if type(items) is list:
                items.append(value)
            elif frame.key is _NO_KEY:
                if isinstance(value, dict | list):
                    raise InputError("a mapping key that is a collection", _line(ev))
                frame.key = value
            elif frame.key is _MERGE:
                _merge_into(frame, value, ev)
            else:
                items[frame.key] = value
                frame.key = _NO_KEY
        return root

    def _nodes(self, stack: list[_Frame]) -> Iterator[tuple[Any, int, Any]]:
        """The document's nodes as each is complete (a scalar, an alias, a collection at its
        end), with its size and event, until the document ends; a collection is pushed on
        ``stack`` when it starts and popped when it ends."""
        get_event = self.loader.get_event
        anchors: dict[str, tuple[Any, int, bool]] = {}  # value, size, still open
        scalar_event, end_events = yaml.ScalarEvent, (yaml.MappingEndEvent, yaml.SequenceEndEvent)
        start_events = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
        while True:
            ev: Any = get_event()
            cls = type(ev)
            if cls is scalar_event:
                value = ev.value if ev.tag is None and not ev.implicit[0] else self._scalar(ev)
                if ev.anchor is not None:
                    anchors[ev.anchor] = (value, 1, False)
                yield value, 1, ev
            elif cls in start_events:
                stack.append(self._open(ev, len(stack), cls is yaml.SequenceStartEvent))
                if ev.anchor is not None:
                    anchors[ev.anchor] = (None, 0, True)
            elif cls in end_events:
                done = stack.pop()
                yield _closed(done, anchors), done.size, done.start
            elif cls is yaml.AliasEvent:
                yield (*self._alias(ev, anchors), ev)
            elif cls is yaml.DocumentEndEvent:
                return
            else:
                raise InputError(f"unexpected YAML event {cls.__name__}", _line(ev))


def _closed(done: _Frame, anchors: dict[str, tuple[Any, int, bool]]) -> Any:
    """The value of a collection just ended (its merge keys applied), recorded under its anchor."""
    value = _merged(done.merges, done.items) if done.merges else done.items
    if done.anchor is not None:
        anchors[done.anchor] = (value, done.size, False)
    return value


def _merge_into(frame: _Frame, value: Any, ev: Any) -> None:
    """The value of a merge key (``<<``): a mapping or a list of them, merged when the mapping
    ends (_merged)."""
    group = value if isinstance(value, list) else [value]
    if not all(isinstance(m, dict) for m in group):
        raise InputError("a merge key (<<) needs mappings", _line(ev))
    frame.merges.append(group)
    frame.key = _NO_KEY


def _merged(merges: list[list[dict[Any, Any]]], explicit: dict[Any, Any]) -> dict[Any, Any]:
    """A mapping with merge keys, as the safe loader builds it: its own keys win, then the
    first merged mapping's, and so on."""
    merged: dict[Any, Any] = {}
    for group in reversed(merges):
        for mapping in reversed(group):
            merged.update(mapping)
    return {**merged, **explicit}


def _yaml_documents(text: str, limits: Limits) -> list[Any]:
    loader = _Loader(text)
    builder = _Builder(loader, limits)
    docs: list[Any] = []
    try:
        loader.get_event()  # StreamStart
        while not loader.check_event(yaml.StreamEndEvent):
            loader.get_event()  # DocumentStart
            docs.append(builder.document())
    finally:
        loader.dispose()
    return docs
