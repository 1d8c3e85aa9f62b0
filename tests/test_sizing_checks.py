"""Synth-time fit checks on endpoints and inference components."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import Size
from aws_cdk.assertions import Annotations, Match, Template
from conftest import new_stack
from hub import hub_token

from cdk_sagemaker_llm import ComponentModel, CopyResources, ManagedInstanceScaling
from cdk_sagemaker_llm.catalog.instance_types import Accelerator, InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.constructs.endpoint import (
    Endpoint,
    InferenceComponentEndpoint,
    ProductionVariant,
)
from cdk_sagemaker_llm.constructs.images import ContainerImage
from cdk_sagemaker_llm.constructs.model import Model
from cdk_sagemaker_llm.constructs.model_source import ModelSource
from cdk_sagemaker_llm.constructs.plan_metadata import IMAGE, MODEL_SPEC
from cdk_sagemaker_llm.constructs.serving_options import (
    LmiOptions,
    Quantization,
    TgiOptions,
)
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.review.serving import image_plan


def _model(
    stack: cdk.Stack,
    model_id: str,
    serving: LmiOptions | TgiOptions | None = None,
    spec: ModelSpec | None = None,
) -> Model:
    image = (
        ContainerImage.tgi("2.4.0")
        if isinstance(serving, TgiOptions)
        else ContainerImage.lmi("0.31.0")
    )
    return Model(
        stack,
        "Model",
        image=image,
        source=ModelSource.from_hugging_face(model_id, token_secret=hub_token()),
        serving=serving,
        spec=spec,
    )


def _variant_endpoint(stack: cdk.Stack, model: Model, instance_type: InstanceType) -> Endpoint:
    return Endpoint(
        stack,
        "Endpoint",
        variants=[ProductionVariant(model=model, instance_type=instance_type)],
    )


LLAMA_3_8B_ID = "meta-llama/Meta-Llama-3-8B-Instruct"


def _on_one_a10g(
    image: ContainerImage,
    serving: LmiOptions | TgiOptions,
    environment: dict[str, str],
    stack: cdk.Stack | None = None,
) -> cdk.Stack:
    """Llama 3 8B (fp16, 4,096 tokens) served by ``image`` on one A10G (ml.g5.2xlarge) with
    ``environment`` beside the serving options, in ``stack`` (default a new one); the stack,
    once the fit check passed."""
    stack = stack or new_stack()
    model = Model(
        stack,
        "Model",
        image=image,
        source=ModelSource.from_hugging_face(LLAMA_3_8B_ID, token_secret=hub_token()),
        serving=serving,
        environment=environment,
    )
    _variant_endpoint(stack, model, InstanceType.G5_2XLARGE)
    return stack


def test_a_model_that_cannot_fit_is_a_synth_error_with_numbers_and_fixes() -> None:
    stack = new_stack()
    model = _model(stack, "meta-llama/Llama-2-13b-chat-hf")
    with pytest.raises(ValidationError) as error:
        _variant_endpoint(stack, model, InstanceType.G5_2XLARGE)
    message = str(error.value)
    assert error.value.prop == "variants[0].instance_type"
    for expected in (
        "llama-2-13b (fp16) does not fit on 1 x NVIDIA A10G",
        "weights 26.0 GB",
        "overhead 2.0 GB",
        "24.0 GB usable",
        "larger instance type",
        "quantize the weights",
    ):
        assert expected in message, expected


def test_a_component_gets_the_more_accelerators_fix() -> None:
    stack = new_stack()
    model = _model(stack, "meta-llama/Llama-2-13b-chat-hf", LmiOptions(tensor_parallel_degree=1))
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    # The suggested degree is the one serving most (4,096-token sequences: TP4 on ml.g5.12xlarge).
    with pytest.raises(ValidationError, match=r"tensor-parallel degree 4 fits on ml.g5.12xlarge"):
        endpoint.add_inference_component(
            "Component",
            serves=ComponentModel.of(model),
            resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
        )


def test_quantization_makes_it_fit() -> None:
    stack = new_stack()
    model = _model(
        stack,
        "meta-llama/Meta-Llama-3-70B-Instruct",
        LmiOptions(tensor_parallel_degree=4, quantization=Quantization.AWQ, max_model_len=4096),
    )
    _variant_endpoint(stack, model, InstanceType.G5_12XLARGE)
    Template.from_stack(stack).resource_count_is("AWS::SageMaker::EndpointConfig", 1)


def test_a_max_concurrency_the_kv_cache_cannot_hold_is_a_warning() -> None:
    stack = new_stack()
    model = _model(
        stack,
        "meta-llama/Llama-2-7b-chat-hf",
        TgiOptions(num_gpus=1, max_total_tokens=4096, max_concurrent_requests=16),
    )
    _variant_endpoint(stack, model, InstanceType.G5_XLARGE)
    Annotations.from_stack(stack).has_warning(
        "/TestStack/Model",
        Match.string_like_regexp(
            r"max concurrency 16 exceeds what the KV cache holds: 3 sequences of 4096 tokens"
        ),
    )


@pytest.mark.parametrize(
    ("serving", "warned"),
    [
        (LmiOptions(tensor_parallel_degree=1, max_rolling_batch_size=8, max_model_len=4096), True),
        (TgiOptions(num_gpus=1, max_total_tokens=4096, max_concurrent_requests=8), False),
    ],
)
def test_the_kv_cache_warning_counts_the_memory_the_engine_allocates(
    serving: LmiOptions | TgiOptions, warned: bool
) -> None:
    """Llama 3 8B in fp16 on one A10G leaves 5.9 GB: 11 sequences of 4,096 tokens, but vLLM
    takes 0.9 of the GPU (``gpu_memory_utilization``), which leaves 6, so a batch of 8 queues or
    is preempted on LMI and fits on TGI (``--cuda-memory-fraction`` 1.0). The check counted 11
    for both."""
    stack = new_stack()
    model = _model(stack, "meta-llama/Meta-Llama-3-8B-Instruct", serving)
    _variant_endpoint(stack, model, InstanceType.G5_2XLARGE)
    annotations = Annotations.from_stack(stack)
    if warned:
        annotations.has_warning(
            "/TestStack/Model",
            Match.string_like_regexp(
                r"max concurrency 8 exceeds what the KV cache holds: 6 sequences of 4096 "
                r"tokens .*in the share of the memory lmi-vllm-v\d allocates by default"
            ),
        )
    else:
        annotations.has_no_warning("*", Match.string_like_regexp("KV cache"))


FALCON_40B_ON_FOUR_A10G = LmiOptions(tensor_parallel_degree=4, max_model_len=2048)
"""Falcon 40B in fp16 (83.5 GB) sharded over the four A10Gs of an ml.g5.12xlarge (96 GB): it
fits in the whole memory, which TGI takes, but not in the 90% vLLM takes by default."""


def test_a_copy_beyond_the_engines_share_of_the_memory_is_a_synth_error() -> None:
    """LMI's vLLM would fail at start ("No available memory for the cache blocks"); the check
    passed it, counting all the memory."""
    stack = new_stack()
    model = _model(stack, "tiiuae/falcon-40b", FALCON_40B_ON_FOUR_A10G)
    with pytest.raises(ValidationError) as error:
        _variant_endpoint(stack, model, InstanceType.G5_12XLARGE)
    message = str(error.value)
    assert error.value.prop == "variants[0].instance_type"
    for expected in (
        "falcon-40b (fp16) fits on 4 x NVIDIA A10G (96.0 GB usable)",
        "allocates 90% of the accelerators' memory by default",
        "engine refuses to start",
        "raise the engine's share to at least 0.97: set SM_VLLM_GPU_MEMORY_UTILIZATION or "
        "OPTION_GPU_MEMORY_UTILIZATION in the environment",
    ):
        assert expected in message, message


def test_the_serving_options_memory_share_is_the_one_checked() -> None:
    """Raised to the share the error names, the same copy passes; lowered, a copy that fits
    by default is refused, naming the variable that set it."""
    stack = new_stack()
    raised = LmiOptions(tensor_parallel_degree=4, max_model_len=2048, gpu_memory_utilization=0.97)
    _variant_endpoint(stack, _model(stack, "tiiuae/falcon-40b", raised), InstanceType.G5_12XLARGE)
    Template.from_stack(stack).resource_count_is("AWS::SageMaker::EndpointConfig", 1)
    stack = new_stack()
    lowered = LmiOptions(tensor_parallel_degree=1, max_model_len=4096, gpu_memory_utilization=0.75)
    model = _model(stack, "meta-llama/Meta-Llama-3-8B-Instruct", lowered)
    with pytest.raises(
        ValidationError,
        match=r"as OPTION_GPU_MEMORY_UTILIZATION=0.75 sets.*at least 0.80",
    ):
        _variant_endpoint(stack, model, InstanceType.G5_2XLARGE)


def test_an_engine_that_takes_all_the_memory_serves_that_copy() -> None:
    stack = new_stack()
    serving = TgiOptions(num_gpus=4, max_total_tokens=2048)
    _variant_endpoint(stack, _model(stack, "tiiuae/falcon-40b", serving), InstanceType.G5_12XLARGE)
    Template.from_stack(stack).resource_count_is("AWS::SageMaker::EndpointConfig", 1)


def test_a_concurrency_that_fits_raises_no_warning() -> None:
    stack = new_stack()
    model = _model(
        stack,
        "meta-llama/Llama-2-7b-chat-hf",
        TgiOptions(num_gpus=1, max_total_tokens=4096, max_concurrent_requests=3),
    )
    _variant_endpoint(stack, model, InstanceType.G5_XLARGE)
    Annotations.from_stack(stack).has_no_warning("*", Match.string_like_regexp("KV cache"))


def test_an_unknown_model_skips_the_check_with_a_note() -> None:
    stack = new_stack()
    model = _model(stack, "my-org/my-enormous-model")
    _variant_endpoint(stack, model, InstanceType.G5_XLARGE)
    Annotations.from_stack(stack).has_info(
        "/TestStack/Model", Match.string_like_regexp("Sizing skipped: the model's architecture")
    )


def test_an_unknown_instance_type_skips_the_check_with_a_note() -> None:
    stack = new_stack()
    model = Model(
        stack,
        "Model",
        image=ContainerImage.pytorch_cpu("2.5.1"),
        source=ModelSource.from_hugging_face("meta-llama/Llama-2-70b-hf", token_secret=hub_token()),
    )
    _variant_endpoint(stack, model, InstanceType.of("ml.c7i.4xlarge"))
    Annotations.from_stack(stack).has_info(
        "/TestStack/Model", Match.string_like_regexp("no accelerator facts for ml.c7i.4xlarge")
    )


def test_stated_accelerators_of_an_unknown_type_are_checked() -> None:
    """The same unknown type, its accelerators stated: 70B fp16 does not fit on one L4."""
    unknown = InstanceType.of("ml.p3.2xlarge")
    stack = new_stack()
    _variant_endpoint(stack, _model(stack, "meta-llama/Llama-2-70b-hf"), unknown)
    Annotations.from_stack(stack).has_info(
        "/TestStack/Model", Match.string_like_regexp("State them to check")
    )
    stack = new_stack()
    stated = unknown.with_accelerators(Accelerator.L4, 1)
    with pytest.raises(ValidationError, match="does not fit on 1 x NVIDIA L4"):
        _variant_endpoint(stack, _model(stack, "meta-llama/Llama-2-70b-hf"), stated)


def test_a_given_spec_overrides_the_inferred_one_and_lands_in_metadata() -> None:
    stack = new_stack()
    tiny = ModelSpec.custom(
        "tiny", parameters=1e9, layers=16, attention_heads=16, head_dim=64, max_context=2048
    )
    model = _model(stack, "meta-llama/Llama-2-70b-hf", spec=tiny)
    assert model.spec is tiny
    _variant_endpoint(stack, model, InstanceType.G5_XLARGE)
    resources = Template.from_stack(stack).find_resources("AWS::SageMaker::Model")
    (metadata,) = [resource["Metadata"] for resource in resources.values()]
    assert metadata[MODEL_SPEC] == tiny.to_metadata()
    # The image's facts are in its literal URI, where ``plan`` reads them: not repeated.
    assert IMAGE not in metadata


def test_plan_metadata_holds_only_what_plan_cannot_read_from_the_resource() -> None:
    """A literal Deep Learning Container URI and a well-known ``HF_MODEL_ID`` tell ``plan``
    the image's facts and the architecture: no metadata (two jsii calls and template size
    saved per model). A region-agnostic stack's image URI is a token, so its facts are
    written; a spec ``plan`` would infer differently is written."""
    regional = new_stack()
    inferred = _model(regional, "mistralai/Mistral-7B-Instruct-v0.2")
    assert inferred.spec is ModelSpec.MISTRAL_7B
    _variant_endpoint(regional, inferred, InstanceType.G5_XLARGE)
    (resource,) = Template.from_stack(regional).find_resources("AWS::SageMaker::Model").values()
    assert "Metadata" not in resource
    image = image_plan(resource["Properties"]["PrimaryContainer"]["Image"], {}, None)
    assert (image.family, image.release, image.caching_eligible) == ("lmi", "0.31.0", True)

    agnostic = new_stack(region=None)
    _variant_endpoint(
        agnostic, _model(agnostic, "mistralai/Mistral-7B-Instruct-v0.2"), InstanceType.G5_XLARGE
    )
    (resource,) = Template.from_stack(agnostic).find_resources("AWS::SageMaker::Model").values()
    assert resource["Metadata"] == {
        IMAGE: {"family": "lmi", "release": "0.31.0", "containerCachingEligible": True}
    }

    renamed = new_stack()
    model = Model(
        renamed,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face(
            "mistralai/Mistral-7B-Instruct-v0.2", token_secret=hub_token()
        ),
        spec=ModelSpec.LLAMA_3_8B,  # not what the id says: plan needs it
    )
    _variant_endpoint(renamed, model, InstanceType.G5_XLARGE)
    (resource,) = Template.from_stack(renamed).find_resources("AWS::SageMaker::Model").values()
    assert resource["Metadata"] == {MODEL_SPEC: ModelSpec.LLAMA_3_8B.to_metadata()}


def test_the_spec_is_inferred_from_well_known_hugging_face_ids() -> None:
    stack = new_stack()
    assert _model(stack, "mistralai/Mistral-7B-Instruct-v0.2").spec is ModelSpec.MISTRAL_7B


def test_an_image_component_is_checked_against_its_hugging_face_artifact() -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    with pytest.raises(ValidationError, match="llama-2-70b \\(fp16\\) does not fit on 2 x"):
        endpoint.add_inference_component(
            "Big",
            serves=ComponentModel.from_image(
                ContainerImage.lmi("0.31.0"),
                artifact=ModelSource.from_hugging_face(
                    "meta-llama/Llama-2-70b-chat-hf", token_secret=hub_token()
                ),
                serving=LmiOptions(tensor_parallel_degree=2),
            ),
            resources=CopyResources(accelerators=2, min_memory=Size.gibibytes(16)),
        )
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    endpoint.add_inference_component(
        "Small",
        serves=ComponentModel.from_image(
            ContainerImage.lmi("0.31.0"),
            artifact=ModelSource.from_hugging_face(
                "mistralai/Mistral-7B-Instruct-v0.2", token_secret=hub_token()
            ),
        ),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
    )
    resources = Template.from_stack(stack).find_resources("AWS::SageMaker::InferenceComponent")
    (metadata,) = [resource["Metadata"] for resource in resources.values()]
    assert metadata[MODEL_SPEC]["name"] == "mistral-7b"
    assert metadata[IMAGE]["containerCachingEligible"] is True


def test_a_degree_that_cannot_shard_the_heads_is_a_synth_error() -> None:
    """Falcon 7B has 71 attention heads: only degree 1 shards them (was a warning)."""
    stack = new_stack()
    model = _model(stack, "tiiuae/falcon-7b", serving=LmiOptions(tensor_parallel_degree=2))
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(max_instance_count=1),
    )
    with pytest.raises(ValidationError) as error:
        endpoint.add_inference_component(
            "Falcon",
            serves=ComponentModel.of(model),
            resources=CopyResources(accelerators=2, min_memory=Size.gibibytes(16)),
        )
    message = str(error.value)
    assert "falcon-7b cannot be sharded at that degree" in message
    assert "71 attention heads do not divide over 2 accelerators" in message
    assert "e.g. 1" in message


def test_a_degree_that_shards_the_heads_passes() -> None:
    stack = new_stack()
    model = _model(stack, "tiiuae/falcon-7b", serving=LmiOptions(tensor_parallel_degree=1))
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(max_instance_count=1),
    )
    endpoint.add_inference_component(
        "Falcon",
        serves=ComponentModel.of(model),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
    )
    Template.from_stack(stack).resource_count_is("AWS::SageMaker::InferenceComponent", 1)


def test_lmi_renders_the_memory_share_for_vllm_and_refuses_it_elsewhere() -> None:
    options = LmiOptions(gpu_memory_utilization=0.95)
    options.validate(ContainerImage.lmi("0.33.0"))
    assert options.environment()["OPTION_GPU_MEMORY_UTILIZATION"] == "0.95"
    with pytest.raises(ValidationError, match=r"gpu_memory_utilization runs on LMI's vLLM engine"):
        options.validate(ContainerImage.lmi_tensorrt_llm("0.32.0"))
    with pytest.raises(ValidationError, match=r"serving.gpu_memory_utilization=1.5"):
        LmiOptions(gpu_memory_utilization=1.5).validate(ContainerImage.lmi("0.33.0"))


def test_tensorrt_llm_reads_its_own_share_of_the_free_memory() -> None:
    """LMI TensorRT-LLM gives the KV cache a share of what the weights leave
    (``OPTION_KV_CACHE_FREE_GPU_MEM_FRACTION``): Llama 3 8B on one A10G leaves 5.9 GB, a tenth
    of which is below the 1 GB headroom the KV cache needs."""

    image, serving = (
        ContainerImage.lmi_tensorrt_llm("0.32.0"),
        LmiOptions(tensor_parallel_degree=1, max_model_len=4096),
    )
    _on_one_a10g(image, serving, {})
    with pytest.raises(
        ValidationError,
        match=r"allocates 10% of the memory the weights leave as "
        r"OPTION_KV_CACHE_FREE_GPU_MEM_FRACTION=0.1 sets.*at least 0.17",
    ):
        _on_one_a10g(image, serving, {"OPTION_KV_CACHE_FREE_GPU_MEM_FRACTION": "0.1"})


def test_tgi_reads_its_cuda_memory_fraction() -> None:
    """TGI takes all the memory by default; ``CUDA_MEMORY_FRACTION`` (the launcher's
    ``--cuda-memory-fraction``) gives it less: half of one A10G does not hold Llama 3 8B."""
    serving = TgiOptions(num_gpus=1, max_total_tokens=4096)
    with pytest.raises(ValidationError) as error:
        _on_one_a10g(ContainerImage.tgi("2.4.0"), serving, {"CUDA_MEMORY_FRACTION": "0.5"})
    message = str(error.value)
    assert "allocates 50% of the accelerators' memory as CUDA_MEMORY_FRACTION=0.5 sets" in message
    assert "at least 0.80: set CUDA_MEMORY_FRACTION in the environment;" in message


def test_an_engine_memory_share_that_is_not_a_fraction_is_refused() -> None:
    with pytest.raises(
        ValidationError,
        match=r"environment\['OPTION_GPU_MEMORY_UTILIZATION'\]='90': the engine takes a fraction",
    ):
        _on_one_a10g(
            ContainerImage.lmi("0.33.0"),
            LmiOptions(tensor_parallel_degree=1, max_model_len=4096),
            {"OPTION_GPU_MEMORY_UTILIZATION": "90"},
        )


def test_a_deploy_time_memory_share_leaves_the_default() -> None:
    stack = new_stack()
    share = cdk.CfnParameter(stack, "Share", type="String").value_as_string
    image, serving = ContainerImage.lmi("0.33.0"), LmiOptions(tensor_parallel_degree=1)
    _on_one_a10g(image, serving, {"OPTION_GPU_MEMORY_UTILIZATION": share}, stack)
    Template.from_stack(stack).resource_count_is("AWS::SageMaker::EndpointConfig", 1)
