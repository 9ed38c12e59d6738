"""JSON text to values, within fixed bounds, one object at a time.

The items of a root array, and of a root object's ``items`` (``kubectl get -o json`` writes one
``kind: List``), are decoded one by one by the C decoder and handed on as they are read, so the
file's objects are never held whole. Nesting is bounded (``Limits.max_depth``); an integer of
more than ``MAX_INTEGER_CHARS`` digits, ``NaN`` and ``Infinity`` leave the object holding them
out (respread.inputs.entries.LeftOut), never the file. Several JSON values one after the other
are read as kubectl reads them; text after them that is not JSON is handed back (the caller
reads it as YAML).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Generator, Iterator, Sequence
from json.scanner import make_scanner
from typing import Any

from respread.core.limits import Limits
from respread.inputs.entries import (
    LIST_ITEMS,
    InputError,
    LeftOut,
    Unreadable,
    cut_short,
    settle,
    unwrap,
)

# Longer than any int64; refused before Python converts it (which is quadratic in the digits).
MAX_INTEGER_CHARS = 400

_SPACE = re.compile(r"[ \t\n\r]*")
# After an item of an array: a comma and the space after it, or the closing bracket.
_AFTER_ITEM = re.compile(r"[ \t\n\r]*(?:(,)[ \t\n\r]*|\])")
_SOME_BAD = Unreadable("")  # unwrap() looks for the real one


class NotJson(Exception):  # noqa: N818 - a signal, not an error: the text is read as YAML
    """The text does not start with a JSON value (nothing was handed on)."""


Entries = Generator[Any, None, int]


def _stack_depth() -> int:
    frame: Any = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


class JsonReader:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.unreadable = 0  # Unreadable values made so far (a change means: look for them)
        self.handed_on = False
        self._open_list: dict[str, Any] | None = None  # a root whose items are being handed on
        self._decoder = json.JSONDecoder(parse_int=self._int, parse_constant=self._constant)
        # the C scanner raw_decode wraps (typeshed types its argument as a scanner)
        self._scan: Any = make_scanner(self._decoder)  # type: ignore[arg-type]

    def _int(self, text: str) -> Any:
        if len(text) > MAX_INTEGER_CHARS:
            self.unreadable += 1
            return Unreadable(f"an integer of {len(text)} digits is out of range")
        return int(text)

    def _constant(self, name: str) -> Any:
        self.unreadable += 1
        return Unreadable(f"{name} is not a JSON number Kubernetes accepts")

    # -------------------------------------------------------------------------------- text

    def read(self, text: str, pos: int) -> Entries:
        """The entries of the JSON values from ``pos`` on; returns where text that is not JSON
        starts (``len(text)`` when all of it was JSON). Raises NotJson when the first value
        cannot be read and nothing was handed on."""
        try:
            while pos < len(text) and text[pos] in "{[":
                if text[pos] == "{":
                    pos = yield from self._object(text, pos)
                else:
                    pos = yield from self._array(text, pos, tentative=False)
                pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        except json.JSONDecodeError as err:
            if not self.handed_on:
                raise NotJson from None
            yield from self._cut_short(f"not valid JSON at line {err.lineno}: {err.msg}")
            return len(text)
        except InputError as err:
            yield from self._cut_short(f"cannot be read: {err}")
            return len(text)
        return pos

    def _cut_short(self, why: str) -> Iterator[Any]:
        """The items read so far of a List cut short stand (kubectl writes `kind` after
        `items`: a List is taken for one unless its kind said otherwise); the rest is left out."""
        if self._open_list is not None:
            yield cut_short(self._open_list)
        yield LeftOut(None, "", f"{why} (the rest is left out)")

    def _value(self, text: str, pos: int, depth: int) -> tuple[Any, int]:
        """One value at ``pos`` (nested in ``depth`` levels), decoded by the C decoder."""
        value, end = self._decode(text, pos)
        check_depth(value, self.limits.max_depth, depth, text, pos)
        return value, end

    def _decode(self, text: str, pos: int) -> tuple[Any, int]:
        # The C decoder recurses once per level, checked against the recursion limit: a caller
        # that raised the limit (a test runner, an embedding program) would let deep input
        # overflow the C stack. Bound it just past the depth respread accepts, and restore it.
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(min(previous, _stack_depth() + self.limits.max_depth + 50))
        try:
            value, end = self._decoder.raw_decode(text, pos)
        except RecursionError:
            raise InputError(
                f"nested deeper than {self.limits.max_depth} levels", text.count("\n", 0, pos) + 1
            ) from None
        finally:
            sys.setrecursionlimit(previous)
        return value, end

    def _next(self, text: str, pos: int, close: str) -> int | None:
        """After an item: the position of the next one, or None after the closing bracket."""
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if text.startswith(",", pos):
            return _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
        if text.startswith(close, pos):
            return None
        raise json.JSONDecodeError(f"Expecting ',' delimiter or {close!r}", text, pos)

    def _array(self, text: str, pos: int, tentative: bool) -> Entries:
        """A root array, or a root object's ``items``: each item handed on as it is read (the
        loop every object of a large file goes through: the C scanner is called directly)."""
        pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
        if text.startswith("]", pos):
            return pos + 1
        if tentative:
            yield LIST_ITEMS
        above = 2 if tentative else 1
        previous = sys.getrecursionlimit()
        bound = min(previous, _stack_depth() + self.limits.max_depth + 50)
        # The recursion limit at which the C scanner itself refuses an item nested deeper than
        # allowed: items read under it need no walk of check_depth's (issue 23: the walk was a
        # tenth of a large load). Found from this frame, as _read_item scans (one below it).
        exact = _exact_limit(self._scan, previous, bound, self.limits.max_depth - above)
        depth = _stack_depth()  # a generator resumed from elsewhere would count otherwise
        after_item = _AFTER_ITEM.match
        while True:
            before = self.unreadable
            here = exact if exact is None or _stack_depth() == depth else None
            value, end, checked = self._read_item(text, pos, previous, bound, here)
            self.handed_on = True
            bad = self.unreadable != before
            yield from self._item(value, bad, above, (text, pos), checked=checked)
            following = after_item(text, end)
            if following is None:
                raise json.JSONDecodeError("Expecting ',' delimiter or ']'", text, end)
            if following.group(1) is None:
                return following.end()
            pos = following.end()

    def _read_item(
        self, text: str, pos: int, previous: int, bound: int, exact: int | None
    ) -> tuple[Any, int, bool]:
        """One item by the C scanner: (value, end, whether the scanner bounded its depth). An
        item deeper than the exact limit is read again under the loose bound, to be left out
        alone (check_depth names it); one deeper than that ends the reading."""
        scan = self._scan
        sys.setrecursionlimit(exact or bound)  # see _decode
        try:
            value, end = scan(text, pos)
            return value, end, exact is not None
        except StopIteration:
            raise json.JSONDecodeError("Expecting value", text, pos) from None
        except RecursionError:
            if exact is None:
                raise InputError(f"nested deeper than {self.limits.max_depth} levels") from None
        finally:
            sys.setrecursionlimit(previous)
        sys.setrecursionlimit(bound)
        try:
            value, end = scan(text, pos)
        except RecursionError:
            raise InputError(f"nested deeper than {self.limits.max_depth} levels") from None
        finally:
            sys.setrecursionlimit(previous)
        return value, end, False

    def _item(
        self, value: Any, bad: bool, above: int, at: tuple[str, int], *, checked: bool = False
    ) -> Sequence[Any]:
        """The entries of an item just read: itself, the items of a List it is, or a LeftOut
        for it alone (nested too deep, a number JSON cannot hold). ``checked``: the scanner
        refused anything nested deeper than allowed, so the item needs no walk."""
        kind = value.get("kind") if type(value) is dict else None
        listed = type(kind) is str and kind.endswith("List")
        if not bad and not listed and (checked or _shallow(value, self.limits.max_depth - above)):
            return (value,)  # the common case, without a walk or a generator
        try:
            check_depth(value, self.limits.max_depth, above, *at)
        except InputError as err:
            return (LeftOut(value if isinstance(value, dict) else None, "", str(err)),)
        return list(unwrap(value, _SOME_BAD if bad else None))

    def _object(self, text: str, pos: int) -> Entries:
        """A root object; a ``kind: List``'s items are handed on one by one."""
        root: dict[str, Any] = {}
        streamed = bad = False
        pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
        following: int | None = pos if not text.startswith("}", pos) else None
        while following is not None:
            key, pos = self._key(text, following)
            if key == "items" and text.startswith("[", pos) and not streamed:
                streamed = True
                self._open_list = root
                pos = yield from self._array(text, pos, tentative=True)
            else:
                before = self.unreadable
                root[key], pos = self._value(text, pos, 1)
                bad = bad or self.unreadable != before
            following = self._next(text, pos, "}")
        self.handed_on = True
        self._open_list = None
        yield from self._settle(root, streamed, bad)
        return _SPACE.match(text, pos).end() + 1  # type: ignore[union-attr]

    def _key(self, text: str, pos: int) -> tuple[str, int]:
        if not text.startswith('"', pos):
            raise json.JSONDecodeError(
                "Expecting property name enclosed in double quotes", text, pos
            )
        key, pos = self._decoder.raw_decode(text, pos)
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if not text.startswith(":", pos):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
        return key, _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]

    def _settle(self, root: dict[str, Any], streamed: bool, bad: bool) -> Iterator[Any]:
        marker = _SOME_BAD if bad else None
        if streamed:
            yield from settle(root, marker)
        else:
            yield from unwrap(root, marker)


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def _exact_limit(scan: Any, previous: int, bound: int, room: int) -> int | None:
    """The recursion limit under which ``scan``, called from a frame as deep as this one,
    reads ``room`` nested levels and refuses one more; None where the scanner does not follow
    the recursion limit so (then every deep item is walked, as before). Searched through
    ``_reads``, one frame below this one; checked from this frame."""
    if room < 1 or bound - 2 <= room:
        return None
    sys.setrecursionlimit(bound)
    try:
        if _reads(scan, room + 60):
            return None
        low, high = 0, room + 60  # reads ``low`` levels; refuses ``high``
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if _reads(scan, middle) else (low, middle)
        limit = bound - (low + 1 - room)  # from here, one frame fewer above the scan: one more
        if not 2 <= limit <= bound:
            return None
        sys.setrecursionlimit(limit)
        scan(_nested(room), 0)  # from this frame, as deep as the items' scans
        try:
            scan(_nested(room + 1), 0)
        except RecursionError:
            return limit
        return None
    except RecursionError:
        return None
    finally:
        sys.setrecursionlimit(previous)


def _reads(scan: Any, levels: int) -> bool:
    try:
        scan(_nested(levels), 0)
    except RecursionError:
        return False
    return True


_WIDE = 64  # keys: an object wider than this is checked by check_depth's walk


def _shallow(doc: Any, room: int) -> bool:
    """True for an object surely within ``room`` levels: a small one whose values are no
    containers (``{}``, most of a hostile List), known without check_depth's walk; False means:
    walk it."""
    if type(doc) is not dict or room < 1 or len(doc) > _WIDE:
        return False
    for child in doc.values():
        kind = type(child)
        if kind is dict or kind is list:
            return False
    return True


def check_depth(doc: Any, max_depth: int, above: int = 0, text: str = "", pos: int = 0) -> None:
    """Refuse containers nested deeper than ``max_depth`` levels, counting ``above`` levels
    that hold ``doc``; the line is that of ``pos`` in ``text``. Level by level, iteratively (no
    recursion), and only containers are looked at twice: this walk runs over every value read."""
    level = [doc] if type(doc) is dict or type(doc) is list else []
    depth = above + 1
    while level:
        if depth > max_depth:
            line = text.count("\n", 0, pos) + 1 if text else None
            raise InputError(f"nested deeper than {max_depth} levels", line)
        below = []
        for node in level:
            for child in node.values() if type(node) is dict else node:
                kind = type(child)
                if kind is dict or kind is list:
                    below.append(child)
        level, depth = below, depth + 1
