"""Speculative decoding without a job: a draft model on a Model's LMI container."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from conftest import assert_cfn_lint_clean, new_stack, resources_of_type, role_statements
from hub import hub_token

from cdk_sagemaker_llm import ComponentModel, CopyResources
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.constructs.endpoint import InferenceComponentEndpoint
from cdk_sagemaker_llm.constructs.images import ContainerImage
from cdk_sagemaker_llm.constructs.inference_component import InferenceComponent
from cdk_sagemaker_llm.constructs.model import Model
from cdk_sagemaker_llm.constructs.model_source import ModelSource
from cdk_sagemaker_llm.constructs.speculative_decoding import DraftModelKind, SpeculativeDecoding
from cdk_sagemaker_llm.errors import ValidationError

LLAMA_70B = "meta-llama/Meta-Llama-3-70B-Instruct"


def model(stack: cdk.Stack, draft: SpeculativeDecoding, **overrides: Any) -> Model:
    props: dict[str, Any] = {
        "image": ContainerImage.lmi("0.31.0"),
        "source": ModelSource.from_hugging_face(LLAMA_70B, token_secret=hub_token()),
        "speculative_decoding": draft,
    }
    props.update(overrides)
    return Model(stack, "Target", **props)


def container(stack: cdk.Stack) -> dict[str, Any]:
    template = assert_cfn_lint_clean(stack)
    (properties,) = resources_of_type(template, "AWS::SageMaker::Model")
    return dict(properties["PrimaryContainer"])


def test_the_providers_draft_on_a_single_model_endpoint() -> None:
    stack = new_stack()
    target = model(stack, SpeculativeDecoding.provider_draft())
    assert container(stack)["Environment"]["OPTION_SPECULATIVE_DRAFT_MODEL"] == "sagemaker"
    assert target.speculative_decoding is not None
    assert target.speculative_decoding.kind is DraftModelKind.PROVIDER


def test_a_hugging_face_draft() -> None:
    stack = new_stack()
    model(stack, SpeculativeDecoding.from_hugging_face("meta-llama/Llama-3.2-1B-Instruct"))
    environment = container(stack)["Environment"]
    assert environment["OPTION_SPECULATIVE_DRAFT_MODEL"] == "meta-llama/Llama-3.2-1B-Instruct"
    assert environment["HF_MODEL_ID"] == LLAMA_70B


def test_a_gated_hub_draft_in_a_container_without_a_token_is_refused() -> None:
    stack = new_stack()
    with pytest.raises(ValidationError) as raised:
        model(
            stack,
            SpeculativeDecoding.from_hugging_face("meta-llama/Llama-3.2-1B-Instruct"),
            source=ModelSource.from_s3(s3.Bucket.from_bucket_name(stack, "W", "weights"), "llama/"),
        )
    error = raised.value
    assert error.prop == "SpeculativeDecoding.from_hugging_face(model_id)"
    assert error.value == "meta-llama/Llama-3.2-1B-Instruct" and "gated" in error.problem
    assert "token_secret=" in error.fix and "SpeculativeDecoding.from_s3" in error.fix


def test_an_open_hub_draft_needs_no_token() -> None:
    stack = new_stack()
    model(
        stack,
        SpeculativeDecoding.from_hugging_face("Qwen/Qwen2.5-0.5B-Instruct"),
        source=ModelSource.from_s3(s3.Bucket.from_bucket_name(stack, "W", "weights"), "qwen/"),
    )
    environment = container(stack)["Environment"]
    assert environment["OPTION_SPECULATIVE_DRAFT_MODEL"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert "HF_TOKEN" not in environment


def test_an_s3_draft_is_read_with_exactly_its_prefix() -> None:
    stack = new_stack()
    drafts = s3.Bucket.from_bucket_name(stack, "Drafts", "drafts")
    model(stack, SpeculativeDecoding.from_s3(drafts, "llama-3.2-1b/"))
    environment = container(stack)["Environment"]
    assert environment["OPTION_SPECULATIVE_DRAFT_MODEL"] == "s3://drafts/llama-3.2-1b/"
    template = assert_cfn_lint_clean(stack)
    statements = role_statements(template)
    assert {
        "Action": "s3:GetObject",
        "Effect": "Allow",
        "Resource": "arn:aws:s3:::drafts/llama-3.2-1b/*",
    } in statements
    listing = next(s for s in statements if s["Action"] == "s3:ListBucket")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["llama-3.2-1b/*"]}}


def test_your_own_draft_is_allowed_on_an_inference_component() -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    target = model(
        stack,
        SpeculativeDecoding.from_hugging_face("meta-llama/Llama-3.2-1B-Instruct"),
        source=ModelSource.from_hugging_face(
            "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
        ),
    )
    InferenceComponent(
        stack,
        "Component",
        endpoint=endpoint,
        serves=ComponentModel.of(target),
        resources=CopyResources(accelerators=1, min_memory=cdk.Size.gibibytes(16)),
    )
    assert_cfn_lint_clean(stack)


def test_the_providers_draft_is_rejected_on_an_inference_component() -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    target = model(
        stack,
        SpeculativeDecoding.provider_draft(),
        source=ModelSource.from_hugging_face(
            "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
        ),
    )
    with pytest.raises(ValidationError) as raised:
        InferenceComponent(
            stack,
            "Component",
            endpoint=endpoint,
            serves=ComponentModel.of(target),
            resources=CopyResources(accelerators=1, min_memory=cdk.Size.gibibytes(16)),
        )
    assert raised.value.prop == "model.speculative_decoding"
    assert "inference components" in str(raised.value)


@pytest.mark.parametrize(
    ("draft", "overrides", "message"),
    [
        (
            SpeculativeDecoding.provider_draft(),
            {"environment": {"SAGEMAKER_PROGRAM": "inference.py"}},
            "custom inference code",
        ),
        (
            SpeculativeDecoding.provider_draft(),
            {"environment": {"OPTION_ENTRYPOINT": "my_handler.py"}},
            "OPTION_ENTRYPOINT",
        ),
        (
            SpeculativeDecoding.provider_draft(),
            {"image": ContainerImage.from_uri("123456789012.dkr.ecr.us-west-2.amazonaws.com/my:1")},
            "not a SageMaker LMI container",
        ),
        (
            SpeculativeDecoding.from_hugging_face("meta-llama/Llama-3.2-1B-Instruct"),
            {"image": ContainerImage.tgi("2.4.0")},
            "LMI",
        ),
    ],
)
def test_drafts_the_container_cannot_use(
    draft: SpeculativeDecoding, overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message) as raised:
        model(new_stack(), draft, **overrides)
    assert raised.value.prop == "speculative_decoding"


def test_a_downloaded_draft_needs_the_network() -> None:
    stack = new_stack()
    weights = s3.Bucket.from_bucket_name(stack, "Weights", "weights")
    with pytest.raises(ValidationError, match="network isolation forbids"):
        model(
            stack,
            SpeculativeDecoding.from_s3(weights, "draft/"),
            source=ModelSource.from_s3(weights, "target/"),
            network_isolation=True,
        )


def test_your_own_draft_works_with_an_image_given_by_uri() -> None:
    stack = new_stack()
    model(
        stack,
        SpeculativeDecoding.from_hugging_face("meta-llama/Llama-3.2-1B-Instruct"),
        image=ContainerImage.from_uri("123456789012.dkr.ecr.us-west-2.amazonaws.com/lmi:1"),
    )
    assert "OPTION_SPECULATIVE_DRAFT_MODEL" in container(stack)["Environment"]


def test_setting_the_variable_twice_is_an_error() -> None:
    with pytest.raises(ValidationError, match="OPTION_SPECULATIVE_DRAFT_MODEL"):
        model(
            new_stack(),
            SpeculativeDecoding.provider_draft(),
            environment={"OPTION_SPECULATIVE_DRAFT_MODEL": "x"},
        )


def test_factory_arguments_are_checked() -> None:
    stack = new_stack()
    bucket = s3.Bucket.from_bucket_name(stack, "B", "bucket")
    with pytest.raises(ValidationError, match="end with '/'"):
        SpeculativeDecoding.from_s3(bucket, "draft")
    with pytest.raises(ValidationError, match="Hugging Face model id"):
        SpeculativeDecoding.from_hugging_face("not an id")
    assert repr(SpeculativeDecoding.provider_draft()) == "SpeculativeDecoding(provider, sagemaker)"


def test_the_draft_length_is_set_and_checked() -> None:
    stack = new_stack()
    drafts = s3.Bucket.from_bucket_name(stack, "Drafts", "drafts")
    model(stack, SpeculativeDecoding.from_s3(drafts, "llama-3.2-1b/", speculative_length=4))
    environment = container(stack)["Environment"]
    assert environment["OPTION_SPECULATIVE_LENGTH"] == "4"
    with pytest.raises(ValidationError) as raised:
        SpeculativeDecoding.from_s3(drafts, "llama-3.2-1b/", speculative_length=0)
    assert raised.value.prop == "speculative_length"


def test_an_lmi_release_before_the_draft_options_is_refused() -> None:
    """LMI documents option.speculative_draft_model from 0.27.0; a full tag's leading DJL
    version is read where the catalog does not know the release."""
    with pytest.raises(ValidationError) as raised:
        model(
            new_stack(),
            SpeculativeDecoding.from_hugging_face("meta-llama/Llama-3.2-1B-Instruct"),
            image=ContainerImage.lmi("0.26.0-deepspeed0.12.6-cu121"),
        )
    assert raised.value.prop == "speculative_decoding" and raised.value.value == "lmi 0.26.0"
    assert "ContainerImage.lmi('0.27.0')" in raised.value.fix


def test_an_optimization_jobs_eagle_head_is_a_draft_read_from_its_output() -> None:
    """``OptimizationJob.as_speculative_draft()``: the job's output folder (a deploy-time
    token) as the draft, read by the model's role and decrypted with the output key."""
    from aws_cdk import aws_kms as kms

    from cdk_sagemaker_llm.constructs.optimization_job import OptimizationJob
    from cdk_sagemaker_llm.constructs.optimization_options import OptimizationOutput
    from cdk_sagemaker_llm.constructs.optimization_techniques import OptimizationTechnique

    stack = new_stack()
    weights = s3.Bucket.from_bucket_name(stack, "Weights", "weights")
    key = kms.Key(stack, "OutputKey", enable_key_rotation=True)
    job = OptimizationJob(
        stack,
        "Eagle",
        source=ModelSource.from_s3(weights, "llama-3-70b/"),
        instance_type=InstanceType.P4D_24XLARGE,
        techniques=[OptimizationTechnique.speculative_decoding()],
        output=OptimizationOutput.in_bucket(weights, encryption_key=key),
    )
    model(
        stack,
        job.as_speculative_draft(speculative_length=3),
        source=ModelSource.from_s3(weights, "llama-3-70b/"),
        image=job.recommended_image(),
    )
    template = assert_cfn_lint_clean(stack)
    (properties,) = resources_of_type(template, "AWS::SageMaker::Model")
    environment = properties["PrimaryContainer"]["Environment"]
    draft = environment["OPTION_SPECULATIVE_DRAFT_MODEL"]["Fn::Join"][1]
    assert draft[0] == "s3://weights/" and draft[1]["Fn::GetAtt"][1] == "OutputPrefix"
    assert environment["OPTION_SPECULATIVE_LENGTH"] == "3"
    policies = str(  # execution roles carry their statements inline
        resources_of_type(template, "AWS::IAM::Policy")
        + resources_of_type(template, "AWS::IAM::Role")
    )
    assert "kms:Decrypt" in policies and "OutputPrefix" in policies
