"""Platform options: the guide's examples (docs/guides/platform-options.md) run as written, cfn-lint accepts what they
emit, the emitted properties are the documented ones, and every validation error fires."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Size
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match, Template
from conftest import (
    PROJECT_ROOT,
    cfn_lint_findings,
    new_stack,
    resources_of_type,
    role_statements,
)

from cdk_sagemaker_llm import (
    AsyncInference,
    AsyncScaling,
    CapacityReservation,
    ComponentModel,
    ComponentScheduling,
    ComponentSpecification,
    ContainerImage,
    ContainerMetrics,
    CopyResources,
    DataCapture,
    Endpoint,
    InferenceAmiVersion,
    InferenceComponentEndpoint,
    InstancePool,
    InstanceType,
    LmiOptions,
    ManagedInstanceScaling,
    Model,
    ModelSource,
    PlacementStrategy,
    PrefixAwareRouting,
    ProductionVariant,
    RoutingStrategy,
    ScaleInPolicy,
    ScaleInStrategy,
    ServerlessConfig,
    ServerlessScaling,
    ValidationError,
    VariantPlatform,
    VariantScaling,
)
from cdk_sagemaker_llm.catalog.prices import DEFAULT_PRICE_LIST
from cdk_sagemaker_llm.review import Plan, plan_template, render_markdown

PLATFORM_GUIDE = PROJECT_ROOT / "docs" / "guides" / "platform-options.md"
EXAMPLE = re.compile(r"```python\n(# example: ([a-z-]+)\n.*?)```", re.DOTALL)


def run_readme_example(
    name: str, guide: Path = PLATFORM_GUIDE
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Execute the guide's block ``# example: <name>`` exactly as written; return its stack's
    template (after asserting cfn-lint finds nothing) and the block's namespace."""
    blocks = {match[1]: match[0] for match in EXAMPLE.findall(guide.read_text())}
    namespace: dict[str, Any] = {}
    exec(compile(blocks[name], f"{guide.name}#{name}", "exec"), namespace)
    template = Template.from_stack(namespace["stack"]).to_json()
    findings = cfn_lint_findings(template, "us-west-2")
    assert findings == [], "\n".join(findings)
    return template, namespace


def only(template: dict[str, Any], resource_type: str) -> dict[str, Any]:
    found = resources_of_type(template, resource_type)
    assert len(found) == 1, found
    return found[0]


# --- Guide examples: emitted properties ----------------------------------------------------


def test_instance_pools_example_emits_pools_specifications_and_options() -> None:
    template, _ = run_readme_example("instance-pools")
    variant = only(template, "AWS::SageMaker::EndpointConfig")["ProductionVariants"][0]
    assert "InstanceType" not in variant  # pools replace it
    assert variant["InstancePools"] == [
        {"InstanceType": "ml.g6e.12xlarge", "Priority": 1},
        {"InstanceType": "ml.g5.12xlarge", "Priority": 2},
    ]
    assert variant["VariantInstanceProvisionTimeoutInSeconds"] == 1200
    assert variant["ManagedInstanceScaling"]["ScaleInPolicy"] == {
        "Strategy": "CONSOLIDATION",
        "CooldownInMinutes": 30,
        "MaximumStepSize": 2,
    }
    assert variant["RoutingConfig"] == {
        "RoutingStrategy": "PREFIX_AWARE",
        "PrefixAwareRoutingConfig": {"PrefixLength": 4096, "ConcurrencyThreshold": 16},
    }
    assert variant["InferenceAmiVersion"] == "al2-ami-sagemaker-inference-gpu-3-1"
    assert variant["EnableSSMAccess"] is True

    component = only(template, "AWS::SageMaker::InferenceComponent")
    assert "Specification" not in component
    first, second = component["Specifications"]
    assert [first["InstanceType"], second["InstanceType"]] == ["ml.g6e.12xlarge", "ml.g5.12xlarge"]
    assert first["ComputeResourceRequirements"]["MinMemoryRequiredInMb"] == 64 * 1024
    assert second["ComputeResourceRequirements"]["MinMemoryRequiredInMb"] == 32 * 1024
    for entry in (first, second):
        assert entry["ComputeResourceRequirements"]["NumberOfAcceleratorDevicesRequired"] == 1
        assert entry["SchedulingConfig"] == {
            "PlacementStrategy": "SPREAD",
            "AvailabilityZoneBalance": {"EnforcementMode": "PERMISSIVE", "MaxImbalance": 1},
        }
        assert entry["Container"]["ContainerMetricsConfig"] == {
            "MetricsEndpoints": [
                {"MetricsEndpointPath": "/metrics", "MetricPublishFrequencyInSeconds": 30}
            ]
        }


def test_capacity_reservation_example_emits_reservation_pools_and_imported_models() -> None:
    template, namespace = run_readme_example("capacity-reservation")
    assert resources_of_type(template, "AWS::SageMaker::Model") == []  # both imported
    reserved, on_demand = only(template, "AWS::SageMaker::EndpointConfig")["ProductionVariants"]
    assert reserved["ModelName"] == "llama3-70b-instruct"
    assert reserved["CapacityReservationConfig"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "MlReservationArn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/llm",
    }
    assert on_demand["InstancePools"] == [
        {"InstanceType": "ml.p5.48xlarge", "Priority": 1},
        {"InstanceType": "ml.p4de.24xlarge", "Priority": 2, "ModelNameOverride": "llama3-70b-a100"},
    ]
    assert on_demand["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
    model = namespace["model"]
    assert model.model_arn.endswith(":sagemaker:us-west-2:123456789012:model/llama3-70b-instruct")
    assert namespace["a100_build"].model_name == "llama3-70b-a100"
    notes = Annotations.from_stack(namespace["stack"]).find_info(
        "*", Match.string_like_regexp("imported")
    )
    assert notes, "the skipped placement checks of imported models are noted"


def test_async_example_emits_config_grants_and_scale_to_zero_recipe() -> None:
    template, namespace = run_readme_example("async-inference")
    config = only(template, "AWS::SageMaker::EndpointConfig")["AsyncInferenceConfig"]
    assert config["ClientConfig"] == {"MaxConcurrentInvocationsPerInstance": 4}
    output = config["OutputConfig"]
    assert "async/output/" in str(output["S3OutputPath"])
    assert "async/failures/" in str(output["S3FailurePath"])
    assert set(output["NotificationConfig"]) == {"SuccessTopic", "ErrorTopic"}

    target = only(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert (target["MinCapacity"], target["MaxCapacity"]) == (0, 4)
    assert target["ScalableDimension"] == "sagemaker:variant:DesiredInstanceCount"
    policies = resources_of_type(template, "AWS::ApplicationAutoScaling::ScalingPolicy")
    tracking = next(p for p in policies if p["PolicyType"] == "TargetTrackingScaling")
    spec = tracking["TargetTrackingScalingPolicyConfiguration"]
    assert spec["TargetValue"] == 5
    assert (
        spec["CustomizedMetricSpecification"]["MetricName"] == "ApproximateBacklogSizePerInstance"
    )
    assert spec["CustomizedMetricSpecification"]["Statistic"] == "Average"
    assert spec["CustomizedMetricSpecification"]["Dimensions"][0]["Name"] == "EndpointName"
    step = next(p for p in policies if p["PolicyType"] == "StepScaling")
    assert step["StepScalingPolicyConfiguration"] == {
        "AdjustmentType": "ChangeInCapacity",
        "Cooldown": 300,
        "MetricAggregationType": "Average",
        "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}],
    }
    alarm = only(template, "AWS::CloudWatch::Alarm")
    assert alarm["MetricName"] == "HasBacklogWithoutCapacity"
    assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == ("Average", 60, 2)
    assert (alarm["DatapointsToAlarm"], alarm["Threshold"]) == (2, 1)
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["TreatMissingData"] == "missing"

    statements = role_statements(template)
    actions = {str(statement["Action"]) for statement in statements}
    assert "sagemaker:InvokeEndpointAsync" in actions
    assert any("sns:Publish" in action for action in actions)
    scaling = namespace["scaling"]
    assert scaling.expected_detection_time.to_seconds() == 120  # 60 s x 2 from zero


def test_serverless_example_emits_config_and_provisioned_concurrency_scaling() -> None:
    template, _namespace = run_readme_example("serverless")
    variant = only(template, "AWS::SageMaker::EndpointConfig")["ProductionVariants"][0]
    assert variant["ServerlessConfig"] == {
        "MemorySizeInMB": 4096,
        "MaxConcurrency": 10,
        "ProvisionedConcurrency": 2,
    }
    assert "InstanceType" not in variant and "InitialInstanceCount" not in variant
    target = only(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert target["ScalableDimension"] == "sagemaker:variant:DesiredProvisionedConcurrency"
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 10)
    policy = only(template, "AWS::ApplicationAutoScaling::ScalingPolicy")
    spec = policy["TargetTrackingScalingPolicyConfiguration"]
    assert spec["TargetValue"] == 0.5
    assert spec["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": "SageMakerVariantProvisionedConcurrencyUtilization"
    }


def test_readme_examples_raise_no_nag_finding_on_what_the_library_creates() -> None:
    """cdk-nag (AwsSolutions) over the guide's stacks: only the examples' own bucket and topics
    (the reader's resources, acknowledged here) have findings; the library's have none."""
    from cdk_nag import AwsSolutionsChecks

    for name in ("instance-pools", "capacity-reservation", "async-inference", "serverless"):
        _, namespace = run_readme_example(name)
        stack = namespace["stack"]
        for user_owned in ("Requests", "Done", "Failed"):
            construct = stack.node.try_find_child(user_owned)
            if construct is not None:
                for rule in ("AwsSolutions-S1", "AwsSolutions-SNS2"):
                    cdk.Validations.of(construct).acknowledge(
                        cdk.Acknowledgment(id=rule, reason="the guide reader's own resource")
                    )
        app = namespace["app"]
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
        app.synth(force=True)  # raises on any unacknowledged finding


def test_the_nag_check_really_runs_on_the_examples() -> None:
    """Negative control: without the acknowledgment, the reader's bucket fails the synth."""
    from cdk_nag import AwsSolutionsChecks

    _, namespace = run_readme_example("async-inference")
    app = namespace["app"]
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(RuntimeError, match="AwsSolutions-S1"):
        app.synth(force=True)


# --- instance pools and per-type checks --------------------------------------------------


def lmi_model(stack: Any, id: str = "Model", degree: int | None = None) -> Model:
    serving = LmiOptions(tensor_parallel_degree=degree) if degree else None
    return Model(stack, id, image=ContainerImage.lmi("0.31.0"), serving=serving)


def pooled_endpoint(stack: Any, **platform: Any) -> InferenceComponentEndpoint:
    return InferenceComponentEndpoint(
        stack,
        "Endpoint",
        platform=VariantPlatform(
            instance_pools=[
                InstancePool(instance_type=InstanceType.G5_12XLARGE, priority=1),
                InstancePool(instance_type=InstanceType.G5_2XLARGE, priority=2),
            ],
            **platform,
        ),
    )


def test_fit_checks_run_on_every_pool_type() -> None:
    """A tensor-parallel degree of 4 fits a g5.12xlarge (4 GPUs) but not the fallback."""
    stack = new_stack()
    with pytest.raises(ValidationError, match=r"instance_pools\[ml.g5.2xlarge\]"):
        Endpoint(
            stack,
            "Endpoint",
            variants=[
                ProductionVariant(
                    model=lmi_model(stack, degree=4),
                    instance_pools=[
                        InstancePool(instance_type=InstanceType.G5_12XLARGE, priority=1),
                        InstancePool(instance_type=InstanceType.G5_2XLARGE, priority=2),
                    ],
                )
            ],
        )


def test_component_is_checked_on_each_pool_type_without_specifications() -> None:
    stack = new_stack()
    endpoint = pooled_endpoint(stack)
    with pytest.raises(ValidationError, match="min_memory"):
        endpoint.add_inference_component(
            "Big",
            serves=ComponentModel.of(lmi_model(stack)),
            resources=CopyResources(min_memory=Size.gibibytes(100)),
        )  # fits the 192 GiB g5.12xlarge, not the 32 GiB g5.2xlarge


def test_per_type_specification_fixes_the_fallback() -> None:
    stack = new_stack()
    endpoint = pooled_endpoint(stack)
    component = endpoint.add_inference_component(
        "Big",
        serves=ComponentModel.of(lmi_model(stack)),
        resources=CopyResources(min_memory=Size.gibibytes(100)),
        specifications=[
            ComponentSpecification(instance_type=InstanceType.G5_12XLARGE, accelerators=2),
            ComponentSpecification(
                instance_type=InstanceType.G5_2XLARGE, min_memory=Size.gibibytes(16)
            ),
        ],
    )
    assert component.accelerators_by_instance_type == {"ml.g5.12xlarge": 2, "ml.g5.2xlarge": 1}
    assert component.accelerators == 2


@pytest.mark.parametrize("component_cores", [None, 4])
def test_a_specifications_cpu_cores_count_in_the_endpoints_capacity(
    component_cores: float | None,
) -> None:
    """Two copies of 30 cores each need two 48-vCPU g5.12xlarge: the capacity check counts the
    cores the pool's specification reserves, not the component's own (none, or 4)."""
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        platform=VariantPlatform(
            instance_pools=[
                InstancePool(instance_type=InstanceType.G5_12XLARGE, priority=1),
                InstancePool(instance_type=InstanceType.G5_24XLARGE, priority=2),
            ]
        ),
        instance_scaling=ManagedInstanceScaling(max_instance_count=1),
    )
    with pytest.raises(ValidationError) as raised:
        endpoint.add_inference_component(
            "Cpu",
            serves=ComponentModel.of(lmi_model(stack)),
            resources=CopyResources(
                accelerators=1, min_memory=Size.gibibytes(16), cpu_cores=component_cores
            ),
            copy_count=2,
            specifications=[
                ComponentSpecification(instance_type=InstanceType.G5_12XLARGE, cpu_cores=30),
                ComponentSpecification(instance_type=InstanceType.G5_24XLARGE, cpu_cores=30),
            ],
        )
    assert (raised.value.prop, raised.value.value) == ("copy_count", 2)
    assert "2 copies x 30 CPU cores" in raised.value.problem
    assert "instance pool ml.g5.12xlarge" in raised.value.problem


def pools(*priorities: int, types: list[InstanceType] | None = None) -> list[InstancePool]:
    types = types or [
        InstanceType.G5_2XLARGE,
        InstanceType.G5_4XLARGE,
        InstanceType.G5_8XLARGE,
        InstanceType.G5_12XLARGE,
        InstanceType.G5_16XLARGE,
        InstanceType.G5_24XLARGE,
    ]
    return [
        InstancePool(instance_type=t, priority=p) for t, p in zip(types, priorities, strict=False)
    ]


@pytest.mark.parametrize(
    ("props", "prop"),
    [
        ({"instance_pools": []}, "instance_pools"),
        (
            {"instance_pools": pools(1, 2), "instance_type": InstanceType.G5_2XLARGE},
            "instance_type",
        ),
        ({"instance_pools": pools(1, 2, 3, 4, 5, 5)}, "instance_pools"),
        ({"instance_pools": pools(0, 2)}, r"instance_pools\[0\].priority"),
        ({"instance_pools": pools(1, 6)}, r"instance_pools\[1\].priority"),
        (
            {"instance_pools": pools(1, 2, types=[InstanceType.G5_2XLARGE] * 2)},
            r"instance_pools\[\].instance_type",
        ),
        (
            {"instance_pools": pools(1, 2), "provision_timeout": Duration.seconds(299)},
            "provision_timeout",
        ),
        (
            {"instance_pools": pools(1, 2), "provision_timeout": Duration.seconds(3601)},
            "provision_timeout",
        ),
    ],
)
def test_instance_pool_errors(props: dict[str, Any], prop: str) -> None:
    props = dict(props)
    instance_type = props.pop("instance_type", None)
    with pytest.raises(ValidationError, match=prop) as error:
        InferenceComponentEndpoint(
            new_stack(), "Endpoint", instance_type=instance_type, platform=VariantPlatform(**props)
        )
    assert error.value.fix


def test_no_instance_type_at_all_is_an_error() -> None:
    with pytest.raises(ValidationError, match="instance_type"):
        InferenceComponentEndpoint(new_stack(), "Endpoint")


def test_pool_model_override_on_component_endpoint_is_an_error() -> None:
    stack = new_stack()
    with pytest.raises(ValidationError, match=r"instance_pools\[\].model"):
        InferenceComponentEndpoint(
            stack,
            "Endpoint",
            platform=VariantPlatform(
                instance_pools=[
                    InstancePool(
                        instance_type=InstanceType.G5_2XLARGE, priority=1, model=lmi_model(stack)
                    )
                ]
            ),
        )


@pytest.mark.parametrize(
    ("types", "match"),
    [
        ([InstanceType.G5_12XLARGE], r"specifications\[\].instance_type"),
        ([InstanceType.G5_12XLARGE, InstanceType.G6_12XLARGE], r"specifications\[\].instance_type"),
    ],
)
def test_specification_errors(types: list[InstanceType], match: str) -> None:
    stack = new_stack()
    endpoint = pooled_endpoint(stack)
    with pytest.raises(ValidationError, match=match):
        endpoint.add_inference_component(
            "C",
            serves=ComponentModel.of(lmi_model(stack)),
            resources=CopyResources(min_memory=Size.gibibytes(8)),
            specifications=[ComponentSpecification(instance_type=t) for t in types],
        )


def test_specifications_need_instance_pools() -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_2XLARGE)
    with pytest.raises(ValidationError, match=r"^specifications="):
        endpoint.add_inference_component(
            "C",
            serves=ComponentModel.of(lmi_model(stack)),
            resources=CopyResources(min_memory=Size.gibibytes(8)),
            specifications=[ComponentSpecification(instance_type=InstanceType.G5_2XLARGE)] * 2,
        )


# --- scale-in policy, routing, AMI, reservations ----------------------------------------


@pytest.mark.parametrize(
    ("policy", "prop"),
    [
        (
            ScaleInPolicy(strategy=ScaleInStrategy.CONSOLIDATION, cooldown=Duration.minutes(4)),
            "cooldown",
        ),
        (
            ScaleInPolicy(strategy=ScaleInStrategy.CONSOLIDATION, cooldown=Duration.minutes(1441)),
            "cooldown",
        ),
        (
            ScaleInPolicy(strategy=ScaleInStrategy.CONSOLIDATION, cooldown=Duration.seconds(390)),
            "cooldown",
        ),
        (
            ScaleInPolicy(strategy=ScaleInStrategy.CONSOLIDATION, maximum_step_size=0),
            "maximum_step_size",
        ),
        (
            ScaleInPolicy(strategy=ScaleInStrategy.CONSOLIDATION, maximum_step_size=101),
            "maximum_step_size",
        ),
        (
            ScaleInPolicy(strategy=ScaleInStrategy.IDLE_RELEASE, maximum_step_size=2),
            "cooldown/maximum_step_size",
        ),
    ],
)
def test_scale_in_policy_errors(policy: ScaleInPolicy, prop: str) -> None:
    with pytest.raises(ValidationError, match=f"scale_in_policy.{prop}"):
        InferenceComponentEndpoint(
            new_stack(),
            "Endpoint",
            instance_type=InstanceType.G5_2XLARGE,
            instance_scaling=ManagedInstanceScaling(scale_in_policy=policy),
        )


def test_idle_release_policy_is_emitted_alone() -> None:
    stack = new_stack()
    InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G5_2XLARGE,
        instance_scaling=ManagedInstanceScaling(
            scale_in_policy=ScaleInPolicy(strategy=ScaleInStrategy.IDLE_RELEASE)
        ),
    )
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "ManagedInstanceScaling": Match.object_like(
                            {"ScaleInPolicy": {"Strategy": "IDLE_RELEASE"}}
                        )
                    }
                )
            ]
        },
    )


@pytest.mark.parametrize(
    ("props", "prop"),
    [
        ({"routing_strategy": RoutingStrategy.PREFIX_AWARE}, "prefix_aware_routing"),
        (
            {
                "routing_strategy": RoutingStrategy.RANDOM,
                "prefix_aware_routing": PrefixAwareRouting(
                    prefix_length=2048, concurrency_threshold=4
                ),
            },
            "prefix_aware_routing",
        ),
        (
            {
                "prefix_aware_routing": PrefixAwareRouting(
                    prefix_length=1023, concurrency_threshold=4
                )
            },
            "prefix_length",
        ),
        (
            {
                "prefix_aware_routing": PrefixAwareRouting(
                    prefix_length=65537, concurrency_threshold=4
                )
            },
            "prefix_length",
        ),
        (
            {
                "prefix_aware_routing": PrefixAwareRouting(
                    prefix_length=2048, concurrency_threshold=0
                )
            },
            "concurrency_threshold",
        ),
        (
            {
                "prefix_aware_routing": PrefixAwareRouting(
                    prefix_length=2048, concurrency_threshold=1025
                )
            },
            "concurrency_threshold",
        ),
        ({"inference_ami_version": InferenceAmiVersion.AL2_NEURON_2}, "inference_ami_version"),
        (
            {
                "capacity_reservation": CapacityReservation(
                    ml_reservation_arn="arn:aws:ec2:us-west-2:123456789012:capacity-reservation/cr-1"
                )
            },
            "ml_reservation_arn",
        ),
    ],
)
def test_variant_option_errors(props: dict[str, Any], prop: str) -> None:
    stack = new_stack()
    with pytest.raises(ValidationError, match=prop):
        Endpoint(
            stack,
            "Endpoint",
            variants=[
                ProductionVariant(
                    model=lmi_model(stack), instance_type=InstanceType.G5_2XLARGE, **props
                )
            ],
        )


def test_gpu_ami_on_neuron_instances_is_an_error() -> None:
    with pytest.raises(ValidationError, match="inference_ami_version"):
        InferenceComponentEndpoint(
            new_stack(),
            "Endpoint",
            instance_type=InstanceType.INF2_24XLARGE,
            platform=VariantPlatform(inference_ami_version=InferenceAmiVersion.AL2023_GPU_4_1),
        )


# --- component scheduling and container metrics -----------------------------------------


@pytest.mark.parametrize(
    ("props", "prop"),
    [
        (
            {
                "scheduling": ComponentScheduling(
                    placement=PlacementStrategy.BINPACK, max_az_imbalance=101
                )
            },
            "max_az_imbalance",
        ),
        ({"container_metrics": ContainerMetrics(path="metrics")}, "container_metrics.path"),
        ({"container_metrics": ContainerMetrics(path="/a/../b")}, "container_metrics.path"),
        (
            {"container_metrics": ContainerMetrics(publish_frequency=Duration.seconds(45))},
            "publish_frequency",
        ),
        (
            {"container_metrics": ContainerMetrics(publish_frequency=Duration.seconds(5))},
            "publish_frequency",
        ),
    ],
)
def test_component_option_errors(props: dict[str, Any], prop: str) -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_2XLARGE)
    props = dict(props)
    metrics = props.pop("container_metrics", None)
    with pytest.raises(ValidationError, match=prop):
        endpoint.add_inference_component(
            "C",
            serves=ComponentModel.from_image(
                ContainerImage.lmi("0.31.0"), container_metrics=metrics
            ),
            resources=CopyResources(min_memory=Size.gibibytes(8)),
            **props,
        )


def test_bin_packing_on_a_single_type_component_lints_clean(lint_clean: Any) -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    endpoint.add_inference_component(
        "C",
        serves=ComponentModel.of(lmi_model(stack)),
        resources=CopyResources(min_memory=Size.gibibytes(8)),
        scheduling=ComponentScheduling(placement=PlacementStrategy.BINPACK),
    )
    template = lint_clean(stack)
    spec = only(template, "AWS::SageMaker::InferenceComponent")["Specification"]
    assert spec["SchedulingConfig"] == {
        "PlacementStrategy": "BINPACK",
        "AvailabilityZoneBalance": {"EnforcementMode": "PERMISSIVE"},
    }


# --- asynchronous inference --------------------------------------------------------------


def async_endpoint(stack: Any, **props: Any) -> Endpoint:
    bucket = s3.Bucket(stack, "Bucket")
    return Endpoint(
        stack,
        "Endpoint",
        variants=[ProductionVariant(model=lmi_model(stack), instance_type=InstanceType.G5_2XLARGE)],
        async_inference=AsyncInference(bucket=bucket, **props),
    )


@pytest.mark.parametrize(
    ("props", "prop"),
    [
        ({"output_prefix": "/out/"}, "output_prefix"),
        ({"failure_prefix": "failures"}, "failure_prefix"),
        ({"input_prefix": "async/output/"}, "output_prefix/failure_prefix/input_prefix"),
        ({"max_concurrent_invocations_per_instance": 0}, "max_concurrent_invocations_per_instance"),
        (
            {"max_concurrent_invocations_per_instance": 1001},
            "max_concurrent_invocations_per_instance",
        ),
        ({"include_response_in_notifications": True}, "include_response_in_notifications"),
    ],
)
def test_async_inference_errors(props: dict[str, Any], prop: str) -> None:
    with pytest.raises(ValidationError, match=prop):
        async_endpoint(new_stack(), **props)


def test_async_scaling_needs_an_async_endpoint_and_a_backlog_policy() -> None:
    stack = new_stack()
    real_time = Endpoint(
        stack,
        "RealTime",
        variants=[ProductionVariant(model=lmi_model(stack), instance_type=InstanceType.G5_2XLARGE)],
    )
    with pytest.raises(ValidationError, match="async_inference"):
        AsyncScaling(stack, "Scaling", endpoint=real_time, max_instances=2)
    with pytest.raises(ValidationError, match="real-time endpoint"):
        real_time.grant_invoke_async(iam.AccountRootPrincipal())

    stack = new_stack()
    endpoint = async_endpoint(stack)
    scaling = AsyncScaling(stack, "Scaling", endpoint=endpoint, max_instances=2)
    with pytest.raises(ValidationError, match="min_capacity"):
        AsyncScaling(
            new_stack(), "S", endpoint=async_endpoint(new_stack()), max_instances=2, min_instances=1
        ).scale_on_schedule(
            "night", min_capacity=0, schedule=cdk.aws_applicationautoscaling.Schedule.cron(hour="0")
        )
    with pytest.raises(RuntimeError, match="scale_on_backlog"):
        cdk.App.of(stack).synth()  # type: ignore[union-attr]
    assert scaling.scale_from_zero is not None


def test_async_scaling_to_zero_accepts_a_step_policy_that_scales_in() -> None:
    """A step policy with a scale-in step releases the last instance as the backlog tracking
    does; synth asked for scale_on_backlog regardless."""
    appscaling = cdk.aws_applicationautoscaling

    def with_steps(*steps: Any) -> cdk.Stack:
        stack = new_stack()
        scaling = AsyncScaling(stack, "Scaling", endpoint=async_endpoint(stack), max_instances=2)
        scaling.scale_on_metric(
            "Queue", metric=scaling.metric_backlog_size(), scaling_steps=list(steps)
        )
        return stack

    stack = with_steps(
        appscaling.ScalingInterval(upper=1, change=-1),
        appscaling.ScalingInterval(lower=10, change=1),
    )
    Template.from_stack(stack).resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 3)
    only_out = with_steps(
        appscaling.ScalingInterval(lower=10, change=1),
        appscaling.ScalingInterval(lower=50, change=2),
    )
    with pytest.raises(RuntimeError, match=r"min_instances=0: .*scale_on_backlog.*negative change"):
        Template.from_stack(only_out)


def test_async_scaling_to_zero_takes_a_scheduled_maximum_of_zero() -> None:
    """Nights at 0 instances even with requests queued: the maximum of 0 holds the
    scale-from-zero policy back until the morning action raises it. ``max_capacity=0`` was
    refused ("at least 1")."""
    stack = new_stack()
    scaling = AsyncScaling(stack, "Scaling", endpoint=async_endpoint(stack), max_instances=2)
    scaling.scale_on_backlog(target=5)
    night = cdk.aws_applicationautoscaling.Schedule.cron(hour="20", minute="0")
    scaling.scale_on_schedule("nights", schedule=night, min_capacity=0, max_capacity=0)
    (target,) = (
        Template.from_stack(stack)
        .find_resources("AWS::ApplicationAutoScaling::ScalableTarget")
        .values()
    )
    (action,) = target["Properties"]["ScheduledActions"]
    assert action["ScalableTargetAction"] == {"MinCapacity": 0, "MaxCapacity": 0}

    stack = new_stack()
    kept = AsyncScaling(
        stack, "Scaling", endpoint=async_endpoint(stack), max_instances=2, min_instances=1
    )
    with pytest.raises(ValidationError) as error:
        kept.scale_on_schedule("nights", schedule=night, max_capacity=0)
    assert (error.value.prop, error.value.value) == ("max_capacity", 0)
    assert "min_instances=0" in error.value.fix


def test_async_backlog_policy_once_and_variant_scaling_keeps_one_instance() -> None:
    stack = new_stack()
    endpoint = async_endpoint(stack)
    scaling = AsyncScaling(stack, "Scaling", endpoint=endpoint, max_instances=2, min_instances=1)
    assert scaling.scale_from_zero is None
    scaling.scale_on_backlog(target=3)
    with pytest.raises(ValidationError, match="scale_on_backlog"):
        scaling.scale_on_backlog(target=4)
    with pytest.raises(ValidationError, match="min_instances"):
        AsyncScaling(
            new_stack(),
            "A",
            endpoint=async_endpoint(new_stack()),
            max_instances=2,
            min_instances=-1,
        )
    with pytest.raises(ValidationError, match="min_instances"):
        VariantScaling(
            new_stack(), "V", endpoint=async_endpoint(new_stack()), max_instances=2, min_instances=0
        )


# --- serverless -------------------------------------------------------------------------


def cpu_model(stack: Any, **props: Any) -> Model:
    return Model(stack, "Cpu", image=ContainerImage.pytorch_cpu("2.6.0"), **props)


@pytest.mark.parametrize(
    ("config", "prop"),
    [
        (ServerlessConfig(memory_size=Size.mebibytes(512), max_concurrency=1), "memory_size"),
        (ServerlessConfig(memory_size=Size.mebibytes(1536), max_concurrency=1), "memory_size"),
        (ServerlessConfig(memory_size=Size.gibibytes(7), max_concurrency=1), "memory_size"),
        (ServerlessConfig(memory_size=Size.gibibytes(1), max_concurrency=0), "max_concurrency"),
        (ServerlessConfig(memory_size=Size.gibibytes(1), max_concurrency=201), "max_concurrency"),
        (
            ServerlessConfig(
                memory_size=Size.gibibytes(1), max_concurrency=2, provisioned_concurrency=3
            ),
            "provisioned_concurrency",
        ),
    ],
)
def test_serverless_config_errors(config: ServerlessConfig, prop: str) -> None:
    stack = new_stack()
    with pytest.raises(ValidationError, match=f"serverless.{prop}"):
        Endpoint(
            stack, "E", variants=[ProductionVariant(model=cpu_model(stack), serverless=config)]
        )


SMALL = ServerlessConfig(memory_size=Size.gibibytes(2), max_concurrency=5)


@pytest.mark.parametrize(
    ("variant_props", "endpoint_props", "prop"),
    [
        ({"instance_type": InstanceType.G5_2XLARGE}, {}, r"variants\[0\].instance_type"),
        ({"initial_instance_count": 1}, {}, "initial_instance_count"),
        ({"volume_size": Size.gibibytes(10)}, {}, "volume_size"),
        ({"routing_strategy": RoutingStrategy.RANDOM}, {}, "routing_strategy"),
        (
            {
                "prefix_aware_routing": PrefixAwareRouting(
                    prefix_length=2048, concurrency_threshold=2
                )
            },
            {},
            "prefix_aware_routing",
        ),
        ({"instance_pools": pools(1, 2)}, {}, "instance_pools"),
        ({"provision_timeout": Duration.minutes(10)}, {}, "provision_timeout"),
        (
            {
                "capacity_reservation": CapacityReservation(
                    ml_reservation_arn="arn:aws:sagemaker:us-west-2:123456789012:training-plan/x"
                )
            },
            {},
            "capacity_reservation",
        ),
        ({"inference_ami_version": InferenceAmiVersion.AL2_GPU_2}, {}, "inference_ami_version"),
        ({"enable_ssm_access": True}, {}, "enable_ssm_access"),
        ({}, {"kms_key": True}, "kms_key"),
        ({}, {"data_capture": True}, "data_capture"),
        ({}, {"async_inference": True}, "async_inference"),
    ],
)
def test_serverless_excludes_instance_features(
    variant_props: dict[str, Any], endpoint_props: dict[str, Any], prop: str
) -> None:
    stack = new_stack()
    bucket = s3.Bucket(stack, "Bucket")
    if endpoint_props.pop("data_capture", False):
        endpoint_props["data_capture"] = DataCapture(bucket=bucket)
    if endpoint_props.pop("kms_key", False):
        endpoint_props["kms_key"] = kms.Key(stack, "Key")
    if endpoint_props.pop("async_inference", False):
        endpoint_props["async_inference"] = AsyncInference(bucket=bucket)
    with pytest.raises(ValidationError, match=prop):
        Endpoint(
            stack,
            "E",
            variants=[ProductionVariant(model=cpu_model(stack), serverless=SMALL, **variant_props)],
            **endpoint_props,
        )


def test_serverless_rejects_gpu_images_vpcs_and_second_variants() -> None:
    stack = new_stack()
    with pytest.raises(ValidationError, match="serverless inference runs on CPUs"):
        Endpoint(stack, "E", variants=[ProductionVariant(model=lmi_model(stack), serverless=SMALL)])
    triton_gpu = Model(stack, "TritonGpu", image=ContainerImage.triton("24.09"))
    with pytest.raises(ValidationError, match="serverless inference runs on CPUs"):
        Endpoint(stack, "T", variants=[ProductionVariant(model=triton_gpu, serverless=SMALL)])
    stack = new_stack()
    triton_cpu = Model(stack, "TritonCpu", image=ContainerImage.triton("24.09-py3-cpu"))
    Endpoint(stack, "E", variants=[ProductionVariant(model=triton_cpu, serverless=SMALL)])
    stack = new_stack()
    with pytest.raises(ValidationError, match="network isolation"):
        Endpoint(
            stack,
            "E",
            variants=[
                ProductionVariant(model=cpu_model(stack, network_isolation=True), serverless=SMALL)
            ],
        )
    stack = new_stack()
    with pytest.raises(ValidationError, match=r"^variants="):
        Endpoint(
            stack,
            "E",
            variants=[
                ProductionVariant(model=cpu_model(stack), serverless=SMALL, variant_name="A"),
                ProductionVariant(
                    model=lmi_model(stack), instance_type=InstanceType.G5_2XLARGE, variant_name="B"
                ),
            ],
        )


def test_serverless_scaling_errors() -> None:
    stack = new_stack()
    endpoint = Endpoint(
        stack, "E", variants=[ProductionVariant(model=cpu_model(stack), serverless=SMALL)]
    )
    with pytest.raises(ValidationError, match="provisioned_concurrency"):
        ServerlessScaling(stack, "S", endpoint=endpoint, max_concurrency=2)
    with pytest.raises(ValidationError, match="serverless variant has no instances"):
        VariantScaling(stack, "V", endpoint=endpoint, max_instances=2)
    stack = new_stack()
    warm = ServerlessConfig(
        memory_size=Size.gibibytes(2), max_concurrency=5, provisioned_concurrency=1
    )
    endpoint = Endpoint(
        stack, "E", variants=[ProductionVariant(model=cpu_model(stack), serverless=warm)]
    )
    with pytest.raises(ValidationError, match="max_concurrency"):
        ServerlessScaling(stack, "S", endpoint=endpoint, max_concurrency=6)
    with pytest.raises(ValidationError, match="min_concurrency"):
        ServerlessScaling(stack, "Zero", endpoint=endpoint, max_concurrency=5, min_concurrency=0)
    scaling = ServerlessScaling(stack, "S", endpoint=endpoint, max_concurrency=5)
    with pytest.raises(ValidationError, match="target"):
        scaling.scale_on_utilization(target=50)
    # A schedule is held to the same limits as the constructor (it bypassed them).
    daily = appscaling.Schedule.cron(hour="8", minute="0")
    with pytest.raises(ValidationError, match=r"max_capacity=50: .*within the variant"):
        scaling.scale_on_schedule("peak", schedule=daily, max_capacity=50)
    with pytest.raises(ValidationError, match=r"min_capacity=0: .*at least 1"):
        scaling.scale_on_schedule("off", schedule=daily, min_capacity=0)
    with pytest.raises(ValidationError, match=r"max_capacity=0: .*no scale to zero"):
        scaling.scale_on_schedule("off", schedule=daily, max_capacity=0)
    stack = new_stack()
    provisioned = ServerlessConfig(
        memory_size=Size.gibibytes(2), max_concurrency=20, provisioned_concurrency=15
    )
    endpoint = Endpoint(
        stack, "E", variants=[ProductionVariant(model=cpu_model(stack), serverless=provisioned)]
    )
    with pytest.raises(ValidationError, match=r"max_concurrency=10: is below .*provisioned"):
        ServerlessScaling(stack, "S", endpoint=endpoint, max_concurrency=10)


# --- Model importers --------------------------------------------------------------------


def test_model_importers() -> None:
    stack = new_stack()
    by_name = Model.from_model_name(stack, "ByName", "My-Model")
    assert by_name.model_name == "My-Model"
    assert stack.resolve(by_name.model_arn) == (
        "arn:aws:sagemaker:us-west-2:123456789012:model/my-model"
    )
    role = iam.Role.from_role_name(stack, "Role", "model-role")
    by_arn = Model.from_model_arn(
        stack, "ByArn", "arn:aws:sagemaker:us-west-2:123456789012:model/other", role=role
    )
    assert (by_arn.model_name, by_arn.role) == ("other", role)
    with pytest.raises(ValidationError, match="model_arn"):
        Model.from_model_arn(stack, "Bad", "arn:aws:sagemaker:us-west-2:123456789012:endpoint/x")
    with pytest.raises(ValidationError, match="model_name"):
        Model.from_model_name(stack, "BadName", "no_underscores")


# --- plan -------------------------------------------------------------------------------


def plan_markdown(name: str) -> str:
    template, namespace = run_readme_example(name)
    stack_plan = plan_template(namespace["stack"].stack_name, template)
    return render_markdown(Plan(prices=DEFAULT_PRICE_LIST.describe(), stacks=[stack_plan]))


def test_plan_shows_pools_routing_scale_in_and_component_options() -> None:
    markdown = plan_markdown("instance-pools")
    assert "ml.g6e.12xlarge (4 x NVIDIA L40S)" in markdown  # priority 1 is the one costed
    assert "instance pools: ml.g6e.12xlarge (priority 1), ml.g5.12xlarge (priority 2)" in markdown
    assert "provisioning timeout: 1200 s" in markdown
    assert "routing: PREFIX_AWARE (prefix 4096, concurrency threshold 16)" in markdown
    assert "scale-in: CONSOLIDATION (cooldown 30 min, step 2)" in markdown
    assert "on ml.g5.12xlarge: 1 accelerators, 32768 MiB per copy" in markdown
    assert "scheduling: SPREAD, zone balance PERMISSIVE (max imbalance 1)" in markdown
    assert "container metrics: /metrics every 30 s" in markdown


def test_plan_shows_reservations_async_and_serverless() -> None:
    assert "capacity reservation: arn:aws:sagemaker:us-west-2:123456789012:training-plan/llm" in (
        plan_markdown("capacity-reservation")
    )
    asynchronous = plan_markdown("async-inference")
    assert "asynchronous: 4 concurrent requests per instance" in asynchronous
    assert "instances: initial 1, min 0, max 4" in asynchronous
    assert "HasBacklogWithoutCapacity" in asynchronous
    assert "serverless: 4096 MB, max concurrency 10, provisioned 2" in plan_markdown("serverless")


def test_adapters_take_no_scheduling_or_specifications() -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    base = endpoint.add_inference_component(
        "Base",
        serves=ComponentModel.of(lmi_model(stack)),
        resources=CopyResources(min_memory=Size.gibibytes(8)),
    )
    bucket = s3.Bucket(stack, "Adapters")
    with pytest.raises(ValidationError, match="scheduling/specifications"):
        endpoint.add_inference_component(
            "Adapter",
            serves=ComponentModel.lora_adapter(
                base, ModelSource.from_s3_tarball(bucket, "adapter.tar.gz")
            ),
            scheduling=ComponentScheduling(placement=PlacementStrategy.SPREAD),
        )


def test_component_serves_an_imported_model(lint_clean: Any) -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    component = endpoint.add_inference_component(
        "Imported",
        serves=ComponentModel.of(Model.from_model_name(stack, "Existing", "existing-model")),
        resources=CopyResources(min_memory=Size.gibibytes(8)),
    )
    assert component.accelerators == 1
    assert component.container_caching_eligible is False  # the image is unknown
    spec = only(lint_clean(stack), "AWS::SageMaker::InferenceComponent")["Specification"]
    assert spec["ModelName"] == "existing-model"


def test_one_specification_on_pooled_endpoint_and_async_pools_lint_clean(lint_clean: Any) -> None:
    """A component without per-type specifications on a pooled endpoint (checked on each
    type, emitted once), and an asynchronous endpoint whose variant has instance pools."""
    stack = new_stack()
    endpoint = pooled_endpoint(stack, provision_timeout=Duration.minutes(5))
    endpoint.add_inference_component(
        "C",
        serves=ComponentModel.of(lmi_model(stack)),
        resources=CopyResources(min_memory=Size.gibibytes(8)),
    )
    Endpoint(
        stack,
        "Async",
        variants=[
            ProductionVariant(
                model=lmi_model(stack, "AsyncModel"),
                instance_pools=pools(1, 2),
                provision_timeout=Duration.hours(1),
                inference_ami_version=InferenceAmiVersion.AL2023_GPU_4_1,
            )
        ],
        async_inference=AsyncInference(bucket=s3.Bucket(stack, "Bucket")),
    )
    template = lint_clean(stack)
    component = only(template, "AWS::SageMaker::InferenceComponent")
    assert "Specifications" not in component
    assert (
        component["Specification"]["ComputeResourceRequirements"][
            "NumberOfAcceleratorDevicesRequired"
        ]
        == 1
    )
    configs = resources_of_type(template, "AWS::SageMaker::EndpointConfig")
    async_variant = next(c for c in configs if "AsyncInferenceConfig" in c)["ProductionVariants"][0]
    assert async_variant["VariantInstanceProvisionTimeoutInSeconds"] == 3600
    assert [pool["Priority"] for pool in async_variant["InstancePools"]] == [1, 2]


@pytest.mark.parametrize(
    ("instance_type", "ami", "refused"),
    [
        (InstanceType.P6_B300_48XLARGE, InferenceAmiVersion.AL2_GPU_3_1, True),
        (InstanceType.G7E_2XLARGE, InferenceAmiVersion.AL2_GPU_2, True),
        (InstanceType.P6_B200_48XLARGE, InferenceAmiVersion.AL2_GPU_2_1, True),
        (InstanceType.P6_B300_48XLARGE, InferenceAmiVersion.AL2023_GPU_4_1, False),
        (InstanceType.P5_48XLARGE, InferenceAmiVersion.AL2_GPU_2, False),
    ],
)
def test_blackwell_types_need_an_ami_with_driver_570_or_later(
    instance_type: InstanceType, ami: InferenceAmiVersion, refused: bool
) -> None:
    """The AMI's NVIDIA driver is known per version; Blackwell GPUs need 570 or later."""
    stack = new_stack()

    def endpoint() -> Endpoint:
        return Endpoint(
            stack,
            "Endpoint",
            variants=[
                ProductionVariant(
                    model=lmi_model(stack),
                    instance_type=instance_type,
                    inference_ami_version=ami,
                )
            ],
        )

    if not refused:
        endpoint()
        return
    with pytest.raises(
        ValidationError,
        match=rf"inference_ami_version='{ami.value}': carries NVIDIA driver "
        rf"{ami.nvidia_driver}.*need driver 570 or later. Fix: use "
        r"al2023-ami-sagemaker-inference-gpu-4-1",
    ):
        endpoint()
