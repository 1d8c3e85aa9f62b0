"""Customer-managed KMS keys: every grant the library makes on an S3 bucket
(or SNS topic) also grants what that bucket's (or topic's) key requires, or the request fails
with AccessDenied at run time. SSE-KMS: reading an object needs ``kms:Decrypt``, writing one
``kms:GenerateDataKey`` (S3 user guide, "Permissions for SSE-KMS"; SNS developer guide,
"Key management", for publishing to an encrypted topic)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template
from conftest import new_stack, role_policies, role_statements

from cdk_sagemaker_llm import (
    AsyncInference,
    ContainerImage,
    Endpoint,
    InstanceType,
    Model,
    ProductionVariant,
)


def kms_actions_on(template: dict[str, Any], role_logical_id: str, key_logical_id: str) -> set[str]:
    """The KMS actions the policies attached to a role allow on exactly this key."""
    actions: set[str] = set()
    for role, document in role_policies(template):
        if role != role_logical_id:
            continue
        for statement in document["Statement"]:
            resources = statement["Resource"]
            resources = resources if isinstance(resources, list) else [resources]
            if {"Fn::GetAtt": [key_logical_id, "Arn"]} not in resources:
                continue
            granted = statement["Action"]
            actions.update(granted if isinstance(granted, list) else [granted])
    return actions


def logical_id(stack: cdk.Stack, construct: Any) -> str:
    return stack.resolve(construct.node.default_child.logical_id)  # type: ignore[no-any-return]


def async_endpoint(
    stack: cdk.Stack, bucket: s3.IBucket, **props: Any
) -> tuple[Endpoint, iam.Role, iam.Role]:
    model = Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))
    endpoint = Endpoint(
        stack,
        "Endpoint",
        variants=[ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE)],
        async_inference=AsyncInference(bucket=bucket, **props),
    )
    client = iam.Role(stack, "Client", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    endpoint.grant_invoke_async(client)
    assert isinstance(model.role, iam.Role)
    return endpoint, model.role, client


@pytest.mark.parametrize("imported", [False, True], ids=["stack-bucket", "imported-bucket"])
def test_async_inference_grants_the_bucket_key(imported: bool) -> None:
    """The execution role reads requests and writes results with the bucket's key; a caller
    writes requests and reads results with it."""
    stack = new_stack()
    key = kms.Key(stack, "BucketKey", enable_key_rotation=True)
    if imported:
        bucket: s3.IBucket = s3.Bucket.from_bucket_attributes(
            stack, "Bucket", bucket_name="requests", encryption_key=key
        )
    else:
        bucket = s3.Bucket(stack, "Bucket", encryption=s3.BucketEncryption.KMS, encryption_key=key)
    _, role, client = async_endpoint(stack, bucket)
    template = Template.from_stack(stack).to_json()
    key_id = logical_id(stack, key)
    needed = {"kms:Decrypt", "kms:GenerateDataKey"}
    assert needed <= kms_actions_on(template, logical_id(stack, role), key_id)
    assert needed <= kms_actions_on(template, logical_id(stack, client), key_id)


def test_async_inference_results_key_and_bucket_key_both_granted() -> None:
    """With a results key as well, callers decrypt results with it and upload requests with
    the bucket's key."""
    stack = new_stack()
    bucket_key = kms.Key(stack, "BucketKey", enable_key_rotation=True)
    results_key = kms.Key(stack, "ResultsKey", enable_key_rotation=True)
    bucket = s3.Bucket(
        stack, "Bucket", encryption=s3.BucketEncryption.KMS, encryption_key=bucket_key
    )
    _, role, client = async_endpoint(stack, bucket, kms_key=results_key)
    template = Template.from_stack(stack).to_json()
    role_id, client_id = logical_id(stack, role), logical_id(stack, client)
    assert {"kms:Decrypt", "kms:GenerateDataKey"} <= kms_actions_on(
        template, role_id, logical_id(stack, bucket_key)
    )
    assert {"kms:GenerateDataKey"} <= kms_actions_on(
        template, role_id, logical_id(stack, results_key)
    )
    assert {"kms:Decrypt", "kms:GenerateDataKey"} <= kms_actions_on(
        template, client_id, logical_id(stack, bucket_key)
    )
    assert "kms:Decrypt" in kms_actions_on(template, client_id, logical_id(stack, results_key))


def test_async_inference_on_an_unencrypted_or_s3_managed_bucket_grants_no_kms() -> None:
    stack = new_stack()
    bucket = s3.Bucket(stack, "Bucket")  # SSE-S3
    _, role, client = async_endpoint(stack, bucket)
    template = Template.from_stack(stack).to_json()
    statements = role_statements(template)
    assert not any("kms:" in str(statement["Action"]) for statement in statements)
    del role, client


def test_async_inference_publishes_to_a_kms_encrypted_topic() -> None:
    """SageMaker publishes notifications with the execution role: an encrypted topic's key
    must let it generate data keys."""
    stack = new_stack()
    topic_key = kms.Key(stack, "TopicKey", enable_key_rotation=True)
    topic = sns.Topic(stack, "Done", master_key=topic_key, enforce_ssl=True)
    bucket = s3.Bucket(stack, "Bucket")
    _, role, _ = async_endpoint(stack, bucket, success_topic=topic)
    template = Template.from_stack(stack).to_json()
    granted = kms_actions_on(template, logical_id(stack, role), logical_id(stack, topic_key))
    assert "kms:Decrypt" in granted
    assert any(action.startswith("kms:GenerateDataKey") for action in granted)


# ----- the audit: the other grants on S3 already follow their bucket's key ------------------


def test_model_source_and_data_capture_grant_their_bucket_keys() -> None:
    from cdk_sagemaker_llm import DataCapture, ModelSource

    stack = new_stack()
    key = kms.Key(stack, "BucketKey", enable_key_rotation=True)
    bucket = s3.Bucket(stack, "Bucket", encryption=s3.BucketEncryption.KMS, encryption_key=key)
    model = Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_s3(bucket, "llama/"),
    )
    Endpoint(
        stack,
        "Endpoint",
        variants=[ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE)],
        data_capture=DataCapture(bucket=bucket, prefix="capture/"),
    )
    template = Template.from_stack(stack).to_json()
    assert isinstance(model.role, iam.Role)
    granted = kms_actions_on(template, logical_id(stack, model.role), logical_id(stack, key))
    assert "kms:Decrypt" in granted  # reads the weights
    assert any(action.startswith("kms:GenerateDataKey") for action in granted)  # captures


def test_a_kms_alias_where_a_key_is_needed_is_refused() -> None:
    """An alias passed as the key: DataCapture's grant was dropped, AsyncInference's named the
    alias ARN, which does not authorize the key's use."""
    from cdk_sagemaker_llm import DataCapture, ValidationError

    stack = new_stack()
    bucket = s3.Bucket.from_bucket_name(stack, "Bucket", "captures")
    alias = kms.Alias.from_alias_name(stack, "Alias", "alias/captures")
    with pytest.raises(ValidationError, match=r"kms_key='alias/captures': a KMS alias") as raised:
        DataCapture(bucket=bucket, kms_key=alias)
    assert "kms.Key.from_key_arn" in raised.value.fix
