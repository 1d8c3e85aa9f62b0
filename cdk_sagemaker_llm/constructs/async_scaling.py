"""Backlog-driven scaling of an asynchronous endpoint, down to zero instances.

Facts (SageMaker developer guide "Autoscale an asynchronous endpoint"): async variants may
scale to 0 instances: target tracking on ``ApproximateBacklogSizePerInstance``
(``AWS/SageMaker``, dimension ``EndpointName``, Average) brings them down, and the documented
scale-up-from-zero policy (step scaling, ``ChangeInCapacity`` +1 for metric >= 0, Average,
cooldown 300 s) fires on an alarm on ``HasBacklogWithoutCapacity`` (Average, 60 s, 2 of 2
datapoints, >= 1), because with no instance the per-instance backlog metric is not published.
"""

from __future__ import annotations

from typing import ClassVar

from aws_cdk import Duration
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from ..prop_types import typed_props
from .autoscaling import VariantScaling
from .interfaces import IAsyncEndpoint
from .scaling_policies import (
    STANDARD_METRIC_PERIOD,
    ScalingPolicy,
    ScalingPolicyKind,
    TrackingPolicyBase,
    one_step_from_zero,
)
from .validation import ValidationError, check_range, check_sagemaker_name, is_unresolved

__all__ = ["AsyncScaling", "BacklogScaleFromZeroPolicy", "BacklogTrackingPolicy"]

SCALE_FROM_BACKLOG_COOLDOWN = Duration.seconds(300)
"""Cooldown of the documented scale-up-from-zero step policy."""
SCALE_FROM_BACKLOG_PERIOD = Duration.seconds(60)
SCALE_FROM_BACKLOG_DATAPOINTS = 2


def _backlog_metric(endpoint_name: str, metric_name: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace="AWS/SageMaker",
        metric_name=metric_name,
        dimensions_map={"EndpointName": endpoint_name},
        statistic="Average",
        period=STANDARD_METRIC_PERIOD,
    )


@typed_props
class BacklogTrackingPolicy(TrackingPolicyBase):
    """Target tracking on ``ApproximateBacklogSizePerInstance`` (a customized metric): queued
    requests per instance. Application Auto Scaling owns the alarms (60 s x 3)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        scalable_target: appscaling.CfnScalableTarget,
        endpoint_name: str,
        target: float,
        scale_in_cooldown: Duration | None = None,
        scale_out_cooldown: Duration | None = None,
    ) -> None:
        """
        :param scalable_target: the variant's instance-count target.
        :param endpoint_name: the asynchronous endpoint.
        :param target: queued requests per instance to hold (> 0).
        :param scale_in_cooldown: 0-3600 s; default Application Auto Scaling's (300 s).
        :param scale_out_cooldown: 0-3600 s; default Application Auto Scaling's (300 s).
        """
        check_sagemaker_name("endpoint_name", endpoint_name)
        super().__init__(
            scope,
            id,
            scalable_target=scalable_target,
            target=target,
            metric_name="ApproximateBacklogSizePerInstance",
            customized=appscaling.CfnScalingPolicy.CustomizedMetricSpecificationProperty(
                metric_name="ApproximateBacklogSizePerInstance",
                namespace="AWS/SageMaker",
                dimensions=[
                    appscaling.CfnScalingPolicy.MetricDimensionProperty(
                        name="EndpointName", value=endpoint_name
                    )
                ],
                statistic="Average",
            ),
            detection_period=STANDARD_METRIC_PERIOD,
            scale_in_cooldown=scale_in_cooldown,
            scale_out_cooldown=scale_out_cooldown,
            disable_scale_in=False,
        )


@typed_props
class BacklogScaleFromZeroPolicy(ScalingPolicy):
    """The documented scale-up-from-zero recipe for asynchronous endpoints: +1 instance when
    requests wait and no instance runs (alarm on ``HasBacklogWithoutCapacity``)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        scaling_target: appscaling.IScalableTarget,
        endpoint_name: str,
    ) -> None:
        """
        :param scaling_target: the variant's instance-count target.
        :param endpoint_name: the asynchronous endpoint the alarm watches.
        """
        check_sagemaker_name("endpoint_name", endpoint_name)
        super().__init__(scope, id)
        self.kind = ScalingPolicyKind.SCALE_FROM_ZERO
        self.detection_period = SCALE_FROM_BACKLOG_PERIOD
        self.detection_datapoints = SCALE_FROM_BACKLOG_DATAPOINTS
        self.description = "scale from zero: +1 instance on HasBacklogWithoutCapacity >= 1"
        self.action, self.alarm = one_step_from_zero(
            self,
            scaling_target,
            cooldown=SCALE_FROM_BACKLOG_COOLDOWN,
            aggregation=appscaling.MetricAggregationType.AVERAGE,
            alarm_id="BacklogWithoutCapacityAlarm",
            alarm_description=(
                f"Requests to {endpoint_name} wait with no instance running: add one."
            ),
            metric=_backlog_metric(endpoint_name, "HasBacklogWithoutCapacity").with_(
                period=SCALE_FROM_BACKLOG_PERIOD
            ),
            datapoints=SCALE_FROM_BACKLOG_DATAPOINTS,
            treat_missing_data=cloudwatch.TreatMissingData.MISSING,
        )
        """The single-step scaling policy, and the ``HasBacklogWithoutCapacity`` alarm that
        fires it."""
        self.policy_arn = self.action.scaling_policy_arn


@typed_props
class AsyncScaling(VariantScaling):
    """Scale a variant of an asynchronous ``Endpoint`` on its queue, down to zero instances.

    ``min_instances=0`` (the default) adds ``BacklogScaleFromZeroPolicy`` and needs a policy
    that releases the last instance: ``scale_on_backlog``, or ``scale_on_metric`` with a
    scale-in step (a negative change, e.g. on ``metric_backlog_size()``); without either,
    synth fails. The other ``VariantScaling`` policies on metrics an asynchronous endpoint
    publishes (step scaling, schedules) work too; the request-metric ones are refused.
    """

    _SCALES_ASYNC: ClassVar[bool] = True
    _SCHEDULED_ZERO_FIX = (
        "schedule at least 1 instance, or construct the AsyncScaling with min_instances=0: "
        "0 instances need the scale-from-zero policy"
    )

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: IAsyncEndpoint,
        max_instances: int,
        min_instances: int = 0,
        variant_name: str | None = None,
    ) -> None:
        """
        :param endpoint: an ``Endpoint`` created with ``async_inference``.
        :param max_instances: most instances (at least 1).
        :param min_instances: fewest instances; default 0 (requests wait in the queue while
            the first instance starts).
        :param variant_name: default the endpoint's first variant.
        """
        if getattr(endpoint, "async_inference", None) is None:
            raise ValidationError(
                "endpoint",
                endpoint.node.path,
                "is not an asynchronous endpoint, so it has no backlog to scale on",
                "create the Endpoint with async_inference=AsyncInference(...), or use "
                "VariantScaling",
            )
        super().__init__(
            scope,
            id,
            endpoint=endpoint,
            max_instances=max_instances,
            min_instances=min_instances,
            variant_name=variant_name,
        )
        self.scale_from_zero: BacklogScaleFromZeroPolicy | None = None
        """The scale-up-from-zero policy and alarm when ``min_instances`` is 0, else None."""
        if min_instances == 0 and not is_unresolved(min_instances):
            self.scale_from_zero = BacklogScaleFromZeroPolicy(
                self,
                "ScaleFromZero",
                scaling_target=self._target_ref,
                endpoint_name=endpoint.endpoint_name,
            )
            self.policies.append(self.scale_from_zero)
            self._require_scale_in(
                ValidationError(
                    "min_instances",
                    0,
                    "scale to zero needs a policy that scales in, but this endpoint has none, "
                    "so it would never release its last instance",
                    "call scale_on_backlog(target=...) on it (it releases the last instance "
                    "when the queue is empty), or give a scale_on_metric step policy a step "
                    "with a negative change",
                )
            )

    @staticmethod
    def _check_min_instances(min_instances: int) -> None:
        check_range("min_instances", min_instances, minimum=0)

    @property
    def _scales_to_zero(self) -> bool:
        return self.scale_from_zero is not None

    def scale_on_backlog(
        self,
        *,
        target: float,
        scale_in_cooldown: Duration | None = None,
        scale_out_cooldown: Duration | None = None,
    ) -> BacklogTrackingPolicy:
        """Hold queued requests per instance at ``target`` (60 s x 3 = 3 minutes to notice).

        :param target: queued requests per instance (> 0), e.g. 5 (AWS's example).
        :param scale_in_cooldown: 0-3600 s; default Application Auto Scaling's (300 s).
        :param scale_out_cooldown: 0-3600 s; default Application Auto Scaling's (300 s).
        """
        if any(isinstance(policy, BacklogTrackingPolicy) for policy in self.policies):
            raise ValidationError(
                "scale_on_backlog",
                target,
                "this scalable target already tracks the backlog; two policies on one metric "
                "fight each other",
                "keep one backlog policy (change its target instead)",
            )
        return self._added(
            BacklogTrackingPolicy(
                self,
                "BacklogPolicy",
                scalable_target=self.scalable_target,
                endpoint_name=self.endpoint.endpoint_name,
                target=target,
                scale_in_cooldown=scale_in_cooldown,
                scale_out_cooldown=scale_out_cooldown,
            )
        )

    def metric_backlog_size(self) -> cloudwatch.Metric:
        """Requests queued at the endpoint (``ApproximateBacklogSize``, Average per minute)."""
        return _backlog_metric(self.endpoint.endpoint_name, "ApproximateBacklogSize")
