"""The whole deploy-time sweep, driven with a fake clock: custom resource -> the synthesized
Step Functions definition (interpreted locally: Task, Map, Choice, Succeed, Fail, Retry,
Catch) -> worker and advance handlers -> wait-condition signal -> output attributes.

Workers get a fake invoker whose latency follows the fake clock and saturates at 4 requests
in flight, so a sweep lasts longer than one Lambda's 15 minutes while the test takes a second.
"""

from __future__ import annotations

import heapq
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from conftest import new_stack
from contracts import checked

from cdk_sagemaker_llm import (
    BenchmarkEngine,
    BenchmarkGate,
    BenchmarkLoad,
    BenchmarkResults,
    EndpointBenchmark,
    PeakCapacity,
    Workload,
)
from cdk_sagemaker_llm.benchmarking import KneeRule, RequestSample
from cdk_sagemaker_llm.benchmarking.payload import InvocationRequest
from cdk_sagemaker_llm.constructs.inference_component import InferenceComponent
from cdk_sagemaker_llm.lambdas.benchmark.advance import advance_step, report_failure
from cdk_sagemaker_llm.lambdas.benchmark.custom_resource import (
    RESOURCE_TYPE,
    handle_event,
    handle_output_event,
)
from cdk_sagemaker_llm.lambdas.benchmark.worker import run_worker
from cdk_sagemaker_llm.lambdas.runtime_support import MAX_REASON

START = 1_700_000_000.0
LAMBDA_LIMIT_S = 900.0
HANDLE = "https://cloudformation-waitcondition-us-west-2.s3.amazonaws.com/handle?sig=1"
OUTPUT_TOKENS = 1000
MS_PER_TOKEN = 20.0
SATURATION = 4


class FakeClock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


class ClientError(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.response = {"Error": {"Code": code}}


class LambdaError(Exception):
    """How a Lambda task failure reaches Step Functions: an error name and a cause."""

    def __init__(self, name: str, cause: str) -> None:
        super().__init__(cause)
        self.name = name


@dataclass
class FakeS3:
    objects: dict[str, bytes] = field(default_factory=dict)

    def put_object(self, Bucket: str, Key: str, Body: bytes, **kwargs: Any) -> dict[str, Any]:
        if kwargs.get("IfNoneMatch") == "*" and Key in self.objects:
            raise ClientError("PreconditionFailed")
        self.objects[Key] = Body if isinstance(Body, bytes) else Body.encode()
        return {}

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        if Key not in self.objects:
            raise ClientError("NoSuchKey")
        return {"Body": io.BytesIO(self.objects[Key])}


class FakeInvoker:
    """Closed-loop lanes on the fake clock; per-token latency grows past SATURATION in flight
    (the whole level's concurrency, all workers together)."""

    def __init__(self, clock: FakeClock, level: int) -> None:
        self.clock = clock
        self.latency = OUTPUT_TOKENS * MS_PER_TOKEN / 1000 * max(1.0, level / SATURATION)

    def invoke_many(
        self, next_request: Callable[[], InvocationRequest | None], concurrency: int
    ) -> list[RequestSample]:
        lanes = [(self.clock.now, lane) for lane in range(concurrency)]
        samples = []
        while (request := next_request()) is not None:
            start, lane = heapq.heappop(lanes)
            samples.append(
                RequestSample(start=start, end=start + self.latency, output_tokens=OUTPUT_TOKENS)
            )
            heapq.heappush(lanes, (start + self.latency, lane))
            assert request.body
        self.clock.now = max(end for end, _ in lanes)
        return samples


@dataclass
class FakeWaitCondition:
    clock: FakeClock
    timeout: float
    signals: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    def put(self, url: str, body: Any) -> None:
        assert url == HANDLE
        self.signals.append((self.clock.now, dict(body)))

    def outcome(self) -> tuple[str, str]:
        in_time = [s for t, s in self.signals if t <= START + self.timeout]
        if not in_time:
            return "CREATE_FAILED", "WaitCondition timed out"
        first = in_time[0]
        return ("CREATE_COMPLETE" if first["Status"] == "SUCCESS" else "CREATE_FAILED"), first[
            "Reason"
        ]

    def data(self) -> str:
        """The wait condition's Data attribute: {UniqueId: Data}."""
        return json.dumps({s["UniqueId"]: s["Data"] for _, s in self.signals})


Task = Callable[[str, dict[str, Any]], dict[str, Any]]


class Interpreter:
    """Runs an Amazon States Language definition with a fake clock."""

    def __init__(self, definition: dict[str, Any], clock: FakeClock, task: Task) -> None:
        self.definition = definition
        self.clock = clock
        self.task = task
        self.transitions = 0
        self.invocations: list[str] = []
        self.map_concurrency: list[int] = []

    def run(self, data: dict[str, Any]) -> str:
        outcome, _ = self._run(self.definition, data)
        return outcome

    def _run(self, machine: dict[str, Any], data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        states, name = machine["States"], machine["StartAt"]
        timeout = self.definition["TimeoutSeconds"]
        while True:
            self.transitions += 1
            assert self.transitions < 25_000, "Standard workflow history limit"
            assert self.clock.now - START <= timeout, "state machine timed out"
            state = states[name]
            kind = state["Type"]
            if kind in ("Succeed", "Fail"):
                return ("SUCCEEDED" if kind == "Succeed" else "FAILED"), data
            try:
                if kind == "Choice":
                    name = self._choice(state, data)
                    continue
                if kind == "Task":
                    result = self._task(state, data)
                elif kind == "Map":
                    result = self._map(state, data)
                else:  # pragma: no cover
                    raise AssertionError(f"unsupported state {kind}")
            except LambdaError as error:
                catch = next(
                    (c for c in state.get("Catch", []) if "States.ALL" in c["ErrorEquals"]), None
                )
                if catch is None:
                    raise
                data = {**data, catch["ResultPath"][2:]: {"Error": error.name, "Cause": str(error)}}
                name = catch["Next"]
                continue
            if "ResultPath" in state and state["ResultPath"] is None:
                pass
            else:
                data = result
            if state.get("End"):
                return "SUCCEEDED", data
            name = state["Next"]

    @staticmethod
    def _choice(state: dict[str, Any], data: dict[str, Any]) -> str:
        """The next state of a Choice state: the first matching rule's, else its default."""
        for choice in state["Choices"]:
            if data.get(choice["Variable"][2:]) == choice["BooleanEquals"]:
                return str(choice["Next"])
        return str(state["Default"])

    def _task(self, state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        attempts: dict[int, int] = {}
        while True:
            self.invocations.append(state["Resource"])
            began = self.clock.now
            try:
                result = self.task(state["Resource"], data)
                assert self.clock.now - began <= LAMBDA_LIMIT_S, "a Lambda ran out of time"
                return result
            except LambdaError as error:
                for index, retry in enumerate(state.get("Retry", [])):
                    if error.name in retry["ErrorEquals"]:
                        attempts[index] = attempts.get(index, 0) + 1
                        if attempts[index] <= retry["MaxAttempts"]:
                            delay = retry["IntervalSeconds"] * retry["BackoffRate"] ** (
                                attempts[index] - 1
                            )
                            self.clock.sleep(min(delay, retry.get("MaxDelaySeconds", delay)))
                            break
                else:
                    raise

    def _map(self, state: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        items = data[state["ItemsPath"][2:]]
        width = state["MaxConcurrency"]
        assert len(items) <= width, "every worker of a level starts together"
        self.map_concurrency.append(len(items))
        started = self.clock.now
        ends = []
        for item in items:  # in parallel: each starts at the Map's start time
            self.clock.now = started
            selected = {
                key[:-2]: item if path == "$$.Map.Item.Value" else data[path[2:]]
                for key, path in state["ItemSelector"].items()
            }
            outcome, _ = self._run(state["ItemProcessor"], selected)
            assert outcome == "SUCCEEDED"
            ends.append(self.clock.now)
        self.clock.now = max(ends)
        return data


def synthesize(**props: Any) -> tuple[dict[str, Any], dict[str, Any], float]:
    """The benchmark resource's properties, the workflow definition and the wait timeout."""
    stack = new_stack()
    component = InferenceComponent.from_inference_component_name(
        stack, "Ic", inference_component_name="llama-ic", endpoint_name="llama-ep"
    )
    EndpointBenchmark(stack, "Bench", inference_component=component, **props)
    resources = Template.from_stack(stack).to_json()["Resources"]

    def of_type(kind: str) -> dict[str, Any]:
        (match,) = [r for r in resources.values() if r["Type"] == kind]
        return match

    joined = of_type("AWS::StepFunctions::StateMachine")["Properties"]["DefinitionString"]
    definition = json.loads(
        "".join(
            part if isinstance(part, str) else "arn:" + part["Fn::GetAtt"][0]
            for part in joined["Fn::Join"][1]
        )
    )
    timeout = float(of_type("AWS::CloudFormation::WaitCondition")["Properties"]["Timeout"])
    return of_type(RESOURCE_TYPE)["Properties"], definition, timeout


def as_cloudformation(value: Any) -> Any:
    """CloudFormation hands custom resources every scalar as a string."""
    if isinstance(value, dict):
        return {k: as_cloudformation(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_cloudformation(v) for v in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int | float) else value


@dataclass
class Deployment:
    execution: str
    condition: FakeWaitCondition
    interpreter: Interpreter
    s3: FakeS3
    run: dict[str, Any]


def deploy(
    *,
    cold_start: Callable[[dict[str, Any]], float] = lambda _: 0.0,
    worker_hook: Callable[[dict[str, Any]], None] = lambda _: None,
    **props: Any,
) -> Deployment:
    clock = FakeClock()
    properties, definition, timeout = synthesize(**props)
    properties = {
        **properties,
        "Run": {**properties["Run"], "Bucket": "results"},
        "WaitHandle": HANDLE,
        "StateMachineArn": "arn:aws:states:us-west-2:1:stateMachine:W",
    }
    event = {"RequestType": "Create", "ResourceProperties": as_cloudformation(properties)}
    executions: dict[str, str] = {}

    class Sfn:
        def start_execution(self, stateMachineArn: str, name: str, input: str) -> None:
            if name in executions:
                raise ClientError("ExecutionAlreadyExists")
            executions[name] = input

    created = handle_event(event, sfn=Sfn(), now=clock.now)
    assert handle_event(event, sfn=Sfn(), now=clock.now) == created  # duplicate event
    (state_input,) = executions.values()
    condition = FakeWaitCondition(clock, timeout)
    s3 = checked(FakeS3(), "s3")
    advance_arn, worker_arn = (
        definition["States"]["AdvanceSweep"]["Resource"],
        definition["States"]["RunLevel"]["ItemProcessor"]["States"]["RunWorker"]["Resource"],
    )

    def task(resource: str, data: dict[str, Any]) -> dict[str, Any]:
        try:
            if resource == worker_arn:
                clock.sleep(cold_start(data["Slice"]))
                worker_hook(data["Slice"])
                began = clock.now
                return run_worker(
                    data,
                    invoker=FakeInvoker(clock, data["Slice"]["Level"]),
                    s3=s3,
                    remaining_s=LAMBDA_LIMIT_S - (clock.now - began),
                    clock=clock,
                    sleep=clock.sleep,
                )
            assert resource == advance_arn
            if "Error" in data:  # the entry point's catch (handler.advance)
                return report_failure(data, s3=s3, put=condition.put, now=clock.now)
            return advance_step(data, s3=s3, put=condition.put, now=clock.now)
        except LambdaError:
            raise
        except Exception as error:  # a Lambda error: Step Functions sees its type and message
            cause = json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)})
            raise LambdaError(type(error).__name__, cause) from error

    interpreter = Interpreter(definition, clock, task)
    execution = interpreter.run(json.loads(state_input))
    run = json.loads(state_input)["Run"]
    return Deployment(execution, condition, interpreter, s3, run)


def sweep(knee_rule: KneeRule | None = None) -> dict[str, Any]:
    """A sweep of five levels, each split across workers of 4 requests in flight."""
    return {
        "load": BenchmarkLoad.concurrency(
            [1, 2, 4, 8, 16], requests_per_level=32, knee_rule=knee_rule
        ),
        "workload": Workload(input_tokens=256, output_tokens=OUTPUT_TOKENS),
        "engine": BenchmarkEngine.lambda_workers(worker_capacity=4),
        "copies": 2,
    }


def test_a_sweep_longer_than_a_lambda_completes_and_feeds_the_attributes() -> None:
    lates = {8: {1: 3.0}, 16: {2: 12.5}}  # worker 2 of level 16 starts 2.5 s after the others
    deployment = deploy(
        cold_start=lambda item: lates.get(item["Level"], {}).get(item["Worker"], 0.0), **sweep()
    )
    assert deployment.execution == "SUCCEEDED"
    status, reason = deployment.condition.outcome()
    assert status == "CREATE_COMPLETE", reason
    ((signalled_at, _),) = deployment.condition.signals
    assert signalled_at - START > 15 * 60  # longer than any one Lambda may run
    assert deployment.interpreter.map_concurrency == [1, 1, 1, 2, 4]
    output = handle_output_event(
        {"RequestType": "Create", "ResourceProperties": {"WaitData": deployment.condition.data()}}
    )["Data"]
    assert output["KneeConcurrency"] == "4"  # saturates at 4: no gain from 4 to 8
    assert output["KneeConcurrencyPerCopy"] == "2"
    assert float(output["KneeP50MsPerToken"]) == pytest.approx(MS_PER_TOKEN)
    assert float(output["MaxOutputTokensPerSecond"]) == pytest.approx(200.0)
    prefix = deployment.run["Prefix"]
    assert output["ResultsS3Uri"] == f"s3://results/{prefix}results.json"
    results = json.loads(deployment.s3.objects[f"{prefix}results.json"])
    assert results["knee"]["tripped_at"] == 8 and results["gate"]["passed"]
    distribution = {d["concurrency"]: d for d in results["distribution"]}
    assert [distribution[c]["workers"] for c in (1, 2, 4, 8, 16)] == [1, 1, 1, 2, 4]
    assert distribution[8]["start_skew_s"] == 0.0  # a 3 s cold start fits in the 10 s lead
    assert distribution[16]["start_skew_s"] == pytest.approx(2.5)
    assert distribution[16]["late_s_per_worker"] == [0.0, 0.0, pytest.approx(2.5), 0.0]
    assert not distribution[16]["within_skew_limit"]
    assert deployment.s3.objects[f"{prefix}chart.svg"].startswith(b"<svg")


def test_a_failing_slo_gate_fails_the_deployment_with_the_measured_figures() -> None:
    deployment = deploy(
        gate=BenchmarkGate(max_p50_ms_per_token=15, min_knee_concurrency=8), **sweep()
    )
    assert deployment.execution == "SUCCEEDED"  # the workflow worked; the figures failed
    status, reason = deployment.condition.outcome()
    assert status == "CREATE_FAILED"
    assert "p50 ms/token at concurrency 1 is 20.0, above the SLO of 15" in reason
    assert "knee concurrency is 4 (first level tripping the rule: 8, throughput)" in reason
    assert "below the minimum of 8" in reason
    assert "Measured: knee 4 at 20.0 ms/token p50, max 200.0 output tokens/s" in reason
    results = json.loads(deployment.s3.objects[f"{deployment.run['Prefix']}results.json"])
    assert results["gate"]["passed"] is False and len(results["gate"]["failures"]) == 2


def test_many_unmet_gates_still_fail_the_deployment_with_the_figures() -> None:
    # The reason is cut to what CloudFormation shows (runtime_support.MAX_REASON): the
    # failures give way, never the measured figures and where the results are.
    deployment = deploy(
        gate=BenchmarkGate(
            max_p50_ms_per_token=15,
            min_knee_concurrency=8,
            min_output_tokens_per_s=1000,
            peak=PeakCapacity.requests_per_second(50, max_copies=3),
        ),
        results=BenchmarkResults.in_new_bucket(prefix="platform/llm/" * 12),
        **sweep(),
    )
    status, reason = deployment.condition.outcome()
    assert status == "CREATE_FAILED"
    assert len(reason) <= MAX_REASON
    assert "p50 ms/token at concurrency 1 is 20.0, above the SLO of 15" in reason
    assert "Measured: knee 4 at 20.0 ms/token p50, max 200.0 output tokens/s" in reason
    assert reason.endswith(f"Results: s3://results/{deployment.run['Prefix']}results.json")


def test_a_latency_slo_in_the_knee_rule_moves_the_knee() -> None:
    deployment = deploy(**sweep(KneeRule(min_gain_per_doubling=0.1, slo_ms_per_token=30)))
    results = json.loads(deployment.s3.objects[f"{deployment.run['Prefix']}results.json"])
    assert results["knee"]["concurrency"] == 4
    deployment = deploy(**sweep(KneeRule(min_gain_per_doubling=0.0, slo_ms_per_token=50)))
    results = json.loads(deployment.s3.objects[f"{deployment.run['Prefix']}results.json"])
    assert (results["knee"]["concurrency"], results["knee"]["reason"]) == (8, "slo")


def test_throttled_lambda_invocations_are_retried_and_a_broken_worker_is_reported() -> None:
    throttled: list[int] = []

    def throttle_once(item: dict[str, Any]) -> None:
        if item["Level"] == 2 and not throttled:
            throttled.append(1)
            raise LambdaError("Lambda.TooManyRequestsException", "Rate exceeded")

    deployment = deploy(worker_hook=throttle_once, **sweep())
    assert throttled and deployment.condition.outcome()[0] == "CREATE_COMPLETE"

    def broken(item: dict[str, Any]) -> None:
        if item["Level"] == 4:
            raise RuntimeError("AccessDeniedException: not authorized to InvokeEndpoint")

    deployment = deploy(worker_hook=broken, **sweep())
    assert deployment.execution == "FAILED"
    status, reason = deployment.condition.outcome()
    assert status == "CREATE_FAILED"
    assert "RuntimeError: AccessDeniedException: not authorized to InvokeEndpoint" in reason


def test_a_broken_worker_fails_the_deployment_with_the_levels_measured_before() -> None:
    def broken(item: dict[str, Any]) -> None:
        if item["Level"] == 4:
            raise RuntimeError("AccessDeniedException: not authorized to kms:GenerateDataKey")

    deployment = deploy(worker_hook=broken, **sweep())
    assert deployment.execution == "FAILED"
    status, reason = deployment.condition.outcome()
    assert status == "CREATE_FAILED"
    assert "RuntimeError: AccessDeniedException: not authorized to kms:GenerateDataKey" in reason
    # Levels 1 and 2 were measured before the worker of level 4 broke: their figures and
    # results.json are what the deployment reports, as a gate's failure would.
    prefix = deployment.run["Prefix"]
    assert "Measured: knee at least 2 (no level tripped the rule" in reason
    assert "max 100.0 output tokens/s at concurrency 2" in reason
    assert reason.endswith(f"Results: s3://results/{prefix}results.json")
    results = json.loads(deployment.s3.objects[f"{prefix}results.json"])
    assert [level["concurrency"] for level in results["levels"]] == [1, 2]
    assert results["gate"]["passed"] is False
    assert "the sweep broke before it ended" in results["gate"]["failures"][0]
    # No export: they read every sample back, which a step out of time may have been doing.
    assert f"{prefix}chart.svg" not in deployment.s3.objects


def test_a_broken_first_level_fails_with_the_error_alone() -> None:
    def broken(item: dict[str, Any]) -> None:
        raise RuntimeError("AccessDeniedException: not authorized to InvokeEndpoint")

    deployment = deploy(worker_hook=broken, **sweep())
    status, reason = deployment.condition.outcome()
    assert status == "CREATE_FAILED" and "Measured" not in reason
    assert reason.endswith("RuntimeError: AccessDeniedException: not authorized to InvokeEndpoint")


def test_a_sweep_past_its_max_duration_fails_before_the_wait_times_out() -> None:
    deployment = deploy(max_duration=cdk.Duration.minutes(12), **sweep())
    status, reason = deployment.condition.outcome()
    assert status == "CREATE_FAILED"
    assert "ran out of time before levels" in reason or "sent no request" in reason
    assert deployment.condition.signals[0][0] - START < deployment.condition.timeout
