"""Where CloudFormation offers the SageMaker resource types the library emits, by region.

Read off CloudFormation's per-region resource schemas (as shipped in cfn-lint 1.51): an
``AWS::SageMaker::InferenceComponent`` in any other region fails at deploy time with an
unknown resource type, so the library refuses it at synth instead.
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
