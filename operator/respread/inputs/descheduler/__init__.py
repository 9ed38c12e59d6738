"""A descheduler policy, read and converted into the RebalancePolicy that asks for the same.

`respread convert --from-descheduler POLICY.yaml`. The input is a DeschedulerPolicy
(`descheduler/v1alpha2`; `descheduler/v1alpha1` through the same mapping, as the descheduler's
own conversion did), or the ConfigMap the descheduler's Helm chart keeps it in (`policy.yaml`).
Every profile that enables RemovePodsViolatingTopologySpreadConstraint (in plugins.balance)
becomes one RebalancePolicy, in DryRun:

| descheduler | RebalancePolicy |
|---|---|
| plugin args `constraints` | spec.constraints.whenUnsatisfiable |
| plugin args `namespaces.include`/`exclude` | spec.selector.namespaces |
| plugin args `labelSelector`, DefaultEvictor `labelSelector` | spec.selector.podSelector (both) |
| DefaultEvictor `namespaceLabelSelector` | spec.selector.namespaceSelector |
| plugin args `topologyBalanceNodeFit`, DefaultEvictor `nodeFit` | spec.eviction.requireFit |
| DefaultEvictor `podProtections` (and the deprecated booleans) | spec.eviction.protections |
| DefaultEvictor `minPodAge` | spec.eviction.minPodAge |
| `maxNoOfPodsToEvictTotal`/`PerNode`/`PerNamespace` | spec.eviction.maxPerRun/Node/Namespace |
| `gracePeriodSeconds` | spec.eviction.gracePeriodSeconds |

Where a setting has no equivalent, or respread reads the same setting differently (minDomains,
which pods are counted, the caps and cooldown the descheduler does not have), the conversion
carries a note that the writer (inputs/annotated_yaml.py) prints as a YAML comment beside the
field. Bad input raises ConversionError naming the field, as the descheduler's own validation
would refuse it. Pure: mappings in, mappings out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from respread.core.limits import Limits, shown
from respread.inputs.descheduler.fields import (
    ANNOTATION,
    CONFIGMAP_KEY,
    POLICY_KIND,
    V1ALPHA1,
    V1ALPHA2,
    Conversion,
    ConversionError,
    Note,
    mapping,
)
from respread.inputs.descheduler.profiles import convert_profile, profiles_of
from respread.inputs.descheduler.spec import dns_name, spec_of
from respread.inputs.descheduler.v1alpha1 import v1alpha1_as_v1alpha2
from respread.inputs.documents import InputError, LeftOut, documents_from_text
from respread.inputs.policy import API_VERSION, KIND, PolicyError, parse_policy

__all__ = ["Conversion", "ConversionError", "Note", "convert", "read_policy_text"]


def _one_policy(docs: Sequence[Any], source: str) -> Mapping[str, Any] | str:
    """The one DeschedulerPolicy among ``docs``, or the ``policy.yaml`` text of the one
    ConfigMap (as the descheduler's Helm chart stores it)."""
    policies = [d for d in docs if isinstance(d, Mapping) and d.get("kind") == POLICY_KIND]
    maps = [d for d in docs if isinstance(d, Mapping) and d.get("kind") == "ConfigMap"]
    if len(policies) == 1:
        return policies[0]
    if not policies and len(maps) == 1:
        text = mapping(maps[0].get("data"), f"{source}: ConfigMap data").get(CONFIGMAP_KEY)
        if not isinstance(text, str):
            raise ConversionError(f"{source}: ConfigMap data", f"has no {CONFIGMAP_KEY} key")
        return text
    raise ConversionError(
        source,
        f"expected one {POLICY_KIND} (or a ConfigMap holding {CONFIGMAP_KEY}), found"
        f" {len(policies)} {POLICY_KIND} and {len(maps)} ConfigMap(s)",
    )


def read_policy_text(text: str, source: str, limits: Limits) -> Mapping[str, Any]:
    """The DeschedulerPolicy in a YAML or JSON text (itself, or inside a ConfigMap)."""
    found = _one_policy(_documents(text, source, limits), source)
    if isinstance(found, str):
        inner = f"{source} (ConfigMap {CONFIGMAP_KEY})"
        found = _one_policy(_documents(found, inner, limits), inner)
        if isinstance(found, str):
            raise ConversionError(inner, f"holds a ConfigMap, not a {POLICY_KIND}")
    return found


def _documents(text: str, source: str, limits: Limits) -> list[Any]:
    """The text's documents, read as kubectl reads them (respread.inputs.documents); any part
    that cannot be read refuses the whole text, naming the field at fault where it is known."""
    try:
        docs = [doc for _, doc in documents_from_text(text, source, limits)]
    except InputError as err:
        raise ConversionError(source, f"cannot be read: {err}") from None
    for doc in docs:
        if isinstance(doc, LeftOut):
            raise ConversionError(f"{source}: {doc.field}" if doc.field else source, doc.message)
    return docs


def convert(doc: Mapping[str, Any], name: str | None = None) -> list[Conversion]:
    """Every profile enabling the spread plugin as a RebalancePolicy manifest with its notes.

    ``name`` names the policy when there is one profile to convert; otherwise each is named
    after its profile. Each manifest is checked with respread's own policy parser."""
    version = doc.get("apiVersion")
    if doc.get("kind") != POLICY_KIND:
        raise ConversionError("kind", f"expected {POLICY_KIND}, got {shown(doc.get('kind'))}")
    if version == V1ALPHA1:
        doc = v1alpha1_as_v1alpha2(doc)
    elif version != V1ALPHA2:
        raise ConversionError(
            "apiVersion", f"expected {V1ALPHA2} or {V1ALPHA1}, got {shown(version)}"
        )
    profiles = profiles_of(doc)
    if name is not None and len(profiles) != 1:
        raise ConversionError("", f"--name names one policy, but {len(profiles)} profiles convert")
    out = []
    for profile in profiles:
        source = f"{POLICY_KIND} {version}, profile {profile.name}"
        draft = convert_profile(doc, profile, f"profile {profile.name}")
        manifest = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {
                "name": name or dns_name(profile.name),
                "annotations": {ANNOTATION: source},
            },
            "spec": spec_of(draft),
        }
        try:
            parse_policy(manifest)
        except PolicyError as err:  # a bug here, not the input's fault: said as such
            raise ConversionError(
                "", f"the converted policy is invalid ({err}); please report"
            ) from None
        out.append(Conversion(manifest, tuple(draft.notes)))
    return out
