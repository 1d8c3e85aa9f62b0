"""Asynchronous inference: requests queued from S3, results written to S3 (and announced on
SNS), and backlog-driven scaling down to zero instances.

Facts (SageMaker developer guide "Asynchronous inference" and "Autoscale an asynchronous
endpoint"; API ``AsyncInferenceConfig``): the endpoint reads each request from the S3
``InputLocation`` given to ``InvokeEndpointAsync`` and writes the response under
``S3OutputPath`` (errors under ``S3FailurePath``), both with the execution role; SNS topics
announce success and failure; ``MaxConcurrentInvocationsPerInstance`` is 1-1000. Async variants
may scale to 0 instances: target tracking on ``ApproximateBacklogSizePerInstance``
(``AWS/SageMaker``, dimension ``EndpointName``, Average) brings them down, and the documented
scale-up-from-zero policy (step scaling, ``ChangeInCapacity`` +1 for metric >= 0, Average,
cooldown 300 s) fires on an alarm on ``HasBacklogWithoutCapacity`` (Average, 60 s, 2 of 2
datapoints, >= 1), because with no instance the per-instance backlog metric is not published.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import jsii
from aws_cdk import Duration
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct, IValidation

from .autoscaling import (
    STANDARD_METRIC_PERIOD,
    ScalingPolicy,
    ScalingPolicyKind,
    TrackingPolicyBase,
    VariantScaling,
    one_step_from_zero,
)
from .interfaces import IAsyncEndpoint
from .nag import acknowledge_wildcard_resources
from .validation import ValidationError, check_range, is_unresolved

if TYPE_CHECKING:
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_sns as sns

__all__ = [
    "INVOKE_ASYNC_ACTION",
    "AsyncInference",
    "AsyncScaling",
    "BacklogScaleFromZeroPolicy",
    "BacklogTrackingPolicy",
]

INVOKE_ASYNC_ACTION = "sagemaker:InvokeEndpointAsync"
SCALE_FROM_BACKLOG_COOLDOWN = Duration.seconds(300)
"""Cooldown of the documented scale-up-from-zero step policy."""
SCALE_FROM_BACKLOG_PERIOD = Duration.seconds(60)
SCALE_FROM_BACKLOG_DATAPOINTS = 2


def _prefix(prop: str, value: str) -> str:
    if is_unresolved(value):
        return value
    if value.startswith("/") or not value.endswith("/"):
        raise ValidationError(
            prop,
            value,
            "an S3 key prefix here must not start with '/' and must end with '/'",
            f"pass e.g. {value.strip('/') or 'async'}/",
        )
    return value


@dataclass(frozen=True, kw_only=True)
class AsyncInference:
    """``AsyncInferenceConfig`` of an instance-based ``Endpoint``: where requests and results
    live, who is told, and how many requests each instance takes at once."""

    bucket: s3.IBucket
    """The bucket for requests, results and failures."""
    output_prefix: str = "async/output/"
    """Key prefix of the results (``S3OutputPath``); default ``async/output/``."""
    failure_prefix: str = "async/failures/"
    """Key prefix of failed requests' errors (``S3FailurePath``); default ``async/failures/``."""
    input_prefix: str = "async/input/"
    """Key prefix callers upload requests under; the execution role may read only there and
    ``grant_invoke_async`` may write only there; default ``async/input/``."""
    success_topic: sns.ITopic | None = None
    """Announce each success on this topic; default no notification."""
    error_topic: sns.ITopic | None = None
    """Announce each failure on this topic; default no notification."""
    include_response_in_notifications: bool = False
    """Put the response itself into the notifications of the topics given; default False."""
    max_concurrent_invocations_per_instance: int | None = None
    """Requests one instance processes at once (1-1000); default SageMaker's choice."""
    kms_key: kms.IKey | None = None
    """Encrypt the results with this key; default the bucket's encryption."""

    def bind(
        self, roles: Sequence[iam.IRole]
    ) -> sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty:
        """Check the settings, grant ``roles`` (the models' execution roles) what SageMaker does
        with them, and return the L1 property."""
        prefixes = [
            _prefix(prop, value)
            for prop, value in (
                ("async_inference.output_prefix", self.output_prefix),
                ("async_inference.failure_prefix", self.failure_prefix),
                ("async_inference.input_prefix", self.input_prefix),
            )
        ]
        if len(set(prefixes)) != len(prefixes):
            raise ValidationError(
                "async_inference.output_prefix/failure_prefix/input_prefix",
                prefixes,
                "requests, results and failures must live under different prefixes",
                "give each its own prefix",
            )
        check_range(
            "async_inference.max_concurrent_invocations_per_instance",
            self.max_concurrent_invocations_per_instance,
            minimum=1,
            maximum=1000,
        )
        if self.include_response_in_notifications and not (self.success_topic or self.error_topic):
            raise ValidationError(
                "async_inference.include_response_in_notifications",
                True,
                "there is no topic to include the response in",
                "pass success_topic and/or error_topic, or drop the flag",
            )
        for role in roles:
            self._grant_objects(role, ["s3:GetObject"], [self.input_prefix])
            self._grant_objects(role, ["s3:PutObject"], [self.output_prefix, self.failure_prefix])
            for topic in (self.success_topic, self.error_topic):
                if topic is not None:
                    topic.grant_publish(role)
            self._grant_bucket_key(role)
            if self.kms_key is not None:
                iam.Grant.add_to_principal(
                    grantee=role,
                    actions=["kms:Encrypt", "kms:GenerateDataKey"],
                    resource_arns=[self.kms_key.key_arn],
                )
        include = [
            name
            for name, topic in (
                ("SUCCESS_NOTIFICATION_TOPIC", self.success_topic),
                ("ERROR_NOTIFICATION_TOPIC", self.error_topic),
            )
            if topic is not None and self.include_response_in_notifications
        ]
        notification = (
            sagemaker.CfnEndpointConfig.AsyncInferenceNotificationConfigProperty(
                success_topic=self.success_topic.topic_arn if self.success_topic else None,
                error_topic=self.error_topic.topic_arn if self.error_topic else None,
                include_inference_response_in=include or None,
            )
            if self.success_topic or self.error_topic
            else None
        )
        return sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty(
            output_config=sagemaker.CfnEndpointConfig.AsyncInferenceOutputConfigProperty(
                s3_output_path=self.bucket.s3_url_for_object(self.output_prefix),
                s3_failure_path=self.bucket.s3_url_for_object(self.failure_prefix),
                notification_config=notification,
                kms_key_id=self.kms_key.key_arn if self.kms_key else None,
            ),
            client_config=sagemaker.CfnEndpointConfig.AsyncInferenceClientConfigProperty(
                max_concurrent_invocations_per_instance=self.max_concurrent_invocations_per_instance
            )
            if self.max_concurrent_invocations_per_instance is not None
            else None,
        )

    def grant_invoke(self, grantee: iam.IGrantable, endpoint_arn: str) -> iam.Grant:
        """``InvokeEndpointAsync`` on the endpoint, writing requests under ``input_prefix`` and
        reading results and failures (the caller polls ``OutputLocation``)."""
        self._grant_objects(grantee, ["s3:PutObject"], [self.input_prefix])
        self._grant_objects(grantee, ["s3:GetObject"], [self.output_prefix, self.failure_prefix])
        self._grant_bucket_key(grantee)
        if self.kms_key is not None:
            iam.Grant.add_to_principal(
                grantee=grantee, actions=["kms:Decrypt"], resource_arns=[self.kms_key.key_arn]
            )
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=[INVOKE_ASYNC_ACTION], resource_arns=[endpoint_arn]
        )

    def _grant_bucket_key(self, grantee: iam.IGrantable) -> None:
        """The bucket's own KMS key, if it has one: SSE-KMS needs ``kms:Decrypt`` to read an
        object and ``kms:GenerateDataKey`` to write one (S3 user guide, "Permissions for
        SSE-KMS"). The execution role reads requests and writes results; callers write
        requests and read results. No wildcard action, so no cdk-nag finding."""
        key = self.bucket.encryption_key
        if key is not None:
            key.grant(grantee, "kms:Decrypt", "kms:GenerateDataKey")

    def _grant_objects(
        self, grantee: iam.IGrantable, actions: list[str], prefixes: list[str]
    ) -> None:
        """``actions`` on the objects under ``prefixes`` only, acknowledged for cdk-nag: each
        request and result has its own key, unknown until it is made."""
        resources = [self.bucket.arn_for_objects(f"{prefix}*") for prefix in prefixes]
        iam.Grant.add_to_principal(grantee=grantee, actions=actions, resource_arns=resources)
        principal = grantee.grant_principal
        if isinstance(principal, Construct):
            acknowledge_wildcard_resources(
                principal,
                resources,
                "Asynchronous requests and results get one S3 object each, named when they are "
                "made; the wildcard stays under the configured prefix.",
            )


def _backlog_metric(endpoint_name: str, metric_name: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace="AWS/SageMaker",
        metric_name=metric_name,
        dimensions_map={"EndpointName": endpoint_name},
        statistic="Average",
        period=STANDARD_METRIC_PERIOD,
    )


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


@jsii.implements(IValidation)
class _NeedsBacklogTracking:
    """At synth: scaling to zero needs the backlog policy that takes the last instance away."""

    def __init__(self, scaling: AsyncScaling) -> None:
        self._scaling = scaling

    def validate(self) -> list[str]:
        scaling = self._scaling
        if scaling.min_instances != 0 or any(
            isinstance(policy, BacklogTrackingPolicy) for policy in scaling.policies
        ):
            return []
        error = ValidationError(
            "min_instances",
            0,
            "scale to zero needs the backlog target-tracking policy, which releases the last "
            "instance when the queue is empty",
            "call scale_on_backlog(target=...) on it",
        )
        return [str(error)]


class AsyncScaling(VariantScaling):
    """Scale a variant of an asynchronous ``Endpoint`` on its queue, down to zero instances.

    ``min_instances=0`` (the default) adds ``BacklogScaleFromZeroPolicy``; add
    ``scale_on_backlog`` (required at 0, it releases the last instance). The other
    ``VariantScaling`` policies work too.
    """

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
            self.node.add_validation(_NeedsBacklogTracking(self))

    @staticmethod
    def _check_min_instances(min_instances: int) -> None:
        check_range("min_instances", min_instances, minimum=0)

    def _check_scheduled_min(self, min_capacity: int | None) -> None:
        check_range("min_capacity", min_capacity, minimum=0)
        if min_capacity == 0 and self.min_instances != 0:
            raise ValidationError(
                "min_capacity",
                0,
                "a scheduled minimum of 0 instances needs the scale-from-zero policy",
                "construct the AsyncScaling with min_instances=0, or schedule at least 1",
            )

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
