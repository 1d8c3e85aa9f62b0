"""API contracts: handlers' boto3 calls and the synthesized SageMaker resources, held to
botocore's service models (``contracts.py``, the ``api_contract`` fixture in ``conftest.py``)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk.assertions import Template
from botocore.exceptions import ParamValidationError
from botocore.stub import Stubber
from botocore.validate import validate_parameters
from conftest import new_app
from contracts import checked, service_model, validate_request

from app import build_app

ENDPOINT_CONFIG = {
    "EndpointConfigName": "config",
    "ProductionVariants": [
        {"VariantName": "AllTraffic", "InstanceType": "ml.g5.2xlarge", "InitialInstanceCount": 1}
    ],
}


def with_variant(**changes: Any) -> dict[str, Any]:
    variant = {**ENDPOINT_CONFIG["ProductionVariants"][0], **changes}  # type: ignore[index]
    return {**ENDPOINT_CONFIG, "ProductionVariants": [variant]}


def test_a_valid_request_passes() -> None:
    validate_request("sagemaker", "CreateEndpointConfig", ENDPOINT_CONFIG)
    validate_request("sagemaker", "create_endpoint_config", ENDPOINT_CONFIG)


def test_enums_and_maximums_are_checked_where_botocore_does_not() -> None:
    bad_enum = with_variant(InstanceType="ml.g5.3xlarge")
    above_max = with_variant(ContainerStartupHealthCheckTimeoutInSeconds=3601)
    shape = service_model("sagemaker").operation_model("CreateEndpointConfig").input_shape
    validate_parameters(bad_enum, shape)  # botocore's validator lets both through
    validate_parameters(above_max, shape)
    with pytest.raises(ParamValidationError, match=r"'ml\.g5\.3xlarge' is not one of"):
        validate_request("sagemaker", "CreateEndpointConfig", bad_enum)
    with pytest.raises(ParamValidationError, match="above the maximum 3600"):
        validate_request("sagemaker", "CreateEndpointConfig", above_max)
    with pytest.raises(ParamValidationError, match="ProductionVariants"):
        validate_request("sagemaker", "CreateEndpointConfig", {"EndpointConfigName": "c"})


def test_every_boto3_call_of_a_test_is_validated(api_contract: list[str]) -> None:
    client = boto3.client("sagemaker", region_name="us-east-1")
    with Stubber(client) as stubber:
        stubber.add_response("create_endpoint_config", {"EndpointConfigArn": "a" * 20})
        client.create_endpoint_config(**ENDPOINT_CONFIG)
        with pytest.raises(ParamValidationError, match="is not one of"):
            # A stubbed call with a bad enum: botocore alone would send it.
            client.create_endpoint_config(**with_variant(InstanceType="ml.bogus"))
    assert api_contract == ["sagemaker:CreateEndpointConfig"]


def test_a_fake_client_is_held_to_the_same_contract() -> None:
    class Fake:
        def put_object(self, **params: Any) -> dict[str, Any]:
            return {}

        def helper(self) -> str:
            return "not an operation"

    s3 = checked(Fake(), "s3")
    s3.put_object(Bucket="b", Key="k", Body=b"x")
    assert s3.helper() == "not an operation"
    with pytest.raises(ParamValidationError, match="Bucket"):
        s3.put_object(Key="k", Body=b"x")
    with pytest.raises(ParamValidationError, match="Unknown parameter"):
        s3.put_object(Bucket="b", Key="k", Bodie=b"x")
    assert s3.calls == ["PutObject"]


# ----- synthesized SageMaker resources as the API requests CloudFormation makes of them --------

NAME = {
    "AWS::SageMaker::Model": "ModelName",
    "AWS::SageMaker::EndpointConfig": "EndpointConfigName",
    "AWS::SageMaker::Endpoint": "EndpointName",
    "AWS::SageMaker::InferenceComponent": "InferenceComponentName",
}
"""The name property CloudFormation generates when a template leaves it out."""

REQUESTS: dict[str, list[tuple[str, set[str] | None, set[str]]]] = {
    # (operation, the properties it takes (None: all), properties CloudFormation keeps to itself)
    "AWS::SageMaker::Model": [("CreateModel", None, set())],
    "AWS::SageMaker::EndpointConfig": [("CreateEndpointConfig", None, set())],
    "AWS::SageMaker::Endpoint": [
        ("CreateEndpoint", {"EndpointName", "EndpointConfigName", "DeploymentConfig", "Tags"},
         set()),
        ("UpdateEndpoint", {"EndpointName", "EndpointConfigName", "DeploymentConfig",
                            "RetainAllVariantProperties", "ExcludeRetainedVariantProperties",
                            "RetainDeploymentConfig"}, set()),
    ],
    "AWS::SageMaker::InferenceComponent": [
        ("CreateInferenceComponent", {"InferenceComponentName", "EndpointName", "VariantName",
                                      "Specification", "RuntimeConfig", "Tags"}, {"EndpointArn"}),
        ("UpdateInferenceComponent", {"InferenceComponentName", "Specification",
                                      "RuntimeConfig", "DeploymentConfig"}, {"EndpointArn"}),
    ],
}  # fmt: skip
"""Each SageMaker resource type and the requests CloudFormation makes to create and update it."""


def resolve(value: Any, shape: Any) -> Any:
    """``value`` with CloudFormation intrinsics replaced by placeholders of the shape's type."""
    if isinstance(value, dict) and len(value) == 1:
        (key,) = value
        if key == "Ref" or key.startswith("Fn::"):
            if shape is None or shape.type_name == "string":
                low = shape.metadata.get("min", 1) if shape is not None else 1
                high = shape.metadata.get("max", 2048) if shape is not None else 2048
                return ("resolved" + "x" * low)[: max(low, min(high, 8))]
            if shape.type_name in ("integer", "long"):
                return shape.metadata.get("min", 1)
            if shape.type_name == "boolean":
                return True
            raise AssertionError(f"an intrinsic where a {shape.type_name} is expected: {value}")
    if isinstance(value, dict):
        members = shape.members if shape is not None and shape.type_name == "structure" else {}
        return {name: resolve(item, members.get(name)) for name, item in value.items()}
    if isinstance(value, list):
        member = shape.member if shape is not None and shape.type_name == "list" else None
        return [resolve(item, member) for item in value]
    return value


def sagemaker_requests(template: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(logical id, operation, request) for every SageMaker resource of ``template``."""
    model = service_model("sagemaker")
    requests = []
    for logical_id, resource in template["Resources"].items():
        for operation, takes, cloudformation_only in REQUESTS.get(resource["Type"], []):
            properties = {NAME[resource["Type"]]: logical_id[:63], **resource["Properties"]}
            params = {
                name: value
                for name, value in properties.items()
                if name not in cloudformation_only and (takes is None or name in takes)
            }
            shape = model.operation_model(operation).input_shape
            requests.append((logical_id, operation, resolve(params, shape)))
    return requests


@pytest.fixture(scope="module")
def reference_templates() -> list[tuple[str, dict[str, Any]]]:
    return [
        (stack.stack_name, Template.from_stack(stack).to_json())
        for stack in build_app(new_app())
        if isinstance(stack, cdk.Stack)
    ]


def test_every_reference_sagemaker_resource_is_a_valid_api_request(
    reference_templates: list[tuple[str, dict[str, Any]]],
) -> None:
    seen: set[str] = set()
    for stack_name, template in reference_templates:
        for logical_id, operation, request in sagemaker_requests(template):
            try:
                validate_request("sagemaker", operation, request)
            except ParamValidationError as error:
                pytest.fail(f"{stack_name}/{logical_id} as {operation}: {error}")
            seen.add(operation)
    assert seen == {
        "CreateModel", "CreateEndpointConfig", "CreateEndpoint", "UpdateEndpoint",
        "CreateInferenceComponent", "UpdateInferenceComponent",
    }  # fmt: skip


def component(**properties: Any) -> dict[str, Any]:
    base = {"EndpointName": {"Ref": "Ep"}, "Specification": {"Container": {"Image": "i"}}}
    return {"Resources": {"Ic": {"Type": "AWS::SageMaker::InferenceComponent",
                                 "Properties": {**base, **properties}}}}  # fmt: skip


def test_what_sagemaker_would_refuse_is_caught() -> None:
    misplaced = component(Specification={"Container": {"Image": "i"}, "CopyCount": 1})
    too_long = component(
        DeploymentConfig={
            "RollingUpdatePolicy": {
                "MaximumBatchSize": {"Type": "COPY_COUNT", "Value": 1},
                "WaitIntervalInSeconds": 7200,
            }
        }
    )
    for _, operation, request in sagemaker_requests(misplaced):
        with pytest.raises(ParamValidationError, match="CopyCount"):
            validate_request("sagemaker", operation, request)
    (create, update) = sagemaker_requests(too_long)
    validate_request("sagemaker", create[1], create[2])  # not part of the create request
    with pytest.raises(ParamValidationError, match="7200 is above the maximum 3600"):
        validate_request("sagemaker", update[1], update[2])
