"""Connecting to the API server: a kubeconfig, or the in-cluster service account."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final, cast

import urllib3
from kubernetes import client, config
from kubernetes.client import rest
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


# ---- deadlines: every request has one --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds to connect, and to wait for each read of an answer, for every request that does
    not say otherwise (a watch does: it waits for its server timeout)."""

    connect: float = 5.0
    read: float = 30.0


DEFAULT_TIMEOUTS = Timeouts()


class Deadline:
    """When the work in progress must be done (monotonic seconds); None: no deadline. It binds
    the requests made in its context (`within`) until it is closed: a task started from that
    context (a surge follower) outlives the scan, and is no longer bound once the scan closes
    it."""

    def __init__(self, at: float | None) -> None:
        self.at = at
        self.open = True

    def left(self, now: float) -> float | None:
        return None if not self.open or self.at is None else self.at - now

    def close(self) -> None:
        self.open = False


class DeadlineExceededError(KubeError):
    """The deadline of the work in progress has passed: the request was not sent."""


_DEADLINE: ContextVar[Deadline | None] = ContextVar("respread_deadline", default=None)


@contextmanager
def within(deadline: Deadline | None) -> Iterator[None]:
    """Requests made in this context (threads started with asyncio.to_thread included, as they
    copy the context) are bound by `deadline`."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def current_deadline() -> Deadline | None:
    return _DEADLINE.get()


def request_timeout(
    explicit: float | tuple[float, float] | None,
    defaults: Timeouts,
    left: float | None,
) -> tuple[float, float]:
    """The (connect, read) timeouts of one request: what its caller asked for, else the
    defaults, cut to the time `left` before the deadline (DeadlineExceededError when none is)."""
    if explicit is None:
        connect, read = defaults.connect, defaults.read
    elif isinstance(explicit, tuple):
        connect, read = explicit
    else:
        connect, read = min(defaults.connect, explicit), explicit
    if left is not None:
        if left <= 0:
            raise DeadlineExceededError(f"the deadline passed {-left:.1f}s ago: request not sent")
        connect, read = min(connect, left), min(read, left)
    return connect, read


class _TimedRest(rest.RESTClientObject):
    """The client's REST layer, with timeouts on every request (see `with_timeouts`)."""

    def __init__(self, inner: rest.RESTClientObject, timeouts: Timeouts) -> None:
        # Not calling the base __init__: this only forwards to `inner`, which owns the pool.
        self.inner = inner
        self.timeouts = timeouts
        self.configuration = inner.configuration
        self.pool_manager = inner.pool_manager

    def request(
        self,
        method: str,
        url: str,
        headers: Any = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        deadline = _DEADLINE.get()
        left = deadline.left(time.monotonic()) if deadline is not None else None
        return self.inner.request(
            method,
            url,
            headers=headers,
            body=body,
            post_params=post_params,
            _request_timeout=request_timeout(_request_timeout, self.timeouts, left),
        )

    def close(self) -> None:
        self.inner.close()


def with_timeouts(api: client.ApiClient, timeouts: Timeouts) -> client.ApiClient:
    """Make every request of `api` carry connect and read timeouts (and honour the deadline of
    the context it is made in): the kubernetes client's default is to wait for ever."""
    inner = api.rest_client
    if isinstance(inner, _TimedRest):
        inner = inner.inner
    api.rest_client = _TimedRest(inner, timeouts)
    return api


def pooled_client(api: client.ApiClient, connections: int, timeouts: Timeouts) -> client.ApiClient:
    """A client of its own, on ``api``'s configuration and user agent, pooling ``connections``
    connections, its requests bounded by ``timeouts``: for a set of threads that each hold a
    connection open (a watch each), so they neither wait for ``api``'s pool nor starve it."""
    config = copy.deepcopy(api.configuration)
    config.connection_pool_maxsize = connections
    own = with_timeouts(client.ApiClient(config), timeouts)
    own.user_agent = api.user_agent
    return own


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
