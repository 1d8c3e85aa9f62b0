"""Inference-component options: copy scheduling, container metrics, and per-instance-type
specifications for endpoints with instance pools.

Ranges and enums follow the SageMaker API reference (``InferenceComponentSchedulingConfig``,
``InferenceComponentAvailabilityZoneBalance``, ``MetricsEndpoint``,
``CreateInferenceComponent.Specifications``) and CloudFormation's
``AWS::SageMaker::InferenceComponent`` schema; every property exists in aws-cdk-lib 2.275's L1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from aws_cdk import Duration, Size
from aws_cdk import aws_sagemaker as sagemaker

from ..catalog.instance_types import InstanceType
from ..prop_types import typed_props
from .model import ModelBase
from .validation import ValidationError, check_range, is_unresolved

__all__ = [
    "AzBalanceEnforcement",
    "ComponentScheduling",
    "ComponentSpecification",
    "ContainerMetrics",
    "PlacementStrategy",
]

METRIC_PUBLISH_FREQUENCIES = (10, 30, 60, 120, 180, 240, 300)
"""Publish frequencies (seconds) the API reference lists for ``MetricPublishFrequencyInSeconds``."""

_METRICS_PATH = re.compile(r"^/(?!.*\.\.)[a-zA-Z0-9/_.\-]+$")


class PlacementStrategy(Enum):
    """How SageMaker places a component's copies on instances."""

    SPREAD = "SPREAD"
    """Spread copies over instances (resilience)."""
    BINPACK = "BINPACK"
    """Pack copies onto as few instances as possible (cost; frees instances to scale in)."""


class AzBalanceEnforcement(Enum):
    """How strictly copies are balanced over availability zones (one value in the API)."""

    PERMISSIVE = "PERMISSIVE"
    """Balance when possible; place the copy anyway when it is not."""


@typed_props
@dataclass(frozen=True, kw_only=True)
class ComponentScheduling:
    """``SchedulingConfig``: where new copies go when the component scales out or in."""

    placement: PlacementStrategy
    """Spread or bin-pack."""
    az_balance: AzBalanceEnforcement = AzBalanceEnforcement.PERMISSIVE
    """Availability-zone balance; default PERMISSIVE (the only mode). CloudFormation's schema
    requires ``AvailabilityZoneBalance`` whenever ``SchedulingConfig`` is set, so it is always
    emitted."""
    max_az_imbalance: int | None = None
    """Most copies one zone may have above another (0-100); default SageMaker's."""

    def render(
        self, prop: str
    ) -> sagemaker.CfnInferenceComponent.InferenceComponentSchedulingConfigProperty:
        """Check the range and return the L1 property."""
        check_range(f"{prop}.max_az_imbalance", self.max_az_imbalance, minimum=0, maximum=100)
        return sagemaker.CfnInferenceComponent.InferenceComponentSchedulingConfigProperty(
            placement_strategy=self.placement.value,
            availability_zone_balance=sagemaker.CfnInferenceComponent.InferenceComponentAvailabilityZoneBalanceProperty(
                enforcement_mode=self.az_balance.value, max_imbalance=self.max_az_imbalance
            ),
        )


@typed_props
@dataclass(frozen=True, kw_only=True)
class ContainerMetrics:
    """``ContainerMetricsConfig``: SageMaker scrapes the container's Prometheus endpoint and
    publishes the metrics to CloudWatch (e.g. vLLM's ``/metrics``)."""

    path: str = "/metrics"
    """The container's Prometheus path; default ``/metrics``."""
    publish_frequency: Duration | None = None
    """10, 30, 60, 120, 180, 240 or 300 s; default SageMaker's, 60 s."""

    def render(self, prop: str) -> sagemaker.CfnInferenceComponent.ContainerMetricsConfigProperty:
        """Check the path and frequency and return the L1 property."""
        if not is_unresolved(self.path) and (
            len(self.path) > 256 or not _METRICS_PATH.match(self.path)
        ):
            raise ValidationError(
                f"{prop}.path",
                self.path,
                "a metrics path starts with '/', has at most 256 letters, digits, '/', '_', "
                "'.' or '-', and no '..'",
                "pass the container's metrics path, e.g. /metrics",
            )
        return sagemaker.CfnInferenceComponent.ContainerMetricsConfigProperty(
            metrics_endpoints=[
                sagemaker.CfnInferenceComponent.MetricsEndpointProperty(
                    metrics_endpoint_path=self.path,
                    metric_publish_frequency_in_seconds=publish_frequency_seconds(
                        f"{prop}.publish_frequency", self.publish_frequency
                    ),
                )
            ]
        )


def publish_frequency_seconds(prop: str, frequency: Duration | None) -> int | None:
    """A metric publish frequency in whole seconds; ValidationError unless it is one of
    ``METRIC_PUBLISH_FREQUENCIES``."""
    if frequency is None:
        return None
    seconds = frequency.to_seconds()
    if seconds not in METRIC_PUBLISH_FREQUENCIES:
        raise ValidationError(
            f"{prop} (seconds)",
            seconds,
            f"must be one of {list(METRIC_PUBLISH_FREQUENCIES)}",
            "pick one of those, e.g. Duration.seconds(60)",
        )
    return int(seconds)


@typed_props
@dataclass(frozen=True, kw_only=True)
class ComponentSpecification:
    """What a component runs on one instance type of an endpoint with instance pools
    (``Specifications``); a field left None takes the component's own value."""

    instance_type: InstanceType
    """One of the endpoint's instance types."""
    model: ModelBase | None = None
    """A model for this type (e.g. a different tensor-parallel degree); default the
    component's model (or image)."""
    accelerators: int | None = None
    """Accelerators per copy on this type; default the component's rule."""
    min_memory: Size | None = None
    """Host memory per copy on this type; default the component's ``min_memory``."""
    max_memory: Size | None = None
    """Host memory limit per copy on this type; default the component's ``max_memory``."""
    cpu_cores: float | None = None
    """CPU cores per copy on this type; default the component's ``cpu_cores``."""
