"""Container caching (catalog/container_caching.py): any image in Amazon ECR, on accelerator
instance types, in commercial regions, on either kind of endpoint (the 2026 rule)."""

from __future__ import annotations

import pytest

from cdk_sagemaker_llm import Accelerator, InstanceType
from cdk_sagemaker_llm.catalog.container_caching import caching_applies
from cdk_sagemaker_llm.review.render import _caching
from cdk_sagemaker_llm.review.serving import image_plan as _image_plan

DLC = "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.38.0-lmi29.0.0-cu130"
OWN = "111122223333.dkr.ecr.us-east-1.amazonaws.com/team/llm:1.0"
ELSEWHERE = "ghcr.io/huggingface/text-generation-inference:3.3.6"


@pytest.mark.parametrize(
    ("instance_type", "region", "applies"),
    [
        (InstanceType.G5_XLARGE, None, True),
        (InstanceType.INF2_XLARGE, "us-east-1", True),
        (InstanceType.P6_B200_48XLARGE, "eu-west-1", True),
        (InstanceType.G5_XLARGE, "cn-north-1", False),  # not a commercial region
        (InstanceType.G5_XLARGE, "us-gov-west-1", False),
        (InstanceType.of("ml.c7i.4xlarge", accelerator_count=0), None, False),
        (InstanceType.of("ml.c7i.4xlarge"), None, None),  # accelerators unknown
        (
            InstanceType.of("ml.x.48xlarge", accelerator=Accelerator.H100, accelerator_count=8),
            None,
            True,
        ),
    ],
)
def test_caching_applies(
    instance_type: InstanceType, region: str | None, applies: bool | None
) -> None:
    assert caching_applies(instance_type, region) is applies


@pytest.mark.parametrize(
    ("uri", "instance_type", "text"),
    [
        (DLC, InstanceType.G6_XLARGE, "eligible (lmi 0.38.0); applies: accelerator instance type"),
        (OWN, InstanceType.G6_XLARGE, "eligible (image); applies: accelerator instance type"),
        (
            OWN,
            InstanceType.of("ml.c7i.4xlarge"),
            "eligible (image); does not apply: the instance type's accelerators are unknown",
        ),
        (
            DLC,
            InstanceType.of("ml.c7i.4xlarge", accelerator_count=0),
            "eligible (lmi 0.38.0); does not apply: the instance type has no accelerator",
        ),
        (
            ELSEWHERE,
            InstanceType.G6_XLARGE,
            "not eligible (image is not known to be in Amazon ECR)",
        ),
        (
            {"Fn::GetAtt": ["Job", "RecommendedInferenceImage"]},
            InstanceType.G6_XLARGE,
            "unknown (the image URI is resolved at deploy time)",
        ),
    ],
)
def test_plan_reports_caching_per_image_and_instance_type(
    uri: object, instance_type: InstanceType, text: str
) -> None:
    assert _caching(_image_plan(uri, {}, instance_type)) == text


GOV_DLC = "442386744353.dkr.ecr.us-gov-west-1.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128"
CHINA_DLC = "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/djl-inference:0.33.0-lmi15.0.0-cu128"
NOT_COMMERCIAL = (
    "does not apply: {} is not a commercial AWS Region (caching covers commercial Regions only)"
)


@pytest.mark.parametrize(("uri", "region"), [(GOV_DLC, "us-gov-west-1"), (CHINA_DLC, "cn-north-1")])
def test_plan_reports_no_caching_outside_the_commercial_regions(uri: str, region: str) -> None:
    """The rule covers commercial Regions only (catalog/container_caching.py); plan stated
    "applies" for a GovCloud or China stack on an accelerator instance type."""
    plan = _image_plan(uri, {}, InstanceType.G6_XLARGE)
    assert plan.caching_applies is False
    assert _caching(plan) == "eligible (lmi 0.33.0); " + NOT_COMMERCIAL.format(region)


def test_plan_reads_the_stacks_region_when_the_uri_does_not_name_one() -> None:
    """An image URI with tokens (your ECR repository's) names no region: the stack's does."""
    token_uri = {"Fn::Join": ["", ["111122223333.dkr.ecr.", {"Ref": "AWS::Region"}, "/llm:1"]]}
    metadata = {"cdk-sagemaker-llm:image": {"containerCachingEligible": True}}
    plan = _image_plan(token_uri, metadata, InstanceType.G6_XLARGE, "us-gov-east-1")
    assert plan.caching_applies is False
    assert _image_plan(token_uri, metadata, InstanceType.G6_XLARGE, "us-east-1").caching_applies
