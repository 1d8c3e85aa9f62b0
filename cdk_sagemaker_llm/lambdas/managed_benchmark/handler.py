"""Lambda entry points of ``EndpointBenchmark`` on a SageMaker AI benchmark job (``index.py``
of the asset re-exports them); the logic is in ``job`` over clients passed in, and in the
Lambda engine's handlers it shares (``lambdas.benchmark``: the run's checks, the custom
resources, the results, the gate and the signal)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ...benchmarking._clock import now as epoch_now
from ..benchmark.custom_resource import respond
from ..benchmark.run_names import EventError
from ..benchmark.signal import report_error
from ..runtime_support import Budget, http_put
from ..runtime_support import client as _client
from .job import JobStillActive, dispatch_managed, poll_step


def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of both custom resource types."""
    budget = Budget.of(context)
    return respond(
        event,
        http_put,
        lambda: dispatch_managed(
            event,
            sfn=_client("stepfunctions"),
            sagemaker=_client("sagemaker"),
            now=time.time(),
            budget=budget,
        ),
        budget,
        delete_fails_on=(JobStillActive,),
    )


def poll(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of one poll, or of the workflow's catch (``Error`` set)."""
    if not isinstance(event, Mapping):
        raise EventError(f"state: expected an object, got {type(event).__name__}")
    budget = Budget.of(context)
    if "Error" in event:
        return report_error(event, put=http_put, budget=budget)
    return poll_step(
        event,
        sagemaker=_client("sagemaker"),
        s3=_client("s3"),
        put=http_put,
        now=epoch_now(),
        budget=budget,
    )
