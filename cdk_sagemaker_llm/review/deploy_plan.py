"""The plan's model of what deploys: stacks, endpoints, variants, components, their scaling,
sizing and cost, and the custom resources (optimization jobs, benchmarks).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..planning.decision_record import DecisionRecord


@dataclass
class ScalingPolicyPlan:
    """One Application Auto Scaling policy and how fast it notices a need to scale out."""

    logical_id: str
    policy_type: str
    trigger: str
    detection_seconds: int | None
    detection_basis: str


@dataclass
class ScalingPlan:
    """A scalable target (min/max capacity) and its policies."""

    dimension: str
    min_capacity: int | None
    max_capacity: int | None
    policies: list[ScalingPolicyPlan] = field(default_factory=list)

    @property
    def fastest_detection_seconds(self) -> int | None:
        """The quickest scale-out detection among the policies."""
        times = [p.detection_seconds for p in self.policies if p.detection_seconds is not None]
        return min(times) if times else None


@dataclass
class SizingVerdict:
    """What sizing says about one placement of a model."""

    model: str | None
    fits: bool | None
    """Whether a copy fits in the share of the memory its engine allocates (the engine starts);
    None where it was not checked."""
    summary: str
    warnings: list[str] = field(default_factory=list)
    report: dict[str, Any] | None = None


@dataclass
class ImagePlan:
    """The serving image and whether SageMaker container caching covers it
    (catalog/container_caching.py: images in Amazon ECR, on accelerator instance types, in
    commercial AWS Regions)."""

    uri: str
    family: str | None
    release: str | None
    caching_eligible: bool | None
    caching_applies: bool
    caching_unapplied_reason: str | None = None
    """Why an eligible image is not cached on this instance type in this region, or None."""


@dataclass
class ComponentPlan:
    """One inference component."""

    logical_id: str
    name: str
    model: str | None
    image: ImagePlan | None
    accelerators_per_copy: int | None
    copies_per_instance: int | None
    initial_copies: int | None
    min_copies: int | None
    max_copies: int | None
    scaling: ScalingPlan | None
    sizing: SizingVerdict | None
    adapter_of: str | None = None
    notes: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    """Per-instance-type specifications, scheduling, container metrics."""
    decision: dict[str, Any] | None = None
    """An ``LlmService``'s decision: choices and their sources, reasoning, predicted figures."""


@dataclass
class VariantPlan:
    """One production variant: its instances, their cost and (instance-based) its model."""

    name: str
    instance_type: str
    accelerators: str
    initial_instances: int | None
    min_instances: int | None
    max_instances: int | None
    cost_per_hour_min: float | None
    cost_per_hour_max: float | None
    scaling: ScalingPlan | None = None
    model: str | None = None
    image: ImagePlan | None = None
    accelerators_per_copy: int | None = None
    copies_per_instance: int | None = None
    sizing: SizingVerdict | None = None
    options: list[str] = field(default_factory=list)
    """Instance pools, serverless, routing, scale-in, reservations, AMI, SSM access."""
    serverless: bool = False
    """A serverless variant: no instances, billed per request, scaled by provisioned
    concurrency."""


@dataclass
class EndpointPlan:
    """One endpoint: variants, components and cost."""

    logical_id: str
    name: str
    kind: str
    variants: list[VariantPlan]
    components: list[ComponentPlan] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    """Asynchronous inference settings and the endpoint's metrics."""
    price_basis: str = ""
    """What the costs are: the price list's region, basis and date, any discount, and a warning
    when the stack's region differs."""

    @property
    def cost_per_hour_min(self) -> float | None:
        """Summed over variants; None when a price is unknown."""
        return _sum([v.cost_per_hour_min for v in self.variants])

    @property
    def cost_per_hour_max(self) -> float | None:
        """Summed over variants; None when a price is unknown."""
        return _sum([v.cost_per_hour_max for v in self.variants])


@dataclass
class CustomResourcePlan:
    """An optimization job or a benchmark (custom resources: CloudFormation has none)."""

    logical_id: str
    resource_type: str
    details: dict[str, str]


@dataclass
class StackPlan:
    """Everything plan found in one stack."""

    name: str
    endpoints: list[EndpointPlan] = field(default_factory=list)
    optimization_jobs: list[CustomResourcePlan] = field(default_factory=list)
    region: str | None = None
    """The stack's region, when its environment names one."""
    benchmarks: list[CustomResourcePlan] = field(default_factory=list)


@dataclass
class Plan:
    """The plan of a whole cloud assembly."""

    prices: str
    stacks: list[StackPlan]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (endpoint costs included)."""
        data = asdict(self)
        for stack_data, stack in zip(data["stacks"], self.stacks, strict=True):
            for endpoint_data, endpoint in zip(
                stack_data["endpoints"], stack.endpoints, strict=True
            ):
                endpoint_data["cost_per_hour_min"] = _round(endpoint.cost_per_hour_min)
                endpoint_data["cost_per_hour_max"] = _round(endpoint.cost_per_hour_max)
                for component_data, component in zip(
                    endpoint_data["components"], endpoint.components, strict=True
                ):
                    decision = component.decision  # the $/h the Markdown's line gives
                    component_data["decision_hourly"] = (
                        DecisionRecord.from_metadata(decision).hourly() if decision else None
                    )
        return data


def _sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
