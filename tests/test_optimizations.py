"""Optimizations inside the decision: quantized weights and speculative
decoding in predict and recommend, each naming the optimization job it needs."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cdk_sagemaker_llm import Optimization, Speculation
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.catalog.prices import DEFAULT_PRICE_LIST
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.engine_profiles import resolve_profile
from cdk_sagemaker_llm.planning.performance import Layout, predict, profile_model
from cdk_sagemaker_llm.planning.recommend import RejectionKind, Risk, Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import SearchSpace, Sizing
from cdk_sagemaker_llm.planning.speculation import SpeculativeTiming
from cdk_sagemaker_llm.planning.workload import Workload

LLAMA_8B = ModelSpec.preset("llama-3-8b")
LLAMA_70B = ModelSpec.preset("llama-3-70b")
WORKLOAD = Workload(512, 256)


def test_quantized_weights_use_the_engines_kernel_speed_and_name_their_job() -> None:
    layout = Layout(InstanceType.G5_12XLARGE, 4, 1)
    plain = predict(LLAMA_8B, layout, WORKLOAD, [1], engine="tgi-1")
    awq = predict(LLAMA_8B, layout, WORKLOAD, [1], engine="tgi-1", optimization=Optimization.awq())
    # Fewer bytes read, but at TGI 1.x's fitted int4 kernel speed: never the ideal 4x.
    assert awq.levels[0].ms_per_token < plain.levels[0].ms_per_token * 1.5
    assert awq.levels[0].ms_per_token > plain.levels[0].ms_per_token / 4
    job = [a for a in awq.assumptions if a.startswith("needs an optimization job")]
    assert job and "OPTION_QUANTIZE=awq" in job[0] and "GPTQ" in job[0]


def test_predict_prices_the_optimization_job_at_the_instances_catalog_price() -> None:
    """predict priced the job with no price ("cost unknown") while recommend priced it."""
    layout = Layout(InstanceType.G5_12XLARGE, 4, 1)
    awq = predict(LLAMA_8B, layout, WORKLOAD, [1], engine="tgi-1", optimization=Optimization.awq())
    (job,) = [a for a in awq.assumptions if a.startswith("needs an optimization job")]
    price = DEFAULT_PRICE_LIST.price_per_hour(InstanceType.G5_12XLARGE)
    assert price is not None
    assert "cost unknown" not in job
    assert job == f"needs an optimization job: {Optimization.awq().job(LLAMA_8B, price).describe()}"


def test_speculative_decoding_pays_at_low_concurrency_and_widens_the_band() -> None:
    layout = Layout(InstanceType.P4D_24XLARGE, 8, 1)
    plain = predict(LLAMA_70B, layout, WORKLOAD, [1], engine="lmi-vllm-v1")
    eagle = Optimization.speculative_decoding(Speculation.eagle(acceptance_rate=0.7))
    fast = predict(LLAMA_70B, layout, WORKLOAD, [1], engine="lmi-vllm-v1", optimization=eagle)
    assert fast.levels[0].ms_per_token < plain.levels[0].ms_per_token
    assert fast.band is not None and plain.band is not None
    assert fast.band.pessimistic_slowdown >= plain.band.pessimistic_slowdown
    assert any("speculative decoding: no published measurement" in r for r in fast.band.reasons)
    (job,) = [a for a in fast.assumptions if a.startswith("needs an optimization job")]
    assert "time not published, cost unknown" in job and "training instances" in job


def test_a_draft_model_takes_memory_from_the_kv_cache() -> None:
    layout = Layout(InstanceType.G6E_12XLARGE, 4, 1)
    draft = Optimization.speculative_decoding(Speculation.draft_model(LLAMA_8B))
    plain = predict(LLAMA_70B, layout, WORKLOAD, [1], engine="lmi-vllm-v1")
    with_draft = predict(LLAMA_70B, layout, WORKLOAD, [1], engine="lmi-vllm-v1", optimization=draft)
    assert with_draft.max_concurrency < plain.max_concurrency


def test_recommend_weighs_each_optimization_and_answers_optimize_or_buy() -> None:
    result = recommend(
        LLAMA_70B,
        WORKLOAD,
        Slo(max_ms_per_token=60),
        Traffic(requests_per_second=2),
        search=SearchSpace(
            instance_types=[InstanceType.P4D_24XLARGE, InstanceType.P5_48XLARGE],
            optimizations=[Optimization.awq(), Optimization.speculative_decoding()],
        ),
        sizing=Sizing(risk=Risk.MEDIAN),
    )
    names = {o.optimization.name if o.optimization else None for o in result.options}
    assert None in names and "speculative-decoding" in names
    optimized = next(o for o in result.options if o.optimization is not None)
    assert optimized.job is not None
    assert any(line.startswith("needs an optimization job") for line in optimized.reasoning)
    verdict = [a for a in result.assumptions if a.startswith("optimize or buy")]
    assert len(verdict) == 1
    cheapest = result.options[0]
    expected = "optimize" if cheapest.optimization is not None else "buy"
    assert verdict[0].startswith(f"optimize or buy more accelerators: {expected}")


def test_without_optimizations_recommend_is_unchanged() -> None:
    args = (LLAMA_8B, WORKLOAD, Slo(max_ms_per_token=100), Traffic(requests_per_second=1))
    search = SearchSpace(instance_types=[InstanceType.G5_12XLARGE])
    sizing = Sizing(risk=Risk.MEDIAN)
    plain = recommend(*args, search=search, sizing=sizing)
    assert plain == recommend(*args, search=replace(search, optimizations=()), sizing=sizing)
    assert all(o.optimization is None for o in plain.options)


def test_optimization_precision() -> None:
    assert Optimization.awq().precision(Precision.FP16) is Precision.INT4_AWQ
    assert Optimization.fp8().precision(Precision.BF16) is Precision.FP8
    assert Optimization.speculative_decoding().precision(Precision.BF16) is Precision.BF16


def test_cli_recommend_and_predict_take_optimizations(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "256",
        "--max-ms-per-token", "100", "--requests-per-second", "1", "--instance-types",
        "ml.g5.12xlarge", "--risk", "median", "--optimizations", "awq,speculative-decoding",
        "--format", "json",
    ]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert any(o["optimization"] for o in data["options"])
    assert any(a.startswith("optimize or buy") for a in data["assumptions"])
    argv = [
        "predict", "--model", "llama-3-8b", "--instance-type", "ml.g6e.12xlarge",
        "--tensor-parallel-degree", "4", "--input-tokens", "512", "--output-tokens", "256",
        "--concurrency", "1", "--optimization", "fp8", "--format", "json",
    ]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert any("OPTION_QUANTIZE=fp8" in a for a in data["assumptions"])
    assert main([*argv[:-4], "--optimization", "nonsense"]) == 2


def test_recommend_sizes_speculation_at_its_pessimistic_acceptance_in_the_ceiling() -> None:
    # The default risk sizes the peak at the median and the ceiling at the pessimistic edge: an
    # EAGLE head's ceiling is weighed at 60% acceptance (2.38 tokens per step, vLLM's measured
    # MT-bench range), and it still pays at the chosen concurrency per copy there; the median
    # side keeps 75% (3.29).
    search = SearchSpace(
        instance_types=[InstanceType.G5_2XLARGE, InstanceType.G5_12XLARGE],
        optimizations=[Optimization.speculative_decoding()],
    )
    slo, traffic = Slo(max_ms_per_token=50), Traffic(concurrency=8)
    pessimistic = recommend(LLAMA_8B, WORKLOAD, slo, traffic, search=search, top=10)
    median = recommend(
        LLAMA_8B, WORKLOAD, slo, traffic, search=search, sizing=Sizing(risk=Risk.MEDIAN), top=10
    )
    speculative = [o for o in pessimistic.options if o.optimization is not None]
    assert speculative
    for option in speculative:
        text = "\n".join(option.reasoning)
        assert "60% acceptance: 2.38 tokens per step" in text, text
        model = profile_model(
            LLAMA_8B, option.layout, Precision.FP16, WORKLOAD, resolve_profile(None, False)
        )
        timing = SpeculativeTiming(model, Speculation.eagle().pessimistic())
        assert timing.speedup(option.concurrency_per_copy) > 1
    assert any(
        "75% acceptance: 3.29 tokens per step" in "\n".join(o.reasoning)
        for o in median.options
        if o.optimization is not None
    )


def test_fp8_is_offered_only_on_accelerators_with_fp8_tensor_cores() -> None:
    """FP8 weights on A100 (p4d) or A10G (g5) are not offered (no FP8 tensor cores); on H100
    (p5) and L40S (g6e) they are weighed like any optimization."""
    found = recommend(
        ModelSpec.LLAMA_3_8B,
        Workload(512, 256),
        Slo(max_ms_per_token=60),
        Traffic(requests_per_second=1),
        search=SearchSpace(
            instance_types=[
                InstanceType.P4D_24XLARGE,
                InstanceType.G5_2XLARGE,
                InstanceType.G6E_XLARGE,
                InstanceType.P5_48XLARGE,
            ],
            optimizations=[Optimization.fp8()],
        ),
        sizing=Sizing(risk=Risk.MEDIAN),
        top=50,
    )
    with_fp8 = {o.layout.instance_type.name for o in found.options if o.optimization is not None}
    assert with_fp8 and with_fp8 <= {"ml.g6e.xlarge", "ml.p5.48xlarge"}
    refused = {r.instance_type for r in found.rejected if r.kind is RejectionKind.PRECISION}
    assert refused == {"ml.p4d.24xlarge", "ml.g5.2xlarge"}
    assert all(
        "no FP8 tensor cores" in r.reason
        for r in found.rejected
        if r.kind is RejectionKind.PRECISION
    )
    with pytest.raises(ValidationError) as raised:
        predict(
            ModelSpec.LLAMA_3_8B,
            Layout(InstanceType.G5_2XLARGE, 1, 1),
            Workload(512, 256),
            [1],
            precision=Precision.FP8,
        )
    assert raised.value.prop == "precision" and "NVIDIA A10G" in raised.value.problem


def test_bf16_is_offered_only_on_gpus_with_bf16() -> None:
    """BF16 weights on a T4 (g4dn: compute capability 7.5) are refused as vLLM refuses them;
    FP16 serves there, and BF16 on an A10G (g5)."""
    found = recommend(
        ModelSpec.MISTRAL_7B,
        Workload(512, 128),
        Slo(max_ms_per_token=200),
        Traffic(requests_per_second=0.2),
        search=SearchSpace(
            instance_types=[InstanceType.G4DN_12XLARGE, InstanceType.G5_12XLARGE],
            precision=Precision.BF16,
        ),
    )
    refused = {r.instance_type for r in found.rejected if r.kind is RejectionKind.PRECISION}
    assert refused == {"ml.g4dn.12xlarge"}
    assert {o.layout.instance_type.name for o in found.options} == {"ml.g5.12xlarge"}
    with pytest.raises(ValidationError) as raised:
        predict(
            ModelSpec.MISTRAL_7B,
            Layout(InstanceType.G4DN_12XLARGE, 2, 1),
            Workload(512, 128),
            [1],
            precision=Precision.BF16,
        )
    assert raised.value.prop == "precision" and "NVIDIA T4 has no BF16" in raised.value.problem
    assert "serve FP16" in raised.value.fix
    fp16 = predict(
        ModelSpec.MISTRAL_7B,
        Layout(InstanceType.G4DN_12XLARGE, 2, 1),
        Workload(512, 128),
        [1],
        precision=Precision.FP16,
    )
    assert fp16.levels[0].ms_per_token > 0


def test_every_optimization_deployment_type_is_in_the_instance_catalog_that_says_neuron() -> None:
    from cdk_sagemaker_llm.catalog.instance_types import CATALOG, InstanceType
    from cdk_sagemaker_llm.constructs.optimization_techniques import (
        DEPLOYMENT_INSTANCE_TYPES,
        is_neuron_deployment,
    )

    assert set(DEPLOYMENT_INSTANCE_TYPES) <= set(CATALOG)
    neuron = {n for n in DEPLOYMENT_INSTANCE_TYPES if is_neuron_deployment(InstanceType.of(n))}
    assert {n.split(".")[1] for n in neuron} == {"inf2", "trn1", "trn1n"}
