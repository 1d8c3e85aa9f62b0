"""Model: container environment, model sources, execution role, validation errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import Duration
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk.assertions import Annotations, Match, Template
from conftest import assert_cfn_lint_clean, new_stack, resources_of_type, role_statements

from cdk_sagemaker_llm import (
    AcceleratorKind,
    ContainerImage,
    DataType,
    InstanceType,
    KvCachePrecision,
    LmiBackend,
    LmiOptions,
    Model,
    ModelSource,
    ModelSpec,
    Quantization,
    TgiOptions,
    ValidationError,
)


def only_model(template: dict[str, Any]) -> dict[str, Any]:
    (model,) = resources_of_type(template, "AWS::SageMaker::Model")
    return model


def policy_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    return role_statements(template)


def test_lmi_options_render_as_option_variables() -> None:
    stack = new_stack()
    Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face("Qwen/Qwen2.5-7B-Instruct"),
        serving=LmiOptions(
            backend=LmiBackend.LMI_DIST,
            max_rolling_batch_size=64,
            max_rolling_batch_prefill_tokens=8192,
            tensor_parallel_degree=2,
            dtype=DataType.BF16,
            quantization=Quantization.AWQ,
            enforce_eager=True,
            rope_scaling={"type": "dynamic", "factor": 2.0},
            max_model_len=8192,
            model_loading_timeout=Duration.minutes(20),
        ),
        environment={"SERVING_LOAD_MODELS": "test::MPI=/opt/ml/model"},
    )
    template = assert_cfn_lint_clean(stack)
    container = only_model(template)["PrimaryContainer"]
    assert container["Environment"] == {
        "HF_MODEL_ID": "Qwen/Qwen2.5-7B-Instruct",
        "OPTION_DTYPE": "bf16",
        "OPTION_ENFORCE_EAGER": "true",
        "OPTION_MAX_MODEL_LEN": "8192",
        "OPTION_MAX_ROLLING_BATCH_PREFILL_TOKENS": "8192",
        "OPTION_MAX_ROLLING_BATCH_SIZE": "64",
        "OPTION_MODEL_LOADING_TIMEOUT": "1200",
        "OPTION_QUANTIZE": "awq",
        "OPTION_ROLLING_BATCH": "lmi-dist",
        "OPTION_ROPE_SCALING": '{"factor": 2.0, "type": "dynamic"}',
        "OPTION_TENSOR_PARALLEL_DEGREE": "2",
        "SERVING_LOAD_MODELS": "test::MPI=/opt/ml/model",
    }
    assert container["Image"].endswith("djl-inference:0.31.0-lmi13.0.0-cu124")


def test_tgi_options_render_as_tgi_variables() -> None:
    stack = new_stack()
    Model(
        stack,
        "Model",
        image=ContainerImage.tgi("2.4.0"),
        source=ModelSource.from_hugging_face("Qwen/Qwen2.5-7B-Instruct"),
        serving=TgiOptions(
            num_gpus=4,
            max_input_tokens=4096,
            max_total_tokens=8192,
            max_batch_prefill_tokens=8192,
            max_batch_total_tokens=65536,
            max_concurrent_requests=64,
            dtype=DataType.BF16,
        ),
    )
    environment = only_model(assert_cfn_lint_clean(stack))["PrimaryContainer"]["Environment"]
    assert environment == {
        "DTYPE": "bfloat16",
        "HF_MODEL_ID": "Qwen/Qwen2.5-7B-Instruct",
        "MAX_BATCH_PREFILL_TOKENS": "8192",
        "MAX_BATCH_TOTAL_TOKENS": "65536",
        "MAX_CONCURRENT_REQUESTS": "64",
        "MAX_INPUT_TOKENS": "4096",
        "MAX_TOTAL_TOKENS": "8192",
        "SM_NUM_GPUS": "4",
    }


def test_hugging_face_token_is_a_dynamic_reference_never_a_literal() -> None:
    stack = new_stack()
    secret = secretsmanager.Secret(stack, "Token")
    Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face("meta-llama/Llama-2-7b-hf", token_secret=secret),
    )
    token = only_model(Template.from_stack(stack).to_json())["PrimaryContainer"]["Environment"][
        "HF_TOKEN"
    ]
    assert "{{resolve:secretsmanager:" in json.dumps(token)


@pytest.mark.parametrize(
    ("image", "variable"),
    [
        (ContainerImage.tgi("1.4.5"), "HUGGING_FACE_HUB_TOKEN"),
        (ContainerImage.tgi("2.0.2"), "HUGGING_FACE_HUB_TOKEN"),
        (ContainerImage.tgi("2.4.0"), "HF_TOKEN"),
        (ContainerImage.lmi("0.31.0"), "HF_TOKEN"),
    ],
)
def test_the_token_goes_in_the_variable_the_image_reads(
    image: ContainerImage, variable: str
) -> None:
    """TGI read only HUGGING_FACE_HUB_TOKEN before 2.1.0 (text-generation-inference pull
    request 2066): HF_TOKEN alone was a 401 on a gated model, at deploy."""
    stack = new_stack()
    secret = secretsmanager.Secret(stack, "Token")
    Model(
        stack,
        "Model",
        image=image,
        source=ModelSource.from_hugging_face("meta-llama/Llama-2-7b-hf", token_secret=secret),
    )
    environment = only_model(Template.from_stack(stack).to_json())["PrimaryContainer"][
        "Environment"
    ]
    tokens = {name for name in environment if "TOKEN" in name}
    assert tokens == {variable}


@pytest.mark.parametrize(
    "model_id",
    [
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "meta-llama/Llama-3.2-1B-Instruct",
        "META-LLAMA/Llama-2-7b-hf",
        "google/gemma-2-2b-it",
        "mistralai/Mistral-7B-Instruct-v0.3",
        "tiiuae/falcon-180B-chat",
    ],
)
def test_a_gated_hub_model_without_a_token_is_refused_naming_the_token_secret(
    model_id: str,
) -> None:
    with pytest.raises(ValidationError) as raised:
        ModelSource.from_hugging_face(model_id)
    error = raised.value
    assert error.prop == "ModelSource.from_hugging_face(model_id)" and error.value == model_id
    assert "gated" in error.problem and "huggingface.co" in error.problem
    assert "token_secret=" in error.fix and "ModelSource.from_s3" in error.fix


@pytest.mark.parametrize(
    "model_id", ["Qwen/Qwen2.5-7B-Instruct", "tiiuae/falcon-7b-instruct", "my-org/my-model"]
)
def test_an_open_or_unknown_hub_model_needs_no_token(model_id: str) -> None:
    stack = new_stack()
    Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face(model_id),
    )
    environment = only_model(Template.from_stack(stack).to_json())["PrimaryContainer"]
    assert environment["Environment"] == {"HF_MODEL_ID": model_id}


def test_a_gated_hub_model_with_a_token_synthesizes_with_the_token_reference() -> None:
    stack = new_stack()
    token = secretsmanager.Secret.from_secret_name_v2(stack, "HuggingFaceToken", "hf-token")
    Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face("google/gemma-2-2b-it", token_secret=token),
    )
    environment = only_model(assert_cfn_lint_clean(stack))["PrimaryContainer"]["Environment"]
    assert environment["HF_MODEL_ID"] == "google/gemma-2-2b-it"
    assert "{{resolve:secretsmanager:" in json.dumps(environment["HF_TOKEN"])


def test_s3_prefix_source_loads_uncompressed_and_grants_exactly_the_prefix() -> None:
    stack = new_stack()
    bucket = s3.Bucket.from_bucket_name(stack, "Weights", "my-weights")
    Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_s3(bucket, "llama-3-8b/"),
    )
    template = assert_cfn_lint_clean(stack)
    container = only_model(template)["PrimaryContainer"]
    assert container["ModelDataSource"] == {
        "S3DataSource": {
            "CompressionType": "None",
            "S3DataType": "S3Prefix",
            "S3Uri": "s3://my-weights/llama-3-8b/",
        }
    }
    assert container["Environment"] == {"HF_MODEL_ID": "/opt/ml/model"}
    statements = policy_statements(template)
    assert {
        "Action": "s3:GetObject",
        "Effect": "Allow",
        "Resource": "arn:aws:s3:::my-weights/llama-3-8b/*",
    } in statements
    assert {
        "Action": "s3:ListBucket",
        "Condition": {"StringLike": {"s3:prefix": ["llama-3-8b/*"]}},
        "Effect": "Allow",
        "Resource": "arn:aws:s3:::my-weights",
    } in statements
    assert not any(s["Resource"] == "*" and "s3" in json.dumps(s["Action"]) for s in statements)


def test_s3_tarball_source_sets_model_data_url() -> None:
    stack = new_stack()
    bucket = s3.Bucket.from_bucket_name(stack, "Weights", "my-weights")
    Model(
        stack,
        "Model",
        image=ContainerImage.pytorch_gpu("2.5.1"),
        source=ModelSource.from_s3_tarball(bucket, "model/model.tar.gz"),
    )
    template = assert_cfn_lint_clean(stack)
    assert (
        only_model(template)["PrimaryContainer"]["ModelDataUrl"]
        == "s3://my-weights/model/model.tar.gz"
    )
    assert {
        "Action": "s3:GetObject",
        "Effect": "Allow",
        "Resource": "arn:aws:s3:::my-weights/model/model.tar.gz",
    } in policy_statements(template)


def test_a_tgi_model_from_a_tarball_is_told_where_the_weights_are_unpacked() -> None:
    """TGI's sagemaker-entrypoint.sh exits at start when HF_MODEL_ID is unset ("HF_MODEL_ID
    must be set"): a tarball source rendered only ModelDataUrl, so its container never started."""
    stack = new_stack()
    bucket = s3.Bucket.from_bucket_name(stack, "Weights", "my-weights")
    Model(
        stack,
        "Model",
        image=ContainerImage.tgi("3.3.6"),
        source=ModelSource.from_s3_tarball(bucket, "model/model.tar.gz"),
    )
    container = only_model(assert_cfn_lint_clean(stack))["PrimaryContainer"]
    assert container["ModelDataUrl"] == "s3://my-weights/model/model.tar.gz"
    assert container["Environment"]["HF_MODEL_ID"] == "/opt/ml/model"


def test_created_role_is_least_privilege() -> None:
    stack = new_stack()
    model = Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))
    template = assert_cfn_lint_clean(stack)
    statements = policy_statements(template)
    wildcard = [s for s in statements if s["Resource"] == "*"]
    assert wildcard == [{"Action": "ecr:GetAuthorizationToken", "Effect": "Allow", "Resource": "*"}]
    (role,) = resources_of_type(template, "AWS::IAM::Role")
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "sagemaker.amazonaws.com"
    }
    assert "ManagedPolicyArns" not in role
    assert model.role is not None


def test_supplied_role_is_used_and_granted() -> None:
    stack = new_stack()
    role = iam.Role(stack, "Mine", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    Model(stack, "Model", image=ContainerImage.lmi("0.31.0"), role=role)
    template = Template.from_stack(stack).to_json()
    assert len(resources_of_type(template, "AWS::IAM::Role")) == 1
    logical_id = stack.get_logical_id(role.node.default_child)  # type: ignore[arg-type]
    assert only_model(template)["ExecutionRoleArn"] == {"Fn::GetAtt": [logical_id, "Arn"]}


@pytest.mark.parametrize(
    ("arn", "mutable", "warned"),
    [
        ("arn:aws:iam::123456789012:role/platform-sagemaker", False, True),
        ("arn:aws:iam::999999999999:role/platform-sagemaker", True, True),
        ("arn:aws:iam::123456789012:role/platform-sagemaker", True, False),
    ],
    ids=["immutable-import", "other-account", "mutable-import"],
)
def test_a_role_that_drops_the_grants_is_warned(arn: str, mutable: bool, warned: bool) -> None:
    """An immutable or cross-account import reports every grant added and writes none: the
    model would start without the rights to pull its image. A mutable import gets a policy."""
    stack = new_stack()
    role = iam.Role.from_role_arn(stack, "Platform", arn, mutable=mutable)
    Model(stack, "Model", image=ContainerImage.lmi("0.31.0"), role=role)
    warnings = Annotations.from_stack(stack).find_warning(
        "*", Match.string_like_regexp("grantsDropped")
    )
    assert len(warnings) == (1 if warned else 0)
    if warned:
        text = warnings[0].entry.data
        assert "role: the role" in text and "mutable=False" in text and "leave role unset" in text
        policies = resources_of_type(Template.from_stack(stack).to_json(), "AWS::IAM::Policy")
        assert policies == []


def test_vpc_placement_creates_security_group_and_grants_eni_rights() -> None:
    stack = new_stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0a1b2c3d4e5f60718",
        availability_zones=["us-west-2a", "us-west-2b"],
        private_subnet_ids=["subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"],
    )
    model = Model(
        stack, "Model", image=ContainerImage.lmi("0.31.0"), vpc=vpc, network_isolation=True
    )
    template = assert_cfn_lint_clean(stack)
    properties = only_model(template)
    assert properties["EnableNetworkIsolation"] is True
    assert properties["VpcConfig"]["Subnets"] == [
        "subnet-0a1b2c3d4e5f60718",
        "subnet-0a1b2c3d4e5f60719",
    ]
    assert len(model.security_groups) == 1
    actions = {
        a
        for s in policy_statements(template)
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert "ec2:CreateNetworkInterface" in actions


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"image": ContainerImage.tgi("2.4.0"), "serving": LmiOptions()},
            "serving='LmiOptions': LMI options do not apply to a tgi image",
        ),
        (
            {"image": ContainerImage.lmi("0.31.0"), "serving": TgiOptions()},
            "serving='TgiOptions': TGI options do not apply",
        ),
        (
            {
                "image": ContainerImage.lmi("0.31.0"),
                "serving": LmiOptions(backend=LmiBackend.TENSORRT_LLM),
            },
            "serving.backend='TENSORRT_LLM'",
        ),
        (
            {
                "image": ContainerImage.lmi("0.31.0"),
                "serving": LmiOptions(tensor_parallel_degree=0),
            },
            "serving.tensor_parallel_degree=0: must be at least 1",
        ),
        (
            {
                "image": ContainerImage.lmi("0.31.0"),
                "serving": LmiOptions(continuous_batching=False, max_rolling_batch_size=8),
            },
            "serving.continuous_batching=False",
        ),
        (
            {
                "image": ContainerImage.lmi("0.31.0"),
                "serving": LmiOptions(max_model_len=8192, max_rolling_batch_prefill_tokens=4096),
            },
            "serving.max_rolling_batch_prefill_tokens=4096",
        ),
        (
            {
                "image": ContainerImage.lmi("0.31.0"),
                "serving": LmiOptions(model_loading_timeout=Duration.hours(2)),
            },
            "serving.model_loading_timeout (seconds)=7200",
        ),
        (
            {
                "image": ContainerImage.tgi("2.4.0"),
                "serving": TgiOptions(max_input_tokens=4096, max_total_tokens=4096),
            },
            "serving.max_input_tokens=4096: must be below max_total_tokens (4096)",
        ),
        (
            {
                "image": ContainerImage.tgi("2.4.0"),
                "serving": TgiOptions(max_total_tokens=8192, max_batch_total_tokens=4096),
            },
            "serving.max_total_tokens=8192: must be at most max_batch_total_tokens (4096)",
        ),
        (
            {"image": ContainerImage.tgi("2.4.0"), "serving": TgiOptions(dtype=DataType.FP32)},
            "serving.dtype='FP32'",
        ),
        (
            {
                "image": ContainerImage.tgi_neuronx("0.3.0"),
                "serving": TgiOptions(quantization=Quantization.AWQ),
            },
            "serving.quantization='AWQ': TGI on Neuron",
        ),
        (
            {
                "image": ContainerImage.lmi("0.31.0"),
                "serving": LmiOptions(tensor_parallel_degree=2),
                "environment": {"OPTION_TENSOR_PARALLEL_DEGREE": "4"},
            },
            "environment['OPTION_TENSOR_PARALLEL_DEGREE']='4': OPTION_TENSOR_PARALLEL_DEGREE is already set",
        ),
        (
            {
                "image": ContainerImage.lmi("0.31.0"),
                "source": ModelSource.from_hugging_face("org/model"),
                "network_isolation": True,
            },
            "network_isolation=True: a Hugging Face model source",
        ),
        (
            {"image": ContainerImage.lmi("0.31.0"), "model_name": "bad_name!"},
            "model_name='bad_name!'",
        ),
        (
            {"image": ContainerImage.lmi("0.31.0"), "model_name": "x" * 64},
            "model_name=",
        ),
    ],
)
def test_contradictory_or_invalid_props_are_synth_errors(
    kwargs: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ValidationError) as error:
        Model(new_stack(), "Model", **kwargs)
    assert expected in str(error.value)
    assert "Fix: " in str(error.value)


def test_a_vpc_of_isolated_subnets_needs_them_selected_and_says_so() -> None:
    """The default selection (private subnets with egress) in a VPC of isolated subnets only
    is a ValidationError naming vpc_subnets and the selection that works; it was the CDK's
    bare "There are no 'Private' subnet groups in this VPC". Selecting them places the model."""
    stack = new_stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0a1b2c3d4e5f60718",
        availability_zones=["us-west-2a", "us-west-2b"],
        isolated_subnet_ids=["subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"],
    )
    image = ContainerImage.lmi("0.31.0")
    with pytest.raises(ValidationError) as caught:
        Model(stack, "Model", image=image, vpc=vpc, network_isolation=True)
    assert caught.value.prop == "vpc_subnets"
    assert "PRIVATE_ISOLATED" in caught.value.fix
    isolated = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
    Model(stack, "Placed", image=image, vpc=vpc, vpc_subnets=isolated, network_isolation=True)
    assert len(resources_of_type(assert_cfn_lint_clean(stack), "AWS::SageMaker::Model")) == 1


def test_a_hub_model_in_isolated_subnets_is_told_it_cannot_download() -> None:
    """No VPC endpoint reaches the Hugging Face Hub: a Hub model in isolated subnets synthesized
    silently and failed at start, and the error for a VPC of isolated subnets suggested them."""
    stack = new_stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0a1b2c3d4e5f60718",
        availability_zones=["us-west-2a"],
        isolated_subnet_ids=["subnet-0a1b2c3d4e5f60718"],
    )
    image, hub = ContainerImage.lmi("0.31.0"), ModelSource.from_hugging_face("org/model")
    with pytest.raises(ValidationError) as caught:
        Model(stack, "Default", image=image, source=hub, vpc=vpc)
    assert "ModelSource.from_s3" in caught.value.fix and "Hugging Face Hub" in caught.value.fix
    isolated = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
    Model(stack, "Hub", image=image, source=hub, vpc=vpc, vpc_subnets=isolated)
    warnings = Annotations.from_stack(stack).find_warning("/TestStack/Hub", Match.any_value())
    assert any("Hugging Face Hub" in str(w.entry.data) for w in warnings)


@pytest.mark.parametrize("name", ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "hf_token"])
def test_a_literal_hub_token_in_the_environment_is_refused_without_showing_it(name: str) -> None:
    """A Hugging Face token passed through ``environment`` would sit in the template in plain
    text; it is refused, the value never shown, with the secret route as the fix."""
    with pytest.raises(ValidationError) as caught:
        Model(
            new_stack(),
            "Model",
            image=ContainerImage.lmi("0.31.0"),
            source=ModelSource.from_hugging_face("org/model"),
            environment={name: "hf_NotForTemplates"},
        )
    assert caught.value.prop == f"environment[{name!r}]"
    assert "hf_NotForTemplates" not in str(caught.value)
    assert "token_secret" in caught.value.fix


def test_vpc_subnets_without_vpc_is_an_error() -> None:
    with pytest.raises(
        ValidationError, match="vpc=None: vpc_subnets and security_groups need a vpc"
    ):
        Model(
            new_stack(),
            "Model",
            image=ContainerImage.lmi("0.31.0"),
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        )


@pytest.mark.parametrize(
    ("factory", "expected"),
    [
        (
            lambda b: ModelSource.from_s3(b, "no-trailing-slash"),
            "from_s3(prefix)='no-trailing-slash'",
        ),
        (
            lambda b: ModelSource.from_s3_tarball(b, "weights.zip"),
            "from_s3_tarball(key)='weights.zip'",
        ),
        (
            lambda b: ModelSource.from_hugging_face("has space"),
            "from_hugging_face(model_id)='has space'",
        ),
    ],
)
def test_model_source_errors(factory: Any, expected: str) -> None:
    bucket = s3.Bucket.from_bucket_name(new_stack(), "B", "bucket")
    with pytest.raises(ValidationError) as error:
        factory(bucket)
    assert expected in str(error.value)


def test_placement_checks_accelerator_kind_and_tensor_parallel_degree() -> None:
    stack = new_stack()
    model = Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        serving=LmiOptions(tensor_parallel_degree=8),
    )
    with pytest.raises(
        ValidationError, match=r"serving\.tensor_parallel_degree=8: shards each copy over 8"
    ):
        model.check_placement(InstanceType.G5_12XLARGE, 4, "variants[0].instance_type")
    model.check_placement(InstanceType.G5_48XLARGE, 8, "variants[0].instance_type")
    with pytest.raises(ValidationError, match="needs NVIDIA GPUs"):
        model.check_placement(InstanceType.INF2_48XLARGE, 12, "variants[0].instance_type")
    neuron = Model(stack, "Neuron", image=ContainerImage.lmi_neuronx("0.29.0"))
    with pytest.raises(ValidationError, match="runs on AWS Inferentia/Trainium"):
        neuron.check_placement(InstanceType.G5_XLARGE, 1, "variants[0].instance_type")
    # Unknown instance types carry no hardware facts: no kind check.
    neuron.check_placement(InstanceType.of("ml.inf3.xlarge"), None, "variants[0].instance_type")


def test_triton_s_gpu_build_needs_gpus_and_its_cpu_build_does_not() -> None:
    """The SDK tags Triton's GPU build ``24.09-py3`` and its CPU build ``24.09-py3-cpu``."""
    stack = new_stack()
    gpu = Model(stack, "TritonGpu", image=ContainerImage.triton("24.09"))
    cpu = Model(stack, "TritonCpu", image=ContainerImage.triton("24.09-py3-cpu"))
    assert gpu.image is not None and gpu.image.accelerator is AcceleratorKind.NVIDIA_GPU
    assert cpu.image is not None and cpu.image.accelerator is None
    cpu_only = InstanceType.of("ml.c5.xlarge", accelerator_count=0)
    with pytest.raises(ValidationError, match=r"needs NVIDIA GPUs.*tag 24\.09-py3-cpu"):
        gpu.check_placement(cpu_only, None, "variants[0].instance_type")
    cpu.check_placement(cpu_only, None, "variants[0].instance_type")
    gpu.check_placement(InstanceType.G5_XLARGE, 1, "variants[0].instance_type")


def test_an_x86_image_on_grace_hosts_is_refused() -> None:
    """p6e-gb200's CPUs are Arm (Grace): LMI 0.31.0 is an x86_64 image and never starts."""
    from cdk_sagemaker_llm import CpuArchitecture, Endpoint, ProductionVariant

    stack = new_stack()
    model = Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face("Qwen/Qwen2.5-7B-Instruct"),
    )
    assert InstanceType.P6E_GB200_36XLARGE.cpu_architecture is CpuArchitecture.ARM64
    assert ContainerImage.lmi("0.31.0").cpu_architecture is CpuArchitecture.X86_64
    with pytest.raises(
        ValidationError,
        match=r"instance_type='ml\.p6e-gb200\.36xlarge': its CPUs are arm64 but .* x86_64",
    ):
        Endpoint(
            stack,
            "Endpoint",
            variants=[
                ProductionVariant(model=model, instance_type=InstanceType.P6E_GB200_36XLARGE)
            ],
        )


def test_an_arm64_image_serves_on_grace_hosts_and_is_refused_on_x86_hosts() -> None:
    from cdk_sagemaker_llm import CpuArchitecture, Endpoint, ProductionVariant

    uri = "123456789012.dkr.ecr.us-west-2.amazonaws.com/my-vllm:arm64"
    stack = new_stack()
    model = Model(
        stack,
        "Model",
        image=ContainerImage.from_uri(uri, cpu_architecture=CpuArchitecture.ARM64),
        source=ModelSource.from_hugging_face("Qwen/Qwen2.5-7B-Instruct"),
    )
    Endpoint(
        stack,
        "Grace",
        variants=[ProductionVariant(model=model, instance_type=InstanceType.P6E_GB200_36XLARGE)],
    )
    with pytest.raises(ValidationError, match=r"its CPUs are x86_64 but .* arm64"):
        Endpoint(
            stack,
            "Hopper",
            variants=[ProductionVariant(model=model, instance_type=InstanceType.P5_48XLARGE)],
        )


def test_graviton_names_are_arm_and_unknown_types_unchecked() -> None:
    from cdk_sagemaker_llm import CpuArchitecture

    assert InstanceType.of("ml.c7g.4xlarge").cpu_architecture is CpuArchitecture.ARM64
    assert InstanceType.of("ml.c7i.4xlarge").cpu_architecture is None
    assert InstanceType.G6E_2XLARGE.cpu_architecture is CpuArchitecture.X86_64
    assert ContainerImage.from_uri("ghcr.io/me/llm:1").cpu_architecture is None


def test_an_environment_value_over_1024_bytes_is_refused() -> None:
    """Each environment key and value is at most 1,024 bytes (SageMaker API reference), on a
    Model and on a component's own container alike."""
    from cdk_sagemaker_llm import ComponentModel, InferenceComponentEndpoint

    stack = new_stack()
    long_value = "x" * 1025
    Model(stack, "Fits", image=ContainerImage.lmi("0.31.0"), environment={"A": "x" * 1024})
    with pytest.raises(ValidationError, match=r"environment\['CHAT_TEMPLATE'\]=.*1025 bytes"):
        Model(
            stack,
            "Model",
            image=ContainerImage.lmi("0.31.0"),
            environment={"CHAT_TEMPLATE": long_value},
        )
    endpoint = InferenceComponentEndpoint(stack, "Ep", instance_type=InstanceType.G6E_2XLARGE)
    with pytest.raises(ValidationError, match=r"serves\.environment\['CHAT_TEMPLATE'\]"):
        endpoint.add_inference_component(
            "Component",
            serves=ComponentModel.from_image(
                ContainerImage.lmi("0.31.0"),
                artifact=ModelSource.from_hugging_face("Qwen/Qwen2.5-7B-Instruct"),
                environment={"CHAT_TEMPLATE": long_value},
            ),
        )


def test_serving_options_render_an_fp8_kv_cache_only_where_the_container_documents_it() -> None:
    """LMI (vLLM pass-through, from 0.32.0) and TGI (from 2.4.0) render their documented
    variable; the TensorRT-LLM image and an older release are refused naming the prop, the
    engine's problem and the fix, never rendered without effect."""
    fp8 = KvCachePrecision.FP8
    lmi, tgi = LmiOptions(kv_cache_precision=fp8), TgiOptions(kv_cache_precision=fp8)
    lmi.validate(ContainerImage.lmi("0.32.0"))
    tgi.validate(ContainerImage.tgi("2.4.0"))
    assert lmi.environment()["OPTION_KV_CACHE_DTYPE"] == "fp8"
    assert tgi.environment() == {"KV_CACHE_DTYPE": "fp8_e4m3fn"}
    assert "OPTION_KV_CACHE_DTYPE" not in LmiOptions().environment()
    refused = [
        (lmi, ContainerImage.lmi_tensorrt_llm("0.33.0"), "documents no KV-cache dtype setting"),
        (lmi, ContainerImage.lmi("0.31.0"), "from release 0.32.0"),
        (tgi, ContainerImage.tgi("2.3.1"), "from release 2.4.0"),
    ]
    for options, image, problem in refused:
        with pytest.raises(ValidationError) as raised:
            options.validate(image)
        assert (raised.value.prop, raised.value.value) == ("serving.kv_cache_precision", "fp8")
        assert problem in raised.value.problem
        assert "leave kv_cache_precision unset" in raised.value.fix


NEURON_DEGREES = [
    (InstanceType.INF2_XLARGE, 2),  # djl-serving's TransformersNeuronX tuning guide
    (InstanceType.INF2_8XLARGE, 2),
    (InstanceType.INF2_24XLARGE, 8),  # the same guide: Llama 2 7B at degree 8
    (InstanceType.INF2_48XLARGE, 24),
    (InstanceType.TRN1_32XLARGE, 32),
]


def neuron_endpoint(
    instance_type: InstanceType, serving: Any, *, image: ContainerImage | None = None, **kw: Any
) -> None:
    from aws_cdk import App, Environment, Stack

    from cdk_sagemaker_llm import Endpoint, ProductionVariant

    stack = Stack(App(), "S", env=Environment(account="123456789012", region="us-east-1"))
    bucket = s3.Bucket.from_bucket_name(stack, "W", "wbucket")
    model = Model(
        stack,
        "M",
        image=image or ContainerImage.lmi_neuronx("0.29.0"),
        source=ModelSource.from_s3(bucket, "p/"),
        serving=serving,
        **kw,
    )
    Endpoint(stack, "E", variants=[ProductionVariant(model=model, instance_type=instance_type)])


@pytest.mark.parametrize(("instance_type", "degree"), NEURON_DEGREES)
def test_a_neuron_tensor_parallel_degree_counts_neuron_cores(
    instance_type: InstanceType, degree: int
) -> None:
    """LMI NeuronX's ``tensor_parallel_degree`` counts NeuronCores, two per Inferentia2 or
    Trainium chip: every core of the instance can take a rank."""
    neuron_endpoint(instance_type, LmiOptions(tensor_parallel_degree=degree))
    # The sizing check sizes the chips those cores are on (heads are padded on Neuron).
    neuron_endpoint(
        instance_type,
        LmiOptions(tensor_parallel_degree=degree),
        spec=ModelSpec.preset("llama-2-7b"),
    )


@pytest.mark.parametrize(
    ("instance_type", "degree", "cores"),
    [
        (InstanceType.INF2_XLARGE, 3, 2),
        (InstanceType.INF2_48XLARGE, 26, 24),
        (InstanceType.TRN1_32XLARGE, 33, 32),
    ],
)
def test_a_neuron_degree_beyond_the_neuron_cores_is_refused(
    instance_type: InstanceType, degree: int, cores: int
) -> None:
    with pytest.raises(ValidationError) as caught:
        neuron_endpoint(instance_type, LmiOptions(tensor_parallel_degree=degree))
    assert caught.value.prop == "serving.tensor_parallel_degree"
    assert caught.value.value == degree
    assert f"{cores} NeuronCores" in caught.value.problem
    assert f"at most {cores}" in caught.value.fix


def test_the_gpu_degree_still_counts_gpus() -> None:
    model = Model(
        new_stack(),
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        serving=LmiOptions(tensor_parallel_degree=2),
    )
    with pytest.raises(ValidationError, match=r"over 2 accelerators but .* provides 1"):
        model.check_placement(InstanceType.G5_2XLARGE, 1, "variants[0].instance_type")


def test_neuron_cores_per_chip_are_in_the_catalog() -> None:
    assert InstanceType.INF2_48XLARGE.tensor_parallel_ranks_per_device == 2
    assert InstanceType.TRN1_32XLARGE.tensor_parallel_ranks_per_device == 2
    assert InstanceType.G5_48XLARGE.tensor_parallel_ranks_per_device == 1
    assert InstanceType.INF2_48XLARGE.devices_for_degree(24) == 12
    assert InstanceType.INF2_48XLARGE.devices_for_degree(3) == 2
    assert InstanceType.G5_48XLARGE.devices_for_degree(8) == 8


@pytest.mark.parametrize(
    ("release", "variable"),
    [("1.3.3", "MAX_INPUT_LENGTH"), ("1.4.5", "MAX_INPUT_LENGTH"), ("2.0.0", "MAX_INPUT_TOKENS")],
)
def test_tgi_before_2_reads_the_longest_prompt_from_max_input_length(
    release: str, variable: str
) -> None:
    """TGI's launcher took ``--max-input-tokens`` (``MAX_INPUT_TOKENS``) from 2.0.0 (pull
    request 1727); before, only ``MAX_INPUT_LENGTH``."""
    stack = new_stack()
    model = Model(
        stack,
        "Model",
        image=ContainerImage.tgi(release),
        source=ModelSource.from_hugging_face("Qwen/Qwen2.5-7B-Instruct"),
        serving=TgiOptions(max_input_tokens=100, max_total_tokens=200),
    )
    environment = only_model(Template.from_stack(stack).to_json())["PrimaryContainer"][
        "Environment"
    ]
    assert environment[variable] == "100"
    other = ({"MAX_INPUT_LENGTH", "MAX_INPUT_TOKENS"} - {variable}).pop()
    assert other not in environment
    assert model.environment[variable] == "100"


@pytest.mark.parametrize(
    ("serving", "prop", "named"),
    [
        (TgiOptions(num_gpus=2), "serving.num_gpus", "HF_NUM_CORES"),
        (TgiOptions(dtype=DataType.BF16), "serving.dtype", "HF_AUTO_CAST_TYPE"),
    ],
)
def test_tgi_neuronx_refuses_the_gpu_launcher_options(
    serving: TgiOptions, prop: str, named: str
) -> None:
    """optimum-neuron's TGI entrypoint ignores SM_NUM_GPUS and its shard takes no --dtype: the
    error names the Neuron variable to pass through ``environment``."""
    with pytest.raises(ValidationError) as caught:
        Model(new_stack(), "Model", image=ContainerImage.tgi_neuronx("0.3.0"), serving=serving)
    assert caught.value.prop == prop
    assert named in caught.value.fix and "environment=" in caught.value.fix


def test_tgi_neuronx_neuron_cores_are_checked_against_the_instance() -> None:
    """``HF_NUM_CORES`` passed through counts NeuronCores: 2 fit ml.inf2.8xlarge's one chip,
    4 do not."""
    image = ContainerImage.tgi_neuronx("0.3.0")
    serving = TgiOptions(max_input_tokens=100, max_total_tokens=200)
    neuron_endpoint(
        InstanceType.INF2_8XLARGE, serving, image=image, environment={"HF_NUM_CORES": "2"}
    )
    with pytest.raises(ValidationError) as caught:
        neuron_endpoint(
            InstanceType.INF2_8XLARGE, serving, image=image, environment={"HF_NUM_CORES": "4"}
        )
    assert caught.value.prop == "environment['HF_NUM_CORES']"
    assert "2 NeuronCores" in caught.value.problem


@pytest.mark.parametrize("quantization", list(Quantization))
def test_lmi_neuronx_refuses_gpu_quantization(quantization: Quantization) -> None:
    """Transformers-NeuronX quantizes only with option.quantize=static_int8 (djl-serving's
    user guide): AWQ, GPTQ, FP8 and bitsandbytes are CUDA kernels."""
    with pytest.raises(ValidationError) as caught:
        Model(
            new_stack(),
            "Model",
            image=ContainerImage.lmi_neuronx("0.29.0"),
            serving=LmiOptions(quantization=quantization),
        )
    assert caught.value.prop == "serving.quantization"
    assert caught.value.value == quantization.name
    assert "OPTION_QUANTIZE': 'static_int8'" in caught.value.fix
    # static_int8 through the environment is what the guide documents.
    Model(
        new_stack(),
        "Int8",
        image=ContainerImage.lmi_neuronx("0.29.0"),
        serving=LmiOptions(tensor_parallel_degree=2),
        environment={"OPTION_QUANTIZE": "static_int8"},
    )


@pytest.mark.parametrize("name", ["MY-VAR", "1VAR", "", "A B", "É"])
def test_an_environment_name_sagemaker_refuses_is_refused(name: str) -> None:
    """botocore's EnvironmentKey: ``[a-zA-Z_][a-zA-Z0-9_]*``."""
    with pytest.raises(ValidationError) as caught:
        Model(new_stack(), "Model", image=ContainerImage.lmi("0.31.0"), environment={name: "x"})
    assert caught.value.prop == f"environment[{name!r}]"
    assert caught.value.value == name
    assert "rename the variable" in caught.value.fix


def test_more_than_100_environment_entries_are_refused_counting_the_rendered_ones() -> None:
    """botocore's EnvironmentMap holds at most 100 entries; the library's own count."""
    many = {f"V{i}": "x" for i in range(99)}
    Model(new_stack(), "Fits", image=ContainerImage.lmi("0.31.0"), environment=many)
    with pytest.raises(ValidationError) as caught:
        Model(
            new_stack(),
            "Model",
            image=ContainerImage.lmi("0.31.0"),
            source=ModelSource.from_hugging_face("Qwen/Qwen2.5-7B-Instruct"),  # HF_MODEL_ID
            serving=LmiOptions(max_model_len=4096),  # OPTION_ROLLING_BATCH, OPTION_MAX_MODEL_LEN
            environment=many,
        )
    assert caught.value.prop == "environment"
    assert "102 entries" in str(caught.value.value)
    assert "at most 100" in caught.value.problem


def test_the_environment_limits_match_botocore() -> None:
    import botocore.session

    from cdk_sagemaker_llm.constructs.model import ENVIRONMENT_NAME, MAX_ENVIRONMENT_ENTRIES

    shape = botocore.session.get_session().get_service_model("sagemaker")
    environment = shape.shape_for("EnvironmentMap")
    assert environment.metadata["max"] == MAX_ENVIRONMENT_ENTRIES
    assert environment.key.metadata["pattern"] == ENVIRONMENT_NAME.pattern  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("arn", "named"),
    [
        ("arn:aws:sagemaker:eu-west-1:123456789012:model/m", "region is eu-west-1"),
        ("arn:aws:sagemaker:us-west-2:999999999999:model/m", "account is 999999999999"),
        ("arn:aws:s3:us-west-2:123456789012:model/m", "service is s3"),
    ],
)
def test_a_model_arn_of_another_region_account_or_service_is_refused(arn: str, named: str) -> None:
    """Only the ARN's name reaches the endpoint, which SageMaker looks up in its own account
    and region: another one's model would be another model."""
    stack = new_stack()  # us-west-2, 123456789012
    with pytest.raises(ValidationError) as caught:
        Model.from_model_arn(stack, "A", arn)
    assert caught.value.prop == "model_arn"
    assert named in caught.value.problem
    imported = Model.from_model_arn(
        stack, "Here", "arn:aws:sagemaker:us-west-2:123456789012:model/m"
    )
    assert imported.model_name == "m"


def test_an_image_outside_ecr_is_refused_when_a_model_would_pull_it() -> None:
    """CreateModel without ImageConfig pulls from Amazon ECR only (RepositoryAccessMode
    Platform); the library renders no Vpc mode, so a Docker Hub or GHCR image cannot start.
    Describing one (its caching eligibility) still works."""
    stack = new_stack()
    image = ContainerImage.from_uri("docker.io/vllm/vllm-openai:v0.6.0")
    assert image.container_caching_eligible is False
    with pytest.raises(ValidationError) as raised:
        Model(stack, "Model", image=image)
    assert raised.value.prop == "image"
    assert "only from ECR" in str(raised.value) and "ECR repository" in raised.value.fix
