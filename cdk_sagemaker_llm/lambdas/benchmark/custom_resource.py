"""The custom resources: ``Custom::SageMakerEndpointBenchmark`` starts the Step Functions sweep
(Create/Update) and stops it on Delete, which always succeeds;
``Custom::SageMakerEndpointBenchmarkOutput`` turns the wait condition's data into attributes.
``respond`` answers CloudFormation for both.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from ...template_metadata import BENCHMARK_OUTPUT_RESOURCE, BENCHMARK_RESOURCE
from ..event_checks import MAX_WAIT_SECONDS
from ..runtime_support import (
    Budget,
    HandlerError,
    Put,
    call_with_retry,
    error_code,
    shown,
    truncate,
)
from ..runtime_support import respond as answer
from .run_config import RUN_KEYS, check_run, results_key
from .run_names import (
    IGNORED_PROPERTIES,
    KEY_PREFIX,
    RUN_STEM,
    STATE_MACHINE_ARN,
    EventError,
    check_request_type,
    explain,
    field,
    https_url,
    integer,
    known,
    matching,
    string,
)

RESOURCE_TYPE = BENCHMARK_RESOURCE
OUTPUT_RESOURCE_TYPE = BENCHMARK_OUTPUT_RESOURCE
MAX_SWEEP_SECONDS = MAX_WAIT_SECONDS
"""A sweep lasts at most a wait condition's longest timeout."""
RESOURCE_PROPERTIES = frozenset(
    {"RunNameStem", "Run", "ResultsPrefix", "SweepSeconds", "WaitHandle", "StateMachineArn"}
)


def run_name(stem: str, handle_url: str) -> str:
    """``<stem>-<6 hex of the wait-condition handle>``: duplicates of one CloudFormation event
    (same handle) name the same run; a new deployment (new handle) names a new one."""
    name = f"{stem}-{hashlib.sha256(handle_url.encode()).hexdigest()[:6]}"
    if len(name) > 80:
        raise EventError(f"run name {name!r} exceeds Step Functions' 80 characters")
    return name


def execution_arn(state_machine_arn: str, name: str) -> str:
    """The ARN of the execution ``name`` of a state machine."""
    return f"{state_machine_arn.replace(':stateMachine:', ':execution:', 1)}:{name}"


def stop_run(event: Mapping[str, Any], *, sfn: Any, budget: Budget) -> str:
    """Delete: stop the run's execution if it still runs, so no further level starts.

    Best effort and lenient, so deletions and rollbacks never get stuck: a physical id that is
    not this resource's run (a failed create's placeholder, anything malformed) is left alone
    without a call; a run that never started or already ended needs nothing; a stop that fails
    is logged, and the sweep then ends at its next step, as its state machine and Lambdas are
    deleted with the stack. Returns what was done.
    """
    physical = event.get("PhysicalResourceId")
    props = event.get("ResourceProperties")
    props = props if isinstance(props, Mapping) else {}
    stem, arn = props.get("RunNameStem"), props.get("StateMachineArn")
    if not (
        sfn is not None
        and isinstance(stem, str)
        and RUN_STEM.fullmatch(stem)
        and isinstance(arn, str)
        and STATE_MACHINE_ARN.fullmatch(arn)
        and isinstance(physical, str)
        and re.fullmatch(re.escape(stem) + r"-[0-9a-f]{6}", physical)
    ):
        return "not a run of this resource"
    try:
        call_with_retry(sfn.stop_execution, budget, executionArn=execution_arn(arn, physical))
    except Exception as error:
        if error_code(error) == "ExecutionDoesNotExist":
            return "never started"
        print(json.dumps({"StopExecution": physical, "Failed": truncate(explain(error))}))
        return f"not stopped: {truncate(explain(error), 200)}"
    return "stopped"


def handle_event(
    event: Mapping[str, Any], *, sfn: Any, now: float, budget: Budget | None = None
) -> dict[str, Any]:
    """``Custom::SageMakerEndpointBenchmark``: start the sweep; Delete stops it.

    Returns ``{"PhysicalResourceId", "Data"}``. The sweep is a Step Functions execution named
    after the run, so a duplicate event starts nothing more (``ExecutionAlreadyExists``). An
    Update with an unchanged definition and handle keeps the run; a changed one starts a new
    run (its wait condition is new too: its logical id carries the definition hash). Delete
    always succeeds (see ``stop_run``). ``budget`` (default: no limit) bounds the retries.
    """
    budget = budget or Budget()
    request_type = check_request_type(event)
    if request_type == "Delete":
        physical = event.get("PhysicalResourceId")
        outcome = stop_run(event, sfn=sfn, budget=budget)
        print(json.dumps({"Delete": shown(physical), "Outcome": outcome}))
        usable = isinstance(physical, str) and 0 < len(physical) <= 1024
        return {"PhysicalResourceId": physical if usable else "none", "Data": {}}
    props = field(event, "ResourceProperties", "event")
    if not isinstance(props, Mapping):
        raise EventError("ResourceProperties: expected an object")
    known(props, RESOURCE_PROPERTIES | IGNORED_PROPERTIES, "ResourceProperties")
    stem = matching(
        field(props, "RunNameStem", "ResourceProperties"),
        "ResourceProperties.RunNameStem",
        RUN_STEM,
        73,
    )
    handle = https_url(
        field(props, "WaitHandle", "ResourceProperties"), "ResourceProperties.WaitHandle"
    )
    name = run_name(stem, handle)
    wait_seconds = integer(
        field(props, "SweepSeconds", "ResourceProperties"),
        "ResourceProperties.SweepSeconds",
        60,
        MAX_SWEEP_SECONDS,
    )
    prefix = matching(
        field(props, "ResultsPrefix", "ResourceProperties"),
        "ResourceProperties.ResultsPrefix",
        KEY_PREFIX,
        800,
    )
    static = field(props, "Run", "ResourceProperties")
    if not isinstance(static, Mapping):
        raise EventError("ResourceProperties.Run: expected an object")
    computed = {"Name", "HandleUrl", "Deadline", "StartedAt", "Prefix"}
    known(static, RUN_KEYS - computed, "ResourceProperties.Run")
    run = check_run(
        {
            **static,
            "Name": name,
            "HandleUrl": handle,
            "Deadline": int(now) + wait_seconds,
            "StartedAt": now,
            "Prefix": f"{prefix}{name}/",
        },
        "ResourceProperties.Run",
    )
    state_machine = matching(
        field(props, "StateMachineArn", "ResourceProperties"),
        "ResourceProperties.StateMachineArn",
        STATE_MACHINE_ARN,
        256,
    )
    data = {
        "RunName": name,
        "ResultsS3Uri": f"s3://{run['Bucket']}/{results_key(run, 'results.json')}",
    }
    if request_type == "Update" and event.get("PhysicalResourceId") == name:
        return {"PhysicalResourceId": name, "Data": data}
    try:
        call_with_retry(
            sfn.start_execution,
            budget,
            stateMachineArn=state_machine,
            name=name,
            input=json.dumps({"Run": run, "Levels": [], "Done": False}, sort_keys=True),
        )
    except Exception as error:
        if error_code(error) != "ExecutionAlreadyExists":
            # A failed Create reports the run's name, so the rollback's Delete stops a run that
            # may have started; a failed Update keeps the current id.
            raise HandlerError(
                f"Starting the benchmark {name} failed: {explain(error)}",
                physical_id=name if request_type == "Create" else None,
            ) from error
    return {"PhysicalResourceId": name, "Data": data}


ATTRIBUTES = (
    "KneeConcurrency",
    "KneeConcurrencyPerCopy",
    "KneeP50MsPerToken",
    "MaxOutputTokensPerSecond",
    "MaxThroughputConcurrency",
    "LowestLevelP50MsPerToken",
    "SustainableRequestsPerSecond",
    "KneeAtLeast",
    "SustainableRateAtLeast",
    "ResultsS3Uri",
    "ChartS3Uri",
    "RunName",
)


def handle_output_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """``Custom::SageMakerEndpointBenchmarkOutput``: the sweep's figures as attributes.

    ``WaitData`` is the wait condition's ``Data`` attribute: a JSON object of the signals'
    ``UniqueId`` -> ``Data``; the sweep signals once, with its figures as compact JSON.
    """
    if check_request_type(event) == "Delete":
        physical = event.get("PhysicalResourceId")
        usable = isinstance(physical, str) and 0 < len(physical) <= 1024
        return {"PhysicalResourceId": physical if usable else "none", "Data": {}}
    props = field(event, "ResourceProperties", "event")
    if not isinstance(props, Mapping):
        raise EventError("ResourceProperties: expected an object")
    known(props, frozenset({"WaitData"}) | IGNORED_PROPERTIES, "ResourceProperties")
    raw = string(
        field(props, "WaitData", "ResourceProperties"),
        "ResourceProperties.WaitData",
        max_length=65536,
    )
    try:
        signals = json.loads(raw)
        values = list(signals.values()) if isinstance(signals, dict) else []
        figures = json.loads(values[0]) if len(values) == 1 else None
    except (ValueError, TypeError) as error:
        raise EventError(
            f"ResourceProperties.WaitData: not the sweep's signal data ({error})"
        ) from error
    if not isinstance(figures, dict) or any(key not in figures for key in ATTRIBUTES):
        raise EventError(
            f"ResourceProperties.WaitData: expected one signal carrying {', '.join(ATTRIBUTES)}"
        )
    for key in ATTRIBUTES:
        value = figures[key]
        if not isinstance(value, str | int | float) or len(str(value)) > 1024:
            raise EventError(f"ResourceProperties.WaitData: {key} is not a short scalar")
    data = {key: _attribute(figures[key]) for key in ATTRIBUTES}
    return {"PhysicalResourceId": f"{data['RunName'][:1000]}-output", "Data": data}


def _attribute(value: str | int | float) -> str:
    """A figure as the attribute's string; a flag as ``true``/``false`` (JSON's spelling, what
    the construct's docstrings promise), never Python's ``True``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def respond(
    event: Any,
    put: Put,
    handler: Callable[[], dict[str, Any]],
    budget: Budget | None = None,
    *,
    delete_fails_on: tuple[type[BaseException], ...] = (),
) -> dict[str, Any]:
    """``runtime_support.respond``, where a Delete answers SUCCESS: a benchmark never blocks
    deleting a stack, even after a failed create; except for ``delete_fails_on`` (the managed
    engine's job still active, which would block deleting its workload configuration next); a
    malformed event's reason names the field."""
    return answer(
        event, put, handler, budget, reason=explain, delete_never_fails=True,
        delete_fails_on=delete_fails_on,
    )  # fmt: skip


def dispatch(event: Any, *, sfn: Any, now: float, budget: Budget) -> dict[str, Any]:
    """The custom resource type's handler (``on_event`` without the real clients)."""
    kind = event.get("ResourceType") if isinstance(event, Mapping) else None
    if kind == OUTPUT_RESOURCE_TYPE:
        return handle_output_event(event)
    if kind != RESOURCE_TYPE:
        raise EventError(f"ResourceType: unsupported {shown(kind)}")
    return handle_event(event, sfn=sfn, now=now, budget=budget)
