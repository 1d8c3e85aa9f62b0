"""``plan`` for reviewers: the monthly cost under the stated traffic (hours at the peak, the rest
at the minimum) and the endpoint-usage quotas each instance type needs at the maximum, in
Markdown and in ``--format json``."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import Size
from conftest import CDK_CONTEXT
from hub import hub_token

from cdk_sagemaker_llm import ComponentModel, CopyResources, ManagedInstanceScaling
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.prices import DEFAULT_PRICE_LIST
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.constructs.autoscaling import VariantScaling
from cdk_sagemaker_llm.constructs.endpoint import (
    Endpoint,
    InferenceComponentEndpoint,
    ProductionVariant,
)
from cdk_sagemaker_llm.constructs.images import ContainerImage
from cdk_sagemaker_llm.constructs.model import Model
from cdk_sagemaker_llm.constructs.model_source import ModelSource
from cdk_sagemaker_llm.constructs.serving_options import LmiOptions, TgiOptions
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.review import MonthlyAssumption, build_plan, quota_needs, render_markdown

G6E, G5 = "ml.g6e.xlarge", "ml.g5.12xlarge"


def _component_endpoint(stack: cdk.Stack, max_instances: int) -> None:
    endpoint = InferenceComponentEndpoint(
        stack,
        "Shared",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(
            min_instance_count=1, max_instance_count=max_instances
        ),
    )
    model = Model(
        stack,
        "Llama",
        image=ContainerImage.lmi("0.31.0"),
        source=ModelSource.from_hugging_face(
            "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
        ),
        serving=LmiOptions(tensor_parallel_degree=1),
    )
    endpoint.add_inference_component(
        "Llama",
        serves=ComponentModel.of(model),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
    )


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two stacks in us-west-2 (g6e.xlarge 1-3 instances; g5.12xlarge 1-2, and 1-1) and one in
    eu-west-1 (g5.12xlarge 1-4): quotas add up per region and instance type."""
    outdir = tmp_path_factory.mktemp("budget") / "cdk.out"
    app = cdk.App(outdir=str(outdir), context=CDK_CONTEXT)
    west = cdk.Stack(app, "West", env=cdk.Environment(region="us-west-2"))
    mistral = Model(
        west,
        "Mistral",
        image=ContainerImage.tgi("2.4.0"),
        source=ModelSource.from_hugging_face(
            "mistralai/Mistral-7B-Instruct-v0.2", token_secret=hub_token()
        ),
        serving=TgiOptions(num_gpus=1, max_total_tokens=8192, max_concurrent_requests=64),
    )
    instances = Endpoint(
        west,
        "Instances",
        variants=[
            ProductionVariant(model=mistral, instance_type=InstanceType.G6E_XLARGE),
        ],
    )
    VariantScaling(west, "Scaling", endpoint=instances, max_instances=3).scale_on_invocations(
        target=100
    )
    _component_endpoint(west, 2)
    _component_endpoint(cdk.Stack(app, "WestToo", env=cdk.Environment(region="us-west-2")), 1)
    _component_endpoint(cdk.Stack(app, "Europe", env=cdk.Environment(region="eu-west-1")), 4)
    app.synth()
    return outdir


def test_quotas_add_every_endpoint_at_its_maximum_per_region_and_type(assembly: Path) -> None:
    needs = {(n.region, n.quota_name): n.instances for n in quota_needs(build_plan(assembly))}
    assert needs == {
        ("eu-west-1", f"{G5} for endpoint usage"): 4,
        ("us-west-2", f"{G5} for endpoint usage"): 3,
        ("us-west-2", f"{G6E} for endpoint usage"): 3,
    }


def test_monthly_cost_is_the_minimum_most_hours_and_the_maximum_at_peak_in_json(
    assembly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", str(assembly), "--format", "json", "--peak-hours-per-day", "6"]) == 0
    budget = json.loads(capsys.readouterr().out)["budget"]
    assert budget["assumption"] == {"hours_per_month": 730, "peak_hours_per_day": 6.0}
    costs = {(c["stack"], c["endpoint"][:6]): c["monthly_cost"] for c in budget["monthly_costs"]}
    g5, g6e = DEFAULT_PRICE_LIST.prices[G5], DEFAULT_PRICE_LIST.prices[G6E]
    # 730 h: 6/24 of them (182.5 h) at the maximum, 547.5 h at the minimum (one instance).
    assert costs[("West", "Shared")] == pytest.approx(g5 * 547.5 + 2 * g5 * 182.5, abs=0.01)
    assert costs[("West", "Instan")] == pytest.approx(g6e * 547.5 + 3 * g6e * 182.5, abs=0.01)
    assert costs[("Europe", "Shared")] == pytest.approx(g5 * 547.5 + 4 * g5 * 182.5, abs=0.01)
    quota = next(q for q in budget["quotas"] if q["region"] == "eu-west-1")
    assert quota == {
        "region": "eu-west-1",
        "service_code": "sagemaker",
        "quota_name": "ml.g5.12xlarge for endpoint usage",
        "instance_type": G5,
        "instances": 4,
    }


def test_markdown_states_the_assumption_and_names_the_quotas(assembly: Path) -> None:
    text = render_markdown(build_plan(assembly), MonthlyAssumption(24))
    section = text.split("### Monthly cost and quotas", 1)[1]
    assert "730 hours a month, 24 of each day's 24 at the peak" in section
    g5 = DEFAULT_PRICE_LIST.prices[G5]
    assert "| `Europe` / `Shared" in section and f"${4 * g5 * 730:,.2f}" in section
    assert "| us-west-2 | ml.g5.12xlarge for endpoint usage | 3 |" in section
    assert "| Total | $" in section


@pytest.mark.parametrize("hours", ["-1", "25"])
def test_peak_hours_outside_a_day_are_refused_naming_the_flag(
    assembly: Path, hours: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", str(assembly), "--peak-hours-per-day", hours]) == 2
    error = capsys.readouterr().err
    assert "--peak-hours-per-day" in error and hours in error and "between 0 and 24" in error
    with pytest.raises(ValidationError, match="peak-hours-per-day"):
        MonthlyAssumption(float(hours))


def test_an_llm_service_is_costed_at_its_expected_peak_beside_its_maximum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At the default risk an LlmService expects fewer instances at its peak than its
    autoscaling maximum (the band's pessimistic edge): the monthly cost shows both, the
    expected from the decision's instances at the peak; it charged the maximum, labelled
    "the stated peak traffic"."""
    from cdk_sagemaker_llm import ExpectedTraffic, LlmService
    from cdk_sagemaker_llm.constructs.llm_service_options import ServiceModel
    from cdk_sagemaker_llm.planning.decision_record import DecisionRecord
    from cdk_sagemaker_llm.planning.objectives import Slo
    from cdk_sagemaker_llm.planning.service_options import SearchSpace
    from cdk_sagemaker_llm.planning.workload import Workload

    outdir = tmp_path / "cdk.out"
    app = cdk.App(outdir=str(outdir), context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Svc", env=cdk.Environment(region="us-west-2"))
    source = ModelSource.from_hugging_face(
        "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
    )
    LlmService(
        stack,
        "Chat",
        model=ServiceModel.from_source(source, image=ContainerImage.lmi("0.38.0")),
        workload=Workload(512, 256),
        slo=Slo(max_ms_per_token=60),
        traffic=ExpectedTraffic.requests_per_second(16, minimum=1),
        search=SearchSpace(instance_types=[InstanceType.G6E_XLARGE], max_instance_count=20),
    )
    app.synth()
    (endpoint,) = build_plan(outdir).stacks[0].endpoints
    (variant,) = endpoint.variants
    (component,) = endpoint.components
    assert component.decision is not None
    expected = DecisionRecord.from_metadata(component.decision).instances_at_peak
    assert variant.max_instances is not None and expected < variant.max_instances
    assert main(["plan", str(outdir), "--format", "json"]) == 0
    (cost,) = json.loads(capsys.readouterr().out)["budget"]["monthly_costs"]
    g6e = DEFAULT_PRICE_LIST.prices[G6E]
    low, peak = 730 * 16 / 24, 730 * 8 / 24
    fewest = variant.min_instances or 0
    assert cost["monthly_cost"] == pytest.approx(
        g6e * (fewest * low + variant.max_instances * peak), abs=0.01
    )
    assert cost["monthly_cost_expected"] == pytest.approx(
        g6e * (fewest * low + expected * peak), abs=0.01
    )
