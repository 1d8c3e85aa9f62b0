"""Read a synthesized cloud assembly and describe what it deploys, for pull-request review.

``plan`` reads only ``manifest.json`` and the stacks' ``*.template.json``: real resource
properties (endpoint configs, inference components, models and their container environment,
Application Auto Scaling targets and policies, CloudWatch alarms) plus the small
``cdk-sagemaker-llm:`` metadata the constructs add where a fact is not in the properties (a
model's architecture, an image's container-caching eligibility, an ``LlmService``'s
``ServiceDecision``). Resources it does not know are ignored, so it works on any template.

The package, in the order of the work:

- ``assembly``: reading the cloud assembly (templates, regions);
- ``template``: helpers over one template (resources, references, values in words);
- ``model``: the plan's model of what deploys (``Plan``, ``StackPlan``, ``EndpointPlan``...);
- ``endpoints`` (with ``serving``, ``scaling``, ``options``, ``custom_resources``): building
  that model from the templates;
- ``budget``: the monthly cost under the stated traffic, and the quotas the deploy needs;
- ``render``: Markdown for a pull-request comment, and JSON.
"""

from __future__ import annotations

from .assembly import read_templates, stack_regions
from .budget import MonthlyAssumption, QuotaNeed, monthly_cost, quota_needs
from .deploy_plan import (
    ComponentPlan,
    CustomResourcePlan,
    EndpointPlan,
    ImagePlan,
    Plan,
    ScalingPlan,
    ScalingPolicyPlan,
    SizingVerdict,
    StackPlan,
    VariantPlan,
)
from .endpoints import build_plan, plan_template
from .render import render_json, render_markdown

__all__ = [
    "ComponentPlan",
    "CustomResourcePlan",
    "EndpointPlan",
    "ImagePlan",
    "MonthlyAssumption",
    "Plan",
    "QuotaNeed",
    "ScalingPlan",
    "ScalingPolicyPlan",
    "SizingVerdict",
    "StackPlan",
    "VariantPlan",
    "build_plan",
    "monthly_cost",
    "plan_template",
    "quota_needs",
    "read_templates",
    "render_json",
    "render_markdown",
    "stack_regions",
]
