"""One knee rule for the performance model's prediction and the benchmark's measurement."""

from __future__ import annotations

import pytest

from cdk_sagemaker_llm.benchmarking import engine
from cdk_sagemaker_llm.benchmarking.engine import LevelResult, find_knee
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.planning import knee
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
from cdk_sagemaker_llm.planning.knee import KneeRule, LevelFigures, trip_reason
from cdk_sagemaker_llm.planning.performance import (
    Layout,
    Workload,
    copy_knee,
    profile_limits,
    profile_model,
)


def _measured(concurrency: int, tokens_per_s: float, ms: float, ttft_ms: float) -> LevelResult:
    return LevelResult(
        concurrency=concurrency, requests=10, errors=0, errors_by_kind={}, error_rate=0.0,
        duration_s=1.0, p50_latency_s=1.0, p90_latency_s=1.0, p99_latency_s=1.0,
        p50_ms_per_token=ms, p90_ms_per_token=ms, output_tokens=1,
        output_tokens_per_s=tokens_per_s, requests_per_s=1.0, p50_ttft_s=ttft_ms / 1000,
    )  # fmt: skip


def test_the_benchmark_and_the_planner_share_one_knee_and_one_rule() -> None:
    assert engine.Knee is knee.Knee
    assert engine.KneeRule is knee.KneeRule


@pytest.mark.parametrize(("slo_ms", "slo_ttft_ms"), [(None, None), (40.0, None), (None, 120.0)])
def test_a_predicted_sweep_measured_as_is_given_the_predicted_knee(
    slo_ms: float | None, slo_ttft_ms: float | None
) -> None:
    """Feed the model's own levels to the benchmark's ``find_knee``: it finds the knee the
    planner predicted (same rule, same gain per doubling, same SLOs, TTFT included)."""
    profile = engine_profile("lmi-vllm-v1")
    layout = Layout(InstanceType.G6E_XLARGE, 1, 1)
    model = profile_model(
        ModelSpec.LLAMA_3_8B, layout, Precision.FP16, Workload(1024, 256), profile
    )
    limits, _ = profile_limits(model, profile, None)
    predicted = copy_knee(model, limits, slo_ms, slo_ttft_ms)
    levels = []
    concurrency, limit = 1, limits.max_concurrency
    while not levels or levels[-1].concurrency < limit:  # doubling, the last at the limit
        at = model.level(concurrency, limits.capacity)
        levels.append(_measured(concurrency, at.tokens_per_s, at.ms_per_token, at.ttft_ms))
        concurrency = min(concurrency * 2, limit)
    measured = find_knee(levels, KneeRule(0.10, slo_ms, None, slo_ttft_ms))
    assert measured.tripped_at == predicted.tripped_at
    assert measured.reason == predicted.reason
    assert (measured.concurrency or 0) == predicted.concurrency
    if slo_ttft_ms is not None:
        assert predicted.reason == "ttft" and "ms to first token" in (predicted.detail or "")


def test_zero_throughput_reads_the_same_for_both() -> None:
    """A level serving nothing gains nothing (trips); the level after one that served nothing
    gains without bound (does not trip), predicted or measured."""
    rule = KneeRule()
    dead = LevelFigures(2, 0.0, 10.0)
    alive = LevelFigures(4, 100.0, 10.0)
    assert trip_reason(rule, dead, LevelFigures(1, 50.0, 10.0)) == "throughput"
    assert trip_reason(rule, alive, dead) is None
    measured = [_measured(1, 0.0, 10, 10), _measured(2, 100.0, 10, 10)]
    assert engine.trip_reason(rule, measured[1], measured[0]) is None
    assert find_knee(measured, rule).at_least


def test_a_ttft_only_slo_predicts_a_knee_without_a_per_token_limit() -> None:
    """An SLO with no per-token limit (``max_ms_per_token`` infinite) predicts the same knee
    as no SLO: the rule gets no per-token limit rather than an infinite one."""
    profile = engine_profile("lmi-vllm-v1")
    layout = Layout(InstanceType.G6E_XLARGE, 1, 1)
    model = profile_model(ModelSpec.LLAMA_3_8B, layout, Precision.FP16, Workload(512, 256), profile)
    limits, _ = profile_limits(model, profile, None)
    assert copy_knee(model, limits, float("inf")) == copy_knee(model, limits)
