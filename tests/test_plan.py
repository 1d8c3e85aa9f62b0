"""``cdk-sagemaker-llm plan`` on synthesized cloud assemblies."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Size
from aws_cdk import aws_s3 as s3
from conftest import CDK_CONTEXT
from hub import hub_token

import cdk_sagemaker_llm.template_metadata as template_metadata
from app import build_app
from cdk_sagemaker_llm import ComponentModel, CopyResources, ManagedInstanceScaling
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.catalog.prices import DEFAULT_PRICE_LIST
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.constructs.autoscaling import ComponentScaling, VariantScaling
from cdk_sagemaker_llm.constructs.endpoint import (
    Endpoint,
    InferenceComponentEndpoint,
    ProductionVariant,
)
from cdk_sagemaker_llm.constructs.endpoint_metrics import EndpointMetrics
from cdk_sagemaker_llm.constructs.images import ContainerImage
from cdk_sagemaker_llm.constructs.model import Model
from cdk_sagemaker_llm.constructs.model_source import ModelSource
from cdk_sagemaker_llm.constructs.serverless import ServerlessConfig
from cdk_sagemaker_llm.constructs.serverless_scaling import ServerlessScaling
from cdk_sagemaker_llm.constructs.serving_options import LmiOptions, TgiOptions
from cdk_sagemaker_llm.review import EndpointPlan, build_plan, render_json, render_markdown
from cdk_sagemaker_llm.review.custom_resources import custom_kind


@pytest.fixture(scope="module")
def reference_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference app (app.py) synthesized into a temporary cloud assembly."""
    outdir = tmp_path_factory.mktemp("reference") / "cdk.out"
    app = cdk.App(outdir=str(outdir), context=CDK_CONTEXT)
    build_app(app)
    app.synth()
    return outdir


@pytest.fixture(scope="module")
def scaled_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both endpoint kinds with scaling policies, plus an optimization job and a benchmark."""
    outdir = tmp_path_factory.mktemp("scaled") / "cdk.out"
    app = cdk.App(outdir=str(outdir), context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Scaled", env=cdk.Environment(region="us-west-2"))
    mistral = Model(
        stack,
        "Mistral",
        image=ContainerImage.tgi("2.4.0"),
        source=ModelSource.from_hugging_face(
            "mistralai/Mistral-7B-Instruct-v0.2", token_secret=hub_token()
        ),
        serving=TgiOptions(num_gpus=1, max_total_tokens=8192, max_concurrent_requests=64),
    )
    instance_endpoint = Endpoint(
        stack,
        "Instances",
        variants=[
            ProductionVariant(
                model=mistral, instance_type=InstanceType.G6E_XLARGE, initial_instance_count=1
            )
        ],
        metrics=EndpointMetrics(enhanced_metrics=True, publish_frequency=Duration.seconds(10)),
    )
    VariantScaling(
        stack, "VariantScaling", endpoint=instance_endpoint, max_instances=3
    ).scale_on_invocations(target=100)

    endpoint = InferenceComponentEndpoint(
        stack,
        "Shared",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(min_instance_count=0, max_instance_count=1),
        metrics=EndpointMetrics(detailed_observability=False),
    )
    unknown = Model(
        stack,
        "Custom",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face("my-org/my-model"),
        serving=LmiOptions(tensor_parallel_degree=1),
    )
    component = endpoint.add_inference_component(
        "Custom",
        serves=ComponentModel.of(unknown),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
    )
    scaling = ComponentScaling(
        stack, "CopyScaling", component=component, max_copies=4, min_copies=0
    )
    scaling.scale_on_concurrent_requests(target=4)
    # More copies than the endpoint's one instance holds: ComponentScaling refuses that at
    # synth time, but plan also reads templates written by other tools, so it flags it too.
    scaling.scalable_target.max_capacity = 8

    # Stand-ins shaped like the optimization-job and benchmark custom resources.
    token = "arn:aws:lambda:us-west-2:123456789012:function:x"
    cdk.CfnResource(
        stack,
        "Optimize",
        type="Custom::SageMakerOptimizationJob",
        properties={
            "ServiceToken": token,
            "Request": {
                "DeploymentInstanceType": "ml.g5.12xlarge",
                "OptimizationConfigs": [{"ModelQuantizationConfig": {"Image": "x"}}],
                "StoppingCondition": {"MaxRuntimeInSeconds": 7200},
            },
        },
    )
    cdk.CfnResource(
        stack,
        "OptimizeOutput",
        type="Custom::SageMakerOptimizationJobOutput",
        properties={"ServiceToken": token},
    )
    bench = cdk.CustomResource(
        stack,
        "Bench",
        service_token="arn:aws:lambda:us-west-2:123456789012:function:y",
        properties={"Concurrency": [1, 2, 4, 8]},
    )
    bench.node.default_child.add_metadata(  # type: ignore[union-attr]
        "cdk-sagemaker-llm:benchmark", {"payload": "512 in / 256 out"}
    )
    app.synth()
    return outdir


def test_plan_of_the_reference_app(reference_assembly: Path) -> None:
    plan = build_plan(reference_assembly)
    (stack,) = plan.stacks
    assert stack.name == "LlamaInferenceComponents"
    # The Llama 3 service: LlmService chose the layout from its SLO and traffic.
    endpoint = next(e for e in stack.endpoints if e.logical_id.startswith("Llama3Endpoint"))
    assert endpoint.kind == "inference components"
    (variant,) = endpoint.variants
    (component,) = endpoint.components
    assert component.decision is not None
    choices = component.decision["choices"]
    # The plan shows what the decision chose (the choice itself is the reference snapshot's).
    chosen = choices["instance_type"]
    assert chosen["source"] == "recommended"
    instance_type = chosen["value"]
    assert (variant.instance_type, variant.min_instances, variant.max_instances) == (
        instance_type,
        1,
        2,
    )
    price = DEFAULT_PRICE_LIST.prices[instance_type]
    assert endpoint.cost_per_hour_min == pytest.approx(price)
    assert endpoint.cost_per_hour_max == pytest.approx(2 * price)
    assert component.accelerators_per_copy == choices["tensor_parallel_degree"]["value"]
    per_instance = choices["copies_per_instance"]["value"]
    assert component.copies_per_instance == per_instance
    assert (component.initial_copies, component.min_copies, component.max_copies) == (
        1,
        1,
        2 * per_instance,
    )
    assert component.image is not None and component.image.caching_eligible
    assert component.image.caching_applies
    assert component.model == "meta-llama/Meta-Llama-3-8B-Instruct (llama-3-8b)"
    assert component.sizing is not None and component.sizing.fits
    # Only a note on another layout that would also fit, with the reason the service's
    # decision rejected it (the SLO and max_instance_count chose this one), no risk.
    assert all(
        " also fits, but the service's decision rejected it: " in warning
        for warning in component.sizing.warnings
    )
    assert choices["target_concurrency_per_copy"]["source"] == "benchmark"
    assert component.decision["reasoning"]

    markdown = render_markdown(plan)
    assert markdown.startswith("## cdk-sagemaker-llm plan")
    for expected in (
        f"#### Endpoint `{endpoint.logical_id}` (inference components)",
        f"| Cost per hour | ${price:,.2f} at min, ${2 * price:,.2f} at max (us-east-1 on-demand USD, "
        f"as of {DEFAULT_PRICE_LIST.as_of}; resources in {stack.region}, where prices differ: pass "
        "that region's prices) |",
        f"{instance_type} (",
        "<br>instances: initial 1, min 1, max 2",
        "| Container caching | eligible (lmi 0.38.0); applies: accelerator instance type |",
        "| Service goal | llama-3-8b (fp16), 512 in / 256 out tokens",
        "SLO <= 50 ms/token, TTFT <= 2000 ms; peak 16 requests/s, minimum 1 requests/s",
        f"instance_type: {instance_type} (recommended)",
        "target_concurrency_per_copy: deploy-time benchmark's measured knee",
        "| Predicted | at peak:",
        " ms/token (p10-p90 ",
        "djl-inference:0.38.0-lmi29.0.0-cu130",
        DEFAULT_PRICE_LIST.as_of,
    ):
        assert expected in markdown, expected
    data = json.loads(render_json(plan))
    costs = {e["logical_id"]: e["cost_per_hour_max"] for e in data["stacks"][0]["endpoints"]}
    assert costs[endpoint.logical_id] == pytest.approx(2 * price)

    # The hand-built scale-to-zero endpoint: no decision recorded.
    sporadic = next(e for e in stack.endpoints if e.logical_id.startswith("Sporadic"))
    (hand_built,) = sporadic.components
    assert hand_built.decision is None and hand_built.min_copies == 0


def test_plan_is_deterministic(reference_assembly: Path) -> None:
    assert render_markdown(build_plan(reference_assembly)) == render_markdown(
        build_plan(reference_assembly)
    )


def test_plan_reads_scaling_policies_custom_resources_and_instance_endpoints(
    scaled_assembly: Path,
) -> None:
    (stack,) = build_plan(scaled_assembly).stacks
    by_kind = {endpoint.kind: endpoint for endpoint in stack.endpoints}

    instances = by_kind["instance-based"]
    (variant,) = instances.variants
    assert (variant.min_instances, variant.max_instances) == (1, 3)
    assert variant.cost_per_hour_min == pytest.approx(DEFAULT_PRICE_LIST.prices["ml.g6e.xlarge"])
    assert variant.cost_per_hour_max == pytest.approx(
        3 * DEFAULT_PRICE_LIST.prices["ml.g6e.xlarge"]
    )
    assert variant.scaling is not None
    (policy,) = variant.scaling.policies
    assert policy.policy_type == "target tracking"
    assert policy.detection_seconds == 180
    assert variant.model == "mistralai/Mistral-7B-Instruct-v0.2 (mistral-7b)"
    assert variant.image is not None
    # Since 2026 instance endpoints on accelerator types cache their images too.
    assert variant.image.caching_eligible and variant.image.caching_applies
    assert variant.sizing is not None and variant.sizing.fits
    assert variant.copies_per_instance == 1

    assert instances.options == [
        "metrics: enhanced on, detailed observability on (default), published every 10 s"
    ]
    shared = by_kind["inference components"]
    assert shared.options == [
        "metrics: enhanced off (default), detailed observability off, published every "
        "60 s (default)"
    ]
    assert shared.cost_per_hour_min == 0
    (component,) = shared.components
    assert (component.min_copies, component.max_copies) == (0, 8)
    assert component.scaling is not None
    detections = sorted(p.detection_seconds or 0 for p in component.scaling.policies)
    assert detections == [30, 60]  # high-resolution target tracking; the scale-from-zero alarm
    assert component.scaling.fastest_detection_seconds == 30
    assert component.sizing is not None and component.sizing.fits is None
    assert "unknown" in component.sizing.summary
    assert component.notes and "need 2 instances" in component.notes[0]

    assert [job.resource_type for job in stack.optimization_jobs] == [
        "Custom::SageMakerOptimizationJob"
    ]
    assert stack.optimization_jobs[0].details == {
        "DeploymentInstanceType": "ml.g5.12xlarge",
        "Techniques": "Quantization",
        "MaxRuntimeInSeconds": "7200",
    }
    (benchmark,) = stack.benchmarks
    assert benchmark.details["payload"] == "512 in / 256 out"

    markdown = render_markdown(build_plan(scaled_assembly))
    for expected in (
        "eligible (tgi 2.4.0); applies: accelerator instance type",
        "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution at 4 (~30 s to detect",
        "NoCapacityInvocationFailures",
        "#### Optimization jobs",
        "Custom::SageMakerOptimizationJob",
        "⚠️ 8 copies need 2 instances",
    ):
        assert expected in markdown, expected


def test_plan_lists_each_custom_resource_the_constructs_start_by_its_declared_type(
    reference_assembly: Path,
) -> None:
    """Parity: the types the constructs synthesize are the ones ``review`` looks for, both read
    from ``template_metadata``; the ``...Output`` readers and unrelated custom resources whose
    type merely contains a marker word are not deploy-time work."""
    (template_file,) = reference_assembly.glob("*.template.json")
    resources = json.loads(template_file.read_text())["Resources"]
    types = {resource["Type"] for resource in resources.values()}
    assert {
        template_metadata.OPTIMIZATION_JOB_RESOURCE,
        template_metadata.OPTIMIZATION_JOB_OUTPUT_RESOURCE,
        template_metadata.BENCHMARK_RESOURCE,
        template_metadata.BENCHMARK_OUTPUT_RESOURCE,
    } <= types
    kinds = {
        resource["Type"]: custom_kind(resource)
        for resource in resources.values()
        if resource["Type"].startswith("Custom::")
    }
    assert kinds == {
        template_metadata.OPTIMIZATION_JOB_RESOURCE: "optimization-job",
        template_metadata.OPTIMIZATION_JOB_OUTPUT_RESOURCE: None,
        template_metadata.BENCHMARK_RESOURCE: "benchmark",
        template_metadata.BENCHMARK_OUTPUT_RESOURCE: None,
    }
    (benchmark,) = (
        r for r in resources.values() if r["Type"] == template_metadata.BENCHMARK_RESOURCE
    )
    assert template_metadata.BENCHMARK in benchmark["Metadata"]
    for unrelated in ("Custom::MyBenchmarkTable", "Custom::OptimizationJobNotifier"):
        assert custom_kind({"Type": unrelated, "Properties": {}}) is None


def test_plan_command_formats_and_errors(
    reference_assembly: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", str(reference_assembly), "--format", "json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert data["stacks"][0]["name"] == "LlamaInferenceComponents"
    assert main(["plan", str(reference_assembly)]) == 0
    assert "## cdk-sagemaker-llm plan" in capsys.readouterr().out
    assert main(["plan", str(tmp_path / "missing")]) == 2
    assert "cdk synth" in capsys.readouterr().err
    # A folder that is no assembly (no manifest, no template) is an error, not "no endpoints".
    assert main(["plan", str(tmp_path)]) == 2
    assert "is not a cloud assembly" in capsys.readouterr().err
    # A price for a type nothing uses (a typo) names the flag and the types it may mean.
    assert main(["plan", str(reference_assembly), "--price", "ml.g5.2xlrge=1.2"]) == 2
    assert "--price='ml.g5.2xlrge=1.2'" in (err := capsys.readouterr().err)
    assert "did you mean ml.g5.2xlarge" in err
    assert main(["plan", str(reference_assembly), "--price-region", "mars"]) == 2
    assert capsys.readouterr().err.startswith("error: --price-region='mars'")


def test_costs_say_whose_prices_they_are_and_take_the_users_prices_and_discount(
    reference_assembly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (stack,) = build_plan(reference_assembly).stacks
    assert stack.region and stack.region != "us-east-1"
    assert all(f"resources in {stack.region}" in e.price_basis for e in stack.endpoints)
    arguments = ["plan", str(reference_assembly), "--format", "json"]
    service = next(e for e in stack.endpoints if e.logical_id.startswith("Llama3Endpoint"))
    (variant,) = service.variants
    assert main([*arguments, "--price", f"{variant.instance_type}=10", "--price-region",
                 stack.region, "--discount", "0.3"]) == 0  # fmt: skip
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    endpoint = next(
        e for e in data["stacks"][0]["endpoints"] if e["logical_id"].startswith("Llama3Endpoint")
    )
    assert endpoint["cost_per_hour_min"] == pytest.approx(7.0)  # 10 x (1 - 0.3)
    assert (
        endpoint["price_basis"]
        == f"{stack.region} on-demand USD, as of {date.today()}, less 30% discount"
    )
    assert "given on the command line" in data["prices"]
    # Another region's list holds only the given prices: the others are unknown, not us-east-1's.
    assert main([*arguments, "--price-region", stack.region]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {e["cost_per_hour_min"] for e in data["stacks"][0]["endpoints"]} == {None}
    assert main([*arguments, "--discount", "1.5"]) == 2
    assert "discount" in capsys.readouterr().err


def test_plan_without_manifest_reads_templates_and_ignores_unknown_resources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "Other.template.json").write_text(
        json.dumps({"Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}}})
    )
    assert main(["plan", str(tmp_path)]) == 0
    assert "No SageMaker endpoints" in capsys.readouterr().out


def test_the_plan_guide_shows_the_plan_of_the_reference_app(reference_assembly: Path) -> None:
    guide = (Path(__file__).resolve().parent.parent / "docs" / "guides" / "plan.md").read_text()
    shown = guide.split("On the reference app it prints:", 1)[1].split("````markdown\n", 1)[1]
    shown = shown.split("````", 1)[0]
    actual = render_markdown(build_plan(reference_assembly))
    # The whole block, not only its headings: the predicted figures, the sources and the
    # benchmark's concurrencies had gone stale behind unchanged headings.
    assert shown.rstrip() == actual.rstrip(), (
        "the plan guide's example is stale: run `python scripts/update_readme_plan.py`"
    )


# ----- serverless endpoints, S3 sources, cross-stack values --------------------------


@pytest.fixture(scope="module")
def serverless_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A serverless endpoint with ServerlessScaling, and a GPU endpoint, both serving weights
    from a bucket another stack owns (a cross-stack import)."""
    outdir = tmp_path_factory.mktemp("serverless") / "cdk.out"
    app = cdk.App(outdir=str(outdir), context=CDK_CONTEXT)
    env = cdk.Environment(region="us-west-2", account="123456789012")
    bucket = s3.Bucket(cdk.Stack(app, "Data", env=env), "Weights")
    stack = cdk.Stack(app, "Small", env=env)
    classifier = Model(
        stack,
        "Classifier",
        image=ContainerImage.pytorch_cpu("2.6.0"),
        source=ModelSource.from_s3_tarball(bucket, "classifier/model.tar.gz"),
    )
    endpoint = Endpoint(
        stack,
        "Serverless",
        variants=[
            ProductionVariant(
                model=classifier,
                serverless=ServerlessConfig(
                    memory_size=Size.gibibytes(4), max_concurrency=10, provisioned_concurrency=2
                ),
            )
        ],
    )
    ServerlessScaling(stack, "Warm", endpoint=endpoint, max_concurrency=10).scale_on_utilization(
        target=0.5
    )
    llama = Model(
        stack,
        "Llama",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_s3(bucket, "llama/"),
        spec=ModelSpec.LLAMA_3_8B,
    )
    Endpoint(
        stack,
        "Gpu",
        variants=[
            ProductionVariant(
                model=llama, instance_type=InstanceType.G5_2XLARGE, initial_instance_count=1
            )
        ],
    )
    app.synth()
    return outdir


def _serverless_endpoint(assembly: Path) -> EndpointPlan:
    (stack,) = [s for s in build_plan(assembly).stacks if s.name == "Small"]
    return next(e for e in stack.endpoints if e.variants[0].serverless)


def test_a_serverless_endpoint_says_how_it_is_billed_not_price_unknown(
    serverless_assembly: Path,
) -> None:
    markdown = render_markdown(build_plan(serverless_assembly))
    section = markdown.split("#### Endpoint `Serverless", 1)[1].split("####", 1)[0]
    assert "price unknown" not in section
    assert "not billed per instance-hour: serverless inference bills" in section


def test_a_serverless_variant_has_no_instances_or_accelerators_rather_than_unknown_ones(
    serverless_assembly: Path,
) -> None:
    markdown = render_markdown(build_plan(serverless_assembly))
    section = markdown.split("#### Endpoint `Serverless", 1)[1].split("####", 1)[0]
    assert "?" not in section
    assert "instances: none (serverless)" in section
    assert "accelerators per copy | none: serverless endpoints run on CPU" in section
    variant = _serverless_endpoint(serverless_assembly).variants[0]
    assert variant.instance_type == "serverless" and variant.min_instances is None


def test_serverless_scaling_shows_the_provisioned_concurrency(serverless_assembly: Path) -> None:
    variant = _serverless_endpoint(serverless_assembly).variants[0]
    assert variant.scaling is not None
    assert variant.scaling.dimension == "sagemaker:variant:DesiredProvisionedConcurrency"
    assert (variant.scaling.min_capacity, variant.scaling.max_capacity) == (1, 10)
    (policy,) = variant.scaling.policies
    assert "SageMakerVariantProvisionedConcurrencyUtilization at 0.5" in policy.trigger
    markdown = render_markdown(build_plan(serverless_assembly))
    assert "scaling | provisioned concurrency 1-10<br>target tracking" in markdown


def test_s3_sources_show_their_location_and_cross_stack_values_read_as_imports(
    serverless_assembly: Path,
) -> None:
    (stack,) = [s for s in build_plan(serverless_assembly).stacks if s.name == "Small"]
    models = {e.variants[0].model for e in stack.endpoints}
    imported = "s3://${import:Data:ExportsOutputRefWeights"
    assert all(model and model.startswith(imported) for model in models), models
    assert any(m and m.endswith("/classifier/model.tar.gz") for m in models)
    assert any(m and m.endswith("/llama/ (llama-3-8b)") for m in models)
    markdown = render_markdown(build_plan(serverless_assembly))
    assert "/opt/ml/model" not in markdown and "Fn::ImportValue" not in markdown


def test_a_cross_stack_import_reads_as_the_export_it_names() -> None:
    from cdk_sagemaker_llm.review.template import shown

    assert shown({"Fn::ImportValue": "Data:BucketName"}) == "${import:Data:BucketName}"
    joined = {"Fn::Join": ["", ["s3://", {"Fn::ImportValue": "Data:Bucket"}, "/llama/"]]}
    assert shown(joined) == "s3://${import:Data:Bucket}/llama/"


def test_the_json_plan_carries_the_hourly_figures_the_markdown_shows(
    reference_assembly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each LlmService component gains ``decision_hourly`` (instances and $/h at the minimum,
    expected at the peak and at the ceiling), the figures of the Markdown's "$/h:" line (the
    JSON lacked them); a component without a decision has null."""
    assert main(["plan", str(reference_assembly), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    components = [
        c for e in data["stacks"][0]["endpoints"] for c in e["components"]
    ]  # fmt: skip
    decided = [c for c in components if c["decision"] is not None]
    assert decided and all(c["decision_hourly"] is not None for c in decided)
    assert any(c["decision_hourly"] is None for c in components if c["decision"] is None)
    assert main(["plan", str(reference_assembly)]) == 0
    markdown = capsys.readouterr().out
    for component in decided:
        hourly = component["decision_hourly"]
        peak = hourly["expected_at_peak"]
        assert f"${peak['price_per_hour']:,.2f} expected at peak ({peak['instances']})" in markdown
        assert hourly["minimum"]["instances"] <= peak["instances"]
        assert peak["instances"] <= hourly["ceiling"]["instances"]


def test_an_also_fits_warning_says_why_the_service_decision_rejected_that_degree() -> None:
    """plan's sizing row said "TP1 also fits" beside a decision whose rejections say TP1 needs
    more instances than allowed: the warning now carries that reason; one the decision did
    not weigh is left as it was."""
    from cdk_sagemaker_llm.catalog.instance_types import InstanceType
    from cdk_sagemaker_llm.review.endpoints import _weighed

    decision = {
        "rejected": [
            "ml.g5.12xlarge TP1: instance count: needs 3 instances for 16 requests/s "
            "(> max_instance_count 2)"
        ]
    }
    warning = "tensor-parallel degree 1 also fits: 4 copies per instance instead of 2"
    assert _weighed(warning, InstanceType.G5_12XLARGE, decision) == (
        "tensor-parallel degree 1 also fits, but the service's decision rejected it: instance "
        "count: needs 3 instances for 16 requests/s (> max_instance_count 2)"
    )
    assert _weighed(warning, InstanceType.G5_48XLARGE, decision) == warning
    assert _weighed("max concurrency 9 exceeds", InstanceType.G5_12XLARGE, decision) == (
        "max concurrency 9 exceeds"
    )


def test_plan_of_a_govcloud_stack_does_not_promise_container_caching(tmp_path: Path) -> None:
    """Container caching covers commercial Regions only (catalog/container_caching.py); plan
    said "applies" for an LMI image on ml.g5 in us-gov-west-1."""
    outdir = tmp_path / "cdk.out"
    app = cdk.App(outdir=str(outdir), context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Gov", env=cdk.Environment(region="us-gov-west-1"))
    model = Model(
        stack,
        "Model",
        image=ContainerImage.lmi("0.33.0"),
        source=ModelSource.from_hugging_face("Qwen/Qwen2.5-7B-Instruct"),
    )
    Endpoint(
        stack,
        "Endpoint",
        variants=[
            ProductionVariant(
                model=model, instance_type=InstanceType.G5_2XLARGE, initial_instance_count=1
            )
        ],
    )
    app.synth()
    (variant,) = build_plan(outdir).stacks[0].endpoints[0].variants
    assert variant.image is not None
    assert variant.image.caching_eligible is True
    assert variant.image.caching_applies is False
    assert "us-gov-west-1 is not a commercial AWS Region" in (
        variant.image.caching_unapplied_reason or ""
    )
