"""LoRA adapter components and their base's LMI LoRA options; LMI async mode."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import Size
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match
from conftest import new_stack, resources_of_type
from hub import hub_token

from cdk_sagemaker_llm import (
    ComponentModel,
    ContainerImage,
    CopyResources,
    InferenceComponent,
    InferenceComponentEndpoint,
    InstanceType,
    LmiBackend,
    LmiLora,
    LmiOptions,
    ManagedInstanceScaling,
    Model,
    ModelSource,
    TgiOptions,
    ValidationError,
)

LLAMA = "meta-llama/Meta-Llama-3-8B-Instruct"


def _endpoint(stack: Any) -> InferenceComponentEndpoint:
    return InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G6E_2XLARGE)


def _image_base(endpoint: InferenceComponentEndpoint, **kwargs: Any) -> InferenceComponent:
    image = kwargs.pop("image", ContainerImage.lmi("0.31.0"))
    return endpoint.add_inference_component(
        "Base",
        serves=ComponentModel.from_image(
            image, artifact=ModelSource.from_hugging_face(LLAMA, token_secret=hub_token()), **kwargs
        ),
        resources=CopyResources(min_memory=Size.gibibytes(16)),
    )


def _adapter(
    endpoint: InferenceComponentEndpoint, base: Any, name: str, rank: int | None
) -> InferenceComponent:
    bucket = s3.Bucket.from_bucket_name(endpoint, f"{name}Bucket", "adapters")
    return endpoint.add_inference_component(
        name,
        serves=ComponentModel.lora_adapter(
            base, ModelSource.from_s3_tarball(bucket, f"{name}.tar.gz"), lora_rank=rank
        ),
    )


def _environments(template: dict[str, Any]) -> list[dict[str, str] | None]:
    return [
        properties["Specification"].get("Container", {}).get("Environment")
        for properties in resources_of_type(template, "AWS::SageMaker::InferenceComponent")
        if "BaseInferenceComponentName" not in properties["Specification"]
    ]


def _token_reference(value: Any) -> bool:
    """True for the gated base's token: a Secrets Manager dynamic reference, never a literal."""
    return "{{resolve:secretsmanager:" in json.dumps(value)


def test_adapters_set_their_bases_lora_options(lint_clean: Any) -> None:
    """On the component's own LMI container the library enables LoRA, allows as many adapters
    as are attached and the smallest vLLM rank covering theirs (24 -> 32)."""
    stack = new_stack()
    endpoint = _endpoint(stack)
    base = _image_base(endpoint)
    _adapter(endpoint, base, "Sql", 8)
    _adapter(endpoint, base, "Chat", 24)
    (environment,) = _environments(lint_clean(stack))
    assert environment is not None and _token_reference(environment.pop("HF_TOKEN"))
    assert environment == {
        "HF_MODEL_ID": LLAMA,
        "OPTION_ENABLE_LORA": "true",
        "OPTION_MAX_LORAS": "2",
        "OPTION_MAX_LORA_RANK": "32",
    }
    assert base.lora_adapters is not None
    assert list(base.lora_adapters.ranks.values()) == [8, 24]


def test_a_base_without_adapters_keeps_its_environment() -> None:
    from aws_cdk.assertions import Template

    stack = new_stack()
    _image_base(_endpoint(stack))
    (environment,) = _environments(Template.from_stack(stack).to_json())
    assert environment is not None and _token_reference(environment.pop("HF_TOKEN"))
    assert environment == {"HF_MODEL_ID": LLAMA}


def test_bounds_you_set_are_checked_not_changed(lint_clean: Any) -> None:
    stack = new_stack()
    endpoint = _endpoint(stack)
    base = _image_base(endpoint, serving=LmiOptions(lora=LmiLora(max_adapters=2, max_rank=16)))
    _adapter(endpoint, base, "Sql", 16)
    with pytest.raises(ValidationError, match=r"lora_rank=64: exceeds the base's OPTION_MAX_LORA"):
        _adapter(endpoint, base, "Wide", 64)
    _adapter(endpoint, base, "Chat", 8)
    with pytest.raises(ValidationError, match=r"this is adapter 3 of the base, whose OPTION_MAX"):
        _adapter(endpoint, base, "Third", 8)
    (environment,) = _environments(lint_clean(stack))
    assert environment is not None
    assert (environment["OPTION_MAX_LORAS"], environment["OPTION_MAX_LORA_RANK"]) == ("2", "16")


@pytest.mark.parametrize(
    ("environment", "rank", "match"),
    [
        ({"OPTION_MAX_LORA_RANK": "8"}, 16, r"exceeds the base's OPTION_MAX_LORA_RANK of 8"),
        ({"OPTION_ENABLE_LORA": "false"}, 8, r"does not enable LoRA \(OPTION_ENABLE_LORA=false"),
    ],
)
def test_raw_environment_bounds_are_checked(
    environment: dict[str, str], rank: int, match: str
) -> None:
    stack = new_stack()
    endpoint = _endpoint(stack)
    base = _image_base(endpoint, environment=environment)
    with pytest.raises(ValidationError, match=match):
        _adapter(endpoint, base, "Sql", rank)


def test_a_shared_model_is_checked_against_lmis_defaults_never_changed(lint_clean: Any) -> None:
    stack = new_stack()
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G6E_2XLARGE,
        instance_scaling=ManagedInstanceScaling(max_instance_count=2),
    )

    def base_on(model: Model, name: str) -> InferenceComponent:
        return endpoint.add_inference_component(
            name,
            serves=ComponentModel.of(model),
            resources=CopyResources(min_memory=Size.gibibytes(16)),
        )

    plain = Model(stack, "Plain", image=ContainerImage.lmi("0.31.0"))
    with pytest.raises(ValidationError, match=r"its LMI container does not enable LoRA"):
        _adapter(endpoint, base_on(plain, "PlainBase"), "Sql", 8)

    lora = Model(
        stack, "Lora", image=ContainerImage.lmi("0.31.0"), serving=LmiOptions(lora=LmiLora())
    )
    base = base_on(lora, "LoraBase")
    with pytest.raises(ValidationError, match=r"OPTION_MAX_LORA_RANK of 16 \(TestStack/Lora\)"):
        _adapter(endpoint, base, "Wide", 32)
    for index in range(4):  # LMI's default OPTION_MAX_LORAS
        _adapter(endpoint, base, f"A{index}", 16)
    with pytest.raises(
        ValidationError, match=r"adapter 5 of the base, whose OPTION_MAX_LORAS is 4"
    ):
        _adapter(endpoint, base, "A4", 8)
    assert lora.environment == {"OPTION_ENABLE_LORA": "true", "OPTION_ROLLING_BATCH": "auto"}


@pytest.mark.parametrize(
    ("base_props", "match"),
    [
        (
            {
                "image": ContainerImage.lmi("0.31.0"),
                "serving": LmiOptions(backend=LmiBackend.LMI_DIST),
            },
            r"runs LMI's lmi-dist engine; LMI hosts LoRA adapters on its vLLM engine only",
        ),
        (
            {"image": ContainerImage.lmi_tensorrt_llm("0.32.0")},
            r"runs LMI's lmi-tensorrt-llm engine",
        ),
    ],
)
def test_adapters_need_lmis_vllm_engine(base_props: dict[str, Any], match: str) -> None:
    stack = new_stack()
    endpoint = _endpoint(stack)
    base = _image_base(endpoint, **base_props)
    with pytest.raises(ValidationError, match=match):
        _adapter(endpoint, base, "Sql", 8)


def test_rank_errors() -> None:
    stack = new_stack()
    endpoint = _endpoint(stack)
    base = _image_base(endpoint)
    with pytest.raises(ValidationError, match=r"lora_rank=None: the base component .* runs LMI"):
        _adapter(endpoint, base, "Sql", None)
    with pytest.raises(ValidationError, match=r"lora_rank=1024"):
        _adapter(endpoint, base, "Wide", 1024)
    adapter = _adapter(endpoint, base, "Sql2", 8)
    with pytest.raises(ValidationError, match=r"is itself an adapter"):
        _adapter(endpoint, adapter, "Nested", 8)


def test_tgi_and_imported_bases_are_noted_not_checked() -> None:
    stack = new_stack()
    endpoint = _endpoint(stack)
    tgi = _image_base(endpoint, image=ContainerImage.tgi("2.4.0"), serving=TgiOptions(num_gpus=1))
    _adapter(endpoint, tgi, "OnTgi", None)
    imported = InferenceComponent.from_inference_component_name(
        stack, "Imported", inference_component_name="base-ic", endpoint_name="llm"
    )
    _adapter(endpoint, imported, "OnImported", 16)
    annotations = Annotations.from_stack(stack)
    annotations.has_info(
        "/TestStack/Endpoint/OnTgi",
        Match.string_like_regexp("TGI has no LoRA bounds to check"),
    )
    annotations.has_info(
        "/TestStack/Endpoint/OnImported",
        Match.string_like_regexp("imported base component base-ic not checked"),
    )


@pytest.mark.parametrize(
    ("lora", "match"),
    [
        (LmiLora(max_rank=48), r"serving.lora.max_rank=48: vLLM accepts only \[1, 8, 16"),
        (LmiLora(max_adapters=0), r"serving.lora.max_adapters=0"),
    ],
)
def test_lora_bound_errors(lora: LmiLora, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        LmiOptions(lora=lora).validate(ContainerImage.lmi("0.31.0"))


def test_async_mode_renders_lmis_vllm_async_service() -> None:
    options = LmiOptions(async_mode=True, max_rolling_batch_size=32, tensor_parallel_degree=1)
    options.validate(ContainerImage.lmi("0.31.0"))
    assert options.environment() == {
        "OPTION_ASYNC_MODE": "true",
        "OPTION_ROLLING_BATCH": "disable",
        "OPTION_ENTRYPOINT": "djl_python.lmi_vllm.vllm_async_service",
        "OPTION_MAX_ROLLING_BATCH_SIZE": "32",
        "OPTION_TENSOR_PARALLEL_DEGREE": "1",
    }
    assert "OPTION_ASYNC_MODE" not in LmiOptions().environment()


@pytest.mark.parametrize(
    ("options", "image", "match"),
    [
        (
            LmiOptions(async_mode=True, backend=LmiBackend.TENSORRT_LLM),
            ContainerImage.lmi_tensorrt_llm("0.32.0"),
            r"serving.async_mode='TENSORRT_LLM': async_mode runs on LMI's vLLM engine only",
        ),
        (
            LmiOptions(async_mode=True, continuous_batching=False),
            ContainerImage.lmi("0.31.0"),
            r"serving.async_mode='continuous_batching=False'",
        ),
        (
            LmiOptions(lora=LmiLora(), backend=LmiBackend.LMI_DIST),
            ContainerImage.lmi("0.31.0"),
            r"serving.lora='LMI_DIST': lora runs on LMI's vLLM engine only",
        ),
    ],
)
def test_async_mode_and_lora_need_vllm(options: LmiOptions, image: Any, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        options.validate(image)


def _depends_on(template: dict[str, Any], adapter: InferenceComponent) -> list[str]:
    from aws_cdk import Stack

    logical_id = Stack.of(adapter).resolve(adapter.resource.logical_id)
    return list(template["Resources"][logical_id].get("DependsOn", []))


def test_an_adapter_is_created_after_its_base_and_deleted_before_it(lint_clean: Any) -> None:
    """SageMaker needs the base to exist when an adapter is created (and the adapter gone
    before the base goes); the base's name is a literal, so only DependsOn orders them."""
    stack = new_stack()
    endpoint = _endpoint(stack)
    base = _image_base(endpoint)
    adapter = _adapter(endpoint, base, "Sql", 8)
    template = lint_clean(stack)
    assert stack.resolve(base.resource.logical_id) in _depends_on(template, adapter)


def test_an_adapter_in_another_construct_of_the_stack_follows_its_base(lint_clean: Any) -> None:
    from constructs import Construct

    stack = new_stack()
    endpoint = _endpoint(stack)
    base = _image_base(endpoint)
    bucket = s3.Bucket.from_bucket_name(stack, "Adapters", "adapters")
    adapter = InferenceComponent(
        Construct(stack, "Team"),
        "Sql",
        endpoint=endpoint,
        serves=ComponentModel.lora_adapter(
            base, ModelSource.from_s3_tarball(bucket, "sql.tar.gz"), lora_rank=8
        ),
    )
    template = lint_clean(stack)
    assert stack.resolve(base.resource.logical_id) in _depends_on(template, adapter)


def test_an_adapter_in_another_stack_orders_the_stacks() -> None:
    from aws_cdk import App, Environment, Stack

    app = App()
    env = Environment(account="123456789012", region="us-west-2")
    base_stack = Stack(app, "Base", env=env)
    endpoint = _endpoint(base_stack)
    base = _image_base(endpoint)
    adapter_stack = Stack(app, "Adapters", env=env)
    bucket = s3.Bucket.from_bucket_name(adapter_stack, "Adapters", "adapters")
    InferenceComponent(
        adapter_stack,
        "Sql",
        endpoint=endpoint,
        serves=ComponentModel.lora_adapter(
            base, ModelSource.from_s3_tarball(bucket, "sql.tar.gz"), lora_rank=8
        ),
    )
    app.synth()
    assert base_stack in adapter_stack.dependencies


def test_an_adapter_in_another_stage_is_refused() -> None:
    from aws_cdk import App, Environment, Stack, Stage

    app = App()
    env = Environment(account="123456789012", region="us-west-2")
    base_stack = Stack(app, "Base", env=env)
    base = _image_base(_endpoint(base_stack))
    other = Stack(Stage(app, "Prod"), "Adapters", env=env)
    endpoint = InferenceComponentEndpoint(other, "Endpoint", instance_type=InstanceType.G6E_2XLARGE)
    bucket = s3.Bucket.from_bucket_name(other, "Adapters", "adapters")
    with pytest.raises(ValidationError, match=r"base_component.*another stage"):
        InferenceComponent(
            other,
            "Sql",
            endpoint=endpoint,
            serves=ComponentModel.lora_adapter(
                base, ModelSource.from_s3_tarball(bucket, "sql.tar.gz"), lora_rank=8
            ),
        )
