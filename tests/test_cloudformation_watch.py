"""The watch on what CloudFormation lacks (docs/guides/cloudformation-gaps.md).

One test per SageMaker API feature that CloudFormation cannot express yet: it fails as soon as
the installed aws-cdk-lib's L1 classes gain the property (or, for the ``KV_AWARE`` value, which
the L1 types as a free string, as soon as CloudFormation's schema accepts it), so the library
offers the feature in its next release. Each also checks that botocore still has the feature,
so the watch cannot go stale. And no handler the library ships mutates a CloudFormation-owned
endpoint.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path

import aws_cdk as cdk
import botocore.session
import pytest
from aws_cdk import aws_sagemaker as l1
from conftest import CDK_CONTEXT, PROJECT_ROOT, cloudformation_schema

from app import build_app

GAPS_PAGE = PROJECT_ROOT / "docs" / "guides" / "cloudformation-gaps.md"
SAGEMAKER = botocore.session.get_session().get_service_model("sagemaker")


def _parameters(l1_class: type) -> set[str]:
    """The keyword props of an L1 class or property struct (its ``__init__``: jsii classes
    report ``*args, **kwargs`` for the class itself)."""
    return set(inspect.signature(l1_class.__init__).parameters)  # type: ignore[misc]


def _cloudformation_types() -> set[str]:
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    return set(PROVIDER_SCHEMA_MANAGER.get_resource_types("us-east-1"))


def _kv_aware_in_the_api() -> bool:
    return "KV_AWARE" in SAGEMAKER.shape_for("RoutingStrategy").enum


def _kv_aware_in_cloudformation() -> list[str]:
    schema = cloudformation_schema("AWS::SageMaker::EndpointConfig")
    routing = schema["definitions"]["RoutingConfig"]["properties"]["RoutingStrategy"]
    found = ["CloudFormation's schema"] if "KV_AWARE" in routing.get("enum", []) else []
    if "KV_AWARE" in Path(inspect.getfile(l1)).read_text():
        found.append("aws-cdk-lib's aws_sagemaker module")
    return found


def _partitions_in_the_api() -> bool:
    variant = SAGEMAKER.shape_for("ProductionVariant").members
    requirements = SAGEMAKER.shape_for("InferenceComponentComputeResourceRequirements").members
    return "AcceleratorPartitionLayouts" in variant and "AcceleratorPartitionType" in requirements


def _partitions_in_cloudformation() -> list[str]:
    found = []
    if _parameters(l1.CfnEndpointConfig.ProductionVariantProperty) & {
        "accelerator_partition_layouts"
    }:
        found.append("CfnEndpointConfig.ProductionVariantProperty.accelerator_partition_layouts")
    requirements = l1.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty
    if "accelerator_partition_type" in _parameters(requirements):
        found.append(
            "InferenceComponentComputeResourceRequirementsProperty.accelerator_partition_type"
        )
    return found


def _routers_in_the_api() -> bool:
    return "CreateInferenceRouter" in SAGEMAKER.operation_names


def _routers_in_cloudformation() -> list[str]:
    found = [name for name in dir(l1) if "InferenceRouter" in name]
    if "AWS::SageMaker::InferenceRouter" in _cloudformation_types():
        found.append("AWS::SageMaker::InferenceRouter")
    return found


def _cross_region_in_the_api() -> bool:
    return "CrossRegionTrafficConfig" in SAGEMAKER.shape_for("CreateEndpointConfigInput").members


def _cross_region_in_cloudformation() -> list[str]:
    return sorted(
        name
        for name in _parameters(l1.CfnEndpointConfig) | set(dir(l1.CfnEndpointConfig))
        if "cross_region" in name.lower() or "CrossRegion" in name
    )


def _endpoint_policy_in_the_api() -> bool:
    return {"PutEndpointPolicy", "GetEndpointPolicy"} <= set(SAGEMAKER.operation_names)


def _endpoint_policy_in_cloudformation() -> list[str]:
    found = [name for name in dir(l1) if re.fullmatch(r"CfnEndpoint\w*Polic\w*", name)]
    found += sorted(name for name in _parameters(l1.CfnEndpoint) if "polic" in name.lower())
    found += sorted(
        name
        for name in _cloudformation_types()
        if name.startswith("AWS::SageMaker::") and "EndpointPolicy" in name
    )
    return found


WATCHED = {
    "KV_AWARE routing": (_kv_aware_in_the_api, _kv_aware_in_cloudformation, "1.44.4"),
    "GPU partitions": (_partitions_in_the_api, _partitions_in_cloudformation, "1.43.123"),
    "inference routers": (_routers_in_the_api, _routers_in_cloudformation, "1.44.4"),
    "cross-Region traffic cap": (
        _cross_region_in_the_api,
        _cross_region_in_cloudformation,
        "1.44.4",
    ),
    "endpoint resource policies": (
        _endpoint_policy_in_the_api,
        _endpoint_policy_in_cloudformation,
        "1.44.4",
    ),
}
"""Each feature: is it in botocore's model, where CloudFormation has it (empty: nowhere), and
the first botocore release that has it (as the documentation page says)."""


@pytest.mark.parametrize("feature", sorted(WATCHED))
def test_cloudformation_still_lacks(feature: str) -> None:
    in_the_api, in_cloudformation, _ = WATCHED[feature]
    assert in_the_api(), f"botocore's SageMaker model no longer has {feature}: update the watch"
    found = in_cloudformation()
    assert found == [], (
        f"CloudFormation can now express {feature} ({', '.join(found)}): offer it as "
        f"{GAPS_PAGE.name} says, move it to 'Features CloudFormation already has' and drop "
        "its watch"
    )


def test_the_page_lists_every_watched_feature_with_its_botocore_version() -> None:
    rows = {
        cells[0]: cells[1]
        for line in GAPS_PAGE.read_text().splitlines()
        if line.startswith("| ") and not line.startswith("| feature")
        for cells in [[cell.strip() for cell in line.strip("|").split("|")]]
    }
    listed = {re.sub(r"`", "", name): version for name, version in rows.items()}
    assert listed == {feature: version for feature, (*_, version) in WATCHED.items()}


# ----- No custom resource mutates a CloudFormation-owned endpoint -----------------------------


def _mutating_operations() -> set[str]:
    """The SageMaker operations that change an endpoint or what it serves."""
    return {
        name
        for name in SAGEMAKER.operation_names
        if re.match(r"(Create|Update|Delete|Put)", name)
        and re.search(r"Endpoint|InferenceComponent|InferenceRouter", name)
    }


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_no_handler_calls_an_operation_that_changes_an_endpoint() -> None:
    forbidden = {_snake(name) for name in _mutating_operations()}
    assert {"update_endpoint", "put_endpoint_policy", "create_inference_router"} <= forbidden
    called = set()
    for source in (PROJECT_ROOT / "cdk_sagemaker_llm" / "lambdas").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Attribute):
                called.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                called.add(node.value)
    assert called & (forbidden | _mutating_operations()) == set()


def test_no_role_of_the_reference_app_may_change_an_endpoint(tmp_path: Path) -> None:
    """Every IAM statement the reference app synthesizes: no SageMaker action (or wildcard)
    that would let a custom resource change an endpoint CloudFormation owns."""
    app = cdk.App(outdir=str(tmp_path), context=CDK_CONTEXT)
    build_app(app)
    app.synth()
    forbidden = {f"sagemaker:{name}".lower() for name in _mutating_operations()}
    actions = set()
    for template in tmp_path.glob("*.template.json"):
        for resource in json.loads(template.read_text())["Resources"].values():
            document = resource.get("Properties", {}).get("PolicyDocument") or {}
            for statement in document.get("Statement", []):
                granted = statement.get("Action", [])
                actions |= {granted} if isinstance(granted, str) else set(granted)
    sagemaker_actions = {action.lower() for action in actions if action.startswith("sagemaker:")}
    assert sagemaker_actions, "the reference app grants SageMaker actions: the check would be void"
    assert "sagemaker:*" not in sagemaker_actions
    assert not any(action.endswith("*") and "endpoint" in action for action in sagemaker_actions)
    assert sagemaker_actions & forbidden == set()


def test_the_probes_find_what_cloudformation_already_has() -> None:
    """Positive control: the same ways of looking find properties and values that exist, so an
    empty result above means absent, not a probe that cannot see."""
    assert "metrics_config" in _parameters(l1.CfnEndpointConfig)
    assert (
        "PREFIX_AWARE"
        in cloudformation_schema("AWS::SageMaker::EndpointConfig")["definitions"]["RoutingConfig"][
            "properties"
        ]["RoutingStrategy"]["enum"]
    )
    assert "number_of_accelerator_devices_required" in _parameters(
        l1.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty
    )
    # Resource types every supported aws-cdk-lib and cfn-lint has (AIWorkloadConfig, which the
    # managed benchmark engine synthesizes, since aws-cdk-lib 2.272.0, the package's floor).
    assert "CfnInferenceComponent" in dir(l1)
    assert "AWS::SageMaker::InferenceComponent" in _cloudformation_types()
