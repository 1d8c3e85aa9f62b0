"""Whether an inference-component endpoint's instances can hold every copy its components run.

SageMaker places each copy of a component whole on one instance, reserving the copy's compute
requirements there (accelerators, host memory, CPU cores); managed instance scaling adds
instances up to ``MaxInstanceCount`` and no further, so copies beyond that stay pending
("Inference component compute resource requirements", SageMaker Developer Guide,
https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-deploy-models.html).

The checks here are necessary conditions of a placement, so they never reject a layout that
fits: for each resource, the copies' total need is at most what ``max_instance_count``
instances have, and each component's copies are at most ``max_instance_count`` x the copies of
it one instance holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..catalog.instance_types import InstanceType
from ..errors import ValidationError


@dataclass(frozen=True)
class CopyDemand:
    """The most copies one component may run on the endpoint and what each copy reserves."""

    component: str
    """The component's construct path (for messages)."""
    copies: int
    """Copies at creation, or the autoscaling maximum when the component scales."""
    accelerators: int
    memory_mib: int
    cpu_cores: float | None


def _resources(instance_type: InstanceType, demand: CopyDemand) -> list[tuple[str, float, float]]:
    """(resource, need per copy, amount per instance) for the resources known on both sides."""
    rows: list[tuple[str, float, float]] = []
    if demand.accelerators and instance_type.accelerator_count is not None:
        rows.append(("accelerators", demand.accelerators, instance_type.accelerator_count))
    if instance_type.memory_mib is not None:
        rows.append(("MiB of host memory", demand.memory_mib, instance_type.memory_mib))
    if demand.cpu_cores is not None and instance_type.vcpus is not None:
        rows.append(("CPU cores", demand.cpu_cores, instance_type.vcpus))
    return rows


def instances_needed(instance_type: InstanceType, demands: Sequence[CopyDemand]) -> tuple[int, str]:
    """A lower bound on the instances the copies need, and the resource that sets it."""
    needed, reason = 0, ""
    totals: dict[str, tuple[float, float]] = {}
    for demand in demands:
        for resource, need, per_instance in _resources(instance_type, demand):
            if need <= 0:
                continue
            fits = int(per_instance // need)
            if fits == 0:  # one copy alone does not fit: the component's own check says so
                continue
            alone = math.ceil(demand.copies / fits)
            if alone > needed:
                needed = alone
                reason = (
                    f"{demand.component}: {demand.copies} copies x {need:g} {resource}, "
                    f"{fits} per {instance_type.name}"
                )
            total, _ = totals.get(resource, (0.0, per_instance))
            totals[resource] = (total + demand.copies * need, per_instance)
    for resource, (total, per_instance) in totals.items():
        together = math.ceil(total / per_instance - 1e-9)
        if together > needed:
            needed = together
            reason = (
                f"{total:g} {resource} in all for {len(demands)} components, "
                f"{per_instance:g} per {instance_type.name}"
            )
    return needed, reason


def check_capacity(
    instance_type: InstanceType,
    max_instance_count: int,
    demands: Sequence[CopyDemand],
    *,
    prop: str,
    value: int,
    pool: bool = False,
) -> None:
    """Raise ValidationError naming ``prop`` when ``max_instance_count`` instances of
    ``instance_type`` cannot hold every copy in ``demands``; ``pool``: the type is one of the
    endpoint's instance pools (SageMaker may provision any of them), which the message names."""
    needed, reason = instances_needed(instance_type, demands)
    if needed <= max_instance_count:
        return
    copies = ", ".join(f"{d.component} {d.copies}" for d in demands)
    where = (
        f" (instance pool {instance_type.name}, which SageMaker may fall back to)" if pool else ""
    )
    raise ValidationError(
        prop,
        value,
        f"the endpoint's copies ({copies}) need at least {needed} x {instance_type.name}"
        f"{where} ({reason}), but its max_instance_count is {max_instance_count}",
        f"raise the endpoint's max_instance_count to at least {needed}, lower {prop}, lower "
        "the compute each copy reserves, or "
        + ("drop that pool or give it a specification" if pool else "use a larger instance type"),
    )
