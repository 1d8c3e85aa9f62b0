"""cdk-nag's AwsSolutions pack over every reference stack: zero unacknowledged findings."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from conftest import CDK_CONTEXT

from app import apply_nag, build_app


def nag_app(outdir: Path) -> tuple[cdk.App, list[cdk.Stack]]:
    app = cdk.App(outdir=str(outdir), context=CDK_CONTEXT)
    stacks = build_app(app)
    apply_nag(app)
    return app, stacks


def test_reference_app_has_no_nag_findings(tmp_path: Path) -> None:
    app, _ = nag_app(tmp_path)
    app.synth()  # raises ValidationFailed on any unacknowledged finding


def test_the_pack_really_runs(tmp_path: Path) -> None:
    """Negative control: one wildcard policy added to the same app makes the synth fail."""
    app, stacks = nag_app(tmp_path)
    role = iam.Role(stacks[0], "Unscoped", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
    with pytest.raises(RuntimeError, match="AwsSolutions-IAM5"):
        app.synth()


@pytest.mark.parametrize("kind", ["instance", "inference-component"])
def test_data_capture_with_a_customer_key_is_nag_clean(tmp_path: Path, kind: str) -> None:
    """The README's claim: our constructs acknowledge their own findings, DataCapture's too."""
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_s3 as s3
    from cdk_nag import AwsSolutionsChecks

    from cdk_sagemaker_llm import (
        ContainerImage,
        DataCapture,
        Endpoint,
        InferenceComponentEndpoint,
        InstanceType,
        Model,
        ProductionVariant,
    )

    app = cdk.App(outdir=str(tmp_path), context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Capture", env=cdk.Environment(region="us-west-2"))
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    bucket = s3.Bucket.from_bucket_name(stack, "Bucket", "captures")
    capture = DataCapture(bucket=bucket, kms_key=key)
    if kind == "instance":
        model = Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))
        Endpoint(
            stack,
            "Endpoint",
            variants=[ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE)],
            data_capture=capture,
        )
    else:
        InferenceComponentEndpoint(
            stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE, data_capture=capture
        )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged finding


def test_a_realistic_app_with_every_construct_has_no_unacknowledged_findings(
    tmp_path: Path,
) -> None:
    """Every construct on stack-created buckets, customer keys, encrypted topics and
    a VPC (tests/realistic_app.py). Before, 12 AwsSolutions-IAM5 findings came from the
    library's own grants: ModelSource.from_s3 prefixes, Key.grant_encrypt_decrypt families
    (storage keys, benchmark results, optimization-job outputs) and an encrypted topic's key."""
    from cdk_nag import AwsSolutionsChecks
    from realistic_app import build_realistic_stack

    app = cdk.App(outdir=str(tmp_path), context=CDK_CONTEXT)
    build_realistic_stack(app)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed, listing them, on any unacknowledged finding


def test_a_service_serving_an_eagle_head_has_no_unacknowledged_findings(tmp_path: Path) -> None:
    """LlmService whose EAGLE option wins: the job, its recommended image and the draft read
    from its KMS-encrypted output folder add no unacknowledged finding."""
    from aws_cdk import aws_kms as kms
    from cdk_nag import AwsSolutionsChecks
    from realistic_app import _bucket, access_log_bucket

    from cdk_sagemaker_llm import (
        ContainerImage,
        ExpectedTraffic,
        InstanceType,
        LlmService,
        ModelSource,
        ModelSpec,
        Optimization,
        OptimizationOutput,
        Risk,
        SearchSpace,
        ServiceModel,
        Sizing,
        Slo,
        Workload,
    )

    app = cdk.App(outdir=str(tmp_path), context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Eagle", env=cdk.Environment(account="123456789012", region="us-west-2"))
    key = kms.Key(stack, "DataKey", enable_key_rotation=True)
    logs = access_log_bucket(stack)
    weights = _bucket(stack, "Weights", key, logs)
    service = LlmService(
        stack,
        "Service",
        model=ServiceModel.from_source(
            ModelSource.from_s3(weights, "llama-3-8b/"),
            image=ContainerImage.lmi("0.33.0"),
            spec=ModelSpec.LLAMA_3_8B,
            optimization_output=OptimizationOutput.in_bucket(weights, encryption_key=key),
        ),
        workload=Workload(input_tokens=512, output_tokens=256),
        slo=Slo(max_ms_per_token=25),
        traffic=ExpectedTraffic.concurrency(4),
        search=SearchSpace(
            instance_types=[InstanceType.G5_2XLARGE, InstanceType.G5_12XLARGE],
            optimizations=[Optimization.speculative_decoding()],
        ),
        sizing=Sizing(risk=Risk.MEDIAN),
    )
    assert service.optimization_job is not None  # the EAGLE option won
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed, listing them, on any unacknowledged finding


def test_a_role_you_own_keeps_your_own_wildcards_reported(tmp_path: Path) -> None:
    """The library acknowledged ``IAM5[Resource::*]`` (its ENI and ECR-token grants) on the role
    you passed as ``role=``, which also hid your own ``*`` statements on it from cdk-nag. On your
    role it acknowledges only its exact ARN patterns, and says what it left to you."""
    from aws_cdk import aws_ec2 as ec2

    from cdk_sagemaker_llm import ContainerImage, Model

    app = cdk.App(outdir=str(tmp_path), context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Owned", env=cdk.Environment(region="us-west-2"))
    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id="vpc-0a1b2c3d4e5f60718", availability_zones=["us-west-2a"],
        private_subnet_ids=["subnet-0a1b2c3d4e5f60718"],
    )  # fmt: skip
    role = iam.Role(stack, "Mine", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    Model(stack, "Model", image=ContainerImage.lmi("0.31.0"), role=role, vpc=vpc)
    infos = [entry.data for entry in role.node.metadata if entry.type == "aws:cdk:info"]
    assert any("IAM5[Resource::*]" in str(info) for info in infos)
    role.add_to_policy(
        iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=["*"])
    )
    apply_nag(app)
    with pytest.raises(RuntimeError, match=r"Owned/Mine/DefaultPolicy"):
        app.synth()
