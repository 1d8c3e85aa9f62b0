"""Calibration: fitting the efficiency factors to a benchmark's results.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cdk_sagemaker_llm.benchmarking.engine import (
    BenchmarkResult,
    LevelResult,
    PayloadSpec,
    find_knee,
)
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.calibration_fit import calibrate
from cdk_sagemaker_llm.planning.efficiency import DEFAULT_EFFICIENCY, Efficiency
from cdk_sagemaker_llm.planning.engine_profiles import resolve_profile
from cdk_sagemaker_llm.planning.performance import (
    CopyModel,
    Layout,
    Workload,
    copy_limits,
    predict,
    profile_limits,
)

G5 = InstanceType.G5_2XLARGE
LOAD = Workload(256, 128)
TRUE = Efficiency(
    memory_bandwidth=0.6, decode_compute=0.5, prefill_compute=0.4, step_overhead_ms=5.0
)


def _results(concurrencies: list[int], efficiency: Efficiency = TRUE) -> dict[str, Any]:
    """A results.json as the benchmark writes it, for a server that behaves like the model
    with ``efficiency`` (what a real endpoint with those efficiencies would measure)."""
    model = CopyModel(ModelSpec.LLAMA_2_7B, G5, 1, Precision.FP16, LOAD, efficiency)
    limits, _ = copy_limits(model)
    levels = []
    for c in concurrencies:
        at = model.level(c, limits.capacity)
        ms, ttft, e2e, tput = at.ms_per_token, at.ttft_ms, at.e2e_ms, at.tokens_per_s
        levels.append(
            LevelResult(
                concurrency=c, requests=4 * c, errors=0, errors_by_kind={}, error_rate=0.0,
                duration_s=4 * e2e / 1000, p50_latency_s=e2e / 1000, p90_latency_s=e2e / 1000,
                p99_latency_s=e2e / 1000, p50_ms_per_token=ms, p90_ms_per_token=ms,
                output_tokens=4 * c * LOAD.output_tokens, output_tokens_per_s=tput,
                requests_per_s=tput / LOAD.output_tokens, p50_ttft_s=ttft / 1000,
            )
        )  # fmt: skip
    payload = PayloadSpec(input_tokens=LOAD.input_tokens, output_tokens=LOAD.output_tokens)
    result = BenchmarkResult(payload=payload.describe(), levels=levels, knee=find_knee(levels))
    return result.to_dict()


def test_calibration_recovers_the_efficiency_of_the_measured_server() -> None:
    document = _results([1, 2, 4, 8, 16])
    calibration = calibrate(document, ModelSpec.LLAMA_2_7B, Layout(G5, 1, 1))
    fitted = calibration.efficiency
    assert fitted.memory_bandwidth == pytest.approx(0.6, abs=0.03)
    assert fitted.step_overhead_ms == pytest.approx(5.0, abs=0.6)
    assert fitted.prefill_compute == pytest.approx(0.4, abs=0.06)
    assert calibration.rms_error < 0.02
    assert (calibration.input_tokens, calibration.output_tokens) == (256, 128)
    assert calibration.concurrency_range == (1, 16)
    # Calibrated predictions match the measurement better than the defaults do.
    layout = Layout(G5, 1, 1)
    measured = {level["concurrency"]: level["p50_ms_per_token"] for level in document["levels"]}
    calibrated = predict(ModelSpec.LLAMA_2_7B, layout, LOAD, [8], calibration=calibration)
    default = predict(ModelSpec.LLAMA_2_7B, layout, LOAD, [8])
    assert abs(calibrated.levels[0].ms_per_token - measured[8]) < abs(
        default.levels[0].ms_per_token - measured[8]
    )
    assert not calibrated.extrapolated
    assert any("calibrated on results.json" in line for line in calibrated.assumptions)


def test_a_benchmark_result_object_works_too_and_extrapolation_is_stated() -> None:
    document = _results([1, 4])
    calibration = calibrate(
        BenchmarkResult.from_dict(document), ModelSpec.LLAMA_2_7B, Layout(G5, 1, 1)
    )
    prediction = predict(
        ModelSpec.LLAMA_2_13B, Layout(InstanceType.G5_12XLARGE, 2, 2), Workload(2048, 128),
        [64], calibration=calibration,
    )  # fmt: skip
    assert prediction.extrapolated
    notes = " / ".join(prediction.assumptions)
    assert "calibrated on llama-2-7b, predicting llama-2-13b" in notes
    assert "calibrated on ml.g5.2xlarge" in notes
    assert "calibrated at TP1, predicting TP2" in notes
    assert "2048 input tokens, calibrated at 256" in notes
    assert "concurrency 64 is outside the calibrated 1-4 per copy" in notes


def test_unusable_results_are_validation_errors() -> None:
    spec, layout = ModelSpec.LLAMA_2_7B, Layout(G5, 1, 1)
    with pytest.raises(ValidationError, match="at least two levels"):
        calibrate(_results([1]), spec, layout)
    document = _results([1, 2])
    document["payload"]["input_tokens"] = None  # prompts from a file: token count unknown
    with pytest.raises(ValidationError, match="input and output tokens"):
        calibrate(document, spec, layout)
    assert calibrate(document, spec, layout, workload=LOAD).input_tokens == 256
    with pytest.raises(ValidationError, match="list of levels"):
        calibrate({"levels": None}, spec, layout)
    # Levels where most requests failed are not evidence of speed.
    document = _results([1, 2, 4])
    for level in document["levels"][1:]:
        level["error_rate"] = 0.9
    with pytest.raises(ValidationError, match="at least two levels"):
        calibrate(document, spec, layout)


def test_predict_command_reads_a_calibration_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_results([1, 2, 4, 8])), encoding="utf-8")
    argv = [
        "predict", "--model", "llama-2-7b", "--instance-type", "ml.g5.2xlarge",
        "--input-tokens", "256", "--output-tokens", "128", "--concurrency", "1,2,4,8",
        "--format", "json",
    ]  # fmt: skip
    assert main([*argv, "--calibration", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert any("calibrated on results.json" in line for line in data["assumptions"])
    assert not any("extrapolated" in line for line in data["assumptions"])
    assert main([*argv, "--calibration", str(tmp_path / "missing.json")]) == 2
    assert "--calibration" in capsys.readouterr().err


def test_without_ttft_the_prefill_efficiency_is_fitted_to_the_end_to_end_figures() -> None:
    """Long prompts, short outputs and no streamed level: the prefills that stall the batch
    set how ms/token grows with the load, so the fit must search the prefill efficiency on the
    end-to-end figures (held at the engine profile's, such a sweep fitted at 34% rms)."""
    load = Workload(2500, 64)
    server = Efficiency(
        memory_bandwidth=0.6, decode_compute=0.5, prefill_compute=0.9, step_overhead_ms=5.0
    )
    model = CopyModel(ModelSpec.LLAMA_2_7B, G5, 1, Precision.FP16, load, server)
    # the server is the default engine's (vLLM V1), whose KV cache holds 4 such sequences in
    # its 0.9 of the A10G's memory (6 in all of it): the fit counts the same
    limits, _ = profile_limits(model, resolve_profile(None, False))
    assert limits.kv_sequences == 4
    levels = []
    for c in (1, 8):
        at = model.level(c, limits.capacity)
        levels.append(
            {"concurrency": c, "p50_ms_per_token": at.ms_per_token,
             "output_tokens_per_s": at.tokens_per_s}
        )  # fmt: skip
    calibration = calibrate(
        {"levels": levels}, ModelSpec.LLAMA_2_7B, Layout(G5, 1, 1), workload=load
    )
    # Held at the default 0.6, the fit left 8% rms error; two levels do not pin the prefill
    # exactly, but they move it toward the server's.
    assert calibration.rms_error < 0.05
    assert calibration.efficiency.prefill_compute > DEFAULT_EFFICIENCY.prefill_compute


def test_no_factor_is_fitted_past_what_the_accelerator_was_measured_to_reach() -> None:
    """Issue 30 item 3: a server that decodes faster than the model allows at the A10G's
    measured bandwidth ceiling (0.85 of peak) is a cost the model charges that the server does
    not pay, not a faster memory: the fit stops at the ceiling and its notes say so."""
    faster = Efficiency(
        memory_bandwidth=0.98, decode_compute=0.5, prefill_compute=0.4, step_overhead_ms=0.5
    )
    calibration = calibrate(
        _results([1, 2, 4, 8, 16], faster), ModelSpec.LLAMA_2_7B, Layout(G5, 1, 1)
    )
    ceiling = G5.accelerator.achieved.memory_bandwidth  # type: ignore[union-attr]
    assert calibration.efficiency.memory_bandwidth == ceiling == 0.85
    assert any("A10G's measured ceiling" in note for note in calibration.fit_notes())
