"""Application Auto Scaling targets and policies, and how fast each policy notices a need to
scale out.
"""

from __future__ import annotations

from typing import Any

from ..catalog.scaling_metrics import (
    INSTANCE_COUNT_DIMENSION,
    TARGET_TRACKING_SCALE_OUT_DATAPOINTS,
    alarm_period_seconds,
)
from .deploy_plan import ScalingPlan, ScalingPolicyPlan
from .template import Template, literal_int, refs, shown


def scaling_plans(template: Template) -> dict[str, ScalingPlan]:
    """Scalable targets by logical id, each with its policies."""
    targets: dict[str, ScalingPlan] = {}
    for logical_id, _ in template.of_type("AWS::ApplicationAutoScaling::ScalableTarget"):
        properties = template.properties(logical_id)
        targets[logical_id] = ScalingPlan(
            dimension=shown(properties.get("ScalableDimension", "")),
            min_capacity=literal_int(properties.get("MinCapacity")),
            max_capacity=literal_int(properties.get("MaxCapacity")),
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


def _target_by_resource_id(template: Template, policy: dict[str, Any]) -> str | None:
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
    template: Template,
    logical_id: str,
    properties: dict[str, Any],
    alarms: list[tuple[str, dict[str, Any]]],
) -> ScalingPolicyPlan:
    policy_type = str(properties.get("PolicyType", ""))
    if policy_type == "TargetTrackingScaling":
        config = properties.get("TargetTrackingScalingPolicyConfiguration") or {}
        predefined = (config.get("PredefinedMetricSpecification") or {}).get("PredefinedMetricType")
        custom = config.get("CustomizedMetricSpecification") or {}
        metric = shown(predefined) if predefined else shown(custom.get("MetricName", "custom"))
        period = alarm_period_seconds(predefined if isinstance(predefined, str) else "")
        return ScalingPolicyPlan(
            logical_id=logical_id,
            policy_type="target tracking",
            trigger=f"{metric} at {shown(config.get('TargetValue'))}",
            detection_seconds=period * TARGET_TRACKING_SCALE_OUT_DATAPOINTS,
            detection_basis=f"{TARGET_TRACKING_SCALE_OUT_DATAPOINTS} datapoints of {period} s "
            "(the scale-out alarm target tracking creates)",
        )
    step = properties.get("StepScalingPolicyConfiguration") or {}
    adjustments = [shown(a.get("ScalingAdjustment")) for a in step.get("StepAdjustments") or []]
    trigger = f"{shown(step.get('AdjustmentType', 'ChangeInCapacity'))} {', '.join(adjustments)}"
    for alarm_id, _ in alarms:
        alarm = template.properties(alarm_id)
        if logical_id not in refs(alarm.get("AlarmActions")):
            continue
        alarm_period = literal_int(alarm.get("Period"))
        if alarm_period is None:
            for query in alarm.get("Metrics") or []:
                alarm_period = alarm_period or literal_int(
                    (query.get("MetricStat") or {}).get("Period")
                )
        datapoints = literal_int(alarm.get("DatapointsToAlarm")) or literal_int(
            alarm.get("EvaluationPeriods")
        )
        metric = shown(alarm.get("MetricName", "a metric expression"))
        operator = shown(alarm.get("ComparisonOperator", ""))
        threshold = shown(alarm.get("Threshold", ""))
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


def scaling_for(
    template: Template,
    scaling: dict[str, ScalingPlan],
    dimension: str,
    logical_id: str,
    name: Any,
) -> ScalingPlan | None:
    for target_id, plan in scaling.items():
        if plan.dimension != dimension:
            continue
        resource_id = template.properties(target_id).get("ResourceId")
        if logical_id in refs(resource_id) or (
            isinstance(name, str) and shown(resource_id).split("/")[-1] == name
        ):
            return plan
    return None


def variant_scaling(
    template: Template,
    scaling: dict[str, ScalingPlan],
    endpoint_id: str,
    endpoint_name: Any,
    variant: str,
    dimension: str = INSTANCE_COUNT_DIMENSION,
) -> ScalingPlan | None:
    """The scaling of one variant's instances (or, for a serverless variant, its provisioned
    concurrency)."""
    for target_id, plan in scaling.items():
        if plan.dimension != dimension:
            continue
        resource_id = template.properties(target_id).get("ResourceId")
        rendered = shown(resource_id)
        names_endpoint = endpoint_id in refs(resource_id) or (
            isinstance(endpoint_name, str) and f"endpoint/{endpoint_name}/" in rendered
        )
        if names_endpoint and rendered.endswith(f"/variant/{variant}"):
            return plan
    return None
