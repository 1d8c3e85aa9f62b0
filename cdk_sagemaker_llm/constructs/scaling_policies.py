"""Application Auto Scaling policies, each with its scale-out detection time
(``ScalingPolicy.expected_detection_time``: the alarm's period x its datapoints):

- ``TargetTrackingPolicy``: target tracking on a predefined SageMaker metric (Application Auto
  Scaling owns the alarms: 3 datapoints above the target);
- ``StepPolicy``: step scaling on any CloudWatch metric;
- ``ScaleFromZeroPolicy``: the scale-from-zero recipe, +1 copy when a request finds none
  (``one_step_from_zero``, shared with asynchronous endpoints' backlog recipe);

and the checks their props share (targets, cooldowns). The scalable targets they attach to are
``constructs.autoscaling``'s ``ComponentScaling`` and ``VariantScaling``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum
from typing import TypedDict

from aws_cdk import Duration, Names
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from constructs import Construct

from ..catalog import scaling_metrics
from ..catalog.scaling_metrics import TARGET_TRACKING_SCALE_OUT_DATAPOINTS
from ..prop_types import typed_props
from .validation import ValidationError, check_range, check_sagemaker_name, is_unresolved

MAX_COOLDOWN_SECONDS = 3600
"""Cooldowns accepted by these constructs: 0 to 3600 s (an hour without reacting is a bug)."""

STANDARD_METRIC_PERIOD = Duration.seconds(scaling_metrics.STANDARD_PERIOD_SECONDS)
"""Period of the alarms target tracking creates for standard (1-minute) SageMaker metrics."""
HIGH_RESOLUTION_METRIC_PERIOD = Duration.seconds(scaling_metrics.HIGH_RESOLUTION_PERIOD_SECONDS)
"""Period of the alarms target tracking creates for high-resolution SageMaker metrics."""

SCALE_FROM_ZERO_COOLDOWN = Duration.seconds(60)
"""Cooldown of the scale-from-zero step policy (the documented recipe)."""
SCALE_FROM_ZERO_PERIOD = Duration.seconds(60)
"""Period of the ``NoCapacityInvocationFailures`` alarm (the documented recipe)."""


class PredefinedMetric(Enum):
    """SageMaker metrics Application Auto Scaling can track against a target value."""

    INFERENCE_COMPONENT_CONCURRENT_REQUESTS_PER_COPY_HIGH_RESOLUTION = (
        scaling_metrics.INFERENCE_COMPONENT_CONCURRENT_REQUESTS_PER_COPY_HIGH_RESOLUTION
    )
    """In-flight requests per copy, streaming included; published every 10 s."""
    INFERENCE_COMPONENT_INVOCATIONS_PER_COPY = (
        scaling_metrics.INFERENCE_COMPONENT_INVOCATIONS_PER_COPY
    )
    """Requests per copy per minute."""
    VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION = (
        scaling_metrics.VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION
    )
    """In-flight requests per model (instance), streaming included; published every 10 s."""
    VARIANT_INVOCATIONS_PER_INSTANCE = scaling_metrics.VARIANT_INVOCATIONS_PER_INSTANCE
    """Requests per instance per minute."""
    VARIANT_PROVISIONED_CONCURRENCY_UTILIZATION = (
        scaling_metrics.VARIANT_PROVISIONED_CONCURRENCY_UTILIZATION
    )
    """Used share of a serverless variant's provisioned concurrency (a ratio, 0-1)."""

    @property
    def high_resolution(self) -> bool:
        """True for metrics published every 10 s (faster scale-out detection)."""
        return scaling_metrics.is_high_resolution(self.value)

    @property
    def alarm_period(self) -> Duration:
        """Period of the scale-out alarm target tracking creates for this metric."""
        return Duration.seconds(scaling_metrics.alarm_period_seconds(self.value))


class ScalingPolicyKind(Enum):
    """What kind of scaling policy a ``ScalingPolicy`` is."""

    TARGET_TRACKING = "TargetTracking"
    STEP = "StepScaling"
    SCALE_FROM_ZERO = "ScaleFromZero"


@typed_props
class ScalingPolicy(Construct):
    """A scaling policy on a scalable target, with its scale-out detection time.

    ``expected_detection_time`` = ``detection_period`` x ``detection_datapoints``: how long the
    policy's alarm needs to notice that capacity is short. A plain attribute, readable from
    Python (the ``plan`` command prints it).
    """

    kind: ScalingPolicyKind
    """Target tracking, step scaling, or scale from zero."""
    detection_period: Duration
    """Period of the alarm that triggers scale-out."""
    detection_datapoints: int
    """Datapoints in breach before that alarm fires."""
    policy_arn: str
    """ARN of the (scale-out) Application Auto Scaling policy."""
    description: str
    """One line that says what the policy reacts to."""

    @property
    def expected_detection_time(self) -> Duration:
        """How long the policy takes to detect the need to scale out (period x datapoints)."""
        return Duration.seconds(int(self.detection_period.to_seconds()) * self.detection_datapoints)


@typed_props
class TrackingPolicyBase(ScalingPolicy):
    """One target-tracking ``AWS::ApplicationAutoScaling::ScalingPolicy`` on the metric a
    subclass gives (``predefined`` or ``customized``). Application Auto Scaling creates and owns the
    alarms: scale-out after 3 datapoints above the target."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        scalable_target: appscaling.CfnScalableTarget,
        target: float,
        metric_name: str,
        predefined: appscaling.CfnScalingPolicy.PredefinedMetricSpecificationProperty | None = None,
        customized: appscaling.CfnScalingPolicy.CustomizedMetricSpecificationProperty | None = None,
        detection_period: Duration,
        scale_in_cooldown: Duration | None,
        scale_out_cooldown: Duration | None,
        disable_scale_in: bool,
    ) -> None:
        super().__init__(scope, id)
        check_target("target", target)
        in_seconds = cooldown_seconds("scale_in_cooldown", scale_in_cooldown)
        out_seconds = cooldown_seconds("scale_out_cooldown", scale_out_cooldown)
        self.kind = ScalingPolicyKind.TARGET_TRACKING
        self.target = target
        """The target value (may be a token)."""
        self.scale_in_cooldown = scale_in_cooldown
        """Wait after a scale-in; None means Application Auto Scaling's default."""
        self.scale_out_cooldown = scale_out_cooldown
        """Wait after a scale-out; None means Application Auto Scaling's default."""
        self.disable_scale_in = disable_scale_in
        """Whether the policy never scales in."""
        self.detection_period = detection_period
        self.detection_datapoints = TARGET_TRACKING_SCALE_OUT_DATAPOINTS
        shown = "a deploy-time value" if is_unresolved(target) else f"{target:g}"
        self.description = f"target tracking: {metric_name} at {shown}"
        self.resource = appscaling.CfnScalingPolicy(
            self,
            "Resource",
            policy_name=Names.unique_resource_name(self, max_length=255),
            policy_type="TargetTrackingScaling",
            scaling_target_id=scalable_target.ref,
            target_tracking_scaling_policy_configuration=appscaling.CfnScalingPolicy.TargetTrackingScalingPolicyConfigurationProperty(
                target_value=target,
                predefined_metric_specification=predefined,
                customized_metric_specification=customized,
                scale_in_cooldown=in_seconds,
                scale_out_cooldown=out_seconds,
                disable_scale_in=True if disable_scale_in else None,
            ),
        )
        """The emitted ``AWS::ApplicationAutoScaling::ScalingPolicy``."""
        self.policy_arn = self.resource.ref


@typed_props
class TargetTrackingPolicy(TrackingPolicyBase):
    """Target tracking on a predefined SageMaker metric (one ``ScalingPolicy`` resource).

    Application Auto Scaling creates and owns the alarms: scale-out after 3 datapoints above
    the target (10 s each for high-resolution metrics, 1 minute otherwise).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        scalable_target: appscaling.CfnScalableTarget,
        metric: PredefinedMetric,
        target: float,
        scale_in_cooldown: Duration | None = None,
        scale_out_cooldown: Duration | None = None,
        disable_scale_in: bool = False,
    ) -> None:
        """
        :param scalable_target: the scalable target the policy scales.
        :param metric: the predefined metric tracked.
        :param target: the metric value to hold; a literal > 0 or a number token (e.g. a
            benchmark's measured knee).
        :param scale_in_cooldown: wait after a scale-in (0-3600 s); default Application Auto
            Scaling's (300 s for endpoint variants).
        :param scale_out_cooldown: wait after a scale-out (0-3600 s); default Application Auto
            Scaling's (300 s for endpoint variants).
        :param disable_scale_in: only ever scale out; default False.
        """
        super().__init__(
            scope,
            id,
            scalable_target=scalable_target,
            target=target,
            metric_name=metric.value,
            predefined=appscaling.CfnScalingPolicy.PredefinedMetricSpecificationProperty(
                predefined_metric_type=metric.value
            ),
            detection_period=metric.alarm_period,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
            disable_scale_in=disable_scale_in,
        )
        self.metric = metric
        """The predefined metric tracked."""


@typed_props
class StepPolicy(ScalingPolicy):
    """Step scaling on any CloudWatch metric: an upper and/or a lower alarm with their steps.

    Wraps CDK's ``StepScalingPolicy`` (which needs at least 2 intervals); the alarms use the
    metric's own period.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        scaling_target: appscaling.IScalableTarget,
        metric: cloudwatch.IMetric,
        scaling_steps: Sequence[appscaling.ScalingInterval],
        adjustment_type: appscaling.AdjustmentType = appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
        cooldown: Duration | None = None,
        evaluation_periods: int = 1,
        datapoints_to_alarm: int | None = None,
        metric_aggregation_type: appscaling.MetricAggregationType | None = None,
    ) -> None:
        """
        :param scaling_target: the scalable target the policy scales.
        :param metric: the CloudWatch metric watched (its period is the alarm period).
        :param scaling_steps: at least 2 intervals (``ScalingInterval(lower=, upper=, change=)``).
        :param adjustment_type: how ``change`` is read; default a change in capacity.
        :param cooldown: wait after an adjustment (0-3600 s); default Application Auto
            Scaling's.
        :param evaluation_periods: periods the alarm evaluates; default 1.
        :param datapoints_to_alarm: of those, how many must breach; default all of them.
        :param metric_aggregation_type: how datapoints combine; default CDK's (Average).
        """
        super().__init__(scope, id)
        if len(scaling_steps) < 2:
            raise ValidationError(
                "scaling_steps",
                len(scaling_steps),
                "step scaling on a metric needs at least 2 intervals (one of them the no-change "
                "band, or a scale-in step)",
                "add a second ScalingInterval, e.g. ScalingInterval(upper=<low>, change=-1)",
            )
        cooldown_seconds("cooldown", cooldown)
        check_range("evaluation_periods", evaluation_periods, minimum=1)
        datapoints = datapoints_to_alarm if datapoints_to_alarm is not None else evaluation_periods
        check_range(
            "datapoints_to_alarm",
            datapoints,
            minimum=1,
            maximum=evaluation_periods,
            fix="set datapoints_to_alarm between 1 and evaluation_periods",
        )
        self.kind = ScalingPolicyKind.STEP
        self.metric = metric
        """The metric watched."""
        self.scales_in = adjustment_type is appscaling.AdjustmentType.EXACT_CAPACITY or any(
            step.change < 0 for step in scaling_steps
        )
        """Whether a step can take capacity away (a negative change, or an exact capacity)."""
        self.detection_period = metric_period(metric)
        self.detection_datapoints = datapoints
        config = metric.to_metric_config()
        name = config.metric_stat.metric_name if config.metric_stat else "a math expression"
        self.description = f"step scaling on {name}"
        self.policy = appscaling.StepScalingPolicy(
            self,
            "Resource",
            scaling_target=scaling_target,
            metric=metric,
            scaling_steps=list(scaling_steps),
            adjustment_type=adjustment_type,
            cooldown=cooldown,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=datapoints_to_alarm,
            metric_aggregation_type=metric_aggregation_type,
        )
        """CDK's step scaling policy: ``upper_action``/``upper_alarm``, ``lower_*``."""
        action = self.policy.upper_action or self.policy.lower_action
        assert action is not None
        self.policy_arn = action.scaling_policy_arn


def can_scale_in(policy: ScalingPolicy) -> bool:
    """Whether ``policy`` can take capacity away, down to a minimum of 0: target tracking that
    does not disable scale-in, or a step policy with a scale-in step (``StepPolicy.scales_in``).
    A scale-from-zero policy only adds."""
    if isinstance(policy, TrackingPolicyBase):
        return not policy.disable_scale_in
    return isinstance(policy, StepPolicy) and policy.scales_in


@typed_props
class ScaleFromZeroPolicy(ScalingPolicy):
    """The scale-from-zero recipe: +1 copy when a request finds no copy.

    A single-step policy (``ChangeInCapacity`` +1 for metric >= 0, ``Maximum`` aggregation,
    cooldown 60 s) fired by an alarm on ``AWS/SageMaker`` ``NoCapacityInvocationFailures``
    (dimension ``InferenceComponentName``, Sum over 60 s, 1 of 1 datapoints, >= 1). Without it
    a component at 0 copies never leaves 0: target tracking has no per-copy metric to act on.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        scaling_target: appscaling.IScalableTarget,
        inference_component_name: str,
    ) -> None:
        """
        :param scaling_target: the component's copy-count scalable target.
        :param inference_component_name: the component the alarm watches.
        """
        check_sagemaker_name("inference_component_name", inference_component_name)
        super().__init__(scope, id)
        self.kind = ScalingPolicyKind.SCALE_FROM_ZERO
        self.detection_period = SCALE_FROM_ZERO_PERIOD
        self.detection_datapoints = 1
        self.description = "scale from zero: +1 copy on NoCapacityInvocationFailures >= 1"
        self.action, self.alarm = one_step_from_zero(
            self,
            scaling_target,
            cooldown=SCALE_FROM_ZERO_COOLDOWN,
            aggregation=appscaling.MetricAggregationType.MAXIMUM,
            alarm_id="NoCapacityAlarm",
            alarm_description=(
                f"Requests to {inference_component_name} found no copy: add one (scale from zero)."
            ),
            metric=cloudwatch.Metric(
                namespace="AWS/SageMaker",
                metric_name="NoCapacityInvocationFailures",
                dimensions_map={"InferenceComponentName": inference_component_name},
                statistic="Sum",
                period=SCALE_FROM_ZERO_PERIOD,
            ),
            datapoints=1,
        )
        """The single-step scaling policy, and the ``NoCapacityInvocationFailures`` alarm that
        fires it."""
        self.policy_arn = self.action.scaling_policy_arn


class TargetTrackingOptions(TypedDict, total=False):
    """How a ``scale_on_*`` target-tracking policy reacts besides its target: the optional
    props of ``TargetTrackingPolicy`` (``scale_in_cooldown``, ``scale_out_cooldown``: 0-3600 s,
    default Application Auto Scaling's, 300 s for a variant; ``disable_scale_in``: default
    False)."""

    scale_in_cooldown: Duration | None
    scale_out_cooldown: Duration | None
    disable_scale_in: bool


class StepScalingOptions(TypedDict, total=False):
    """The optional props of ``StepPolicy``, for ``scale_on_metric``: ``adjustment_type``,
    ``cooldown``, ``evaluation_periods``, ``datapoints_to_alarm``,
    ``metric_aggregation_type``."""

    adjustment_type: appscaling.AdjustmentType
    cooldown: Duration | None
    evaluation_periods: int
    datapoints_to_alarm: int | None
    metric_aggregation_type: appscaling.MetricAggregationType | None


def one_step_from_zero(
    scope: Construct,
    scaling_target: appscaling.IScalableTarget,
    *,
    cooldown: Duration,
    aggregation: appscaling.MetricAggregationType,
    alarm_id: str,
    alarm_description: str,
    metric: cloudwatch.IMetric,
    datapoints: int,
    treat_missing_data: cloudwatch.TreatMissingData | None = None,
) -> tuple[appscaling.StepScalingAction, cloudwatch.Alarm]:
    """The scale-from-zero recipe: one +1 step (``ChangeInCapacity``) fired by an alarm on
    ``metric`` >= 1 for ``datapoints`` of as many periods. CDK's ``StepScalingPolicy`` insists
    on two intervals, so the step is a ``StepScalingAction``. Components use it on
    ``NoCapacityInvocationFailures``, asynchronous endpoints on ``HasBacklogWithoutCapacity``."""
    action = appscaling.StepScalingAction(
        scope,
        "Policy",
        scaling_target=scaling_target,
        adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
        cooldown=cooldown,
        metric_aggregation_type=aggregation,
    )
    action.add_adjustment(adjustment=1, lower_bound=0)
    alarm = cloudwatch.Alarm(
        scope,
        alarm_id,
        alarm_description=alarm_description,
        metric=metric,
        threshold=1,
        evaluation_periods=datapoints,
        datapoints_to_alarm=datapoints,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=treat_missing_data,
    )
    alarm.add_alarm_action(cloudwatch_actions.ApplicationScalingAction(action))
    return action, alarm


def check_target(prop: str, target: float) -> None:
    """A literal target value must be a finite number > 0 (infinity would reach jsii, which
    cannot serialize it); tokens are checked at deploy time."""
    if is_unresolved(target):
        return
    if isinstance(target, bool) or not isinstance(target, int | float) or not 0 < target < math.inf:
        raise ValidationError(
            prop,
            target,
            "a target-tracking target must be a finite number greater than 0",
            "pass the metric value per copy/instance to hold, e.g. target=4",
        )


def cooldown_seconds(prop: str, cooldown: Duration | None) -> int | None:
    """A cooldown in whole seconds, checked against 0..3600 s; None stays None."""
    if cooldown is None:
        return None
    milliseconds = cooldown.to_milliseconds()
    if is_unresolved(milliseconds):
        return int(cooldown.to_seconds())
    if milliseconds % 1000:  # to_seconds() would raise the CDK's "CannotConvertedIntoWhole"
        raise ValidationError(
            prop,
            f"{milliseconds:g} ms",
            "Application Auto Scaling takes cooldowns in whole seconds",
            f"pass Duration.seconds({round(milliseconds / 1000)})",
        )
    seconds = milliseconds // 1000
    check_range(
        f"{prop} (seconds)",
        seconds,
        minimum=0,
        maximum=MAX_COOLDOWN_SECONDS,
        fix=f"set {prop} between Duration.seconds(0) and Duration.hours(1)",
    )
    return int(seconds)


def metric_period(metric: cloudwatch.IMetric) -> Duration:
    """The period of a metric or math expression (CloudWatch's 5-minute default if unset)."""
    config = metric.to_metric_config()
    if config.metric_stat is not None:
        return config.metric_stat.period
    if config.math_expression is not None and config.math_expression.period:
        return Duration.seconds(config.math_expression.period)
    return Duration.minutes(5)
