"""Fault injection into the EndpointBenchmark handlers.

Three handlers: the starter (``respond`` -> ``dispatch`` -> ``handle_event`` /
``handle_output_event``), which answers CloudFormation itself; ``advance`` (``advance_step``,
``report_error``), which signals the wait condition; and the ``worker`` (``run_worker``).
Faults come from botocore's Stubber (service errors), a ``before-parameter-build`` hook
(connection errors, slow calls) and hostile events. Time is a fake clock that doubles as the
Lambda context (``get_remaining_time_in_millis``): nothing sleeps.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.stub import ANY, Stubber
from test_endpoint_benchmark_handler import HANDLE, cfn_event, run_config

from cdk_sagemaker_llm.benchmarking import RequestSample
from cdk_sagemaker_llm.lambdas import runtime_support as runtime
from cdk_sagemaker_llm.lambdas.benchmark.advance import advance_step, plan_level
from cdk_sagemaker_llm.lambdas.benchmark.custom_resource import (
    ATTRIBUTES,
    OUTPUT_RESOURCE_TYPE,
    dispatch,
    respond,
    run_name,
)
from cdk_sagemaker_llm.lambdas.benchmark.run_config import results_key, samples_key
from cdk_sagemaker_llm.lambdas.benchmark.run_names import EventError
from cdk_sagemaker_llm.lambdas.benchmark.signal import report_error
from cdk_sagemaker_llm.lambdas.benchmark.worker import WORKER_CALL_SECONDS, run_worker
from cdk_sagemaker_llm.lambdas.runtime_support import Budget

STARTER_TIMEOUT = 60.0  # the construct's Starter function
ADVANCE_TIMEOUT = 300.0  # the construct's Advance function
WORKER_TIMEOUT = 900.0  # the construct's Worker function
STATE_MACHINE = "arn:aws:states:us-west-2:1:stateMachine:W"
RESPONSE_URL = "https://cloudformation-custom-resource-response/x"


# ----- the fake clock / Lambda context, clients, calls ---------------------------------------


class Clock:
    """Fake time and Lambda context: sleeping and slow calls advance it; nothing waits."""

    def __init__(self, lambda_seconds: float = STARTER_TIMEOUT) -> None:
        self.now = 0.0
        self.end = lambda_seconds
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.end - self.now) * 1000))

    def budget(self, **kwargs: Any) -> Budget:
        return Budget.of(self, jitter=lambda: 0.5, sleep=self.sleep, **kwargs)


class Calls(list[tuple[str, float]]):
    """Every API call started (operation, clock time); each takes ``seconds`` of fake time."""

    def __init__(self, clock: Clock, seconds: float = 0.0) -> None:
        super().__init__()
        self.clock = clock
        self.seconds = seconds

    def _started(self, model: Any, **_: Any) -> None:
        self.append((model.name, self.clock.now))
        self.clock.now += self.seconds

    def operations(self) -> list[str]:
        return [name for name, _ in self]


CLIENTS: dict[str, Any] = {}


def client(service: str) -> Any:
    if service not in CLIENTS:
        factory: Callable[..., Any] = boto3.client
        CLIENTS[service] = factory(
            service,
            region_name="us-west-2",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
    return CLIENTS[service]


def stubbed(service: str, clock: Clock) -> Iterator[tuple[Any, Stubber, Calls]]:
    boto_client = client(service)
    calls = Calls(clock)
    boto_client.meta.events.register(
        "before-parameter-build.*.*", calls._started, unique_id="calls"
    )
    try:
        with Stubber(boto_client) as stubber:
            yield boto_client, stubber, calls
            stubber.assert_no_pending_responses()
    finally:
        boto_client.meta.events.unregister("before-parameter-build.*.*", unique_id="calls")


@contextlib.contextmanager
def failing(boto_client: Any, operation: str, errors: list[Exception]) -> Iterator[None]:
    """Raise ``errors`` (one per call) from ``operation`` before it reaches the Stubber."""

    def raiser(**_: Any) -> None:
        if errors:
            raise errors.pop(0)

    name = f"before-parameter-build.*.{operation}"
    boto_client.meta.events.register(name, raiser, unique_id="failing")
    try:
        yield
    finally:
        boto_client.meta.events.unregister(name, unique_id="failing")


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


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sfn(clock: Clock) -> Iterator[tuple[Any, Stubber, Calls]]:
    yield from stubbed("stepfunctions", clock)


@pytest.fixture
def s3(clock: Clock) -> Iterator[tuple[Any, Stubber, Calls]]:
    yield from stubbed("s3", clock)


def error(stub: Stubber, operation: str, code: str, status: int = 400, message: str = "") -> None:
    stub.add_client_error(
        operation,
        service_error_code=code,
        service_message=message or f"{code} injected",
        http_status_code=status,
    )


def event(request_type: str = "Create", physical: str | None = None, **props: Any) -> Any:
    ev = cfn_event(request_type, **props)
    ev["ResponseURL"] = RESPONSE_URL
    if physical is not None:
        ev["PhysicalResourceId"] = physical
    return ev


NAME = run_name("x-bench-980695c5-60b9b797", HANDLE)
EXECUTION = f"arn:aws:states:us-west-2:1:execution:W:{NAME}"


def started(stub: Stubber) -> None:
    stub.add_response(
        "start_execution",
        {"executionArn": EXECUTION, "startDate": 0},
        {"stateMachineArn": STATE_MACHINE, "name": NAME, "input": ANY},
    )


def stopped(stub: Stubber) -> None:
    stub.add_response("stop_execution", {"stopDate": 0}, {"executionArn": EXECUTION})


def answer(ev: Any, clock: Clock, sfn_client: Any, puts: Puts | None = None) -> dict[str, Any]:
    """What CloudFormation receives: ``respond`` around ``dispatch``, as ``on_event`` runs it."""
    puts = puts if puts is not None else Puts(clock)
    budget = clock.budget()
    body = respond(
        ev, puts, lambda: dispatch(ev, sfn=sfn_client, now=1000.0, budget=budget), budget
    )
    (url, sent, at) = puts[-1]
    assert url == RESPONSE_URL and sent == body
    assert at + runtime.PUT_TIMEOUT <= clock.end, (
        "the answer must be sent before the Lambda times out"
    )
    return body


# ===== the starter (custom resource) =========================================================


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ThrottlingException", 400),
        ("ServiceUnavailable", 503),
        ("InternalFailure", 500),
        ("BadGateway", 502),  # an unlisted code: its 5xx status makes it transient
    ],
)
def test_start_retries_transient_errors_with_jittered_backoff(
    clock: Clock, sfn: Any, code: str, status: int
) -> None:
    sf, stub, calls = sfn
    error(stub, "start_execution", code, status)
    error(stub, "start_execution", code, status)
    started(stub)
    body = answer(event(), clock, sf)
    assert body["Status"] == "SUCCESS" and body["PhysicalResourceId"] == NAME
    assert clock.sleeps == [0.5, 1.0]  # full jitter (0.5 here) of 1 s, 2 s
    assert calls.operations() == ["StartExecution"] * 3


def test_start_retries_a_connection_error(clock: Clock, sfn: Any) -> None:
    sf, stub, _ = sfn
    started(stub)
    faults: list[Exception] = [EndpointConnectionError(endpoint_url="https://states")]
    with failing(sf, "StartExecution", faults):
        body = answer(event(), clock, sf)
    assert body["Status"] == "SUCCESS" and len(clock.sleeps) == 1


def test_start_retries_exhausted_fail_with_the_service_message(clock: Clock, sfn: Any) -> None:
    sf, stub, calls = sfn
    for _ in range(runtime.MAX_ATTEMPTS):
        error(stub, "start_execution", "ThrottlingException", message="Rate exceeded")
    clock.end = 3600.0  # attempts are the limit here, not time
    body = answer(event(), clock, sf)
    assert body["Status"] == "FAILED"
    assert "ThrottlingException" in body["Reason"] and "Rate exceeded" in body["Reason"]
    assert body["PhysicalResourceId"] == NAME  # the rollback's Delete reaches the run
    assert len(calls) == runtime.MAX_ATTEMPTS and len(clock.sleeps) == runtime.MAX_ATTEMPTS - 1


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("AccessDeniedException", "User is not authorized to perform: states:StartExecution"),
        ("ExecutionLimitExceeded", "1,000,000 open executions"),
        ("StateMachineDoesNotExist", "State Machine Does Not Exist"),
    ],
)
def test_start_permanent_errors_fail_immediately_with_the_message(
    clock: Clock, sfn: Any, code: str, message: str
) -> None:
    sf, stub, calls = sfn
    error(stub, "start_execution", code, message=message)
    body = answer(event(), clock, sf)
    assert body["Status"] == "FAILED" and code in body["Reason"] and message in body["Reason"]
    assert clock.sleeps == [] and len(calls) == 1


def test_throttling_until_the_lambda_runs_out_answers_failed_in_time(
    clock: Clock, sfn: Any
) -> None:
    sf, stub, calls = sfn
    calls.seconds = 15.0  # each call hangs before it is throttled
    for _ in range(2):
        error(stub, "start_execution", "ThrottlingException", message="Rate exceeded")
    body = answer(event(), clock, sf)
    assert body["Status"] == "FAILED"
    assert "Gave up on start_execution" in body["Reason"] and "Rate exceeded" in body["Reason"]
    last_start = clock.end - runtime.RESPONSE_RESERVE - runtime.CALL_SECONDS
    assert calls and all(at <= last_start for _, at in calls)


def test_too_little_time_from_the_start_answers_without_calling(sfn: Any) -> None:
    sf, _, calls = sfn
    late = Clock(lambda_seconds=runtime.RESPONSE_RESERVE + runtime.CALL_SECONDS - 1)
    body = answer(event(), late, sf)
    assert body["Status"] == "FAILED" and "too little" in body["Reason"] and calls == []


def test_duplicate_creates_start_one_execution(clock: Clock, sfn: Any) -> None:
    sf, stub, calls = sfn
    started(stub)
    error(stub, "start_execution", "ExecutionAlreadyExists", message="Execution Already Exists")
    first, again = answer(event(), clock, sf), answer(event(), clock, sf)
    assert first == again and first["Status"] == "SUCCESS" and first["PhysicalResourceId"] == NAME
    assert calls.operations() == ["StartExecution", "StartExecution"]  # one name: one run


def test_update_with_the_same_run_calls_nothing(clock: Clock, sfn: Any) -> None:
    sf, _, calls = sfn
    body = answer(event("Update", physical=NAME), clock, sf)
    assert body["Status"] == "SUCCESS" and body["PhysicalResourceId"] == NAME and calls == []


@pytest.mark.parametrize(
    "physical", ["failed-req", "", "x" * 2000, "ジョブ", f"{NAME}x", "other-stem-abcdef", None]
)
def test_delete_after_a_failed_create_succeeds_without_calls(
    clock: Clock, sfn: Any, physical: str | None
) -> None:
    sf, _, calls = sfn
    ev = event("Delete")
    ev["PhysicalResourceId"] = physical
    body = answer(ev, clock, sf)
    assert body["Status"] == "SUCCESS" and calls == []
    assert len(body["PhysicalResourceId"]) <= 1024


def test_delete_after_a_create_rejected_for_hostile_properties_succeeds(
    clock: Clock, sfn: Any
) -> None:
    sf, _, calls = sfn
    failed = answer(event(SweepSeconds="-1", RunNameStem=42), clock, sf)
    assert failed["Status"] == "FAILED" and failed["PhysicalResourceId"] == "failed-req"
    delete = event("Delete", physical=failed["PhysicalResourceId"], RunNameStem=42)
    delete["ResourceProperties"]["Run"] = "garbage"
    assert answer(delete, clock, sf)["Status"] == "SUCCESS" and calls == []


def test_delete_stops_the_running_sweep_through_throttling(clock: Clock, sfn: Any) -> None:
    sf, stub, calls = sfn
    error(stub, "stop_execution", "ThrottlingException")
    stopped(stub)
    body = answer(event("Delete", physical=NAME), clock, sf)
    assert body["Status"] == "SUCCESS" and body["PhysicalResourceId"] == NAME
    assert calls.operations() == ["StopExecution", "StopExecution"]


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ExecutionDoesNotExist", 400),  # the failed create never started it
        ("AccessDeniedException", 400),  # a stop that cannot happen never blocks the delete
        ("InternalFailure", 500),  # ... nor does one that keeps failing
    ],
)
def test_delete_succeeds_whatever_the_stop_answers(
    clock: Clock, sfn: Any, code: str, status: int
) -> None:
    sf, stub, _ = sfn
    attempts = runtime.MAX_ATTEMPTS if status >= 500 else 1
    for _ in range(attempts):
        error(stub, "stop_execution", code, status)
    clock.end = 3600.0
    body = answer(event("Delete", physical=NAME), clock, sf)
    assert body["Status"] == "SUCCESS" and body["PhysicalResourceId"] == NAME


def test_delete_out_of_time_still_answers_success_in_time(clock: Clock, sfn: Any) -> None:
    sf, stub, calls = sfn
    calls.seconds = 15.0
    for _ in range(2):
        error(stub, "stop_execution", "ServiceUnavailable", 503)
    body = answer(event("Delete", physical=NAME), clock, sf)
    assert body["Status"] == "SUCCESS"


def hostile(path: str, value: Any) -> dict[str, Any]:
    ev = event()
    target = ev
    *parents, leaf = path.split(".")
    for part in parents:
        target = target[part]
    if value is KeyError:
        del target[leaf]
    else:
        target[leaf] = value
    return ev


HOSTILE_PROPERTIES = [
    ("ResourceProperties.RunNameStem", 42, "RunNameStem"),
    ("ResourceProperties.RunNameStem", "bad name/../x", "RunNameStem"),
    ("ResourceProperties.RunNameStem", "ベンチ", "RunNameStem"),
    ("ResourceProperties.RunNameStem", "x" * 5000, "RunNameStem"),
    ("ResourceProperties.RunNameStem", KeyError, "RunNameStem: missing"),
    ("ResourceProperties.WaitHandle", "http://attacker.example/x", "WaitHandle"),
    ("ResourceProperties.WaitHandle", "https://evil host/x", "WaitHandle"),
    ("ResourceProperties.WaitHandle", ["https://x"], "WaitHandle"),
    ("ResourceProperties.SweepSeconds", "-5", "SweepSeconds"),
    ("ResourceProperties.SweepSeconds", "1" * 5000, "SweepSeconds"),
    ("ResourceProperties.SweepSeconds", 10**30, "SweepSeconds"),
    ("ResourceProperties.SweepSeconds", "²", "SweepSeconds"),
    ("ResourceProperties.SweepSeconds", True, "SweepSeconds"),
    ("ResourceProperties.SweepSeconds", float("nan"), "SweepSeconds"),
    ("ResourceProperties.ResultsPrefix", "a\nb/", "ResultsPrefix"),
    ("ResourceProperties.StateMachineArn", "arn:aws:iam::1:role/admin", "StateMachineArn"),
    ("ResourceProperties.StateMachineArn", {"Ref": "X"}, "StateMachineArn"),
    ("ResourceProperties.Injected", "1", "unknown properties ['Injected']"),
    ("ResourceProperties.Run", "garbage", "Run: expected an object"),
    ("ResourceProperties.Run.Name", "sneaky", "unknown properties ['Name']"),
    ("ResourceProperties.Run.Deadline", 1e12, "unknown properties ['Deadline']"),
    ("ResourceProperties.Run.Concurrencies", [], "Concurrencies"),
    ("ResourceProperties.Run.Concurrencies", [8, 4], "increasing"),
    ("ResourceProperties.Run.Concurrencies", ["1", -2], "Concurrencies[1]"),
    ("ResourceProperties.Run.Concurrencies", list(range(1, 100)), "Concurrencies"),
    ("ResourceProperties.Run.Concurrencies", "1,2,4", "Concurrencies"),
    ("ResourceProperties.Run.WorkerCapacity", "0", "WorkerCapacity"),
    ("ResourceProperties.Run.InputTokens", 0, "InputTokens"),
    ("ResourceProperties.Run.OutputTokens", 10**9, "OutputTokens"),
    ("ResourceProperties.Run.RequestsPerLevel", -1, "RequestsPerLevel"),
    ("ResourceProperties.Run.Copies", "many", "Copies"),
    ("ResourceProperties.Run.Stream", "yes", "Stream"),
    ("ResourceProperties.Run.Format", "openai", "Format"),
    ("ResourceProperties.Run.Bucket", "Bad Bucket!", "Bucket"),
    ("ResourceProperties.Run.EndpointName", "ep;rm -rf", "EndpointName"),
    ("ResourceProperties.Run.InferenceComponentName", "ic/../../x", "InferenceComponentName"),
    ("ResourceProperties.Run.Rule", [], "Rule: expected an object"),
    ("ResourceProperties.Run.Rule.MinGainPerDoubling", "inf", "MinGainPerDoubling"),
    ("ResourceProperties.Run.Rule.Extra", 1, "Rule: unknown properties"),
    ("ResourceProperties.Run.Gate", "strict", "Gate: expected an object"),
    ("ResourceProperties.Run.PricePerHour", -3, "PricePerHour"),
    ("ResourceProperties.Run.PriceSource", "p" * 301, "PriceSource"),
]


@pytest.mark.parametrize(("path", "value", "reason"), HOSTILE_PROPERTIES)
@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_hostile_properties_fail_with_a_clear_reason_and_no_call(
    clock: Clock, sfn: Any, path: str, value: Any, reason: str, request_type: str
) -> None:
    sf, _, calls = sfn
    ev = hostile(path, value)
    ev["RequestType"] = request_type
    ev["PhysicalResourceId"] = "previous-run" if request_type == "Update" else None
    body = answer(ev, clock, sf)
    assert body["Status"] == "FAILED" and reason in body["Reason"], body["Reason"]
    assert len(body["Reason"]) <= runtime.MAX_REASON and calls == []


def test_a_level_needing_too_many_workers_fails(clock: Clock, sfn: Any) -> None:
    sf, _, calls = sfn
    ev = event()
    ev["ResourceProperties"]["Run"].update(Concurrencies=["1", "4096"], WorkerCapacity="1")
    body = answer(ev, clock, sf)
    assert body["Status"] == "FAILED" and "would need 4096 workers" in body["Reason"]
    assert calls == []


@pytest.mark.parametrize("request_type", ["Destroy", "create", None, 5, ["Create"]])
def test_a_wrong_request_type_fails_with_a_clear_reason(
    clock: Clock, sfn: Any, request_type: Any
) -> None:
    sf, _, calls = sfn
    ev = event()
    ev["RequestType"] = request_type
    body = answer(ev, clock, sf)
    assert body["Status"] == "FAILED" and body["Reason"].startswith("RequestType: expected")
    assert calls == []


@pytest.mark.parametrize("kind", ["Custom::Other", None, 7])
def test_an_unknown_resource_type_fails(clock: Clock, sfn: Any, kind: Any) -> None:
    sf, _, calls = sfn
    ev = {**event(), "ResourceType": kind}
    body = answer(ev, clock, sf)
    assert body["Status"] == "FAILED" and "ResourceType" in body["Reason"] and calls == []


@pytest.mark.parametrize(
    "wait_data",
    [
        "not json",
        "[]",
        json.dumps({"a": "{}", "b": "{}"}),
        json.dumps({"a": json.dumps({key: [1] for key in ATTRIBUTES})}),
        json.dumps({"a": json.dumps({key: "x" * 5000 for key in ATTRIBUTES})}),
        "[" * 100_000,
        42,
    ],
)
def test_output_hostile_wait_data_fails_with_a_clear_reason(
    clock: Clock, sfn: Any, wait_data: Any
) -> None:
    sf, _, _ = sfn
    ev = {**event(), "ResourceType": OUTPUT_RESOURCE_TYPE}
    ev["ResourceProperties"] = {"WaitData": wait_data}
    body = answer(ev, clock, sf)
    assert body["Status"] == "FAILED" and "WaitData" in body["Reason"]
    delete = {**ev, "RequestType": "Delete", "PhysicalResourceId": "x-output"}
    assert answer(delete, clock, sf)["Status"] == "SUCCESS"


@pytest.mark.parametrize("ev", [None, [], "Create", {"RequestType": "Create"}])
def test_events_without_a_usable_response_url_are_not_answered_and_do_not_raise(ev: Any) -> None:
    puts: list[Any] = []
    body = respond(
        ev,
        lambda *a: puts.append(a),
        lambda: dispatch(ev, sfn=None, now=0.0, budget=Budget()),
    )
    assert body["Status"] == "FAILED" and puts == []


def test_the_response_put_is_retried_then_raises_for_lambdas_own_retry(clock: Clock) -> None:
    ev = event("Delete", physical="failed-req")
    puts = Puts(clock, failures=1)
    body = respond(ev, puts, lambda: {"PhysicalResourceId": "p", "Data": {}}, clock.budget())
    assert body["Status"] == "SUCCESS" and len(puts) == 1 and clock.sleeps == [0.5]
    with pytest.raises(OSError):
        respond(ev, Puts(clock, failures=9), lambda: {"PhysicalResourceId": "p"}, clock.budget())


# ===== advance (one step of the sweep) ========================================================


def samples_body(level: int, count: int = 4) -> bytes:
    samples = [
        RequestSample(start=100.0 + i, end=101.0 + i, output_tokens=20).to_dict()
        for i in range(count)
    ]
    return json.dumps({"samples": samples, "late_s": 0.0}).encode()


def pending_state(level: int = 1) -> dict[str, Any]:
    run = run_config(Concurrencies=[1], Deadline=10_000.0, StartedAt=1.0)
    return {"Run": run, "Levels": [], "Done": False, **plan_level(run, level, 50.0, 0.0)}


def key_of(run: dict[str, Any], name: str) -> str:
    return results_key(run, name)


def got(stub: Stubber, run: dict[str, Any], level: int, body: bytes) -> None:
    key = f"{samples_key(run, level, 0)}.json"
    stub.add_response(
        "get_object", {"Body": io.BytesIO(body)}, {"Bucket": run["Bucket"], "Key": key}
    )


def put_ok(stub: Stubber) -> None:
    stub.add_response("put_object", {}, None)


def advance(state: dict[str, Any], s3_client: Any, clock: Clock, puts: Puts) -> dict[str, Any]:
    return advance_step(state, s3=s3_client, put=puts, now=200.0, lead_s=0.0, budget=clock.budget())


def test_advance_retries_throttled_reads_and_writes_then_signals(s3: Any) -> None:
    client_, stub, calls = s3
    clock = Clock(ADVANCE_TIMEOUT)
    state = pending_state()
    run = state["Run"]
    error(stub, "get_object", "SlowDown", 503, "Please reduce your request rate.")
    got(stub, run, 1, samples_body(1))
    error(stub, "put_object", "InternalError", 500)
    put_ok(stub)  # results.json
    got(stub, run, 1, samples_body(1))  # the samples again, for requests.jsonl
    for _ in range(4):
        put_ok(stub)  # levels.csv, requests.jsonl, chart.svg, report.md
    puts = Puts(clock, failures=1)  # the signal PUT fails once too
    out = advance(state, client_, clock, puts)
    assert out["Done"] and out["Outcome"] == "SUCCESS"
    assert [body["Status"] for url, body, _ in puts] == ["SUCCESS"] and puts[0][0] == HANDLE
    assert calls.operations() == [
        "GetObject", "GetObject", "PutObject", "PutObject", "GetObject", *["PutObject"] * 4
    ]  # fmt: skip
    assert clock.sleeps == [0.5, 0.5, 0.5]


def test_advance_retries_exhausted_raise_the_service_message_for_the_catch(s3: Any) -> None:
    client_, stub, calls = s3
    clock = Clock(3600.0)
    for _ in range(runtime.MAX_ATTEMPTS):
        error(stub, "get_object", "SlowDown", 503, "Please reduce your request rate.")
    with pytest.raises(ClientError, match="reduce your request rate") as raised:
        advance(pending_state(), client_, clock, Puts(clock))
    assert len(calls) == runtime.MAX_ATTEMPTS
    # The workflow's catch then signals FAILURE with that message.
    puts = Puts(clock)
    cause = json.dumps({"errorType": "ClientError", "errorMessage": str(raised.value)})
    report_error(
        {**pending_state(), "Error": {"Error": "ClientError", "Cause": cause}},
        put=puts,
        budget=clock.budget(),
    )
    assert puts[0][1]["Status"] == "FAILURE" and "reduce your request rate" in puts[0][1]["Reason"]


def test_advance_access_denied_is_raised_at_once(s3: Any) -> None:
    client_, stub, calls = s3
    clock = Clock(ADVANCE_TIMEOUT)
    state = pending_state()
    got(stub, state["Run"], 1, samples_body(1))
    error(stub, "put_object", "AccessDenied", 403, "Access Denied by KMS key policy")
    with pytest.raises(ClientError, match="Access Denied by KMS key policy"):
        advance(state, client_, clock, Puts(clock))
    assert clock.sleeps == [] and calls.operations() == ["GetObject", "PutObject"]


def test_advance_out_of_time_raises_before_the_lambda_dies(s3: Any) -> None:
    client_, stub, calls = s3
    clock = Clock(ADVANCE_TIMEOUT)
    clock.now = ADVANCE_TIMEOUT - runtime.RESPONSE_RESERVE - runtime.CALL_SECONDS - 0.4
    error(stub, "get_object", "ServiceUnavailable", 503)
    with pytest.raises(runtime.OutOfTime, match="Gave up on get_object after ClientError"):
        advance(pending_state(), client_, clock, Puts(clock))
    assert clock.sleeps == [] and len(calls) == 1


def test_a_missing_worker_file_is_a_clear_error_without_retries(s3: Any) -> None:
    client_, stub, _ = s3
    clock = Clock(ADVANCE_TIMEOUT)
    error(stub, "get_object", "NoSuchKey", 404, "The specified key does not exist.")
    with pytest.raises(EventError, match="worker 0 of level 1 wrote no samples"):
        advance(pending_state(), client_, clock, Puts(clock))
    assert clock.sleeps == []


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "not JSON"),
        (b"[]", "not a worker's samples"),
        (json.dumps({"samples": [{"start": "x"}]}).encode(), "malformed samples"),
        (json.dumps({"samples": [], "late_s": -5}).encode(), "malformed samples"),
    ],
)
def test_advance_rejects_malformed_worker_files(s3: Any, body: bytes, reason: str) -> None:
    client_, stub, _ = s3
    clock = Clock(ADVANCE_TIMEOUT)
    state = pending_state()
    got(stub, state["Run"], 1, body)
    with pytest.raises(EventError, match=reason):
        advance(state, client_, clock, Puts(clock))


def mutate(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    state = copy.deepcopy(pending_state())
    change(state)
    return state


HOSTILE_STATES: list[tuple[Any, str]] = [
    (mutate(lambda s: s.pop("Run")), "state.Run: missing"),
    (mutate(lambda s: s.update(Run="x")), "Run: expected an object"),
    (mutate(lambda s: s["Run"].update(Name="../../etc")), "Run.Name"),
    (mutate(lambda s: s["Run"].update(HandleUrl="file:///etc/passwd")), "Run.HandleUrl"),
    (mutate(lambda s: s["Run"].update(Deadline=float("inf"))), "Run.Deadline"),
    (mutate(lambda s: s["Run"].update(Injected=1)), "unknown properties"),
    (mutate(lambda s: s.update(Levels="x")), "state.Levels"),
    (mutate(lambda s: s.update(Levels=[{}] * 17)), "state.Levels"),
    (mutate(lambda s: s.update(Levels=[{"Distribution": {"concurrency": 9}}])), "not a level"),
    (mutate(lambda s: s.update(Levels=[{"Distribution": 1}])), "Distribution"),
    (
        mutate(lambda s: s.update(Levels=[{"Distribution": {"concurrency": 1}, "Level": 5}])),
        "not a level summary",
    ),
    (mutate(lambda s: s.update(Pending={"Level": 1})), "state.Pending.Workers: missing"),
    (mutate(lambda s: s.update(Pending={"Level": 1, "Workers": 9})), "runs on 1 workers"),
    (mutate(lambda s: s.update(Pending={"Level": 3, "Workers": 1})), "not a level of this run"),
    (mutate(lambda s: s.update(Pending={"Level": -1, "Workers": 1})), "Pending.Level"),
    (mutate(lambda s: s.update(Pending="soon")), "state.Pending"),
    ("not a state", "state: expected an object"),
]


@pytest.mark.parametrize(("state", "reason"), HOSTILE_STATES)
def test_advance_hostile_state_is_a_clear_validation_error_without_calls(
    s3: Any, state: Any, reason: str
) -> None:
    client_, _, calls = s3
    clock = Clock(ADVANCE_TIMEOUT)
    puts = Puts(clock)
    with pytest.raises(EventError, match=reason.replace("[", r"\[").replace(".", r"\.")):
        advance(state, client_, clock, puts)
    assert calls == [] and puts == []


@pytest.mark.parametrize(
    "caught",
    [
        {"Error": "States.Timeout", "Cause": None},
        {"Error": "X", "Cause": "[" * 100_000},  # nested JSON deeper than the parser goes
        {"Cause": json.dumps({"errorMessage": "boom " * 1000})},
        "a bare string",
        ["a", "list"],
        None,
    ],
)
def test_report_error_signals_any_caught_error_within_limits(caught: Any) -> None:
    clock = Clock(ADVANCE_TIMEOUT)
    puts = Puts(clock, failures=1)
    state = {**pending_state(), "Error": caught}
    assert report_error(state, put=puts, budget=clock.budget())["Outcome"] == "FAILURE"
    (_, signal, _), *_ = puts
    assert signal["Status"] == "FAILURE" and len(signal["Reason"]) <= runtime.MAX_REASON


@pytest.mark.parametrize(
    "state",
    [
        {"Error": {}},
        {"Run": {"HandleUrl": "http://plain"}, "Error": {}},
        {"Run": {"HandleUrl": "https://a b"}, "Error": {}},
        {"Run": {"HandleUrl": 5}, "Error": {}},
        "garbage",
    ],
)
def test_report_error_without_a_usable_handle_raises_and_puts_nothing(state: Any) -> None:
    puts = Puts(Clock())
    with pytest.raises(EventError, match="HandleUrl"):
        report_error(state, put=puts)
    assert puts == []


# ===== the worker =============================================================================


class NoLoad:
    """An invoker that must not be called (every test here sends no request)."""

    def invoke_many(self, *_: Any) -> list[RequestSample]:
        raise AssertionError("no load expected")


def worker_event(**overrides: Any) -> dict[str, Any]:
    run = run_config(Concurrencies=[1, 2], Deadline=1.0, **overrides)  # past: no load is sent
    return {"Run": run, "Slice": plan_level(run, 2, 0.0, 0.0)["Slices"][0]}


def worker_clock() -> Clock:
    """A worker invoked at t=10 s, after the sweep's deadline (t=1 s): it sends no load."""
    clock = Clock(10.0 + WORKER_TIMEOUT)
    clock.now = 10.0
    return clock


def run_one_worker(ev: Any, s3_client: Any, clock: Clock) -> dict[str, Any]:
    return run_worker(
        ev,
        invoker=NoLoad(),
        s3=s3_client,
        remaining_s=clock.end - clock.now,
        clock=clock,
        sleep=clock.sleep,
        budget=clock.budget(reserve=0.0, call_seconds=WORKER_CALL_SECONDS),  # as ``worker``
    )


def test_worker_retries_throttled_and_failing_writes(s3: Any) -> None:
    client_, stub, calls = s3
    clock = worker_clock()
    error(stub, "put_object", "SlowDown", 503)  # the claim
    put_ok(stub)
    error(stub, "put_object", "InternalError", 500)  # the samples
    error(stub, "put_object", "ServiceUnavailable", 503)
    put_ok(stub)
    result = run_one_worker(worker_event(), client_, clock)
    assert result["Samples"] == 0 and "Duplicate" not in result
    assert calls.operations() == ["PutObject"] * 5 and clock.sleeps == [0.5, 0.5, 1.0]


def test_a_duplicate_worker_event_runs_nothing(s3: Any) -> None:
    client_, stub, calls = s3
    clock = worker_clock()
    error(stub, "put_object", "PreconditionFailed", 412, "At least one precondition failed")
    assert run_one_worker(worker_event(), client_, clock)["Duplicate"] is True
    assert len(calls) == 1 and clock.sleeps == []


def test_worker_access_denied_is_raised_at_once(s3: Any) -> None:
    client_, stub, _ = s3
    clock = worker_clock()
    error(stub, "put_object", "AccessDenied", 403, "no s3:PutObject")
    with pytest.raises(ClientError, match="no s3:PutObject"):
        run_one_worker(worker_event(), client_, clock)
    assert clock.sleeps == []


def test_worker_never_sleeps_past_its_lambda(s3: Any) -> None:
    client_, stub, calls = s3
    clock = worker_clock()
    clock.now = clock.end - 0.3  # the backoff (0.5 s) would outlast the Lambda
    error(stub, "put_object", "SlowDown", 503)
    with pytest.raises(runtime.OutOfTime, match="Gave up on put_object after ClientError"):
        run_one_worker(worker_event(), client_, clock)
    assert clock.sleeps == [] and len(calls) == 1


@pytest.mark.parametrize(
    ("mutation", "reason"),
    [
        (lambda e: e.pop("Slice"), "event.Slice: missing"),
        (lambda e: e.update(Slice=[1, 2]), "Slice: expected an object"),
        (lambda e: e["Slice"].update(Worker=5), "Slice.Worker"),
        (lambda e: e["Slice"].update(Workers=64), "Slice.Workers"),
        (lambda e: e["Slice"].update(Level=3), "not a level of this run"),
        (lambda e: e["Slice"].update(StartAt="tomorrow"), "Slice.StartAt"),
        (lambda e: e["Slice"].update(StartAt=1e300), "Slice.StartAt"),
        (lambda e: e["Run"].update(WorkerCapacity=0), "Run.WorkerCapacity"),
        (lambda e: e["Run"].update(Bucket="../other"), "Run.Bucket"),
        (lambda e: e["Run"].update(Prefix="/abs/"), "Run.Prefix"),
        (lambda e: e.update(Run=None), "Run: expected an object"),
    ],
)
def test_worker_hostile_event_is_a_clear_validation_error_without_calls(
    s3: Any, mutation: Callable[[dict[str, Any]], None], reason: str
) -> None:
    client_, _, calls = s3
    ev = worker_event()
    mutation(ev)
    with pytest.raises(EventError, match=reason.replace("[", r"\[").replace(".", r"\.")):
        run_one_worker(ev, client_, worker_clock())
    assert calls == []
