"""What a pull-request reviewer asks beyond the hourly cost: the monthly cost the stated traffic
implies, and the SageMaker service quotas the deploy needs at its maximum.

Monthly cost: AWS's pricing calculator counts 730 hours in a month (365 days x 24 h / 12); of
each day's 24 hours, ``peak_hours_per_day`` (default 8: a working day) run at the maximum (the
capacity that serves the peak traffic the service states), the rest at the minimum (what the
least traffic keeps). An endpoint without a stated traffic is costed the same way from its
scaling bounds.

Quotas: Service Quotas names each SageMaker hosting quota ``<instance type> for endpoint
usage`` (service code ``sagemaker``), counted per account and region over every endpoint's
instances. Many accounts start at 0 for large GPU types, and a deploy that exceeds a quota
fails after CloudFormation has waited on the endpoint. The figure is what the endpoints hold at
their maximum; a blue/green update runs the new fleet beside the old one for a while.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError
from ..planning.decision_record import DecisionRecord
from .deploy_plan import EndpointPlan, Plan

HOURS_PER_MONTH = 730
"""Hours in a month as AWS's pricing calculator counts them (8,760 a year / 12)."""
DEFAULT_PEAK_HOURS_PER_DAY = 8.0
"""The assumption when none is given: 8 hours a day at the peak, 16 at the minimum."""
QUOTA_SERVICE_CODE = "sagemaker"
"""The Service Quotas service code of SageMaker's endpoint-usage quotas."""


@dataclass(frozen=True)
class MonthlyAssumption:
    """How many hours a day the endpoints run at their maximum (the rest at the minimum)."""

    peak_hours_per_day: float = DEFAULT_PEAK_HOURS_PER_DAY
    """Hours of each day at the maximum, 0 to 24."""

    def __post_init__(self) -> None:
        if not 0 <= self.peak_hours_per_day <= 24:
            raise ValidationError(
                "--peak-hours-per-day",
                f"{self.peak_hours_per_day:g}",
                "must be between 0 and 24 (hours of each day at the maximum)",
                f"pass e.g. --peak-hours-per-day {DEFAULT_PEAK_HOURS_PER_DAY:g}",
            )

    @property
    def hours_at_peak(self) -> float:
        """Hours a month at the maximum."""
        return HOURS_PER_MONTH * self.peak_hours_per_day / 24

    @property
    def hours_at_minimum(self) -> float:
        """Hours a month at the minimum."""
        return HOURS_PER_MONTH - self.hours_at_peak

    def describe(self) -> str:
        """The assumption in words, for the rendered plan."""
        return (
            f"{HOURS_PER_MONTH} hours a month, {self.peak_hours_per_day:g} of each day's 24 at "
            f"the peak and the rest at the minimum (--peak-hours-per-day); at the peak, an "
            f"LlmService runs the instances it expects there (the band's median), up to its "
            f"autoscaling maximum if the band's pessimistic edge holds: both are shown, and an "
            f"endpoint without a decision is costed at its maximum"
        )


@dataclass(frozen=True)
class QuotaNeed:
    """The instances of one type that the deploy holds at its maximum in one region."""

    region: str | None
    """The stacks' region; None for an environment-agnostic stack."""
    instance_type: str
    instances: int | None
    """None when a maximum is not a number at synth (a deploy-time value)."""

    @property
    def quota_name(self) -> str:
        """The quota's name as Service Quotas shows it."""
        return f"{self.instance_type} for endpoint usage"


def monthly_cost(endpoint: EndpointPlan, assumption: MonthlyAssumption) -> float | None:
    """The endpoint's monthly cost under the assumption; None when a price or bound is
    unknown or the endpoint is serverless (billed per request)."""
    if any(variant.serverless for variant in endpoint.variants):
        return None
    low, high = endpoint.cost_per_hour_min, endpoint.cost_per_hour_max
    if low is None or high is None:
        return None
    return low * assumption.hours_at_minimum + high * assumption.hours_at_peak


def expected_monthly_cost(endpoint: EndpointPlan, assumption: MonthlyAssumption) -> float | None:
    """The monthly cost with the peak hours at the instances an ``LlmService`` expects at its
    stated peak (its decision's ``instances_at_peak``, below the autoscaling maximum that
    ``monthly_cost`` charges); None for an endpoint without one decision, or unpriced."""
    decisions = [c.decision for c in endpoint.components if c.decision is not None]
    if len(decisions) != 1 or len(endpoint.variants) != 1:
        return None
    (variant,) = endpoint.variants
    low, high, most = endpoint.cost_per_hour_min, variant.cost_per_hour_max, variant.max_instances
    if low is None or high is None or not most:
        return None
    expected = min(most, DecisionRecord.from_metadata(decisions[0]).instances_at_peak)
    return low * assumption.hours_at_minimum + high / most * expected * assumption.hours_at_peak


def _expected_or_maximum(endpoint: EndpointPlan, assumption: MonthlyAssumption) -> float | None:
    """The expected monthly cost where a decision states it, else the cost at the maximum."""
    expected = expected_monthly_cost(endpoint, assumption)
    return monthly_cost(endpoint, assumption) if expected is None else expected


def quota_needs(plan: Plan) -> list[QuotaNeed]:
    """Per region and instance type, the instances every endpoint holds at its maximum."""
    totals: dict[tuple[str | None, str], int | None] = {}
    for stack in plan.stacks:
        for endpoint in stack.endpoints:
            for variant in endpoint.variants:
                if variant.serverless:
                    continue
                key = (stack.region, variant.instance_type)
                held = totals.get(key, 0)
                most = variant.max_instances
                totals[key] = None if held is None or most is None else held + most
    return [
        QuotaNeed(region, instance_type, instances)
        for (region, instance_type), instances in sorted(
            totals.items(), key=lambda item: (item[0][0] or "", item[0][1])
        )
    ]


def budget_markdown(plan: Plan, assumption: MonthlyAssumption) -> list[str]:
    """The monthly costs and the quotas, as a Markdown section of the plan."""
    endpoints = [(stack, endpoint) for stack in plan.stacks for endpoint in stack.endpoints]
    if not endpoints:
        return []
    out = ["### Monthly cost and quotas", "", f"Monthly cost assumes {assumption.describe()}.", ""]
    out += ["| Endpoint | Monthly cost, expected | Monthly cost at the maximum |", "|---|---|---|"]
    costs, expected_costs = [], []
    for stack, endpoint in endpoints:
        cost = monthly_cost(endpoint, assumption)
        expected = _expected_or_maximum(endpoint, assumption)
        costs.append(cost)
        expected_costs.append(expected)
        out.append(
            f"| `{stack.name}` / `{endpoint.logical_id}` | {_shown(expected)} | {_shown(cost)} |"
        )
    if all(cost is not None for cost in costs):
        out.append(
            f"| Total | ${sum(c for c in expected_costs if c is not None):,.2f} "
            f"| ${sum(c for c in costs if c is not None):,.2f} |"
        )
    out += ["", "| Region | Service Quotas (sagemaker) | Instances at the maximum |"]
    out.append("|---|---|---|")
    for need in quota_needs(plan):
        count = "unknown (a deploy-time maximum)" if need.instances is None else need.instances
        out.append(
            f"| {need.region or 'any (environment-agnostic stack)'} | {need.quota_name} | {count} |"
        )
    return [*out, ""]


def budget_json(plan: Plan, assumption: MonthlyAssumption) -> dict[str, Any]:
    """The monthly costs (per stack and endpoint) and the quotas, JSON-ready."""
    return {
        "assumption": {
            "hours_per_month": HOURS_PER_MONTH,
            "peak_hours_per_day": assumption.peak_hours_per_day,
        },
        "monthly_costs": [
            {
                "stack": stack.name,
                "endpoint": endpoint.logical_id,
                "monthly_cost": _cents(cost),
                "monthly_cost_expected": _cents(_expected_or_maximum(endpoint, assumption)),
            }
            for stack in plan.stacks
            for endpoint in stack.endpoints
            for cost in [monthly_cost(endpoint, assumption)]
        ],
        "quotas": [
            {
                "region": need.region,
                "service_code": QUOTA_SERVICE_CODE,
                "quota_name": need.quota_name,
                "instance_type": need.instance_type,
                "instances": need.instances,
            }
            for need in quota_needs(plan)
        ],
    }


def _shown(cost: float | None) -> str:
    return "not priced per hour (serverless) or price unknown" if cost is None else f"${cost:,.2f}"


def _cents(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
