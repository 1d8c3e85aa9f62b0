"""The settings of variants, components and endpoints in words (instance pools, serverless,
routing, scale-in, per-type specifications, asynchronous inference, metrics).
"""

from __future__ import annotations

from typing import Any

from ..catalog.instance_types import InstanceType
from .template import literal_int, shown


def variant_options(variant: dict[str, Any]) -> list[str]:
    """What a variant runs on besides one instance type, one line each."""
    options = []
    pools = sorted(
        variant.get("InstancePools") or [], key=lambda pool: literal_int(pool.get("Priority")) or 0
    )
    if pools:
        listed = ", ".join(
            f"{shown(pool.get('InstanceType'))} (priority {shown(pool.get('Priority'))}"
            + (f", model {shown(pool['ModelNameOverride'])}" if "ModelNameOverride" in pool else "")
            + ")"
            for pool in pools
        )
        options.append(f"instance pools: {listed}")
    timeout = variant.get("VariantInstanceProvisionTimeoutInSeconds")
    if timeout is not None:
        options.append(f"provisioning timeout: {shown(timeout)} s")
    serverless = variant.get("ServerlessConfig")
    if serverless is not None:
        provisioned = serverless.get("ProvisionedConcurrency")
        options.append(
            f"serverless: {shown(serverless.get('MemorySizeInMB'))} MB, max concurrency "
            f"{shown(serverless.get('MaxConcurrency'))}, provisioned "
            f"{shown(provisioned) if provisioned is not None else 'none (cold starts)'}"
        )
    routing = variant.get("RoutingConfig") or {}
    if routing:
        prefix = routing.get("PrefixAwareRoutingConfig")
        detail = (
            f" (prefix {shown(prefix.get('PrefixLength'))}, concurrency threshold "
            f"{shown(prefix.get('ConcurrencyThreshold'))})"
            if prefix
            else ""
        )
        options.append(f"routing: {shown(routing.get('RoutingStrategy'))}{detail}")
    scale_in = (variant.get("ManagedInstanceScaling") or {}).get("ScaleInPolicy")
    if scale_in:
        details = []
        if "CooldownInMinutes" in scale_in:
            details.append(f"cooldown {shown(scale_in['CooldownInMinutes'])} min")
        if "MaximumStepSize" in scale_in:
            details.append(f"step {shown(scale_in['MaximumStepSize'])}")
        suffix = f" ({', '.join(details)})" if details else ""
        options.append(f"scale-in: {shown(scale_in.get('Strategy'))}{suffix}")
    reservation = variant.get("CapacityReservationConfig")
    if reservation:
        options.append(
            f"capacity reservation: {shown(reservation.get('MlReservationArn'))} "
            f"({shown(reservation.get('CapacityReservationPreference'))})"
        )
    if variant.get("InferenceAmiVersion") is not None:
        options.append(f"inference AMI: {shown(variant['InferenceAmiVersion'])}")
    if variant.get("EnableSSMAccess") is True:
        options.append("SSM access: enabled")
    return options


def component_options(specification: dict[str, Any], per_type: list[dict[str, Any]]) -> list[str]:
    """Per-type specifications, scheduling and container metrics, one line each."""
    options = []
    for entry in per_type:
        requirements = entry.get("ComputeResourceRequirements") or {}
        options.append(
            f"on {shown(entry.get('InstanceType'))}: "
            f"{shown(requirements.get('NumberOfAcceleratorDevicesRequired', 0))} accelerators, "
            f"{shown(requirements.get('MinMemoryRequiredInMb'))} MiB per copy"
        )
    scheduling = specification.get("SchedulingConfig")
    if scheduling:
        balance = scheduling.get("AvailabilityZoneBalance") or {}
        imbalance = balance.get("MaxImbalance")
        options.append(
            f"scheduling: {shown(scheduling.get('PlacementStrategy'))}, zone balance "
            f"{shown(balance.get('EnforcementMode'))}"
            + (f" (max imbalance {shown(imbalance)})" if imbalance is not None else "")
        )
    metrics = ((specification.get("Container") or {}).get("ContainerMetricsConfig") or {}).get(
        "MetricsEndpoints"
    ) or []
    for endpoint in metrics:
        frequency = endpoint.get("MetricPublishFrequencyInSeconds")
        options.append(
            f"container metrics: {shown(endpoint.get('MetricsEndpointPath'))} every "
            f"{shown(frequency) + ' s' if frequency is not None else '60 s (default)'}"
        )
    return options


def async_options(config: dict[str, Any] | None) -> list[str]:
    """An asynchronous endpoint's queue, results and notifications, one line each."""
    if not config:
        return []
    output = config.get("OutputConfig") or {}
    notification = output.get("NotificationConfig") or {}
    client = config.get("ClientConfig") or {}
    topics = [kind for kind in ("SuccessTopic", "ErrorTopic") if kind in notification]
    per_instance = client.get("MaxConcurrentInvocationsPerInstance")
    return [
        f"asynchronous: results to {shown(output.get('S3OutputPath'))}, failures to "
        f"{shown(output.get('S3FailurePath'))}",
        f"asynchronous: {shown(per_instance) if per_instance else 'SageMaker-chosen'} "
        f"concurrent requests per instance; notifications: {', '.join(topics) or 'none'}",
    ]


def metrics_options(config: dict[str, Any] | None) -> list[str]:
    """The endpoint's ``MetricsConfig`` in one line; SageMaker's default for what is unset."""
    if not config:
        return []

    def switch(name: str, default: str) -> str:
        value = config.get(name)
        if value is None:
            return f"{default} (default)"
        if isinstance(value, bool):
            return "on" if value else "off"
        return shown(value)

    frequency = config.get("MetricPublishFrequencyInSeconds")
    return [
        f"metrics: enhanced {switch('EnableEnhancedMetrics', 'off')}, detailed observability "
        f"{switch('EnableDetailedObservability', 'on')}, published every "
        f"{shown(frequency) + ' s' if frequency is not None else '60 s (default)'}"
    ]


def copies_per_instance(
    requirements: dict[str, Any], instance_type: InstanceType | None
) -> int | None:
    if instance_type is None or not instance_type.is_known:
        return None
    limits = []
    accelerators = literal_int(requirements.get("NumberOfAcceleratorDevicesRequired"))
    if accelerators and instance_type.accelerator_count is not None:
        limits.append(instance_type.accelerator_count // accelerators)
    memory = literal_int(requirements.get("MinMemoryRequiredInMb"))
    if memory and instance_type.memory_mib:
        limits.append(instance_type.memory_mib // memory)
    cores = requirements.get("NumberOfCpuCoresRequired")
    if isinstance(cores, int | float) and not isinstance(cores, bool) and cores > 0:
        limits.append(int((instance_type.vcpus or 0) // cores))
    return min(limits) if limits else None
