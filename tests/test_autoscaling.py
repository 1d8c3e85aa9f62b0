"""Autoscaling: copy and instance scaling policies, scale to zero, detection times, errors."""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Size, TimeZone
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk.assertions import Annotations, Match, Template
from conftest import assert_cfn_lint_clean, new_stack

from cdk_sagemaker_llm import (
    ComponentModel,
    ComponentScaling,
    ContainerImage,
    CopyResources,
    Endpoint,
    InferenceComponent,
    InferenceComponentEndpoint,
    InstanceType,
    ManagedInstanceScaling,
    Model,
    ModelSource,
    ProductionVariant,
    ScalingPolicyKind,
    ValidationError,
    VariantScaling,
)
from cdk_sagemaker_llm.catalog import scaling_metrics
from cdk_sagemaker_llm.constructs.scaling_policies import PredefinedMetric, TargetTrackingPolicy
from cdk_sagemaker_llm.review import scaling as review_scaling
from cdk_sagemaker_llm.review import template as review_template

SCALABLE_TARGET = "AWS::ApplicationAutoScaling::ScalableTarget"
SCALING_POLICY = "AWS::ApplicationAutoScaling::ScalingPolicy"
ALARM = "AWS::CloudWatch::Alarm"


def ic_endpoint(
    stack: cdk.Stack, id: str = "Endpoint", **kwargs: Any
) -> InferenceComponentEndpoint:
    kwargs.setdefault("instance_scaling", ManagedInstanceScaling(max_instance_count=2))
    return InferenceComponentEndpoint(stack, id, instance_type=InstanceType.G5_12XLARGE, **kwargs)


def component_on(
    endpoint: InferenceComponentEndpoint, id: str = "Llm", **kwargs: Any
) -> InferenceComponent:
    kwargs.setdefault("copy_count", 1)
    return endpoint.add_inference_component(
        id,
        serves=ComponentModel.from_image(ContainerImage.lmi("0.31.0")),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
        **kwargs,
    )


def model_on(stack: cdk.Stack) -> Model:
    return Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))


@dataclass
class Synthesized:
    """One stack with every policy kind, synthesized and linted once for the module."""

    template: dict[str, Any]
    copies: ComponentScaling
    zero: ComponentScaling
    token: ComponentScaling
    instances: VariantScaling
    component_name: str
    zero_component_name: str

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {
            logical_id: resource
            for logical_id, resource in self.template["Resources"].items()
            if resource["Type"] == resource_type
        }

    def logical_id(self, construct: cdk.CfnElement) -> str:
        return cdk.Stack.of(construct).resolve(construct.logical_id)  # type: ignore[no-any-return]

    def policy_of(self, policy: Any) -> dict[str, Any]:
        return self.template["Resources"][self.logical_id(policy.resource)]["Properties"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def synthesized() -> Synthesized:
    stack = new_stack()
    # A shared endpoint with a high-resolution concurrency component.
    endpoint = ic_endpoint(stack, instance_scaling=ManagedInstanceScaling(max_instance_count=3))
    component = component_on(endpoint, copy_count=2)
    copies = ComponentScaling(stack, "CopyScaling", component=component, min_copies=1, max_copies=8)
    copies.scale_on_concurrent_requests(
        target=4,
        scale_in_cooldown=Duration.minutes(10),
        scale_out_cooldown=Duration.seconds(30),
    )
    copies.scale_on_schedule(
        "business-hours",
        schedule=appscaling.Schedule.cron(hour="8", minute="0", week_day="MON-FRI"),
        min_capacity=2,
        time_zone=TimeZone.EUROPE_BERLIN,
    )
    copies.scale_on_schedule(
        "nights",
        schedule=appscaling.Schedule.cron(hour="20", minute="0"),
        min_capacity=1,
        max_capacity=4,
        start_time=datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC),
    )
    # A scale-to-zero endpoint and component.
    zero_endpoint = ic_endpoint(
        stack, "ZeroEndpoint", instance_scaling=ManagedInstanceScaling(min_instance_count=0)
    )
    zero_component = component_on(zero_endpoint, "Sporadic")
    zero = zero_component.auto_scale_copies(min_copies=0, max_copies=4)
    zero.scale_on_invocations(target=10, scale_in_cooldown=Duration.minutes(5))
    # A target from a custom resource (e.g. a benchmark's measured knee).
    knee = cdk.CustomResource(
        stack, "Benchmark", service_token="arn:aws:lambda:us-west-2:1:function:f"
    )
    token_component = component_on(endpoint, "Measured")
    token = ComponentScaling(stack, "MeasuredScaling", component=token_component, max_copies=4)
    token.scale_on_concurrent_requests(target=cdk.Token.as_number(knee.get_att("KneeConcurrency")))
    # An instance-based endpoint.
    instance_endpoint = Endpoint(
        stack,
        "InstanceEndpoint",
        variants=[
            ProductionVariant(
                model=model_on(stack),
                instance_type=InstanceType.G5_2XLARGE,
                initial_instance_count=2,
            )
        ],
    )
    instances = VariantScaling(
        stack, "InstanceScaling", endpoint=instance_endpoint, min_instances=1, max_instances=6
    )
    instances.scale_on_invocations(target=120)
    instances.scale_on_concurrent_requests(target=8, scale_out_cooldown=Duration.minutes(1))
    instances.scale_on_metric(
        "GpuSteps",
        metric=instance_endpoint.metric_gpu_utilization(),
        scaling_steps=[
            appscaling.ScalingInterval(upper=20, change=-1),
            appscaling.ScalingInterval(lower=70, change=1),
            appscaling.ScalingInterval(lower=90, change=2),
        ],
        cooldown=Duration.minutes(3),
        evaluation_periods=3,
        datapoints_to_alarm=2,
    )
    return Synthesized(
        template=assert_cfn_lint_clean(stack),
        copies=copies,
        zero=zero,
        token=token,
        instances=instances,
        component_name=component.inference_component_name,
        zero_component_name=zero_component.inference_component_name,
    )


def target_of(synthesized: Synthesized, scaling: Any) -> dict[str, Any]:
    return synthesized.template["Resources"][synthesized.logical_id(scaling.scalable_target)]  # type: ignore[no-any-return]


def test_component_scalable_target_names_component_and_depends_on_it(
    synthesized: Synthesized,
) -> None:
    target = target_of(synthesized, synthesized.copies)
    properties = target["Properties"]
    assert properties["ServiceNamespace"] == "sagemaker"
    assert properties["ScalableDimension"] == "sagemaker:inference-component:DesiredCopyCount"
    assert properties["ResourceId"] == f"inference-component/{synthesized.component_name}"
    assert (properties["MinCapacity"], properties["MaxCapacity"]) == (1, 8)
    assert "RoleARN" not in properties  # Application Auto Scaling's service-linked role
    component_ids = list(synthesized.resources("AWS::SageMaker::InferenceComponent"))
    assert any(dep in component_ids for dep in target["DependsOn"])


def test_a_component_named_by_a_parameter_is_still_created_before_its_target() -> None:
    """A name from a CfnParameter resolves to a Ref to the parameter, not to the component: the
    target lost its DependsOn and could register before the component existed."""
    stack = new_stack()
    name = cdk.CfnParameter(stack, "IcName", type="String", default="my-ic").value_as_string
    component = component_on(ic_endpoint(stack), inference_component_name=name)
    scaling = component.auto_scale_copies(max_copies=2)
    scaling.scale_on_invocations(target=5)
    template = assert_cfn_lint_clean(stack)
    target = template["Resources"][stack.get_logical_id(scaling.scalable_target)]
    (component_id,) = Template.from_stack(stack).find_resources(
        "AWS::SageMaker::InferenceComponent"
    )
    assert target["DependsOn"] == [component_id]


def test_a_deploy_time_min_copies_warns_that_zero_would_never_come_back() -> None:
    stack = new_stack()
    minimum = cdk.CfnParameter(stack, "MinCopies", type="Number", default=0).value_as_number
    component = component_on(ic_endpoint(stack))
    scaling = component.auto_scale_copies(min_copies=minimum, max_copies=2)
    scaling.scale_on_invocations(target=3)
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    texts = [str(warning.entry.data) for warning in warnings]
    assert any("min_copies is a deploy-time value" in text for text in texts), texts


def test_component_concurrency_target_tracking_is_high_resolution(
    synthesized: Synthesized,
) -> None:
    (policy,) = [
        p for p in synthesized.copies.policies if p.kind is ScalingPolicyKind.TARGET_TRACKING
    ]
    properties = synthesized.policy_of(policy)
    assert properties["PolicyType"] == "TargetTrackingScaling"
    assert properties["ScalingTargetId"] == {
        "Ref": synthesized.logical_id(synthesized.copies.scalable_target)
    }
    assert properties["TargetTrackingScalingPolicyConfiguration"] == {
        "PredefinedMetricSpecification": {
            "PredefinedMetricType": "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
        },
        "TargetValue": 4,
        "ScaleInCooldown": 600,
        "ScaleOutCooldown": 30,
    }
    assert policy.expected_detection_time.to_seconds() == 30  # 10 s x 3


def test_scheduled_capacity_changes_are_on_the_target(synthesized: Synthesized) -> None:
    actions = target_of(synthesized, synthesized.copies)["Properties"]["ScheduledActions"]
    assert actions == [
        {
            "ScheduledActionName": "business-hours",
            "Schedule": "cron(0 8 ? * MON-FRI *)",
            "ScalableTargetAction": {"MinCapacity": 2},
            "Timezone": "Europe/Berlin",
        },
        {
            "ScheduledActionName": "nights",
            "Schedule": "cron(0 20 * * ? *)",
            "ScalableTargetAction": {"MinCapacity": 1, "MaxCapacity": 4},
            "StartTime": "2030-01-01T00:00:00Z",
        },
    ]


def test_scale_to_zero_emits_the_whole_recipe_and_wires_it(synthesized: Synthesized) -> None:
    zero = synthesized.zero
    target_id = synthesized.logical_id(zero.scalable_target)
    target = synthesized.template["Resources"][target_id]["Properties"]
    # Scalable target: min really 0 (not clamped to 1).
    assert target["MinCapacity"] == 0
    assert target["MaxCapacity"] == 4
    assert target["ResourceId"] == f"inference-component/{synthesized.zero_component_name}"

    # Target tracking on invocations per copy.
    tracking = [p for p in zero.policies if p.kind is ScalingPolicyKind.TARGET_TRACKING]
    assert len(tracking) == 1
    tracking_properties = synthesized.policy_of(tracking[0])
    assert tracking_properties["ScalingTargetId"] == {"Ref": target_id}
    configuration = tracking_properties["TargetTrackingScalingPolicyConfiguration"]
    assert configuration["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": "SageMakerInferenceComponentInvocationsPerCopy"
    }
    assert configuration["TargetValue"] == 10
    assert tracking[0].expected_detection_time.to_seconds() == 180  # 60 s x 3

    # The single-step policy.
    assert zero.scale_from_zero is not None
    step_id = synthesized.logical_id(zero.scale_from_zero.action.node.default_child)
    step = synthesized.template["Resources"][step_id]
    assert step["Type"] == SCALING_POLICY
    assert step["Properties"]["PolicyType"] == "StepScaling"
    assert step["Properties"]["ScalingTargetId"] == {"Ref": target_id}
    assert step["Properties"]["StepScalingPolicyConfiguration"] == {
        "AdjustmentType": "ChangeInCapacity",
        "Cooldown": 60,
        "MetricAggregationType": "Maximum",
        "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}],
    }

    # The alarm on NoCapacityInvocationFailures, wired to the step policy's ARN.
    alarm_id = synthesized.logical_id(zero.scale_from_zero.alarm.node.default_child)
    alarm = synthesized.template["Resources"][alarm_id]["Properties"]
    assert alarm["Namespace"] == "AWS/SageMaker"
    assert alarm["MetricName"] == "NoCapacityInvocationFailures"
    assert alarm["Dimensions"] == [
        {"Name": "InferenceComponentName", "Value": synthesized.zero_component_name}
    ]
    assert (alarm["Statistic"], alarm["Period"]) == ("Sum", 60)
    assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (1, 1)
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["Threshold"] == 1
    assert alarm["AlarmActions"] == [{"Ref": step_id}]
    assert zero.scale_from_zero.expected_detection_time.to_seconds() == 60  # 60 s x 1

    # Every scaling policy of this component points at its scalable target, and no other
    # alarm or policy was made for it.
    policies_on_target = [
        r
        for r in synthesized.resources(SCALING_POLICY).values()
        if r["Properties"].get("ScalingTargetId") == {"Ref": target_id}
    ]
    assert len(policies_on_target) == 2
    # The endpoint allows 0 instances.
    configs = synthesized.resources("AWS::SageMaker::EndpointConfig").values()
    scaling = [
        c["Properties"]["ProductionVariants"][0]["ManagedInstanceScaling"]["MinInstanceCount"]
        for c in configs
        if "ManagedInstanceScaling" in c["Properties"]["ProductionVariants"][0]
    ]
    assert 0 in scaling
    assert zero.expected_detection_time is not None
    assert zero.expected_detection_time.to_seconds() == 60


def test_token_target_is_passed_through(synthesized: Synthesized) -> None:
    (policy,) = synthesized.token.policies
    configuration = synthesized.policy_of(policy)["TargetTrackingScalingPolicyConfiguration"]
    (benchmark_id,) = synthesized.resources("AWS::CloudFormation::CustomResource")
    assert configuration["TargetValue"] == {"Fn::GetAtt": [benchmark_id, "KneeConcurrency"]}
    assert "deploy-time" in policy.description


def test_variant_target_and_target_tracking_policies(synthesized: Synthesized) -> None:
    instances = synthesized.instances
    target_id = synthesized.logical_id(instances.scalable_target)
    target = synthesized.template["Resources"][target_id]
    properties = target["Properties"]
    assert properties["ScalableDimension"] == "sagemaker:variant:DesiredInstanceCount"
    (endpoint_id,) = [
        logical_id
        for logical_id, resource in synthesized.resources("AWS::SageMaker::Endpoint").items()
        if logical_id.startswith("InstanceEndpoint")
    ]
    assert properties["ResourceId"] == {
        "Fn::Join": [
            "",
            ["endpoint/", {"Fn::GetAtt": [endpoint_id, "EndpointName"]}, "/variant/AllTraffic"],
        ]
    }
    assert (properties["MinCapacity"], properties["MaxCapacity"]) == (1, 6)
    assert "DependsOn" not in target  # the GetAtt already orders it after the endpoint
    invocations, concurrency, _steps = instances.policies
    assert synthesized.policy_of(invocations)["TargetTrackingScalingPolicyConfiguration"] == {
        "PredefinedMetricSpecification": {
            "PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"
        },
        "TargetValue": 120,
    }
    assert invocations.expected_detection_time.to_seconds() == 180
    concurrency_configuration = synthesized.policy_of(concurrency)[
        "TargetTrackingScalingPolicyConfiguration"
    ]
    assert concurrency_configuration["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
    }
    assert concurrency_configuration["ScaleOutCooldown"] == 60
    assert concurrency.expected_detection_time.to_seconds() == 30
    for policy in (invocations, concurrency):
        assert synthesized.policy_of(policy)["ScalingTargetId"] == {"Ref": target_id}
    assert instances.expected_detection_time is not None
    assert instances.expected_detection_time.to_seconds() == 30


def test_variant_step_scaling_on_any_metric(synthesized: Synthesized) -> None:
    steps = synthesized.instances.policies[2]
    assert steps.kind is ScalingPolicyKind.STEP
    target_ref = {"Ref": synthesized.logical_id(synthesized.instances.scalable_target)}
    upper = steps.policy.upper_action
    upper_id = synthesized.logical_id(upper.node.default_child)
    upper_policy = synthesized.template["Resources"][upper_id]["Properties"]
    assert upper_policy["ScalingTargetId"] == target_ref
    assert upper_policy["StepScalingPolicyConfiguration"]["StepAdjustments"] == [
        {"MetricIntervalLowerBound": 0, "MetricIntervalUpperBound": 20, "ScalingAdjustment": 1},
        {"MetricIntervalLowerBound": 20, "ScalingAdjustment": 2},
    ]
    assert upper_policy["StepScalingPolicyConfiguration"]["Cooldown"] == 180
    alarm = synthesized.template["Resources"][
        synthesized.logical_id(steps.policy.upper_alarm.node.default_child)
    ]["Properties"]
    assert alarm["MetricName"] == "GPUUtilization"
    assert alarm["Threshold"] == 70
    assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (3, 2)
    assert alarm["AlarmActions"] == [{"Ref": upper_id}]
    assert steps.expected_detection_time.to_seconds() == 120  # 60 s x 2 datapoints
    lower_id = synthesized.logical_id(steps.policy.lower_action.node.default_child)
    assert (
        synthesized.template["Resources"][lower_id]["Properties"]["ScalingTargetId"] == target_ref
    )


# --- Validation -----------------------------------------------------------------------------


def fresh_component(min_instance_count: int = 1) -> tuple[cdk.Stack, InferenceComponent]:
    stack = new_stack()
    scaling = ManagedInstanceScaling(min_instance_count=min_instance_count, max_instance_count=2)
    return stack, component_on(ic_endpoint(stack, instance_scaling=scaling))


def test_scale_to_zero_requires_endpoint_min_instance_count_zero() -> None:
    stack, component = fresh_component(min_instance_count=1)
    with pytest.raises(ValidationError) as error:
        ComponentScaling(stack, "Scaling", component=component, min_copies=0, max_copies=2)
    assert error.value.prop == "min_copies"
    assert "min_instance_count=1" in error.value.problem
    assert "min_instance_count=0" in error.value.fix


def test_scale_to_zero_without_a_scale_in_policy_fails_at_synth() -> None:
    stack, component = fresh_component(min_instance_count=0)
    ComponentScaling(stack, "Scaling", component=component, min_copies=0, max_copies=2)
    with pytest.raises(RuntimeError, match=r"min_copies=0.*scale_on_invocations"):
        Template.from_stack(stack)


def test_scale_to_zero_with_a_step_policy_that_only_scales_out_fails_at_synth() -> None:
    """Any step policy counted as scaling in, so one that only adds copies passed the check
    and the component never reached 0."""
    stack, component = fresh_component(min_instance_count=0)
    scaling = ComponentScaling(stack, "Scaling", component=component, min_copies=0, max_copies=2)
    scaling.scale_on_metric(
        "Up",
        metric=component.metric_gpu_utilization(),
        scaling_steps=[
            appscaling.ScalingInterval(lower=70, change=1),
            appscaling.ScalingInterval(lower=90, change=2),
        ],
    )
    with pytest.raises(RuntimeError, match=r"min_copies=0.*negative change"):
        Template.from_stack(stack)
    stack, component = fresh_component(min_instance_count=0)
    scaling = ComponentScaling(stack, "Scaling", component=component, min_copies=0, max_copies=2)
    scaling.scale_on_metric(
        "UpAndDown",
        metric=component.metric_gpu_utilization(),
        scaling_steps=[
            appscaling.ScalingInterval(upper=10, change=-1),
            appscaling.ScalingInterval(lower=70, change=1),
        ],
    )
    Template.from_stack(stack)


def test_scale_to_zero_on_imported_endpoint_warns() -> None:
    stack = new_stack()
    component = InferenceComponent.from_inference_component_name(
        stack, "Imported", inference_component_name="my-ic", endpoint_name="my-endpoint"
    )
    scaling = ComponentScaling(stack, "Scaling", component=component, min_copies=0, max_copies=2)
    scaling.scale_on_invocations(target=5)
    annotations = cdk.assertions.Annotations.from_stack(stack)
    annotations.has_warning("*", cdk.assertions.Match.string_like_regexp("could not be checked"))
    target = scaling.scalable_target
    assert stack.resolve(target.resource_id) == "inference-component/my-ic"
    assert target.min_capacity == 0


@pytest.mark.parametrize(
    ("min_copies", "max_copies", "prop"),
    [(3, 2, "min_copies/max_copies"), (1, 0, "max_copies"), (-1, 2, "min_copies")],
)
def test_capacity_bounds(min_copies: int, max_copies: int, prop: str) -> None:
    stack, component = fresh_component()
    with pytest.raises(ValidationError) as error:
        ComponentScaling(
            stack, "Scaling", component=component, min_copies=min_copies, max_copies=max_copies
        )
    assert error.value.prop.startswith(prop)
    assert error.value.fix


def test_max_copies_below_copy_count() -> None:
    stack = new_stack()
    component = component_on(ic_endpoint(stack), copy_count=3)
    with pytest.raises(ValidationError, match="copy_count"):
        ComponentScaling(stack, "Scaling", component=component, max_copies=2)


@pytest.mark.parametrize("target", [0, -1.5, math.inf, math.nan])
def test_target_must_be_positive(target: float) -> None:
    stack, component = fresh_component()
    scaling = ComponentScaling(stack, "Scaling", component=component, max_copies=2)
    with pytest.raises(ValidationError) as error:
        scaling.scale_on_concurrent_requests(target=target)
    assert error.value.prop == "target" and error.value.value is target
    # A refused policy leaves nothing behind (the valid call met jsii's "There is already a
    # Construct with name"); infinity was passed to jsii, whose kernel died on it.
    scaling.scale_on_concurrent_requests(target=4)


def test_one_target_tracking_policy_per_metric() -> None:
    stack, component = fresh_component()
    scaling = ComponentScaling(stack, "Scaling", component=component, max_copies=2)
    scaling.scale_on_invocations(target=10)
    scaling.scale_on_concurrent_requests(target=4)  # another metric is fine
    with pytest.raises(ValidationError) as error:
        scaling.scale_on_invocations(target=20)
    assert error.value.value == "SageMakerInferenceComponentInvocationsPerCopy"


def test_one_scalable_target_per_component() -> None:
    stack, component = fresh_component()
    ComponentScaling(stack, "Scaling", component=component, max_copies=2)
    with pytest.raises(ValidationError, match="already registers a scalable target"):
        ComponentScaling(stack, "Again", component=component, max_copies=3)


def test_a_rejected_scaling_leaves_nothing_behind() -> None:
    """Bounds are checked before the construct joins the tree: the next scaling in the stack
    is checked against real ones only (it used to meet a half-built one: AttributeError)."""
    stack, component = fresh_component()
    with pytest.raises(ValidationError, match="min_copies must not exceed max_copies"):
        ComponentScaling(stack, "Inverted", component=component, max_copies=2, min_copies=5)
    assert stack.node.try_find_child("Inverted") is None
    ComponentScaling(stack, "Scaling", component=component, max_copies=2)


def test_a_refused_scaling_leaves_no_copies_placed_on_the_endpoint() -> None:
    """A duplicate target was refused after the endpoint had recorded its max_copies as
    placed, so the next component was told the instances were full."""
    stack = new_stack()
    endpoint = ic_endpoint(stack, instance_scaling=ManagedInstanceScaling(max_instance_count=1))
    first = component_on(endpoint, "A")
    first.auto_scale_copies(max_copies=2)
    with pytest.raises(ValidationError, match="already registers a scalable target"):
        ComponentScaling(stack, "Again", component=first, max_copies=4)
    with pytest.raises(ValidationError, match=r"max_copies=0: must be at least 1"):
        ComponentScaling(stack, "Zero", component=component_on(endpoint, "B"), max_copies=0)
    component_on(endpoint, "C")  # 2 + 1 + 1 copies of 1 GPU fit the 4 GPUs


@pytest.mark.parametrize(
    ("kwargs", "prop"),
    [
        ({"scale_in_cooldown": Duration.hours(2)}, "scale_in_cooldown (seconds)"),
        ({"scale_out_cooldown": Duration.seconds(3601)}, "scale_out_cooldown (seconds)"),
    ],
)
def test_cooldowns_within_an_hour(kwargs: dict[str, Any], prop: str) -> None:
    stack, component = fresh_component()
    scaling = ComponentScaling(stack, "Scaling", component=component, max_copies=2)
    with pytest.raises(ValidationError) as error:
        scaling.scale_on_concurrent_requests(target=4, **kwargs)
    assert error.value.prop == prop
    assert "Duration.hours(1)" in error.value.fix


def test_a_cooldown_in_part_seconds_names_the_whole_seconds_to_pass() -> None:
    """``Duration.millis(1500)`` was the CDK's RuntimeError "CannotConvertedIntoWhole"."""
    stack, component = fresh_component()
    scaling = ComponentScaling(stack, "Scaling", component=component, max_copies=2)
    with pytest.raises(ValidationError, match=r"scale_in_cooldown='1500 ms': .*whole seconds"):
        scaling.scale_on_concurrent_requests(target=4, scale_in_cooldown=Duration.millis(1500))


def test_schedule_errors() -> None:
    stack, component = fresh_component()
    scaling = ComponentScaling(stack, "Scaling", component=component, max_copies=4)
    daily = appscaling.Schedule.cron(hour="8", minute="0")
    with pytest.raises(ValidationError, match="at least one bound"):
        scaling.scale_on_schedule("empty", schedule=daily)
    with pytest.raises(ValidationError, match="must not exceed"):
        scaling.scale_on_schedule("inverted", schedule=daily, min_capacity=3, max_capacity=2)
    with pytest.raises(ValidationError, match="scale-from-zero"):
        scaling.scale_on_schedule("off", schedule=daily, min_capacity=0)
    with pytest.raises(ValidationError) as error:
        scaling.scale_on_schedule("a/b", schedule=daily, min_capacity=1)
    assert error.value.prop == "name"
    scaling.scale_on_schedule("ok", schedule=daily, min_capacity=1)
    with pytest.raises(ValidationError, match="has that name"):
        scaling.scale_on_schedule("ok", schedule=daily, max_capacity=3)
    # One bound alone must fit the target's other one (scheduled scaling's own rule).
    with pytest.raises(ValidationError, match=r"min_capacity=9: is above the target's maximum"):
        scaling.scale_on_schedule("high", schedule=daily, min_capacity=9)
    floor = ComponentScaling(
        stack, "Floor", component=component_on(component.endpoint, "Two"), min_copies=2,
        max_copies=2,
    )  # fmt: skip
    with pytest.raises(ValidationError, match=r"max_capacity=1: is below the target's minimum"):
        floor.scale_on_schedule("low", schedule=daily, max_capacity=1)
    naive = datetime.datetime(2030, 1, 1)  # jsii's own TypeError before
    with pytest.raises(ValidationError, match=r"start_time='2030-01-01T00:00:00': a naive"):
        scaling.scale_on_schedule("later", schedule=daily, min_capacity=1, start_time=naive)


def test_a_scheduled_maximum_must_fit_the_endpoints_instances() -> None:
    """The constructor refuses more copies than the endpoint's instances hold; a schedule
    raising the maximum to 50 was accepted."""
    stack = new_stack()
    endpoint = ic_endpoint(stack, instance_scaling=ManagedInstanceScaling(max_instance_count=1))
    scaling = component_on(endpoint).auto_scale_copies(max_copies=2)
    daily = appscaling.Schedule.cron(hour="8", minute="0")
    with pytest.raises(ValidationError, match=r"max_capacity"):
        scaling.scale_on_schedule("peak", schedule=daily, max_capacity=50)
    scaling.scale_on_schedule("busy", schedule=daily, max_capacity=4)  # 4 GPUs hold 4 copies


def test_a_component_that_scales_to_zero_takes_a_scheduled_maximum_of_zero() -> None:
    """Nights at 0 copies: with the maximum at 0 the scale-from-zero policy cannot add a copy
    until the morning action raises it. ``max_capacity=0`` was refused ("at least 1")."""
    stack, component = fresh_component(min_instance_count=0)
    scaling = ComponentScaling(stack, "Scaling", component=component, min_copies=0, max_copies=2)
    scaling.scale_on_invocations(target=10)
    scaling.scale_on_schedule(
        "nights",
        schedule=appscaling.Schedule.cron(hour="20", minute="0"),
        min_capacity=0,
        max_capacity=0,
    )
    # A maximum alone fits the target's minimum of 0; the endpoint's capacity check passes it.
    scaling.scale_on_schedule(
        "weekends", schedule=appscaling.Schedule.cron(week_day="SAT", hour="0"), max_capacity=0
    )
    scaling.scale_on_schedule(
        "mornings", schedule=appscaling.Schedule.cron(hour="8", minute="0"), max_capacity=2
    )
    template = assert_cfn_lint_clean(stack)  # CloudFormation's schema takes the 0
    (target,) = [r for r in template["Resources"].values() if r["Type"] == SCALABLE_TARGET]
    actions = {
        action["ScheduledActionName"]: action["ScalableTargetAction"]
        for action in target["Properties"]["ScheduledActions"]
    }
    assert actions == {
        "nights": {"MinCapacity": 0, "MaxCapacity": 0},
        "weekends": {"MaxCapacity": 0},
        "mornings": {"MaxCapacity": 2},
    }
    with pytest.raises(ValidationError, match="must not exceed"):
        scaling.scale_on_schedule(
            "inverted", schedule=appscaling.Schedule.cron(hour="1"), min_capacity=1, max_capacity=0
        )
    with pytest.raises(ValidationError, match=r"max_capacity=-1: must be at least 0"):
        scaling.scale_on_schedule(
            "negative", schedule=appscaling.Schedule.cron(hour="1"), max_capacity=-1
        )


def _warning_texts(stack: cdk.Stack) -> list[str]:
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    return [str(warning.entry.data) for warning in warnings]


def test_a_scheduled_maximum_of_zero_that_nothing_raises_warns() -> None:
    """A night at max 0 with no morning action parks the component at 0 for good: a warning
    names the action and the fix; the morning action (or an acknowledgment) clears it."""
    stack, component = fresh_component(min_instance_count=0)
    scaling = ComponentScaling(stack, "Scaling", component=component, min_copies=0, max_copies=2)
    scaling.scale_on_invocations(target=10)
    nights = appscaling.Schedule.cron(hour="20", minute="0")
    scaling.scale_on_schedule("nights", schedule=nights, min_capacity=0, max_capacity=0)
    scaling.scale_on_schedule("quiet", schedule=nights, max_capacity=0)
    texts = [text for text in _warning_texts(stack) if "scheduledZeroKept" in text]
    assert len(texts) == 1, texts
    assert "max_capacity=0 is scheduled (nights, quiet)" in texts[0]
    assert "no scheduled action raises the maximum again" in texts[0]

    raised, component = fresh_component(min_instance_count=0)
    scaling = ComponentScaling(raised, "Scaling", component=component, min_copies=0, max_copies=2)
    scaling.scale_on_invocations(target=10)
    scaling.scale_on_schedule("nights", schedule=nights, min_capacity=0, max_capacity=0)
    scaling.scale_on_schedule(
        "mornings", schedule=appscaling.Schedule.cron(hour="8", minute="0"), max_capacity=2
    )
    assert not [text for text in _warning_texts(raised) if "scheduledZeroKept" in text]


def test_a_scheduled_maximum_of_zero_needs_a_component_built_with_min_copies_zero() -> None:
    stack, component = fresh_component()
    scaling = ComponentScaling(stack, "Scaling", component=component, max_copies=2)
    with pytest.raises(ValidationError) as error:
        scaling.scale_on_schedule(
            "nights",
            schedule=appscaling.Schedule.cron(hour="20", minute="0"),
            min_capacity=0,
            max_capacity=0,
        )
    assert error.value.prop == "min_capacity"
    with pytest.raises(ValidationError) as error:
        scaling.scale_on_schedule(
            "nights", schedule=appscaling.Schedule.cron(hour="20", minute="0"), max_capacity=0
        )
    assert (error.value.prop, error.value.value) == ("max_capacity", 0)
    assert "min_copies=0" in error.value.fix
    assert scaling.scalable_target.scheduled_actions is None  # a refused action leaves none


def test_adapter_cannot_scale() -> None:
    stack = new_stack()
    endpoint = ic_endpoint(stack)
    base = component_on(endpoint)
    bucket = cdk.aws_s3.Bucket.from_bucket_name(stack, "Bucket", "adapters")
    adapter = endpoint.add_inference_component(
        "Adapter",
        serves=ComponentModel.lora_adapter(
            base, ModelSource.from_s3_tarball(bucket, "adapter.tar.gz"), lora_rank=16
        ),
    )
    with pytest.raises(ValidationError, match="base component"):
        ComponentScaling(stack, "Scaling", component=adapter, max_copies=2)


def instance_endpoint(stack: cdk.Stack, initial: int = 1) -> Endpoint:
    return Endpoint(
        stack,
        "Endpoint",
        variants=[
            ProductionVariant(
                model=model_on(stack),
                instance_type=InstanceType.G5_2XLARGE,
                initial_instance_count=initial,
            )
        ],
    )


def test_variant_errors() -> None:
    stack = new_stack()
    endpoint = instance_endpoint(stack, initial=3)
    with pytest.raises(ValidationError) as error:
        VariantScaling(stack, "A", endpoint=endpoint, min_instances=0, max_instances=2)
    assert error.value.prop == "min_instances"
    assert "ComponentScaling" in error.value.fix
    with pytest.raises(ValidationError, match="initial_instance_count"):
        VariantScaling(stack, "B", endpoint=endpoint, max_instances=2)
    with pytest.raises(ValidationError, match="no such variant"):
        VariantScaling(stack, "C", endpoint=endpoint, max_instances=4, variant_name="Other")
    with pytest.raises(ValidationError, match="managed"):
        VariantScaling(stack, "D", endpoint=ic_endpoint(stack, "Ic"), max_instances=4)
    scaling = VariantScaling(stack, "E", endpoint=endpoint, max_instances=4)
    with pytest.raises(ValidationError, match="variants cannot scale to zero"):
        scaling.scale_on_schedule(
            "off", schedule=appscaling.Schedule.rate(Duration.days(1)), min_capacity=0
        )
    with pytest.raises(ValidationError, match=r"max_capacity=0: .*variants cannot scale to zero"):
        scaling.scale_on_schedule(
            "off", schedule=appscaling.Schedule.rate(Duration.days(1)), max_capacity=0
        )
    metric = cloudwatch.Metric(namespace="N", metric_name="M")
    with pytest.raises(ValidationError, match="at least 2 intervals"):
        scaling.scale_on_metric(
            "One", metric=metric, scaling_steps=[appscaling.ScalingInterval(lower=1, change=1)]
        )
    with pytest.raises(ValidationError) as error:
        scaling.scale_on_metric(
            "Bad",
            metric=metric,
            scaling_steps=[
                appscaling.ScalingInterval(upper=1, change=-1),
                appscaling.ScalingInterval(lower=5, change=1),
            ],
            evaluation_periods=2,
            datapoints_to_alarm=3,
        )
    assert error.value.prop == "datapoints_to_alarm"


def test_variant_on_imported_endpoint_and_five_minute_metric() -> None:
    stack = new_stack()
    endpoint = Endpoint.from_endpoint_name(stack, "Imported", "my-endpoint")
    scaling = VariantScaling(stack, "Scaling", endpoint=endpoint, max_instances=3)
    policy = scaling.scale_on_metric(
        "Latency",
        metric=endpoint.metric_model_latency().with_(period=Duration.minutes(5)),
        scaling_steps=[
            appscaling.ScalingInterval(upper=100_000, change=-1),
            appscaling.ScalingInterval(lower=500_000, change=1),
        ],
    )
    assert policy.expected_detection_time.to_minutes() == 5
    assert (
        stack.resolve(scaling.scalable_target.resource_id)
        == "endpoint/my-endpoint/variant/AllTraffic"
    )


@pytest.mark.parametrize("metric", list(PredefinedMetric), ids=lambda m: m.name)
def test_plan_reads_the_detection_time_the_policy_states(metric: PredefinedMetric) -> None:
    """Parity: for every predefined metric, ``plan`` reading the synthesized policy states the
    same detection time as the construct's ``expected_detection_time`` (both from
    ``catalog.scaling_metrics``), and the target's dimension is the one ``plan`` looks for."""
    stack = new_stack()
    dimension = {
        "SageMakerInferenceComponent": scaling_metrics.COPY_COUNT_DIMENSION,
        "SageMakerVariantProvisioned": scaling_metrics.PROVISIONED_CONCURRENCY_DIMENSION,
    }.get(metric.value[:27], scaling_metrics.INSTANCE_COUNT_DIMENSION)
    target = appscaling.CfnScalableTarget(
        stack,
        "Target",
        min_capacity=1,
        max_capacity=2,
        resource_id="endpoint/ep/variant/AllTraffic",
        scalable_dimension=dimension,
        service_namespace=scaling_metrics.SERVICE_NAMESPACE,
    )
    policy = TargetTrackingPolicy(
        stack, "Policy", scalable_target=target, metric=metric, target=2.0
    )
    template = Template.from_stack(stack).to_json()
    (plan,) = review_scaling.scaling_plans(review_template.Template(template)).values()
    (read,) = plan.policies
    assert plan.dimension == dimension
    assert read.detection_seconds == policy.expected_detection_time.to_seconds()
    high_resolution = metric.value.endswith("HighResolution")
    assert read.detection_seconds == (30 if high_resolution else 180)


def test_a_one_time_schedule_refuses_a_time_zone_that_would_move_it() -> None:
    """``Schedule.at(moment)`` writes the moment's UTC wall-clock time, and Application Auto
    Scaling reads an ``at()`` expression in the action's ``Timezone``: with Europe/Paris the
    action ran an hour before (in winter) the moment given."""
    stack, component = fresh_component()
    scaling = ComponentScaling(stack, "Scaling", component=component, max_copies=4)
    moment = datetime.datetime(2030, 1, 1, 9, tzinfo=datetime.UTC)
    with pytest.raises(ValidationError) as raised:
        scaling.scale_on_schedule(
            "launch",
            schedule=appscaling.Schedule.at(moment),
            min_capacity=2,
            time_zone=TimeZone.EUROPE_PARIS,
        )
    assert (raised.value.prop, raised.value.value) == ("time_zone", "Europe/Paris")
    assert "at(2030-01-01T09:00:00)" in raised.value.problem
    scaling.scale_on_schedule(
        "launch", schedule=appscaling.Schedule.at(moment), min_capacity=2
    )  # no time zone: the moment as given
    scaling.scale_on_schedule(
        "launch-utc",
        schedule=appscaling.Schedule.at(moment),
        min_capacity=2,
        time_zone=TimeZone.ETC_UTC,
    )
    template = Template.from_stack(stack).to_json()
    (target,) = [r for r in template["Resources"].values() if r["Type"] == SCALABLE_TARGET]
    actions = target["Properties"]["ScheduledActions"]
    assert [a["Schedule"] for a in actions] == ["at(2030-01-01T09:00:00)"] * 2
