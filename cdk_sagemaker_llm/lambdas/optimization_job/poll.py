"""The Step Functions poll loop of an ``OptimizationJob``: describe the job, and signal the
wait condition once it has finished or the deadline has passed."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..event_checks import (
    MAX_WAIT_SECONDS,
    SAGEMAKER_NAME,
    EventError,
    boolean,
    integer,
    mapping,
    matching,
)
from ..job_poll import OPTIMIZATION_JOB, Phase, phase_of
from ..runtime_support import (
    HTTPS_URL,
    Budget,
    OutOfTime,
    Put,
    Sleep,
    explain,
    is_transient,
    wait_condition_signal,
)
from .job import describe, output_of, stop_job
from .job_properties import (
    INT32_MAX,
    is_job_name,
)

POLL_STATE_KEYS = frozenset({"Status", "Throttled", "Error"})
"""Keys the loop itself adds to the state the job handler starts it with."""


def check_state(state: Any, now: float) -> tuple[str, str, float]:
    """The poll state's job name, handle URL and deadline, checked (``EventError``).

    The deadline must lie within a wait condition's longest timeout from now: a huge one would
    keep polling past the point where CloudFormation stops listening.
    """
    body = mapping(state, "state", {"JobName", "HandleUrl", "Deadline", "Done"}, POLL_STATE_KEYS)
    name = matching(body["JobName"], "state.JobName", SAGEMAKER_NAME, 63)
    handle = matching(body["HandleUrl"], "state.HandleUrl", HTTPS_URL, 4096)
    deadline = integer(body["Deadline"], "state.Deadline", 0, int(now) + MAX_WAIT_SECONDS)
    boolean(body["Done"], "state.Done")
    if "Throttled" in body:
        integer(body["Throttled"], "state.Throttled", 0, INT32_MAX)
    return name, handle, float(deadline)


def poll_step(
    state: Mapping[str, Any],
    *,
    sagemaker: Any,
    put: Put,
    now: float,
    sleep: Sleep = time.sleep,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """One iteration of the poll loop; returns the next state (``Done`` ends the loop).

    The state machine runs ``poll_step`` -> Choice(``Done``) -> Wait(interval) -> ``poll_step``
    until the job has finished or the deadline (the wait condition's timeout, less a margin)
    has passed. A describe that fails transiently (throttled, 5xx, out of time) just waits for
    the next iteration, unless the deadline has passed: then the FAILURE is signalled now, with
    the error, since CloudFormation would otherwise time out without a reason. A state that
    fails its checks is signalled as a FAILURE when its handle URL can be trusted.
    """
    budget = budget or Budget(sleep=sleep)
    try:
        name, handle, deadline = check_state(state, now)
    except EventError as error:
        url = state.get("HandleUrl") if isinstance(state, Mapping) else None
        if not (isinstance(url, str) and len(url) <= 4096 and HTTPS_URL.fullmatch(url)):
            raise
        put(url, wait_condition_signal("FAILURE", f"Invalid poll state: {error}", "invalid"))
        return {**state, "Done": True, "Status": "INVALID"}
    result = {**state, "Done": False}
    try:
        job = describe(sagemaker, name, budget)
    except Exception as error:
        if now >= deadline:
            reason = (
                f"Optimization job {name} could not be described at the deployment's deadline: "
                f"{explain(error)}"
            )
            put(handle, wait_condition_signal("FAILURE", reason, name))
            return {**result, "Done": True, "Status": "UNKNOWN"}
        if is_transient(error) or isinstance(error, OutOfTime):
            result["Throttled"] = int(state.get("Throttled", 0)) + 1
            return result
        raise
    if job is None:
        put(handle, wait_condition_signal("FAILURE", f"Optimization job {name} not found", name))
        return {**result, "Done": True, "Status": "MISSING"}
    status = str(job.get("OptimizationJobStatus", ""))
    result["Status"] = status
    phase = phase_of(job, OPTIMIZATION_JOB, now=now, deadline=deadline)
    if phase is Phase.COMPLETED:
        summary = output_of(job)
        put(
            handle,
            wait_condition_signal(
                "SUCCESS",
                f"Optimization job {name} completed",
                name,
                summary["OutputS3Uri"],
            ),
        )
        return {**result, "Done": True}
    if phase is Phase.ENDED:
        reason = job.get("FailureReason") or (
            "stopped before completing (SageMaker stops a job at its max runtime)"
            if status == "STOPPED"
            else "no failure reason given"
        )
        put(
            handle,
            wait_condition_signal("FAILURE", f"Optimization job {name} {status}: {reason}", name),
        )
        return {**result, "Done": True}
    if phase is Phase.OVERDUE:
        try:
            stop_job(name, sagemaker, budget)
            outcome = "it was stopped"
        except Exception as error:
            outcome = f"stopping it failed ({explain(error)}); the stack's rollback stops it"
        put(
            handle,
            wait_condition_signal(
                "FAILURE",
                f"Optimization job {name} still {status} at the deployment's deadline; {outcome}",
                name,
            ),
        )
        return {**result, "Done": True, "Status": "STOPPING"}
    return result


def error_signal(state: Mapping[str, Any]) -> dict[str, str]:
    """The FAILURE signal sent when the poll loop itself failed (its caught error)."""
    error = state.get("Error") or {}
    if not isinstance(error, Mapping):
        error = {"Cause": error}
    cause = str(error.get("Cause") or error.get("Error") or "unknown error")
    name = state.get("JobName")
    name = name if is_job_name(name) else "optimization-job"
    reason = f"Polling optimization job {name} failed: {cause}"
    return wait_condition_signal("FAILURE", reason, str(name))
