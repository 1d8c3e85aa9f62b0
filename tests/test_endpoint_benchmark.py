"""EndpointBenchmark construct: emitted resources, IAM least privilege, reruns, validation."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Size
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from conftest import assert_cfn_lint_clean, new_stack, resources_of_type
from hub import hub_token

from cdk_sagemaker_llm import (
    BenchmarkEngine,
    BenchmarkGate,
    BenchmarkLoad,
    BenchmarkPricing,
    BenchmarkResults,
    ComponentModel,
    CopyResources,
    EndpointBenchmark,
    KneeRule,
    ManagedInstanceScaling,
    PayloadFormat,
    RequestProtocol,
    Workload,
)
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.catalog.prices import DEFAULT_PRICE_LIST
from cdk_sagemaker_llm.constructs.autoscaling import ComponentScaling
from cdk_sagemaker_llm.constructs.benchmark import asset_hash
from cdk_sagemaker_llm.constructs.endpoint import (
    Endpoint,
    InferenceComponentEndpoint,
    ProductionVariant,
)
from cdk_sagemaker_llm.constructs.images import ContainerImage
from cdk_sagemaker_llm.constructs.inference_component import InferenceComponent
from cdk_sagemaker_llm.constructs.model import Model
from cdk_sagemaker_llm.constructs.model_source import ModelSource
from cdk_sagemaker_llm.constructs.serving_options import LmiOptions
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.lambdas.benchmark.custom_resource import ATTRIBUTES


def component_stack(
    model_id: str = "meta-llama/Meta-Llama-3-8B-Instruct",
) -> tuple[cdk.Stack, InferenceComponent]:
    stack = new_stack()
    model = Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face(model_id, token_secret=hub_token()),
        serving=LmiOptions(tensor_parallel_degree=1, max_rolling_batch_size=8, max_model_len=4096),
    )
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(max_instance_count=2),
    )
    component = InferenceComponent(
        stack,
        "Component",
        endpoint=endpoint,
        serves=ComponentModel.of(model),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(32)),
        copy_count=2,
    )
    return stack, component


def template_of(stack: cdk.Stack) -> dict[str, Any]:
    return assert_cfn_lint_clean(stack)


def one(template: dict[str, Any], kind: str) -> tuple[str, dict[str, Any]]:
    (match,) = [(k, r) for k, r in template["Resources"].items() if r["Type"] == kind]
    return match


def policy_of(template: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    (statements,) = [
        r["Properties"]["PolicyDocument"]["Statement"]
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::IAM::Policy" and k.startswith(role_prefix)
    ]
    return list(statements)


@pytest.fixture(scope="module")
def benchmarked() -> tuple[dict[str, Any], EndpointBenchmark]:
    stack, component = component_stack()
    bench = EndpointBenchmark(
        stack,
        "Bench",
        inference_component=component,
        load=BenchmarkLoad.concurrency(
            [1, 2, 4, 8, 16, 300],
            knee_rule=KneeRule(min_gain_per_doubling=0.15, slo_ms_per_token=60),
        ),
        workload=Workload(input_tokens=512, output_tokens=256),
        protocol=RequestProtocol(payload_format=PayloadFormat.LMI, stream=True),
        gate=BenchmarkGate(max_p50_ms_per_token=50, min_knee_concurrency=2),
    )
    scaling = ComponentScaling(stack, "Scaling", component=component, max_copies=4)
    scaling.scale_on_concurrent_requests(target=bench.knee_concurrency_per_copy)
    return template_of(stack), bench


def test_emits_the_wait_design_and_is_cfn_lint_clean(
    benchmarked: tuple[dict[str, Any], EndpointBenchmark],
) -> None:
    template, bench = benchmarked
    types = sorted(r["Type"] for k, r in template["Resources"].items() if k.startswith("Bench"))
    assert types.count("AWS::Lambda::Function") == 3
    assert types.count("AWS::Logs::LogGroup") == 4  # three functions and the workflow
    for kind in (
        "AWS::S3::Bucket",
        "AWS::StepFunctions::StateMachine",
        "AWS::CloudFormation::WaitConditionHandle",
        "AWS::CloudFormation::WaitCondition",
        "Custom::SageMakerEndpointBenchmark",
        "Custom::SageMakerEndpointBenchmarkOutput",
    ):
        assert types.count(kind) == 1, kind
    for function in resources_of_type(template, "AWS::Lambda::Function"):
        assert function["Runtime"] == "python3.13" and "LoggingConfig" in function
    timeouts = sorted(f["Timeout"] for f in resources_of_type(template, "AWS::Lambda::Function"))
    assert timeouts == [60, 300, 900]
    wait_id, wait = one(template, "AWS::CloudFormation::WaitCondition")
    assert wait_id.startswith(f"BenchWait{bench.definition_hash}")
    assert wait["Properties"]["Timeout"] == str(7200 + 900)
    custom_id, custom = one(template, "Custom::SageMakerEndpointBenchmark")
    assert wait["DependsOn"] == [custom_id]
    component_id = next(k for k in template["Resources"] if k.startswith("Component"))
    assert custom["DependsOn"] == [component_id]  # runs once the component is in service
    run = custom["Properties"]["Run"]
    assert run["Concurrencies"] == [1, 2, 4, 8, 16, 300]
    assert (run["InputTokens"], run["OutputTokens"], run["Stream"], run["Format"]) == (
        512, 256, True, "lmi",
    )  # fmt: skip
    assert run["Rule"] == {"MinGainPerDoubling": 0.15, "SloMsPerToken": 60}
    assert run["Gate"] == {"MaxP50MsPerToken": 50, "MinKneeConcurrency": 2}
    assert run["Copies"] == 2 and run["WorkerCapacity"] == 256
    expected_price = DEFAULT_PRICE_LIST.prices["ml.g5.12xlarge"] * 2 / 4
    assert run["PricePerHour"] == pytest.approx(expected_price)
    assert "ml.g5.12xlarge" in run["PriceSource"]
    # The stack runs in us-west-2; the library's prices are us-east-1's, and the run says so.
    assert "us-east-1 on-demand USD" in run["PriceSource"]
    assert "resources in us-west-2, where prices differ" in run["PriceSource"]
    assert custom["Metadata"]["cdk-sagemaker-llm:benchmark"]["Workers"].startswith("up to 2")


def test_every_attribute_the_construct_offers_is_one_the_handler_returns(
    benchmarked: tuple[dict[str, Any], EndpointBenchmark],
) -> None:
    """``knee_at_least`` read ``Fn::GetAtt [..., KneeAtLeast]``, which the Output handler never
    returned: any stack that used it failed at deploy."""
    _, bench = benchmarked
    stack = cdk.Stack.of(bench)
    read = set()
    for value in vars(bench).values():
        if not isinstance(value, str | float) or not cdk.Token.is_unresolved(value):
            continue
        resolved = json.dumps(stack.resolve(value))
        read.update(re.findall(r'"Fn::GetAtt": \["BenchOutput[0-9A-F]+", "(\w+)"\]', resolved))
    assert {"KneeAtLeast", "SustainableRateAtLeast", "KneeConcurrencyPerCopy"} <= read
    assert read <= set(ATTRIBUTES)


def test_the_workflow_runs_workers_in_a_map_with_retries(
    benchmarked: tuple[dict[str, Any], EndpointBenchmark],
) -> None:
    template, _ = benchmarked
    _, machine = one(template, "AWS::StepFunctions::StateMachine")
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    definition = json.loads("".join(p if isinstance(p, str) else "arn" for p in parts))
    level = definition["States"]["RunLevel"]
    assert level["Type"] == "Map" and level["MaxConcurrency"] == 2  # 300 / 256 -> 2 workers
    assert level["ItemSelector"] == {"Run.$": "$.Run", "Slice.$": "$$.Map.Item.Value"}
    (retry,) = level["ItemProcessor"]["States"]["RunWorker"]["Retry"]
    assert "Lambda.TooManyRequestsException" in retry["ErrorEquals"]
    assert retry["JitterStrategy"] == "FULL" and retry["BackoffRate"] == 2
    assert definition["TimeoutSeconds"] == 8100
    assert machine["Properties"]["StateMachineType"] == "STANDARD"


def test_the_scaling_target_is_the_measured_knee_per_copy(
    benchmarked: tuple[dict[str, Any], EndpointBenchmark],
) -> None:
    template, _ = benchmarked
    output_id, _ = one(template, "Custom::SageMakerEndpointBenchmarkOutput")
    (policy,) = resources_of_type(template, "AWS::ApplicationAutoScaling::ScalingPolicy")
    target = policy["TargetTrackingScalingPolicyConfiguration"]["TargetValue"]
    assert target == {"Fn::GetAtt": [output_id, "KneeConcurrencyPerCopy"]}


def test_workers_may_only_invoke_the_component_and_write_the_run_folders(
    benchmarked: tuple[dict[str, Any], EndpointBenchmark],
) -> None:
    template, bench = benchmarked
    bucket_id, _ = one(template, "AWS::S3::Bucket")
    component_id = next(k for k in template["Resources"] if k.startswith("Component"))
    endpoint_id = next(
        k for k, r in template["Resources"].items() if r["Type"] == "AWS::SageMaker::Endpoint"
    )
    objects = {
        "Fn::Join": [
            "",
            [
                {"Fn::GetAtt": [bucket_id, "Arn"]},
                f"/endpoint-benchmarks/{bench.run_name_stem}-*",
            ],
        ]
    }
    worker = policy_of(template, "BenchWorkerRole")
    assert [s["Action"] for s in worker] == [
        ["logs:CreateLogStream", "logs:PutLogEvents"],
        ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
        "s3:PutObject",
    ]
    assert sorted(map(json.dumps, worker[1]["Resource"])) == sorted(
        map(
            json.dumps,
            [{"Ref": endpoint_id}, {"Fn::GetAtt": [component_id, "InferenceComponentArn"]}],
        )
    )
    assert worker[2]["Resource"] == objects
    advance = policy_of(template, "BenchAdvanceRole")
    assert [s["Action"] for s in advance][1:] == [["s3:GetObject", "s3:PutObject"]]
    assert advance[1]["Resource"] == objects
    starter = policy_of(template, "BenchStarterRole")
    assert [s["Action"] for s in starter][1:] == ["states:StartExecution", "states:StopExecution"]
    machine_id, _ = one(template, "AWS::StepFunctions::StateMachine")
    assert starter[1]["Resource"] == {"Ref": machine_id}
    # Delete stops the run: executions of this state machine only.
    name = {"Fn::GetAtt": [machine_id, "Name"]}
    assert starter[2]["Resource"]["Fn::Join"][1][-2:] == [name, ":*"]
    assert ":execution:" in starter[2]["Resource"]["Fn::Join"][1][-3]
    assert all(s["Effect"] == "Allow" and "Condition" not in s for s in worker + advance + starter)


def test_the_created_bucket_is_encrypted_private_and_ssl_only(
    benchmarked: tuple[dict[str, Any], EndpointBenchmark],
) -> None:
    template, _ = benchmarked
    _, bucket = one(template, "AWS::S3::Bucket")
    props = bucket["Properties"]
    rule = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert rule["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms"}
    assert rule["BucketKeyEnabled"] is True
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert bucket["DeletionPolicy"] == "Retain"
    (policy,) = resources_of_type(template, "AWS::S3::BucketPolicy")
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_a_given_bucket_and_endpoint_and_kms_key() -> None:
    stack = new_stack()
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    bucket = s3.Bucket(stack, "Mine", encryption_key=key, enforce_ssl=True)
    endpoint = Endpoint.from_endpoint_name(stack, "Ep", "my-endpoint")
    EndpointBenchmark(
        stack,
        "Bench",
        endpoint=endpoint,
        results=BenchmarkResults.in_bucket(bucket, prefix="bench/"),
        load=BenchmarkLoad.concurrency([1, 4]),
        pricing=BenchmarkPricing.per_hour(1.5),
    )
    template = template_of(stack)
    assert len(resources_of_type(template, "AWS::S3::Bucket")) == 1
    worker = policy_of(template, "BenchWorkerRole")
    invoke = next(s for s in worker if "sagemaker:InvokeEndpoint" in s["Action"])
    assert "endpoint/my-endpoint" in json.dumps(invoke["Resource"])
    assert "*" not in json.dumps(invoke["Resource"])
    assert any("kms:Encrypt" in json.dumps(s["Action"]) for s in worker)
    (custom,) = resources_of_type(template, "Custom::SageMakerEndpointBenchmark")
    assert custom["Run"]["InferenceComponentName"] == ""
    assert custom["Run"]["PricePerHour"] == 1.5 and custom["Run"]["PriceSource"] == "given"
    assert custom["ResultsPrefix"] == "bench/"


def test_a_savings_plan_discount_applies_to_given_and_listed_prices() -> None:
    stack = new_stack()
    endpoint = Endpoint.from_endpoint_name(stack, "Ep", "my-endpoint")
    given = EndpointBenchmark(
        stack,
        "Given",
        endpoint=endpoint,
        load=BenchmarkLoad.concurrency([1]),
        pricing=BenchmarkPricing.per_hour(2.0, discount=0.25),
    )
    assert given.price_per_hour == pytest.approx(1.5)
    stack, component = component_stack()
    listed = EndpointBenchmark(
        stack,
        "Bench",
        inference_component=component,
        load=BenchmarkLoad.concurrency([1]),
        pricing=BenchmarkPricing.from_price_list(discount=0.3),
    )
    undiscounted = DEFAULT_PRICE_LIST.prices["ml.g5.12xlarge"] * 2 / 4
    assert listed.price_per_hour == pytest.approx(0.7 * undiscounted)
    (custom,) = resources_of_type(template_of(stack), "Custom::SageMakerEndpointBenchmark")
    assert "less 30% discount" in custom["Run"]["PriceSource"]
    with pytest.raises(ValidationError, match=r"BenchmarkPricing.per_hour\(discount\)=1"):
        BenchmarkPricing.per_hour(2.0, discount=1)
    with pytest.raises(ValidationError, match=r"from_price_list\(discount\)=1"):
        BenchmarkPricing.from_price_list(discount=1)


def test_the_price_of_an_instance_endpoint_is_derived_from_its_variant() -> None:
    stack = new_stack()
    model = Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face(
            "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
        ),
        serving=LmiOptions(tensor_parallel_degree=1, max_model_len=4096),
    )
    endpoint = Endpoint(
        stack,
        "Ep",
        variants=[
            ProductionVariant(
                model=model, instance_type=InstanceType.G5_2XLARGE, initial_instance_count=2
            )
        ],
    )
    bench = EndpointBenchmark(
        stack, "Bench", endpoint=endpoint, load=BenchmarkLoad.concurrency([1, 2])
    )
    assert bench.price_per_hour == pytest.approx(2 * DEFAULT_PRICE_LIST.prices["ml.g5.2xlarge"])
    assert bench.copies == 2  # one copy of the model on each of the 2 instances
    # What was benchmarked goes to results.json's deployment section (the calibration key).
    (run,) = [
        r["Properties"]["Run"]
        for r in Template.from_stack(stack).to_json()["Resources"].values()
        if r["Type"] == "Custom::SageMakerEndpointBenchmark"
    ]
    assert run["Deployment"] == {
        "Model": "llama-3-8b",
        "ModelSpec": ModelSpec.LLAMA_3_8B.to_metadata(),
        "EngineFamily": "lmi",
        "EngineVersion": "0.31.0",
        "InstanceType": "ml.g5.2xlarge",
        "TensorParallelDegree": 1,
        "Precision": "fp16",
    }


def test_the_run_states_what_it_benchmarks_for_calibration(
    benchmarked: tuple[dict[str, Any], EndpointBenchmark],
) -> None:
    template, _ = benchmarked
    _, resource = one(template, "Custom::SageMakerEndpointBenchmark")
    deployment = resource["Properties"]["Run"]["Deployment"]
    assert deployment == {
        "Model": "llama-3-8b",
        # the architecture, so that `calibrate` needs no --model for a ModelSpec.custom
        "ModelSpec": ModelSpec.LLAMA_3_8B.to_metadata(),
        "EngineFamily": "lmi",
        "EngineVersion": "0.31.0",
        "InstanceType": "ml.g5.12xlarge",
        "TensorParallelDegree": 1,  # the component's accelerators per copy
        "Precision": "fp16",
    }
    # The handlers accept it and write it into results.json (tests/test_calibrate_command.py).
    from cdk_sagemaker_llm.lambdas.benchmark.run_config import check_run, deployment_section

    run = dict(resource["Properties"]["Run"], Bucket="results")
    run.update(Name="bench-1234abcd-abcdef", HandleUrl="https://example.com/h", Deadline=1,
               StartedAt=1, Prefix="endpoint-benchmarks/x/", EndpointName="ep")  # fmt: skip
    section = deployment_section(check_run(run))
    assert section is not None
    assert section["engine"] == {"family": "lmi", "version": "0.31.0"}
    assert section["tensor_parallel_degree"] == 1
    assert section["model_spec"] == ModelSpec.LLAMA_3_8B.to_metadata()


def test_the_chat_completions_schema_reaches_the_workers() -> None:
    stack, component = component_stack()
    EndpointBenchmark(
        stack,
        "Bench",
        inference_component=component,
        load=BenchmarkLoad.concurrency([1, 2]),
        protocol=RequestProtocol(payload_format=PayloadFormat.MESSAGES, stream=True),
    )
    (custom,) = resources_of_type(template_of(stack), "Custom::SageMakerEndpointBenchmark")
    assert (custom["Run"]["Stream"], custom["Run"]["Format"]) == (True, "messages")


def definition_hash(build: Callable[[cdk.Stack, InferenceComponent], Any], model_id: str) -> str:
    stack, component = component_stack(model_id)
    bench = EndpointBenchmark(
        stack, "Bench", inference_component=component, **build(stack, component)
    )
    return bench.definition_hash


def test_reruns_only_when_the_target_or_the_load_changes() -> None:
    llama = "meta-llama/Meta-Llama-3-8B-Instruct"

    def levels(*levels: int) -> Callable[..., dict[str, Any]]:
        return lambda *_: {"load": BenchmarkLoad.concurrency(levels)}

    base = definition_hash(levels(1, 2, 4), llama)
    assert definition_hash(levels(1, 2, 4), llama) == base
    assert definition_hash(levels(1, 2, 8), llama) != base
    shorter = {"load": BenchmarkLoad.concurrency([1, 2, 4]), "workload": Workload(256, 64)}
    assert definition_hash(lambda *_: shorter, llama) != base
    # A different model behind the same component name: the model's resource changed.
    assert definition_hash(levels(1, 2, 4), "my-org/other-8b") != base


LOAD = BenchmarkLoad


@pytest.mark.parametrize(
    ("props", "prop"),
    [
        (lambda: {"load": LOAD.concurrency([])}, "BenchmarkLoad.concurrency(levels)"),
        (lambda: {"load": LOAD.concurrency([1, 4, 2])}, "BenchmarkLoad.concurrency(levels)"),
        (lambda: {"load": LOAD.concurrency([1, 1])}, "BenchmarkLoad.concurrency(levels)"),
        (lambda: {"load": LOAD.concurrency([0, 1])}, "BenchmarkLoad.concurrency(levels)[0]"),
        (lambda: {"load": LOAD.concurrency([1, 2.5])}, "BenchmarkLoad.concurrency(levels)[1]"),
        (lambda: {"load": LOAD.concurrency(range(1, 18))}, "BenchmarkLoad.concurrency(levels)"),
        (lambda: {"load": LOAD.concurrency([1, 5000])}, "BenchmarkLoad.concurrency(levels)[1]"),
        (
            lambda: {"load": LOAD.concurrency([1, 8], requests_per_level=4)},
            "BenchmarkLoad.concurrency(requests_per_level)",
        ),
        (lambda: {"workload": Workload(0, 128)}, "input_tokens"),
        (lambda: {"workload": Workload(256, -1)}, "output_tokens"),
        (lambda: {"workload": Workload(300_000, 128)}, "workload.input_tokens"),
        (lambda: {"protocol": RequestProtocol(payload_format="lmi")}, "payload_format"),
        (
            lambda: {"load": LOAD.concurrency(knee_rule="fast")},
            "BenchmarkLoad.concurrency(knee_rule)",
        ),
        (lambda: {"gate": BenchmarkGate(max_p50_ms_per_token=0)}, "max_p50_ms_per_token"),
        (lambda: {"gate": BenchmarkGate(min_knee_concurrency=0)}, "min_knee_concurrency"),
        (lambda: {"gate": BenchmarkGate(min_output_tokens_per_s=-5)}, "min_output_tokens_per_s"),
        (
            lambda: {"engine": BenchmarkEngine.lambda_workers(worker_capacity=0)},
            "BenchmarkEngine.lambda_workers(worker_capacity)",
        ),
        (
            lambda: {
                "load": LOAD.concurrency([1, 4096]),
                "engine": BenchmarkEngine.lambda_workers(worker_capacity=16),
            },
            "BenchmarkEngine.lambda_workers(worker_capacity)",
        ),
        (
            lambda: {"results": BenchmarkResults.in_new_bucket(prefix="no-slash")},
            "BenchmarkResults.in_new_bucket(prefix)",
        ),
        (
            lambda: {"results": BenchmarkResults.in_new_bucket(prefix="/abs/")},
            "BenchmarkResults.in_new_bucket(prefix)",
        ),
        (
            lambda: {"results": BenchmarkResults.in_new_bucket(prefix="")},
            "BenchmarkResults.in_new_bucket(prefix)",
        ),
        (
            lambda: {"results": BenchmarkResults.in_new_bucket(prefix="a/" * 401)},
            "BenchmarkResults.in_new_bucket(prefix)",
        ),
        (
            lambda: {"results": BenchmarkResults.in_new_bucket(prefix="runs\n/")},
            "BenchmarkResults.in_new_bucket(prefix)",
        ),
        (lambda: {"max_duration": cdk.Duration.seconds(30)}, "max_duration (seconds)"),
        (lambda: {"max_duration": cdk.Duration.hours(12)}, "max_duration (seconds)"),
        (lambda: {"max_duration": cdk.Duration.millis(90_500)}, "max_duration"),
        (
            lambda: {"engine": BenchmarkEngine.managed(poll_interval=cdk.Duration.millis(10_500))},
            "BenchmarkEngine.managed(poll_interval)",
        ),
        (lambda: {"pricing": BenchmarkPricing.per_hour(-1.0)}, "BenchmarkPricing.per_hour(price)"),
        (lambda: {"copies": 0}, "copies"),
    ],
)
def test_every_invalid_prop_names_itself(props: Callable[[], dict[str, Any]], prop: str) -> None:
    """Each value is refused where it is written: by the factory or value type that takes it,
    else by the construct."""
    stack = new_stack()
    component = InferenceComponent.from_inference_component_name(
        stack, "Ic", inference_component_name="ic", endpoint_name="ep"
    )
    with pytest.raises(ValidationError) as raised:
        EndpointBenchmark(stack, "Bench", inference_component=component, **props())
    assert raised.value.prop == prop
    assert raised.value.fix


def test_a_target_is_required_and_must_be_consistent() -> None:
    stack = new_stack()
    with pytest.raises(ValidationError, match="needs an endpoint or an inference component"):
        EndpointBenchmark(stack, "Bench")
    component = InferenceComponent.from_inference_component_name(
        stack, "Ic", inference_component_name="ic", endpoint_name="ep"
    )
    other = Endpoint.from_endpoint_name(stack, "Other", "other-endpoint")
    with pytest.raises(ValidationError, match="hosted on another endpoint"):
        EndpointBenchmark(stack, "Bench2", endpoint=other, inference_component=component)


def test_the_asset_hash_is_deterministic_and_follows_the_sources() -> None:
    assert asset_hash() == asset_hash() and len(asset_hash()) == 64


def _async_endpoint(stack: cdk.Stack) -> Endpoint:
    from cdk_sagemaker_llm import AsyncInference

    model = Model(
        stack,
        "AsyncModel",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face("Qwen/Qwen2.5-7B-Instruct"),
    )
    return Endpoint(
        stack,
        "Async",
        variants=[ProductionVariant(model=model, instance_type=InstanceType.G6E_2XLARGE)],
        async_inference=AsyncInference(bucket=s3.Bucket(stack, "AsyncBucket")),
    )


@pytest.mark.parametrize("engine", [None, BenchmarkEngine.managed()], ids=["lambda", "managed"])
def test_a_component_endpoint_benchmarked_without_a_component_is_refused(engine: Any) -> None:
    """Every request to an endpoint of inference components must name one."""
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Ep", instance_type=InstanceType.G6E_2XLARGE)
    with pytest.raises(ValidationError, match=r"inference_component=None: .* hosts inference"):
        EndpointBenchmark(
            stack, "Bench", endpoint=endpoint, engine=engine,
            workload=Workload(input_tokens=64, output_tokens=16),
        )  # fmt: skip


@pytest.mark.parametrize("engine", [None, BenchmarkEngine.managed()], ids=["lambda", "managed"])
def test_an_async_endpoint_benchmark_is_refused(engine: Any) -> None:
    """An asynchronous endpoint answers InvokeEndpointAsync only."""
    stack = new_stack()
    endpoint = _async_endpoint(stack)
    with pytest.raises(ValidationError, match=r"endpoint='.*Async': is asynchronous"):
        EndpointBenchmark(
            stack, "Bench", endpoint=endpoint, engine=engine,
            workload=Workload(input_tokens=64, output_tokens=16),
        )  # fmt: skip


def test_request_metric_scaling_on_an_async_endpoint_steers_to_async_scaling() -> None:
    from cdk_sagemaker_llm import AsyncScaling, VariantScaling

    stack = new_stack()
    endpoint = _async_endpoint(stack)
    with pytest.raises(ValidationError, match=r"endpoint=.*is asynchronous.*Fix: use AsyncScaling"):
        VariantScaling(stack, "Scaling", endpoint=endpoint, max_instances=4)
    scaling = AsyncScaling(stack, "AsyncScaling", endpoint=endpoint, max_instances=4)
    scaling.scale_on_backlog(target=5)
    with pytest.raises(ValidationError, match=r"scale_on_invocations=.*never scale"):
        scaling.scale_on_invocations(target=100)
    with pytest.raises(ValidationError, match=r"scale_on_concurrent_requests=.*never scale"):
        scaling.scale_on_concurrent_requests(target=4)


def test_a_ttft_objective_without_streaming_is_refused() -> None:
    """TTFT is measured on streamed responses only: without streaming every request would
    miss the objective."""
    from cdk_sagemaker_llm import GoodputSlo

    stack = new_stack()
    component = InferenceComponent.from_inference_component_name(
        stack, "Ic", inference_component_name="ic", endpoint_name="ep"
    )
    load = BenchmarkLoad.request_rates([1, 2], slo=GoodputSlo(ttft_ms=500))
    with pytest.raises(ValidationError, match=r"load\.slo\.ttft_ms=500: .*does not stream"):
        EndpointBenchmark(stack, "Bench", inference_component=component, load=load)
    EndpointBenchmark(
        stack, "Streamed", inference_component=component, load=load,
        protocol=RequestProtocol(stream=True),
    )  # fmt: skip


def test_a_ttft_gate_reaches_the_run_and_needs_streamed_responses() -> None:
    """``BenchmarkGate(max_p50_ttft_ms=...)`` gates one request's time to first token (the
    gate had no TTFT figure); without a stream there is no TTFT to measure: an error."""
    stack, component = component_stack()
    EndpointBenchmark(
        stack,
        "Bench",
        inference_component=component,
        protocol=RequestProtocol(stream=True),
        gate=BenchmarkGate(max_p50_ms_per_token=50, max_p50_ttft_ms=800),
    )
    _, custom = one(template_of(stack), "Custom::SageMakerEndpointBenchmark")
    assert custom["Properties"]["Run"]["Gate"] == {"MaxP50MsPerToken": 50, "MaxP50TtftMs": 800}
    with pytest.raises(ValidationError) as caught:
        EndpointBenchmark(
            stack,
            "NotStreamed",
            inference_component=component,
            gate=BenchmarkGate(max_p50_ttft_ms=800),
        )
    assert caught.value.prop == "gate.max_p50_ttft_ms"
    assert "stream=True" in caught.value.fix


def test_the_run_states_the_memory_share_the_environment_gives_the_engine() -> None:
    """``results.json`` did not say what share of the memory the benchmarked engine took, so
    a calibration of a container set to vLLM's 0.95 fitted its KV cache at the default 0.9.
    The run's deployment states the share the environment sets (none where it sets none), the
    handler checks it and writes it, and ``calibrate`` reads it."""
    from cdk_sagemaker_llm.lambdas.benchmark.run_config import check_run, deployment_section

    def benchmark_run(serving: LmiOptions) -> dict[str, Any]:
        stack = new_stack()
        model = Model(
            stack,
            "Model",
            image=ContainerImage.lmi("0.31.0"),
            source=ModelSource.from_hugging_face(
                "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
            ),
            serving=serving,
        )
        variant = ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE)
        endpoint = Endpoint(stack, "Ep", variants=[variant])
        EndpointBenchmark(stack, "Bench", endpoint=endpoint, load=BenchmarkLoad.concurrency([1]))
        (run,) = [
            r["Properties"]["Run"]
            for r in Template.from_stack(stack).to_json()["Resources"].values()
            if r["Type"] == "Custom::SageMakerEndpointBenchmark"
        ]
        run = dict(run, Bucket="results", Name="bench-1234abcd-abcdef", Deadline=1)
        run.update(HandleUrl="https://example.com/h", StartedAt=1, EndpointName="ep")
        return dict(run, Prefix="endpoint-benchmarks/x/")

    plain = benchmark_run(LmiOptions(tensor_parallel_degree=1, max_model_len=4096))
    assert "EngineMemoryShare" not in plain["Deployment"]
    raised = benchmark_run(
        LmiOptions(tensor_parallel_degree=1, max_model_len=4096, gpu_memory_utilization=0.95)
    )
    assert raised["Deployment"]["EngineMemoryShare"] == 0.95
    section = deployment_section(check_run(raised))
    assert section is not None and section["engine_memory_share"] == 0.95
    from cdk_sagemaker_llm.lambdas.benchmark.run_names import EventError

    percentage = dict(raised, Deployment={**raised["Deployment"], "EngineMemoryShare": "95"})
    with pytest.raises(EventError, match=r"EngineMemoryShare: expected a number from 0.01 to 1"):
        check_run(percentage)


def test_the_run_states_an_fp8_kv_cache_its_environment_sets() -> None:
    """An LMI model told to keep an FP8 KV cache (``OPTION_KV_CACHE_DTYPE=fp8``) states it in
    the run's deployment, which the handler checks and writes for ``calibrate``."""
    from cdk_sagemaker_llm.catalog.model_specs import KvCachePrecision
    from cdk_sagemaker_llm.lambdas.benchmark.run_config import check_run, deployment_section

    stack = new_stack()
    model = Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.33.0"),
        source=ModelSource.from_hugging_face(
            "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
        ),
        serving=LmiOptions(
            tensor_parallel_degree=1, max_model_len=4096, kv_cache_precision=KvCachePrecision.FP8
        ),
    )
    variant = ProductionVariant(model=model, instance_type=InstanceType.G6E_2XLARGE)
    endpoint = Endpoint(stack, "Ep", variants=[variant])
    EndpointBenchmark(stack, "Bench", endpoint=endpoint, load=BenchmarkLoad.concurrency([1]))
    (run,) = [
        r["Properties"]["Run"]
        for r in Template.from_stack(stack).to_json()["Resources"].values()
        if r["Type"] == "Custom::SageMakerEndpointBenchmark"
    ]
    assert run["Deployment"]["KvCachePrecision"] == "fp8"
    run = dict(run, Bucket="results", Name="bench-1234abcd-abcdef", Deadline=1, StartedAt=1)
    run.update(
        HandleUrl="https://example.com/h", EndpointName="ep", Prefix="endpoint-benchmarks/x/"
    )
    section = deployment_section(check_run(run))
    assert section is not None and section["kv_cache_precision"] == "fp8"
