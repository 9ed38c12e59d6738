"""Connecting to the API server: a kubeconfig, or the in-cluster service account."""

from __future__ import annotations

import json
from typing import Any, cast

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

GROUP, VERSION, PLURAL = "respread.io", "v1alpha1", "rebalancepolicies"


class KubeError(RuntimeError):
    """The API server could not be reached or refused a request; the message says which."""


def api_client(kubeconfig: str | None = None) -> client.ApiClient:
    """A client for ``kubeconfig``, else $KUBECONFIG or ~/.kube/config, else in-cluster.

    KubeError, in one line, for whatever the client's loader raises on a kubeconfig it cannot
    use: it parses YAML and base64 and reads fields without checking their types, so a bad
    file surfaces as any exception (a KeyError for ``!!bool maybe``, binascii.Error for bad
    certificate data, AttributeError for a number where a string belongs).
    """
    try:
        if kubeconfig is not None:
            return cast(client.ApiClient, config.new_client_from_config(config_file=kubeconfig))
        try:
            return cast(client.ApiClient, config.new_client_from_config())
        except (ConfigException, FileNotFoundError, TypeError):
            config.load_incluster_config()
            return client.ApiClient()
    except Exception as err:  # the loader's failures on bad input have no common type
        where = kubeconfig or "the default kubeconfig or the in-cluster service account"
        reason = " ".join(str(err).split()) or type(err).__name__
        if not isinstance(err, ConfigException | OSError):
            kind = type(err)
            module = "" if kind.__module__ == "builtins" else f"{kind.__module__}."
            reason = f"{module}{kind.__qualname__}: {reason}"
        raise KubeError(f"cannot load credentials from {where}: {reason[:300]}") from None


def get_json(
    api: client.ApiClient,
    path: str,
    query: list[tuple[str, Any]] | None = None,
    accept: str = "application/json",
) -> Any:
    """GET a path and return the decoded JSON, without the client's model classes."""
    method, url, headers, _, _ = api.param_serialize(
        "GET",
        path,
        query_params=query or [],
        header_params={"Accept": accept},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, header_params=headers)
    response.read()
    if not 200 <= response.status < 300:
        raise ApiException(http_resp=response)
    return json.loads(response.data or b"null")
