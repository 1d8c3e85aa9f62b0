"""Production-variant options shared by both endpoint kinds: instance pools (fallback instance
types), the provisioning timeout, routing, capacity reservations, the inference AMI, SSM access
(``VariantPlatform``), the container startup limits (``ContainerStartup``), the storage volume
(``StorageVolume``) and managed instance scaling with its scale-in policy
(``ManagedInstanceScaling``).

Ranges and enums follow the SageMaker API reference (botocore ``sagemaker`` service model:
``InstancePool``, ``ProductionVariant``, ``ProductionVariantRoutingConfig``,
``PrefixAwareRoutingConfig``, ``ProductionVariantCapacityReservationConfig``,
``ProductionVariantManagedInstanceScalingScaleInPolicy``) and CloudFormation's
``AWS::SageMaker::EndpointConfig`` schema; every property here exists in aws-cdk-lib 2.275's L1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration, Size
from aws_cdk import aws_sagemaker as sagemaker

from ..catalog.instance_types import InstanceType
from ..prop_types import typed_props
from .model import ModelBase
from .validation import (
    ValidationError,
    check_range,
    is_unresolved,
    note_unchecked,
    whole_seconds,
)

if TYPE_CHECKING:  # annotations only: importing it costs synth time
    from aws_cdk import aws_kms as kms

__all__ = [
    "CapacityReservation",
    "ContainerStartup",
    "InferenceAmiVersion",
    "InstancePool",
    "ManagedInstanceScaling",
    "PrefixAwareRouting",
    "RoutingStrategy",
    "ScaleInPolicy",
    "ScaleInStrategy",
    "StorageVolume",
    "VariantPlatform",
]

MAX_INSTANCE_POOLS = 5
"""A variant lists 1 to 5 instance pools, priorities 1 (first tried) to 5."""


class RoutingStrategy(Enum):
    """How an endpoint spreads requests over instances (``RoutingConfig.RoutingStrategy``).

    The API also knows ``KV_AWARE``, but CloudFormation's schema for
    ``AWS::SageMaker::EndpointConfig`` does not (its enum is the three below), so it is not
    offered: the template would be rejected.
    """

    LEAST_OUTSTANDING_REQUESTS = "LEAST_OUTSTANDING_REQUESTS"
    RANDOM = "RANDOM"
    PREFIX_AWARE = "PREFIX_AWARE"
    """Requests sharing a prefix go to the same instance (and copy): KV-cache reuse."""


@typed_props
@dataclass(frozen=True, kw_only=True)
class PrefixAwareRouting:
    """``PrefixAwareRoutingConfig``: the two settings ``RoutingStrategy.PREFIX_AWARE`` needs."""

    prefix_length: int
    """Bytes of the request body (characters of the messages for the OpenAI-compatible API)
    that make the routing key: 1,024-65,536. Cover the shared system prompt plus some unique
    content."""
    concurrency_threshold: int
    """In-flight requests on the chosen instance or copy at which the next request with that
    prefix goes elsewhere: 1-1,024. Pick what the smallest copy serves concurrently."""

    def render(self, prop: str) -> sagemaker.CfnEndpointConfig.PrefixAwareRoutingConfigProperty:
        """Check the ranges and return the L1 property."""
        check_range(f"{prop}.prefix_length", self.prefix_length, minimum=1024, maximum=65536)
        check_range(
            f"{prop}.concurrency_threshold", self.concurrency_threshold, minimum=1, maximum=1024
        )
        return sagemaker.CfnEndpointConfig.PrefixAwareRoutingConfigProperty(
            prefix_length=self.prefix_length, concurrency_threshold=self.concurrency_threshold
        )


@typed_props
@dataclass(frozen=True, kw_only=True)
class InstancePool:
    """One instance type a variant may be provisioned on, by priority (``InstancePool``).

    SageMaker provisions from priority 1 and falls back to the next pool on an insufficient
    capacity error, until the variant has its instances, the pools are exhausted or
    ``provision_timeout`` passes (docs: "Deploy to multiple instance types with instance pools").
    """

    instance_type: InstanceType
    """The instance type of this pool."""
    priority: int
    """1 (tried first) to 5."""
    model: ModelBase | None = None
    """Serve this model on this pool instead of the variant's (``ModelNameOverride``), e.g. a
    build compiled or sharded for this instance type; default the variant's model."""


class ScaleInStrategy(Enum):
    """How managed instance scaling releases instances (``ScaleInPolicy.Strategy``)."""

    IDLE_RELEASE = "IDLE_RELEASE"
    """Release instances that host no component copy."""
    CONSOLIDATION = "CONSOLIDATION"
    """Move copies onto fewer instances to release more (honours each component's scheduling,
    e.g. it never worsens an availability-zone imbalance)."""


@typed_props
@dataclass(frozen=True, kw_only=True)
class ScaleInPolicy:
    """``ManagedInstanceScaling.ScaleInPolicy`` of an inference-component endpoint."""

    strategy: ScaleInStrategy
    """Idle release or consolidation."""
    cooldown: Duration | None = None
    """Wait after the last endpoint operation before consolidating (5-1,440 minutes, whole
    minutes); default SageMaker's, 20 minutes."""
    maximum_step_size: int | None = None
    """Most instances a consolidation terminates at once (1-100); default SageMaker's, 1."""

    def render(self, prop: str) -> sagemaker.CfnEndpointConfig.ScaleInPolicyProperty:
        """Check the ranges and return the L1 property."""
        minutes = None
        if self.cooldown is not None:
            seconds = self.cooldown.to_seconds()
            if seconds % 60:
                raise ValidationError(
                    f"{prop}.cooldown (seconds)",
                    seconds,
                    "the API takes whole minutes",
                    "pass Duration.minutes(n)",
                )
            minutes = int(seconds // 60)
            check_range(f"{prop}.cooldown (minutes)", minutes, minimum=5, maximum=1440)
        check_range(f"{prop}.maximum_step_size", self.maximum_step_size, minimum=1, maximum=100)
        if self.strategy is ScaleInStrategy.IDLE_RELEASE and (
            self.cooldown is not None or self.maximum_step_size is not None
        ):
            raise ValidationError(
                f"{prop}.cooldown/maximum_step_size",
                (self.cooldown and minutes, self.maximum_step_size),
                "these tune consolidation; IDLE_RELEASE releases idle instances without them",
                "drop them, or use ScaleInStrategy.CONSOLIDATION",
            )
        return sagemaker.CfnEndpointConfig.ScaleInPolicyProperty(
            strategy=self.strategy.value,
            cooldown_in_minutes=minutes,
            maximum_step_size=self.maximum_step_size,
        )


class CapacityReservationPreference(Enum):
    """``CapacityReservationConfig.CapacityReservationPreference`` (one value in the API)."""

    CAPACITY_RESERVATIONS_ONLY = "capacity-reservations-only"
    """Launch only into the ML capacity reservation; without capacity, launches fail."""


_ML_RESERVATION_ARN = re.compile(
    r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:[a-z0-9\-]{1,14}/"
)


def _check_unique_priorities(pools: Sequence[InstancePool], prop: str) -> None:
    """API reference, ``InstancePool.Priority``: "SageMaker attempts to provision instances in
    order of priority, starting with the lowest value"; two pools of one priority leave that
    order undefined (tokens are not compared: noted for synth's info message)."""
    priorities = [pool.priority for pool in pools]
    if any(is_unresolved(priority) for priority in priorities):
        note_unchecked(f"{prop}.instance_pools[].priority", "that priorities are unique")
        return
    repeated = sorted({p for p in priorities if priorities.count(p) > 1})
    if repeated:
        raise ValidationError(
            f"{prop}.instance_pools[].priority",
            {pool.instance_type.name: pool.priority for pool in pools},
            f"priority {repeated[0]} is given to more than one pool; SageMaker tries the pools "
            "in priority order, which two equal priorities leave undefined",
            "give each pool its own priority, 1 (tried first) to 5",
        )


@typed_props
@dataclass(frozen=True, kw_only=True)
class CapacityReservation:
    """Run a variant's instances in an ML capacity reservation (``CapacityReservationConfig``),
    e.g. a SageMaker training plan reserved for inference. Not for serverless variants."""

    ml_reservation_arn: str
    """The reservation's ARN (``arn:aws:sagemaker:<region>:<account>:<type>/<name>``)."""
    preference: CapacityReservationPreference = (
        CapacityReservationPreference.CAPACITY_RESERVATIONS_ONLY
    )
    """Default (and only API value): launch only into the reservation."""

    def render(self, prop: str) -> sagemaker.CfnEndpointConfig.CapacityReservationConfigProperty:
        """Check the ARN and return the L1 property."""
        arn = self.ml_reservation_arn
        if not is_unresolved(arn) and (
            not 20 <= len(arn) <= 258 or not _ML_RESERVATION_ARN.match(arn)
        ):
            raise ValidationError(
                f"{prop}.ml_reservation_arn",
                arn,
                "not an ML reservation ARN (20-258 characters matching "
                "arn:aws*:sagemaker:<region>:<12-digit account>:<type>/<name>)",
                "pass the ARN of the SageMaker capacity reservation (training plan) to use",
            )
        return sagemaker.CfnEndpointConfig.CapacityReservationConfigProperty(
            capacity_reservation_preference=self.preference.value, ml_reservation_arn=arn
        )


def _check_driver(ami: InferenceAmiVersion, instance_type: InstanceType, prop: str) -> None:
    """The AMI's NVIDIA driver must run the instance's GPUs (Blackwell needs 570 or later)."""
    accelerator = instance_type.accelerator
    needed = accelerator.min_nvidia_driver if accelerator is not None else None
    driver = ami.nvidia_driver
    if needed is None or driver is None or driver >= needed:
        return
    assert accelerator is not None
    newer = [a.value for a in InferenceAmiVersion if (a.nvidia_driver or 0) >= needed]
    raise ValidationError(
        f"{prop}.inference_ami_version",
        ami.value,
        f"carries NVIDIA driver {driver}, and the {accelerator.name} GPUs of "
        f"{instance_type.name} need driver {needed} or later",
        f"use {' or '.join(newer)}, or omit inference_ami_version (SageMaker's default)",
    )


@typed_props
class InferenceAmiVersion(Enum):
    """Preconfigured inference AMIs (``InferenceAmiVersion``): driver and CUDA/Neuron versions,
    as listed in the SageMaker API reference."""

    AL2_GPU_2 = "al2-ami-sagemaker-inference-gpu-2"
    """GPU, NVIDIA driver 535, CUDA 12.2."""
    AL2_GPU_2_1 = "al2-ami-sagemaker-inference-gpu-2-1"
    """GPU, NVIDIA driver 535, CUDA 12.2, CUDA-compat mounting disabled."""
    AL2_GPU_3_1 = "al2-ami-sagemaker-inference-gpu-3-1"
    """GPU, NVIDIA driver 550, CUDA 12.4, CUDA-compat mounting disabled."""
    AL2023_GPU_4_1 = "al2023-ami-sagemaker-inference-gpu-4-1"
    """GPU, NVIDIA driver 580, CUDA 13.0, CUDA-compat mounting disabled."""
    AL2_NEURON_2 = "al2-ami-sagemaker-inference-neuron-2"
    """Inferentia2 and Trainium, Neuron driver 2.19."""

    @property
    def is_neuron(self) -> bool:
        """True for the Inferentia/Trainium AMI."""
        return "neuron" in self.value

    @property
    def nvidia_driver(self) -> int | None:
        """The NVIDIA driver branch the AMI carries (SageMaker API reference,
        ``ProductionVariant.InferenceAmiVersion``); None for the Neuron AMI."""
        return _NVIDIA_DRIVERS.get(self.value)


_NVIDIA_DRIVERS = {
    "al2-ami-sagemaker-inference-gpu-2": 535,
    "al2-ami-sagemaker-inference-gpu-2-1": 535,
    "al2-ami-sagemaker-inference-gpu-3-1": 550,
    "al2023-ami-sagemaker-inference-gpu-4-1": 580,
}
"""Each GPU AMI's NVIDIA driver branch, as the members' docstrings and the API reference say."""


@typed_props
@dataclass(frozen=True, kw_only=True)
class VariantPlatform:
    """What a variant runs on besides its instance type (``ProductionVariant``'s
    ``InstancePools``, ``VariantInstanceProvisionTimeoutInSeconds``, ``RoutingConfig``,
    ``CapacityReservationConfig``, ``InferenceAmiVersion``, ``EnableSSMAccess``): the
    ``platform`` of an ``InferenceComponentEndpoint``, or gathered from a ``ProductionVariant``'s
    fields. A field left None is not emitted (SageMaker's default)."""

    instance_pools: Sequence[InstancePool] | None = None
    """1-5 instance pools by priority, replacing the variant's single instance type; default
    none (one instance type)."""
    provision_timeout: Duration | None = None
    """``VariantInstanceProvisionTimeoutInSeconds`` (300-3600 s): how long provisioning (across
    pools) may take before failing; default SageMaker's."""
    routing_strategy: RoutingStrategy | None = None
    """Request routing; default SageMaker's (random)."""
    prefix_aware_routing: PrefixAwareRouting | None = None
    """Settings of ``RoutingStrategy.PREFIX_AWARE`` (required with it; implies it)."""
    capacity_reservation: CapacityReservation | None = None
    """Launch into an ML capacity reservation; default on-demand capacity."""
    inference_ami_version: InferenceAmiVersion | None = None
    """The inference AMI (drivers); default SageMaker's for the instance type."""
    enable_ssm_access: bool | None = None
    """Allow AWS Systems Manager sessions into the variant's containers; default off."""

    def instance_types(self, single: InstanceType | None, prop: str) -> list[InstanceType]:
        """The variant's instance types in priority order: the pools', or ``single``."""
        pools = self.instance_pools
        if not pools:
            if pools is not None:
                raise ValidationError(
                    f"{prop}.instance_pools",
                    [],
                    "a variant lists 1 to 5 pools",
                    "omit it or add pools",
                )
            if single is None:
                raise ValidationError(
                    f"{prop}.instance_type",
                    None,
                    "a variant runs on an instance type, or on instance pools",
                    "pass instance_type=InstanceType.<...> or instance_pools=[InstancePool(...)]",
                )
            return [single]
        if single is not None:
            raise ValidationError(
                f"{prop}.instance_type",
                single.name,
                "instance pools replace the variant's instance type (SageMaker rejects both)",
                "drop instance_type and list it as the priority-1 InstancePool",
            )
        if len(pools) > MAX_INSTANCE_POOLS:
            raise ValidationError(
                f"{prop}.instance_pools",
                len(pools),
                "a variant lists 1 to 5 pools",
                "keep 5 or fewer",
            )
        names = [pool.instance_type.name for pool in pools]
        if len(set(names)) != len(names):
            raise ValidationError(
                f"{prop}.instance_pools[].instance_type",
                names,
                "each pool is one instance type; a type listed twice is ambiguous",
                "list each instance type once",
            )
        for index, pool in enumerate(pools):
            check_range(
                f"{prop}.instance_pools[{index}].priority", pool.priority, minimum=1, maximum=5
            )
        _check_unique_priorities(pools, prop)
        ordered = sorted(pools, key=lambda pool: pool.priority)
        return [pool.instance_type for pool in ordered]

    def check_ami(self, instance_types: Sequence[InstanceType], prop: str) -> None:
        """Raise when the AMI's accelerator kind contradicts an instance type's."""
        ami = self.inference_ami_version
        if ami is None:
            return
        for instance_type in instance_types:
            if not instance_type.is_known:
                continue
            if (ami.is_neuron and not instance_type.is_neuron) or (
                not ami.is_neuron and not instance_type.is_gpu
            ):
                kind = "Inferentia/Trainium" if ami.is_neuron else "NVIDIA GPU"
                raise ValidationError(
                    f"{prop}.inference_ami_version",
                    ami.value,
                    f"is an AMI for {kind} instances and {instance_type.name} is not one",
                    "pick an AMI for the instance type's accelerator, or omit it (SageMaker's "
                    "default)",
                )
            _check_driver(ami, instance_type, prop)

    def render(self, prop: str) -> dict[str, Any]:
        """The L1 ``ProductionVariantProperty`` keyword arguments these options set."""
        timeout = None
        if self.provision_timeout is not None:
            timeout = int(self.provision_timeout.to_seconds())
            check_range(f"{prop}.provision_timeout (seconds)", timeout, minimum=300, maximum=3600)
        return {
            "instance_pools": [
                sagemaker.CfnEndpointConfig.InstancePoolProperty(
                    instance_type=pool.instance_type.name,
                    priority=pool.priority,
                    model_name_override=pool.model.model_name if pool.model else None,
                )
                for pool in sorted(self.instance_pools, key=lambda pool: pool.priority)
            ]
            if self.instance_pools
            else None,
            "variant_instance_provision_timeout_in_seconds": timeout,
            "routing_config": self._routing(prop),
            "capacity_reservation_config": self.capacity_reservation.render(
                f"{prop}.capacity_reservation"
            )
            if self.capacity_reservation
            else None,
            "inference_ami_version": self.inference_ami_version.value
            if self.inference_ami_version
            else None,
            "enable_ssm_access": self.enable_ssm_access,
        }

    def _routing(self, prop: str) -> sagemaker.CfnEndpointConfig.RoutingConfigProperty | None:
        strategy, prefix = self.routing_strategy, self.prefix_aware_routing
        if prefix is not None and strategy is None:
            strategy = RoutingStrategy.PREFIX_AWARE
        if strategy is None:
            return None
        if (strategy is RoutingStrategy.PREFIX_AWARE) != (prefix is not None):
            raise ValidationError(
                f"{prop}.prefix_aware_routing",
                prefix,
                f"is required with, and only with, RoutingStrategy.PREFIX_AWARE (strategy "
                f"{strategy.value})",
                "pass prefix_aware_routing=PrefixAwareRouting(prefix_length=..., "
                "concurrency_threshold=...) with PREFIX_AWARE, or drop it",
            )
        return sagemaker.CfnEndpointConfig.RoutingConfigProperty(
            routing_strategy=strategy.value,
            prefix_aware_routing_config=prefix.render(f"{prop}.prefix_aware_routing")
            if prefix
            else None,
        )


def timeout_seconds(
    prop: str, value: Duration | None, *, minimum: int = 60, maximum: int = 3600
) -> int | None:
    """A timeout in whole seconds, checked against its range; None stays None."""
    seconds = whole_seconds(prop, value) if value is not None else None
    check_range(f"{prop} (seconds)", seconds, minimum=minimum, maximum=maximum)
    return seconds


@typed_props
@dataclass(frozen=True, kw_only=True)
class ContainerStartup:
    """How long a container may take to start: ``ContainerStartupHealthCheckTimeoutInSeconds``
    and ``ModelDataDownloadTimeoutInSeconds`` (60-3600 s each, SageMaker API reference,
    ``ProductionVariant`` and ``InferenceComponentStartupParameters``)."""

    health_check_timeout: Duration | None = None
    """How long the container may take to pass its health check; default SageMaker's (or, on
    a component, its endpoint's)."""
    download_timeout: Duration | None = None
    """How long downloading the model data may take; default SageMaker's (or, on a
    component, its endpoint's)."""

    def seconds(self, prop: str) -> tuple[int | None, int | None]:
        """The two timeouts in whole seconds (None when not given), range-checked."""
        return (
            timeout_seconds(f"{prop}.health_check_timeout", self.health_check_timeout),
            timeout_seconds(f"{prop}.download_timeout", self.download_timeout),
        )


@typed_props
@dataclass(frozen=True, kw_only=True)
class StorageVolume:
    """The ML storage volume of each instance: ``VolumeSizeInGB`` (1-512 GiB) and the
    endpoint configuration's ``KmsKeyId`` that encrypts it. Neither is allowed on instance
    types with local NVMe storage (SageMaker API reference, ``ProductionVariant``,
    ``CreateEndpointConfig``)."""

    size: Size | None = None
    """The volume size, 1-512 GiB; default SageMaker's for the instance type."""
    kms_key: kms.IKey | None = None
    """Encrypt the volume with this key; default AWS-managed encryption."""

    def size_gib(self, prop: str) -> int | None:
        """The size in whole GiB, range-checked; None when not given."""
        if self.size is None:
            return None
        gib = int(self.size.to_gibibytes())
        check_range(f"{prop}.size (GiB)", gib, minimum=1, maximum=512)
        return gib


@typed_props
@dataclass(frozen=True, kw_only=True)
class ManagedInstanceScaling:
    """The instance counts of an inference-component endpoint, whose managed instance scaling
    (``ManagedInstanceScaling``) adds and removes instances as components scale their copies."""

    initial_instance_count: int = 1
    """Instances at creation (at least 1); default 1."""
    min_instance_count: int = 1
    """Fewest instances managed scaling keeps; default 1. 0 allows scale to zero (not
    accepted in every region)."""
    max_instance_count: int | None = None
    """Most instances; default ``initial_instance_count``."""
    scale_in_policy: ScaleInPolicy | None = None
    """How managed scaling releases instances (idle release or consolidation); default
    SageMaker's."""

    @property
    def maximum(self) -> int:
        """``max_instance_count``, or ``initial_instance_count`` when it is None."""
        if self.max_instance_count is None:
            return self.initial_instance_count
        return self.max_instance_count
