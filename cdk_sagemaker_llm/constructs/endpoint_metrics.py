"""Endpoint metrics: what SageMaker publishes to CloudWatch for an endpoint, and how often.

Renders the endpoint config's ``MetricsConfig``. Fields and allowed values follow botocore's
SageMaker service model (``MetricsConfig``: ``EnableEnhancedMetrics`` since botocore 1.41.0,
``EnableDetailedObservability`` since 1.43.31, ``MetricPublishFrequencyInSeconds``; the API
reference lists 10, 30, 60, 120, 180, 240 and 300 s) and CloudFormation's
``AWS::SageMaker::EndpointConfig`` schema, which has ``MetricsConfig`` (create-only: changing it
makes a new endpoint config, as every endpoint-config change does) with the same enum.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_sagemaker as sagemaker

from ..prop_types import typed_props
from .component_options import publish_frequency_seconds
from .validation import ValidationError

__all__ = ["EndpointMetrics"]


@typed_props
@dataclass(frozen=True, kw_only=True)
class EndpointMetrics:
    """``MetricsConfig`` of an endpoint (instance-based or inference-component).

    Every field defaults to None: SageMaker's default applies (enhanced metrics off, detailed
    observability on for endpoint configs created since it exists, 60 s publication).
    """

    enhanced_metrics: bool | None = None
    """``EnableEnhancedMetrics``: utilization and invocation metrics per instance, and per
    container on an inference-component endpoint; default SageMaker's, off."""
    detailed_observability: bool | None = None
    """``EnableDetailedObservability``: the containers' Prometheus metrics (latency, errors,
    throughput; the path is found for AWS's containers, ``/metrics`` on port 8080 otherwise or
    ``ContainerMetrics`` on a component), per-GPU metrics per inference component, per-instance
    host metrics and component placement metrics; default SageMaker's, on."""
    publish_frequency: Duration | None = None
    """``MetricPublishFrequencyInSeconds``: 10, 30, 60, 120, 180, 240 or 300 s; default 60 s.
    It paces utilization metrics; invocation metrics too with ``enhanced_metrics``, and the
    detailed-observability metrics with ``detailed_observability``."""

    def render(self, prop: str) -> sagemaker.CfnEndpointConfig.MetricsConfigProperty:
        """Check the frequency and return the L1 property."""
        if (
            self.enhanced_metrics is None
            and self.detailed_observability is None
            and self.publish_frequency is None
        ):
            raise ValidationError(
                prop,
                "EndpointMetrics()",
                "sets nothing, so SageMaker's defaults would apply anyway",
                "set enhanced_metrics, detailed_observability or publish_frequency, or drop "
                f"{prop}",
            )
        return sagemaker.CfnEndpointConfig.MetricsConfigProperty(
            enable_enhanced_metrics=self.enhanced_metrics,
            enable_detailed_observability=self.detailed_observability,
            metric_publish_frequency_in_seconds=publish_frequency_seconds(
                f"{prop}.publish_frequency", self.publish_frequency
            ),
        )
