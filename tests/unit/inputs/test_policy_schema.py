"""One policy schema: the command line's parser gives the API server's verdict.

The structural schema the parser applies is generated from the CRD (hack/gen-policy-schema);
the first test fails when they drift. The corpus in tests/policy_corpus.py holds the API
server's verdicts (tests/cluster/test_policy_agreement.py checks them against a real one).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from respread.inputs.documents import LeftOut, documents_from_text
from respread.inputs.policy import PolicyError, parse_policy
from respread.inputs.policy_schema import SCHEMA
from tests.policy_corpus import CASES, EXCEPTIONS, YAML_CASES, YAML_EXCEPTIONS, policy
from tests.support.paths import REPO
from tests.support.tables import cases

CRD = REPO / "crds" / "rebalancepolicy.yaml"


def test_schema_is_the_crds() -> None:
    [version] = yaml.safe_load(CRD.read_text())["spec"]["versions"]
    assert version["schema"]["openAPIV3Schema"] == SCHEMA, "run hack/gen-policy-schema"


def verdict(doc: dict[str, Any]) -> bool:
    try:
        parse_policy(doc)
    except PolicyError:
        return False
    return True


@cases(("doc", "accepts"), CASES)
def test_cli_verdict_is_the_api_servers(
    request: pytest.FixtureRequest, doc: Any, accepts: bool
) -> None:
    case_id = request.node.callspec.id
    if case_id in EXCEPTIONS:
        assert verdict(doc) is not accepts, f"no longer an exception: {case_id}"
    else:
        assert verdict(doc) is accepts


def yaml_verdict(text: str) -> bool:
    """The command line's verdict on a policy file's text (as read_policy reads it)."""
    docs = [d for _, d in documents_from_text(text, "policy.yaml")]
    if any(isinstance(d, LeftOut) for d in docs):
        return False
    (doc,) = docs
    return verdict(doc)


@pytest.mark.parametrize(
    ("text", "accepts"), [c[1:] for c in YAML_CASES], ids=[c[0] for c in YAML_CASES]
)
def test_cli_verdict_on_yaml_text_is_the_api_servers(
    request: pytest.FixtureRequest, text: str, accepts: bool
) -> None:
    if request.node.callspec.id in YAML_EXCEPTIONS:
        assert yaml_verdict(text) is not accepts
    else:
        assert yaml_verdict(text) is accepts


def test_unknown_fields_are_named() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(policy({"eviction": {"maxPerRunn": 3}}))
    assert info.value.field == "spec.eviction.maxPerRunn"
    assert 'unknown field "spec.eviction.maxPerRunn"' in str(info.value)


def test_nulls_are_defaulted_and_nullable_caps_kept() -> None:
    p = parse_policy(
        policy(
            {
                "mode": None,
                "eviction": {"requireFit": None, "minPodAge": None, "maxPerRun": None},
                "constraints": {"whenUnsatisfiable": None, "emptySelectorMatchesAll": None},
            }
        )
    )
    assert p.mode.value == "DryRun"
    assert p.eviction.require_fit is True
    assert p.eviction.min_pod_age == 300
    assert p.eviction.max_per_run is None  # nullable: null means no cap
    assert p.constraints.empty_selector_matches_all is False


def test_integral_floats_are_integers() -> None:
    assert parse_policy(policy({"eviction": {"maxPerRun": 5.0}})).eviction.max_per_run == 5
    p = parse_policy(policy({"report": {"maxItems": 1e2}}))
    assert p.report_max_items == 100
    assert isinstance(p.report_max_items, int)


def test_messages_cut_long_values() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(policy({"x" * 100_000: 1}))
    assert len(str(info.value)) < 300


def test_mapping_views_are_read_like_dicts() -> None:
    """The operator hands over kopf's read-only mapping views, not dicts."""
    from types import MappingProxyType

    def view(value: Any) -> Any:
        if isinstance(value, dict):
            return MappingProxyType({k: view(v) for k, v in value.items()})
        if isinstance(value, list):
            return tuple(view(v) for v in value)
        return value

    doc = policy({"eviction": {"maxPerRun": 3}, "selector": {"namespaces": {"include": ["a"]}}})
    assert parse_policy(view(doc)) == parse_policy(doc)
