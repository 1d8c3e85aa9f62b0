"""Inference components: specification, fit on one instance, adapters, importers, errors."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Size
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from conftest import assert_cfn_lint_clean, new_stack, resources_of_type, role_statements

from cdk_sagemaker_llm import (
    ComponentModel,
    ContainerImage,
    ContainerNetworking,
    ContainerStartup,
    CopyResources,
    InferenceComponent,
    InferenceComponentEndpoint,
    InstanceType,
    LmiLora,
    LmiOptions,
    Model,
    ModelSource,
    RollingDeployment,
    TgiOptions,
    ValidationError,
)


def endpoint_on(
    stack: Any, instance_type: InstanceType = InstanceType.G5_12XLARGE, **kwargs: Any
) -> InferenceComponentEndpoint:
    return InferenceComponentEndpoint(stack, "Endpoint", instance_type=instance_type, **kwargs)


def test_component_from_model_reserves_compute_per_copy() -> None:
    stack = new_stack()
    endpoint = endpoint_on(stack)
    model = Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        serving=LmiOptions(tensor_parallel_degree=2),
    )
    alarm = cloudwatch.Alarm.from_alarm_name(stack, "Alarm", "errors")
    component = endpoint.add_inference_component(
        "Llm",
        serves=ComponentModel.of(model),
        resources=CopyResources(
            min_memory=Size.gibibytes(48), max_memory=Size.gibibytes(64), cpu_cores=12
        ),
        copy_count=2,
        startup=ContainerStartup(
            health_check_timeout=Duration.minutes(10), download_timeout=Duration.minutes(5)
        ),
        data_cache=True,
        deployment=RollingDeployment(batch_size=1, rollback_alarms=[alarm]),
    )
    template = assert_cfn_lint_clean(stack)
    (properties,) = resources_of_type(template, "AWS::SageMaker::InferenceComponent")
    specification = properties["Specification"]
    assert specification["ComputeResourceRequirements"] == {
        "MaxMemoryRequiredInMb": 65536,
        "MinMemoryRequiredInMb": 49152,
        "NumberOfAcceleratorDevicesRequired": 2,  # the model's tensor-parallel degree
        "NumberOfCpuCoresRequired": 12,
    }
    assert specification["StartupParameters"] == {
        "ContainerStartupHealthCheckTimeoutInSeconds": 600,
        "ModelDataDownloadTimeoutInSeconds": 300,
    }
    assert specification["DataCacheConfig"] == {"EnableCaching": True}
    assert "ModelName" in specification
    assert properties["RuntimeConfig"] == {"CopyCount": 2}
    assert properties["VariantName"] == "AllTraffic"
    assert properties["DeploymentConfig"]["RollingUpdatePolicy"]["MaximumBatchSize"] == {
        "Type": "COPY_COUNT",
        "Value": 1,
    }
    assert len(properties["InferenceComponentName"]) <= 63
    assert component.container_caching_eligible
    assert endpoint.components == [component]


def test_component_name_is_deterministic() -> None:
    names = []
    for _ in range(2):
        stack = new_stack()
        endpoint_on(stack).add_inference_component(
            "Llm",
            serves=ComponentModel.of(Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))),
            resources=CopyResources(min_memory=Size.gibibytes(8)),
        )
        (properties,) = resources_of_type(
            Template.from_stack(stack).to_json(), "AWS::SageMaker::InferenceComponent"
        )
        names.append(properties["InferenceComponentName"])
    assert names[0] == names[1]


def test_a_component_container_from_a_tarball_is_told_where_the_weights_are_unpacked() -> None:
    """As for a Model: TGI exits at start without HF_MODEL_ID, and SageMaker unpacks the
    component's ArtifactUrl into /opt/ml/model."""
    stack = new_stack()
    endpoint = endpoint_on(stack)
    bucket = s3.Bucket.from_bucket_name(stack, "B", "bucket")
    endpoint.add_inference_component(
        "Tgi",
        serves=ComponentModel.from_image(
            ContainerImage.tgi("2.4.0"),
            artifact=ModelSource.from_s3_tarball(bucket, "qwen/model.tar.gz"),
            serving=TgiOptions(num_gpus=1),
        ),
        resources=CopyResources(min_memory=Size.gibibytes(16)),
    )
    template = assert_cfn_lint_clean(stack)
    (properties,) = resources_of_type(template, "AWS::SageMaker::InferenceComponent")
    container = properties["Specification"]["Container"]
    assert container["ArtifactUrl"] == "s3://bucket/qwen/model.tar.gz"
    assert container["Environment"] == {"HF_MODEL_ID": "/opt/ml/model", "SM_NUM_GPUS": "1"}


def test_component_with_container_and_hugging_face_artifact_uses_endpoint_role() -> None:
    stack = new_stack()
    endpoint = endpoint_on(stack)
    InferenceComponent(
        stack,
        "Tgi",
        endpoint=endpoint,
        serves=ComponentModel.from_image(
            ContainerImage.tgi("2.4.0"),
            artifact=ModelSource.from_hugging_face("Qwen/Qwen2.5-7B-Instruct"),
            serving=TgiOptions(num_gpus=1, max_total_tokens=4096, max_input_tokens=2048),
            environment={"HF_HUB_ENABLE_HF_TRANSFER": "1"},
        ),
        resources=CopyResources(min_memory=Size.gibibytes(16)),
    )
    template = assert_cfn_lint_clean(stack)
    (properties,) = resources_of_type(template, "AWS::SageMaker::InferenceComponent")
    container = properties["Specification"]["Container"]
    assert container["Image"].endswith(
        "huggingface-pytorch-tgi-inference:2.4.0-tgi2.4.0-gpu-py311-cu124-ubuntu22.04-v2.2"
    )
    assert container["Environment"] == {
        "HF_HUB_ENABLE_HF_TRANSFER": "1",
        "HF_MODEL_ID": "Qwen/Qwen2.5-7B-Instruct",
        "MAX_INPUT_TOKENS": "2048",
        "MAX_TOTAL_TOKENS": "4096",
        "SM_NUM_GPUS": "1",
    }
    assert (
        properties["Specification"]["ComputeResourceRequirements"][
            "NumberOfAcceleratorDevicesRequired"
        ]
        == 1
    )
    policies = json.dumps(role_statements(template))
    assert "huggingface-pytorch-tgi-inference" in policies


def test_adapter_on_base_component() -> None:
    stack = new_stack()
    endpoint = endpoint_on(stack)
    base = endpoint.add_inference_component(
        "Base",
        serves=ComponentModel.of(
            Model(
                stack,
                "Model",
                image=ContainerImage.lmi("0.31.0"),
                serving=LmiOptions(lora=LmiLora(max_adapters=2, max_rank=16)),
            )
        ),
        resources=CopyResources(min_memory=Size.gibibytes(8)),
    )
    bucket = s3.Bucket.from_bucket_name(stack, "Adapters", "adapters")
    endpoint.add_inference_component(
        "Adapter",
        serves=ComponentModel.lora_adapter(
            base, ModelSource.from_s3_tarball(bucket, "sql/adapter.tar.gz"), lora_rank=16
        ),
    )
    template = assert_cfn_lint_clean(stack)
    adapter = next(
        p
        for p in resources_of_type(template, "AWS::SageMaker::InferenceComponent")
        if "BaseInferenceComponentName" in p["Specification"]
    )
    assert adapter["Specification"]["Container"] == {
        "ArtifactUrl": "s3://adapters/sql/adapter.tar.gz"
    }
    assert "ComputeResourceRequirements" not in adapter["Specification"]
    assert "RuntimeConfig" not in adapter


@pytest.mark.parametrize(
    ("props", "prop"),
    [
        ({"copy_count": 3}, "copy_count"),
        ({"startup": ContainerStartup(health_check_timeout=Duration.minutes(20))}, "startup"),
        ({"data_cache": True}, "data_cache"),
    ],
)
def test_an_adapter_refuses_what_only_its_base_has(props: dict[str, Any], prop: str) -> None:
    """An adapter's specification has no RuntimeConfig, StartupParameters or DataCacheConfig:
    copies, start-up timeouts and caching given to it would be dropped without a word."""
    stack = new_stack()
    endpoint = endpoint_on(stack)
    model = Model(
        stack, "Model", image=ContainerImage.lmi("0.31.0"), serving=LmiOptions(lora=LmiLora())
    )
    base = endpoint.add_inference_component(
        "Base",
        serves=ComponentModel.of(model),
        resources=CopyResources(min_memory=Size.gibibytes(8)),
    )
    bucket = s3.Bucket.from_bucket_name(stack, "Adapters", "adapters")
    with pytest.raises(ValidationError) as raised:
        endpoint.add_inference_component(
            "Adapter",
            serves=ComponentModel.lora_adapter(
                base, ModelSource.from_s3_tarball(bucket, "sql/adapter.tar.gz"), lora_rank=8
            ),
            **props,
        )
    assert prop in raised.value.prop
    assert "base component" in raised.value.fix


def test_import_grant_and_metrics() -> None:
    stack = new_stack()
    component = InferenceComponent.from_inference_component_name(
        stack, "Imported", inference_component_name="llama-ic", endpoint_name="llm-endpoint"
    )
    role = iam.Role(stack, "Caller", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    component.grant_invoke(role)
    (policy,) = resources_of_type(Template.from_stack(stack).to_json(), "AWS::IAM::Policy")
    assert policy["PolicyDocument"]["Statement"] == [
        {
            "Action": ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
            "Effect": "Allow",
            "Resource": [
                "arn:aws:sagemaker:us-west-2:123456789012:endpoint/llm-endpoint",
                "arn:aws:sagemaker:us-west-2:123456789012:inference-component/llama-ic",
            ],
        }
    ]
    concurrency = component.metric_concurrent_requests()
    assert concurrency.metric_name == "ConcurrentRequestsPerCopy"
    assert concurrency.dimensions == {"InferenceComponentName": "llama-ic"}
    assert component.metric_no_capacity_failures().metric_name == "NoCapacityInvocationFailures"
    assert component.metric_gpu_utilization().namespace == "/aws/sagemaker/InferenceComponents"
    assert component.metric_invocations().statistic == "Sum"
    assert component.metric_model_latency().statistic == "p90"


def _model(stack: Any, image: ContainerImage | None = None, degree: int | None = None) -> Model:
    return Model(
        stack,
        "Model",
        image=image or ContainerImage.lmi("0.31.0"),
        serving=LmiOptions(tensor_parallel_degree=degree) if degree else None,
    )


RESOURCE_FIELDS = ("accelerators", "min_memory", "max_memory", "cpu_cores")


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"accelerators": 8},
            "accelerators=8: one copy must fit on one instance, and ml.g5.12xlarge has 4 accelerators",
        ),
        ({"accelerators": 0}, "accelerators=0: must be at least 1"),
        (
            {"degree": 4, "accelerators": 2},
            "serving.tensor_parallel_degree=4: shards each copy over 4 accelerators but resources.accelerators (on ml.g5.12xlarge) provides 2",
        ),
        (
            {"min_memory": None},
            "min_memory=None: SageMaker needs the host memory each copy reserves",
        ),
        ({"min_memory": Size.mebibytes(64)}, "min_memory (MiB)=64: must be at least 128"),
        (
            {"min_memory": Size.gibibytes(500)},
            "min_memory (MiB)=512000: exceeds the host memory of one instance (196608 MiB)",
        ),
        (
            {"max_memory": Size.gibibytes(4)},
            "max_memory (MiB)=4096: is below min_memory (8192 MiB)",
        ),
        ({"cpu_cores": 0.1}, "cpu_cores=0.1: must be at least 0.25"),
        ({"cpu_cores": 64}, "cpu_cores=64: exceeds the 48 vCPUs of one ml.g5.12xlarge"),
        (
            {"copy_count": 0},
            "copy_count=0: SageMaker refuses to create a component with fewer than 1 copy",
        ),
        ({"inference_component_name": "n" * 64}, "inference_component_name="),
        ({"image": ContainerImage.lmi_neuronx("0.29.0")}, "runs on AWS Inferentia/Trainium"),
        (
            {"deployment": RollingDeployment(batch_size=1, wait_interval=Duration.hours(2))},
            "deployment.wait_interval (seconds)=7200",
        ),
    ],
)
def test_component_errors(kwargs: dict[str, Any], expected: str) -> None:
    stack = new_stack()
    endpoint = endpoint_on(stack)
    model = _model(stack, kwargs.pop("image", None), kwargs.pop("degree", None))
    per_copy = {"min_memory": Size.gibibytes(8)}
    per_copy.update({k: kwargs.pop(k) for k in RESOURCE_FIELDS if k in kwargs})
    with pytest.raises(ValidationError) as error:
        endpoint.add_inference_component(
            "Llm",
            serves=ComponentModel.of(model),
            resources=CopyResources(**per_copy),
            **kwargs,
        )
    assert expected in str(error.value)
    assert "Fix: " in str(error.value)


def test_component_shape_errors() -> None:
    stack = new_stack()
    endpoint = endpoint_on(stack)
    model = _model(stack)
    bucket = s3.Bucket.from_bucket_name(stack, "B", "bucket")
    memory = Size.gibibytes(8)
    with pytest.raises(ValidationError, match="not an S3 prefix of uncompressed weights"):
        endpoint.add_inference_component(
            "D",
            serves=ComponentModel.from_image(
                ContainerImage.lmi("0.31.0"), artifact=ModelSource.from_s3(bucket, "w/")
            ),
            resources=CopyResources(min_memory=memory),
        )
    with pytest.raises(
        ValidationError, match=r"serves.serving.tensor_parallel_degree=4: .* reserves 2"
    ):
        endpoint.add_inference_component(
            "E",
            serves=ComponentModel.from_image(
                ContainerImage.lmi("0.31.0"), serving=LmiOptions(tensor_parallel_degree=4)
            ),
            resources=CopyResources(accelerators=2, min_memory=memory),
        )
    base = endpoint.add_inference_component(
        "Base", serves=ComponentModel.of(model), resources=CopyResources(min_memory=memory)
    )
    with pytest.raises(ValidationError, match="an adapter shares its base component's compute"):
        endpoint.add_inference_component(
            "F",
            serves=ComponentModel.lora_adapter(
                base, ModelSource.from_s3_tarball(bucket, "a.tar.gz")
            ),
            resources=CopyResources(min_memory=memory),
        )
    with pytest.raises(
        ValidationError, match=r"an adapter's artifact must be an S3 \.tar\.gz archive"
    ):
        endpoint.add_inference_component(
            "H", serves=ComponentModel.lora_adapter(base, ModelSource.from_hugging_face("org/lora"))
        )


def test_network_isolated_endpoint_rejects_hugging_face_container_artifact() -> None:
    stack = new_stack()
    endpoint = endpoint_on(stack, networking=ContainerNetworking(network_isolation=True))
    with pytest.raises(ValidationError, match="the endpoint isolates containers from the network"):
        endpoint.add_inference_component(
            "Llm",
            serves=ComponentModel.from_image(
                ContainerImage.lmi("0.31.0"), artifact=ModelSource.from_hugging_face("org/model")
            ),
            resources=CopyResources(min_memory=Size.gibibytes(8)),
        )


def test_network_isolated_endpoint_rejects_a_model_that_downloads_from_hugging_face() -> None:
    """``ComponentModel.of(model)`` is checked as ``from_image`` is: a model whose weights come
    from the Hugging Face Hub cannot start on an endpoint that isolates its containers."""
    stack = new_stack()
    endpoint = endpoint_on(stack, networking=ContainerNetworking(network_isolation=True))
    model = Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face("org/model"),
    )
    with pytest.raises(ValidationError) as caught:
        endpoint.add_inference_component(
            "Llm",
            serves=ComponentModel.of(model),
            resources=CopyResources(min_memory=Size.gibibytes(8)),
        )
    assert caught.value.prop == "serves"
    assert "org/model" in caught.value.problem
    assert "ModelSource.from_s3" in caught.value.fix


def test_cpu_instance_component_reserves_no_accelerator() -> None:
    stack = new_stack()
    endpoint = endpoint_on(stack, InstanceType.of("ml.c7i.4xlarge"))
    endpoint.add_inference_component(
        "Cpu",
        serves=ComponentModel.of(Model(stack, "Model", image=ContainerImage.pytorch_cpu("2.5.1"))),
        resources=CopyResources(min_memory=Size.gibibytes(4), cpu_cores=2),
    )
    (properties,) = resources_of_type(
        assert_cfn_lint_clean(stack), "AWS::SageMaker::InferenceComponent"
    )
    assert (
        "NumberOfAcceleratorDevicesRequired"
        not in properties["Specification"]["ComputeResourceRequirements"]
    )


def test_a_fixed_name_is_claimed_once_per_stack_for_each_kind_of_resource() -> None:
    """Two models, endpoints or components of one stack with one fixed name (in any case)
    are refused at synth, naming the construct that holds it; SageMaker would fail the
    deployment with 'already exists'. A generated name, or the same name on another kind of
    resource, is fine."""
    stack = new_stack()
    image = ContainerImage.lmi("0.31.0")
    first = Model(stack, "First", image=image, model_name="llama")
    Model(stack, "Unnamed", image=image)
    Model(stack, "Unnamed2", image=image)
    with pytest.raises(ValidationError) as caught:
        Model(stack, "Second", image=image, model_name="LLAMA")
    assert caught.value.prop == "model_name" and caught.value.value == "LLAMA"
    assert "Default/First" in caught.value.problem or first.node.path in caught.value.problem
    assert "Second" in caught.value.fix
    endpoint = InferenceComponentEndpoint(
        stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE, endpoint_name="llama"
    )
    with pytest.raises(ValidationError, match="endpoint_name"):
        InferenceComponentEndpoint(
            stack, "Endpoint2", instance_type=InstanceType.G5_12XLARGE, endpoint_name="llama"
        )
    resources = CopyResources(accelerators=1, min_memory=Size.gibibytes(8))
    endpoint.add_inference_component(
        "A", serves=ComponentModel.of(first), resources=resources, inference_component_name="c"
    )
    with pytest.raises(ValidationError, match="inference_component_name"):
        endpoint.add_inference_component(
            "B", serves=ComponentModel.of(first), resources=resources, inference_component_name="c"
        )


def test_a_gpu_model_on_an_inferentia_endpoint_names_the_endpoint_instance_type() -> None:
    """The error names the property that is wrong (the endpoint's instance type), not the
    component's accelerators with the instance type as their value."""
    stack = new_stack()
    endpoint = endpoint_on(stack, InstanceType.of("ml.inf2.8xlarge"))
    model = Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))
    with pytest.raises(ValidationError) as caught:
        endpoint.add_inference_component(
            "Llm",
            serves=ComponentModel.of(model),
            resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(8)),
        )
    assert caught.value.prop == "endpoint.instance_type"
    assert caught.value.value == "ml.inf2.8xlarge"
    assert "needs NVIDIA GPUs" in caught.value.problem


def test_a_neuron_component_reserves_the_chips_of_its_neuron_cores() -> None:
    """On Inferentia2 the degree counts NeuronCores (two per chip): degree 4 reserves 2 chips,
    and a degree beyond the reserved chips' cores is refused naming them."""
    stack = new_stack()
    endpoint = endpoint_on(stack, InstanceType.INF2_24XLARGE)
    model = Model(
        stack,
        "Model",
        image=ContainerImage.lmi_neuronx("0.29.0"),
        serving=LmiOptions(tensor_parallel_degree=4),
    )
    endpoint.add_inference_component(
        "Llm",
        serves=ComponentModel.of(model),
        resources=CopyResources(min_memory=Size.gibibytes(8)),
    )
    (properties,) = resources_of_type(
        Template.from_stack(stack).to_json(), "AWS::SageMaker::InferenceComponent"
    )
    requirements = properties["Specification"]["ComputeResourceRequirements"]
    assert requirements["NumberOfAcceleratorDevicesRequired"] == 2
    wide = Model(
        stack,
        "Wide",
        image=ContainerImage.lmi_neuronx("0.29.0"),
        serving=LmiOptions(tensor_parallel_degree=6),
    )
    with pytest.raises(ValidationError, match=r"over 6 NeuronCores but .* provides 2"):
        endpoint.add_inference_component(
            "Wide",
            serves=ComponentModel.of(wide),
            resources=CopyResources(accelerators=2, min_memory=Size.gibibytes(8)),
        )


TENSOR_PARALLEL_ENVIRONMENTS = [
    ("tgi", "SM_NUM_GPUS"),
    ("lmi", "OPTION_TENSOR_PARALLEL_DEGREE"),
]


def _image(family: str) -> ContainerImage:
    return ContainerImage.tgi("2.4.0") if family == "tgi" else ContainerImage.lmi("0.31.0")


@pytest.mark.parametrize(("family", "variable"), TENSOR_PARALLEL_ENVIRONMENTS)
@pytest.mark.parametrize("as_model", [False, True])
def test_a_degree_in_the_environment_sets_the_accelerators_a_copy_reserves(
    family: str, variable: str, as_model: bool
) -> None:
    """A container told to shard over 4 GPUs by its raw environment reserves 4 (the documented
    default: the model's tensor-parallel degree), not 1 it could not start on."""
    stack = new_stack()
    endpoint = endpoint_on(stack)
    environment = {variable: "4"}
    serves = (
        ComponentModel.of(Model(stack, "Model", image=_image(family), environment=environment))
        if as_model
        else ComponentModel.from_image(_image(family), environment=environment)
    )
    component = endpoint.add_inference_component(
        "Llm", serves=serves, resources=CopyResources(min_memory=Size.gibibytes(16))
    )
    assert component.accelerators == 4
    (properties,) = resources_of_type(
        Template.from_stack(stack).to_json(), "AWS::SageMaker::InferenceComponent"
    )
    requirements = properties["Specification"]["ComputeResourceRequirements"]
    assert requirements["NumberOfAcceleratorDevicesRequired"] == 4


@pytest.mark.parametrize(("family", "variable"), TENSOR_PARALLEL_ENVIRONMENTS)
@pytest.mark.parametrize("as_model", [False, True])
def test_fewer_accelerators_than_the_environments_degree_are_refused(
    family: str, variable: str, as_model: bool
) -> None:
    stack = new_stack()
    endpoint = endpoint_on(stack)
    environment = {variable: "4"}
    serves = (
        ComponentModel.of(Model(stack, "Model", image=_image(family), environment=environment))
        if as_model
        else ComponentModel.from_image(_image(family), environment=environment)
    )
    with pytest.raises(ValidationError) as raised:
        endpoint.add_inference_component(
            "Llm",
            serves=serves,
            resources=CopyResources(accelerators=2, min_memory=Size.gibibytes(16)),
        )
    assert variable in raised.value.prop
    assert raised.value.value == 4
    assert "provides 2" in raised.value.problem


def test_an_imported_component_named_at_deploy_time_keeps_its_name_in_the_arn() -> None:
    """Lower-casing a token's placeholder (``${Token[...]}``) broke it: the grant named the
    literal ``inference-component/${token[token.9]}`` and the parameter was never read."""
    stack = new_stack()
    component_name = cdk.CfnParameter(stack, "ComponentName").value_as_string
    endpoint_name = cdk.CfnParameter(stack, "EndpointName").value_as_string
    component = InferenceComponent.from_inference_component_name(
        stack, "Imported", inference_component_name=component_name, endpoint_name=endpoint_name
    )
    role = iam.Role(stack, "Caller", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    component.grant_invoke(role)
    (policy,) = resources_of_type(Template.from_stack(stack).to_json(), "AWS::IAM::Policy")
    rendered = json.dumps(policy["PolicyDocument"])
    assert "${" not in rendered.replace("${AWS::", "")
    assert '{"Ref": "ComponentName"}' in rendered and '{"Ref": "EndpointName"}' in rendered
    model = Model.from_model_name(stack, "Model", cdk.CfnParameter(stack, "M").value_as_string)
    assert '{"Ref": "M"}' in json.dumps(stack.resolve(model.model_arn))
