"""Asynchronous inference: requests queued from S3, results written to S3 (and announced on
SNS). Backlog-driven scaling down to zero instances is ``async_scaling`` (a module of its own,
so an endpoint that is not asynchronous loads neither this module's S3 bindings nor the
scaling ones).

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

from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from ..prop_types import typed_props
from .nag import acknowledge_key_grant, acknowledge_wildcard_resources
from .validation import ValidationError, check_range, is_unresolved

if TYPE_CHECKING:  # annotations only: importing these costs synth time
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_s3 as s3
    from aws_cdk import aws_sns as sns

__all__ = ["INVOKE_ASYNC_ACTION", "AsyncInference"]

INVOKE_ASYNC_ACTION = "sagemaker:InvokeEndpointAsync"


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


@typed_props
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
                    if getattr(topic, "master_key", None) is not None:
                        acknowledge_key_grant(
                            role,
                            "Topic.grant_publish's kms:GenerateDataKey* on exactly the "
                            "encrypted topic's key: SageMaker publishes the notifications",
                            ["kms:GenerateDataKey*"],
                        )
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
