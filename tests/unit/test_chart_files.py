"""The Helm chart's files that follow from others: its CRD and the schema of its default policy
come from crds/ (hack/gen-chart), its version from pyproject.toml, its default policy is deploy/'s
example. (The chart rendered by the real helm, against deploy/: tests/cluster/test_chart.py.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "respread"


def test_the_charts_crd_and_policy_schema_are_generated_from_crds() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "hack" / "gen-chart"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    crd = (REPO / "crds" / "rebalancepolicy.yaml").read_bytes()
    assert (CHART / "crds" / "rebalancepolicy.yaml").read_bytes() == crd


def test_the_chart_ships_the_version_deploy_installs() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == version
    [image] = yaml.safe_load((REPO / "deploy" / "kustomization.yaml").read_text())["images"]
    assert image["newTag"] == version
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["image"]["repository"] == image["name"]


def test_the_charts_default_policy_is_deploys_example() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    example = yaml.safe_load((REPO / "deploy" / "example-policy.yaml").read_text())
    assert values["defaultPolicy"]["name"] == example["metadata"]["name"]
    assert values["defaultPolicy"]["spec"] == example["spec"]


def test_the_readmes_install_section_leads_with_the_chart() -> None:
    readme = (REPO / "README.md").read_text()
    install = readme[readme.index("\n## Install\n") :]
    install = install[: install.index("\n## ", 1)]
    first_command = install.index("```sh\n") + len("```sh\n")
    assert install.index("helm install respread charts/respread") < install.index(
        "kubectl apply -k"
    )
    assert "helm install" in install[first_command : install.index("```", first_command)]


def _camel(flag: str) -> str:
    """--connect-timeout -> connectTimeout."""
    first, *rest = flag.removeprefix("--").split("-")
    return first + "".join(w.capitalize() for w in rest)


def test_the_charts_bounds_are_respread_runs_with_the_same_defaults() -> None:
    """Every bound of `respread run` (cli.BOUNDS) is a value of the chart, passed to its flag by
    the template, empty by default (the operator's own default applies); the comment after each
    value, the chart's README and docs/operations.md give that default; the values schema
    accepts it."""
    from respread.cli import BOUNDS

    text = (CHART / "values.yaml").read_text()
    values = yaml.safe_load(text)["bounds"]
    template = (CHART / "templates" / "deployment.yaml").read_text()
    schema = json.loads((CHART / "values.schema.json").read_text())
    duration = re.compile(schema["$defs"]["optionalDuration"]["pattern"])
    readme = (CHART / "README.md").read_text()
    [readme_row] = [line for line in readme.splitlines() if line.startswith("| `bounds.")]
    operations = (REPO / "docs" / "operations.md").read_text()
    assert set(values) == {_camel(flag) for flag, *_ in BOUNDS}
    for flag, env, default, _ in BOUNDS:
        name = _camel(flag)
        assert values[name] == "", name
        assert re.search(rf'^  {name}: ""  # {re.escape(default)}: ', text, re.M), name
        assert f'"{name}" "{flag}"' in template, name
        assert set(schema["properties"]["bounds"]["properties"][name]) == {"$ref"}, name
        assert duration.fullmatch(default), default
        assert f"`.{name}`" in readme_row or f"`bounds.{name}`" in readme_row, name
        assert f"| `{flag}` | `{env}` | `{default}` |" in operations, flag
    defaults = ", ".join(f"`{default}`" for _, _, default, _ in BOUNDS)
    assert f"the operator's: {defaults}" in readme_row
