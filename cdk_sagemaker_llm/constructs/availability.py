"""Where CloudFormation offers the SageMaker resource types the library emits, by region.

Read off CloudFormation's per-region resource schemas (as shipped in cfn-lint 1.51 for
inference components, 1.58 for models and endpoints): a resource type a region's CloudFormation
lacks fails the deploy with an unknown resource type, so the library refuses it at synth.
"""

from __future__ import annotations

from aws_cdk import Aws, CfnRule, CfnRuleAssertion, Fn
from constructs import Construct

from .synth_cache import region_of, stack_of
from .validation import ValidationError, is_unresolved

INFERENCE_COMPONENT_REGIONS = frozenset(
    [
        "us-east-1",
        "us-east-2",
        "us-west-2",
        "ca-central-1",
        "sa-east-1",
        "eu-central-1",
        "eu-west-1",
        "eu-west-2",
        "eu-north-1",
        "ap-south-1",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "me-south-1",
        "me-central-1",
    ]
)
"""Regions whose CloudFormation has ``AWS::SageMaker::InferenceComponent``."""

_RULE_ID = "InferenceComponentRegionRule"

REGIONS_WITHOUT_HOSTING = frozenset(["me-central-1"])
"""Regions whose CloudFormation lacks ``AWS::SageMaker::Model``, ``EndpointConfig`` and
``Endpoint`` (cfn-lint 1.58's per-region schemas; aws-cdk-lib 2.275's template validation warns
the same): me-central-1 lists ``InferenceComponent`` but none of the three it needs."""


def require_hosting(scope: Construct, prop: str) -> None:
    """Fail at synth when the stack's region is one whose CloudFormation cannot create a
    model, an endpoint configuration or an endpoint (``REGIONS_WITHOUT_HOSTING``); the deploy
    would fail on an unknown resource type. A region-agnostic stack is not checked."""
    region = region_of(stack_of(scope))
    if not is_unresolved(region) and region in REGIONS_WITHOUT_HOSTING:
        raise ValidationError(
            prop,
            region,
            "CloudFormation does not offer AWS::SageMaker::Model, EndpointConfig or Endpoint "
            "in this region",
            "deploy the stack to a region whose CloudFormation offers them (e.g. eu-central-1)",
        )


def require_inference_components(scope: Construct, prop: str) -> None:
    """Fail at synth when the stack's region lacks inference components; for a
    region-agnostic stack, add a template rule that fails the deployment early instead."""
    stack = stack_of(scope)
    region = region_of(stack)
    regions = sorted(INFERENCE_COMPONENT_REGIONS)
    if is_unresolved(region):
        if stack.node.try_find_child(_RULE_ID) is None:
            CfnRule(
                stack,
                _RULE_ID,
                assertions=[
                    CfnRuleAssertion(
                        assert_=Fn.condition_contains(regions, Aws.REGION),
                        assert_description="CloudFormation offers AWS::SageMaker::"
                        "InferenceComponent only in " + ", ".join(regions),
                    )
                ],
            )
        return
    if region not in INFERENCE_COMPONENT_REGIONS:
        raise ValidationError(
            prop,
            region,
            "CloudFormation does not offer AWS::SageMaker::InferenceComponent in this region",
            f"deploy to one of {', '.join(regions)}, or serve the model from an "
            "instance-based Endpoint",
        )
