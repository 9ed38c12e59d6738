"""The profiles that enable the spread plugin, each converted into a draft."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from respread.core.limits import shown
from respread.inputs.descheduler.evictor import evictor_args
from respread.inputs.descheduler.fields import (
    EVICTOR,
    SPREAD,
    ConversionError,
    Draft,
    at,
    listed,
    mapping,
    strings,
)
from respread.inputs.descheduler.plugin import spread_args, top_level
from respread.inputs.descheduler.spec import SEMANTICS


@dataclass(frozen=True, slots=True)
class Profile:
    """One profile that enables the spread plugin: its name, where it is, its plugins' args."""

    name: str
    spread: tuple[str, Mapping[str, Any]]  # (where its args are, the args)
    evictor: tuple[str, Mapping[str, Any]]
    others: tuple[str, ...]
    evictor_name: str = EVICTOR


def _plugin_args(configs: list[Any], where: str) -> dict[str, tuple[str, Mapping[str, Any]]]:
    found: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for i, raw in enumerate(configs):
        spot = at(where, i)
        entry = mapping(raw, spot)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise ConversionError(at(spot, "name"), f"expected a plugin name, got {shown(name)}")
        found[name] = (at(spot, "args"), mapping(entry.get("args"), at(spot, "args")))
    return found


def _enabled(plugins: Mapping[str, Any], where: str) -> dict[str, list[str]]:
    return {
        str(point): strings(
            mapping(sets, at(where, point)).get("enabled"), at(at(where, point), "enabled")
        )
        for point, sets in plugins.items()
    }


def _profile(raw: object, where: str) -> Profile | None:
    entry = mapping(raw, where)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ConversionError(at(where, "name"), f"expected a profile name, got {shown(name)}")
    configs = _plugin_args(
        listed(entry.get("pluginConfig"), at(where, "pluginConfig")), at(where, "pluginConfig")
    )
    enabled = _enabled(mapping(entry.get("plugins"), at(where, "plugins")), at(where, "plugins"))
    if SPREAD not in enabled.get("balance", []):
        return None
    filters = [p for p in enabled.get("filter", []) if p != EVICTOR]
    others = sorted({p for ps in enabled.values() for p in ps} - {SPREAD, EVICTOR, *filters})
    absent = at(where, "pluginConfig")
    return Profile(
        name=name,
        spread=configs.get(SPREAD, (f"{absent}({SPREAD}).args", {})),
        evictor=configs.get(EVICTOR, (f"{absent}({EVICTOR}).args", {})),
        others=tuple(others),
        evictor_name=filters[0] if filters else EVICTOR,
    )


def convert_profile(doc: Mapping[str, Any], profile: Profile, source: str) -> Draft:
    draft = Draft()
    top_level(doc, draft)
    spread_where, spread = profile.spread
    spread_args(spread, spread_where, draft)
    evictor_where, evictor = profile.evictor
    evictor_args(evictor, evictor_where, draft)
    if profile.evictor_name != EVICTOR:
        draft.note(
            (),
            f"the evictor plugin {profile.evictor_name}: not converted (only the"
            " DefaultEvictor's arguments are)",
        )
    if profile.others:
        draft.note(
            (),
            f"{source} also enables {', '.join(profile.others)}: not converted;"
            " respread rebalances topology spread only",
        )
    for path, text in SEMANTICS:
        draft.note(path, text)
    return draft


def profiles_of(doc: Mapping[str, Any]) -> list[Profile]:
    raw = listed(doc.get("profiles"), "profiles")
    found = [p for i, entry in enumerate(raw) if (p := _profile(entry, at("profiles", i)))]
    if not found:
        raise ConversionError(
            "profiles",
            f"no profile enables {SPREAD} in plugins.balance.enabled: nothing to convert",
        )
    return found
