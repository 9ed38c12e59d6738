"""Evicting a pod through the policy/v1 Eviction subresource, and what the answer means.

A budget refusal (429 with cause DisruptionBudget) and the multiple-budget error (500) are
answers, never retried. Throttling (other 429s, honouring Retry-After) and other 5xx are
retried with backoff, and so is a connection that could not be made (nothing was sent), until
the eviction's own deadline or the deadline of the work in progress (kube.client.Deadline),
whichever comes first.

A request that went out and got no answer (a read timeout, a connection dropped half-way) is
never sent again: an API server that stopped answering (paused, overloaded) still holds it and
may carry it out when it resumes, however late. The outcome says so (`answered` False): the
eviction may or may not happen, and the caller should stop acting on the plan it came from.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from tenacity import (
    RetryCallState,
    retry,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential_jitter,
)

from respread.kube.client import DeadlineExceededError, current_deadline

MULTIPLE_BUDGETS = "more than one PodDisruptionBudget"


class Result(StrEnum):
    EVICTED = "Evicted"
    BLOCKED = "Blocked"
    FAILED = "Failed"


@dataclass(frozen=True, slots=True)
class Outcome:
    result: Result
    reason: str
    status: int | None = None
    answered: bool = True  # False: sent without an answer; it may still be carried out


class TransientError(Exception):
    """A failure worth retrying."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _body(err: ApiException) -> dict[str, Any]:
    try:
        body = json.loads(err.body or "{}")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def classify(err: ApiException) -> Outcome | TransientError:
    """What an API error on an eviction means: a final outcome, or a transient failure."""
    body = _body(err)
    message = str(body.get("message") or err.reason or "")
    causes = (body.get("details") or {}).get("causes") or []
    if err.status == 429:
        if any(c.get("reason") == "DisruptionBudget" for c in causes if isinstance(c, dict)) or (
            "disruption budget" in message
        ):
            return Outcome(Result.BLOCKED, f"refused by a PodDisruptionBudget: {message}", 429)
        retry_after = (err.headers or {}).get("Retry-After") if err.headers else None
        try:
            delay = float(retry_after) if retry_after is not None else None
        except ValueError:
            delay = None
        return TransientError(f"throttled (429): {message}", delay)
    if err.status == 500 and MULTIPLE_BUDGETS in message:
        return Outcome(Result.BLOCKED, message, 500)
    if err.status is not None and err.status >= 500:
        return TransientError(f"server error {err.status}: {message}")
    if err.status == 404:
        return Outcome(Result.FAILED, "the pod no longer exists", 404)
    return Outcome(Result.FAILED, f"HTTP {err.status}: {message}", err.status)


class NoAnswerError(Exception):
    """The request was sent and no answer came: it may still be carried out; never resent."""


# Failures before a request went out: retrying sends it for the first time.
_NOT_SENT = (
    urllib3.exceptions.NewConnectionError,
    urllib3.exceptions.ConnectTimeoutError,
    ConnectionRefusedError,
)


def transport_failure(err: Exception) -> TransientError | NoAnswerError:
    """A connection that could not be made (nothing sent: worth retrying), or a request sent
    without an answer (a read timeout, a dropped connection: never resent)."""
    cause = err.reason if isinstance(err, urllib3.exceptions.MaxRetryError) else err
    if isinstance(cause, _NOT_SENT):
        return TransientError(f"cannot reach the API server: {cause}")
    return NoAnswerError(f"no answer from the API server: {cause}")


def _wait(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome is not None else None
    if isinstance(exc, TransientError) and exc.retry_after is not None:
        return min(exc.retry_after, 30.0)
    return float(wait_exponential_jitter(initial=0.5, max=10.0)(state))


def evict(
    api: client.ApiClient,
    namespace: str,
    name: str,
    *,
    uid: str | None = None,
    grace_period_seconds: int | None = None,
    dry_run: bool = False,
    deadline: float = 60.0,
    allowed: Callable[[], bool] | None = None,
    refusal: Callable[[], str] | None = None,
) -> Outcome:
    """Evict one pod; ``uid`` makes sure it is the pod that was planned, not a namesake.
    ``allowed`` (leader election's guard) and ``refusal`` (why not to send now, "" to go) are
    asked before each attempt, retries too."""
    core = client.CoreV1Api(api)
    body = client.V1Eviction(
        metadata=client.V1ObjectMeta(name=name, namespace=namespace),
        delete_options=client.V1DeleteOptions(
            grace_period_seconds=grace_period_seconds,
            preconditions=client.V1Preconditions(uid=uid) if uid else None,
        ),
    )
    bound = current_deadline()
    left = bound.left(time.monotonic()) if bound is not None else None
    budget = deadline if left is None else max(0.0, min(deadline, left))

    @retry(
        retry=retry_if_exception(lambda e: isinstance(e, TransientError)),
        wait=_wait,
        stop=stop_after_attempt(8) | stop_after_delay(budget),
        reraise=True,
    )
    def attempt() -> Outcome:
        if allowed is not None and not allowed():
            return Outcome(Result.FAILED, "not evicted: this replica no longer leads")
        why = refusal() if refusal is not None else ""
        if why:
            return Outcome(Result.FAILED, f"not evicted: {why}")
        try:
            core.create_namespaced_pod_eviction(
                name, namespace, body, dry_run="All" if dry_run else None
            )
        except ApiException as err:
            verdict = classify(err)
            if isinstance(verdict, TransientError):
                raise verdict from None
            return verdict
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise transport_failure(err) from None
        return Outcome(Result.EVICTED, "dry-run eviction accepted" if dry_run else "evicted", 201)

    try:
        return attempt()
    except TransientError as err:
        return Outcome(Result.FAILED, f"gave up after retries: {err}")
    except NoAnswerError as err:
        return Outcome(
            Result.FAILED, f"{err}; the eviction may still be carried out", answered=False
        )
    except DeadlineExceededError as err:
        return Outcome(Result.FAILED, f"not evicted: {err}")
