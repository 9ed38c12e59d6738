"""Text to documents: YAML and JSON read within fixed bounds (respread.limits).

The YAML parser's events are composed into nodes here, iteratively, instead of by the C
composer (which recurses and can exhaust the stack on deep nesting): nesting deeper than
``Limits.max_depth``, more aliases than ``Limits.max_aliases``, aliases that stand for more than
``Limits.max_alias_nodes`` nodes once expanded (an alias bomb), and an alias that refers to its
own enclosing node are refused before anything is built from them. Timestamps stay strings
(their fields parse them as RFC 3339, with a clear error); tags outside JSON's data model
(``!!binary``, ``!!set``, ``!!omap``, ``!!pairs``, custom tags) are refused. JSON is bounded the
same way: depth, ``NaN``/``Infinity`` refused, integers of more than a few hundred digits refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from respread.limits import DEFAULT_LIMITS, Limits

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


def _json_document(text: str, limits: Limits) -> Any:
    try:
        doc = json.loads(text, parse_constant=_refuse_constant, parse_int=_bounded_int)
    except RecursionError:
        raise InputError(f"nested deeper than {limits.max_depth} levels") from None
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


class _Composer:
    """Builds the node tree of one document from parser events, within the limits."""

    def __init__(self, loader: Any, limits: Limits) -> None:
        self.loader = loader
        self.limits = limits
        self.aliases = 0
        self.alias_nodes = 0

    def document(self) -> Node | None:
        loader = self.loader
        anchors: dict[str, tuple[Node, int]] = {}
        open_nodes: set[int] = set()
        # Each frame: the open collection, its pending mapping key, its size in nodes.
        stack: list[list[Any]] = []
        root: Node | None = None

        def attach(node: Node, size: int) -> None:
            nonlocal root
            if not stack:
                root = node
                return
            frame = stack[-1]
            frame[2] += size
            parent = frame[0]
            if isinstance(parent, SequenceNode):
                parent.value.append(node)
            elif frame[1] is None:
                frame[1] = node
            else:
                parent.value.append((frame[1], node))
                frame[1] = None

        while True:
            event: Any = loader.get_event()
            ev: Any = event
            if isinstance(event, yaml.DocumentEndEvent):
                return root
            if isinstance(event, yaml.AliasEvent):
                target = anchors.get(ev.anchor)
                if target is None:
                    raise InputError(f"undefined alias {ev.anchor!r}", _line(event))
                node, size = target
                if id(node) in open_nodes:
                    raise InputError(f"alias {ev.anchor!r} refers to itself", _line(event))
                self.aliases += 1
                self.alias_nodes += size
                if self.aliases > self.limits.max_aliases:
                    raise InputError(
                        f"more than {self.limits.max_aliases} YAML aliases", _line(event)
                    )
                if self.alias_nodes > self.limits.max_alias_nodes:
                    raise InputError(
                        f"YAML aliases expand to more than {self.limits.max_alias_nodes} nodes",
                        _line(event),
                    )
                attach(node, size)
            elif isinstance(event, yaml.ScalarEvent):
                tag = ev.tag
                if tag is None or tag == "!":
                    tag = loader.resolve(ScalarNode, ev.value, ev.implicit)
                scalar = ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, style=ev.style)
                if ev.anchor is not None:
                    anchors[ev.anchor] = (scalar, 1)
                attach(scalar, 1)
            elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
                if len(stack) >= self.limits.max_depth:
                    raise InputError(
                        f"nested deeper than {self.limits.max_depth} levels", _line(event)
                    )
                is_seq = isinstance(event, yaml.SequenceStartEvent)
                kind = SequenceNode if is_seq else MappingNode
                tag = ev.tag
                if tag is None or tag == "!":
                    tag = loader.resolve(kind, None, ev.implicit)
                coll = kind(tag, [], ev.start_mark, None, flow_style=ev.flow_style)
                stack.append([coll, None, 1, ev.anchor])
                open_nodes.add(id(coll))
                if ev.anchor is not None:
                    anchors[ev.anchor] = (coll, 0)
            elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
                coll, _, size, anchor = stack.pop()
                coll.end_mark = ev.end_mark
                open_nodes.discard(id(coll))
                if anchor is not None:
                    anchors[anchor] = (coll, size)
                attach(coll, size)
            else:
                raise InputError(f"unexpected YAML event {type(event).__name__}", _line(event))


def _yaml_documents(text: str, limits: Limits) -> list[Any]:
    loader = _Loader(text)
    composer = _Composer(loader, limits)
    docs: list[Any] = []
    try:
        loader.get_event()  # StreamStart
        while not loader.check_event(yaml.StreamEndEvent):
            loader.get_event()  # DocumentStart
            node = composer.document()
            if node is None:
                docs.append(None)
                continue
            try:
                docs.append(loader.construct_document(node))
            except (ValueError, OverflowError, TypeError) as err:
                # A scalar the safe constructor cannot convert (the parser accepted it).
                raise InputError(
                    f"cannot read a value: {type(err).__name__}", node.start_mark.line + 1
                ) from None
    finally:
        loader.dispose()
    return docs
