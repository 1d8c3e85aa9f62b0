"""Rendering the plan: Markdown for a pull-request comment, and JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..planning.decision_record import ChoiceSource, DecisionRecord, Prediction
from .budget import MonthlyAssumption, budget_json, budget_markdown
from .deploy_plan import (
    CustomResourcePlan,
    EndpointPlan,
    ImagePlan,
    Plan,
    ScalingPlan,
    SizingVerdict,
    VariantPlan,
)


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


def render_markdown(plan: Plan, assumption: MonthlyAssumption | None = None) -> str:
    """The plan as Markdown fit for a pull-request comment; its monthly costs under
    ``assumption`` (default ``MonthlyAssumption()``) and the quotas it needs come last."""
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
    out += budget_markdown(plan, assumption or MonthlyAssumption())
    return "\n".join(out).rstrip() + "\n"


SERVERLESS_PRICING = (
    "not billed per instance-hour: serverless inference bills each request's compute time "
    "(by memory size) and the data processed, and provisioned concurrency by the hour; the "
    "price list has no serverless prices"
)
"""How serverless inference is billed (Amazon SageMaker AI pricing page, serverless
inference)."""


def _cost_line(endpoint: EndpointPlan) -> str:
    if endpoint.variants and all(variant.serverless for variant in endpoint.variants):
        return SERVERLESS_PRICING
    return (
        f"{_money(endpoint.cost_per_hour_min)} at min, "
        f"{_money(endpoint.cost_per_hour_max)} at max ({endpoint.price_basis})"
    )


def _variant_rows(variant: VariantPlan) -> list[str]:
    prefix = f"Variant `{variant.name}`"
    unit = "provisioned concurrency" if variant.serverless else "instances"
    capacity = (
        "instances: none (serverless)"
        if variant.serverless
        else f"instances: initial {_count(variant.initial_instances)}, min "
        f"{_count(variant.min_instances)}, max {_count(variant.max_instances)}"
    )
    out = [_row(prefix, [f"{variant.instance_type} ({variant.accelerators})", capacity])]
    if variant.options:
        out.append(_row(f"{prefix} options", variant.options))
    if variant.scaling is not None:
        out.append(_row(f"{prefix} scaling", _scaling_lines(variant.scaling, unit)))
    if variant.model is None:
        return out
    copies = (
        "none: serverless endpoints run on CPU"
        if variant.serverless
        else f"{_count(variant.accelerators_per_copy)} "
        f"({_count(variant.copies_per_instance)} copies per instance)"
    )
    return [
        *out,
        _row(f"{prefix} model", [variant.model]),
        _row(f"{prefix} image", [f"`{variant.image.uri}`" if variant.image else "n/a"]),
        _row(f"{prefix} container caching", [_caching(variant.image)]),
        _row(f"{prefix} accelerators per copy", [copies]),
        _row(f"{prefix} sizing", _sizing_lines(variant.sizing)),
    ]


def _endpoint_markdown(endpoint: EndpointPlan) -> list[str]:
    out = [
        f"#### Endpoint `{endpoint.logical_id}` ({endpoint.kind})",
        "",
        "| | |",
        "|---|---|",
        _row("Cost per hour", [_cost_line(endpoint)]),
    ]
    if endpoint.options:
        out.append(_row("Options", endpoint.options))
    for variant in endpoint.variants:
        out += _variant_rows(variant)
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


def _kv_cache_of(goal: Mapping[str, Any]) -> str:
    """``, KV cache fp8`` where the decision records a KV cache other than ``auto``."""
    kv_cache = goal.get("kv_cache_precision")
    return f", KV cache {kv_cache}" if kv_cache else ""


def _decision_rows(metadata: dict[str, Any]) -> list[str]:
    """An LlmService's decision (its ``DecisionRecord``, read back from its metadata): goal,
    choices (recommended or overridden), predicted figures and their sources, the option's
    price, reasoning, alternatives and rejections."""
    decision = DecisionRecord.from_metadata(metadata)
    goal = decision.goal
    predicted = decision.predicted

    def choice(name: str) -> str:
        entry = decision.choices[name]
        if entry.source is ChoiceSource.BENCHMARK:
            return f"{name}: deploy-time benchmark's measured knee (predicted {entry.value})"
        return f"{name}: {entry.value} ({entry.source.value})"

    rows = [
        _row(
            "Service goal",
            [
                f"{goal.get('model')} ({goal.get('precision')}{_kv_cache_of(goal)}), "
                f"{goal.get('workload')}",
                f"SLO {goal.get('slo')}; {goal.get('traffic')}",
                f"candidates: {', '.join(goal.get('candidates') or [])}",
                f"prices: {goal.get('prices')}",
            ],
        ),
        _row("Calibration", _calibration_lines(decision)),
        _row("Service decision", [choice(name) for name in sorted(decision.choices)]),
        _row(
            "Predicted",
            [
                f"at peak: {predicted.concurrency} requests in flight "
                f"({predicted.concurrency_per_copy} per copy)",
                f"{predicted.ms_per_token} ms/token{_p10_p90(predicted)}, TTFT "
                f"{predicted.ttft_ms} ms",
                f"{predicted.tokens_per_s} tokens/s, {predicted.requests_per_s} requests/s",
                f"knee: {predicted.knee_concurrency_per_copy} in flight per copy",
                _hourly_line(decision),
                f"{_money(decision.cost_per_million_tokens)} per 1M output tokens at peak",
            ],
        ),
        _row("Sources", list(predicted.sources) or ["not recorded"]),
        _row("Reasoning", list(decision.reasoning) or ["none given"]),
        _row("Alternatives", list(decision.alternatives) or ["none"]),
        _row(f"Rejected ({decision.rejected_count})", list(decision.rejected) or ["none"]),
    ]
    if decision.warnings:
        rows.append(_row("Override warnings", [f"⚠️ {warning}" for warning in decision.warnings]))
    return rows


def _hourly_line(decision: DecisionRecord) -> str:
    """$/h at the minimum, expected at the peak (the median's instances) and at the
    autoscaling ceiling (the band's pessimistic edge)."""
    hourly = decision.hourly()
    if hourly is None:
        return "option price unknown"
    fewest, peak, most = hourly["minimum"], hourly["expected_at_peak"], hourly["ceiling"]
    return (
        f"$/h: {_money(fewest['price_per_hour'])} at the minimum "
        f"({fewest['instances']} instance(s)), {_money(peak['price_per_hour'])} expected at "
        f"peak ({peak['instances']}), {_money(most['price_per_hour'])} at the ceiling "
        f"({most['instances']})"
    )


def _calibration_lines(decision: DecisionRecord) -> list[str]:
    """Where the efficiency factors come from, what did not transfer, and what the calibration
    changed against the uncalibrated decision."""
    source = str(decision.goal.get("calibration") or "uncalibrated")
    if source == "uncalibrated":
        return ["none: the performance model's uncalibrated defaults"]
    lines = [source, *(f"⚠️ {note}" for note in decision.calibration_notes)]
    if decision.calibration_change:
        lines.append(decision.calibration_change)
    return lines


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


def render_json(plan: Plan, assumption: MonthlyAssumption | None = None) -> str:
    """The plan as indented, key-sorted JSON; ``budget`` holds the monthly costs under
    ``assumption`` (default ``MonthlyAssumption()``) and the quotas."""
    data = plan.to_dict()
    data["budget"] = budget_json(plan, assumption or MonthlyAssumption())
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _p10_p90(predicted: Prediction) -> str:
    """`` (p10-p90 18.3-42.9)`` after the predicted ms/token, or nothing where the template
    does not record it."""
    band = predicted.ms_per_token_p10_p90
    return "" if band is None else f" (p10-p90 {band[0]:.1f}-{band[1]:.1f})"
