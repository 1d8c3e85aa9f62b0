"""The platform options together: the guides' examples and one stack with every new option (endpoint
metrics, the g7/g7e/p6-b300/p6e-gb200 types, LoRA adapters, LMI async mode) are cfn-lint and
cdk-nag (AwsSolutions) clean."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import Duration, Size
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from conftest import CDK_CONTEXT, PROJECT_ROOT, cfn_lint_findings, resources_of_type
from hub import hub_token
from test_platform import run_readme_example

from cdk_sagemaker_llm import (
    ComponentModel,
    ContainerImage,
    CopyResources,
    Endpoint,
    EndpointMetrics,
    InferenceComponentEndpoint,
    InstanceType,
    LmiLora,
    LmiOptions,
    Model,
    ModelSource,
    ProductionVariant,
)

LLAMA = "meta-llama/Meta-Llama-3-8B-Instruct"


def test_the_guide_examples_emit_what_they_say() -> None:
    template, _ = run_readme_example("endpoint-metrics")
    (config,) = resources_of_type(template, "AWS::SageMaker::EndpointConfig")
    assert config["MetricsConfig"] == {
        "EnableDetailedObservability": True,
        "EnableEnhancedMetrics": True,
        "MetricPublishFrequencyInSeconds": 10,
    }
    template, _ = run_readme_example(
        "lora-adapters", PROJECT_ROOT / "docs" / "guides" / "inference-components.md"
    )
    components = resources_of_type(template, "AWS::SageMaker::InferenceComponent")
    (base,) = [c for c in components if "BaseInferenceComponentName" not in c["Specification"]]
    environment = base["Specification"]["Container"]["Environment"]
    assert {name: environment[name] for name in environment if "LORA" in name} == {
        "OPTION_ENABLE_LORA": "true",
        "OPTION_MAX_LORAS": "2",
        "OPTION_MAX_LORA_RANK": "64",
    }
    assert environment["OPTION_ASYNC_MODE"] == "true"
    # Each adapter waits for its base (creation) and goes first (deletion).
    (base_id,) = [
        logical_id
        for logical_id, resource in template["Resources"].items()
        if resource.get("Properties") is base
    ]
    adapters = [
        resource
        for resource in template["Resources"].values()
        if "BaseInferenceComponentName" in resource.get("Properties", {}).get("Specification", {})
    ]
    assert len(adapters) == 2
    assert all(base_id in adapter.get("DependsOn", []) for adapter in adapters)


def _every_new_option(app: cdk.App) -> cdk.Stack:
    stack = cdk.Stack(app, "Platform2026", env=cdk.Environment(region="us-east-1"))
    metrics = EndpointMetrics(
        enhanced_metrics=True, detailed_observability=True, publish_frequency=Duration.seconds(30)
    )
    shared = InferenceComponentEndpoint(
        stack, "Shared", instance_type=InstanceType.G7E_12XLARGE, metrics=metrics
    )
    base = shared.add_inference_component(
        "Base",
        serves=ComponentModel.from_image(
            ContainerImage.lmi("0.31.0"),
            artifact=ModelSource.from_hugging_face(LLAMA, token_secret=hub_token()),
            serving=LmiOptions(async_mode=True, lora=LmiLora(max_adapters=4)),
        ),
        resources=CopyResources(min_memory=Size.gibibytes(64)),
    )
    bucket = s3.Bucket.from_bucket_name(stack, "Adapters", "adapters")
    shared.add_inference_component(
        "Adapter",
        serves=ComponentModel.lora_adapter(
            base, ModelSource.from_s3_tarball(bucket, "sql.tar.gz"), lora_rank=32
        ),
    )
    for name, instance_type in (
        ("B300", InstanceType.P6_B300_48XLARGE),
        ("G7", InstanceType.G7_2XLARGE),
    ):
        model = Model(
            stack,
            f"{name}Model",
            image=ContainerImage.lmi("0.31.0"),
            source=ModelSource.from_hugging_face(LLAMA, token_secret=hub_token()),
            serving=LmiOptions(lora=LmiLora(max_adapters=2, max_rank=64)),
        )
        Endpoint(
            stack,
            f"{name}Endpoint",
            variants=[ProductionVariant(model=model, instance_type=instance_type)],
            metrics=EndpointMetrics(detailed_observability=False),
        )
    return stack


def test_a_stack_with_every_new_option_is_lint_and_nag_clean(tmp_path: Any) -> None:
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path), context=CDK_CONTEXT)
    stack = _every_new_option(app)
    template = Template.from_stack(stack).to_json()
    assert cfn_lint_findings(template, "us-east-1") == []
    instance_types = {
        variant.get("InstanceType")
        for config in resources_of_type(template, "AWS::SageMaker::EndpointConfig")
        for variant in config["ProductionVariants"]
    }
    assert instance_types == {"ml.g7e.12xlarge", "ml.p6-b300.48xlarge", "ml.g7.2xlarge"}
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth(force=True)  # raises on any unacknowledged finding
