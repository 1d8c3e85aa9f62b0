"""Application Auto Scaling facts for SageMaker: the scalable dimensions, the predefined metric
names, and how long target tracking's scale-out alarm takes to fire on each.

Pure (no aws_cdk): the scaling constructs emit these names, and ``review`` reads a synthesized
template's policies back with the same rules, so both state the same detection time.

Sources: the Application Auto Scaling API reference, ``ScalableDimension`` and
``PredefinedMetricSpecification`` (https://docs.aws.amazon.com/autoscaling/application/APIReference/API_PredefinedMetricSpecification.html);
SageMaker's "Automatic scaling of Amazon SageMaker AI models" guide: the ``...HighResolution``
concurrency metrics are published every 10 s and target tracking's scale-out alarm on them
uses 10-second periods; target tracking alarms fire after 3 datapoints above the target
(Application Auto Scaling "Target tracking scaling policies", the alarms it creates).
"""

from __future__ import annotations

SERVICE_NAMESPACE = "sagemaker"
"""The Application Auto Scaling service namespace of SageMaker resources."""
COPY_COUNT_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"
"""The scalable dimension of an inference component's copies."""
INSTANCE_COUNT_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
"""The scalable dimension of an instance-based variant's instances."""
PROVISIONED_CONCURRENCY_DIMENSION = "sagemaker:variant:DesiredProvisionedConcurrency"
"""The scalable dimension of a serverless variant's provisioned concurrency."""

INFERENCE_COMPONENT_CONCURRENT_REQUESTS_PER_COPY_HIGH_RESOLUTION = (
    "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
)
"""Predefined metric: in-flight requests per copy, streaming included; every 10 s."""
INFERENCE_COMPONENT_INVOCATIONS_PER_COPY = "SageMakerInferenceComponentInvocationsPerCopy"
"""Predefined metric: requests per copy per minute."""
VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION = (
    "SageMakerVariantConcurrentRequestsPerModelHighResolution"
)
"""Predefined metric: in-flight requests per model (instance), streaming included; every 10 s."""
VARIANT_INVOCATIONS_PER_INSTANCE = "SageMakerVariantInvocationsPerInstance"
"""Predefined metric: requests per instance per minute."""
VARIANT_PROVISIONED_CONCURRENCY_UTILIZATION = "SageMakerVariantProvisionedConcurrencyUtilization"
"""Predefined metric: used share of a serverless variant's provisioned concurrency (0-1)."""

STANDARD_PERIOD_SECONDS = 60
"""Period of target tracking's scale-out alarm on a standard (1-minute) SageMaker metric."""
HIGH_RESOLUTION_PERIOD_SECONDS = 10
"""Period of target tracking's scale-out alarm on a high-resolution SageMaker metric."""
TARGET_TRACKING_SCALE_OUT_DATAPOINTS = 3
"""Datapoints above the target before target tracking's scale-out alarm fires."""


def is_high_resolution(metric_name: str) -> bool:
    """True for a predefined metric published every 10 s: its name ends ``HighResolution``."""
    return metric_name.endswith("HighResolution")


def alarm_period_seconds(metric_name: str) -> int:
    """The period of the scale-out alarm target tracking creates on ``metric_name``."""
    return (
        HIGH_RESOLUTION_PERIOD_SECONDS
        if is_high_resolution(metric_name)
        else STANDARD_PERIOD_SECONDS
    )


def target_tracking_detection_seconds(metric_name: str) -> int:
    """How long target tracking on ``metric_name`` takes to notice a need to scale out."""
    return alarm_period_seconds(metric_name) * TARGET_TRACKING_SCALE_OUT_DATAPOINTS
