"""SageMaker's vLLM Deep Learning Containers: the catalog lines, per-region resolution, serving
options as ``SM_VLLM_*`` engine arguments, caching eligibility, engine profile and ``plan``."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import Size
from conftest import assert_cfn_lint_clean, new_stack, resources_of_type
from hub import hub_token

from cdk_sagemaker_llm import (
    ComponentModel,
    ContainerImage,
    CopyResources,
    DataType,
    Endpoint,
    InferenceComponentEndpoint,
    InstanceType,
    KvCachePrecision,
    LmiOptions,
    Model,
    ModelSource,
    ProductionVariant,
    Quantization,
    ValidationError,
    VllmOptions,
)
from cdk_sagemaker_llm.catalog.containers import ContainerFamily, image_facts_of_uri
from cdk_sagemaker_llm.planning.sizing import serving_facts
from cdk_sagemaker_llm.review.endpoints import plan_template

OPTIONS = VllmOptions(
    tensor_parallel_size=4,
    max_model_len=8192,
    max_num_seqs=64,
    gpu_memory_utilization=0.85,
    dtype=DataType.BF16,
    enable_prefix_caching=True,
)
RENDERED = {
    "SM_VLLM_TENSOR_PARALLEL_SIZE": "4",
    "SM_VLLM_MAX_MODEL_LEN": "8192",
    "SM_VLLM_MAX_NUM_SEQS": "64",
    "SM_VLLM_GPU_MEMORY_UTILIZATION": "0.85",
    "SM_VLLM_DTYPE": "bfloat16",
    "SM_VLLM_ENABLE_PREFIX_CACHING": "true",
}


def _vllm_model(stack: Any, image: ContainerImage | None = None) -> Model:
    return Model(
        stack,
        "Model",
        image=image or ContainerImage.vllm("0.30.0"),
        source=ModelSource.from_hugging_face(
            "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
        ),
        serving=OPTIONS,
    )


def _container(template: dict[str, Any]) -> dict[str, Any]:
    (model,) = resources_of_type(template, "AWS::SageMaker::Model")
    container: dict[str, Any] = model["PrimaryContainer"]
    return container


@pytest.mark.parametrize(
    ("image", "region", "uri"),
    [
        (
            ContainerImage.vllm("0.30.0"),
            "us-east-1",
            "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:"
            "0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker",
        ),
        (
            ContainerImage.vllm("0.30.0"),
            "ap-southeast-3",
            "907027046896.dkr.ecr.ap-southeast-3.amazonaws.com/vllm:"
            "0.30.0-gpu-py312-cu130-ubuntu24.04-sagemaker",
        ),
        (
            ContainerImage.vllm_server("2.6"),
            "eu-west-1",
            "763104351884.dkr.ecr.eu-west-1.amazonaws.com/vllm:server-sagemaker-cuda-v2.6",
        ),
        (
            ContainerImage.huggingface_vllm("0.29.0"),
            "us-west-2",
            "763104351884.dkr.ecr.us-west-2.amazonaws.com/huggingface-vllm:"
            "0.29.0-transformers5.15.0-gpu-py312-cu130-ubuntu24.04-v1.0",
        ),
    ],
)
def test_vllm_images_resolve_per_region_from_the_sdk_map(
    image: ContainerImage, region: str, uri: str
) -> None:
    stack = new_stack(region=region)
    model = _vllm_model(stack, image)
    assert model.image_uri == uri
    assert image_facts_of_uri(uri)[:2] == (image.family.value, image.release)


def test_a_vllm_image_where_aws_does_not_publish_it_lists_where_it_does() -> None:
    # The SageMaker vLLM container is not published in the China regions (sagemaker-core's
    # vllm.json), unlike LMI.
    stack = new_stack(region="cn-north-1")
    with pytest.raises(ValidationError, match="does not publish this vllm image in cn-north-1"):
        _vllm_model(stack)


def test_vllm_model_on_an_instance_endpoint_renders_engine_arguments_and_plans() -> None:
    stack = new_stack()
    model = _vllm_model(stack)
    Endpoint(
        stack,
        "Endpoint",
        variants=[ProductionVariant(model=model, instance_type=InstanceType.G5_12XLARGE)],
    )
    template = assert_cfn_lint_clean(stack)
    environment = _container(template)["Environment"]
    assert {name: environment[name] for name in RENDERED} == RENDERED
    assert model.image.container_caching_eligible
    assert model.image.engine_profile.name == "lmi-vllm-v1"

    (endpoint,) = plan_template("Stack", template, region="us-west-2").endpoints
    (variant,) = endpoint.variants
    assert variant.image is not None
    assert (variant.image.family, variant.image.release) == ("vllm", "0.30.0")
    assert variant.image.caching_eligible and variant.image.caching_applies
    assert variant.sizing is not None and variant.sizing.fits
    assert variant.accelerators_per_copy == 4  # read from SM_VLLM_TENSOR_PARALLEL_SIZE


def test_vllm_model_as_an_inference_component_reserves_its_tensor_parallel_degree() -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    model = _vllm_model(stack, ContainerImage.huggingface_vllm("0.29.0"))
    endpoint.add_inference_component(
        "Llm",
        serves=ComponentModel.of(model),
        resources=CopyResources(min_memory=Size.gibibytes(64)),
    )
    template = assert_cfn_lint_clean(stack)
    (component,) = resources_of_type(template, "AWS::SageMaker::InferenceComponent")
    requirements = component["Specification"]["ComputeResourceRequirements"]
    assert requirements["NumberOfAcceleratorDevicesRequired"] == 4
    assert _container(template)["Environment"]["SM_VLLM_MAX_MODEL_LEN"] == "8192"

    (planned,) = plan_template("Stack", template, region="us-west-2").endpoints
    (component_plan,) = planned.components
    assert component_plan.image is not None
    assert component_plan.image.family == "huggingface-vllm"
    assert component_plan.image.caching_eligible and component_plan.image.caching_applies


@pytest.mark.parametrize(
    ("options", "rendered"),
    [
        (VllmOptions(enforce_eager=True), {"SM_VLLM_ENFORCE_EAGER": "true"}),
        (VllmOptions(enforce_eager=False), {}),
        (
            VllmOptions(enable_prefix_caching=False),
            {"SM_VLLM_NO_ENABLE_PREFIX_CACHING": "true"},
        ),
        (
            VllmOptions(quantization=Quantization.AWQ, max_num_batched_tokens=16384),
            {"SM_VLLM_QUANTIZATION": "awq", "SM_VLLM_MAX_NUM_BATCHED_TOKENS": "16384"},
        ),
        (
            VllmOptions(kv_cache_precision=KvCachePrecision.FP8),
            {"SM_VLLM_KV_CACHE_DTYPE": "fp8"},
        ),
        (VllmOptions(kv_cache_precision=KvCachePrecision.AUTO), {}),
    ],
)
def test_vllm_flags_render_as_the_container_turns_them_into_arguments(
    options: VllmOptions, rendered: dict[str, str]
) -> None:
    assert options.environment() == rendered


def test_sizing_reads_the_vllm_variables() -> None:
    facts = serving_facts({**OPTIONS.environment(), "SM_VLLM_QUANTIZATION": "fp8"})
    assert (facts.tensor_parallel_degree, facts.max_total_tokens, facts.max_concurrency) == (
        4,
        8192,
        64,
    )
    assert facts.precision.name == "FP8"


@pytest.mark.parametrize(
    ("options", "image", "prop"),
    [
        (VllmOptions(), ContainerImage.lmi("0.31.0"), "serving"),
        (LmiOptions(), ContainerImage.vllm("0.30.0"), "serving"),
        (VllmOptions(gpu_memory_utilization=1.5), ContainerImage.vllm("0.30.0"), "utilization"),
        (VllmOptions(max_num_seqs=0), ContainerImage.vllm("0.30.0"), "max_num_seqs"),
        (
            VllmOptions(max_model_len=8192, max_num_batched_tokens=4096),
            ContainerImage.vllm("0.30.0"),
            "max_num_batched_tokens",
        ),
    ],
)
def test_vllm_options_refuse_what_the_container_would_reject(
    options: Any, image: ContainerImage, prop: str
) -> None:
    with pytest.raises(ValidationError, match=prop):
        options.validate(image)


def test_unknown_vllm_release_names_the_known_ones() -> None:
    with pytest.raises(ValidationError, match=r"0\.23\.0, 0\.24\.0"):
        ContainerImage.vllm("0.9.9")
    assert ContainerImage.known_versions("vllm-server")[0] == "2"
    assert ContainerImage.vllm_server("2").family is ContainerFamily.VLLM_SERVER


def test_vllm_profiles_follow_the_engine_generation() -> None:
    from cdk_sagemaker_llm.planning.engine_profiles import profile_name_for

    assert profile_name_for(ContainerFamily.VLLM, "0.7.3") == "lmi-vllm-v0"
    assert profile_name_for(ContainerFamily.HUGGINGFACE_VLLM, "0.14.0") == "lmi-vllm-v1"
    assert profile_name_for(ContainerFamily.VLLM_SERVER, "2") == "lmi-vllm-v1"
