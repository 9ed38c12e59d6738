"""The token the operator hands kopf, from each way the kubernetes client loads credentials.

In a pod the client's in-cluster loader reads the service account's token file and stores
"bearer <token>"; kopf adds the scheme itself, so the prefix must go whatever its case (it once
did not, and every request from inside a cluster was refused with 401)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes import client, config
from kubernetes.config.incluster_config import InClusterConfigLoader

from respread.runtime.operator import _token


def test_the_in_cluster_token_reaches_kopf_without_its_scheme(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("eyJhbGciOi.in-cluster.token\n")
    (tmp_path / "ca.crt").write_text("not used until a connection is made\n")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    configuration = client.Configuration()
    InClusterConfigLoader(
        token_filename=str(tmp_path / "token"), cert_filename=str(tmp_path / "ca.crt")
    ).load_and_set(configuration)
    assert configuration.host == "https://127.0.0.1:6443"
    assert _token(configuration) == "eyJhbGciOi.in-cluster.token"


def test_a_kubeconfig_token_reaches_kopf_unchanged(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"token": "kubeconfig-token"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    api = config.new_client_from_config(config_file=str(kubeconfig))
    assert _token(api.configuration) == "kubeconfig-token"


def test_no_token_is_none() -> None:
    assert _token(client.Configuration()) is None
