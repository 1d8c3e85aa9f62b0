"""Lambda entry points of ``EndpointBenchmark`` (``index.py`` of the asset re-exports them),
each over real clients and real HTTP; the logic is in pure functions over clients, a clock and
a sleep passed in, one module per step of the workflow, so tests run them against fakes, a
fake clock, or the loopback simulator:

- ``custom_resource``: the custom resources (start and stop the sweep; its figures as
  attributes) and the answer to CloudFormation;
- ``advance``: one step of the sweep (``results``: the S3 results; ``signal``: the gate and
  the wait condition's signal, and the workflow's catch);
- ``worker``: one worker's share of one level;
- ``run`` and ``events``: the run's configuration and every other input, validated.

The Lambda asset holds this package and ``cdk_sagemaker_llm.benchmarking`` (with the
``planning.workload`` it uses) under a stub ``cdk_sagemaker_llm`` package (no aws_cdk), so the
relative imports work both in the repository and in the asset.

Reliability rules every path follows:

- Throttling, 5xx and connection errors of Step Functions and S3 are retried here (exponential
  backoff with full jitter), only while the Lambda's remaining time allows one more call plus
  what must follow it (``Budget``); botocore makes one attempt per call, bounded by its
  connect/read timeouts. Out of time, ``on_event`` answers FAILED with the last error, and the
  workflow steps raise it, so the workflow's catch signals FAILURE with it: CloudFormation is
  never left waiting for a timeout. Permanent errors fail at once with the service's message.
- Every event is untrusted: validated (types, ranges, patterns, unknown keys) before use; a
  malformed one fails with a message naming the field, never an unhandled exception.
- Create is idempotent (the execution is named after the run: a duplicate start is
  ``ExecutionAlreadyExists``); workers claim their slice with a conditional write.
- Delete always succeeds (rollbacks never get stuck). When its physical id is this resource's
  run, it stops that execution (``StopExecution``, best effort), so no further level starts
  once the stack is gone; worker Lambdas already running finish their share of the current
  level (each stops starting requests 90 s before its 15-minute timeout at the latest), and
  ``Advance`` never runs again, so nothing signals the deleted wait condition.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from ...benchmarking import AsyncInvoker
from ...benchmarking._clock import now as epoch_now
from ..runtime_support import Budget, http_put
from ..runtime_support import client as _client
from .advance import advance_step, report_failure
from .custom_resource import dispatch, respond
from .run_config import check_run
from .run_names import EventError, field
from .worker import WORKER_CALL_SECONDS, run_worker


def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of both custom resource types."""
    budget = Budget.of(context)
    return respond(
        event,
        http_put,
        lambda: dispatch(event, sfn=_client("stepfunctions"), now=time.time(), budget=budget),
        budget,
    )


def worker(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of one worker's share of one level."""
    run = check_run(field(event, "Run", "event"))
    invoker = AsyncInvoker(
        run["EndpointName"],
        inference_component=run["InferenceComponentName"] or None,
        region=os.environ.get("AWS_REGION"),
    )
    return run_worker(
        event,
        invoker=invoker,
        s3=_client("s3"),
        remaining_s=context.get_remaining_time_in_millis() / 1000.0,
        budget=Budget.of(context, reserve=0.0, call_seconds=WORKER_CALL_SECONDS),
    )


def advance(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of one sweep step, or of the workflow's catch (``Error`` set)."""
    if not isinstance(event, Mapping):
        raise EventError(f"state: expected an object, got {type(event).__name__}")
    budget = Budget.of(context)
    if "Error" in event:
        return report_failure(event, s3=_client("s3"), put=http_put, now=epoch_now(), budget=budget)
    return advance_step(event, s3=_client("s3"), put=http_put, now=epoch_now(), budget=budget)
