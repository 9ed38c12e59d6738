"""A custom resource checked against its structural schema, as the API server checks it.

What kube-apiserver does to a custom resource on create with strict field validation (the
default of ``kubectl create`` and ``kubectl apply``), minus the CEL rules (their equivalents are
the caller's to check), in its order:

1. unknown fields are refused, each named (``unknown field "spec.eviction.maxPerRunn"``);
2. a null where the schema does not say ``nullable: true`` is dropped, as if absent;
3. defaults are filled in for absent fields, recursively (a defaulted ``{}`` gets its fields'
   defaults too);
4. types and bounds: ``integer`` (a float with no fraction, such as ``5.0``, is that integer;
   beyond int64 is refused; ``format`` is not enforced, as the API server does not enforce it
   on custom resources), ``minimum``/``maximum``, ``enum``,
   ``minLength``/``maxLength`` (in characters), ``pattern``, ``minItems``/``maxItems``,
   ``maxProperties``, ``required``, and the uniqueness of ``x-kubernetes-list-type: map`` keys.

``metadata`` is checked as ObjectMeta is: a name or generateName, the name a DNS subdomain,
labels and annotations maps of strings, no unknown field.

Pure: ``check`` returns the defaulted copy, or raises SchemaError naming the first field at fault.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from copy import deepcopy
from typing import Any

from respread.core.limits import INT64_MAX, INT64_MIN, shown


class SchemaError(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


_TYPE_NAMES = {
    "object": "object",
    "array": "array",
    "string": "string",
    "integer": "integer",
    "boolean": "boolean",
    "number": "number",
}


def check(schema: Mapping[str, Any], obj: Any) -> dict[str, Any]:
    """The object as the API server would store it; SchemaError if it would refuse it."""
    if not isinstance(obj, dict):
        raise SchemaError("", "expected an object")
    value = _walk(schema, obj, "")
    _metadata(value.get("metadata"))
    result: dict[str, Any] = value
    return result


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(schema: Mapping[str, Any], value: Any, path: str) -> Any:
    if value is None:
        if schema.get("nullable"):
            return None
        raise SchemaError(
            path, f"must be of type {_TYPE_NAMES.get(schema.get('type', ''), 'a value')}, got null"
        )
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return value
    kind = schema.get("type")
    if kind == "object":
        return _object(schema, value, path)
    if kind == "array":
        return _array(schema, value, path)
    if kind == "string":
        return _string(schema, value, path)
    if kind == "integer":
        return _integer(schema, value, path)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise SchemaError(path, f"must be of type boolean, got {shown(value)}")
        return value
    return value


def _object(schema: Mapping[str, Any], value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaError(path, f"must be of type object, got {shown(value)}")
    props: Mapping[str, Any] = schema.get("properties", {})
    out = _fields(schema, props, value, path)
    for key, sub in props.items():
        if key not in out and "default" in sub:
            out[key] = _walk(sub, deepcopy(sub["default"]), _join(path, key))
    for key in schema.get("required", ()):
        if key not in out:
            raise SchemaError(_join(path, key), "Required value")
    if "maxProperties" in schema and len(out) > schema["maxProperties"]:
        raise SchemaError(path, f"must have at most {schema['maxProperties']} properties")
    return out


def _fields(
    schema: Mapping[str, Any], props: Mapping[str, Any], value: dict[Any, Any], path: str
) -> dict[str, Any]:
    """The fields present, each checked by its schema: a null where the schema does not allow
    one is dropped (to be defaulted), an unknown field refused unless the schema keeps them."""
    extra = schema.get("additionalProperties")
    preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise SchemaError(path, f"field names must be strings, got {shown(key)}")
        where = _join(path, key if len(key) <= 80 else shown(key)[1:-1])
        if key in props:
            sub = props[key]
            if item is None and not sub.get("nullable"):
                continue  # dropped, then defaulted below
            out[key] = _walk(sub, item, where)
        elif isinstance(extra, dict):
            out[key] = _walk(extra, item, where)
        elif preserve or path == "metadata":
            out[key] = item
        else:
            raise SchemaError(where, f'unknown field "{where}"')
    return out


# The bounds of a type's size or value, in the API server's order and words: the keyword, how a
# value falls outside it, and the message.
_BOUNDS: dict[str, tuple[tuple[str, Callable[[int, int], bool], str], ...]] = {
    "array": (
        ("maxItems", operator.gt, "must have at most {} items"),
        ("minItems", operator.lt, "must have at least {} items"),
    ),
    "string": (
        ("maxLength", operator.gt, "may not be longer than {} characters"),
        ("minLength", operator.lt, "should be at least {} characters long"),
    ),
    "integer": (
        ("minimum", operator.lt, "should be greater than or equal to {}"),
        ("maximum", operator.gt, "should be less than or equal to {}"),
    ),
}


def _within_bounds(kind: str, schema: Mapping[str, Any], measure: int, path: str) -> None:
    for keyword, beyond, message in _BOUNDS[kind]:
        if keyword in schema and beyond(measure, schema[keyword]):
            raise SchemaError(path, message.format(schema[keyword]))


def _array(schema: Mapping[str, Any], value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise SchemaError(path, f"must be of type array, got {shown(value)}")
    _within_bounds("array", schema, len(value), path)
    items = schema.get("items", {})
    out = [_walk(items, item, f"{path}[{i}]") for i, item in enumerate(value)]
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") == "map" and keys:
        seen: set[tuple[Any, ...]] = set()
        for i, item in enumerate(out):
            key = tuple(repr(item.get(k)) for k in keys) if isinstance(item, dict) else ()
            if key in seen:
                raise SchemaError(f"{path}[{i}]", "Duplicate value")
            seen.add(key)
    elif schema.get("x-kubernetes-list-type") == "set" and len({repr(v) for v in out}) != len(out):
        raise SchemaError(path, "Duplicate value")
    return out


def _string(schema: Mapping[str, Any], value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise SchemaError(path, f"must be of type string, got {shown(value)}")
    _within_bounds("string", schema, len(value), path)
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError(path, f"must be one of {', '.join(schema['enum'])}, got {shown(value)}")
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value, re.ASCII) is None:
        raise SchemaError(path, f"should match '{pattern}', got {shown(value)}")
    return value


def _integer(schema: Mapping[str, Any], value: Any, path: str) -> int:
    if isinstance(value, bool):
        raise SchemaError(path, f"must be of type integer, got {shown(value)}")
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        value = int(value)  # JSON has one number type: 5.0 is the integer 5
    if not isinstance(value, int):
        raise SchemaError(path, f"must be of type integer, got {shown(value)}")
    # JSON numbers beyond int64 do not decode as integers; `format` (int32) is not enforced
    # for custom resources, so a schema says `maximum` where it means it.
    if not INT64_MIN <= value <= INT64_MAX:
        raise SchemaError(path, f"out of range for an int64: {shown(value)}")
    _within_bounds("integer", schema, value, path)
    return value


# ObjectMeta as a client may send it (status-like fields the server sets are accepted too).
_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def _metadata(meta: Any) -> None:
    if meta is None:
        raise SchemaError("metadata.name", "Required value: name or generateName is required")
    if not isinstance(meta, dict):
        raise SchemaError("metadata", f"must be of type object, got {shown(meta)}")
    for key in meta:
        if key not in _META_FIELDS:
            raise SchemaError(f"metadata.{shown(key, 60).strip(chr(39))}", "unknown field")
    name, generate = meta.get("name"), meta.get("generateName")
    if name is None and generate is None:
        raise SchemaError("metadata.name", "Required value: name or generateName is required")
    for key, value in (("name", name), ("generateName", generate)):
        if value is not None:
            _object_name(key, value)
    for key in ("labels", "annotations"):
        _string_map(meta.get(key), f"metadata.{key}", labels=key == "labels")


def _object_name(key: str, value: Any) -> None:
    """A name, or a generateName (a name's prefix), is a DNS subdomain."""
    if not isinstance(value, str):
        raise SchemaError(f"metadata.{key}", f"must be a string, got {shown(value)}")
    candidate = value if key == "name" else value.rstrip("-") or "a"
    if len(value) > 253 or not _DNS_SUBDOMAIN.fullmatch(candidate):
        raise SchemaError(
            f"metadata.{key}",
            f"a lowercase RFC 1123 subdomain of at most 253 characters, got {shown(value)}",
        )


def _string_map(value: Any, path: str, labels: bool) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise SchemaError(path, f"must be a map of strings, got {shown(value)}")
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise SchemaError(path, f"must be a map of strings, got {shown(k)}: {shown(v)}")
        prefix, _, name = k.rpartition("/")
        if not _LABEL_NAME.fullmatch(name) or len(name) > 63 or len(prefix) > 253:
            raise SchemaError(f"{path}.{shown(k, 60)[1:-1]}", "not a qualified name")
        if prefix and not _DNS_SUBDOMAIN.fullmatch(prefix):
            raise SchemaError(f"{path}.{shown(k, 60)[1:-1]}", "not a qualified name")
        if labels and (len(v) > 63 or not _LABEL_VALUE.fullmatch(v)):
            raise SchemaError(
                f"{path}.{shown(k, 60)[1:-1]}", f"not a valid label value: {shown(v)}"
            )
