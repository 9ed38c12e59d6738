"""docs/policy.md, the policy reference, is generated from the CRD (hack/gen-policy-docs): every
spec field is a row, with the CRD's default, and the page is up to date."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import yaml

from tests.support.paths import REPO


def test_the_policy_reference_is_generated_from_the_crd() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "hack" / "gen-policy-docs"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _fields(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    if "matchLabels" in schema.get("properties", {}):
        return
    inner = schema.get("items", {}) if schema.get("type") == "array" else schema
    suffix = "[]" if schema.get("type") == "array" else ""
    for name, sub in inner.get("properties", {}).items():
        yield from _fields(sub, f"{path}{suffix}.{name}")


def test_every_spec_field_has_a_row_a_description_and_its_default() -> None:
    crd = yaml.safe_load((REPO / "crds" / "rebalancepolicy.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    page = (REPO / "docs" / "policy.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line for line in page.splitlines() if "| `spec" in line}
    fields = dict(_fields(spec, "spec"))
    del fields["spec"]
    assert set(rows) == set(fields)
    for path, schema in fields.items():
        assert schema.get("description"), f"{path} has no description in the CRD"
        if isinstance(schema.get("default"), (str, int)) and not isinstance(
            schema["default"], bool
        ):
            assert f"`{schema['default']}`" in rows[path], path
