"""What every custom-resource handler needs: a time budget taken from the Lambda context, AWS
calls retried within it, and answers PUT to CloudFormation's presigned URLs.

Plain Python + botocore (no aws_cdk): the handlers' Lambda assets ship this module beside them.

- Throttling, 5xx and connection errors are retried here (exponential backoff with full
  jitter), only while the Lambda's remaining time allows one more call plus what must follow
  it (``Budget``); botocore makes one attempt per call, bounded by its connect/read timeouts
  (``client``). Out of time, the last error is raised as ``OutOfTime``, so a handler still
  answers before its Lambda times out: CloudFormation is never left waiting for a timeout.
- Permanent errors are raised at once, with the service's message.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ConnectionError as BotocoreConnectionError
from botocore.exceptions import HTTPClientError

RETRYABLE_ERRORS = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "SlowDown",
        "ServiceUnavailable",
        "InternalFailure",
        "InternalError",
        "InternalServerError",
        "RequestTimeout",
    }
)
"""Error codes worth another try (SageMaker, Step Functions and S3 spell them differently)."""
MAX_ATTEMPTS = 6
BASE_DELAY = 1.0
MAX_DELAY = 20.0
"""Backoff before retry ``n`` (0-based): uniform in [0, min(MAX_DELAY, BASE_DELAY * 2**n)]."""
MAX_REASON = 1000
"""CloudFormation shows reasons in stack events; keep them readable and within limits."""

CONNECT_TIMEOUT = 5
READ_TIMEOUT = 20
CALL_SECONDS = float(CONNECT_TIMEOUT + READ_TIMEOUT)
"""The longest one API call can take (botocore makes one attempt; see ``client``)."""
PUT_TIMEOUT = 10
PUT_ATTEMPTS = 3
RESPONSE_RESERVE = 15.0
"""Lambda time kept back for the PUT that answers CloudFormation (or signals the handle)."""

HTTPS_URL = re.compile(r"https://[A-Za-z0-9.-]+(:\d+)?(/\S*)?")
"""The shape of a presigned response or wait-handle URL."""

Sleep = Callable[[float], None]
Put = Callable[[str, Mapping[str, Any]], None]


class HandlerError(Exception):
    """A failure reported to CloudFormation as the custom resource's reason.

    ``physical_id`` (when known) is reported with the failure, so that CloudFormation's
    rollback sends its Delete to what may have been started, which stops it.
    """

    def __init__(self, message: str, physical_id: str | None = None) -> None:
        super().__init__(message)
        self.physical_id = physical_id


class OutOfTime(HandlerError):
    """Not enough of the Lambda's time is left for another call and what must follow it."""


@dataclass
class Budget:
    """The time this invocation may still spend on calls, and how it waits between them.

    ``remaining_ms`` is the Lambda context's ``get_remaining_time_in_millis`` (None: no limit);
    ``reserve`` seconds are kept back for what must follow (the answer to CloudFormation, the
    wait-condition signal); a call starts only with ``call_seconds`` left beyond that.
    """

    remaining_ms: Callable[[], float] | None = None
    sleep: Sleep = time.sleep
    jitter: Callable[[], float] = random.random
    reserve: float = RESPONSE_RESERVE
    call_seconds: float = CALL_SECONDS

    @classmethod
    def of(cls, context: Any, **kwargs: Any) -> Budget:
        """The budget of a Lambda invocation (no limit when the context has no clock)."""
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        return cls(remaining if callable(remaining) else None, **kwargs)

    def total(self) -> float:
        """Seconds until the Lambda times out."""
        return math.inf if self.remaining_ms is None else float(self.remaining_ms()) / 1000.0

    def left(self) -> float:
        """Seconds that calls may still take, the reserve excluded."""
        return self.total() - self.reserve

    def backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff before retry ``attempt`` (0-based)."""
        return self.jitter() * min(MAX_DELAY, BASE_DELAY * 2.0**attempt)


def error_code(error: BaseException) -> str:
    """The AWS error code of a botocore ``ClientError`` (empty for anything else)."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return ""
    return str(response.get("Error", {}).get("Code", ""))


def is_transient(error: BaseException) -> bool:
    """Throttling, a 5xx, or a connection that failed or timed out: worth another try."""
    if error_code(error) in RETRYABLE_ERRORS:
        return True
    response = getattr(error, "response", None)
    metadata = response.get("ResponseMetadata", {}) if isinstance(response, dict) else {}
    status = metadata.get("HTTPStatusCode") if isinstance(metadata, dict) else None
    if isinstance(status, int) and (status >= 500 or status == 429):
        return True
    return isinstance(error, BotocoreConnectionError | HTTPClientError)


def explain(error: BaseException) -> str:
    """A reason for CloudFormation: the service's own words for AWS errors."""
    if isinstance(error, HandlerError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def call_with_retry(call: Callable[..., Any], budget: Budget, /, **kwargs: Any) -> Any:
    """``call(**kwargs)``, retried with backoff and full jitter on transient errors.

    No call starts unless ``budget`` leaves it ``call_seconds`` and no backoff sleeps past that
    point: out of time, the last error is raised as ``OutOfTime``. Permanent errors and the
    last transient one after ``MAX_ATTEMPTS`` are raised as they are.
    """
    operation = getattr(call, "__name__", "call")
    last: Exception | None = None
    for attempt in range(MAX_ATTEMPTS):
        if budget.left() < budget.call_seconds:
            raise _out_of_time(operation, last, budget) from last
        try:
            return call(**kwargs)
        except Exception as error:
            if not is_transient(error) or attempt == MAX_ATTEMPTS - 1:
                raise
            last = error
            delay = budget.backoff(attempt)
            if budget.left() < delay + budget.call_seconds:
                raise _out_of_time(operation, last, budget) from error
            budget.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def _out_of_time(operation: str, last: Exception | None, budget: Budget) -> OutOfTime:
    after = f" after {explain(last)}" if last is not None else ""
    return OutOfTime(
        f"Gave up on {operation}{after}: {max(budget.total(), 0.0):.0f} s of the Lambda's "
        "time left, too little for another call and what must follow it"
    )


def send(url: str, body: Mapping[str, Any], put: Put, budget: Budget) -> None:
    """PUT ``body``, retried with backoff while the Lambda has time; raises the last error
    (the function then fails, and Lambda's own retry of the event runs it again)."""
    for attempt in range(PUT_ATTEMPTS):
        try:
            put(url, body)
            return
        except Exception:
            delay = budget.backoff(attempt)
            if attempt == PUT_ATTEMPTS - 1 or budget.total() < delay + PUT_TIMEOUT:
                raise
            budget.sleep(delay)


def respond(
    event: Any,
    put: Put,
    handler: Callable[[], dict[str, Any]],
    budget: Budget | None = None,
    *,
    reason: Callable[[BaseException], str] = explain,
    delete_never_fails: bool = False,
    delete_fails_on: tuple[type[BaseException], ...] = (),
) -> dict[str, Any]:
    """Run ``handler`` and PUT a SUCCESS or FAILED custom resource response; raises only if
    the PUT keeps failing.

    Any failure of the handler, a malformed event included, is answered FAILED with
    ``reason(error)`` (with ``delete_never_fails``, a Delete is answered SUCCESS instead,
    unless the error is one of ``delete_fails_on``: what must stop CloudFormation from going on
    to delete the resources this one depends on). An event without a usable ``ResponseURL``
    goes unanswered (no one to answer).
    """
    budget = budget or Budget()
    event = event if isinstance(event, Mapping) else {}
    body: dict[str, Any] = {
        key: event.get(key) if isinstance(event.get(key), str) else ""
        for key in ("StackId", "RequestId", "LogicalResourceId")
    }
    try:
        body.update(Status="SUCCESS", **handler())
    except Exception as error:
        physical = event.get("PhysicalResourceId")
        request_id = body["RequestId"] if len(body["RequestId"]) <= 200 else "request"
        fallback = (
            getattr(error, "physical_id", None)
            or (physical if isinstance(physical, str) and 0 < len(physical) <= 1024 else None)
            or f"failed-{request_id or 'request'}"
        )
        if (
            delete_never_fails
            and event.get("RequestType") == "Delete"
            and not isinstance(error, delete_fails_on)
        ):
            body.update(Status="SUCCESS", PhysicalResourceId=fallback, Data={})
        else:
            body.update(
                Status="FAILED", Reason=truncate(reason(error)), PhysicalResourceId=fallback
            )
    print(json.dumps({"Status": body["Status"], "Reason": body.get("Reason", "")}))
    url = event.get("ResponseURL")
    if isinstance(url, str) and len(url) <= 4096 and HTTPS_URL.fullmatch(url):
        send(url, body, put, budget)
    return body


def truncate(text: str, limit: int = MAX_REASON) -> str:
    """``text`` cut to ``limit`` characters, marked when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def shown(value: Any) -> str:
    """``value`` for an error message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def wait_condition_signal(
    status: str, reason: str, unique_id: str, data: str = ""
) -> dict[str, str]:
    """The JSON body CloudFormation expects on a wait-condition handle URL."""
    return {"Status": status, "Reason": truncate(reason), "UniqueId": unique_id, "Data": data}


def http_put(url: str, body: Mapping[str, Any]) -> None:  # pragma: no cover - network
    """PUT ``body`` as JSON to a presigned S3 URL (custom resource response, wait handle)."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(data))}
    )
    with urllib.request.urlopen(request, timeout=PUT_TIMEOUT) as response:
        response.read()


def client(service: str) -> Any:  # pragma: no cover - needs AWS
    """A client whose every call is bounded in time and not retried by botocore.

    Retries are ``call_with_retry``'s, which knows how much of the Lambda's time is left;
    botocore retrying as well would multiply the attempts and hide the time they take.
    """
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "total_max_attempts": 1},
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=READ_TIMEOUT,
    )
    factory: Callable[..., Any] = boto3.client
    return factory(service, config=config)
