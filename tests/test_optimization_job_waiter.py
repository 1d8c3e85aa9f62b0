"""The whole deploy-time wait, driven with a fake clock: custom resource -> Step Functions
workflow (interpreted locally from the synthesized definition) -> wait-condition signal.

The state machine is not re-described here: the driver runs the ``DefinitionString`` that the
construct synthesizes (Task, Choice, Wait, Succeed, Fail, Retry and Catch), calling the poll
handler for each Task, so the test covers the definition and the handler logic together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from conftest import new_stack
from contracts import checked

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.constructs.model_source import ModelSource
from cdk_sagemaker_llm.constructs.optimization_job import OptimizationJob
from cdk_sagemaker_llm.constructs.optimization_options import OptimizationOutput, OptimizationRun
from cdk_sagemaker_llm.constructs.optimization_techniques import (
    OptimizationTechnique,
    QuantizationMethod,
)
from cdk_sagemaker_llm.lambdas import runtime_support as runtime
from cdk_sagemaker_llm.lambdas.optimization_job import handler as h

START = 1_700_000_000.0
HOUR = 3600.0
LAMBDA_TIMEOUT_SECONDS = 60


class FakeClock:
    def __init__(self) -> None:
        self.now = START

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class ClientError(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.response = {"Error": {"Code": code}}


@dataclass
class FakeSageMaker:
    """A job whose status follows the clock: STARTING, INPROGRESS, then its outcome."""

    clock: FakeClock
    runtime: float
    outcome: str = "COMPLETED"
    failure_reason: str | None = None
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    throttle_next: int = 0

    def create_optimization_job(self, **request: Any) -> dict[str, Any]:
        self.calls.append("create")
        name = request["OptimizationJobName"]
        if name in self.jobs:
            raise ClientError("ResourceInUse")
        self.jobs[name] = {"request": request, "created": self.clock.now, "stopped": None}
        return {"OptimizationJobArn": f"arn:aws:sagemaker:us-west-2:1:optimization-job/{name}"}

    def describe_optimization_job(self, OptimizationJobName: str) -> dict[str, Any]:
        self.calls.append("describe")
        if self.throttle_next:
            self.throttle_next -= 1
            raise ClientError("ThrottlingException")
        job = self.jobs.get(OptimizationJobName)
        if job is None:
            raise ClientError("ResourceNotFound")
        elapsed = self.clock.now - job["created"]
        if job["stopped"] is not None:
            status = "STOPPED"
        elif elapsed < 300:
            status = "STARTING"
        elif elapsed < self.runtime:
            status = "INPROGRESS"
        else:
            status = self.outcome
        body: dict[str, Any] = {
            "OptimizationJobName": OptimizationJobName,
            "OptimizationJobArn": f"arn:aws:sagemaker:us-west-2:1:optimization-job/{OptimizationJobName}",
            "OptimizationJobStatus": status,
            "OutputConfig": job["request"]["OutputConfig"],
        }
        if status == "FAILED" and self.failure_reason:
            body["FailureReason"] = self.failure_reason
        if status == "COMPLETED":
            body["OptimizationOutput"] = {
                "RecommendedInferenceImage": "763104351884.dkr.ecr.us-west-2.amazonaws.com/"
                "djl-inference:0.31.0-lmi13.0.0-cu124"
            }
        return body

    def stop_optimization_job(self, OptimizationJobName: str) -> dict[str, Any]:
        self.calls.append("stop")
        self.jobs[OptimizationJobName]["stopped"] = self.clock.now
        return {}


@dataclass
class FakeStepFunctions:
    executions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def start_execution(self, stateMachineArn: str, name: str, input: str) -> dict[str, Any]:
        if name in self.executions:
            raise ClientError("ExecutionAlreadyExists")
        self.executions[name] = json.loads(input)
        return {"executionArn": f"{stateMachineArn}:{name}"}


@dataclass
class FakeWaitCondition:
    """CloudFormation's side: the handle collects signals; the condition times out."""

    clock: FakeClock
    timeout: float
    url: str
    created: float = 0.0
    signals: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    def put(self, url: str, body: Any) -> None:
        assert url == self.url
        self.signals.append((self.clock.now, dict(body)))

    def outcome(self) -> tuple[str, str]:
        """What CloudFormation reports for the wait condition."""
        in_time = [(t, s) for t, s in self.signals if t <= self.created + self.timeout]
        if not in_time:
            return "CREATE_FAILED", "WaitCondition timed out"
        _, first = in_time[0]
        if first["Status"] == "SUCCESS":
            return "CREATE_COMPLETE", first["Reason"]
        return "CREATE_FAILED", first["Reason"]


class StateMachineDriver:
    """Interprets the synthesized Amazon States Language definition with a fake clock."""

    def __init__(self, definition: dict[str, Any], clock: FakeClock, task: Any) -> None:
        self.definition = definition
        self.clock = clock
        self.task = task
        self.transitions = 0
        self.task_invocations = 0
        self.history_events = 2  # ExecutionStarted, and its end

    def run(self, state_input: dict[str, Any]) -> str:
        states = self.definition["States"]
        name = self.definition["StartAt"]
        data = state_input
        started = self.clock.now
        while True:
            self.transitions += 1
            # Entered and Exited of every state; a Lambda task adds Scheduled, Started and its
            # outcome per attempt (counted in _task).
            self.history_events += 2
            assert self.history_events <= 25_000, "Standard workflow history limit"
            assert self.clock.now - started <= self.definition["TimeoutSeconds"]
            state = states[name]
            kind = state["Type"]
            if kind == "Succeed":
                return "SUCCEEDED"
            if kind == "Fail":
                return "FAILED"
            if kind == "Wait":
                self.clock.sleep(state["Seconds"])
                name = state["Next"]
            elif kind == "Choice":
                name = state["Default"]
                for choice in state["Choices"]:
                    value = data.get(choice["Variable"].removeprefix("$."))
                    if value == choice["BooleanEquals"]:
                        name = choice["Next"]
                        break
            elif kind == "Task":
                data, name = self._task(state, data)
            else:  # pragma: no cover
                raise AssertionError(f"unsupported state type {kind}")

    def _task(self, state: dict[str, Any], data: dict[str, Any]) -> tuple[dict[str, Any], str]:
        attempts: dict[int, int] = {}
        while True:
            self.task_invocations += 1
            self.history_events += 3
            try:
                return self.task(data), state["Next"]
            except Exception as error:
                for index, retry in enumerate(state.get("Retry", [])):
                    if {"States.TaskFailed", "States.ALL"} & set(retry["ErrorEquals"]):
                        attempts[index] = attempts.get(index, 0) + 1
                        if attempts[index] <= retry["MaxAttempts"]:
                            self.clock.sleep(
                                retry["IntervalSeconds"]
                                * retry["BackoffRate"] ** (attempts[index] - 1)
                            )
                            break
                else:
                    for catch in state.get("Catch", []):
                        if "States.ALL" in catch["ErrorEquals"]:
                            caught = {"Error": type(error).__name__, "Cause": str(error)}
                            path = catch["ResultPath"].removeprefix("$.")
                            return {**data, path: caught}, catch["Next"]
                    raise


def synthesize(
    max_runtime: cdk.Duration, poll_interval: cdk.Duration = cdk.Duration.minutes(1)
) -> tuple[dict[str, Any], dict[str, Any], float]:
    """The job resource's properties, the workflow definition and the wait timeout."""
    stack = new_stack()
    bucket = s3.Bucket.from_bucket_name(stack, "Models", "models")
    OptimizationJob(
        stack,
        "Awq",
        source=ModelSource.from_s3(bucket, "llama-3-70b/"),
        instance_type=InstanceType.G5_48XLARGE,
        techniques=[OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
        output=OptimizationOutput.in_bucket(bucket),
        run=OptimizationRun(max_runtime=max_runtime, poll_interval=poll_interval),
    )
    template = Template.from_stack(stack).to_json()
    resources = template["Resources"]

    def of_type(kind: str) -> dict[str, Any]:
        (match,) = [r for r in resources.values() if r["Type"] == kind]
        return match

    joined = of_type("AWS::StepFunctions::StateMachine")["Properties"]["DefinitionString"]
    definition = json.loads(
        "".join(part if isinstance(part, str) else "arn:poller" for part in joined["Fn::Join"][1])
    )
    timeout = float(of_type("AWS::CloudFormation::WaitCondition")["Properties"]["Timeout"])
    return of_type("Custom::SageMakerOptimizationJob")["Properties"], definition, timeout


def deploy(
    max_runtime: cdk.Duration,
    sagemaker: FakeSageMaker,
    clock: FakeClock,
    poll: Any = None,
    poll_interval: cdk.Duration = cdk.Duration.minutes(1),
) -> tuple[FakeWaitCondition, StateMachineDriver, str, str]:
    """Create the job resource, then run the workflow until it ends."""
    props, definition, timeout = synthesize(max_runtime, poll_interval)
    sagemaker = checked(sagemaker, "sagemaker")  # every call held to botocore's model
    handle_url = "https://cloudformation-waitcondition-us-west-2.s3.amazonaws.com/handle?sig=1"
    props = {
        **props,
        "Request": {**props["Request"], "RoleArn": "arn:aws:iam::1:role/job"},
        "WaitHandle": handle_url,
        "StateMachineArn": "arn:aws:states:us-west-2:1:stateMachine:Workflow",
    }
    event = {"RequestType": "Create", "ResourceProperties": props}
    sfn = checked(FakeStepFunctions(), "stepfunctions")
    created = h.handle_job_event(
        event, sagemaker=sagemaker, sfn=sfn, now=clock.now, sleep=clock.sleep
    )
    name = created["PhysicalResourceId"]
    # A duplicate delivery of the same event starts nothing more.
    again = h.handle_job_event(
        event, sagemaker=sagemaker, sfn=sfn, now=clock.now, sleep=clock.sleep
    )
    assert again == created and len(sagemaker.jobs) == 1 and len(sfn.executions) == 1

    condition = FakeWaitCondition(clock, timeout, handle_url, created=clock.now)

    def task(state: dict[str, Any]) -> dict[str, Any]:
        began = clock.now
        if "Error" in state:
            condition.put(state["HandleUrl"], h.error_signal(state))
            result = {**state, "Done": True}
        else:
            result = (poll or h.poll_step)(
                state, sagemaker=sagemaker, put=condition.put, now=clock.now, sleep=clock.sleep
            )
        assert clock.now - began < LAMBDA_TIMEOUT_SECONDS  # no invocation outlives its Lambda
        return dict(result)

    driver = StateMachineDriver(definition, clock, task)
    return condition, driver, name, driver.run(sfn.executions[name])


def test_a_job_that_queues_25_minutes_then_runs_its_whole_runtime_completes() -> None:
    """The guide promises 30 minutes to queue; the poller gave up 10 minutes past the max
    runtime (the wait condition's 30 less its 20-minute signal margin) and stopped the job."""
    clock = FakeClock()
    sagemaker = FakeSageMaker(clock, runtime=2 * HOUR + 25 * 60)
    condition, _, _, execution = deploy(cdk.Duration.hours(2), sagemaker, clock)
    assert execution == "SUCCEEDED"
    assert condition.outcome()[0] == "CREATE_COMPLETE"


def test_a_five_hour_job_completes_within_one_deployment() -> None:
    clock = FakeClock()
    sagemaker = FakeSageMaker(clock, runtime=5 * HOUR)
    condition, driver, name, execution = deploy(cdk.Duration.hours(6), sagemaker, clock)
    assert execution == "SUCCEEDED"
    assert condition.timeout == 6 * HOUR + 3000  # 30 minutes to queue, 20 to report
    status, reason = condition.outcome()
    assert status == "CREATE_COMPLETE", reason
    ((signalled_at, signal),) = condition.signals
    assert 5 * HOUR <= signalled_at - START <= 5 * HOUR + 60  # within one poll interval
    assert signal["Data"] == f"s3://models/optimized/{name}/"
    assert 290 <= driver.task_invocations <= 310  # one describe a minute, each a short Lambda
    assert sagemaker.calls.count("create") == 2  # the duplicate was refused, then adopted
    assert "stop" not in sagemaker.calls


def test_a_job_failing_after_two_hours_fails_the_deployment_with_its_reason() -> None:
    clock = FakeClock()
    sagemaker = FakeSageMaker(
        clock,
        runtime=2 * HOUR,
        outcome="FAILED",
        failure_reason="AlgorithmError: CUDA out of memory while calibrating AWQ",
    )
    condition, _, name, _ = deploy(cdk.Duration.hours(6), sagemaker, clock)
    status, reason = condition.outcome()
    assert status == "CREATE_FAILED"
    assert reason == (
        f"Optimization job {name} FAILED: AlgorithmError: CUDA out of memory while calibrating AWQ"
    )
    assert 2 * HOUR <= condition.signals[0][0] - START <= 2 * HOUR + 60


def test_a_job_still_running_at_the_deadline_is_stopped_and_reported_before_the_timeout() -> None:
    clock = FakeClock()
    sagemaker = FakeSageMaker(clock, runtime=100 * HOUR)  # SageMaker never stops it, say
    condition, _, _, _ = deploy(cdk.Duration.hours(2), sagemaker, clock)
    status, reason = condition.outcome()
    assert status == "CREATE_FAILED"
    assert "deadline" in reason
    assert "stop" in sagemaker.calls
    assert condition.signals[0][0] - START < condition.timeout


def test_throttled_polls_just_wait_for_the_next_iteration() -> None:
    clock = FakeClock()
    sagemaker = FakeSageMaker(clock, runtime=HOUR)
    results: list[dict[str, Any]] = []

    def throttled_at_first(state: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if not results:
            sagemaker.throttle_next = 3 * runtime.MAX_ATTEMPTS  # three whole iterations throttled
        results.append(h.poll_step(state, **kwargs))
        return results[-1]

    condition, _, _, execution = deploy(
        cdk.Duration.hours(2), sagemaker, clock, poll=throttled_at_first
    )
    assert execution == "SUCCEEDED"
    assert [r.get("Throttled") for r in results[:4]] == [1, 2, 3, 3]
    assert condition.outcome()[0] == "CREATE_COMPLETE"


def test_a_broken_poller_is_retried_then_reported_as_a_failure() -> None:
    clock = FakeClock()
    sagemaker = FakeSageMaker(clock, runtime=HOUR)

    def broken(state: dict[str, Any], **_: Any) -> dict[str, Any]:
        raise RuntimeError("AccessDeniedException: not authorized to DescribeOptimizationJob")

    condition, driver, _, execution = deploy(cdk.Duration.hours(2), sagemaker, clock, poll=broken)
    assert execution == "FAILED"
    status, reason = condition.outcome()
    assert status == "CREATE_FAILED"
    assert "not authorized" in reason
    assert driver.task_invocations == 1 + 4 + 1  # first try, four retries, the report


@pytest.mark.parametrize("minutes", [670])
def test_the_longest_job_fits_cloudformations_twelve_hours(minutes: int) -> None:
    clock = FakeClock()
    sagemaker = FakeSageMaker(clock, runtime=minutes * 60 - 600)
    condition, _, _, _ = deploy(cdk.Duration.minutes(minutes), sagemaker, clock)
    assert condition.timeout == 43_200
    assert condition.outcome()[0] == "CREATE_COMPLETE"


def test_the_longest_job_polled_as_often_as_allowed_stays_within_the_history() -> None:
    """Each poll adds 9 events to the execution's history, which fails past 25,000 without
    signalling: the shortest poll interval allowed for the longest runtime stays within it."""
    clock = FakeClock()
    sagemaker = FakeSageMaker(clock, runtime=670 * 60 - 600)
    condition, driver, _, execution = deploy(
        cdk.Duration.minutes(670), sagemaker, clock, poll_interval=cdk.Duration.seconds(17)
    )
    assert execution == "SUCCEEDED" and condition.outcome()[0] == "CREATE_COMPLETE"
    assert 20_000 < driver.history_events <= 25_000
