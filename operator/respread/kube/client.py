"""Connecting to the API server: a kubeconfig, or the in-cluster service account."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, cast

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from respread.core.annotations import FIELD_MANAGER

GROUP, VERSION, PLURAL = "respread.io", "v1alpha1", "rebalancepolicies"


class KubeError(RuntimeError):
    """The API server could not be reached or refused a request; the message says which."""


def api_client(kubeconfig: str | None = None, context: str | None = None) -> client.ApiClient:
    """A client for ``kubeconfig`` (a path, or several joined by ':' as in $KUBECONFIG), else
    $KUBECONFIG or ~/.kube/config, else in-cluster; ``context`` names a kubeconfig context
    other than the current one.

    KubeError, in one line, for whatever the client's loader raises on a kubeconfig it cannot
    use: it parses YAML and base64 and reads fields without checking their types, so a bad
    file surfaces as any exception (a KeyError for ``!!bool maybe``, binascii.Error for bad
    certificate data, AttributeError for a number where a string belongs).
    """
    try:
        if kubeconfig is not None or context is not None:
            return cast(
                client.ApiClient,
                config.new_client_from_config(config_file=kubeconfig, context=context),
            )
        try:
            return cast(client.ApiClient, config.new_client_from_config())
        except (ConfigException, FileNotFoundError, TypeError):
            config.load_incluster_config()
            return client.ApiClient()
    except Exception as err:  # the loader's failures on bad input have no common type
        where = kubeconfig or "the default kubeconfig or the in-cluster service account"
        if context is not None:
            where += f" (context {context})"
        raise KubeError(f"cannot load credentials from {where}: {_reason(err)}") from None


def _reason(err: Exception) -> str:
    """The loader's failure in one line of at most 300 characters, its type named where the
    message alone would not say what went wrong (a KeyError's message is the key)."""
    reason = " ".join(str(err).split()) or type(err).__name__
    if not isinstance(err, ConfigException | OSError):
        kind = type(err)
        module = "" if kind.__module__ == "builtins" else f"{kind.__module__}."
        reason = f"{module}{kind.__qualname__}: {reason}"
    return reason[:300]


def context_namespace(kubeconfig: str | None = None, context: str | None = None) -> str | None:
    """The namespace the kubeconfig's context (the current one unless ``context``) names, as
    kubectl reads it; None if it names none, or there is no kubeconfig, or it cannot be read
    (whatever the loader raises: the command that then loads it for a client says why, in one
    line, as api_client does)."""
    try:
        contexts, current = config.list_kube_config_contexts(config_file=kubeconfig)
    except Exception:  # the loader's failures on bad input have no common type
        return None
    if context:
        named = (c for c in contexts if isinstance(c, dict) and c.get("name") == context)
        current = next(named, None)
    body = current.get("context") if isinstance(current, dict) else None
    namespace = body.get("namespace") if isinstance(body, dict) else None
    return namespace if isinstance(namespace, str) and namespace else None


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


# A JSON merge patch as respread's field manager, its response left unparsed (the caller reads
# what it needs, or drains it, so the connection is reused).
MERGE_PATCH: Final[dict[str, Any]] = {
    "field_manager": FIELD_MANAGER,
    "_content_type": "application/merge-patch+json",
    "_preload_content": False,
}


@contextmanager
def listing(kind: str, server: str) -> Iterator[None]:
    """A list request's refusal or transport error as a one-line KubeError naming the kind and
    the server."""
    try:
        yield
    except ApiException as err:
        raise KubeError(
            f"listing {kind} objects at {server} failed: HTTP {err.status} {err.reason}"
        ) from None
    except (urllib3.exceptions.HTTPError, OSError) as err:
        raise KubeError(f"cannot reach the API server at {server}: {err}") from None
