"""Fault injection into the OptimizationJob handlers.

Two handlers: the custom resource handler (``on_event`` -> ``respond`` -> ``handle_job_event`` /
``handle_output_event``), which answers CloudFormation itself, and the poller (``poll_step``),
which signals the wait condition. Faults come from botocore's Stubber (service errors), from a
``before-call`` hook (connection errors, slow calls) and from hostile events. Time is a fake
clock that doubles as the Lambda context (``get_remaining_time_in_millis``): nothing sleeps.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError
from botocore.stub import Stubber
from conftest import new_stack
from test_optimization_job_handler import (
    HANDLE,
    JOB_ARN,
    NOW,
    STATE_MACHINE,
    client,
    create_params,
    description,
    event,
    execution_params,
    expected_name,
    properties,
)

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.constructs.model_source import ModelSource
from cdk_sagemaker_llm.constructs.optimization_job import HANDLER_TIMEOUT as HANDLER_DURATION
from cdk_sagemaker_llm.constructs.optimization_job import OptimizationJob
from cdk_sagemaker_llm.constructs.optimization_options import (
    OptimizationOutput,
    OptimizationRun,
    OptimizationSecurity,
)
from cdk_sagemaker_llm.constructs.optimization_techniques import (
    OptimizationTechnique,
    QuantizationMethod,
)
from cdk_sagemaker_llm.lambdas import runtime_support as runtime
from cdk_sagemaker_llm.lambdas.optimization_job import handler as h
from cdk_sagemaker_llm.lambdas.optimization_job import job as job_module

HANDLER_TIMEOUT = HANDLER_DURATION.to_seconds()  # the construct's Handler function
POLLER_TIMEOUT = 60.0  # the construct's Poller function
NAME = expected_name()


# ----- the fake clock / Lambda context, clients, calls ------------------------------------------


class Clock:
    """Fake time and Lambda context: sleeping and slow calls advance it; nothing waits."""

    def __init__(self, lambda_seconds: float = HANDLER_TIMEOUT) -> None:
        self.now = 0.0
        self.end = lambda_seconds
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.end - self.now) * 1000))

    def budget(self, jitter: float = 0.5) -> h.Budget:
        return h.Budget(self.get_remaining_time_in_millis, self.sleep, jitter=lambda: jitter)


class Calls(list[tuple[str, float]]):
    """Every API call started (operation, clock time); each takes ``seconds`` of fake time."""

    def __init__(self, clock: Clock, seconds: float = 0.0) -> None:
        super().__init__()
        self.clock = clock
        self.seconds = seconds

    def watch(self, boto_client: Any) -> None:
        boto_client.meta.events.register(
            "before-parameter-build.*.*", self._started, unique_id="calls"
        )

    @staticmethod
    def unwatch(boto_client: Any) -> None:
        boto_client.meta.events.unregister("before-parameter-build.*.*", unique_id="calls")

    def _started(self, model: Any, **_: Any) -> None:
        self.append((model.name, self.clock.now))
        self.clock.now += self.seconds

    def operations(self) -> list[str]:
        return [name for name, _ in self]


@contextlib.contextmanager
def failing(boto_client: Any, operation: str, errors: list[Exception]) -> Iterator[None]:
    """Raise ``errors`` (one per call) from ``operation`` before it reaches the Stubber."""

    def raiser(**_: Any) -> None:
        if errors:
            raise errors.pop(0)

    # Before the Stubber hands out its queued response (at before-call), so none is consumed.
    event_name = f"before-parameter-build.*.{operation}"
    boto_client.meta.events.register(event_name, raiser, unique_id="failing")
    try:
        yield
    finally:
        boto_client.meta.events.unregister(event_name, unique_id="failing")


class Puts(list[tuple[str, dict[str, Any], float]]):
    """The HTTP PUTs (response URL or wait handle), timed; ``failures`` fail first."""

    def __init__(self, clock: Clock, failures: int = 0) -> None:
        super().__init__()
        self.clock = clock
        self.failures = failures

    def __call__(self, url: str, body: Any) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("connection reset by peer")
        self.append((url, dict(body), self.clock.now))


CLIENTS: dict[str, Any] = {}


def stubbed(service: str, clock: Clock) -> Iterator[tuple[Any, Stubber, Calls]]:
    """A client (made once per service: building one is the slow part), stubbed and watched."""
    boto_client = CLIENTS.setdefault(service, client(service))
    calls = Calls(clock)
    calls.watch(boto_client)
    try:
        with Stubber(boto_client) as stubber:
            yield boto_client, stubber, calls
            stubber.assert_no_pending_responses()
    finally:
        Calls.unwatch(boto_client)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sagemaker(clock: Clock) -> Iterator[tuple[Any, Stubber, Calls]]:
    yield from stubbed("sagemaker", clock)


@pytest.fixture
def sfn(clock: Clock) -> Iterator[tuple[Any, Stubber, Calls]]:
    yield from stubbed("stepfunctions", clock)


def error(stub: Stubber, operation: str, code: str, status: int = 400, message: str = "") -> None:
    stub.add_client_error(
        operation,
        service_error_code=code,
        service_message=message or f"{code} injected",
        http_status_code=status,
    )


def created(sm_stub: Stubber, name: str = NAME) -> None:
    sm_stub.add_response(
        "create_optimization_job", {"OptimizationJobArn": JOB_ARN.format(name)}, create_params(name)
    )


def started(sf_stub: Stubber, name: str = NAME) -> None:
    sf_stub.add_response(
        "start_execution",
        {"executionArn": f"{STATE_MACHINE}:{name}", "startDate": NOW},
        execution_params(name),
    )


def described(sm_stub: Stubber, status: str, name: str = NAME, **extra: Any) -> None:
    sm_stub.add_response(
        "describe_optimization_job",
        description(name, status, **extra),
        {"OptimizationJobName": name},
    )


def answer(
    ev: Any, clock: Clock, run: Callable[[h.Budget], dict[str, Any]], puts: Puts | None = None
) -> dict[str, Any]:
    """What CloudFormation receives: ``respond`` around a handler, as ``on_event`` runs it."""
    puts = puts if puts is not None else Puts(clock)
    budget = clock.budget()
    body = h.respond(ev, puts, lambda: run(budget), budget)
    (url, sent, at) = puts[-1]
    assert url == ev["ResponseURL"] and sent == body
    assert at + runtime.PUT_TIMEOUT <= clock.end, (
        "the answer must be sent before the Lambda times out"
    )
    return body


def job_event(sm: Any, sf: Any, s3_client: Any = None) -> Callable[..., Callable[[h.Budget], Any]]:
    def bind(ev: dict[str, Any]) -> Callable[[h.Budget], Any]:
        return lambda budget: h.handle_job_event(
            ev, sagemaker=sm, sfn=sf, s3=s3_client, now=NOW, budget=budget
        )

    return bind


# ===== the custom resource handler ==============================================================

# ----- transient faults are retried with backoff and jitter ------------------------------------


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ThrottlingException", 400),
        ("ServiceUnavailable", 503),
        ("InternalFailure", 500),
        ("BadGateway", 502),  # an unlisted code: its 5xx status makes it transient
    ],
)
def test_create_retries_transient_errors_then_succeeds(
    clock: Clock, sagemaker: Any, sfn: Any, code: str, status: int
) -> None:
    (sm, sm_stub, _), (sf, sf_stub, _) = sagemaker, sfn
    error(sm_stub, "create_optimization_job", code, status)
    error(sm_stub, "create_optimization_job", code, status)
    created(sm_stub)
    error(sf_stub, "start_execution", code, status)
    started(sf_stub)
    body = answer(event("Create"), clock, job_event(sm, sf)(event("Create")))
    assert body["Status"] == "SUCCESS" and body["PhysicalResourceId"] == NAME
    # Full jitter (fixed at 0.5 here) of the exponential caps 1 s, 2 s; then 1 s for StartExecution.
    assert clock.sleeps == [0.5, 1.0, 0.5]


def test_connection_errors_and_read_timeouts_are_retried(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    (sm, sm_stub, _), (sf, sf_stub, _) = sagemaker, sfn
    created(sm_stub)
    started(sf_stub)
    endpoint = "https://api.sagemaker.us-west-2.amazonaws.com"
    faults: list[Exception] = [
        EndpointConnectionError(endpoint_url=endpoint),
        ReadTimeoutError(endpoint_url=endpoint),
    ]
    with failing(sm, "CreateOptimizationJob", faults):
        body = answer(event("Create"), clock, job_event(sm, sf)(event("Create")))
    assert body["Status"] == "SUCCESS"
    assert len(clock.sleeps) == 2


def test_retries_exhausted_fail_with_the_service_message(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    (sm, sm_stub, calls), (sf, _, _) = sagemaker, sfn
    for _ in range(runtime.MAX_ATTEMPTS):
        error(sm_stub, "create_optimization_job", "ThrottlingException", message="Rate exceeded")
    clock.end = 3600.0  # time is not the limit here, attempts are
    body = answer(event("Create"), clock, job_event(sm, sf)(event("Create")))
    assert body["Status"] == "FAILED"
    assert "ThrottlingException" in body["Reason"] and "Rate exceeded" in body["Reason"]
    assert body["PhysicalResourceId"] == NAME  # the rollback's Delete reaches the job's name
    assert len(calls) == runtime.MAX_ATTEMPTS and len(clock.sleeps) == runtime.MAX_ATTEMPTS - 1
    caps = [
        min(runtime.MAX_DELAY, runtime.BASE_DELAY * 2**n) for n in range(runtime.MAX_ATTEMPTS - 1)
    ]
    assert clock.sleeps == [cap * 0.5 for cap in caps]


# ----- permanent faults fail at once with the service's message --------------------------------


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("AccessDeniedException", "User is not authorized to perform: sagemaker:Create..."),
        ("ValidationException", "Could not assume role arn:aws:iam::123456789012:role/job-role"),
        ("ResourceLimitExceeded", "The account-level service limit for ml.g5.12xlarge is 0"),
    ],
)
def test_permanent_errors_fail_immediately_with_the_message(
    clock: Clock, sagemaker: Any, sfn: Any, code: str, message: str
) -> None:
    (sm, sm_stub, calls), (sf, _, _) = sagemaker, sfn
    error(sm_stub, "create_optimization_job", code, message=message)
    body = answer(event("Create"), clock, job_event(sm, sf)(event("Create")))
    assert body["Status"] == "FAILED"
    assert code in body["Reason"] and message in body["Reason"]
    assert clock.sleeps == [] and calls.operations() == ["CreateOptimizationJob"]


def test_a_job_whose_poller_cannot_start_is_stopped_before_failing(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    (sm, sm_stub, calls), (sf, sf_stub, _) = sagemaker, sfn
    created(sm_stub)
    error(sf_stub, "start_execution", "AccessDeniedException", message="not authorized: states")
    described(sm_stub, "STARTING")
    sm_stub.add_response("stop_optimization_job", {}, {"OptimizationJobName": NAME})
    body = answer(event("Create"), clock, job_event(sm, sf)(event("Create")))
    assert body["Status"] == "FAILED" and "not authorized: states" in body["Reason"]
    assert calls.operations() == [
        "CreateOptimizationJob",
        "DescribeOptimizationJob",
        "StopOptimizationJob",
    ]


def test_a_failed_update_stops_its_new_job_and_keeps_the_current_id(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    (sm, sm_stub, calls), (sf, sf_stub, _) = sagemaker, sfn
    new_stem = "teststack-awq-461ba4fe-0badc0de"
    new = expected_name(stem=new_stem)
    created(sm_stub, new)
    error(sf_stub, "start_execution", "ExecutionLimitExceeded", message="1,000,000 open")
    described(sm_stub, "STARTING", new)
    sm_stub.add_response("stop_optimization_job", {}, {"OptimizationJobName": new})
    ev = event("Update", physical=NAME, JobNameStem=new_stem)
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert body["Status"] == "FAILED" and "1,000,000 open" in body["Reason"]
    assert body["PhysicalResourceId"] == NAME  # the rollback's Update finds the current job
    assert calls.operations()[-1] == "StopOptimizationJob"


# ----- the Lambda's remaining time -------------------------------------------------------------


def test_throttling_until_the_lambda_runs_out_answers_failed_in_time(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    (sm, sm_stub, calls), (sf, _, _) = sagemaker, sfn
    clock.end = 120.0  # a Lambda whose time runs out before the retries do
    calls.seconds = 30.0  # each call hangs most of its read timeout before being throttled
    for _ in range(3):
        error(sm_stub, "create_optimization_job", "ThrottlingException", message="Rate exceeded")
    body = answer(event("Create"), clock, job_event(sm, sf)(event("Create")))
    assert body["Status"] == "FAILED"
    assert "Gave up on create_optimization_job" in body["Reason"]
    assert "Rate exceeded" in body["Reason"]
    last_start = clock.end - runtime.RESPONSE_RESERVE - runtime.CALL_SECONDS
    assert calls and all(at <= last_start for _, at in calls), calls
    assert len(calls) == 3


def test_too_little_time_from_the_start_answers_without_calling(sagemaker: Any, sfn: Any) -> None:
    (sm, _, calls), (sf, _, _) = sagemaker, sfn
    late = Clock(lambda_seconds=runtime.RESPONSE_RESERVE + runtime.CALL_SECONDS - 1)
    body = answer(event("Create"), late, job_event(sm, sf)(event("Create")))
    assert body["Status"] == "FAILED" and "too little" in body["Reason"]
    assert calls == []


def test_a_backoff_that_would_outlast_the_budget_is_not_slept(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    (sm, sm_stub, calls), (sf, _, _) = sagemaker, sfn
    clock.now = (
        clock.end - runtime.RESPONSE_RESERVE - runtime.CALL_SECONDS - 0.4
    )  # room for a call, not a wait
    error(sm_stub, "create_optimization_job", "ServiceUnavailable", 503)
    body = answer(event("Create"), clock, job_event(sm, sf)(event("Create")))
    assert body["Status"] == "FAILED" and "ServiceUnavailable" in body["Reason"]
    assert clock.sleeps == [] and len(calls) == 1


# ----- idempotency -----------------------------------------------------------------------------


def test_duplicate_creates_make_one_job(clock: Clock, sagemaker: Any, sfn: Any) -> None:
    (sm, sm_stub, calls), (sf, sf_stub, _) = sagemaker, sfn
    created(sm_stub)
    started(sf_stub)
    # The second delivery: the name is taken (adopted), the running execution is returned.
    error(sm_stub, "create_optimization_job", "ResourceInUse", message="Job name already exists")
    described(sm_stub, "INPROGRESS")
    started(sf_stub)
    # A third, after the execution ended: ExecutionAlreadyExists is success too.
    error(sm_stub, "create_optimization_job", "ResourceInUse")
    described(sm_stub, "COMPLETED")
    error(sf_stub, "start_execution", "ExecutionAlreadyExists")
    bodies = [answer(event("Create"), clock, job_event(sm, sf)(event("Create"))) for _ in range(3)]
    assert bodies[0] == bodies[1] == bodies[2]
    assert bodies[0]["Status"] == "SUCCESS"
    created_calls = [op for op in calls.operations() if op == "CreateOptimizationJob"]
    assert len(created_calls) == 3  # one created, two refused and adopted: one job


def test_update_with_unchanged_properties_starts_nothing(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    (sm, _, sm_calls), (sf, _, sf_calls) = sagemaker, sfn
    ev = {**event("Update", physical=NAME), "OldResourceProperties": properties()}
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert body["Status"] == "SUCCESS" and body["PhysicalResourceId"] == NAME
    assert sm_calls == [] and sf_calls == []


# ----- deletes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "physical",
    ["failed-request-1", "", "x" * 2000, "teststack-awq-461ba4fe-../../etc", "ジョブ"],
)
def test_delete_after_a_failed_create_succeeds_without_calls(
    clock: Clock, sagemaker: Any, sfn: Any, physical: str
) -> None:
    (sm, _, calls), (sf, _, _) = sagemaker, sfn
    ev = event("Delete", physical=physical)
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert body["Status"] == "SUCCESS" and calls == []


def test_delete_after_a_create_rejected_for_hostile_properties_succeeds(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    (sm, _, calls), (sf, _, _) = sagemaker, sfn
    create = event("Create", JobNamePrefix=42, WaitSeconds="-1")
    failed = answer(create, clock, job_event(sm, sf)(create))
    assert failed["Status"] == "FAILED"
    delete = event("Delete", physical=failed["PhysicalResourceId"], JobNamePrefix=42)
    delete["ResourceProperties"]["Request"] = "garbage"
    body = answer(delete, clock, job_event(sm, sf)(delete))
    assert body["Status"] == "SUCCESS" and calls == []
    assert body["PhysicalResourceId"] == failed["PhysicalResourceId"] == "failed-request-1"


def test_delete_stops_a_running_job_through_throttling(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    (sm, sm_stub, calls), (sf, _, _) = sagemaker, sfn
    error(sm_stub, "describe_optimization_job", "ThrottlingException")
    described(sm_stub, "INPROGRESS")
    error(sm_stub, "stop_optimization_job", "InternalFailure", 500)
    sm_stub.add_response("stop_optimization_job", {}, {"OptimizationJobName": NAME})
    ev = event("Delete", physical=NAME)
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert body["Status"] == "SUCCESS"
    assert calls.operations().count("StopOptimizationJob") == 2


@pytest.mark.parametrize(
    ("describe_error", "stop_error"),
    [
        (("ResourceNotFound", "Optimization job not found"), None),
        (("ValidationException", f"Optimization job {NAME} does not exist."), None),
        (None, ("ResourceNotFound", "Optimization job not found")),
        (None, ("ValidationException", "Job is not in a stoppable state")),
    ],
)
def test_delete_of_a_job_already_gone_succeeds(
    clock: Clock,
    sagemaker: Any,
    sfn: Any,
    describe_error: tuple[str, str] | None,
    stop_error: tuple[str, str] | None,
) -> None:
    (sm, sm_stub, _), (sf, _, _) = sagemaker, sfn
    if describe_error:
        error(sm_stub, "describe_optimization_job", describe_error[0], message=describe_error[1])
    else:
        described(sm_stub, "STARTING")
    if stop_error:
        error(sm_stub, "stop_optimization_job", stop_error[0], message=stop_error[1])
    ev = event("Delete", physical=NAME)
    assert answer(ev, clock, job_event(sm, sf)(ev))["Status"] == "SUCCESS"


def test_delete_that_cannot_stop_the_job_fails_loudly(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    """A running job is never left behind silently: the stack shows why it could not stop."""
    (sm, sm_stub, _), (sf, _, _) = sagemaker, sfn
    described(sm_stub, "INPROGRESS")
    error(sm_stub, "stop_optimization_job", "AccessDeniedException", message="no StopOptimization")
    ev = event("Delete", physical=NAME)
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert body["Status"] == "FAILED" and "no StopOptimization" in body["Reason"]
    assert body["PhysicalResourceId"] == NAME


def test_delete_with_a_describe_that_is_not_about_absence_fails(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    (sm, sm_stub, _), (sf, _, _) = sagemaker, sfn
    error(sm_stub, "describe_optimization_job", "ValidationException", message="Malformed request")
    ev = event("Delete", physical=NAME)
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert body["Status"] == "FAILED" and "Malformed request" in body["Reason"]


def test_delete_with_destroy_retries_s3_and_removes_the_artifacts(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    (sm, sm_stub, _), (sf, _, _) = sagemaker, sfn
    s3_client = client("s3")
    described(sm_stub, "COMPLETED")
    prefix = f"optimized/{NAME}/"
    with Stubber(s3_client) as s3_stub:
        error(s3_stub, "list_objects_v2", "SlowDown", 503, "Please reduce your request rate.")
        s3_stub.add_response(
            "list_objects_v2",
            {"Contents": [{"Key": prefix + "model.safetensors"}], "IsTruncated": False},
            {"Bucket": "models", "Prefix": prefix},
        )
        error(s3_stub, "delete_objects", "InternalError", 500)
        s3_stub.add_response("delete_objects", {})
        ev = event("Delete", physical=NAME, RemovalPolicy="destroy")
        body = answer(ev, clock, job_event(sm, sf, s3_client)(ev))
        s3_stub.assert_no_pending_responses()
    assert body["Status"] == "SUCCESS" and len(clock.sleeps) == 2


# ----- a Delete under RemovalPolicy destroy waits for the job to end ------------------------------


@pytest.fixture
def stubbed_s3(sagemaker: Any) -> Iterator[tuple[Any, Stubber]]:
    """S3, stubbed, its calls recorded in SageMaker's list (one order for both clients)."""
    _, _, calls = sagemaker
    boto_client = CLIENTS.setdefault("s3", client("s3"))
    calls.watch(boto_client)
    try:
        with Stubber(boto_client) as stubber:
            yield boto_client, stubber
            stubber.assert_no_pending_responses()
    finally:
        Calls.unwatch(boto_client)


OUTPUT_PREFIX = f"optimized/{NAME}/"


def artifacts_listed_and_deleted(s3_stub: Stubber) -> None:
    s3_stub.add_response(
        "list_objects_v2",
        {"Contents": [{"Key": OUTPUT_PREFIX + "model.safetensors"}], "IsTruncated": False},
        {"Bucket": "models", "Prefix": OUTPUT_PREFIX},
    )
    s3_stub.add_response(
        "delete_objects",
        {},
        {
            "Bucket": "models",
            "Delete": {"Objects": [{"Key": OUTPUT_PREFIX + "model.safetensors"}], "Quiet": True},
        },
    )


def test_delete_with_destroy_deletes_the_artifacts_only_once_the_stopped_job_has_ended(
    clock: Clock, sagemaker: Any, sfn: Any, stubbed_s3: Any
) -> None:
    """StopOptimizationJob returns while the job is STOPPING and may still write its output:
    the folder is deleted after DescribeOptimizationJob reports STOPPED, not before."""
    (sm, sm_stub, calls), (sf, _, _), (s3_client, s3_stub) = sagemaker, sfn, stubbed_s3
    described(sm_stub, "INPROGRESS")
    sm_stub.add_response("stop_optimization_job", {}, {"OptimizationJobName": NAME})
    described(sm_stub, "STOPPING")
    described(sm_stub, "STOPPED")
    artifacts_listed_and_deleted(s3_stub)
    ev = event("Delete", physical=NAME, RemovalPolicy="destroy")
    body = answer(ev, clock, job_event(sm, sf, s3_client)(ev))
    assert body["Status"] == "SUCCESS" and body["PhysicalResourceId"] == NAME
    assert calls.operations() == [
        "DescribeOptimizationJob",
        "StopOptimizationJob",
        "DescribeOptimizationJob",  # STOPPING
        "DescribeOptimizationJob",  # STOPPED
        "ListObjectsV2",
        "DeleteObjects",
    ]
    assert clock.sleeps == [job_module.STOP_POLL_S]


def test_delete_with_destroy_of_a_job_already_stopping_waits_without_stopping_it_again(
    clock: Clock, sagemaker: Any, sfn: Any, stubbed_s3: Any
) -> None:
    """A job the poller stopped at its deadline, or a Delete retried after running out of
    time: the job is STOPPING, so it is waited for (no second StopOptimizationJob)."""
    (sm, sm_stub, calls), (sf, _, _), (s3_client, s3_stub) = sagemaker, sfn, stubbed_s3
    described(sm_stub, "STOPPING")
    described(sm_stub, "STOPPING")
    described(sm_stub, "STOPPED")
    artifacts_listed_and_deleted(s3_stub)
    ev = event("Delete", physical=NAME, RemovalPolicy="destroy")
    body = answer(ev, clock, job_event(sm, sf, s3_client)(ev))
    assert body["Status"] == "SUCCESS"
    assert "StopOptimizationJob" not in calls.operations()
    assert calls.operations()[-3:] == ["DescribeOptimizationJob", "ListObjectsV2", "DeleteObjects"]


def test_delete_with_destroy_of_a_job_still_stopping_at_the_end_of_its_time_fails_keeping_them(
    clock: Clock, sagemaker: Any, sfn: Any, stubbed_s3: Any
) -> None:
    """Out of time while the job is STOPPING: no object is deleted (the job may still write),
    and the Delete fails, in time, with a reason that names the job, its status, the folder
    kept and how to finish; a retry once the job has stopped deletes it (next test)."""
    (sm, sm_stub, calls), (sf, _, _), (s3_client, _) = sagemaker, sfn, stubbed_s3
    described(sm_stub, "INPROGRESS")
    sm_stub.add_response("stop_optimization_job", {}, {"OptimizationJobName": NAME})
    # Looks every STOP_POLL_S while the time left (reserve excluded) still holds a pause, a
    # look, a list and a delete; calls take no fake time here.
    left = HANDLER_TIMEOUT - runtime.RESPONSE_RESERVE
    pauses = (
        int((left - job_module.STOP_POLL_S - 3 * runtime.CALL_SECONDS) // job_module.STOP_POLL_S)
        + 1
    )
    for _ in range(pauses + 1):
        described(sm_stub, "STOPPING")
    ev = event("Delete", physical=NAME, RemovalPolicy="destroy")
    body = answer(ev, clock, job_event(sm, sf, s3_client)(ev))
    assert body["Status"] == "FAILED" and body["PhysicalResourceId"] == NAME
    reason = body["Reason"]
    assert NAME in reason and "STOPPING" in reason and "retry" in reason
    assert f"s3://models/{OUTPUT_PREFIX}" in reason and "not deleted" in reason
    assert "ListObjectsV2" not in calls.operations()
    assert clock.sleeps == [job_module.STOP_POLL_S] * pauses
    assert pauses >= 10, "the handler's timeout leaves time to wait out a STOPPING job"


def test_a_retried_delete_with_destroy_of_a_stopped_job_deletes_without_waiting(
    clock: Clock, sagemaker: Any, sfn: Any, stubbed_s3: Any
) -> None:
    (sm, sm_stub, calls), (sf, _, _), (s3_client, s3_stub) = sagemaker, sfn, stubbed_s3
    described(sm_stub, "STOPPED")
    artifacts_listed_and_deleted(s3_stub)
    ev = event("Delete", physical=NAME, RemovalPolicy="destroy")
    body = answer(ev, clock, job_event(sm, sf, s3_client)(ev))
    assert body["Status"] == "SUCCESS" and clock.sleeps == []
    assert calls.operations() == ["DescribeOptimizationJob", "ListObjectsV2", "DeleteObjects"]


def test_delete_with_retain_stops_the_job_without_waiting_for_it(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    """The artifacts stay, so nothing waits for STOPPING to end: the Delete answers at once."""
    (sm, sm_stub, calls), (sf, _, _) = sagemaker, sfn
    described(sm_stub, "INPROGRESS")
    sm_stub.add_response("stop_optimization_job", {}, {"OptimizationJobName": NAME})
    ev = event("Delete", physical=NAME, RemovalPolicy="retain")
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert body["Status"] == "SUCCESS" and clock.sleeps == []
    assert calls.operations() == ["DescribeOptimizationJob", "StopOptimizationJob"]


# ----- hostile events --------------------------------------------------------------------------


def without(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda props: props.pop(key)


def request_without(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda props: props["Request"].pop(key)


def setting(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(props: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = props
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[last] = value

    return apply


HOSTILE_PROPERTIES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    # wrong types
    ("prefix-int", setting("JobNamePrefix", 42), "JobNamePrefix: expected a string"),
    ("wait-float", setting("WaitSeconds", 12.5), "WaitSeconds: expected an integer"),
    ("wait-bool", setting("WaitSeconds", True), "WaitSeconds: expected an integer"),
    ("wait-text", setting("WaitSeconds", "an hour"), "WaitSeconds: expected an integer"),
    ("wait-null", setting("WaitSeconds", None), "WaitSeconds: expected an integer"),
    ("request-list", setting("Request", []), "Request: expected an object"),
    ("request-string", setting("Request", "{}"), "Request: expected an object"),
    ("role-int", setting("Request.RoleArn", 7), "RoleArn: expected a string"),
    (
        "eula-yes",
        setting("Request.ModelSource.S3.ModelAccessConfig.AcceptEula", "yes"),
        "AcceptEula",
    ),
    (
        "configs-dict",
        setting("Request.OptimizationConfigs", {}),
        "OptimizationConfigs: expected a list of 0 to 10 items, got dict",
    ),
    ("config-string", setting("Request.OptimizationConfigs", ["awq"]), "OptimizationConfigs[0]"),
    (
        "technique-list",
        setting("Request.OptimizationConfigs.0.ModelQuantizationConfig", []),
        "ModelQuantizationConfig: expected an object, got list",
    ),
    (
        "environment-int",
        setting("Request.OptimizationEnvironment", {"A": 1}),
        "OptimizationEnvironment",
    ),
    (
        "tags-dict",
        setting("Request.Tags", {"Key": "a"}),
        "Tags: expected a list of 0 to 50 items, got dict",
    ),
    # ranges
    (
        "wait-negative",
        setting("WaitSeconds", "-1"),
        "WaitSeconds: expected an integer from 1 to 43200",
    ),
    ("wait-zero", setting("WaitSeconds", "0"), "WaitSeconds: expected an integer from 1 to 43200"),
    (
        "wait-huge",
        setting("WaitSeconds", "99999999999999999999999"),
        "WaitSeconds: expected an integer",
    ),
    ("wait-beyond-12h", setting("WaitSeconds", "43201"), "WaitSeconds: expected an integer from"),
    (
        "runtime-zero",
        setting("Request.StoppingCondition.MaxRuntimeInSeconds", "0"),
        "MaxRuntimeInSeconds",
    ),
    (
        "runtime-huge",
        setting("Request.StoppingCondition.MaxRuntimeInSeconds", 10**12),
        "MaxRuntimeInSeconds",
    ),
    (
        "pending-short",
        setting("Request.StoppingCondition.MaxPendingTimeInSeconds", "60"),
        "MaxPendingTimeInSeconds",
    ),
    ("instances-negative", setting("Request.MaxInstanceCount", "-3"), "MaxInstanceCount"),
    ("instances-huge", setting("Request.MaxInstanceCount", 2**40), "MaxInstanceCount"),
    (
        "eleven-configs",
        setting("Request.OptimizationConfigs", [{"ModelShardingConfig": {}}] * 11),
        "0 to 10 items",
    ),
    (
        "26-variables",
        setting("Request.OptimizationEnvironment", {f"V{i}": "x" for i in range(26)}),
        "at most 25",
    ),
    (
        "six-security-groups",
        setting("Request.VpcConfig", {"SecurityGroupIds": ["sg-1"] * 6, "Subnets": ["subnet-1"]}),
        "SecurityGroupIds",
    ),
    (
        "no-subnets",
        setting("Request.VpcConfig", {"SecurityGroupIds": ["sg-1"], "Subnets": []}),
        "Subnets",
    ),
    # missing keys
    *[
        (f"missing-{k}", without(k), f"ResourceProperties.{k}: missing")
        for k in (
            "JobNamePrefix",
            "JobNameStem",
            "Request",
            "OutputLocationStem",
            "WaitHandle",
            "WaitSeconds",
            "StateMachineArn",
            "RemovalPolicy",
        )
    ],
    *[
        (f"request-missing-{k}", request_without(k), f"Request.{k}: missing")
        for k in (
            "RoleArn",
            "ModelSource",
            "DeploymentInstanceType",
            "OptimizationConfigs",
            "OutputConfig",
            "StoppingCondition",
        )
    ],
    ("runtime-missing", setting("Request.StoppingCondition", {}), "MaxRuntimeInSeconds"),
    # extra keys
    (
        "extra-top-level",
        setting("Debug", "true"),
        "ResourceProperties: unknown properties ['Debug']",
    ),
    (
        "extra-request-name",
        setting("Request.OptimizationJobName", "someone-elses-job"),
        "OptimizationJobName",
    ),
    (
        "extra-output-location",
        setting("Request.OutputConfig.S3OutputLocation", "s3://elsewhere/"),
        "S3OutputLocation",
    ),
    (
        "two-sources",
        setting("Request.ModelSource.SageMakerModel", {"ModelName": "m"}),
        "exactly one",
    ),
    (
        "two-techniques",
        setting("Request.OptimizationConfigs.0.ModelShardingConfig", {}),
        "exactly one",
    ),
    # malformed, unicode and very long strings
    (
        "prefix-unicode",
        setting("JobNamePrefix", "ジョブ"),
        "JobNamePrefix: 'ジョブ' does not match",
    ),
    (
        "prefix-long",
        setting("JobNamePrefix", "a" * 5000),
        "JobNamePrefix: expected a string of 1 to 47 characters",
    ),
    (
        "prefix-empty",
        setting("JobNamePrefix", ""),
        "JobNamePrefix: expected a string of 1 to 47 characters",
    ),
    ("stem-not-prefixed", setting("JobNameStem", "other-stack-e443fd55"), "JobNameStem must be"),
    ("stem-injection", setting("JobNameStem", "teststack-awq-461ba4fe-e443fd55\n"), "JobNameStem"),
    (
        "handle-http",
        setting("WaitHandle", "http://169.254.169.254/latest/meta-data"),
        "WaitHandle: 'http://169.254.169.254/latest/meta-data' does not match",
    ),
    (
        "handle-file",
        setting("WaitHandle", "file:///etc/passwd"),
        "WaitHandle: 'file:///etc/passwd' does not match",
    ),
    (
        "handle-long",
        setting("WaitHandle", "https://x.amazonaws.com/" + "a" * 5000),
        "WaitHandle: expected a string of 1 to 4096 characters",
    ),
    (
        "state-machine",
        setting("StateMachineArn", "arn:aws:lambda:us-west-2:1:function:x"),
        "StateMachineArn",
    ),
    (
        "output-stem-http",
        setting("OutputLocationStem", "https://models/optimized/"),
        "OutputLocationStem",
    ),
    ("output-stem-bucket", setting("OutputLocationStem", "s3://UPPER_case/"), "OutputLocationStem"),
    (
        "role-arn",
        setting("Request.RoleArn", "arn:aws:iam::123456789012:user/alice"),
        "RoleArn: 'arn:aws:iam::123456789012:user/alice' does not match",
    ),
    (
        "instance-type",
        setting("Request.DeploymentInstanceType", "ml.g5.12xlarge; rm -rf"),
        "DeploymentInstanceType",
    ),
    ("source-uri", setting("Request.ModelSource.S3.S3Uri", "ftp://models/x"), "S3Uri"),
    ("kms-key", setting("Request.OutputConfig.KmsKeyId", "key id with spaces"), "KmsKeyId"),
    (
        "env-value-long",
        setting("Request.OptimizationEnvironment", {"A": "é" * 5000}),
        "OptimizationEnvironment",
    ),
    (
        "removal-case",
        setting("RemovalPolicy", "DESTROY"),
        "RemovalPolicy must be retain or destroy",
    ),
    (
        "subnet-id",
        setting("Request.VpcConfig", {"SecurityGroupIds": ["sg-1"], "Subnets": ["vpc-1"]}),
        "Subnets",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [pytest.param(mutate, reason, id=case) for case, mutate, reason in HOSTILE_PROPERTIES],
)
@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_hostile_properties_fail_with_a_clear_reason_and_no_call(
    clock: Clock,
    sagemaker: Any,
    sfn: Any,
    mutate: Callable[[dict[str, Any]], None],
    reason: str,
    request_type: str,
) -> None:
    (sm, _, sm_calls), (sf, _, sf_calls) = sagemaker, sfn
    ev = event(request_type, physical=NAME if request_type == "Update" else None)
    ev["ResourceProperties"]["Request"]["OptimizationEnvironment"] = {"OPTION_DTYPE": "fp16"}
    mutate(ev["ResourceProperties"])
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert body["Status"] == "FAILED"
    assert reason in body["Reason"], body["Reason"]
    assert sm_calls == [] and sf_calls == []
    assert len(body["Reason"]) <= runtime.MAX_REASON
    # An Update keeps its old physical id; a Create gets a placeholder that Delete ignores.
    assert body["PhysicalResourceId"] == (NAME if request_type == "Update" else "failed-request-1")


@pytest.mark.parametrize(
    ("resource_properties", "reason"),
    [
        (None, "ResourceProperties: expected an object, got NoneType"),
        ([], "ResourceProperties: expected an object, got list"),
        ("JobNamePrefix=x", "ResourceProperties: expected an object, got str"),
    ],
)
def test_properties_that_are_not_an_object_fail(
    clock: Clock, sagemaker: Any, sfn: Any, resource_properties: Any, reason: str
) -> None:
    (sm, _, _), (sf, _, _) = sagemaker, sfn
    ev = {**event("Create"), "ResourceProperties": resource_properties}
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert body["Status"] == "FAILED" and reason in body["Reason"]


@pytest.mark.parametrize("request_type", ["Destroy", "create", None, 5, ["Create"]])
def test_a_wrong_request_type_fails_with_a_clear_reason(
    clock: Clock, sagemaker: Any, sfn: Any, request_type: Any
) -> None:
    (sm, _, calls), (sf, _, _) = sagemaker, sfn
    ev = {**event("Create"), "RequestType": request_type}
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert (
        body["Status"] == "FAILED"
        and "RequestType: expected Create, Update or Delete" in body["Reason"]
    )
    assert calls == []


def test_an_update_without_a_physical_id_fails(clock: Clock, sagemaker: Any, sfn: Any) -> None:
    (sm, _, _), (sf, _, _) = sagemaker, sfn
    ev = {**event("Update"), "PhysicalResourceId": 12}
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert body["Status"] == "FAILED" and "PhysicalResourceId: expected a string" in body["Reason"]


def test_a_malformed_technique_is_caught_by_botocore_before_any_request(
    clock: Clock, sagemaker: Any, sfn: Any
) -> None:
    """Nested technique settings are botocore's to check: it refuses before sending."""
    (sf, _, _) = sfn
    sm = client("sagemaker")  # not stubbed: botocore's own validation runs before any request
    sm.meta.events.register("before-send.*.*", lambda **_: pytest.fail("a request was sent"))
    ev = event("Create")
    ev["ResourceProperties"]["Request"]["OptimizationConfigs"] = [
        {"ModelQuantizationConfig": {"Image": 42, "Surprise": "x"}}
    ]
    body = answer(ev, clock, job_event(sm, sf)(ev))
    assert body["Status"] == "FAILED" and "Parameter validation failed" in body["Reason"]
    assert "Surprise" in body["Reason"] and "Image" in body["Reason"]


def test_events_without_a_usable_response_url_are_not_answered_and_do_not_raise() -> None:
    clock = Clock()
    puts = Puts(clock)
    events: list[Any] = [{}, {"ResponseURL": "http://plain"}, {"ResponseURL": 5}, "not an event"]
    for ev in events:
        body = h.respond(ev, puts, lambda: {"PhysicalResourceId": "x", "Data": {}})
        assert body["Status"] == "SUCCESS"
    assert puts == []


def test_the_response_put_is_retried_then_raises_for_lambdas_own_retry(clock: Clock) -> None:
    ev = event("Delete", physical="failed-request-1")
    puts = Puts(clock, failures=1)
    body = h.respond(ev, puts, lambda: {"PhysicalResourceId": "x", "Data": {}}, clock.budget())
    assert body["Status"] == "SUCCESS" and len(puts) == 1 and len(clock.sleeps) == 1
    always = Puts(clock, failures=99)
    with pytest.raises(OSError, match="connection reset"):
        h.respond(ev, always, lambda: {"PhysicalResourceId": "x", "Data": {}}, clock.budget())
    assert always.failures == 99 - runtime.PUT_ATTEMPTS


def test_unknown_resource_types_and_non_object_events_answer_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    puts = Puts(clock)
    monkeypatch.setattr(h, "http_put", puts)
    monkeypatch.setattr(h, "_client", lambda service: pytest.fail("no client is needed"))
    body = h.on_event({**event("Create"), "ResourceType": "Custom::Other"}, clock)
    assert body["Status"] == "FAILED" and "unsupported ResourceType" in body["Reason"]
    body = h.on_event({**event("Create"), "ResourceType": None}, clock)
    assert body["Status"] == "FAILED"
    assert len(puts) == 2


# ----- the output resource ---------------------------------------------------------------------


def output_event(**properties: Any) -> dict[str, Any]:
    return {
        **event("Create"),
        "ResourceType": h.OUTPUT_RESOURCE_TYPE,
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:us-west-2:123456789012:function:handler",
            "ServiceTimeout": "300",
            "JobName": NAME,
            "RequireRecommendedImage": "false",
            **properties,
        },
    }


def output_run(sm: Any, ev: dict[str, Any]) -> Callable[[h.Budget], Any]:
    return lambda budget: h.handle_output_event(ev, sagemaker=sm, budget=budget)


def test_output_retries_a_throttled_describe(clock: Clock, sagemaker: Any) -> None:
    sm, sm_stub, _ = sagemaker
    error(sm_stub, "describe_optimization_job", "ThrottlingException")
    error(sm_stub, "describe_optimization_job", "ServiceUnavailable", 503)
    described(sm_stub, "COMPLETED")
    ev = output_event()
    body = answer(ev, clock, output_run(sm, ev))
    assert body["Status"] == "SUCCESS" and body["Data"]["JobName"] == NAME
    assert clock.sleeps == [0.5, 1.0]


def test_output_reports_access_denied_with_the_message(clock: Clock, sagemaker: Any) -> None:
    sm, sm_stub, _ = sagemaker
    error(sm_stub, "describe_optimization_job", "AccessDeniedException", message="no Describe")
    ev = output_event()
    body = answer(ev, clock, output_run(sm, ev))
    assert body["Status"] == "FAILED" and "no Describe" in body["Reason"]


@pytest.mark.parametrize(
    ("properties", "reason"),
    [
        ({"JobName": None}, "JobName: expected a string"),
        ({"JobName": "../other"}, "JobName: '../other' does not match"),
        ({"JobName": "j" * 64}, "JobName: expected a string of 1 to 63 characters"),
        ({"RequireRecommendedImage": "maybe"}, "RequireRecommendedImage: expected true or false"),
        ({"RequireRecommendedImage": 1}, "RequireRecommendedImage: expected true or false"),
        ({"Extra": "x"}, "ResourceProperties: unknown properties ['Extra']"),
    ],
)
def test_output_hostile_properties_fail_with_a_clear_reason(
    clock: Clock, sagemaker: Any, properties: dict[str, Any], reason: str
) -> None:
    sm, _, calls = sagemaker
    ev = output_event(**properties)
    body = answer(ev, clock, output_run(sm, ev))
    assert body["Status"] == "FAILED" and reason in body["Reason"] and calls == []


def test_output_missing_job_name_fails_and_its_delete_always_succeeds(
    clock: Clock, sagemaker: Any
) -> None:
    sm, _, calls = sagemaker
    ev = output_event()
    del ev["ResourceProperties"]["JobName"]
    assert "ResourceProperties.JobName: missing" in answer(ev, clock, output_run(sm, ev))["Reason"]
    delete = {**ev, "RequestType": "Delete", "PhysicalResourceId": "failed-request-1"}
    assert answer(delete, clock, output_run(sm, delete))["Status"] == "SUCCESS"
    assert calls == []


# ===== the poller ===============================================================================


class Signals(list[tuple[str, dict[str, Any]]]):
    def __call__(self, url: str, body: Any) -> None:
        self.append((url, dict(body)))


def state(deadline: float = NOW + 3600, **extra: Any) -> dict[str, Any]:
    return {"JobName": NAME, "HandleUrl": HANDLE, "Deadline": int(deadline), "Done": False, **extra}


def poll(
    sm: Any, clock: Clock, at: float = NOW, **state_overrides: Any
) -> tuple[dict[str, Any], Signals]:
    signals = Signals()
    result = h.poll_step(
        state(**state_overrides), sagemaker=sm, put=signals, now=at, budget=clock.budget()
    )
    return result, signals


@pytest.fixture
def poller_clock() -> Clock:
    return Clock(POLLER_TIMEOUT)


@pytest.fixture
def poller_sagemaker(poller_clock: Clock) -> Iterator[tuple[Any, Stubber, Calls]]:
    yield from stubbed("sagemaker", poller_clock)


@pytest.mark.parametrize(
    ("code", "status"),
    [("ThrottlingException", 400), ("ServiceUnavailable", 503), ("InternalFailure", 500)],
)
def test_poll_retries_transient_errors_then_signals(
    poller_clock: Clock, poller_sagemaker: Any, code: str, status: int
) -> None:
    sm, sm_stub, _ = poller_sagemaker
    error(sm_stub, "describe_optimization_job", code, status)
    error(sm_stub, "describe_optimization_job", code, status)
    described(sm_stub, "COMPLETED")
    result, signals = poll(sm, poller_clock)
    assert result["Done"] is True and signals[0][1]["Status"] == "SUCCESS"
    assert poller_clock.sleeps == [0.5, 1.0]


def test_poll_retries_a_connection_error(poller_clock: Clock, poller_sagemaker: Any) -> None:
    sm, sm_stub, _ = poller_sagemaker
    described(sm_stub, "INPROGRESS")
    with failing(
        sm, "DescribeOptimizationJob", [EndpointConnectionError(endpoint_url="https://sm")]
    ):
        result, signals = poll(sm, poller_clock)
    assert result["Done"] is False and result["Status"] == "INPROGRESS" and signals == []


def test_poll_out_of_time_before_the_deadline_waits_for_the_next_iteration(
    poller_clock: Clock, poller_sagemaker: Any
) -> None:
    sm, sm_stub, calls = poller_sagemaker
    calls.seconds = 10.0
    error(sm_stub, "describe_optimization_job", "ThrottlingException")
    error(sm_stub, "describe_optimization_job", "ThrottlingException")
    result, signals = poll(sm, poller_clock, Throttled=2)
    assert result["Done"] is False and result["Throttled"] == 3 and signals == []
    last_start = poller_clock.end - runtime.RESPONSE_RESERVE - runtime.CALL_SECONDS
    assert all(at <= last_start for _, at in calls) and len(calls) == 2
    assert poller_clock.now < poller_clock.end


@pytest.mark.parametrize(
    ("code", "status"),
    [("ThrottlingException", 400), ("InternalFailure", 500), ("AccessDeniedException", 400)],
)
def test_poll_that_cannot_describe_the_job_keeps_the_deadline(
    poller_clock: Clock, poller_sagemaker: Any, code: str, status: int
) -> None:
    sm, sm_stub, _ = poller_sagemaker
    attempts = 1 if code == "AccessDeniedException" else 2  # the 60-s Lambda's budget
    for _ in range(attempts):
        error(sm_stub, "describe_optimization_job", code, status, message="cannot describe")
    poller_sagemaker[2].seconds = 10.0
    result, signals = poll(sm, poller_clock, at=NOW + 10, deadline=NOW)
    assert result["Done"] is True and result["Status"] == "UNKNOWN"
    ((url, body),) = signals
    assert url == HANDLE and body["Status"] == "FAILURE"
    assert "deadline" in body["Reason"] and "cannot describe" in body["Reason"]


def test_poll_permanent_error_before_the_deadline_is_raised_for_the_workflow(
    poller_clock: Clock, poller_sagemaker: Any
) -> None:
    """Step Functions retries the task, then its catch signals FAILURE with the cause."""
    sm, sm_stub, _ = poller_sagemaker
    error(sm_stub, "describe_optimization_job", "AccessDeniedException", message="no Describe")
    with pytest.raises(Exception, match="no Describe"):
        poll(sm, poller_clock)
    assert poller_clock.sleeps == []


def test_poll_at_the_deadline_signals_even_when_the_stop_fails(
    poller_clock: Clock, poller_sagemaker: Any
) -> None:
    sm, sm_stub, _ = poller_sagemaker
    described(sm_stub, "INPROGRESS")
    described(sm_stub, "INPROGRESS")
    error(sm_stub, "stop_optimization_job", "AccessDeniedException", message="no Stop")
    result, signals = poll(sm, poller_clock, at=NOW + 1, deadline=NOW)
    assert result["Done"] is True
    ((_, body),) = signals
    assert body["Status"] == "FAILURE" and "no Stop" in body["Reason"]
    assert "rollback stops it" in body["Reason"]


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"Deadline": "soon"}, "state.Deadline: expected an integer"),
        ({"Deadline": -5}, "state.Deadline: expected an integer from 0"),
        ({"Deadline": int(NOW) + 10**9}, "state.Deadline: expected an integer from 0"),
        ({"Deadline": 1.5e300}, "state.Deadline: expected an integer from 0"),
        ({"JobName": "x" * 64}, "state.JobName: expected a string of 1 to 63 characters"),
        ({"JobName": "job; rm -rf"}, "state.JobName: 'job; rm -rf' does not match"),
        ({"JobName": None}, "state.JobName: expected a string"),
        ({"Done": "perhaps"}, "state.Done: expected true or false"),
        ({"Throttled": -1}, "state.Throttled: expected an integer from 0"),
        ({"Injected": "x"}, "state: unknown properties ['Injected']"),
    ],
)
def test_poll_hostile_state_signals_failure_without_calls(
    poller_clock: Clock, poller_sagemaker: Any, overrides: dict[str, Any], reason: str
) -> None:
    sm, _, calls = poller_sagemaker
    signals = Signals()
    result = h.poll_step(
        {**state(), **overrides}, sagemaker=sm, put=signals, now=NOW, budget=poller_clock.budget()
    )
    assert result["Done"] is True and calls == []
    ((url, body),) = signals
    assert url == HANDLE and body["Status"] == "FAILURE" and reason in body["Reason"]


@pytest.mark.parametrize(
    "handle", [None, 5, "http://169.254.169.254/", "file:///etc/passwd", "https://x/" + "a" * 5000]
)
def test_poll_state_with_an_untrusted_handle_raises_a_clear_error_and_puts_nothing(
    poller_clock: Clock, poller_sagemaker: Any, handle: Any
) -> None:
    sm, _, calls = poller_sagemaker
    signals = Signals()
    with pytest.raises(h.InvalidEvent, match=r"state\.HandleUrl"):
        h.poll_step(
            {**state(), "HandleUrl": handle}, sagemaker=sm, put=signals, now=NOW, budget=None
        )
    assert signals == [] and calls == []


def test_poll_state_that_is_not_an_object_raises_a_clear_error(poller_sagemaker: Any) -> None:
    sm, _, _ = poller_sagemaker
    with pytest.raises(h.InvalidEvent, match="state: expected an object"):
        h.poll_step(["x"], sagemaker=sm, put=Signals(), now=NOW)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "error_value", [None, "boom", 42, {"Cause": None, "Error": None}, {"Cause": "x" * 5000}]
)
def test_error_signal_tolerates_any_caught_error(error_value: Any) -> None:
    body = h.error_signal({"JobName": "../../x", "HandleUrl": HANDLE, "Error": error_value})
    assert body["Status"] == "FAILURE" and body["UniqueId"] == "optimization-job"
    assert len(body["Reason"]) <= runtime.MAX_REASON


# ===== what the construct synthesizes passes the checks ========================================

PLACEHOLDERS = {
    "RoleArn": "arn:aws:iam::123456789012:role/job-role",
    "KmsKeyId": "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "StateMachineArn": STATE_MACHINE,
    "WaitHandle": HANDLE,
    "ModelName": "base-model",
    "ServiceToken": "arn:aws:lambda:us-west-2:123456789012:function:handler",
    "SecurityGroupIds": "sg-0123456789abcdef0",
}
PSEUDO = {
    "AWS::Region": "us-west-2",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::Partition": "aws",
    "AWS::AccountId": "123456789012",
}


def as_delivered(value: Any, key: str = "") -> Any:
    """A template value as CloudFormation delivers it: intrinsics resolved, scalars as strings."""
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)).startswith(("Fn::", "Ref")):
            ((function, argument),) = value.items()
            if function == "Ref" and argument in PSEUDO:
                return PSEUDO[argument]
            if function == "Fn::Join":
                return argument[0].join(str(as_delivered(part, key)) for part in argument[1])
            return PLACEHOLDERS[key]
        return {k: as_delivered(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [as_delivered(v, key) for v in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def synthesized_properties(**overrides: Any) -> dict[str, Any]:
    stack = new_stack()
    bucket = s3.Bucket.from_bucket_name(stack, "Models", "models")
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0a1b2c3d4e5f60718",
        availability_zones=["us-west-2a"],
        private_subnet_ids=["subnet-0a1b2c3d4e5f60718"],
    )
    props: dict[str, Any] = {
        "source": ModelSource.from_s3(bucket, "llama-3-8b/"),
        "instance_type": InstanceType.G5_12XLARGE,
        "techniques": [OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
        "output": OptimizationOutput.in_bucket(
            bucket,
            encryption_key=kms.Key(stack, "Key", enable_key_rotation=True),
            removal_policy=cdk.RemovalPolicy.DESTROY,
        ),
        "security": OptimizationSecurity.in_vpc(vpc),
        "accept_eula": True,
        "environment": {"OPTION_DTYPE": "fp16"},
        "run": OptimizationRun(max_runtime=cdk.Duration.hours(3)),
        **overrides,
    }
    OptimizationJob(stack, "Awq", **props)
    resources = Template.from_stack(stack).to_json()["Resources"]
    (job,) = [r for r in resources.values() if r["Type"] == "Custom::SageMakerOptimizationJob"]
    return dict(as_delivered(copy.deepcopy(job["Properties"])))


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"techniques": [OptimizationTechnique.sharding(tensor_parallel_degree=4)]},
        {
            "techniques": [OptimizationTechnique.speculative_decoding()],
            "security": OptimizationSecurity.managed_network(),
        },
    ],
)
def test_every_synthesized_variant_passes_the_checks_and_botocore(overrides: Any) -> None:
    props = synthesized_properties(**overrides)
    checked = h.check_job_properties(props)
    # The poller's deadline: the max runtime plus the 30 minutes a job may queue (it was 10,
    # the wait condition's 30 less the signal margin).
    assert checked.destroy and checked.wait_seconds == 3 * 3600 + 1800
    sm = client("sagemaker")
    with Stubber(sm) as stubber:
        stubber.add_response("create_optimization_job", {"OptimizationJobArn": "x"})
        name = h.job_name(checked.stem, checked.handle)
        sm.create_optimization_job(
            OptimizationJobName=name,
            **{
                **checked.request,
                "OutputConfig": {
                    **checked.request["OutputConfig"],
                    "S3OutputLocation": f"{checked.output_stem}{name}/",
                },
            },
        )
    assert json.dumps(checked.request)  # plain JSON, no tokens left
