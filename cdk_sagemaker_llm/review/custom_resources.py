"""Optimization jobs and benchmarks (custom resources: CloudFormation has no resource for
either).
"""

from __future__ import annotations

import json
from typing import Any

from ..template_metadata import BENCHMARK, BENCHMARK_RESOURCE, OPTIMIZATION_JOB_RESOURCE
from .template import shown

KINDS = {OPTIMIZATION_JOB_RESOURCE: "optimization-job", BENCHMARK_RESOURCE: "benchmark"}
"""The kind of each custom-resource type that starts deploy-time work. The ``...Output``
types only read a finished job's or benchmark's results, so they are not listed twice."""


def custom_kind(resource: dict[str, Any]) -> str | None:
    """``optimization-job``, ``benchmark`` or None, from the resource type the constructs
    write (``template_metadata``), or the benchmark metadata key."""
    if BENCHMARK in (resource.get("Metadata") or {}):
        return "benchmark"
    return KINDS.get(str(resource.get("Type", "")))


def custom_details(resource: dict[str, Any]) -> dict[str, str]:
    details: dict[str, str] = {}
    for key, value in sorted((resource.get("Metadata") or {}).items()):
        if str(key).startswith("cdk-sagemaker-llm:") and isinstance(value, dict):
            for inner, item in sorted(value.items()):
                details[str(inner)] = short(item)
    if details and BENCHMARK in (resource.get("Metadata") or {}):
        return details  # the construct states what to review; its properties are plumbing
    properties = resource.get("Properties") or {}
    request = properties.get("Request")
    if isinstance(request, dict) and "OptimizationConfigs" in request:
        details.update(_optimization_request_details(request))
        return details
    for key, value in sorted(properties.items()):
        if key in ("ServiceToken", "ServiceTimeout") or key in details:
            continue
        details[key] = short(value)
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
        "DeploymentInstanceType": short(request.get("DeploymentInstanceType")),
        "Techniques": ", ".join(techniques) or "none",
    }
    runtime = (request.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds")
    if runtime is not None:
        details["MaxRuntimeInSeconds"] = short(runtime)
    environment = request.get("OptimizationEnvironment")
    if isinstance(environment, dict) and environment:
        details["OptimizationEnvironment"] = short(environment)
    return details


def short(value: Any, limit: int = 120) -> str:
    text = (
        shown(value)
        if not isinstance(value, dict | list) or is_intrinsic(value)
        else json.dumps(value, sort_keys=True)
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_intrinsic(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and len(value) == 1
        and next(iter(value)) in ("Ref", "Fn::GetAtt", "Fn::Join", "Fn::Sub", "Fn::FindInMap")
    )
