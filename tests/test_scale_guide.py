"""The guide's table of the resources each construct emits (docs/guides/models-and-endpoints.md,
"Many models in one stack") against a synth of each construct alone, so that the figures stay
true when a construct's resources change."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Size
from aws_cdk import aws_s3 as s3
from conftest import CDK_CONTEXT
from hub import hub_token

from cdk_sagemaker_llm import (
    AsyncInference,
    AsyncScaling,
    ComponentModel,
    ContainerImage,
    CopyResources,
    Endpoint,
    EndpointBenchmark,
    ExpectedTraffic,
    InferenceComponentEndpoint,
    InstanceType,
    LlmService,
    Model,
    ModelSource,
    OptimizationJob,
    OptimizationOutput,
    OptimizationTechnique,
    ProductionVariant,
    QuantizationMethod,
    SearchSpace,
    ServiceModel,
    Slo,
    Workload,
)

GUIDE = Path(__file__).parent.parent / "docs" / "guides" / "models-and-endpoints.md"


def guide_counts() -> dict[str, int]:
    """``{construct: resources}`` from the guide's table rows ``| `Name` | N: ...`` (or
    ``| N |``); a row of a formula (the scaling constructs) is not a count."""
    rows = re.findall(r"^\| `(\w+)`[^|]*\| (\d+)(?::| \|)", GUIDE.read_text(encoding="utf-8"), re.M)
    return {name: int(count) for name, count in rows}


def _model(stack: cdk.Stack) -> Model:
    return Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))


def _instance_endpoint(stack: cdk.Stack) -> Endpoint:
    variant = ProductionVariant(model=_model(stack), instance_type=InstanceType.G5_2XLARGE)
    return Endpoint(
        stack,
        "Endpoint",
        variants=[variant],
        async_inference=AsyncInference(bucket=s3.Bucket.from_bucket_name(stack, "B", "requests")),
    )


def _component_endpoint(stack: cdk.Stack) -> InferenceComponentEndpoint:
    return InferenceComponentEndpoint(stack, "Shared", instance_type=InstanceType.G5_12XLARGE)


def _component(stack: cdk.Stack) -> Any:
    return _component_endpoint(stack).add_inference_component(
        "Component",
        serves=ComponentModel.from_image(ContainerImage.lmi("0.31.0")),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
    )


def _async_scaling(stack: cdk.Stack) -> None:
    scaling = AsyncScaling(stack, "Scaling", endpoint=_instance_endpoint(stack), max_instances=2)
    scaling.scale_on_backlog(target=5)


def _service(stack: cdk.Stack) -> None:
    LlmService(
        stack,
        "Service",
        model=ServiceModel.from_source(
            ModelSource.from_hugging_face(
                "meta-llama/Llama-3.1-8B-Instruct", token_secret=hub_token()
            ),
            image=ContainerImage.lmi("0.31.0"),
        ),
        slo=Slo(max_ms_per_token=60),
        traffic=ExpectedTraffic.concurrency(8),
        workload=Workload(input_tokens=512, output_tokens=128),
        search=SearchSpace(instance_types=[InstanceType.G5_12XLARGE]),
    )


def _job(stack: cdk.Stack) -> None:
    bucket = s3.Bucket.from_bucket_name(stack, "Weights", "weights")
    OptimizationJob(
        stack,
        "Job",
        source=ModelSource.from_s3(bucket, "model/"),
        instance_type=InstanceType.G5_12XLARGE,
        techniques=[OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
        output=OptimizationOutput.in_bucket(bucket),
    )


CASES: dict[str, tuple[Callable[[cdk.Stack], Any], Callable[[cdk.Stack], Any] | None]] = {
    "Model": (_model, None),
    "Endpoint": (_instance_endpoint, _model),
    "InferenceComponentEndpoint": (_component_endpoint, None),
    "InferenceComponent": (_component, _component_endpoint),
    "AsyncScaling": (_async_scaling, _instance_endpoint),
    "LlmService": (_service, None),
    "EndpointBenchmark": (
        lambda stack: EndpointBenchmark(stack, "Bench", inference_component=_component(stack)),
        _component,
    ),
    "OptimizationJob": (_job, None),
}
"""What to build for each row, and what it needs that the row does not count."""


def _resources(build: Callable[[cdk.Stack], Any] | None) -> int:
    if build is None:
        return 0
    app = cdk.App(context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Alone", env=cdk.Environment(region="us-west-2"))
    build(stack)
    template = app.synth().get_stack_by_name("Alone").template
    return sum(1 for r in template["Resources"].values() if r["Type"] != "AWS::CDK::Metadata")


def test_the_guide_has_a_row_for_each_case() -> None:
    assert set(guide_counts()) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_guide_states_what_each_construct_emits(name: str) -> None:
    build, needs = CASES[name]
    assert _resources(build) - _resources(needs) == guide_counts()[name], name
