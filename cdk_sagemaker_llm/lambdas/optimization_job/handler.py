"""Deploy-time handlers of ``OptimizationJob``: plain Python + boto3, no dependencies.

Three entry points live in this module (one Lambda asset, two functions); the work is in
``events`` (untrusted input checked),
``job`` (the two custom resources) and ``poll`` (the poll loop), re-exported here:

- ``on_event``: the CloudFormation custom resource handler for two resource types,
  ``Custom::SageMakerOptimizationJob`` (starts the job and the Step Functions poller) and
  ``Custom::SageMakerOptimizationJobOutput`` (describes a completed job: output location and
  recommended inference image, as resource attributes). It sends its own response to
  CloudFormation's ``ResponseURL`` (it is not a ``Provider`` framework ``onEvent``), so it must
  answer every event, always, before its Lambda times out;
- ``poll``: one iteration of the Step Functions poll loop: describe the job and, when it has
  finished, signal the CloudFormation wait condition with SUCCESS or FAILURE + SageMaker's
  ``FailureReason``;
- ``report_error``: the poll loop's catch-all: signal FAILURE when polling itself broke.

The logic lives in pure functions over clients passed in (``handle_job_event``,
``handle_output_event``, ``poll_step``) with the clock, the sleep and the HTTP PUT injected,
so tests drive them with botocore's Stubber and a fake clock. The entry points only build
the real clients and do the HTTP PUTs.

Reliability rules every path follows:

- Throttling, 5xx and connection errors are retried here (exponential backoff with full jitter),
  and only while the Lambda's remaining time allows one more call plus the answer
  (``Budget``); botocore itself does not retry (one retry layer, which knows the time left), and
  its connect/read timeouts bound every call. Out of time, the handler answers FAILED with the
  last error instead of timing out silently.
- Event properties are untrusted: every field is checked (type, range, pattern, required and
  unknown keys) and a bad one fails with a reason naming it, never an unhandled exception.
- Create and Update are idempotent (the job name derives from the definition and the wait
  handle); Delete succeeds for an id that never became a job and for a job already gone, and
  stops a job still running (with ``RemovalPolicy`` destroy, waits until it has ended before
  deleting its artifacts, and fails, keeping them, if it has not ended in time).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ...template_metadata import OPTIMIZATION_JOB_OUTPUT_RESOURCE, OPTIMIZATION_JOB_RESOURCE
from ..event_checks import (
    IGNORED_PROPERTIES,
    MAX_WAIT_SECONDS,
    REQUEST_TYPES,
    SAGEMAKER_NAME,
    STATE_MACHINE_ARN,
    EventError,
    boolean,
    check_request_type,
    integer,
    matching,
)
from ..job_poll import (
    error_message,
    is_absent,
)
from ..runtime_support import (
    HTTPS_URL,
    Budget,
    HandlerError,
    OutOfTime,
    Put,
    Sleep,
    call_with_retry,
    error_code,
    explain,
    http_put,
    is_transient,
    respond,
    send,
    shown,
    wait_condition_signal,
)
from ..runtime_support import client as _client
from .job import (
    RUNNING,
    TERMINAL,
    delete_artifacts,
    delete_job,
    describe,
    handle_job_event,
    handle_output_event,
    job_name,
    output_of,
    repository_arn,
    start_job,
    stop_job,
)
from .job_properties import (
    INSTANCE_TYPE,
    INT32_MAX,
    KMS_KEY,
    MAX_PREFIX_LENGTH,
    OUTPUT_STEM,
    ROLE_ARN,
    S3_URI,
    SECURITY_GROUP,
    SUBNET,
    TECHNIQUES,
    JobProperties,
    check_job_properties,
    check_request,
    coerce_request,
    is_job_name,
)
from .poll import (
    POLL_STATE_KEYS,
    check_state,
    error_signal,
    poll_step,
)

InvalidEvent = EventError
"""The name this handler gave ``EventError`` before both handlers shared it."""
JOB_RESOURCE_TYPE = OPTIMIZATION_JOB_RESOURCE
OUTPUT_RESOURCE_TYPE = OPTIMIZATION_JOB_OUTPUT_RESOURCE

__all__ = [
    "HTTPS_URL",
    "IGNORED_PROPERTIES",
    "INSTANCE_TYPE",
    "INT32_MAX",
    "JOB_RESOURCE_TYPE",
    "KMS_KEY",
    "MAX_PREFIX_LENGTH",
    "MAX_WAIT_SECONDS",
    "OUTPUT_RESOURCE_TYPE",
    "OUTPUT_STEM",
    "POLL_STATE_KEYS",
    "REQUEST_TYPES",
    "ROLE_ARN",
    "RUNNING",
    "S3_URI",
    "SAGEMAKER_NAME",
    "SECURITY_GROUP",
    "STATE_MACHINE_ARN",
    "SUBNET",
    "TECHNIQUES",
    "TERMINAL",
    "Budget",
    "EventError",
    "HandlerError",
    "InvalidEvent",
    "JobProperties",
    "OutOfTime",
    "Put",
    "Sleep",
    "boolean",
    "call_with_retry",
    "check_job_properties",
    "check_request",
    "check_request_type",
    "check_state",
    "coerce_request",
    "delete_artifacts",
    "delete_job",
    "describe",
    "error_code",
    "error_message",
    "error_signal",
    "explain",
    "handle_job_event",
    "handle_output_event",
    "http_put",
    "integer",
    "is_absent",
    "is_job_name",
    "is_transient",
    "job_name",
    "on_event",
    "output_of",
    "poll",
    "poll_step",
    "report_error",
    "repository_arn",
    "respond",
    "send",
    "shown",
    "start_job",
    "stop_job",
    "wait_condition_signal",
]
"""The entry points, and what the handler offered before it was split (tests and tools import
them from here)."""

# ----- Lambda entry points (real clients, real HTTP) ------------------------------------------


def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of both custom resource types."""
    budget = Budget.of(context)

    def handle() -> dict[str, Any]:
        kind = event.get("ResourceType") if isinstance(event, Mapping) else None
        if kind == OUTPUT_RESOURCE_TYPE:
            return handle_output_event(event, sagemaker=_client("sagemaker"), budget=budget)
        if kind != JOB_RESOURCE_TYPE:
            raise EventError(f"unsupported ResourceType {shown(kind)}")
        props = event.get("ResourceProperties")
        destroy = isinstance(props, Mapping) and props.get("RemovalPolicy") == "destroy"
        return handle_job_event(
            event,
            sagemaker=_client("sagemaker"),
            sfn=_client("stepfunctions"),
            s3=_client("s3") if destroy else None,
            budget=budget,
        )

    return respond(event, http_put, handle, budget)


def poll(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of one poll iteration, or of the loop's catch (``Error`` set)."""
    if isinstance(event, Mapping) and "Error" in event:
        return report_error(event, context)
    budget = Budget.of(context)
    return poll_step(
        event, sagemaker=_client("sagemaker"), put=http_put, now=time.time(), budget=budget
    )


def report_error(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of the poll loop's catch: signal FAILURE with the error."""
    url = event.get("HandleUrl")
    matching(url, "state.HandleUrl", HTTPS_URL, 4096)
    send(str(url), error_signal(event), http_put, Budget.of(context))
    return {**event, "Done": True}
