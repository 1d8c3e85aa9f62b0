"""Application Auto Scaling for inference components (copies) and endpoint variants (instances).

``ComponentScaling`` scales the copy count of an inference component, ``VariantScaling`` the
instance count of an instance-based endpoint's variant. Both register one scalable target
(``AWS::ApplicationAutoScaling::ScalableTarget``, emitted as an L1 resource so that a minimum of
0 stays 0) and add policies to it:

- target tracking on a predefined SageMaker metric (``scale_on_concurrent_requests``,
  ``scale_on_invocations``);
- step scaling on any CloudWatch metric (``scale_on_metric``);
- scheduled capacity changes (``scale_on_schedule``);
- for components with ``min_copies=0``, the scale-from-zero recipe: a single-step policy
  (+1 copy) fired by an alarm on ``NoCapacityInvocationFailures``.

Every policy states ``expected_detection_time``: how long its alarm takes to notice that more
capacity is needed (metric period x datapoints to alarm). Scaling itself (new instance, image
pull, weights, start-up) comes on top.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Sequence
from enum import Enum
from typing import ClassVar, TypedDict, TypeVar, Unpack

import jsii
from aws_cdk import Annotations, CfnResource, Duration, Names, Stack, TimeZone
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct, IValidation

from ..catalog import scaling_metrics
from ..catalog.scaling_metrics import (
    COPY_COUNT_DIMENSION,
    INSTANCE_COUNT_DIMENSION,
    SERVICE_NAMESPACE,
    TARGET_TRACKING_SCALE_OUT_DATAPOINTS,
)
from ..prop_types import typed_props
from .deployment import RollingDeployment
from .endpoint_base import EndpointBase
from .interfaces import IEndpoint, IInferenceComponent
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

PolicyT = TypeVar("PolicyT", bound="ScalingPolicy")

_SCHEDULED_ACTION_NAME = re.compile(
    r"^[^\s:/|\x00-\x1f\x7f-\x9f](?:[^:/|\x00-\x1f\x7f-\x9f]*[^\s:/|\x00-\x1f\x7f-\x9f])?$"
)


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
    seconds = cooldown.to_seconds()
    if is_unresolved(seconds):
        return int(seconds)
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


@jsii.implements(IValidation)
class _NeedsScaleIn:
    """At synth: scale to zero needs a policy that can take the last copy away."""

    def __init__(self, scaling: ComponentScaling) -> None:
        self._scaling = scaling

    def validate(self) -> list[str]:
        scaling = self._scaling
        scales_in = any(
            (isinstance(p, TargetTrackingPolicy) and not p.disable_scale_in)
            or isinstance(p, StepPolicy)
            for p in scaling.policies
        )
        if scaling.min_copies != 0 or scales_in:
            return []
        return [
            str(
                ValidationError(
                    "min_copies",
                    0,
                    "scale to zero needs a policy that scales in, but this component has none, "
                    "so it would never reach 0 copies",
                    "call scale_on_invocations(target=...) or scale_on_concurrent_requests("
                    "target=...) on it",
                )
            )
        ]


@typed_props
class _Scaling(Construct):
    """One scalable target and the policies on it."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        resource_id: str,
        scalable_dimension: str,
        min_capacity: int,
        max_capacity: int,
        min_prop: str,
        max_prop: str,
        depends_on: CfnResource | None,
    ) -> None:
        # Checked before joining the construct tree: a rejected scaling leaves nothing behind.
        for prop, value in ((min_prop, min_capacity), (max_prop, max_capacity)):
            if not is_unresolved(value) and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValidationError(prop, value, "must be a whole number", f"pass an int {prop}")
        check_range(min_prop, min_capacity, minimum=0)
        check_range(max_prop, max_capacity, minimum=1)
        if (
            not is_unresolved(min_capacity)
            and not is_unresolved(max_capacity)
            and min_capacity > max_capacity
        ):
            raise ValidationError(
                f"{min_prop}/{max_prop}",
                (min_capacity, max_capacity),
                f"{min_prop} must not exceed {max_prop}",
                f"raise {max_prop} to at least {min_capacity} or lower {min_prop}",
            )
        _check_unique(scope, id, resource_id, scalable_dimension)
        super().__init__(scope, id)
        self.resource_id = resource_id
        """The Application Auto Scaling ``ResourceId``."""
        self.scalable_dimension = scalable_dimension
        """The scalable dimension."""
        self.min_capacity = min_capacity
        """Fewest copies/instances."""
        self.max_capacity = max_capacity
        """Most copies/instances."""
        self.policies: list[ScalingPolicy] = []
        """Policies added so far, in order."""
        self._tracked: dict[PredefinedMetric, TargetTrackingPolicy] = {}
        self._scheduled: list[appscaling.CfnScalableTarget.ScheduledActionProperty] = []
        # The L1 resource: CloudFormation's ScalableTarget keeps MinCapacity 0 as 0. No RoleARN:
        # Application Auto Scaling uses (and creates) its SageMaker service-linked role.
        self.scalable_target = appscaling.CfnScalableTarget(
            self,
            "Target",
            service_namespace=SERVICE_NAMESPACE,
            scalable_dimension=scalable_dimension,
            resource_id=resource_id,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
        )
        """The emitted ``AWS::ApplicationAutoScaling::ScalableTarget``."""
        if depends_on is not None:
            self.scalable_target.add_resource_dependency(depends_on)
        self._target_ref = appscaling.ScalableTarget.from_scalable_target_attributes(
            self,
            "TargetRef",
            scalable_target_id=self.scalable_target.ref,
            scalable_dimension=scalable_dimension,
            service_namespace=SERVICE_NAMESPACE,
        )

    @property
    def expected_detection_time(self) -> Duration | None:
        """The fastest scale-out detection among the policies; None without policies."""
        times = [policy.expected_detection_time for policy in self.policies]
        if not times:
            return None
        return min(times, key=lambda time: time.to_seconds())

    def _added(self, policy: PolicyT) -> PolicyT:
        """``policy``, now listed among this target's policies."""
        self.policies.append(policy)
        return policy

    def _track(
        self,
        id: str,
        metric: PredefinedMetric,
        target: float,
        **options: Unpack[TargetTrackingOptions],
    ) -> TargetTrackingPolicy:
        existing = self._tracked.get(metric)
        if existing is not None:
            raise ValidationError(
                "metric",
                metric.value,
                f"{existing.node.path} already tracks this metric on the same scalable target; "
                "two target-tracking policies on one metric fight each other",
                "keep one policy per metric (change its target instead)",
            )
        try:
            policy = TargetTrackingPolicy(
                self, id, scalable_target=self.scalable_target, metric=metric, target=target,
                **options,
            )  # fmt: skip
        except ValidationError:
            # A refused policy leaves no half-built child: calling again with a valid target
            # would otherwise be jsii's "There is already a Construct with name".
            self.node.try_remove_child(id)
            raise
        self._tracked[metric] = policy
        return self._added(policy)

    def scale_on_metric(
        self,
        id: str,
        *,
        metric: cloudwatch.IMetric,
        scaling_steps: Sequence[appscaling.ScalingInterval],
        **options: Unpack[StepScalingOptions],
    ) -> StepPolicy:
        """Step scaling on any CloudWatch metric; see ``StepPolicy`` for the parameters."""
        return self._added(
            StepPolicy(
                self,
                id,
                scaling_target=self._target_ref,
                metric=metric,
                scaling_steps=scaling_steps,
                **options,
            )
        )

    def scale_on_schedule(
        self,
        name: str,
        *,
        schedule: appscaling.Schedule,
        min_capacity: int | None = None,
        max_capacity: int | None = None,
        start_time: datetime.datetime | None = None,
        end_time: datetime.datetime | None = None,
        time_zone: TimeZone | None = None,
    ) -> None:
        """Change the capacity bounds on a schedule (a scheduled action on the target).

        :param name: the scheduled action's name, unique on this target (no ``:``, ``/``, ``|``).
        :param schedule: when: ``Schedule.cron(...)``, ``Schedule.rate(...)``, ``Schedule.at(...)``.
        :param min_capacity: the new minimum; default unchanged.
        :param max_capacity: the new maximum; default unchanged.
        :param start_time: the schedule starts then; default now.
        :param end_time: the schedule ends then; default never.
        :param time_zone: time zone of ``schedule`` and the times; default UTC.
        """
        if len(name) > 256 or not _SCHEDULED_ACTION_NAME.match(name):
            raise ValidationError(
                "name",
                name,
                "scheduled action names are 1-256 printable characters without ':', '/' or '|' "
                "and without leading or trailing spaces",
                "rename the scheduled action, e.g. 'business-hours'",
            )
        if any(action.scheduled_action_name == name for action in self._scheduled):
            raise ValidationError(
                "name", name, "another scheduled action on this target has that name", "rename it"
            )
        if min_capacity is None and max_capacity is None:
            raise ValidationError(
                "min_capacity/max_capacity",
                (None, None),
                "a scheduled action must change at least one bound",
                "pass min_capacity, max_capacity or both",
            )
        self._check_scheduled_min(min_capacity)
        check_range("max_capacity", max_capacity, minimum=1)
        if (
            min_capacity is not None
            and max_capacity is not None
            and not is_unresolved(min_capacity)
            and not is_unresolved(max_capacity)
            and min_capacity > max_capacity
        ):
            raise ValidationError(
                "min_capacity/max_capacity",
                (min_capacity, max_capacity),
                "min_capacity must not exceed max_capacity",
                f"raise max_capacity to at least {min_capacity} or lower min_capacity",
            )
        if start_time is not None and end_time is not None and end_time <= start_time:
            raise ValidationError(
                "end_time", end_time.isoformat(), "ends before start_time", "move end_time later"
            )
        self._scheduled.append(
            appscaling.CfnScalableTarget.ScheduledActionProperty(
                scheduled_action_name=name,
                schedule=schedule.expression_string,
                scalable_target_action=appscaling.CfnScalableTarget.ScalableTargetActionProperty(
                    min_capacity=min_capacity, max_capacity=max_capacity
                ),
                start_time=start_time,
                end_time=end_time,
                timezone=time_zone.timezone_name if time_zone else None,
            )
        )
        self.scalable_target.scheduled_actions = list(self._scheduled)

    def _check_scheduled_min(self, min_capacity: int | None) -> None:
        check_range("min_capacity", min_capacity, minimum=0)


@typed_props
class _VariantScaling(_Scaling):
    """A scalable target on one variant of an endpoint (``endpoint/<name>/variant/<variant>``):
    its instance count (``VariantScaling``) or provisioned concurrency (``ServerlessScaling``),
    between bounds the caller passed as ``min_<unit>`` and ``max_<unit>``."""

    _DIMENSION: ClassVar[str]
    _UNIT: ClassVar[str]

    def __init__(
        self, scope: Construct, id: str, endpoint: IEndpoint, variant: str, bounds: tuple[int, int]
    ) -> None:
        minimum, maximum = bounds
        super().__init__(
            scope,
            id,
            resource_id=f"endpoint/{endpoint.endpoint_name}/variant/{variant}",
            scalable_dimension=self._DIMENSION,
            min_capacity=minimum,
            max_capacity=maximum,
            min_prop=f"min_{self._UNIT}",
            max_prop=f"max_{self._UNIT}",
            depends_on=_explicit_dependency(
                endpoint.endpoint_name, getattr(endpoint, "resource", None)
            ),
        )
        self.endpoint = endpoint
        """The endpoint whose variant scales."""
        self.variant_name = variant
        """The variant scaled."""


@typed_props
class _RequestScaling(_Scaling):
    """A scalable target whose capacity serves requests: target tracking on SageMaker's
    predefined per-copy (component) or per-instance (variant) request metrics."""

    _CONCURRENT_REQUESTS_METRIC: ClassVar[PredefinedMetric]
    _INVOCATIONS_METRIC: ClassVar[PredefinedMetric]

    def scale_on_concurrent_requests(
        self, *, target: float, **options: Unpack[TargetTrackingOptions]
    ) -> TargetTrackingPolicy:
        """Hold in-flight requests (streaming included) per copy of a component, or per model
        of a variant, at ``target`` (high resolution: 10 s x 3 = 30 s to notice).

        :param target: concurrent requests per copy or model, e.g. the benchmark's knee; > 0
            or a token.
        :param options: cooldowns and ``disable_scale_in`` (``TargetTrackingOptions``).
        """
        self._check_request_metrics_published("scale_on_concurrent_requests")
        return self._track(
            "ConcurrentRequestsPolicy", self._CONCURRENT_REQUESTS_METRIC, target, **options
        )

    def scale_on_invocations(
        self, *, target: float, **options: Unpack[TargetTrackingOptions]
    ) -> TargetTrackingPolicy:
        """Hold requests per minute per copy of a component, or per instance of a variant, at
        ``target`` (standard resolution: 60 s x 3 = 3 minutes to notice).

        :param target: invocations per copy or instance per minute; > 0 or a token.
        :param options: cooldowns and ``disable_scale_in`` (``TargetTrackingOptions``).
        """
        self._check_request_metrics_published("scale_on_invocations")
        return self._track("InvocationsPolicy", self._INVOCATIONS_METRIC, target, **options)

    def _check_request_metrics_published(self, method: str) -> None:
        """An asynchronous endpoint's requests go through its queue: the per-instance request
        metrics these policies track are not published for it, so they would never scale
        (developer guide, "Autoscale an asynchronous endpoint": track
        ``ApproximateBacklogSizePerInstance``)."""
        endpoint = getattr(self, "endpoint", None)
        if isinstance(endpoint, Construct) and getattr(endpoint, "async_inference", None):
            raise ValidationError(
                method,
                endpoint.node.path,
                "the endpoint is asynchronous: SageMaker publishes no per-instance request "
                "metrics for it, so this policy would never scale",
                "scale it on its queue with AsyncScaling(...).scale_on_backlog(...)",
            )


@typed_props
class ComponentScaling(_RequestScaling):
    """Scale the copy count of an inference component (``DesiredCopyCount``).

    Register bounds here, then add policies: ``scale_on_concurrent_requests`` (high-resolution,
    the fastest to notice load), ``scale_on_invocations``, ``scale_on_metric`` (step scaling),
    ``scale_on_schedule``. ``min_copies=0`` adds the scale-from-zero recipe and needs the
    endpoint's managed instance scaling to allow 0 instances.

    Example::

        scaling = ComponentScaling(self, "Scaling", component=component, max_copies=8)
        scaling.scale_on_concurrent_requests(target=4)
    """

    _CONCURRENT_REQUESTS_METRIC = (
        PredefinedMetric.INFERENCE_COMPONENT_CONCURRENT_REQUESTS_PER_COPY_HIGH_RESOLUTION
    )
    _INVOCATIONS_METRIC = PredefinedMetric.INFERENCE_COMPONENT_INVOCATIONS_PER_COPY

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        component: IInferenceComponent,
        max_copies: int,
        min_copies: int = 1,
    ) -> None:
        """
        :param component: the component whose copies scale (created here or imported).
        :param max_copies: most copies (at least 1). Managed instance scaling must be able to
            place them beside the endpoint's other components: more than its
            max_instance_count instances hold is a ValidationError.
        :param min_copies: fewest copies; default 1. 0 scales to zero when idle and adds the
            scale-from-zero policy and alarm; it needs the endpoint's ``min_instance_count=0``.
        """
        name = component.inference_component_name
        to_zero = min_copies == 0 and not is_unresolved(min_copies)
        endpoint_checked = _check_endpoint_allows_zero(component) if to_zero else True
        _check_component(component, max_copies)
        if isinstance(component.endpoint, EndpointBase) and isinstance(component, Construct):
            component.endpoint.check_copies(component, max_copies, "max_copies")
        deployment = getattr(component, "deployment", None)
        if isinstance(deployment, RollingDeployment):
            deployment.check_batch_size(
                "component.deployment", min_copies, "copy count", "min_copies"
            )
        default_child = component.node.default_child if isinstance(component, Construct) else None
        super().__init__(
            scope,
            id,
            resource_id=f"inference-component/{name}",
            scalable_dimension=COPY_COUNT_DIMENSION,
            min_capacity=min_copies,
            max_capacity=max_copies,
            min_prop="min_copies",
            max_prop="max_copies",
            depends_on=_explicit_dependency(name, default_child),
        )
        self.component = component
        """The component scaled."""
        self.min_copies = min_copies
        """Fewest copies."""
        self.max_copies = max_copies
        """Most copies."""
        self.scale_from_zero: ScaleFromZeroPolicy | None = None
        """The scale-from-zero policy and alarm when ``min_copies`` is 0, else None."""
        if not endpoint_checked:
            Annotations.of(self).add_warning_v2(
                "cdk-sagemaker-llm:scale-to-zero-unverified",
                "min_copies=0: the component's endpoint is imported, so its managed instance "
                "scaling could not be checked; scale to zero needs MinInstanceCount 0 on it.",
            )
        if to_zero:
            self.scale_from_zero = ScaleFromZeroPolicy(
                self,
                "ScaleFromZero",
                scaling_target=self._target_ref,
                inference_component_name=name,
            )
            self.policies.append(self.scale_from_zero)
            self.node.add_validation(_NeedsScaleIn(self))

    def _check_scheduled_min(self, min_capacity: int | None) -> None:
        super()._check_scheduled_min(min_capacity)
        if min_capacity == 0 and not is_unresolved(min_capacity) and self.min_copies != 0:
            raise ValidationError(
                "min_capacity",
                0,
                "a scheduled minimum of 0 copies needs the scale-from-zero policy, or the "
                "component stays at 0 when requests return",
                "construct the ComponentScaling with min_copies=0 (endpoint "
                "min_instance_count=0), or schedule min_capacity >= 1",
            )


@typed_props
class VariantScaling(_RequestScaling, _VariantScaling):
    """Scale the instance count of a variant of an instance-based endpoint.

    Policies: ``scale_on_invocations`` (per instance), ``scale_on_concurrent_requests``
    (per model, high resolution), ``scale_on_metric`` (step scaling on any metric),
    ``scale_on_schedule``. Inference-component endpoints scale instances themselves (managed
    instance scaling): scale their components with ``ComponentScaling`` instead.
    """

    _CONCURRENT_REQUESTS_METRIC = (
        PredefinedMetric.VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION
    )
    _INVOCATIONS_METRIC = PredefinedMetric.VARIANT_INVOCATIONS_PER_INSTANCE
    _DIMENSION = INSTANCE_COUNT_DIMENSION
    _UNIT = "instances"
    _SCALES_ASYNC: ClassVar[bool] = False
    """Whether this class scales asynchronous endpoints (``AsyncScaling`` does)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: IEndpoint,
        max_instances: int,
        min_instances: int = 1,
        variant_name: str | None = None,
    ) -> None:
        """
        :param endpoint: an instance-based ``Endpoint``, or an imported endpoint.
        :param max_instances: most instances of the variant (at least 1).
        :param min_instances: fewest instances; default 1 (variants cannot scale to zero).
        :param variant_name: the variant scaled; default the endpoint's first variant.
        """
        self._check_min_instances(min_instances)
        if (
            not self._SCALES_ASYNC
            and isinstance(endpoint, Construct)
            and getattr(endpoint, "async_inference", None) is not None
        ):
            raise ValidationError(
                "endpoint",
                endpoint.node.path,
                "is asynchronous (async_inference): instance scaling on request metrics never "
                "sees its queued requests",
                "use AsyncScaling(endpoint=..., max_instances=...) and scale_on_backlog",
            )
        variant = variant_name or endpoint.default_variant_name
        if isinstance(endpoint, EndpointBase):
            endpoint.check_variant_scaling(variant, min_instances, max_instances)
        super().__init__(scope, id, endpoint, variant, (min_instances, max_instances))
        self.min_instances = min_instances
        """Fewest instances."""
        self.max_instances = max_instances
        """Most instances."""

    @staticmethod
    def _check_min_instances(min_instances: int) -> None:
        check_range(
            "min_instances",
            min_instances,
            minimum=1,
            fix="keep at least 1 instance; scale to zero is for inference components "
            "(ComponentScaling with min_copies=0) and asynchronous endpoints (AsyncScaling)",
        )

    def _check_scheduled_min(self, min_capacity: int | None) -> None:
        check_range(
            "min_capacity",
            min_capacity,
            minimum=1,
            fix="schedule at least 1 instance; variants cannot scale to zero",
        )


def _check_unique(scope: Construct, id: str, resource_id: str, dimension: str) -> None:
    """Application Auto Scaling allows one scalable target per resource and dimension."""
    for construct in Stack.of(scope).node.find_all():
        if (
            isinstance(construct, _Scaling)
            and construct.resource_id == resource_id
            and construct.scalable_dimension == dimension
        ):
            raise ValidationError(
                "scope/id",
                f"{scope.node.path}/{id}",
                f"{construct.node.path} already registers a scalable target for "
                f"{resource_id}; Application Auto Scaling allows one per resource and "
                "dimension",
                f"add the policies to {construct.node.path} instead of creating another",
            )


def _explicit_dependency(name: str, resource: object) -> CfnResource | None:
    """The resource to depend on when the ResourceId names it literally (no implicit Ref)."""
    if isinstance(resource, CfnResource) and not is_unresolved(name):
        return resource
    return None


def _check_endpoint_allows_zero(component: IInferenceComponent) -> bool:
    """Raise when the endpoint keeps instances; False when it cannot be checked (imported)."""
    endpoint = component.endpoint
    return isinstance(endpoint, EndpointBase) and endpoint.check_scale_to_zero()


def _check_component(component: IInferenceComponent, max_copies: int) -> None:
    resource = component.node.default_child if isinstance(component, Construct) else None
    if isinstance(resource, sagemaker.CfnInferenceComponent) and resource.runtime_config is None:
        raise ValidationError(
            "component",
            resource.node.path,
            "an adapter (base_component) has no copies of its own: it runs in its base "
            "component's copies",
            "scale the base component instead",
        )
    copy_count = getattr(component, "copy_count", None)
    if (
        isinstance(copy_count, int)
        and isinstance(max_copies, int)
        and not is_unresolved(copy_count)
        and not is_unresolved(max_copies)
        and copy_count > max_copies
    ):
        raise ValidationError(
            "max_copies",
            max_copies,
            f"is below the component's copy_count ({copy_count}); the first scaling action "
            "would remove copies right after the deployment",
            f"raise max_copies to at least {copy_count} or lower the component's copy_count",
        )
