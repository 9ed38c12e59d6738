"""The README's install section, checked against the repository: the image hack/image builds and
the archive it writes are the ones the README pushes, the image deploy/ names is the one the
README re-points, and the overlay the README shows renders deploy/ with the user's image."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def version() -> str:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return str(project["version"])


def test_the_readme_pushes_what_hack_image_builds() -> None:
    script = (REPO / "hack" / "image").read_text()
    assert "image=${RESPREAD_IMAGE:-localhost/respread:$version}" in script
    assert "archive_path=${RESPREAD_IMAGE_ARCHIVE:-build/respread-$version.oci.tar}" in script
    v = version()
    assert f"podman push localhost/respread:{v} " in README
    assert f"oci-archive:build/respread-{v}.oci.tar" in README


def test_the_readme_repoints_the_image_deploy_names() -> None:
    kustomization = yaml.safe_load((REPO / "deploy" / "kustomization.yaml").read_text())
    [image] = kustomization["images"]
    deployment = yaml.safe_load((REPO / "deploy" / "deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"].split(":")[0] == image["name"]
    assert f"kustomize edit set image {image['name']}=" in README


def test_the_readmes_overlay_renders_deploy_with_the_users_image(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    [overlay] = re.findall(r"```yaml\n(# my-respread/kustomization.yaml.*?)```", README, re.S)
    for directory in ("deploy", "crds"):
        shutil.copytree(REPO / directory, tmp_path / directory)
    (tmp_path / "my-respread").mkdir()
    (tmp_path / "my-respread" / "kustomization.yaml").write_text(overlay)
    out = subprocess.run(
        [kubectl, "kustomize", str(tmp_path / "my-respread")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    [deployment] = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.com/team/respread:0.1.0"
