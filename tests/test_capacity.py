"""Multi-instance correctness: copies against what max_instance_count instances hold, and the
benchmark's per-copy figures over instances x copies per instance."""

from __future__ import annotations

import datetime

import aws_cdk as cdk
import pytest
from aws_cdk import Size
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk.assertions import Template
from conftest import new_stack
from hub import hub_token

from cdk_sagemaker_llm import (
    ComponentModel,
    CopyResources,
    ManagedInstanceScaling,
    RollingDeployment,
)
from cdk_sagemaker_llm.benchmarking import BenchmarkLoad
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.constructs.autoscaling import ComponentScaling
from cdk_sagemaker_llm.constructs.benchmark import EndpointBenchmark
from cdk_sagemaker_llm.constructs.capacity_check import CopyDemand, instances_needed
from cdk_sagemaker_llm.constructs.endpoint import (
    Endpoint,
    InferenceComponentEndpoint,
    ProductionVariant,
)
from cdk_sagemaker_llm.constructs.images import ContainerImage
from cdk_sagemaker_llm.constructs.inference_component import InferenceComponent
from cdk_sagemaker_llm.constructs.model import Model
from cdk_sagemaker_llm.constructs.model_source import ModelSource
from cdk_sagemaker_llm.constructs.serving_options import LmiLora, LmiOptions
from cdk_sagemaker_llm.errors import ValidationError

LLAMA = "meta-llama/Meta-Llama-3-8B-Instruct"


def model(stack: cdk.Stack, id: str = "Model", lora: LmiLora | None = None) -> Model:
    return Model(
        stack,
        id,
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face(LLAMA, token_secret=hub_token()),
        serving=LmiOptions(
            tensor_parallel_degree=1, max_rolling_batch_size=8, max_model_len=4096, lora=lora
        ),
    )


def endpoint(stack: cdk.Stack, max_instance_count: int = 1) -> InferenceComponentEndpoint:
    return InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(max_instance_count=max_instance_count),
    )


def component(
    stack: cdk.Stack,
    ep: InferenceComponentEndpoint,
    id: str = "Component",
    *,
    copies: int = 1,
    memory_gib: int = 16,
    cpu_cores: float | None = None,
    lora: LmiLora | None = None,
) -> InferenceComponent:
    return InferenceComponent(
        stack,
        id,
        endpoint=ep,
        serves=ComponentModel.of(model(stack, f"{id}Model", lora)),
        resources=CopyResources(
            accelerators=1, min_memory=Size.gibibytes(memory_gib), cpu_cores=cpu_cores
        ),
        copy_count=copies,
    )


def test_twelve_one_gpu_copies_do_not_fit_one_four_gpu_instance() -> None:
    stack = new_stack()
    ep = endpoint(stack, max_instance_count=1)
    comp = component(stack, ep)
    with pytest.raises(ValidationError) as raised:
        ComponentScaling(stack, "Scaling", component=comp, max_copies=12)
    error = raised.value
    assert (error.prop, error.value) == ("max_copies", 12)
    assert "at least 3 x ml.g5.12xlarge" in error.problem
    assert "max_instance_count is 1" in error.problem
    assert "max_instance_count to at least 3" in error.fix


def test_the_same_copies_fit_three_instances() -> None:
    stack = new_stack()
    comp = component(stack, endpoint(stack, max_instance_count=3))
    scaling = ComponentScaling(stack, "Scaling", component=comp, max_copies=12)
    assert scaling.max_copies == 12


def test_copies_at_creation_are_checked_too() -> None:
    stack = new_stack()
    with pytest.raises(ValidationError) as raised:
        component(stack, endpoint(stack), copies=5)
    assert (raised.value.prop, raised.value.value) == ("copy_count", 5)


def test_every_component_on_the_endpoint_counts_with_its_scaling_maximum() -> None:
    stack = new_stack()
    ep = endpoint(stack, max_instance_count=2)
    first = component(stack, ep, "First", copies=2)
    ComponentScaling(stack, "FirstScaling", component=first, max_copies=7)  # 7 of 8 GPUs
    with pytest.raises(ValidationError) as raised:
        component(stack, ep, "Second", copies=2)  # 7 + 2 > 8
    assert raised.value.prop == "copy_count"
    assert "First 7" in raised.value.problem and "Second 2" in raised.value.problem


def test_a_later_scaling_maximum_is_checked_against_the_components_already_there() -> None:
    stack = new_stack()
    ep = endpoint(stack, max_instance_count=2)
    first = component(stack, ep, "First", copies=1)
    component(stack, ep, "Second", copies=1)
    ComponentScaling(stack, "FirstScaling", component=first, max_copies=7)  # 7 + 1 = 8 fits
    other = new_stack()
    ep = endpoint(other, max_instance_count=2)
    first = component(other, ep, "First", copies=1)
    component(other, ep, "Second", copies=2)
    with pytest.raises(ValidationError) as raised:
        ComponentScaling(other, "FirstScaling", component=first, max_copies=7)  # 7 + 2 > 8
    assert raised.value.prop == "max_copies"


def test_host_memory_counts_as_well_as_accelerators() -> None:
    stack = new_stack()
    comp = component(stack, endpoint(stack), memory_gib=64)  # 192 GiB per instance: 3 copies
    with pytest.raises(ValidationError) as raised:
        ComponentScaling(stack, "Scaling", component=comp, max_copies=4)
    assert "MiB of host memory" in raised.value.problem


def test_copies_are_placed_whole_on_one_instance() -> None:
    # 18 of 48 cores per copy: 2 copies per instance, so 5 copies need 3 instances even though
    # 5 x 18 = 90 cores are fewer than the 96 of two instances.
    stack = new_stack()
    comp = component(stack, endpoint(stack, max_instance_count=2), cpu_cores=18)
    with pytest.raises(ValidationError) as raised:
        ComponentScaling(stack, "Scaling", component=comp, max_copies=5)
    assert "2 per ml.g5.12xlarge" in raised.value.problem
    assert "at least 3" in raised.value.fix


def test_instances_needed_is_a_lower_bound_over_every_resource() -> None:
    g5 = InstanceType.G5_12XLARGE
    assert instances_needed(g5, [CopyDemand("a", 4, 1, 1024, None)])[0] == 1
    assert instances_needed(g5, [CopyDemand("a", 5, 1, 1024, None)])[0] == 2
    assert (
        instances_needed(g5, [CopyDemand("a", 3, 1, 1024, 0.25), CopyDemand("b", 3, 1, 1024, 1)])[0]
        == 2
    )
    assert instances_needed(g5, [])[0] == 0


def test_an_adapter_takes_no_capacity_of_its_own() -> None:
    stack = new_stack()
    ep = endpoint(stack)
    base = component(stack, ep, "Base", copies=4, lora=LmiLora())
    InferenceComponent(
        stack,
        "Adapter",
        endpoint=ep,
        serves=ComponentModel.lora_adapter(
            base,
            ModelSource.from_s3_tarball(
                cdk.aws_s3.Bucket.from_bucket_name(stack, "Adapters", "adapters"), "a.tar.gz"
            ),
            lora_rank=8,
        ),
    )
    # The base's 4 one-GPU copies fill the one 4-GPU instance: were the adapter counted as a
    # copy, synth would fail the capacity check.
    resources = Template.from_stack(stack).find_resources("AWS::SageMaker::InferenceComponent")
    specs = {logical_id: r["Properties"]["Specification"] for logical_id, r in resources.items()}
    (adapter,) = (spec for spec in specs.values() if "BaseInferenceComponentName" in spec)
    (base_spec,) = (spec for spec in specs.values() if "BaseInferenceComponentName" not in spec)
    assert "ComputeResourceRequirements" not in adapter
    assert base_spec["ComputeResourceRequirements"]["NumberOfAcceleratorDevicesRequired"] == 1
    copies = [r["Properties"].get("RuntimeConfig") for r in resources.values()]
    assert sorted(copies, key=str) == [None, {"CopyCount": 4}]


def test_the_benchmark_of_an_instance_endpoint_divides_its_knee_over_every_instance() -> None:
    stack = new_stack()
    ep = Endpoint(
        stack,
        "Ep",
        variants=[
            ProductionVariant(
                model=model(stack), instance_type=InstanceType.G5_2XLARGE, initial_instance_count=3
            )
        ],
    )
    bench = EndpointBenchmark(
        stack, "Bench", endpoint=ep, load=BenchmarkLoad.concurrency([1, 2, 4])
    )
    assert bench.copies == 3
    custom = next(
        r
        for r in stack.resolve(cdk.assertions.Template.from_stack(stack).to_json())[
            "Resources"
        ].values()
        if r["Type"] == "Custom::SageMakerEndpointBenchmark"
    )
    assert custom["Properties"]["Run"]["Copies"] == 3


def test_a_components_benchmark_divides_over_its_copies_on_every_instance() -> None:
    stack = new_stack()
    comp = component(stack, endpoint(stack, max_instance_count=2), copies=6)
    bench = EndpointBenchmark(
        stack, "Bench", inference_component=comp, load=BenchmarkLoad.concurrency([1, 2])
    )
    assert bench.copies == 6


def test_a_rejected_component_or_maximum_is_not_counted_afterwards() -> None:
    """A copy count or scaling maximum the endpoint rejected leaves its capacity as it was."""
    stack = new_stack()
    ep = endpoint(stack, max_instance_count=1)  # 4 GPUs
    comp = component(stack, ep, copies=2)
    with pytest.raises(ValidationError, match="max_copies"):
        comp.auto_scale_copies(max_copies=100)
    with pytest.raises(ValidationError, match="copy_count"):
        component(stack, ep, "Big", copies=10)
    component(stack, ep, "Fits", copies=2)  # 2 + 2 one-GPU copies on one instance
    assert [hosted.node.id for hosted in ep.components] == ["Component", "Fits"]


def test_a_scheduled_maximum_above_max_copies_counts_for_the_components_added_later() -> None:
    """A scheduled action that raises a component's maximum lets it scale to that many copies:
    components added afterwards are checked against it, not against ``max_copies``."""
    stack = new_stack()
    ep = endpoint(stack, max_instance_count=1)  # 4 GPUs
    first = component(stack, ep, "First")
    scaling = ComponentScaling(stack, "FirstScaling", component=first, max_copies=2)
    busy = appscaling.Schedule.cron(hour="9", minute="0")
    scaling.scale_on_schedule("busy", schedule=busy, max_capacity=4)  # 4 of 4 GPUs
    with pytest.raises(ValidationError) as raised:
        component(stack, ep, "Second")  # 4 + 1 > 4
    assert raised.value.prop == "copy_count"
    assert "First 4" in raised.value.problem and "Second 1" in raised.value.problem


def test_a_refused_scheduled_action_leaves_the_maximum_as_it_was() -> None:
    stack = new_stack()
    ep = endpoint(stack, max_instance_count=1)  # 4 GPUs
    first = component(stack, ep, "First")
    scaling = ComponentScaling(stack, "FirstScaling", component=first, max_copies=2)
    start = datetime.datetime(2030, 1, 2, tzinfo=datetime.UTC)
    with pytest.raises(ValidationError, match="end_time"):
        scaling.scale_on_schedule(
            "busy",
            schedule=appscaling.Schedule.cron(hour="9", minute="0"),
            max_capacity=4,
            start_time=start,
            end_time=start - datetime.timedelta(days=1),
        )
    component(stack, ep, "Second")  # 2 + 1 of 4 GPUs


def test_a_scaling_refused_for_its_rolling_batch_leaves_no_maximum_counted() -> None:
    stack = new_stack()
    ep = endpoint(stack, max_instance_count=2)  # 8 GPUs
    first = InferenceComponent(
        stack,
        "First",
        endpoint=ep,
        serves=ComponentModel.of(model(stack, "FirstModel")),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
        copy_count=4,
        deployment=RollingDeployment(batch_size=2),  # 50 % of 4 copies
    )
    with pytest.raises(ValidationError, match="batch_size"):  # above 50 % of 1 copy
        ComponentScaling(stack, "Scaling", component=first, min_copies=1, max_copies=8)
    component(stack, ep, "Second", copies=4)  # 4 + 4 of 8 GPUs: the refused 8 is not counted
