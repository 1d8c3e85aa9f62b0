"""One poll of a SageMaker job, shared by the workflows that wait for one: ``OptimizationJob``'s
optimization job and ``EndpointBenchmark``'s SageMaker AI benchmark job. A Step Functions loop
calls a handler's poll step; the step describes the job once and acts on its ``Phase`` here
(signal, finish, stop or wait), so both read a job's life the same way.

Statuses are botocore's SageMaker model enums: ``OptimizationJobStatus`` (``STARTING``,
``INPROGRESS``, ``STOPPING``, ``COMPLETED``, ``FAILED``, ``STOPPED``) and
``AIBenchmarkJobStatus`` (``InProgress``, ``Stopping``, ``Completed``, ``Failed``,
``Stopped``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .runtime_support import Budget, call_with_retry, error_code


class Phase(Enum):
    """Where a described job stands, as a poll step acts on it."""

    MISSING = "missing"
    """SageMaker says there is no such job."""
    RUNNING = "running"
    """Still working, and the deadline has not passed: poll again."""
    OVERDUE = "overdue"
    """Still working at the deadline: the step stops it and reports the failure."""
    COMPLETED = "completed"
    """Finished with its output."""
    ENDED = "ended"
    """Failed or stopped: its ``FailureReason`` (when given) says why."""


@dataclass(frozen=True)
class JobKind:
    """How one SageMaker job API reports a job's status."""

    status_key: str
    """The ``Describe...`` response field that holds the status."""
    running: frozenset[str]
    """Statuses in which the job still works (stopping included: it has not ended)."""
    completed: str
    """The status of a job that finished with its output."""


OPTIMIZATION_JOB = JobKind(
    "OptimizationJobStatus", frozenset({"STARTING", "INPROGRESS", "STOPPING"}), "COMPLETED"
)
"""``DescribeOptimizationJob``."""
AI_BENCHMARK_JOB = JobKind(
    "AIBenchmarkJobStatus", frozenset({"InProgress", "Stopping"}), "Completed"
)
"""``DescribeAIBenchmarkJob``."""


def error_message(error: BaseException) -> str:
    """The service's message of a ``ClientError`` (empty for anything else)."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return ""
    return str(response.get("Error", {}).get("Message", ""))


def is_absent(error: BaseException) -> bool:
    """SageMaker's answer about a job that does not exist."""
    code = error_code(error)
    message = error_message(error).lower()
    return code == "ResourceNotFound" or (
        code == "ValidationException" and ("not exist" in message or "not found" in message)
    )


def describe_job(
    describe: Callable[..., Any], budget: Budget, /, **name: str
) -> dict[str, Any] | None:
    """``describe(**name)`` with retries, or None when the job does not exist."""
    try:
        return dict(call_with_retry(describe, budget, **name))
    except Exception as error:
        if is_absent(error):
            return None
        raise


def phase_of(job: Mapping[str, Any] | None, kind: JobKind, *, now: float, deadline: float) -> Phase:
    """The phase of a described job (None: it does not exist) at ``now``."""
    if job is None:
        return Phase.MISSING
    status = str(job.get(kind.status_key, ""))
    if status in kind.running:
        return Phase.OVERDUE if now >= deadline else Phase.RUNNING
    return Phase.COMPLETED if status == kind.completed else Phase.ENDED
