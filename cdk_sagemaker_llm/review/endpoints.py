"""From templates to the plan: endpoints, their variants (instances, serverless) and their
inference components.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ..catalog.instance_types import InstanceType
from ..catalog.prices import DEFAULT_PRICE_LIST, PriceList
from ..catalog.scaling_metrics import COPY_COUNT_DIMENSION, PROVISIONED_CONCURRENCY_DIMENSION
from ..errors import ValidationError
from ..planning.sizing import serving_facts
from ..template_metadata import SERVICE
from .assembly import read_templates, stack_regions
from .custom_resources import custom_details, custom_kind
from .deploy_plan import (
    ComponentPlan,
    CustomResourcePlan,
    EndpointPlan,
    Plan,
    ScalingPlan,
    SizingVerdict,
    StackPlan,
    VariantPlan,
)
from .options import (
    async_options,
    component_options,
    copies_per_instance,
    metrics_options,
    variant_options,
)
from .scaling import (
    scaling_for,
    scaling_plans,
    variant_scaling,
)
from .serving import (
    Container,
    image_plan,
    model_container,
    model_data_of,
    model_label,
    sizing_verdict,
    spec_of,
)
from .template import Template, display_name, environment_of, literal_int, refs, shown


def cost(prices: PriceList, instance_type: str, count: int | None) -> float | None:
    price = prices.price_per_hour(instance_type)
    return None if price is None or count is None else price * count


def accelerators_label(instance_type: InstanceType) -> str:
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
    template = Template(template_data)
    scaling = scaling_plans(template)
    stack = StackPlan(name=name, region=region)
    for endpoint_id, _ in template.of_type("AWS::SageMaker::Endpoint"):
        endpoint = template.properties(endpoint_id)
        config_id = template.referenced(
            endpoint.get("EndpointConfigName"), "AWS::SageMaker::EndpointConfig"
        )
        if config_id is None:
            continue
        endpoint_plan = _endpoint_plan(
            template, scaling, prices, endpoint_id, endpoint, config_id, region=region
        )
        endpoint_plan.price_basis = prices.basis(region)
        stack.endpoints.append(endpoint_plan)
    for logical_id, resource in template.resources.items():
        kind = custom_kind(resource)
        if kind is None:
            continue
        plan = CustomResourcePlan(
            logical_id=logical_id,
            resource_type=str(resource.get("Type")),
            details=custom_details(resource),
        )
        (stack.optimization_jobs if kind == "optimization-job" else stack.benchmarks).append(plan)
    return stack


def _endpoint_plan(
    template: Template,
    scaling: dict[str, ScalingPlan],
    prices: PriceList,
    endpoint_id: str,
    endpoint: dict[str, Any],
    config_id: str,
    *,
    region: str | None = None,
) -> EndpointPlan:
    config = template.properties(config_id)
    endpoint_name = endpoint.get("EndpointName")
    components = [
        (component_id, template.properties(component_id))
        for component_id, _ in template.of_type("AWS::SageMaker::InferenceComponent")
        if endpoint_id in refs(template.properties(component_id).get("EndpointName"))
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
                region=region,
            )
        )
    plan = EndpointPlan(
        logical_id=endpoint_id,
        name=display_name(endpoint_id, endpoint_name),
        kind="inference components" if is_component_endpoint else "instance-based",
        variants=variants,
        options=async_options(config.get("AsyncInferenceConfig"))
        + metrics_options(config.get("MetricsConfig")),
    )
    for component_id, component in components:
        variant_name = component.get("VariantName")
        variant = next((v for v in variants if v.name == variant_name), None) or (
            variants[0] if variants else None
        )
        instance_type = InstanceType.of(variant.instance_type) if variant else None
        plan.components.append(
            _component_plan(
                template, scaling, component_id, component, instance_type, variant, region=region
            )
        )
    return plan


def _variant_plan(
    template: Template,
    scaling: dict[str, ScalingPlan],
    prices: PriceList,
    endpoint_id: str,
    endpoint_name: Any,
    variant: dict[str, Any],
    *,
    on_components: bool,
    region: str | None = None,
) -> VariantPlan:
    name = shown(variant.get("VariantName", ""))
    options = variant_options(variant)
    pools = sorted(
        variant.get("InstancePools") or [], key=lambda pool: literal_int(pool.get("Priority")) or 0
    )
    if variant.get("ServerlessConfig") is not None:
        return _serverless_plan(template, scaling, endpoint_id, endpoint_name, variant, options)
    if pools:
        type_name = shown(pools[0].get("InstanceType", ""))
    else:
        type_name = shown(variant.get("InstanceType", ""))
    try:
        instance_type = InstanceType.of(type_name)
    except ValidationError:
        instance_type = InstanceType(type_name)
    initial = literal_int(variant.get("InitialInstanceCount"))
    managed = variant.get("ManagedInstanceScaling") or {}
    own_scaling = variant_scaling(template, scaling, endpoint_id, endpoint_name, name)
    if managed.get("Status") == "ENABLED":
        low = literal_int(managed.get("MinInstanceCount"))
        high = literal_int(managed.get("MaxInstanceCount"))
    elif own_scaling is not None:
        low, high = own_scaling.min_capacity, own_scaling.max_capacity
    else:
        low = high = initial
    plan = VariantPlan(
        name=name,
        instance_type=type_name,
        accelerators=accelerators_label(instance_type),
        initial_instances=initial,
        min_instances=low,
        max_instances=high,
        cost_per_hour_min=cost(prices, type_name, low),
        cost_per_hour_max=cost(prices, type_name, high),
        scaling=own_scaling,
        options=options,
    )
    model_id = template.referenced(variant.get("ModelName"), "AWS::SageMaker::Model")
    if model_id is not None and not on_components:
        container = model_container(template, model_id)
        spec = spec_of(container)
        plan.model = model_label(container, spec) or model_id
        plan.image = image_plan(container.image_value, container.metadata, instance_type, region)
        facts = serving_facts(container.environment)
        degree = facts.tensor_parallel_degree or instance_type.accelerator_count or None
        plan.accelerators_per_copy = degree
        if degree and instance_type.accelerator_count:
            plan.copies_per_instance = instance_type.accelerator_count // degree
        plan.sizing = sizing_verdict(
            container, instance_type, instance_type.accelerator_count or None
        )
    return plan


def _serverless_plan(
    template: Template,
    scaling: dict[str, ScalingPlan],
    endpoint_id: str,
    endpoint_name: Any,
    variant: dict[str, Any],
    options: list[str],
) -> VariantPlan:
    """A serverless variant: no instances, no accelerators, no instance-hour price; its
    scaling is the provisioned concurrency (``ServerlessScaling``)."""
    name = shown(variant.get("VariantName", ""))
    plan = VariantPlan(
        name=name,
        instance_type="serverless",
        accelerators="none: serverless endpoints run on CPU",
        initial_instances=None,
        min_instances=None,
        max_instances=None,
        cost_per_hour_min=None,
        cost_per_hour_max=None,
        scaling=variant_scaling(
            template,
            scaling,
            endpoint_id,
            endpoint_name,
            name,
            PROVISIONED_CONCURRENCY_DIMENSION,
        ),
        options=options,
        serverless=True,
    )
    model_id = template.referenced(variant.get("ModelName"), "AWS::SageMaker::Model")
    if model_id is not None:
        container = model_container(template, model_id)
        spec = spec_of(container)
        plan.model = model_label(container, spec) or model_id
        plan.image = image_plan(container.image_value, container.metadata, None)
        if plan.image.caching_eligible:
            plan.image.caching_unapplied_reason = (
                "serverless endpoints have no instance type (caching applies to accelerator "
                "instance types)"
            )
        plan.sizing = SizingVerdict(
            spec.name if spec else None,
            None,
            "not checked: a serverless endpoint has no accelerator memory to size",
        )
    return plan


def _component_plan(
    template: Template,
    scaling: dict[str, ScalingPlan],
    component_id: str,
    component: dict[str, Any],
    instance_type: InstanceType | None,
    variant: VariantPlan | None,
    *,
    region: str | None = None,
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
    accelerators = literal_int(requirements.get("NumberOfAcceleratorDevicesRequired"))
    runtime = component.get("RuntimeConfig") or {}
    copy_scaling = scaling_for(template, scaling, COPY_COUNT_DIMENSION, component_id, name)
    initial = literal_int(runtime.get("CopyCount"))
    base = specification.get("BaseInferenceComponentName")
    model_id = template.referenced(specification.get("ModelName"), "AWS::SageMaker::Model")
    if model_id is not None:
        container = model_container(template, model_id)
    else:
        own = specification.get("Container") or {}
        container = Container(
            image_value=own.get("Image"),
            environment=environment_of(own.get("Environment")),
            metadata=template.metadata(component_id),
            model_data=model_data_of(own),
        )
    spec = spec_of(container)
    plan = ComponentPlan(
        logical_id=component_id,
        name=display_name(component_id, name),
        model=model_label(container, spec) or model_id,
        image=image_plan(container.image_value, container.metadata, instance_type, region)
        if container.image_value is not None
        else None,
        accelerators_per_copy=accelerators,
        copies_per_instance=copies_per_instance(requirements, instance_type),
        initial_copies=initial,
        min_copies=copy_scaling.min_capacity if copy_scaling else initial,
        max_copies=copy_scaling.max_capacity if copy_scaling else initial,
        scaling=copy_scaling,
        sizing=None,
        adapter_of=shown(base) if base is not None else None,
        options=component_options(specification, per_type),
    )
    if base is None and instance_type is not None and instance_type.is_known:
        plan.sizing = sizing_verdict(container, instance_type, accelerators)
    decision = template.metadata(component_id).get(SERVICE)
    if isinstance(decision, dict):
        plan.decision = decision
        if plan.sizing is not None and instance_type is not None:
            plan.sizing.warnings = [
                _weighed(warning, instance_type, decision) for warning in plan.sizing.warnings
            ]
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


_ALSO_FITS = re.compile(r"tensor-parallel degree (\d+) also fits")


def _weighed(warning: str, instance_type: InstanceType, decision: dict[str, Any]) -> str:
    """A sizing warning that another tensor-parallel degree also fits, said with the reason
    the service's decision rejected that degree, where it did (a reviewer is otherwise nudged
    toward a layout the decision already weighed and refused)."""
    found = _ALSO_FITS.match(warning)
    if found is None:
        return warning
    prefix = f"{instance_type.name} TP{found.group(1)}: "
    rejected = decision.get("rejected") or []
    reason = next((r[len(prefix) :] for r in rejected if str(r).startswith(prefix)), None)
    if reason is None:
        return warning
    return f"{found.group(0)}, but the service's decision rejected it: {reason}"
