"""What the readers of YAML and JSON text hand on: objects, and what could not be read of them.

``respread.inputs.documents.read_documents`` yields, in text order:

- a value read whole (normally an object: a mapping);
- ``LeftOut``: an object, or a stretch of text, that cannot be read, and why; only that is left
  out, never the rest of the file;
- ``LIST_ITEMS``: the values that follow, up to the next ``Settled``, are the items of a root
  mapping's ``items``, handed on as soon as they are read (so that a 500 MB ``kind: List`` is
  never held whole) but before the mapping's ``kind`` says whether it is a List (kubectl writes
  ``items`` before ``kind``);
- ``Settled(is_list, root)``: what the items since ``LIST_ITEMS`` were: a List's items
  (``is_list``), or not (then ``root`` is the mapping itself, or None when it is dropped).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple


class InputError(ValueError):
    """A text that cannot be read as YAML or JSON within the limits; ``line`` is 1-based."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line

    def __str__(self) -> str:
        return f"{self.message} at line {self.line}" if self.line else self.message


class Unreadable:
    """A value that cannot be read (a bad tag, a number JSON cannot hold), put where the value
    was so that the object holding it is left out, named, with the field at fault."""

    __slots__ = ("message", "path")

    def __init__(self, message: str, path: tuple[str, ...] = ()) -> None:
        self.message = message
        self.path = path  # from the document's root: keys, and "[i]" for list items

    def __repr__(self) -> str:
        return f"<unreadable: {self.message}>"


@dataclass(frozen=True, slots=True)
class LeftOut:
    """An object that cannot be read (``doc``: what was read of it, for its kind and name), or
    a stretch of text (``doc`` None); ``field`` is the path of the value at fault, if known."""

    doc: Any
    field: str
    message: str


class _ListItems:
    def __repr__(self) -> str:
        return "LIST_ITEMS"


LIST_ITEMS: Any = _ListItems()


class Settled(NamedTuple):
    is_list: bool
    root: Any  # when not a List: the mapping, handed on in place of its items (or None)


def field_path(parts: tuple[str, ...]) -> str:
    """``("spec", "containers", "[0]", "env")`` -> ``spec.containers[0].env``."""
    out = ""
    for part in parts:
        out += part if part.startswith("[") or not out else f".{part}"
    return out


def first_unreadable(value: Any) -> tuple[tuple[str, ...], Unreadable] | None:
    """The first Unreadable inside ``value`` and its path from ``value`` (iteratively: the
    depth was bounded when it was read), or None."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, Unreadable):
            return path, node
        if isinstance(node, dict):
            for key, child in reversed(node.items()):
                if isinstance(key, Unreadable):
                    return path, key
                stack.append((child, (*path, str(key))))
        elif isinstance(node, list):
            stack.extend((child, (*path, f"[{i}]")) for i, child in reversed(list(enumerate(node))))
    return None


def kind_is_list(mapping: dict[Any, Any]) -> bool:
    kind = mapping.get("kind")
    return isinstance(kind, str) and kind.endswith("List")


def cut_short(root: Any) -> Settled:
    """What the items read so far of a root cut short were: they stand, and kubectl writes
    `kind` after `items`, so a List cut short is taken for one unless its kind said otherwise."""
    kind = root.get("kind") if isinstance(root, dict) else None
    return Settled(not isinstance(kind, str) or kind.endswith("List"), None)


def settle(root: dict[Any, Any], bad: Unreadable | None) -> Iterator[Any]:
    """What the items of a root mapping's ``items``, handed on one by one, were, once the rest
    of it is read: a List's, or those of one object (``root``, or its LeftOut where ``bad``
    says an unreadable value may be in it). A second ``items`` read whole wins."""
    if "items" in root:
        yield Settled(False, None)
        yield from unwrap(root, bad)
        return
    if kind_is_list(root):
        yield Settled(True, None)
        return
    found = first_unreadable(root) if bad is not None else None
    if found is None:
        yield Settled(False, root)
        return
    yield Settled(False, LeftOut(root, field_path(found[0]), found[1].message))


def unwrap(value: Any, bad: Unreadable | None) -> Iterator[Any]:
    """The objects of a value read whole: the items of a list or a ``kind: List`` (nested
    ones too), or the value itself; each one holding an unreadable value becomes a LeftOut."""
    if value is None:
        return
    if isinstance(value, list) or (
        isinstance(value, dict) and kind_is_list(value) and isinstance(value.get("items"), list)
    ):
        for item in value if isinstance(value, list) else value["items"]:
            yield from unwrap(item, bad)
        return
    if bad is None:
        yield value
        return
    found = first_unreadable(value)
    if found is None:
        yield value
        return
    path, marker = found
    yield LeftOut(value if isinstance(value, dict) else None, field_path(path), marker.message)
