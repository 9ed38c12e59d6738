"""Reading a descheduler policy's fields (errors name them), and the draft being converted."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from respread.core.limits import printable, shown
from respread.inputs.objects import FieldError, label_selector

V1ALPHA2, V1ALPHA1 = "descheduler/v1alpha2", "descheduler/v1alpha1"
POLICY_KIND = "DeschedulerPolicy"
SPREAD = "RemovePodsViolatingTopologySpreadConstraint"
EVICTOR = "DefaultEvictor"
CONSTRAINT_KINDS = ("DoNotSchedule", "ScheduleAnyway")
CONFIGMAP_KEY = "policy.yaml"  # where the descheduler's Helm chart puts the policy
ANNOTATION = "respread.io/converted-from"

Path = tuple[str, ...]


class ConversionError(ValueError):
    """The descheduler policy cannot be converted; the message names the field."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(printable(f"{where}: {problem}" if where else problem))


@dataclass(frozen=True, slots=True)
class Note:
    """A comment for the output: ``path`` is the RebalancePolicy field it sits above
    (() for the document's head)."""

    path: Path
    text: str


@dataclass(frozen=True, slots=True)
class Conversion:
    manifest: dict[str, Any]
    notes: tuple[Note, ...]


def at(where: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def mapping(value: object, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConversionError(where, f"expected a mapping, got {shown(value)}")
    return value


def listed(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConversionError(where, f"expected a list, got {shown(value)}")
    return value


def strings(value: object, where: str) -> list[str]:
    items = listed(value, where)
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item:
            raise ConversionError(at(where, i), f"expected a non-empty string, got {shown(item)}")
    return items


def flag(value: object, where: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConversionError(where, f"expected true or false, got {shown(value)}")
    return value


def count(value: object, where: str) -> int | None:
    """A descheduler *uint (nil: no limit)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConversionError(where, f"expected a non-negative integer, got {shown(value)}")
    return value


def label_selector_of(value: object, where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        label_selector(value, where)
    except FieldError as err:
        raise ConversionError(err.path, err.message) from None
    return dict(mapping(value, where))


def unknown_fields(args: Mapping[str, Any], known: Iterable[str], where: str) -> list[Note]:
    extra = sorted(str(k) for k in args if k not in set(known))
    return [
        Note((), f"{at(where, k)} is not a field the descheduler knows; ignored, as it ignores it")
        for k in extra
    ]


# --------------------------------------------------------------------------- the spec, by parts


@dataclass
class Draft:
    """The RebalancePolicy spec being built, section by section, with its notes."""

    selector: dict[str, Any] = field(default_factory=dict)
    constraints: dict[str, Any] = field(default_factory=dict)
    eviction: dict[str, Any] = field(default_factory=dict)
    protections: dict[str, bool] = field(
        default_factory=lambda: {
            "localStorage": True,
            "persistentVolumeClaims": False,
            "systemCritical": True,
        }
    )
    require_fit: list[bool] = field(default_factory=list)
    pod_selectors: list[dict[str, Any]] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    def note(self, path: Path, text: str) -> None:
        self.notes.append(Note(path, text))


EVICTION = ("spec", "eviction")
PROTECTIONS = (*EVICTION, "protections")
