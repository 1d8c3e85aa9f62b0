"""Inference-component options: what a component serves (``ComponentModel``), the resources
each copy reserves (``CopyResources``), copy scheduling, container metrics, and per-instance-type
specifications for endpoints with instance pools.

Ranges and enums follow the SageMaker API reference (``InferenceComponentSchedulingConfig``,
``InferenceComponentAvailabilityZoneBalance``, ``MetricsEndpoint``,
``CreateInferenceComponent.Specifications``, ``InferenceComponentSpecification``,
``InferenceComponentComputeResourceRequirements``) and CloudFormation's
``AWS::SageMaker::InferenceComponent`` schema; every property exists in aws-cdk-lib 2.275's L1.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from aws_cdk import Duration, Size
from aws_cdk import aws_sagemaker as sagemaker

from ..catalog.instance_types import InstanceType
from ..prop_types import typed_factory, typed_props
from .images import ContainerImage
from .interfaces import IInferenceComponent
from .model import ModelBase
from .model_source import ModelSource
from .serving_options import ServingOptions
from .validation import ValidationError, check_range, is_unresolved, whole_seconds

__all__ = [
    "AzBalanceEnforcement",
    "ComponentModel",
    "ComponentScheduling",
    "ComponentSpecification",
    "ContainerMetrics",
    "CopyResources",
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
    seconds = whole_seconds(prop, frequency)
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
    """A model for this type (e.g. a different tensor-parallel degree); default what the
    component ``serves``."""
    accelerators: int | None = None
    """Accelerators per copy on this type; default the component's ``resources.accelerators``
    rule."""
    min_memory: Size | None = None
    """Host memory per copy on this type; default the component's ``resources.min_memory``."""
    max_memory: Size | None = None
    """Host memory limit per copy on this type; default the component's
    ``resources.max_memory``."""
    cpu_cores: float | None = None
    """CPU cores per copy on this type; default the component's ``resources.cpu_cores``."""


@typed_props
@dataclass(frozen=True, kw_only=True)
class CopyResources:
    """``ComputeResourceRequirements``: what each copy of a component reserves on one instance
    (SageMaker API reference, ``InferenceComponentComputeResourceRequirements``)."""

    min_memory: Size | None = None
    """Host memory reserved per copy (at least 128 MiB); required for a component that has
    copies of its own."""
    accelerators: int | None = None
    """Accelerators per copy; default the model's tensor-parallel degree, or 1 on accelerated
    instances."""
    max_memory: Size | None = None
    """Host memory limit per copy; default none."""
    cpu_cores: float | None = None
    """CPU cores reserved per copy (at least 0.25); default none."""


@typed_props
class ComponentModel:
    """What an inference component serves: ``ComponentModel.of(model)``,
    ``ComponentModel.from_image(image, ...)`` or ``ComponentModel.lora_adapter(base, ...)``.

    They map to ``InferenceComponentSpecification``'s ``ModelName``, ``Container`` and
    ``BaseInferenceComponentName`` (SageMaker API reference, ``CreateInferenceComponent``).
    """

    def __init__(
        self,
        *,
        model: ModelBase | None,
        image: ContainerImage | None,
        artifact: ModelSource | None,
        serving: ServingOptions | None,
        environment: Mapping[str, str] | None,
        container_metrics: ContainerMetrics | None,
        base_component: IInferenceComponent | None,
        lora_rank: int | None,
    ) -> None:
        """Use the factories."""
        self.model = model
        """The Model served (``of``); None otherwise."""
        self.image = image
        """The container run directly (``from_image``); None otherwise."""
        self.artifact = artifact
        """The container's model data, or an adapter's weights; None when not given."""
        self.serving = serving
        """The container's typed serving options (``from_image``); None when not given."""
        self.environment = environment
        """The container's extra variables (``from_image``); None when not given."""
        self.container_metrics = container_metrics
        """The container's Prometheus metrics to publish (``from_image``); None: off."""
        self.base_component = base_component
        """The component an adapter runs in (``lora_adapter``); None otherwise."""
        self.lora_rank = lora_rank
        """The adapter's LoRA rank (``lora_adapter``); None when not given."""

    @staticmethod
    @typed_factory
    def of(model: ModelBase) -> ComponentModel:
        """Serve a Model (``ModelName``): its container, data and serving options."""
        return ComponentModel(
            model=model,
            image=None,
            artifact=None,
            serving=None,
            environment=None,
            container_metrics=None,
            base_component=None,
            lora_rank=None,
        )

    @staticmethod
    @typed_factory
    def from_image(
        image: ContainerImage,
        *,
        artifact: ModelSource | None = None,
        serving: ServingOptions | None = None,
        environment: Mapping[str, str] | None = None,
        container_metrics: ContainerMetrics | None = None,
    ) -> ComponentModel:
        """Run a container directly (``Container``), pulled with the endpoint's role.

        :param image: the container image.
        :param artifact: a Hugging Face id or an S3 ``.tar.gz``; default none.
        :param serving: typed serving options; default none.
        :param environment: extra container variables (at most 16 in all, the derived ones
            included); default none.
        :param container_metrics: publish the container's Prometheus metrics to CloudWatch;
            default off.
        """
        return ComponentModel(
            model=None,
            image=image,
            artifact=artifact,
            serving=serving,
            environment=environment,
            container_metrics=container_metrics,
            base_component=None,
            lora_rank=None,
        )

    @staticmethod
    @typed_factory
    def lora_adapter(
        base_component: IInferenceComponent, artifact: ModelSource, *, lora_rank: int | None = None
    ) -> ComponentModel:
        """A LoRA adapter (``BaseInferenceComponentName``) that shares its base component's
        copies; its base's LMI LoRA options are set or checked for it.

        :param base_component: the component that serves the base model.
        :param artifact: the adapter weights, an S3 ``.tar.gz``
            (``ModelSource.from_s3_tarball``).
        :param lora_rank: the adapter's LoRA rank (``r`` in its ``adapter_config.json``),
            1-512; required when the base runs LMI (see ``LmiLora``).
        """
        return ComponentModel(
            model=None,
            image=None,
            artifact=artifact,
            serving=None,
            environment=None,
            container_metrics=None,
            base_component=base_component,
            lora_rank=lora_rank,
        )
