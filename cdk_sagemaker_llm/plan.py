"""Read a synthesized cloud assembly and describe what it deploys, for pull-request review.

``plan`` reads only ``manifest.json`` and the stacks' ``*.template.json``: real resource
properties (endpoint configs, inference components, models and their container environment,
Application Auto Scaling targets and policies, CloudWatch alarms) plus the small
``cdk-sagemaker-llm:`` metadata the constructs add where a fact is not in the properties (a
model's architecture, an image's container-caching eligibility). Resources it does not know are
ignored, so it works on any template.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .catalog.container_caching import caching_applies
from .catalog.containers import recognize_dlc_uri
from .catalog.instance_types import InstanceType
from .catalog.model_specs import ModelSpec
from .catalog.prices import DEFAULT_PRICE_LIST, PriceList
from .errors import ValidationError
from .planning.decision import ServiceDecision
from .planning.sizing import serving_facts, size
from .template_metadata import IMAGE, MODEL_SPEC, SERVICE

COPY_COUNT_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"
INSTANCE_COUNT_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
TARGET_TRACKING_SCALE_OUT_DATAPOINTS = 3
"""Target tracking's scale-out alarm fires after 3 datapoints above the target."""
HIGH_RESOLUTION_PERIOD_SECONDS = 10
STANDARD_PERIOD_SECONDS = 60
OPTIMIZATION_JOB_MARKERS = ("optimizationjob", "optimization-job", "optimization_job")
BENCHMARK_MARKERS = ("benchmark",)
BENCHMARK_METADATA = "cdk-sagemaker-llm:benchmark"


# ----- The plan -----------------------------------------------------------------------------


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
    summary: str
    warnings: list[str] = field(default_factory=list)
    report: dict[str, Any] | None = None


@dataclass
class ImagePlan:
    """The serving image and whether SageMaker container caching covers it
    (catalog/container_caching.py: images in Amazon ECR, on accelerator instance types)."""

    uri: str
    family: str | None
    release: str | None
    caching_eligible: bool | None
    caching_applies: bool
    caching_unapplied_reason: str | None = None
    """Why an eligible image is not cached on this instance type, or None."""


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
        return data


def _sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


# ----- Reading the assembly -----------------------------------------------------------------


def read_templates(assembly_dir: str | Path) -> dict[str, dict[str, Any]]:
    """The stack templates of a cloud assembly, by stack name (sorted).

    Uses ``manifest.json``'s ``aws:cloudformation:stack`` artifacts; nested assemblies (stages)
    are followed. Without a manifest, every ``*.template.json`` is read.
    """
    root = Path(assembly_dir)
    if not root.is_dir():
        raise ValidationError(
            "assembly_dir",
            str(root),
            "not a directory",
            "run `cdk synth` first (it writes cdk.out), or pass the assembly directory",
        )
    templates: dict[str, dict[str, Any]] = {}
    _read_assembly(root, templates)
    return dict(sorted(templates.items()))


def _read_assembly(root: Path, templates: dict[str, dict[str, Any]]) -> None:
    manifest_path = root / "manifest.json"
    if not manifest_path.is_file():
        for path in sorted(root.glob("*.template.json")):
            templates[path.name.removesuffix(".template.json")] = json.loads(path.read_text())
        return
    manifest = json.loads(manifest_path.read_text())
    for artifact_id, artifact in sorted(manifest.get("artifacts", {}).items()):
        kind = artifact.get("type")
        properties = artifact.get("properties", {})
        if kind == "aws:cloudformation:stack" and properties.get("templateFile"):
            name = artifact.get("displayName") or properties.get("stackName") or artifact_id
            templates[name] = json.loads((root / properties["templateFile"]).read_text())
        elif kind == "cdk:cloud-assembly" and properties.get("directoryName"):
            _read_assembly(root / properties["directoryName"], templates)


def build_plan(assembly_dir: str | Path, *, prices: PriceList = DEFAULT_PRICE_LIST) -> Plan:
    """Read the assembly at ``assembly_dir`` and plan every stack in it."""
    templates = read_templates(assembly_dir)
    regions = stack_regions(assembly_dir)
    return Plan(
        prices=prices.describe(),
        stacks=[
            plan_template(name, template, prices=prices, region=regions.get(name))
            for name, template in templates.items()
        ],
    )


def stack_regions(assembly_dir: str | Path) -> dict[str, str]:
    """The region of each stack whose environment names one (``aws://account/region``)."""
    regions: dict[str, str] = {}

    def read(root: Path) -> None:
        manifest_path = root / "manifest.json"
        if not manifest_path.is_file():
            return
        for artifact_id, artifact in (
            json.loads(manifest_path.read_text()).get("artifacts", {}).items()
        ):
            properties = artifact.get("properties", {})
            if artifact.get("type") == "cdk:cloud-assembly" and properties.get("directoryName"):
                read(root / properties["directoryName"])
            region = str(artifact.get("environment", "")).rpartition("/")[2]
            if artifact.get("type") == "aws:cloudformation:stack" and region not in (
                "",
                "unknown-region",
            ):
                name = artifact.get("displayName") or properties.get("stackName") or artifact_id
                regions[name] = region

    read(Path(assembly_dir))
    return regions


# ----- Template helpers ---------------------------------------------------------------------


def _refs(value: Any) -> set[str]:
    """Logical ids referenced (Ref, Fn::GetAtt, Fn::Sub ${X}) anywhere in ``value``."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "Ref" and isinstance(item, str):
                found.add(item)
            elif key == "Fn::GetAtt":
                target = item[0] if isinstance(item, list) and item else str(item).split(".")[0]
                if isinstance(target, str):
                    found.add(target)
            else:
                found |= _refs(item)
    elif isinstance(value, list):
        for item in value:
            found |= _refs(item)
    return found


def _render(value: Any) -> str:
    """A readable string for a template value; tokens shown as ``${...}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"{value:g}"
    if isinstance(value, dict) and len(value) == 1:
        key, item = next(iter(value.items()))
        if key == "Ref":
            return "${" + str(item) + "}"
        if key == "Fn::GetAtt":
            return "${" + (".".join(item) if isinstance(item, list) else str(item)) + "}"
        if key == "Fn::Join" and isinstance(item, list) and len(item) == 2:
            return str(item[0]).join(_render(part) for part in item[1])
        if key == "Fn::FindInMap" and isinstance(item, list):
            return "${" + ".".join(_render(part) for part in item) + "}"
        if key == "Fn::Sub":
            return _render(item[0] if isinstance(item, list) else item)
    return "${" + json.dumps(value, sort_keys=True) + "}"


def _literal_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _environment(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {key: item for key, item in value.items() if isinstance(item, str)}


class _Template:
    def __init__(self, template: dict[str, Any]) -> None:
        self.resources: dict[str, dict[str, Any]] = dict(
            sorted((template.get("Resources") or {}).items())
        )

    def of_type(self, resource_type: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (logical_id, resource)
            for logical_id, resource in self.resources.items()
            if resource.get("Type") == resource_type
        ]

    def properties(self, logical_id: str) -> dict[str, Any]:
        return dict(self.resources.get(logical_id, {}).get("Properties") or {})

    def metadata(self, logical_id: str) -> dict[str, Any]:
        return dict(self.resources.get(logical_id, {}).get("Metadata") or {})

    def referenced(self, value: Any, resource_type: str) -> str | None:
        for logical_id in sorted(_refs(value)):
            if self.resources.get(logical_id, {}).get("Type") == resource_type:
                return logical_id
        return None


def _display_name(logical_id: str, name: Any) -> str:
    return name if isinstance(name, str) else logical_id


# ----- Images, models, sizing ---------------------------------------------------------------


def _image_plan(
    uri_value: Any, metadata: dict[str, Any], instance_type: InstanceType | None
) -> ImagePlan:
    uri = _render(uri_value)
    facts = metadata.get(IMAGE)
    family = release = None
    eligible: bool | None = None
    if isinstance(facts, dict):
        family, release = facts.get("family"), facts.get("release")
        eligible = bool(facts.get("containerCachingEligible"))
    elif isinstance(uri_value, str):
        recognized = recognize_dlc_uri(uri_value)
        eligible = recognized is not None  # an ECR URI
        if recognized is not None:
            image_family, line, _, tag = recognized
            family = image_family.value
            release = line.release_of(tag) if line else None
    applies = caching_applies(instance_type) if instance_type is not None else None
    reason = None
    if eligible and applies is not True:
        reason = (
            "the instance type's accelerators are unknown"
            if applies is None
            else "the instance type has no accelerator"
        )
    return ImagePlan(
        uri=uri,
        family=family,
        release=release,
        caching_eligible=eligible,
        caching_applies=bool(eligible) and applies is True,
        caching_unapplied_reason=reason,
    )


@dataclass
class _Container:
    image_value: Any
    environment: dict[str, str]
    metadata: dict[str, Any]


def _model_container(template: _Template, model_id: str) -> _Container:
    properties = template.properties(model_id)
    container = properties.get("PrimaryContainer") or {}
    if (
        not container
        and isinstance(properties.get("Containers"), list)
        and properties["Containers"]
    ):
        container = properties["Containers"][0]
    return _Container(
        image_value=container.get("Image"),
        environment=_environment(container.get("Environment")),
        metadata=template.metadata(model_id),
    )


def _spec_of(container: _Container) -> ModelSpec | None:
    data = container.metadata.get(MODEL_SPEC)
    if isinstance(data, dict):
        try:
            return ModelSpec.from_metadata(data)
        except (KeyError, TypeError, ValueError):
            pass
    model_id = container.environment.get("HF_MODEL_ID")
    return ModelSpec.from_hugging_face_id(model_id) if model_id else None


def _model_label(container: _Container, spec: ModelSpec | None) -> str | None:
    model_id = container.environment.get("HF_MODEL_ID")
    if model_id and spec:
        return f"{model_id} ({spec.name})"
    return model_id or (spec.name if spec else None)


def _sizing(
    container: _Container, instance_type: InstanceType, accelerators: int | None
) -> SizingVerdict:
    spec = _spec_of(container)
    if spec is None:
        return SizingVerdict(None, None, "not checked: the model's architecture is unknown")
    if instance_type.accelerator is None or instance_type.accelerator_count is None:
        return SizingVerdict(
            spec.name, None, f"not checked: no accelerator facts for {instance_type.name}"
        )
    facts = serving_facts(container.environment)
    degree = min(
        facts.tensor_parallel_degree or accelerators or instance_type.accelerator_count,
        instance_type.accelerator_count,
    )
    report = size(
        spec,
        instance_type,
        tensor_parallel_degree=degree,
        precision=facts.precision,
        max_total_tokens=facts.max_total_tokens,
    )
    warnings = []
    if report.fits:
        summary = (
            f"fits: {spec.name} {report.precision} at tensor-parallel degree {degree}, "
            f"weights {report.weights_gib:.1f} GiB, KV cache holds "
            f"{report.max_concurrent_sequences} sequences of {report.max_total_tokens} tokens"
        )
        if facts.max_concurrency and facts.max_concurrency > report.max_concurrent_sequences:
            warnings.append(
                f"max concurrency {facts.max_concurrency} exceeds the "
                f"{report.max_concurrent_sequences} full-length sequences the KV cache holds"
            )
    else:
        summary = (
            f"does not fit: {spec.name} {report.precision} needs "
            f"{report.needed_bytes / 1e9:.1f} GB on {degree} x {instance_type.accelerator.name} "
            f"({report.usable_memory_bytes / 1e9:.1f} GB usable)"
        )
    if (
        report.recommended_tensor_parallel_degree is not None
        and report.recommended_tensor_parallel_degree < degree
    ):
        warnings.append(
            f"tensor-parallel degree {report.recommended_tensor_parallel_degree} also fits: "
            f"{instance_type.accelerator_count // report.recommended_tensor_parallel_degree} "
            "copies per instance instead of "
            f"{instance_type.accelerator_count // degree}"
        )
    return SizingVerdict(spec.name, report.fits, summary, warnings, report.to_dict())


# ----- Scaling ------------------------------------------------------------------------------


def _scaling_plans(template: _Template) -> dict[str, ScalingPlan]:
    """Scalable targets by logical id, each with its policies."""
    targets: dict[str, ScalingPlan] = {}
    for logical_id, _ in template.of_type("AWS::ApplicationAutoScaling::ScalableTarget"):
        properties = template.properties(logical_id)
        targets[logical_id] = ScalingPlan(
            dimension=_render(properties.get("ScalableDimension", "")),
            min_capacity=_literal_int(properties.get("MinCapacity")),
            max_capacity=_literal_int(properties.get("MaxCapacity")),
        )
    alarms = template.of_type("AWS::CloudWatch::Alarm")
    for logical_id, _ in template.of_type("AWS::ApplicationAutoScaling::ScalingPolicy"):
        properties = template.properties(logical_id)
        target_id = template.referenced(
            properties.get("ScalingTargetId"), "AWS::ApplicationAutoScaling::ScalableTarget"
        )
        if target_id is None:
            target_id = _target_by_resource_id(template, properties)
        if target_id is None or target_id not in targets:
            continue
        targets[target_id].policies.append(_policy_plan(template, logical_id, properties, alarms))
    return targets


def _target_by_resource_id(template: _Template, policy: dict[str, Any]) -> str | None:
    for logical_id, _ in template.of_type("AWS::ApplicationAutoScaling::ScalableTarget"):
        target = template.properties(logical_id)
        if (
            "ResourceId" in policy
            and target.get("ResourceId") == policy.get("ResourceId")
            and target.get("ScalableDimension") == policy.get("ScalableDimension")
        ):
            return logical_id
    return None


def _policy_plan(
    template: _Template,
    logical_id: str,
    properties: dict[str, Any],
    alarms: list[tuple[str, dict[str, Any]]],
) -> ScalingPolicyPlan:
    policy_type = str(properties.get("PolicyType", ""))
    if policy_type == "TargetTrackingScaling":
        config = properties.get("TargetTrackingScalingPolicyConfiguration") or {}
        predefined = (config.get("PredefinedMetricSpecification") or {}).get("PredefinedMetricType")
        custom = config.get("CustomizedMetricSpecification") or {}
        metric = _render(predefined) if predefined else _render(custom.get("MetricName", "custom"))
        high_resolution = isinstance(predefined, str) and predefined.endswith("HighResolution")
        period = HIGH_RESOLUTION_PERIOD_SECONDS if high_resolution else STANDARD_PERIOD_SECONDS
        return ScalingPolicyPlan(
            logical_id=logical_id,
            policy_type="target tracking",
            trigger=f"{metric} at {_render(config.get('TargetValue'))}",
            detection_seconds=period * TARGET_TRACKING_SCALE_OUT_DATAPOINTS,
            detection_basis=f"{TARGET_TRACKING_SCALE_OUT_DATAPOINTS} datapoints of {period} s "
            "(the scale-out alarm target tracking creates)",
        )
    step = properties.get("StepScalingPolicyConfiguration") or {}
    adjustments = [_render(a.get("ScalingAdjustment")) for a in step.get("StepAdjustments") or []]
    trigger = f"{_render(step.get('AdjustmentType', 'ChangeInCapacity'))} {', '.join(adjustments)}"
    for alarm_id, _ in alarms:
        alarm = template.properties(alarm_id)
        if logical_id not in _refs(alarm.get("AlarmActions")):
            continue
        alarm_period = _literal_int(alarm.get("Period"))
        if alarm_period is None:
            for query in alarm.get("Metrics") or []:
                alarm_period = alarm_period or _literal_int(
                    (query.get("MetricStat") or {}).get("Period")
                )
        datapoints = _literal_int(alarm.get("DatapointsToAlarm")) or _literal_int(
            alarm.get("EvaluationPeriods")
        )
        metric = _render(alarm.get("MetricName", "a metric expression"))
        operator = _render(alarm.get("ComparisonOperator", ""))
        threshold = _render(alarm.get("Threshold", ""))
        return ScalingPolicyPlan(
            logical_id=logical_id,
            policy_type="step scaling",
            trigger=f"{trigger} when {metric} {operator} {threshold}",
            detection_seconds=alarm_period * datapoints if alarm_period and datapoints else None,
            detection_basis=f"alarm {alarm_id}: {datapoints} datapoints of {alarm_period} s",
        )
    return ScalingPolicyPlan(
        logical_id=logical_id,
        policy_type="step scaling",
        trigger=trigger,
        detection_seconds=None,
        detection_basis="no alarm in the template triggers it",
    )


def _scaling_for(
    template: _Template,
    scaling: dict[str, ScalingPlan],
    dimension: str,
    logical_id: str,
    name: Any,
) -> ScalingPlan | None:
    for target_id, plan in scaling.items():
        if plan.dimension != dimension:
            continue
        resource_id = template.properties(target_id).get("ResourceId")
        if logical_id in _refs(resource_id) or (
            isinstance(name, str) and _render(resource_id).split("/")[-1] == name
        ):
            return plan
    return None


def _variant_scaling(
    template: _Template,
    scaling: dict[str, ScalingPlan],
    endpoint_id: str,
    endpoint_name: Any,
    variant: str,
) -> ScalingPlan | None:
    for target_id, plan in scaling.items():
        if plan.dimension != INSTANCE_COUNT_DIMENSION:
            continue
        resource_id = template.properties(target_id).get("ResourceId")
        rendered = _render(resource_id)
        names_endpoint = endpoint_id in _refs(resource_id) or (
            isinstance(endpoint_name, str) and f"endpoint/{endpoint_name}/" in rendered
        )
        if names_endpoint and rendered.endswith(f"/variant/{variant}"):
            return plan
    return None


# ----- Endpoints and components -------------------------------------------------------------


def _cost(prices: PriceList, instance_type: str, count: int | None) -> float | None:
    price = prices.price_per_hour(instance_type)
    return None if price is None or count is None else price * count


def _accelerators_label(instance_type: InstanceType) -> str:
    if instance_type.accelerator is None or instance_type.accelerator_count is None:
        return "none known"
    return f"{instance_type.accelerator_count} x {instance_type.accelerator.name}"


def plan_template(
    name: str,
    template_data: dict[str, Any],
    *,
    prices: PriceList = DEFAULT_PRICE_LIST,
    region: str | None = None,
) -> StackPlan:
    """Plan one stack's template (in ``region``, when known: costs say whether the prices are
    that region's)."""
    template = _Template(template_data)
    scaling = _scaling_plans(template)
    stack = StackPlan(name=name, region=region)
    for endpoint_id, _ in template.of_type("AWS::SageMaker::Endpoint"):
        endpoint = template.properties(endpoint_id)
        config_id = template.referenced(
            endpoint.get("EndpointConfigName"), "AWS::SageMaker::EndpointConfig"
        )
        if config_id is None:
            continue
        endpoint_plan = _endpoint_plan(template, scaling, prices, endpoint_id, endpoint, config_id)
        endpoint_plan.price_basis = prices.basis(region)
        stack.endpoints.append(endpoint_plan)
    for logical_id, resource in template.resources.items():
        kind = _custom_kind(resource)
        if kind is None:
            continue
        plan = CustomResourcePlan(
            logical_id=logical_id,
            resource_type=str(resource.get("Type")),
            details=_custom_details(resource),
        )
        (stack.optimization_jobs if kind == "optimization-job" else stack.benchmarks).append(plan)
    return stack


def _endpoint_plan(
    template: _Template,
    scaling: dict[str, ScalingPlan],
    prices: PriceList,
    endpoint_id: str,
    endpoint: dict[str, Any],
    config_id: str,
) -> EndpointPlan:
    config = template.properties(config_id)
    endpoint_name = endpoint.get("EndpointName")
    components = [
        (component_id, template.properties(component_id))
        for component_id, _ in template.of_type("AWS::SageMaker::InferenceComponent")
        if endpoint_id in _refs(template.properties(component_id).get("EndpointName"))
        or (
            isinstance(endpoint_name, str)
            and template.properties(component_id).get("EndpointName") == endpoint_name
        )
    ]
    variants_data = config.get("ProductionVariants") or []
    is_component_endpoint = bool(components) or (
        bool(variants_data) and all("ModelName" not in v for v in variants_data)
    )
    variants = []
    for variant in variants_data:
        variants.append(
            _variant_plan(
                template,
                scaling,
                prices,
                endpoint_id,
                endpoint_name,
                variant,
                on_components=is_component_endpoint,
            )
        )
    plan = EndpointPlan(
        logical_id=endpoint_id,
        name=_display_name(endpoint_id, endpoint_name),
        kind="inference components" if is_component_endpoint else "instance-based",
        variants=variants,
        options=_async_options(config.get("AsyncInferenceConfig"))
        + _metrics_options(config.get("MetricsConfig")),
    )
    for component_id, component in components:
        variant_name = component.get("VariantName")
        variant = next((v for v in variants if v.name == variant_name), None) or (
            variants[0] if variants else None
        )
        instance_type = InstanceType.of(variant.instance_type) if variant else None
        plan.components.append(
            _component_plan(template, scaling, component_id, component, instance_type, variant)
        )
    return plan


def _variant_plan(
    template: _Template,
    scaling: dict[str, ScalingPlan],
    prices: PriceList,
    endpoint_id: str,
    endpoint_name: Any,
    variant: dict[str, Any],
    *,
    on_components: bool,
) -> VariantPlan:
    name = _render(variant.get("VariantName", ""))
    options = _variant_options(variant)
    pools = sorted(
        variant.get("InstancePools") or [], key=lambda pool: _literal_int(pool.get("Priority")) or 0
    )
    if pools:
        type_name = _render(pools[0].get("InstanceType", ""))
    elif variant.get("ServerlessConfig") is not None:
        type_name = "serverless"
    else:
        type_name = _render(variant.get("InstanceType", ""))
    try:
        instance_type = InstanceType.of(type_name)
    except ValidationError:
        instance_type = InstanceType(type_name)
    initial = _literal_int(variant.get("InitialInstanceCount"))
    managed = variant.get("ManagedInstanceScaling") or {}
    variant_scaling = _variant_scaling(template, scaling, endpoint_id, endpoint_name, name)
    if managed.get("Status") == "ENABLED":
        low = _literal_int(managed.get("MinInstanceCount"))
        high = _literal_int(managed.get("MaxInstanceCount"))
    elif variant_scaling is not None:
        low, high = variant_scaling.min_capacity, variant_scaling.max_capacity
    else:
        low = high = initial
    plan = VariantPlan(
        name=name,
        instance_type=type_name,
        accelerators=_accelerators_label(instance_type),
        initial_instances=initial,
        min_instances=low,
        max_instances=high,
        cost_per_hour_min=_cost(prices, type_name, low),
        cost_per_hour_max=_cost(prices, type_name, high),
        scaling=variant_scaling,
        options=options,
    )
    model_id = template.referenced(variant.get("ModelName"), "AWS::SageMaker::Model")
    if model_id is not None and not on_components:
        container = _model_container(template, model_id)
        spec = _spec_of(container)
        plan.model = _model_label(container, spec) or model_id
        plan.image = _image_plan(container.image_value, container.metadata, instance_type)
        facts = serving_facts(container.environment)
        degree = facts.tensor_parallel_degree or instance_type.accelerator_count or None
        plan.accelerators_per_copy = degree
        if degree and instance_type.accelerator_count:
            plan.copies_per_instance = instance_type.accelerator_count // degree
        plan.sizing = _sizing(container, instance_type, instance_type.accelerator_count or None)
    return plan


def _component_plan(
    template: _Template,
    scaling: dict[str, ScalingPlan],
    component_id: str,
    component: dict[str, Any],
    instance_type: InstanceType | None,
    variant: VariantPlan | None,
) -> ComponentPlan:
    name = component.get("InferenceComponentName")
    per_type = component.get("Specifications") or []
    specification = component.get("Specification") or next(
        (
            entry
            for entry in per_type
            if instance_type is not None and entry.get("InstanceType") == instance_type.name
        ),
        per_type[0] if per_type else {},
    )
    requirements = specification.get("ComputeResourceRequirements") or {}
    accelerators = _literal_int(requirements.get("NumberOfAcceleratorDevicesRequired"))
    runtime = component.get("RuntimeConfig") or {}
    copy_scaling = _scaling_for(template, scaling, COPY_COUNT_DIMENSION, component_id, name)
    initial = _literal_int(runtime.get("CopyCount"))
    base = specification.get("BaseInferenceComponentName")
    model_id = template.referenced(specification.get("ModelName"), "AWS::SageMaker::Model")
    if model_id is not None:
        container = _model_container(template, model_id)
    else:
        own = specification.get("Container") or {}
        container = _Container(
            image_value=own.get("Image"),
            environment=_environment(own.get("Environment")),
            metadata=template.metadata(component_id),
        )
    spec = _spec_of(container)
    plan = ComponentPlan(
        logical_id=component_id,
        name=_display_name(component_id, name),
        model=_model_label(container, spec) or model_id,
        image=_image_plan(container.image_value, container.metadata, instance_type)
        if container.image_value is not None
        else None,
        accelerators_per_copy=accelerators,
        copies_per_instance=_copies_per_instance(requirements, instance_type),
        initial_copies=initial,
        min_copies=copy_scaling.min_capacity if copy_scaling else initial,
        max_copies=copy_scaling.max_capacity if copy_scaling else initial,
        scaling=copy_scaling,
        sizing=None,
        adapter_of=_render(base) if base is not None else None,
        options=_component_options(specification, per_type),
    )
    if base is None and instance_type is not None and instance_type.is_known:
        plan.sizing = _sizing(container, instance_type, accelerators)
    decision = template.metadata(component_id).get(SERVICE)
    if isinstance(decision, dict):
        plan.decision = decision
    if (
        variant is not None
        and plan.max_copies
        and plan.copies_per_instance
        and variant.max_instances is not None
    ):
        needed = math.ceil(plan.max_copies / plan.copies_per_instance)
        if needed > variant.max_instances:
            plan.notes.append(
                f"{plan.max_copies} copies need {needed} instances at {plan.copies_per_instance} "
                f"per instance, but the endpoint stops at {variant.max_instances}"
            )
    return plan


def _variant_options(variant: dict[str, Any]) -> list[str]:
    """What a variant runs on besides one instance type, one line each."""
    options = []
    pools = sorted(
        variant.get("InstancePools") or [], key=lambda pool: _literal_int(pool.get("Priority")) or 0
    )
    if pools:
        listed = ", ".join(
            f"{_render(pool.get('InstanceType'))} (priority {_render(pool.get('Priority'))}"
            + (
                f", model {_render(pool['ModelNameOverride'])}"
                if "ModelNameOverride" in pool
                else ""
            )
            + ")"
            for pool in pools
        )
        options.append(f"instance pools: {listed}")
    timeout = variant.get("VariantInstanceProvisionTimeoutInSeconds")
    if timeout is not None:
        options.append(f"provisioning timeout: {_render(timeout)} s")
    serverless = variant.get("ServerlessConfig")
    if serverless is not None:
        provisioned = serverless.get("ProvisionedConcurrency")
        options.append(
            f"serverless: {_render(serverless.get('MemorySizeInMB'))} MB, max concurrency "
            f"{_render(serverless.get('MaxConcurrency'))}, provisioned "
            f"{_render(provisioned) if provisioned is not None else 'none (cold starts)'}"
        )
    routing = variant.get("RoutingConfig") or {}
    if routing:
        prefix = routing.get("PrefixAwareRoutingConfig")
        detail = (
            f" (prefix {_render(prefix.get('PrefixLength'))}, concurrency threshold "
            f"{_render(prefix.get('ConcurrencyThreshold'))})"
            if prefix
            else ""
        )
        options.append(f"routing: {_render(routing.get('RoutingStrategy'))}{detail}")
    scale_in = (variant.get("ManagedInstanceScaling") or {}).get("ScaleInPolicy")
    if scale_in:
        details = []
        if "CooldownInMinutes" in scale_in:
            details.append(f"cooldown {_render(scale_in['CooldownInMinutes'])} min")
        if "MaximumStepSize" in scale_in:
            details.append(f"step {_render(scale_in['MaximumStepSize'])}")
        suffix = f" ({', '.join(details)})" if details else ""
        options.append(f"scale-in: {_render(scale_in.get('Strategy'))}{suffix}")
    reservation = variant.get("CapacityReservationConfig")
    if reservation:
        options.append(
            f"capacity reservation: {_render(reservation.get('MlReservationArn'))} "
            f"({_render(reservation.get('CapacityReservationPreference'))})"
        )
    if variant.get("InferenceAmiVersion") is not None:
        options.append(f"inference AMI: {_render(variant['InferenceAmiVersion'])}")
    if variant.get("EnableSSMAccess") is True:
        options.append("SSM access: enabled")
    return options


def _component_options(specification: dict[str, Any], per_type: list[dict[str, Any]]) -> list[str]:
    """Per-type specifications, scheduling and container metrics, one line each."""
    options = []
    for entry in per_type:
        requirements = entry.get("ComputeResourceRequirements") or {}
        options.append(
            f"on {_render(entry.get('InstanceType'))}: "
            f"{_render(requirements.get('NumberOfAcceleratorDevicesRequired', 0))} accelerators, "
            f"{_render(requirements.get('MinMemoryRequiredInMb'))} MiB per copy"
        )
    scheduling = specification.get("SchedulingConfig")
    if scheduling:
        balance = scheduling.get("AvailabilityZoneBalance") or {}
        imbalance = balance.get("MaxImbalance")
        options.append(
            f"scheduling: {_render(scheduling.get('PlacementStrategy'))}, zone balance "
            f"{_render(balance.get('EnforcementMode'))}"
            + (f" (max imbalance {_render(imbalance)})" if imbalance is not None else "")
        )
    metrics = ((specification.get("Container") or {}).get("ContainerMetricsConfig") or {}).get(
        "MetricsEndpoints"
    ) or []
    for endpoint in metrics:
        frequency = endpoint.get("MetricPublishFrequencyInSeconds")
        options.append(
            f"container metrics: {_render(endpoint.get('MetricsEndpointPath'))} every "
            f"{_render(frequency) + ' s' if frequency is not None else '60 s (default)'}"
        )
    return options


def _async_options(config: dict[str, Any] | None) -> list[str]:
    """An asynchronous endpoint's queue, results and notifications, one line each."""
    if not config:
        return []
    output = config.get("OutputConfig") or {}
    notification = output.get("NotificationConfig") or {}
    client = config.get("ClientConfig") or {}
    topics = [kind for kind in ("SuccessTopic", "ErrorTopic") if kind in notification]
    per_instance = client.get("MaxConcurrentInvocationsPerInstance")
    return [
        f"asynchronous: results to {_render(output.get('S3OutputPath'))}, failures to "
        f"{_render(output.get('S3FailurePath'))}",
        f"asynchronous: {_render(per_instance) if per_instance else 'SageMaker-chosen'} "
        f"concurrent requests per instance; notifications: {', '.join(topics) or 'none'}",
    ]


def _metrics_options(config: dict[str, Any] | None) -> list[str]:
    """The endpoint's ``MetricsConfig`` in one line; SageMaker's default for what is unset."""
    if not config:
        return []

    def switch(name: str, default: str) -> str:
        value = config.get(name)
        if value is None:
            return f"{default} (default)"
        if isinstance(value, bool):
            return "on" if value else "off"
        return _render(value)

    frequency = config.get("MetricPublishFrequencyInSeconds")
    return [
        f"metrics: enhanced {switch('EnableEnhancedMetrics', 'off')}, detailed observability "
        f"{switch('EnableDetailedObservability', 'on')}, published every "
        f"{_render(frequency) + ' s' if frequency is not None else '60 s (default)'}"
    ]


def _copies_per_instance(
    requirements: dict[str, Any], instance_type: InstanceType | None
) -> int | None:
    if instance_type is None or not instance_type.is_known:
        return None
    limits = []
    accelerators = _literal_int(requirements.get("NumberOfAcceleratorDevicesRequired"))
    if accelerators and instance_type.accelerator_count is not None:
        limits.append(instance_type.accelerator_count // accelerators)
    memory = _literal_int(requirements.get("MinMemoryRequiredInMb"))
    if memory and instance_type.memory_mib:
        limits.append(instance_type.memory_mib // memory)
    cores = requirements.get("NumberOfCpuCoresRequired")
    if isinstance(cores, int | float) and not isinstance(cores, bool) and cores > 0:
        limits.append(int((instance_type.vcpus or 0) // cores))
    return min(limits) if limits else None


# ----- Optimization jobs and benchmarks -----------------------------------------------------


def _custom_kind(resource: dict[str, Any]) -> str | None:
    """``optimization-job``, ``benchmark`` or None, from the resource type or metadata."""
    metadata = resource.get("Metadata") or {}
    keys = " ".join(str(key).lower() for key in metadata)
    resource_type = str(resource.get("Type", "")).lower()
    if resource_type.endswith("output"):
        return None  # e.g. Custom::SageMakerOptimizationJobOutput describes a job listed already
    is_custom = resource_type.startswith("custom::") or resource_type in (
        "aws::cloudformation::customresource",
    )
    kind_value = str(metadata.get("cdk-sagemaker-llm:kind", "")).lower()
    for kind, markers in (
        ("optimization-job", OPTIMIZATION_JOB_MARKERS),
        ("benchmark", BENCHMARK_MARKERS),
    ):
        if any(marker in kind_value for marker in markers):
            return kind
        if any(f"cdk-sagemaker-llm:{marker}" in keys for marker in markers):
            return kind
        if is_custom and any(marker in resource_type for marker in markers):
            return kind
    return None


def _custom_details(resource: dict[str, Any]) -> dict[str, str]:
    details: dict[str, str] = {}
    for key, value in sorted((resource.get("Metadata") or {}).items()):
        if str(key).startswith("cdk-sagemaker-llm:") and isinstance(value, dict):
            for inner, item in sorted(value.items()):
                details[str(inner)] = _short(item)
    if details and BENCHMARK_METADATA in (resource.get("Metadata") or {}):
        return details  # the construct states what to review; its properties are plumbing
    properties = resource.get("Properties") or {}
    request = properties.get("Request")
    if isinstance(request, dict) and "OptimizationConfigs" in request:
        details.update(_optimization_request_details(request))
        return details
    for key, value in sorted(properties.items()):
        if key in ("ServiceToken", "ServiceTimeout") or key in details:
            continue
        details[key] = _short(value)
    return details


def _optimization_request_details(request: dict[str, Any]) -> dict[str, str]:
    """The reviewable parts of a ``CreateOptimizationJob`` request."""
    techniques = []
    for config in request.get("OptimizationConfigs") or []:
        if isinstance(config, dict):
            techniques += [
                name.removeprefix("Model").removesuffix("Config") for name in sorted(config)
            ]
    details = {
        "DeploymentInstanceType": _short(request.get("DeploymentInstanceType")),
        "Techniques": ", ".join(techniques) or "none",
    }
    runtime = (request.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds")
    if runtime is not None:
        details["MaxRuntimeInSeconds"] = _short(runtime)
    environment = request.get("OptimizationEnvironment")
    if isinstance(environment, dict) and environment:
        details["OptimizationEnvironment"] = _short(environment)
    return details


def _short(value: Any, limit: int = 120) -> str:
    text = (
        _render(value)
        if not isinstance(value, dict | list) or _is_intrinsic(value)
        else json.dumps(value, sort_keys=True)
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_intrinsic(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and len(value) == 1
        and next(iter(value)) in ("Ref", "Fn::GetAtt", "Fn::Join", "Fn::Sub", "Fn::FindInMap")
    )


# ----- Rendering ----------------------------------------------------------------------------


def _money(value: float | None) -> str:
    return "price unknown" if value is None else f"${value:,.2f}"


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def _caching(image: ImagePlan | None) -> str:
    if image is None:
        return "n/a"
    if image.caching_eligible is None:
        return "unknown (the image URI is resolved at deploy time)"
    release = f"{image.family} {image.release}" if image.family and image.release else "image"
    if not image.caching_eligible:
        return f"not eligible ({release} is not known to be in Amazon ECR)"
    if image.caching_applies:
        return f"eligible ({release}); applies: accelerator instance type"
    return f"eligible ({release}); does not apply: {image.caching_unapplied_reason}"


def _scaling_lines(plan: ScalingPlan | None, unit: str) -> list[str]:
    if plan is None:
        return [f"no scaling policy: {unit} stay as deployed"]
    lines = [f"{unit} {_count(plan.min_capacity)}-{_count(plan.max_capacity)}"]
    if not plan.policies:
        lines.append("scalable target without policies")
    for policy in plan.policies:
        detection = (
            f"~{policy.detection_seconds} s to detect"
            if policy.detection_seconds is not None
            else "detection time unknown"
        )
        lines.append(
            f"{policy.policy_type}: {policy.trigger} ({detection}; {policy.detection_basis})"
        )
    return lines


def _sizing_lines(verdict: SizingVerdict | None) -> list[str]:
    if verdict is None:
        return ["n/a"]
    icon = {True: "✅", False: "❌", None: "⏭️"}[verdict.fits]
    return [f"{icon} {verdict.summary}"] + [f"⚠️ {warning}" for warning in verdict.warnings]


def _row(label: str, lines: list[str]) -> str:
    cell = "<br>".join(line.replace("|", "\\|") for line in lines)
    return f"| {label} | {cell} |"


def render_markdown(plan: Plan) -> str:
    """The plan as Markdown fit for a pull-request comment."""
    out = ["## cdk-sagemaker-llm plan", "", f"Costs use {plan.prices}.", ""]
    if not any(s.endpoints or s.optimization_jobs or s.benchmarks for s in plan.stacks):
        out += ["No SageMaker endpoints, optimization jobs or benchmarks found.", ""]
    for stack in plan.stacks:
        if not (stack.endpoints or stack.optimization_jobs or stack.benchmarks):
            continue
        out += [f"### Stack `{stack.name}`", ""]
        for endpoint in stack.endpoints:
            out += _endpoint_markdown(endpoint)
        out += _custom_markdown("Optimization jobs", stack.optimization_jobs)
        out += _custom_markdown("Benchmarks", stack.benchmarks)
    return "\n".join(out).rstrip() + "\n"


def _endpoint_markdown(endpoint: EndpointPlan) -> list[str]:
    out = [
        f"#### Endpoint `{endpoint.logical_id}` ({endpoint.kind})",
        "",
        "| | |",
        "|---|---|",
        _row(
            "Cost per hour",
            [
                f"{_money(endpoint.cost_per_hour_min)} at min, "
                f"{_money(endpoint.cost_per_hour_max)} at max ({endpoint.price_basis})"
            ],
        ),
    ]
    if endpoint.options:
        out.append(_row("Options", endpoint.options))
    for variant in endpoint.variants:
        prefix = f"Variant `{variant.name}`"
        out.append(
            _row(
                prefix,
                [
                    f"{variant.instance_type} ({variant.accelerators})",
                    f"instances: initial {_count(variant.initial_instances)}, min "
                    f"{_count(variant.min_instances)}, max {_count(variant.max_instances)}",
                ],
            )
        )
        if variant.options:
            out.append(_row(f"{prefix} options", variant.options))
        if variant.scaling is not None:
            out.append(_row(f"{prefix} scaling", _scaling_lines(variant.scaling, "instances")))
        if variant.model is not None:
            out += [
                _row(f"{prefix} model", [variant.model]),
                _row(f"{prefix} image", [f"`{variant.image.uri}`" if variant.image else "n/a"]),
                _row(f"{prefix} container caching", [_caching(variant.image)]),
                _row(
                    f"{prefix} accelerators per copy",
                    [
                        f"{_count(variant.accelerators_per_copy)} "
                        f"({_count(variant.copies_per_instance)} copies per instance)"
                    ],
                ),
                _row(f"{prefix} sizing", _sizing_lines(variant.sizing)),
            ]
    out.append("")
    for component in endpoint.components:
        out += [
            f"##### Component `{component.logical_id}`",
            "",
            "| | |",
            "|---|---|",
            _row("Name", [f"`{component.name}`"]),
        ]
        if component.adapter_of is not None:
            out.append(_row("Adapter of", [f"`{component.adapter_of}`"]))
        out += [
            _row("Model", [component.model or "unknown"]),
            _row("Image", [f"`{component.image.uri}`" if component.image else "n/a"]),
            _row("Container caching", [_caching(component.image)]),
            _row("Accelerators per copy", [_count(component.accelerators_per_copy)]),
            _row("Copies per instance", [_count(component.copies_per_instance)]),
            _row(
                "Copies",
                [
                    f"initial {_count(component.initial_copies)}, min "
                    f"{_count(component.min_copies)}, max {_count(component.max_copies)}"
                ],
            ),
            _row("Scaling", _scaling_lines(component.scaling, "copies")),
            _row("Sizing", _sizing_lines(component.sizing)),
        ]
        if component.options:
            out.append(_row("Options", component.options))
        if component.notes:
            out.append(_row("Notes", [f"⚠️ {note}" for note in component.notes]))
        if component.decision is not None:
            out += _decision_rows(component.decision)
        out.append("")
    return out


def _decision_rows(metadata: dict[str, Any]) -> list[str]:
    """An LlmService's decision (``ServiceDecision``, read back from its metadata): goal,
    choices (recommended or overridden), predicted figures and their sources, the option's
    price, reasoning, alternatives and rejections."""
    decision = ServiceDecision.from_metadata(metadata)
    goal = decision.goal
    predicted = decision.predicted

    def choice(name: str) -> str:
        entry = decision.choices[name]
        if entry.source == "benchmark":
            return f"{name}: deploy-time benchmark's measured knee (predicted {entry.value})"
        return f"{name}: {entry.value} ({entry.source})"

    rows = [
        _row(
            "Service goal",
            [
                f"{goal.get('model')} ({goal.get('precision')}), {goal.get('workload')}",
                f"SLO {goal.get('slo')}; {goal.get('traffic')}",
                f"candidates: {', '.join(goal.get('candidates') or [])}",
                f"{goal.get('calibration')} model; {goal.get('prices')}",
            ],
        ),
        _row("Service decision", [choice(name) for name in sorted(decision.choices)]),
        _row(
            "Predicted",
            [
                f"at peak: {predicted.concurrency} requests in flight "
                f"({predicted.concurrency_per_copy} per copy)",
                f"{predicted.ms_per_token} ms/token, TTFT {predicted.ttft_ms} ms",
                f"{predicted.tokens_per_s} tokens/s, {predicted.requests_per_s} requests/s",
                f"knee: {predicted.knee_concurrency_per_copy} in flight per copy",
                f"option price {_money(decision.price_per_hour)}/h at peak, "
                f"{_money(decision.cost_per_million_tokens)} per 1M output tokens",
            ],
        ),
        _row("Sources", list(predicted.sources) or ["not recorded"]),
        _row("Reasoning", list(decision.reasoning) or ["none given"]),
        _row("Alternatives", list(decision.alternatives) or ["none"]),
        _row(f"Rejected ({decision.rejected_count})", list(decision.rejected) or ["none"]),
    ]
    if decision.warnings:
        rows.append(
            _row("Override warnings", [f"⚠️ {warning.message}" for warning in decision.warnings])
        )
    return rows


def _custom_markdown(title: str, resources: list[CustomResourcePlan]) -> list[str]:
    out = [f"#### {title}", ""]
    if not resources:
        return [*out, "None.", ""]
    out += ["| Resource | Type | Settings |", "|---|---|---|"]
    for resource in resources:
        settings = "<br>".join(
            f"{key}: `{value}`".replace("|", "\\|") for key, value in resource.details.items()
        )
        out.append(f"| `{resource.logical_id}` | {resource.resource_type} | {settings or '-'} |")
    return [*out, ""]


def render_json(plan: Plan) -> str:
    """The plan as indented, key-sorted JSON."""
    return json.dumps(plan.to_dict(), indent=2, sort_keys=True) + "\n"
