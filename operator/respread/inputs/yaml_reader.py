"""YAML text to values, from libyaml's parser events, within fixed bounds, as kubectl reads it.

No node tree is built (PyYAML's composer recurses, and holds a tree several times the size of
the values): values are built here, iteratively, straight from the events. Scalars are resolved
as kubectl resolves them (respread.inputs.scalars); merge keys (``<<``) are applied where they
stand, as go-yaml v2 applies them; tags on mappings and sequences are ignored, as it ignores
them. Nesting deeper than ``Limits.max_depth``, more aliases than ``Limits.max_aliases``, aliases
standing for more than ``Limits.max_alias_nodes`` nodes (an alias bomb), more anchors than
``Limits.max_anchors``, and an alias inside the node it names, are refused before anything is
built from them.

A value that cannot be read (``!!bool maybe``, ``.inf``, a key that is a mapping) leaves only the
object holding it out (respread.inputs.entries.LeftOut, with the field); the items of a root
sequence, and of a root mapping's ``items``, are handed on one by one as they are read, so a
``kind: List`` is never held whole.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import yaml

from respread.core.limits import Limits, shown
from respread.inputs import scalars
from respread.inputs.entries import (
    LIST_ITEMS,
    InputError,
    LeftOut,
    Settled,
    Unreadable,
    cut_short,
    field_path,
    kind_is_list,
    settle,
    unwrap,
)

# libyaml's parser (the C one PyYAML's CSafeLoader is built on), for its events alone.
_Parser: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_NO_KEY = object()
_MERGE = object()  # the `<<` key of a mapping
_MISS = object()
_HANDED_ON = object()  # in place of a root mapping's `items` whose items were handed on
_SETTLED, _TENTATIVE = 1, 2  # how the items of a sequence are handed on, one by one
_CACHED_CHARS = 64
_CACHE_SIZE = 100_000


class _Failed:
    """A plain scalar that cannot be read (cached like a value; an Unreadable per use)."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class _Frame:
    """An open sequence or mapping."""

    __slots__ = ("anchor", "bad", "count", "items", "key", "size", "start", "stream", "streamed")

    def __init__(self, items: Any, anchor: str | None, start: Any, stream: int) -> None:
        self.items = items
        self.anchor = anchor
        self.start = start  # its start event, for messages
        self.key: Any = _NO_KEY  # a mapping's key waiting for its value
        self.size = 1  # nodes, for the alias bound
        self.count = 0  # a sequence's items so far (handed on or kept)
        self.bad: Unreadable | None = None  # the first unreadable value inside
        self.stream = stream
        self.streamed = False  # a root mapping whose `items` were handed on one by one

    def component(self) -> str | None:
        """This collection's part of a path: the key being read, or the item's index."""
        if type(self.items) is list:
            return f"[{self.count}]"
        key = self.key
        return key if isinstance(key, str) else None


class YamlReader:
    """Reads the YAML documents of one file; the alias and anchor bounds hold for the file."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.aliases = 0
        self.alias_nodes = 0
        self.anchor_count = 0
        self._cache: dict[str, Any] = {}
        self._offset = 0  # lines before the text being read
        self._stack: list[_Frame] = []
        self._anchors: dict[str, tuple[Any, int, bool, Unreadable | None]] = {}
        self._streamed_root = False  # the root mapping just closed had its items handed on

    # ----------------------------------------------------------------------------- entries

    def read(
        self, text: str, line_offset: int = 0, alone: bool = False
    ) -> Generator[Any, None, int | None]:
        """The entries of every document in ``text`` (which starts at line ``line_offset``+1).

        Where a document cannot be read (not YAML, or beyond the bounds), the reading of
        ``text`` stops and where to read on is returned (else None): that document's start, to
        be read alone (by a parser of its own, which says what is wrong with it and nothing
        else), if nothing of it was handed on for good (``alone`` False); else, with a LeftOut
        naming the line, the start of the document after it."""
        self._offset = line_offset
        self._document_start = 0
        self._handed_for_good = False  # items of a root sequence of the current document
        parser = _Parser(text)
        try:
            parser.get_event()  # StreamStart
            while not parser.check_event(yaml.StreamEndEvent):
                self._document_start = parser.get_event().start_mark.index  # DocumentStart
                self._stack, self._anchors, self._streamed_root = [], {}, False
                self._handed_for_good = False
                yield from self._document(parser.get_event)
        except (yaml.YAMLError, InputError) as err:
            if not alone and not self._handed_for_good:
                if self._stack and self._stack[0].streamed:
                    yield Settled(False, None)  # its items, read again alone
                return self._document_start
            yield from self._failed(err, text)
            return next_document(text, self._document_start)
        finally:
            parser.dispose()
        return None

    def _failed(self, err: Exception, text: str) -> Iterator[Any]:
        root = self._stack[0] if self._stack else None
        if root is not None and root.streamed:
            # The items read so far stand; kubectl writes `kind` after `items`, so a List cut
            # short is taken for one unless its kind said otherwise.
            yield cut_short(root.items)
        start = root.start.start_mark.line + 1 + self._offset if root is not None else None
        where = (
            f" (in the document at line {start}; what follows the error in it is left out)"
            if start
            else ""
        )
        yield LeftOut(None, "", f"{problem(err, text, self._offset)}{where}")

    def _document(self, get_event: Any) -> Iterator[Any]:
        """The entries of one document (its DocumentStart already read)."""
        stack = self._stack
        scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
        starts = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
        ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
        while True:
            ev = get_event()
            cls = type(ev)
            if cls is scalar:
                if self._stored(ev):
                    continue
                value, size, bad = self._scalar(ev)
            elif cls in starts:
                self._open(ev, cls is yaml.SequenceStartEvent)
                continue
            elif cls in ends:
                value, size, bad, ev = self._close()
            elif cls is alias:
                value, size, bad = self._alias(ev)
            elif cls is yaml.DocumentEndEvent:
                return
            else:
                raise InputError(f"unexpected YAML event {cls.__name__}", self._line(ev))
            if stack:
                handed = self._attach(stack[-1], value, size, bad, ev)
                if handed is not None:
                    yield from handed
            else:
                yield from self._root(value, bad)

    def _stored(self, ev: Any) -> bool:
        """The common case, fast: a string, untagged and unanchored, as a mapping's key or
        value (most of kubectl's output); whether it was stored."""
        if ev.tag is not None or ev.anchor is not None or not self._stack:
            return False
        frame = self._stack[-1]
        value = self._cache.get(ev.value) if ev.implicit[0] else ev.value
        if type(value) is not str or type(frame.items) is not dict or frame.key is _MERGE:
            return False
        frame.size += 1
        if frame.key is _NO_KEY:
            frame.key = value
        else:
            frame.items[frame.key] = value
            frame.key = _NO_KEY
        return True

    def _root(self, value: Any, bad: Unreadable | None) -> Iterator[Any]:
        if not self._streamed_root:
            yield from unwrap(value, bad)
            return
        self._streamed_root = False
        if value.get("items") is _HANDED_ON:
            del value["items"]
        yield from settle(value, bad)

    # ------------------------------------------------------------------------------ values

    def _line(self, ev: Any) -> int:
        line: int = ev.start_mark.line + 1 + self._offset
        return line

    def _unreadable(self, message: str, ev: Any) -> Unreadable:
        path = tuple(c for c in (f.component() for f in self._stack) if c is not None)
        return Unreadable(f"{message} at line {self._line(ev)}", path)

    def _plain(self, text: str) -> Any:
        hit = self._cache.get(text, _MISS)
        if hit is not _MISS:
            return hit
        try:
            value = _MERGE if text == "<<" else scalars.plain(text)
        except scalars.ScalarError as err:
            value = _Failed(str(err))
        if len(text) <= _CACHED_CHARS:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[text] = value
        return value

    def _scalar(self, ev: Any) -> tuple[Any, int, Unreadable | None]:
        tag = ev.tag
        if tag is None:
            value = self._plain(ev.value) if ev.implicit[0] else ev.value
        elif ev.value == "<<" and (ev.implicit[0] or tag == scalars.MERGE):  # `! <<` too
            value = _MERGE
        else:
            try:
                value = scalars.tagged(tag, ev.value)
            except scalars.ScalarError as err:
                value = _Failed(str(err))
        bad = None
        if type(value) is _Failed:
            value = bad = self._unreadable(value.message, ev)
        if ev.anchor is not None:
            self._anchor(ev.anchor, (value, 1, False, bad), ev)
        return value, 1, bad

    def _anchor(self, name: str, entry: tuple[Any, int, bool, Unreadable | None], ev: Any) -> None:
        if name not in self._anchors:
            self.anchor_count += 1
            if self.anchor_count > self.limits.max_anchors:
                raise InputError(
                    f"more than {self.limits.max_anchors} YAML anchors", self._line(ev)
                )
        self._anchors[name] = entry

    def _alias(self, ev: Any) -> tuple[Any, int, Unreadable | None]:
        target = self._anchors.get(ev.anchor)
        if target is None:
            raise InputError(f"undefined alias {shown(ev.anchor)}", self._line(ev))
        value, size, still_open, bad = target
        if still_open:
            raise InputError(f"alias {shown(ev.anchor)} refers to itself", self._line(ev))
        self.aliases += 1
        self.alias_nodes += size
        if self.aliases > self.limits.max_aliases:
            raise InputError(f"more than {self.limits.max_aliases} YAML aliases", self._line(ev))
        if self.alias_nodes > self.limits.max_alias_nodes:
            raise InputError(
                f"YAML aliases expand to more than {self.limits.max_alias_nodes} nodes",
                self._line(ev),
            )
        return value, size, bad

    # -------------------------------------------------------------------------- collections

    def _open(self, ev: Any, is_seq: bool) -> None:
        stack = self._stack
        if len(stack) >= self.limits.max_depth:
            raise InputError(f"nested deeper than {self.limits.max_depth} levels", self._line(ev))
        stream = 0
        if is_seq and ev.anchor is None:
            if not stack:
                stream = _SETTLED
            elif len(stack) == 1 and stack[0].key == "items" and not stack[0].streamed:
                stream = _TENTATIVE
                stack[0].streamed = True
        stack.append(_Frame([] if is_seq else {}, ev.anchor, ev, stream))
        if ev.anchor is not None:
            self._anchor(ev.anchor, (None, 0, True, None), ev)

    def _close(self) -> tuple[Any, int, Unreadable | None, Any]:
        done = self._stack.pop()
        if done.anchor is not None:
            self._anchors[done.anchor] = (done.items, done.size, False, done.bad)
        self._streamed_root = done.streamed
        items = _HANDED_ON if done.stream == _TENTATIVE else done.items
        return items, done.size, done.bad, done.start

    def _attach(
        self, frame: _Frame, value: Any, size: int, bad: Unreadable | None, ev: Any
    ) -> list[Any] | None:
        """Adds a value to the open collection: a sequence's next item (or hands it on), or a
        mapping's next key, its value, or the mappings of a merge key. Returns what is handed
        on, if anything."""
        frame.size += size
        items = frame.items
        if type(items) is list:
            if value is _MERGE:
                value = "<<"
            if frame.stream:
                return self._hand_on(frame, value, bad)
            items.append(value)
            frame.count += 1
        elif frame.key is _NO_KEY:
            self._key(frame, value, ev)
            return None
        elif frame.key is _MERGE:
            self._merge(frame, value, ev)
        else:
            items[frame.key] = "<<" if value is _MERGE else value
            frame.key = _NO_KEY
        if bad is not None and frame.bad is None:
            frame.bad = bad
        return None

    def _key(self, frame: _Frame, value: Any, ev: Any) -> None:
        if value is _MERGE:
            frame.key = _MERGE
            return
        try:
            if isinstance(value, dict | list):
                raise scalars.ScalarError(f"a mapping key that is a {type(value).__name__}")
            if type(ev) is yaml.ScalarEvent and (type(value) is int or type(value) is Unreadable):
                # A float's key keeps the float's text (an integral one is no integer, and an
                # infinity is a key JSON can hold). Quoted scalars are strings: never here.
                value = scalars.raw_key(ev.tag, ev.value)
            frame.key = scalars.key_text(value)
        except scalars.ScalarError as err:
            frame.key = self._unreadable(str(err), ev)
            frame.bad = frame.bad or frame.key

    def _merge(self, frame: _Frame, value: Any, ev: Any) -> None:
        """go-yaml v2's merge: the merged keys are set where ``<<`` stands (keys after it win,
        keys before it are overwritten); of a list of mappings, the first wins."""
        frame.key = _NO_KEY
        if isinstance(value, dict):
            group = [value]
        elif isinstance(value, list) and all(isinstance(m, dict) for m in value):
            group = value
        else:
            marker = self._unreadable("map merge requires map or sequence of maps as the value", ev)
            frame.items[marker] = None
            frame.bad = frame.bad or marker
            return
        for mapping in reversed(group):
            frame.items.update(mapping)

    def _hand_on(self, frame: _Frame, value: Any, bad: Unreadable | None) -> list[Any]:
        depth = len(self._stack)  # the item's own parts of a path start after the sequence's
        first = frame.stream == _TENTATIVE and frame.count == 0
        self._handed_for_good = self._handed_for_good or frame.stream == _SETTLED
        frame.count += 1
        entries: list[Any]
        if bad is not None:
            doc = value if isinstance(value, dict) else None
            entries = [LeftOut(doc, field_path(bad.path[depth:]), bad.message)]
        elif type(value) is dict and not kind_is_list(value):
            entries = [value]  # the common case, without unwrap's generator
        else:
            entries = list(unwrap(value, None))
        return [LIST_ITEMS, *entries] if first else entries


def next_document(text: str, pos: int) -> int:
    """Where the document after the one at ``pos`` starts: the next line that is ``---``
    (alone or followed by a space), as kubectl splits documents; ``len(text)`` if none."""
    found = text.find("\n---", pos)
    while found != -1:
        after = found + 4
        if after == len(text) or text[after] in " \t\r\n":
            return found + 1
        found = text.find("\n---", after)
    return len(text)


def problem(err: Exception, text: str = "", offset: int = 0) -> str:
    """One line for a YAML or input error: the parser's reason (cut) and the line."""
    if isinstance(err, InputError):
        return f"cannot be read: {err}"
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    line = mark.line if mark is not None else None
    position = getattr(err, "position", None)  # a ReaderError: a character's index
    if line is None and isinstance(position, int):
        line = text.count("\n", 0, position)
    where = f" at line {line + 1 + offset}" if line is not None else ""
    reason = getattr(err, "problem", None) or getattr(err, "reason", None)
    why = f": {shown(reason)[1:-1]}" if isinstance(reason, str) and reason else ""
    return f"not valid YAML{where}{why}"
