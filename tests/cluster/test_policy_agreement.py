"""The command line's policy verdicts against the real API server's (one policy schema).

Every policy of tests/policy_corpus.py is created on kube-apiserver with crds/ installed, as
``kubectl create --dry-run=server`` creates it (dry run, strict field validation), and read by
the command line (`respread plan --policy`, through `respread.cli.read_policy`). The verdicts
must be equal, except the cases listed in EXCEPTIONS with their reasons; the corpus's recorded
verdicts (which the unit tests hold the parser to without a cluster) must be the server's too.
The YAML texts of the corpus go through the real kubectl (which converts YAML to JSON for the
user, as it always does) to the same API server, and the command line reads the same text.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from kube_helpers import GROUP, PLURAL, VERSION
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from operator_fixtures import crd  # noqa: F401 (a fixture)
from tests.policy_corpus import (
    API_ACCEPTS,
    CASES,
    EXCEPTIONS,
    YAML_API_ACCEPTS,
    YAML_CASES,
    YAML_EXCEPTIONS,
)

from respread.cli import UsageError, read_policy

pytestmark = pytest.mark.cluster


def server_accepts(custom: client.CustomObjectsApi, doc: dict[str, Any]) -> tuple[bool, str]:
    try:
        custom.create_cluster_custom_object(
            GROUP, VERSION, PLURAL, doc, dry_run="All", field_validation="Strict"
        )
    except ApiException as err:
        if err.status not in (400, 422):
            raise
        try:
            message = json.loads(err.body).get("message", err.body)
        except (TypeError, ValueError):
            message = str(err.body)
        return False, str(message)[:300]
    return True, ""


def cli_accepts(doc: dict[str, Any], tmp: Path) -> tuple[bool, str]:
    path = tmp / "policy.json"
    path.write_text(json.dumps(doc))
    try:
        read_policy(str(path))
    except UsageError as err:
        return False, str(err)
    return True, ""


Verdict = tuple[bool, str]


def assert_agreement(
    cases: Sequence[tuple[str, Any]],
    server: Callable[[Any], Verdict],
    cli: Callable[[Any], Verdict],
    recorded: Mapping[str, bool],
    exceptions: Mapping[str, str],
    who: str,
) -> None:
    """Every case's CLI verdict equals the server's (`who`: the server, or kubectl in front of
    it), but the listed exceptions, which must disagree; the recorded verdicts are the server's."""
    disagreements, wrong_records, exceptions_seen = [], [], []
    for case_id, case in cases:
        (on_server, server_msg), (in_cli, cli_msg) = server(case), cli(case)
        if on_server is not recorded[case_id]:
            verdict = "accepts" if on_server else "refuses"
            wrong_records.append(f"{case_id}: {who} {verdict} ({server_msg})")
        if case_id in exceptions:
            exceptions_seen.append(case_id)
            assert on_server is not in_cli, f"{case_id} is listed as an exception but agrees"
            continue
        if on_server is not in_cli:
            disagreements.append(
                f"{case_id}: {who} {'accepts' if on_server else f'refuses ({server_msg})'}, "
                f"CLI {'accepts' if in_cli else f'refuses ({cli_msg})'}"
            )
    agree = len(cases) - len(disagreements) - len(exceptions_seen)
    print(f"{len(cases)} policies, {agree} agree, {len(exceptions_seen)} documented exceptions")
    assert not disagreements, "\n".join(disagreements)
    assert not wrong_records, "\n".join(wrong_records)
    assert sorted(exceptions_seen) == sorted(exceptions)


def test_the_cli_agrees_with_the_api_server(
    crd: None,  # noqa: F811
    api_client: client.ApiClient,
    tmp_path: Path,
) -> None:
    custom = client.CustomObjectsApi(api_client)
    assert_agreement(
        [(case_id, doc) for case_id, doc, _ in CASES],
        lambda doc: server_accepts(custom, doc),
        lambda doc: cli_accepts(doc, tmp_path),
        API_ACCEPTS,
        EXCEPTIONS,
        "the server",
    )


def kubectl_accepts(kubeconfig: Path, text: str) -> tuple[bool, str]:
    """`kubectl create --dry-run=server` of a policy's YAML text: kubectl converts it to JSON
    (refusing what JSON cannot hold) and the API server validates it (strict fields)."""
    done = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            str(kubeconfig),
            "create",
            "--dry-run=server",
            "--validate=strict",
            "-o",
            "name",
            "-f",
            "-",
        ],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode == 0, " ".join(done.stderr.split())[:300]


def cli_accepts_text(text: str, tmp: Path) -> tuple[bool, str]:
    path = tmp / "policy.yaml"
    path.write_text(text)
    try:
        read_policy(str(path))
    except UsageError as err:
        return False, str(err)
    return True, ""


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_the_cli_reads_yaml_text_as_kubectl_and_the_api_server_do(
    crd: None,  # noqa: F811
    kubeconfig: Path,
    tmp_path: Path,
) -> None:
    assert_agreement(
        [(case_id, text) for case_id, text, _ in YAML_CASES],
        lambda text: kubectl_accepts(kubeconfig, text),
        lambda text: cli_accepts_text(text, tmp_path),
        YAML_API_ACCEPTS,
        YAML_EXCEPTIONS,
        "kubectl",
    )
