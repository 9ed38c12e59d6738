"""Every request has a deadline: default connect and read timeouts, cut to what is left of the
deadline of the work in progress; and an eviction is retried only when nothing was sent or the
server answered, never after a request went out unanswered (a paused API server would carry it
out when it resumes)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.kube import evictions
from respread.kube.client import (
    Deadline,
    DeadlineExceededError,
    Timeouts,
    request_timeout,
    with_timeouts,
    within,
)
from respread.kube.evictions import NoAnswerError, Result, TransientError, evict, transport_failure

DEFAULTS = Timeouts(connect=5.0, read=30.0)

TIMEOUT_CASES = [
    ("defaults", None, None, (5.0, 30.0)),
    ("a total of its own", 10.0, None, (5.0, 10.0)),
    ("a short total", 2.0, None, (2.0, 2.0)),
    ("a pair of its own (a watch)", (10.0, 180.0), None, (10.0, 180.0)),
    ("cut to the deadline", None, 4.0, (4.0, 4.0)),
    ("a watch cut to the deadline", (10.0, 180.0), 12.0, (10.0, 12.0)),
    ("far from the deadline", None, 100.0, (5.0, 30.0)),
]


@pytest.mark.parametrize(
    ("explicit", "left", "expected"),
    [c[1:] for c in TIMEOUT_CASES],
    ids=[c[0] for c in TIMEOUT_CASES],
)
def test_every_request_gets_connect_and_read_timeouts(
    explicit: Any, left: float | None, expected: tuple[float, float]
) -> None:
    assert request_timeout(explicit, DEFAULTS, left) == expected


@pytest.mark.parametrize("left", [0.0, -3.0])
def test_no_request_is_sent_once_the_deadline_has_passed(left: float) -> None:
    with pytest.raises(DeadlineExceededError, match="request not sent"):
        request_timeout(None, DEFAULTS, left)


class Recorder:
    """Stands in for the client's REST layer: records the timeout each request carried."""

    def __init__(self) -> None:
        self.timeouts: list[Any] = []
        self.configuration = client.Configuration()
        self.pool_manager = None

    def request(self, method: str, url: str, **kwargs: Any) -> str:
        self.timeouts.append(kwargs["_request_timeout"])
        return "answer"

    def close(self) -> None:
        pass


def test_the_client_applies_them_and_a_closed_deadline_binds_nothing() -> None:
    api = client.ApiClient(client.Configuration())
    recorder = Recorder()
    api.rest_client = recorder
    with_timeouts(api, DEFAULTS)
    with_timeouts(api, Timeouts(connect=1.0, read=3.0))  # twice: replaced, not stacked
    assert api.rest_client.request("GET", "/x") == "answer"
    deadline = Deadline(time.monotonic() + 2.0)
    with within(deadline):
        api.rest_client.request("GET", "/x")
        deadline.at = time.monotonic() - 1
        with pytest.raises(DeadlineExceededError):
            api.rest_client.request("GET", "/x")
        deadline.close()  # the scan is over: a task it started is no longer bound
        api.rest_client.request("GET", "/x", _request_timeout=(2.0, 7.0))
    assert recorder.timeouts[0] == (1.0, 3.0)
    connect, read = recorder.timeouts[1]
    assert connect == 1.0 and 1.5 < read <= 2.0
    assert recorder.timeouts[2] == (2.0, 7.0)
    assert len(recorder.timeouts) == 3  # the refused one never reached the REST layer


# ---- evictions: what is retried ----------------------------------------------------------------


def pool() -> urllib3.HTTPConnectionPool:
    return urllib3.HTTPConnectionPool("127.0.0.1")


TRANSPORT_CASES: list[tuple[str, Exception, type[Exception]]] = [
    ("refused", ConnectionRefusedError("refused"), TransientError),
    (
        "no connection",
        urllib3.exceptions.MaxRetryError(
            pool(), "/", urllib3.exceptions.NewConnectionError(None, "refused")
        ),
        TransientError,
    ),
    ("connect timeout", urllib3.exceptions.ConnectTimeoutError("slow"), TransientError),
    ("read timeout", urllib3.exceptions.ReadTimeoutError(pool(), "/", "read"), NoAnswerError),
    ("dropped", urllib3.exceptions.ProtocolError("connection aborted"), NoAnswerError),
    ("reset", ConnectionResetError("reset"), NoAnswerError),
]


@pytest.mark.parametrize(
    ("err", "kind"), [c[1:] for c in TRANSPORT_CASES], ids=[c[0] for c in TRANSPORT_CASES]
)
def test_a_transport_failure_is_retried_only_if_nothing_was_sent(
    err: Exception, kind: type[Exception]
) -> None:
    assert isinstance(transport_failure(err), kind)


class FakeCore:
    """CoreV1Api's eviction call, failing as told, one failure per attempt."""

    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures
        self.attempts = 0

    def create_namespaced_pod_eviction(self, *args: Any, **kwargs: Any) -> None:
        self.attempts += 1
        if self.failures:
            raise self.failures.pop(0)


@pytest.fixture
def core(monkeypatch: pytest.MonkeyPatch) -> Any:
    def make(failures: list[Exception], wait: float = 0.0) -> FakeCore:
        fake = FakeCore(failures)
        monkeypatch.setattr(evictions.client, "CoreV1Api", lambda api: fake)
        monkeypatch.setattr(evictions, "_wait", lambda state: wait)
        return fake

    return make


API: Any = object()


def test_an_unanswered_eviction_is_not_sent_again(core: Any) -> None:
    fake = core([urllib3.exceptions.ReadTimeoutError(pool(), "/", "read"), None])
    outcome = evict(API, "ns", "web-1", uid="u1")
    assert fake.attempts == 1
    assert outcome.result is Result.FAILED and not outcome.answered
    assert "may still be carried out" in outcome.reason


def test_an_eviction_that_could_not_be_sent_or_was_throttled_is_retried(core: Any) -> None:
    throttled = ApiException(status=429, reason="Too Many Requests")
    fake = core([ConnectionRefusedError("refused"), throttled])
    outcome = evict(API, "ns", "web-1", uid="u1")
    assert fake.attempts == 3
    assert outcome.result is Result.EVICTED and outcome.answered


def test_retries_stop_at_the_deadline_of_the_work_in_progress(core: Any) -> None:
    fake = core([ConnectionRefusedError("refused")] * 20, wait=0.2)
    with within(Deadline(time.monotonic() + 0.5)):
        outcome = evict(API, "ns", "web-1", uid="u1")
    assert fake.attempts <= 4  # its own budget (60 s) would allow 8 attempts, 0.2 s apart
    assert outcome.result is Result.FAILED and outcome.reason.startswith("gave up")


def test_a_refusal_asked_before_each_attempt_stops_it(core: Any) -> None:
    fake = core([ConnectionRefusedError("refused")] * 3)
    reasons = iter(["", "the process was paused"])
    outcome = evict(API, "ns", "web-1", uid="u1", refusal=lambda: next(reasons))
    assert fake.attempts == 1
    assert outcome.result is Result.FAILED
    assert outcome.reason == "not evicted: the process was paused"
