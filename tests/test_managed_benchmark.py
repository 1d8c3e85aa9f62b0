"""EndpointBenchmark on a SageMaker AI benchmark job (``BenchmarkEngine.managed``): AIPerf's
output mapped to this engine's levels, the synthesized template (the workload configuration,
least-privilege IAM, cfn-lint and cdk-nag clean), and the handlers' calls through botocore's
Stubber (every call validated against the service model by the ``api_contract`` fixture)."""

from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass, field
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk.assertions import Template
from botocore.stub import Stubber
from conftest import CDK_CONTEXT, assert_cfn_lint_clean, new_stack
from contracts import checked
from test_endpoint_benchmark_handler import HANDLE, ClientError, run_config

from cdk_sagemaker_llm import (
    BenchmarkEngine,
    BenchmarkLoad,
    BenchmarkResults,
    ComponentModel,
    ContainerImage,
    CopyResources,
    EndpointBenchmark,
    GoodputSlo,
    InferenceComponentEndpoint,
    InstanceType,
    Model,
    ModelSource,
    PayloadFormat,
    RequestProtocol,
    Workload,
)
from cdk_sagemaker_llm.benchmarking.aiperf import (
    MANAGED_ENGINE,
    POLL_TIMEOUT_S,
    levels_of_archive,
    workload_spec,
)
from cdk_sagemaker_llm.constructs.inference_component import InferenceComponent
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.lambdas.benchmark.custom_resource import RESOURCE_TYPE
from cdk_sagemaker_llm.lambdas.benchmark.run_names import EventError
from cdk_sagemaker_llm.lambdas.managed_benchmark.job import (
    LATE_CREATE_CHECKS,
    dispatch_managed,
    poll_step,
)
from cdk_sagemaker_llm.lambdas.runtime_support import Budget

CHAT = RequestProtocol(payload_format=PayloadFormat.MESSAGES, stream=True)
ROLE = "arn:aws:iam::123456789012:role/JobRole"
CONFIG = "arn:aws:sagemaker:us-west-2:123456789012:ai-workload-config/benchconfig1234abcd"
MANAGED = {"PollSeconds": 60, "WorkloadConfig": CONFIG, "RoleArn": ROLE}


@pytest.fixture(autouse=True)
def dummy_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


# ----- AIPerf's output -----------------------------------------------------------------------


def record(start_s: float, latency_ms: float, ttft_ms: float, tokens: int) -> dict[str, Any]:
    start = int(start_s * 1e9)
    return {
        "metadata": {"x_request_id": f"r{start}", "request_start_ns": start,
                     "request_end_ns": start + int(latency_ms * 1e6), "was_cancelled": False},
        "metrics": {"time_to_first_token": {"value": ttft_ms, "unit": "ms"},
                    "request_latency": {"value": latency_ms, "unit": "ms"},
                    "output_sequence_length": {"value": tokens, "unit": "tokens"}},
        "error": None,
    }  # fmt: skip


AGGREGATE = {
    "request_throughput": {"unit": "requests/sec", "avg": 3.5},
    "request_latency": {"unit": "ms", "avg": 1300.0, "p50": 1200.0, "p90": 1800.0, "p99": 2000.0},
    "time_to_first_token": {"unit": "ms", "avg": 120.0, "p50": 100.0, "p90": 200.0, "p99": 300.0},
    "inter_token_latency": {"unit": "ms", "avg": 11.0, "p50": 10.0, "p90": 14.0, "p99": 20.0},
    "output_sequence_length": {"unit": "tokens", "avg": 100.0, "p50": 100.0},
    "output_token_throughput": {"unit": "tokens/sec", "avg": 350.0},
    "benchmark_duration": {"unit": "sec", "avg": 20.0},
    "request_count": {"unit": "requests", "avg": 70.0},
    "error_request_count": {"unit": "requests", "avg": 2.0},
    "total_osl": {"unit": "tokens", "avg": 7000.0},
    "error_summary": [
        {"error_details": {"code": 429, "type": "TooManyRequests", "message": "x"}, "count": 2}
    ],
}


def archive(levels: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in levels.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def job_output() -> bytes:
    records = [record(100.0 + i, 1000.0 + 100 * i, 50.0 + 10 * i, 100) for i in range(4)]
    failed = {"metadata": {"request_start_ns": int(200e9), "request_end_ns": int(200.5e9)},
              "metrics": None, "error": {"code": 500, "type": "InternalServerError",
                                         "message": "boom"}}  # fmt: skip
    jsonl = "\n".join(json.dumps(r) for r in [*records, failed]).encode()
    return archive(
        {
            "output/concurrency_1/profile_export.jsonl": jsonl,
            "output/concurrency_1/profile_export_aiperf.json": b"{}",
            "output/concurrency_4/profile_export_aiperf.json": json.dumps(AGGREGATE).encode(),
            "output/concurrency_4/inputs.json": b"{}",
        }
    )


def test_per_request_records_are_summarized_like_the_workers_samples() -> None:
    (one, source_one), (four, source_four) = levels_of_archive(job_output())
    assert (source_one, source_four) == ("profile_export.jsonl", "profile_export_aiperf.json")
    assert (one.concurrency, one.requests, one.errors) == (1, 5, 1)
    assert one.errors_by_kind["model_error"] == 1
    assert one.p50_latency_s == pytest.approx(1.15)
    assert one.p50_ttft_s == pytest.approx(0.065)
    assert one.p50_ms_per_token == pytest.approx(11.5)
    assert one.p50_tpot_s == pytest.approx((1.15 - 0.065) / 99, rel=0.02)
    assert four.concurrency == 4 and (four.requests, four.errors) == (72, 2)
    assert four.errors_by_kind["throttling"] == 2
    assert (four.p50_latency_s, four.p99_ttft_s) == (pytest.approx(1.2), pytest.approx(0.3))
    assert four.p50_ms_per_token == pytest.approx(12.0)  # p50 latency / mean output length
    assert four.p50_tpot_s == pytest.approx(0.010)
    assert (four.output_tokens_per_s, four.requests_per_s) == (350.0, 3.5)


def test_the_workload_specification_is_the_documented_one() -> None:
    spec = workload_spec(input_tokens=512, output_tokens=128, streaming=True,
                         concurrencies=[1, 4], request_count=64,
                         tokenizer="Qwen/Qwen2-0.5B-Instruct")  # fmt: skip
    assert spec == {
        "benchmark": {"type": "aiperf"},
        "parameters": {
            "prompt_input_tokens_mean": 512, "prompt_input_tokens_stddev": 0,
            "output_tokens_mean": 128, "output_tokens_stddev": 0, "streaming": True,
            "concurrency": [1, 4], "request_count": 64, "random_seed": 0,
            "tokenizer": "Qwen/Qwen2-0.5B-Instruct",
        },
    }  # fmt: skip


# ----- the construct -------------------------------------------------------------------------


def managed_stack(**props: Any) -> tuple[cdk.Stack, EndpointBenchmark]:
    stack = new_stack()
    component = InferenceComponent.from_inference_component_name(
        stack, "Ic", inference_component_name="ic", endpoint_name="ep"
    )
    bench = EndpointBenchmark(
        stack, "Bench", inference_component=component,
        load=BenchmarkLoad.concurrency([1, 4, 16], requests_per_level=32),
        workload=Workload(input_tokens=512, output_tokens=128), protocol=CHAT,
        engine=BenchmarkEngine.managed(tokenizer="Qwen/Qwen2.5-7B-Instruct"),
        **props,
    )  # fmt: skip
    return stack, bench


def statements(template: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    found = []
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::IAM::Policy" and logical_id.startswith(role_prefix):
            found += resource["Properties"]["PolicyDocument"]["Statement"]
    return found


def actions(statements: list[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for statement in statements:
        value = statement["Action"]
        out |= {value} if isinstance(value, str) else set(value)
    return out


def test_the_template_holds_the_workload_configuration_and_least_privilege() -> None:
    stack, bench = managed_stack()
    template = assert_cfn_lint_clean(stack)
    (config,) = (
        Template.from_stack(stack).find_resources("AWS::SageMaker::AIWorkloadConfig").values()
    )
    properties = config["Properties"]
    spec = json.loads(properties["AIWorkloadConfigs"]["WorkloadSpec"]["Inline"])
    assert spec["parameters"]["concurrency"] == [1, 4, 16]
    assert spec["parameters"]["request_count"] == 32 and spec["parameters"]["streaming"] is True
    name = properties["AIWorkloadConfigName"]
    assert name.isalnum() and name.islower() and name.endswith(bench.definition_hash)
    (custom,) = [r for r in template["Resources"].values()
                 if r["Type"] == "Custom::SageMakerEndpointBenchmark"]  # fmt: skip
    run = custom["Properties"]["Run"]
    assert run["Engine"] == MANAGED_ENGINE
    assert run["Managed"]["WorkloadConfig"]["Fn::GetAtt"][1] == "AIWorkloadConfigArn"
    assert run["Managed"]["Tokenizer"] == "Qwen/Qwen2.5-7B-Instruct"
    assert "Fn::GetAtt" in run["Managed"]["RoleArn"]
    poll = statements(template, "BenchPollRole")
    starter = statements(template, "BenchStarterRole")
    job = statements(template, "BenchJobRole")
    assert {"sagemaker:CreateAIBenchmarkJob", "sagemaker:DescribeAIBenchmarkJob",
            "sagemaker:StopAIBenchmarkJob", "iam:PassRole", "s3:ListBucket",
            "s3:GetObject", "s3:PutObject"} <= actions(poll)  # fmt: skip
    assert "sagemaker:CreateAIBenchmarkJob" not in actions(starter)
    # Delete stops the job and waits (DescribeAIBenchmarkJob) until it has left Stopping.
    assert {"sagemaker:StopAIBenchmarkJob", "sagemaker:DescribeAIBenchmarkJob",
            "states:StopExecution"} <= actions(starter)  # fmt: skip
    (starter_function,) = [
        r["Properties"] for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"].get("Handler") == "index.on_event"
    ]  # fmt: skip
    assert starter_function["Timeout"] == 900
    # The starter answers CloudFormation itself, even after a Delete's 15-minute wait: the
    # custom resource's ServiceTimeout outlasts the function (not CloudFormation's 5 minutes).
    assert int(custom["Properties"]["ServiceTimeout"]) == 960
    assert actions(job) == {
        "sagemaker:InvokeEndpoint",
        "sagemaker:InvokeEndpointWithResponseStream",
        "s3:PutObject",
    }
    for statement in poll:
        if statement["Action"] == "iam:PassRole":
            assert statement["Condition"] == {
                "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}
            }
        if statement["Action"] == "s3:ListBucket":
            assert "s3:prefix" in statement["Condition"]["StringLike"]
    text = json.dumps(poll + starter + job)
    assert "ai-benchmark-job/" in text and '"Resource": "*"' not in text
    assert not [r for r in template["Resources"].values()
                if r["Type"] == "AWS::Lambda::Function"
                and "Runs one level" in r["Properties"].get("Description", "")]  # fmt: skip
    plan = custom["Metadata"]["cdk-sagemaker-llm:benchmark"]
    assert plan["Workers"].startswith("a SageMaker AI benchmark job")


@pytest.mark.parametrize("customer_key", [False, True])
def test_the_managed_benchmark_is_nag_clean(tmp_path: Any, customer_key: bool) -> None:
    """With a customer-managed key on the results bucket, the poll function's and the job
    role's key grants are acknowledged where they are made (before: 4 IAM5 findings)."""
    from aws_cdk import aws_kms as kms
    from cdk_nag import AwsSolutionsChecks

    from cdk_sagemaker_llm import InferenceComponentEndpoint, InstanceType, Model
    from cdk_sagemaker_llm.constructs.images import ContainerImage

    app = cdk.App(outdir=str(tmp_path), context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Managed", env=cdk.Environment(region="us-west-2"))
    model = Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    component = endpoint.add_inference_component(
        "Component",
        serves=ComponentModel.of(model),
        resources=CopyResources(accelerators=1, min_memory=cdk.Size.gibibytes(16)),
    )
    key = kms.Key(stack, "Key", enable_key_rotation=True) if customer_key else None
    EndpointBenchmark(stack, "Bench", inference_component=component, protocol=CHAT,
                      engine=BenchmarkEngine.managed(),
                      results=BenchmarkResults.in_new_bucket(encryption_key=key))  # fmt: skip
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged finding


@pytest.mark.parametrize(
    ("props", "prop"),
    [
        ({"load": BenchmarkLoad.request_rates([1, 2])}, "load"),
        ({"load": BenchmarkLoad.knee_search(high=64)}, "load"),
        ({"load": BenchmarkLoad.concurrency([1], slo=GoodputSlo(ttft_ms=100))}, "load.slo"),
        ({"protocol": RequestProtocol(stream=True)}, "protocol.payload_format"),
        ({"protocol": RequestProtocol(PayloadFormat.MESSAGES, prefix_aware_id="a")}, "workload"),
        ({"workload": Workload.multi_turn(conversations=2, turns=2, turn_tokens=4)}, "workload"),
    ],
)
def test_what_a_job_does_not_run_fails_at_synth(props: dict[str, Any], prop: str) -> None:
    stack = new_stack()
    component = InferenceComponent.from_inference_component_name(
        stack, "Ic", inference_component_name="ic", endpoint_name="ep"
    )
    with pytest.raises(ValidationError) as raised:
        EndpointBenchmark(stack, "B", inference_component=component, **{"protocol": CHAT, **props},
                          engine=BenchmarkEngine.managed())  # fmt: skip
    assert raised.value.prop == prop
    with pytest.raises(ValidationError, match="poll_interval"):
        BenchmarkEngine.managed(poll_interval=cdk.Duration.seconds(5))
    with pytest.raises(ValidationError, match="tokenizer"):
        BenchmarkEngine.managed(tokenizer="no spaces allowed")


def test_a_poll_interval_overrunning_the_execution_history_fails_at_synth() -> None:
    """Each poll adds 9 events to the workflow's history, which fails past 25,000 events
    without signalling: 10 s polls over a sweep of 11 hours would be 4,050 of them."""
    stack = new_stack()
    component = InferenceComponent.from_inference_component_name(
        stack, "Ic", inference_component_name="ic", endpoint_name="ep"
    )
    with pytest.raises(ValidationError, match="25,000-event execution history") as raised:
        EndpointBenchmark(stack, "B", inference_component=component, protocol=CHAT,
                          engine=BenchmarkEngine.managed(poll_interval=cdk.Duration.seconds(10)),
                          max_duration=cdk.Duration.hours(11))  # fmt: skip
    assert raised.value.prop == "engine (BenchmarkEngine.managed(poll_interval), seconds)"
    assert "poll every 16 seconds or more, or shorten max_duration" in raised.value.fix
    EndpointBenchmark(stack, "Fits", inference_component=component, protocol=CHAT,
                      engine=BenchmarkEngine.managed(poll_interval=cdk.Duration.seconds(16)),
                      max_duration=cdk.Duration.hours(11))  # fmt: skip


def test_the_job_api_has_no_field_for_a_hugging_face_token() -> None:
    """What the refusal of gated tokenizers rests on: botocore's SageMaker model has no token
    (or secret) member anywhere in the two requests that define a job."""
    model = boto3.session.Session().client("sagemaker", region_name="us-east-1").meta.service_model

    def members(shape: Any, seen: frozenset[str] = frozenset()) -> set[str]:
        if shape.name in seen:
            return set()
        seen = seen | {shape.name}
        if shape.type_name == "structure":
            found = set(shape.members)
            for member in shape.members.values():
                found |= members(member, seen)
            return found
        if shape.type_name == "list":
            return members(shape.member, seen)
        if shape.type_name == "map":
            return members(shape.value, seen)
        return set()

    for operation in ("CreateAIWorkloadConfig", "CreateAIBenchmarkJob"):
        names = members(model.operation_model(operation).input_shape)
        assert "AIWorkloadConfigName" in names or "AIBenchmarkJobName" in names
        assert not [name for name in names if "token" in name.lower() or "secret" in
                    name.lower()], operation  # fmt: skip


@pytest.mark.parametrize(
    "tokenizer", ["meta-llama/Meta-Llama-3-8B-Instruct", "google/gemma-2-9b-it",
                  "mistralai/Mistral-7B-Instruct-v0.3"],
)  # fmt: skip
def test_a_gated_tokenizer_is_refused_on_the_managed_engine(tokenizer: str) -> None:
    with pytest.raises(ValidationError) as raised:
        BenchmarkEngine.managed(tokenizer=tokenizer)
    error = raised.value
    assert error.prop == "BenchmarkEngine.managed(tokenizer)" and error.value == tokenizer
    assert "gated" in error.problem and "CreateAIBenchmarkJob" in error.problem
    assert "BenchmarkEngine.lambda_workers()" in error.fix and "ungated" in error.fix


def test_a_gated_model_served_with_a_token_is_benchmarked_by_the_lambda_workers() -> None:
    """The fix the refusal names synthesizes: the model keeps its token, the Lambda engine
    runs the sweep (it downloads no tokenizer)."""
    stack = new_stack()
    token = cdk.aws_secretsmanager.Secret.from_secret_name_v2(stack, "HfToken", "hf-token")
    model = Model(
        stack, "Llama", image=ContainerImage.lmi("0.38.0"),
        source=ModelSource.from_hugging_face("meta-llama/Meta-Llama-3-8B-Instruct",
                                             token_secret=token),
    )  # fmt: skip
    endpoint = InferenceComponentEndpoint(stack, "Ep", instance_type=InstanceType.G5_12XLARGE)
    component = endpoint.add_inference_component(
        "Llama3", serves=ComponentModel.of(model),
        resources=CopyResources(accelerators=1, min_memory=cdk.Size.gibibytes(16)),
    )  # fmt: skip
    EndpointBenchmark(
        stack, "Bench", inference_component=component,
        load=BenchmarkLoad.concurrency([1, 4], requests_per_level=16),
        workload=Workload(input_tokens=512, output_tokens=128), protocol=CHAT,
        engine=BenchmarkEngine.lambda_workers(),
    )  # fmt: skip
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::SageMaker::AIWorkloadConfig", 0)


# ----- the handlers --------------------------------------------------------------------------


@dataclass
class FakeS3:
    objects: dict[tuple[str, str], bytes] = field(default_factory=dict)

    def list_objects_v2(self, Bucket: str, Prefix: str) -> dict[str, Any]:
        return {"Contents": [{"Key": k, "Size": len(v)} for (b, k), v in self.objects.items()
                             if b == Bucket and k.startswith(Prefix)]}  # fmt: skip

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        return {"Body": io.BytesIO(self.objects[(Bucket, Key)])}

    def put_object(self, Bucket: str, Key: str, Body: bytes, **_: Any) -> dict[str, Any]:
        self.objects[(Bucket, Key)] = Body
        return {}


def managed_run(**overrides: Any) -> dict[str, Any]:
    return run_config(
        **{"Engine": MANAGED_ENGINE, "Managed": MANAGED, "Format": "messages", "Stream": True,
           "Concurrencies": [1, 4], "Gate": {"MinKneeConcurrency": 1}, **overrides}
    )  # fmt: skip


def sagemaker() -> tuple[Any, Stubber]:
    client = boto3.client("sagemaker", region_name="us-west-2")
    return client, Stubber(client)


def described(run: dict[str, Any], status: str, **extra: Any) -> dict[str, Any]:
    return {
        "AIBenchmarkJobName": run["Name"],
        "AIBenchmarkJobArn": f"arn:aws:sagemaker:us-west-2:123456789012:ai-benchmark-job/{run['Name']}",
        "AIBenchmarkJobStatus": status,
        "BenchmarkTarget": {"Endpoint": {"Identifier": "ep"}},
        "OutputConfig": {"S3OutputLocation": f"s3://results/{run['Prefix']}aiperf/"},
        "AIWorkloadConfigIdentifier": MANAGED["WorkloadConfig"],
        "RoleArn": ROLE,
        "CreationTime": 1.0,
        **extra,
    }  # fmt: skip


def test_the_first_poll_creates_the_job_then_polls_until_it_completes() -> None:
    run = managed_run()
    client, stub = sagemaker()
    s3 = checked(FakeS3(), "s3")
    signals: list[dict[str, Any]] = []
    name = {"AIBenchmarkJobName": run["Name"]}
    stub.add_client_error("describe_ai_benchmark_job", "ResourceNotFound", expected_params=name)
    stub.add_response(
        "create_ai_benchmark_job",
        {"AIBenchmarkJobArn": described(run, "InProgress")["AIBenchmarkJobArn"]},
        {"AIBenchmarkJobName": run["Name"],
         "BenchmarkTarget": {"Endpoint": {"Identifier": "ep",
                                          "InferenceComponents": [{"Identifier": "ic-1"}]}},
         "OutputConfig": {"S3OutputLocation": f"s3://results/{run['Prefix']}aiperf/"},
         "AIWorkloadConfigIdentifier": MANAGED["WorkloadConfig"], "RoleArn": ROLE},
    )  # fmt: skip
    stub.add_response("describe_ai_benchmark_job", described(run, "InProgress"), name)
    stub.add_response("describe_ai_benchmark_job", described(run, "Completed"), name)
    s3.objects[("results", f"{run['Prefix']}aiperf/job/output/output.tar.gz")] = job_output()
    put = lambda _url, body: signals.append(dict(body))  # noqa: E731
    with stub:
        state = poll_step({"Run": run}, sagemaker=client, s3=s3, put=put, now=run["StartedAt"])
        assert state["Done"] is False and state["Status"] == "created"
        state = poll_step(state, sagemaker=client, s3=s3, put=put, now=run["StartedAt"] + 60)
        assert state["Done"] is False and state["Status"] == "InProgress"
        state = poll_step(state, sagemaker=client, s3=s3, put=put, now=run["StartedAt"] + 120)
    assert state["Done"] is True and state["Outcome"] == "SUCCESS"
    (signal,) = signals
    assert signal["Status"] == "SUCCESS"
    figures = json.loads(signal["Data"])
    assert figures["KneeConcurrency"] in (1, 4) and figures["MaxOutputTokensPerSecond"] > 0
    results = json.loads(s3.objects[("results", f"{run['Prefix']}results.json")])
    assert [level["concurrency"] for level in results["levels"]] == [1, 4]
    assert results["target"]["client"].startswith("EndpointBenchmark (SageMaker AI benchmark job")
    assert results["distribution"][0]["source"] == "profile_export.jsonl"
    assert results["gate"]["passed"] is True


def test_a_failed_job_or_the_deadline_signals_failure_with_the_reason() -> None:
    run = managed_run()
    client, stub = sagemaker()
    signals: list[dict[str, Any]] = []
    put = lambda _url, body: signals.append(dict(body))  # noqa: E731
    name = {"AIBenchmarkJobName": run["Name"]}
    stub.add_response(
        "describe_ai_benchmark_job",
        described(run, "Failed", FailureReason="Endpoint ep does not serve chat completions"),
        name,
    )
    stub.add_response("describe_ai_benchmark_job", described(run, "InProgress"), name)
    stub.add_response("stop_ai_benchmark_job", {"AIBenchmarkJobArn": "arn:aws:sagemaker:us-west-2:123456789012:ai-benchmark-job/x"}, name)  # fmt: skip
    s3 = checked(FakeS3(), "s3")
    with stub:
        failed = poll_step({"Run": run}, sagemaker=client, s3=s3, put=put, now=run["StartedAt"])
        late = poll_step({"Run": run}, sagemaker=client, s3=s3, put=put, now=run["Deadline"])
    assert failed["Outcome"] == late["Outcome"] == "FAILURE"
    assert "does not serve chat completions" in signals[0]["Reason"]
    assert "past the benchmark's deadline and was stopped" in signals[1]["Reason"]


def test_a_job_without_the_levels_or_outside_the_run_folder_fails() -> None:
    run = managed_run(Concurrencies=[1, 4, 8])
    client, stub = sagemaker()
    signals: list[dict[str, Any]] = []
    s3 = checked(FakeS3(), "s3")
    s3.objects[("results", f"{run['Prefix']}aiperf/output.tar.gz")] = job_output()
    name = {"AIBenchmarkJobName": run["Name"]}
    stub.add_response("describe_ai_benchmark_job", described(run, "Completed"), name)
    outside = described(run, "Completed", OutputConfig={"S3OutputLocation": "s3://other/x/"})
    stub.add_response("describe_ai_benchmark_job", outside, name)
    put = lambda _url, body: signals.append(dict(body))  # noqa: E731
    with stub:
        state = poll_step({"Run": run}, sagemaker=client, s3=s3, put=put, now=run["StartedAt"])
        with pytest.raises(EventError, match="outside the run's folder"):
            poll_step({"Run": run}, sagemaker=client, s3=s3, put=put, now=run["StartedAt"])
    assert state["Outcome"] == "FAILURE" and "no levels [8]" in signals[0]["Reason"]


def test_delete_stops_the_job_and_the_workflow() -> None:
    client, stub = sagemaker()
    name = "x-bench-980695c5-60b9b797-abcdef"
    stub.add_client_error("stop_ai_benchmark_job", "ResourceNotFound",
                          expected_params={"AIBenchmarkJobName": name})  # fmt: skip
    for _ in range(LATE_CREATE_CHECKS):  # no poll started before the stop creates it late
        stub.add_client_error("describe_ai_benchmark_job", "ResourceNotFound",
                              expected_params={"AIBenchmarkJobName": name})  # fmt: skip
    slept: list[float] = []
    budget = Budget(remaining_ms=lambda: 900_000.0, sleep=slept.append)

    class Sfn:
        stopped: list[str] = []

        def stop_execution(self, executionArn: str, **_: Any) -> dict[str, Any]:
            self.stopped.append(executionArn)
            return {"stopDate": 1.0}

    event = {"RequestType": "Delete", "ResourceType": RESOURCE_TYPE, "PhysicalResourceId": name,
             "ResourceProperties": {"StateMachineArn": "arn:aws:states:us-west-2:1:stateMachine:W"},
             "RequestId": "r", "ResponseURL": "https://x"}  # fmt: skip
    sfn = checked(Sfn(), "stepfunctions")
    with stub:
        answer = dispatch_managed(event, sfn=sfn, sagemaker=client, now=0.0, budget=budget)
    assert answer["PhysicalResourceId"] == name
    stub.assert_no_pending_responses()
    assert sum(slept) >= POLL_TIMEOUT_S  # past the poll Lambda's timeout after the stop


class _StoppedWorkflow:
    """Step Functions' StopExecution, recording the order of calls with the job's."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def stop_execution(self, executionArn: str, **_: Any) -> dict[str, Any]:
        self.calls.append("StopExecution")
        return {"stopDate": 1.0}


def _rollback_delete(name: str) -> dict[str, Any]:
    """The Delete CloudFormation sends for the benchmark on a rollback (or a stack delete)."""
    return {"RequestType": "Delete", "ResourceType": RESOURCE_TYPE, "PhysicalResourceId": name,
            "ResourceProperties": {
                "RunNameStem": name.rsplit("-", 1)[0],
                "StateMachineArn": "arn:aws:states:us-west-2:123456789012:stateMachine:W"},
            "RequestId": "r", "ResponseURL": "https://x"}  # fmt: skip


def test_a_rollback_waits_until_the_job_has_left_stopping() -> None:
    """SageMaker refuses to delete a workload configuration an active job references, and a
    job in Stopping is active: the Delete stops the workflow, then the job, and returns only
    once DescribeAIBenchmarkJob says Stopped (botocore-validated by the Stubber)."""
    run = managed_run()
    name = run["Name"]
    client, stub = sagemaker()
    calls: list[str] = []
    client.meta.events.register(
        "before-parameter-build.sagemaker", lambda model, **_: calls.append(model.name)
    )
    params = {"AIBenchmarkJobName": name}
    arn = described(run, "Stopping")["AIBenchmarkJobArn"]
    stub.add_response("stop_ai_benchmark_job", {"AIBenchmarkJobArn": arn}, params)
    for status in ("Stopping", "Stopping", "Stopped"):
        stub.add_response("describe_ai_benchmark_job", described(run, status), params)
    slept: list[float] = []
    budget = Budget(remaining_ms=lambda: 600_000.0, sleep=slept.append)
    sfn = checked(_StoppedWorkflow(calls), "stepfunctions")
    with stub:
        answer = dispatch_managed(
            _rollback_delete(name), sfn=sfn, sagemaker=client, now=0.0, budget=budget
        )
    stub.assert_no_pending_responses()
    assert answer["PhysicalResourceId"] == name
    assert calls == ["StopExecution", "StopAIBenchmarkJob", *["DescribeAIBenchmarkJob"] * 3]
    assert len(slept) == 2


def test_a_job_a_late_poll_creates_after_the_delete_found_none_is_stopped_and_waited_for() -> None:
    """A poll invoked before the Delete stopped the workflow runs on (a stopped execution does
    not end its task) and may create the job after the Delete found none: the Delete looks
    again until the poll Lambda's timeout has passed, stops the job it finds and waits until
    it has left Stopping (every request botocore-validated by the Stubber)."""
    run = managed_run()
    name = run["Name"]
    client, stub = sagemaker()
    calls: list[str] = []
    client.meta.events.register(
        "before-parameter-build.sagemaker", lambda model, **_: calls.append(model.name)
    )
    params = {"AIBenchmarkJobName": name}
    arn = described(run, "InProgress")["AIBenchmarkJobArn"]
    stub.add_client_error("stop_ai_benchmark_job", "ResourceNotFound", expected_params=params)
    for _ in range(2):
        stub.add_client_error("describe_ai_benchmark_job", "ResourceNotFound",
                              expected_params=params)  # fmt: skip
    stub.add_response("describe_ai_benchmark_job", described(run, "InProgress"), params)
    stub.add_response("stop_ai_benchmark_job", {"AIBenchmarkJobArn": arn}, params)
    for status in ("Stopping", "Stopped"):
        stub.add_response("describe_ai_benchmark_job", described(run, status), params)
    slept: list[float] = []
    budget = Budget(remaining_ms=lambda: 900_000.0, sleep=slept.append)
    sfn = checked(_StoppedWorkflow(calls), "stepfunctions")
    with stub:
        answer = dispatch_managed(
            _rollback_delete(name), sfn=sfn, sagemaker=client, now=0.0, budget=budget
        )
    stub.assert_no_pending_responses()
    assert answer["PhysicalResourceId"] == name
    describe, stop = "DescribeAIBenchmarkJob", "StopAIBenchmarkJob"
    assert calls == ["StopExecution", stop, describe, describe, describe, stop, describe, describe]


def test_a_delete_that_finds_the_job_still_active_answers_failed_so_the_config_stays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The custom resource's answer: a Delete that runs out of time with the job active is
    FAILED with the reason (CloudFormation then keeps the workload configuration the job
    references); any other Delete problem still answers SUCCESS."""
    from cdk_sagemaker_llm.lambdas.managed_benchmark import handler

    run = managed_run()
    name = run["Name"]
    client, stub = sagemaker()
    params = {"AIBenchmarkJobName": name}
    stub.add_client_error("stop_ai_benchmark_job", "ValidationException", expected_params=params)
    stub.add_response("describe_ai_benchmark_job", described(run, "Stopping"), params)
    clients = {"sagemaker": client, "stepfunctions": checked(_StoppedWorkflow([]), "stepfunctions")}
    monkeypatch.setattr(handler, "_client", clients.__getitem__)
    answers: list[dict[str, Any]] = []
    monkeypatch.setattr(handler, "http_put", lambda _url, body, *_a, **_k: answers.append(body))

    class Context:  # time for one more call, not for a poll interval and another
        @staticmethod
        def get_remaining_time_in_millis() -> float:
            return (Budget().reserve + Budget().call_seconds + 1.0) * 1000.0

    with stub:
        handler.on_event(_rollback_delete(name), Context())
    (answer,) = answers
    assert answer["Status"] == "FAILED" and f"{name} is still Stopping" in answer["Reason"]
    answers.clear()
    stub.add_client_error("stop_ai_benchmark_job", "AccessDenied", expected_params=params)
    stub.add_client_error("describe_ai_benchmark_job", "AccessDenied", expected_params=params)
    with stub:
        handler.on_event(_rollback_delete(name), Context())
    assert answers[0]["Status"] == "SUCCESS"


def test_a_job_still_stopping_when_the_delete_runs_out_of_time_fails_the_delete() -> None:
    run = managed_run()
    name = run["Name"]
    client, stub = sagemaker()
    params = {"AIBenchmarkJobName": name}
    stub.add_client_error("stop_ai_benchmark_job", "ValidationException", expected_params=params)
    stub.add_response("describe_ai_benchmark_job", described(run, "Stopping"), params)
    # Time for one more call, not for a poll interval and another.
    left_ms = (Budget().reserve + Budget().call_seconds + 1.0) * 1000.0
    budget = Budget(remaining_ms=lambda: left_ms, sleep=lambda _s: None)
    sfn = checked(_StoppedWorkflow([]), "stepfunctions")
    with stub, pytest.raises(EventError, match=f"{name} is still Stopping.*retry the delete"):
        dispatch_managed(_rollback_delete(name), sfn=sfn, sagemaker=client, now=0.0, budget=budget)


def test_a_managed_run_is_checked() -> None:
    for overrides, message in (
        ({"Managed": {**MANAGED, "RoleArn": "nope"}}, "RoleArn"),
        ({"Managed": {**MANAGED, "WorkloadConfig": "bad_name"}}, "WorkloadConfig"),
        ({"Managed": {**MANAGED, "PollSeconds": 1}}, "PollSeconds"),
        ({"Mode": "rate", "Concurrencies": [], "Rates": [1]}, "closed-loop"),
        ({"Engine": "lambda-workers"}, "Managed"),
        ({"Engine": "other"}, "Engine"),
    ):
        with pytest.raises(EventError, match=message):
            managed_run(**overrides)
    assert HANDLE and ClientError


def test_the_bundled_asset_imports_without_aws_cdk(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    from cdk_sagemaker_llm.constructs.managed_benchmark import MANAGED_ASSET

    MANAGED_ASSET.bundle(tmp_path)
    script = (
        "import json, sys, index; "
        "print(json.dumps([index.on_event.__name__, index.poll.__name__, "
        "[m for m in sys.modules if m.startswith('aws_cdk')]]))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == ["on_event", "poll", []]


def _client_of_older_botocore(tmp_path: Any) -> Any:
    """A SageMaker client whose service model lacks the AI benchmark operations, as a Lambda
    runtime's botocore older than 1.44.5 has it."""
    import botocore.session

    session = botocore.session.get_session()
    loader = session.get_component("data_loader")
    version = loader.determine_latest_version("sagemaker", "service-2")
    model = loader.load_service_model("sagemaker", "service-2", version)
    for operation in ("CreateAIBenchmarkJob", "DescribeAIBenchmarkJob", "StopAIBenchmarkJob"):
        del model["operations"][operation]
    folder = tmp_path / "sagemaker" / version
    folder.mkdir(parents=True)
    (folder / "service-2.json").write_text(json.dumps(model))
    older = botocore.session.get_session()
    older.set_config_variable("data_path", str(tmp_path))
    return older.create_client("sagemaker", region_name="us-west-2")


def test_a_runtime_botocore_without_the_operations_fails_at_start_with_the_reason(
    tmp_path: Any,
) -> None:
    from cdk_sagemaker_llm.lambdas.managed_benchmark.job import OPERATIONS, missing_operations

    client = _client_of_older_botocore(tmp_path)
    assert missing_operations(client) == list(OPERATIONS)
    assert missing_operations(sagemaker()[0]) == []  # the pinned botocore has them
    run = managed_run()
    put = lambda _url, _body: None  # noqa: E731
    with pytest.raises(EventError, match=r"botocore .* has no CreateAIBenchmarkJob.*1\.44\.5"):
        poll_step({"Run": run}, sagemaker=client, s3=None, put=put, now=run["StartedAt"])
    create = {"RequestType": "Create", "ResourceType": RESOURCE_TYPE, "RequestId": "r",
              "ResponseURL": "https://x", "ResourceProperties": {}}  # fmt: skip
    with pytest.raises(EventError, match="managed benchmark engine needs botocore"):
        dispatch_managed(create, sfn=None, sagemaker=client, now=0.0)
    # Such a runtime never created a job: a Delete (rollback) still succeeds.
    calls: list[str] = []
    name = run["Name"]
    answer = dispatch_managed(
        _rollback_delete(name), sfn=checked(_StoppedWorkflow(calls), "stepfunctions"),
        sagemaker=client, now=0.0,
    )  # fmt: skip
    assert answer["PhysicalResourceId"] == name and calls == ["StopExecution"]


def test_the_managed_jobs_levels_fail_a_peak_their_knee_cannot_serve_at_the_most_copies() -> None:
    """The SageMaker AI benchmark job's levels go through the same gate: its knee's
    requests/s per copy x the most copies must reach the peak. Its two levels trip no knee
    rule: the knee is a lower bound, which serves a small peak and leaves a large one
    unknown (a failure)."""
    signals: list[dict[str, Any]] = []
    put = lambda _url, body: signals.append(dict(body))  # noqa: E731
    for peak in (1e6, 0.001):
        run = managed_run(Gate={"PeakRequestsPerS": peak, "MaxCopies": 2})
        client, stub = sagemaker()
        s3 = checked(FakeS3(), "s3")
        s3.objects[("results", f"{run['Prefix']}aiperf/job/output/output.tar.gz")] = job_output()
        name = {"AIBenchmarkJobName": run["Name"]}
        stub.add_response("describe_ai_benchmark_job", described(run, "Completed"), name)
        with stub:
            poll_step({"Run": run}, sagemaker=client, s3=s3, put=put, now=run["StartedAt"])
    failed, passed = signals
    assert (failed["Status"], passed["Status"]) == ("FAILURE", "SUCCESS")
    reason = failed["Reason"]
    assert "the capacity at the peak is unknown: at least 3.5 requests/s per copy (the knee, " in (
        reason
    )
    assert "x 2 copies (the most autoscaling allows) = 7 requests/s" in reason
    assert "below the peak of 1e+06 requests/s" in reason
