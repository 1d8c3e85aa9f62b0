"""planning.decision: the pure ServiceDecision that recommend, LlmService and plan share."""

from __future__ import annotations

import json

import pytest

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.decision import (
    ExpectedTraffic,
    Overrides,
    ServiceDecision,
    ServiceRequest,
    decide,
)
from cdk_sagemaker_llm.planning.performance import Workload
from cdk_sagemaker_llm.planning.recommend import Risk, Slo, recommend

CANDIDATES = [InstanceType.G5_2XLARGE, InstanceType.G5_12XLARGE, InstanceType.G6E_2XLARGE]
REQUEST = ServiceRequest(
    spec=ModelSpec.LLAMA_3_8B,
    workload=Workload(input_tokens=512, output_tokens=256),
    slo=Slo(max_ms_per_token=50, max_ttft_ms=2000),
    traffic=ExpectedTraffic.requests_per_second(4, minimum=0.5),
    candidates=CANDIDATES,
    max_instance_count=4,
    region="us-west-2",
)


def test_the_decision_is_recommends_first_option_with_serving_and_scaling() -> None:
    decision = decide(REQUEST)
    first = recommend(
        REQUEST.spec,
        REQUEST.workload,
        REQUEST.slo,
        REQUEST.traffic.peak,
        instance_types=CANDIDATES,
        max_instance_count=4,
        top=1000,
        region="us-west-2",
        risk=Risk.MEDIAN,  # a ServiceRequest's default until LlmService(risk=...) is wired
    ).options[0]
    assert decision.option == first
    assert decision.layout == first.layout
    assert decision.serving.max_batch_size == first.max_batch_size
    assert decision.serving.max_model_len == 768
    assert decision.serving.max_batch_total_tokens == first.max_batch_size * 768
    scaling = decision.scaling
    assert 1 <= scaling.min_copies <= scaling.max_copies
    assert scaling.target_concurrency_per_copy == first.knee_concurrency_per_copy
    assert scaling.max_instances <= REQUEST.max_instance_count
    assert decision.reasoning == tuple(first.reasoning)
    assert decision.choices["instance_type"].source == "recommended"


def test_the_predictions_carry_their_sources() -> None:
    sources = decide(REQUEST).predicted.sources
    assert any(line.startswith("accelerator: NVIDIA") for line in sources)
    assert any(line.startswith("model: llama-3-8b, 32 layers") for line in sources)
    # Uncalibrated: the engine profile's efficiencies, fitted to published measurements.
    assert any(line.startswith("engine: engine profile lmi-vllm-v1") for line in sources)
    assert any("profile, fitted to published measurements" in line for line in sources)
    assert any(line.startswith("price: on-demand;") for line in sources)


def test_the_metadata_round_trips() -> None:
    decision = decide(REQUEST, Overrides(max_copies=1))
    metadata = json.loads(json.dumps(decision.to_metadata()))
    again = ServiceDecision.from_metadata(metadata)
    assert again.to_metadata() == metadata
    assert again.layout.instance_type == decision.layout.instance_type
    assert again.scaling.max_copies == 1
    assert [w.message for w in again.warnings] == [w.message for w in decision.warnings]
    assert again.predicted.sources == decision.predicted.sources


def test_benchmark_defers_the_target_to_the_measured_knee() -> None:
    decision = decide(REQUEST, Overrides(benchmark=True))
    assert decision.scaling.benchmark
    assert decision.choices["target_concurrency_per_copy"].source == "benchmark"
    knee = decision.scaling.target_concurrency_per_copy
    overridden = decide(REQUEST, Overrides(benchmark=True, target_concurrency_per_copy=knee))
    assert not overridden.scaling.benchmark


def test_deciding_is_pure_and_errors_name_the_override() -> None:
    with pytest.raises(ValidationError) as raised:
        decide(REQUEST, Overrides(tensor_parallel_degree=3))
    assert raised.value.prop == "tensor_parallel_degree"


def test_recommend_command_shows_the_same_decision(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "256",
        "--max-ms-per-token", "50", "--max-ttft-ms", "2000", "--requests-per-second", "4",
        "--instance-types", "ml.g5.2xlarge,ml.g5.12xlarge,ml.g6e.2xlarge",
        "--max-instance-count", "4", "--region", "us-west-2", "--risk", "median",
    ]  # fmt: skip
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = decide(
        ServiceRequest(
            **{**REQUEST.__dict__, "traffic": ExpectedTraffic.requests_per_second(4)},
        )
    )
    assert data["decision"]["choices"] == expected.to_metadata()["choices"]
    assert data["decision"]["sources"] == list(expected.predicted.sources)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "<details><summary>As an LlmService</summary>" in out
    assert "- source: accelerator: NVIDIA" in out


def test_a_custom_model_is_cited_as_given_not_as_a_catalog_entry() -> None:
    custom = ModelSpec.custom(
        "my-8b",
        parameters=8.0e9,
        layers=32,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        max_context=8192,
    )
    request = ServiceRequest(**{**REQUEST.__dict__, "spec": custom})
    (model,) = [s for s in decide(request).predicted.sources if s.startswith("model:")]
    assert model.endswith("(given with ModelSpec.custom)")
