"""EndpointMetrics: the endpoint config's MetricsConfig on both endpoint kinds."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import Duration, Size
from conftest import cloudformation_schema, new_stack, resources_of_type
from hub import hub_token

from cdk_sagemaker_llm import (
    ComponentModel,
    ContainerImage,
    CopyResources,
    Endpoint,
    EndpointMetrics,
    InferenceComponentEndpoint,
    InstanceType,
    Model,
    ModelSource,
    ProductionVariant,
    ValidationError,
)
from cdk_sagemaker_llm.constructs.component_options import METRIC_PUBLISH_FREQUENCIES


def _instance_endpoint(metrics: Any) -> Any:
    stack = new_stack()
    model = Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face(
            "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
        ),
    )
    Endpoint(
        stack,
        "Endpoint",
        variants=[ProductionVariant(model=model, instance_type=InstanceType.G6E_2XLARGE)],
        metrics=metrics,
    )
    return stack


def test_both_endpoint_kinds_render_metrics_config(lint_clean: Any) -> None:
    every = EndpointMetrics(
        enhanced_metrics=True, detailed_observability=True, publish_frequency=Duration.seconds(10)
    )
    (config,) = resources_of_type(
        lint_clean(_instance_endpoint(every)), "AWS::SageMaker::EndpointConfig"
    )
    assert config["MetricsConfig"] == {
        "EnableEnhancedMetrics": True,
        "EnableDetailedObservability": True,
        "MetricPublishFrequencyInSeconds": 10,
    }

    stack = new_stack()
    endpoint = InferenceComponentEndpoint(
        stack,
        "Shared",
        instance_type=InstanceType.G7E_2XLARGE,
        metrics=EndpointMetrics(detailed_observability=False),
    )
    endpoint.add_inference_component(
        "Component",
        serves=ComponentModel.from_image(
            ContainerImage.lmi("0.31.0"),
            artifact=ModelSource.from_hugging_face(
                "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
            ),
        ),
        resources=CopyResources(min_memory=Size.gibibytes(16)),
    )
    (config,) = resources_of_type(lint_clean(stack), "AWS::SageMaker::EndpointConfig")
    assert config["MetricsConfig"] == {"EnableDetailedObservability": False}


def test_without_metrics_the_template_is_unchanged() -> None:
    (config,) = resources_of_type(
        _template(_instance_endpoint(None)), "AWS::SageMaker::EndpointConfig"
    )
    assert "MetricsConfig" not in config


def _template(stack: Any) -> dict[str, Any]:
    from aws_cdk.assertions import Template

    return Template.from_stack(stack).to_json()


def test_the_frequencies_are_cloudformations_and_the_apis() -> None:
    """The allowed publish frequencies are CloudFormation's enum (botocore documents the same
    list and enforces none), so a frequency we accept is one the template may carry."""
    schema = cloudformation_schema("AWS::SageMaker::EndpointConfig")
    enum = schema["definitions"]["MetricsConfig"]["properties"]["MetricPublishFrequencyInSeconds"]
    assert tuple(enum["enum"]) == METRIC_PUBLISH_FREQUENCIES


@pytest.mark.parametrize(
    ("metrics", "match"),
    [
        (
            EndpointMetrics(publish_frequency=Duration.seconds(15)),
            r"metrics.publish_frequency \(seconds\)=15: must be one of \[10, 30",
        ),
        (
            EndpointMetrics(publish_frequency=Duration.minutes(10)),
            r"metrics.publish_frequency \(seconds\)=600",
        ),
        (EndpointMetrics(), r"metrics='EndpointMetrics\(\)': sets nothing"),
    ],
)
def test_bad_metrics_are_validation_errors(metrics: EndpointMetrics, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        _instance_endpoint(metrics)


def test_wrong_types_are_validation_errors() -> None:
    with pytest.raises(ValidationError, match="enhanced_metrics"):
        EndpointMetrics(enhanced_metrics="yes")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="metrics"):
        _instance_endpoint({"EnableEnhancedMetrics": True})
