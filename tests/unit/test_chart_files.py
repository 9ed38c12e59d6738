"""The Helm chart's files that follow from others: its CRD and the schema of its default policy
come from crds/ (hack/gen-chart), its version from pyproject.toml, its default policy is deploy/'s
example. (The chart rendered by the real helm, against deploy/: tests/cluster/test_chart.py.)"""

from __future__ import annotations

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
