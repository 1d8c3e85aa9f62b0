"""A calibration replaces the engine profile's band where it measured: on the measured layout
the band is the fit's residual plus run-to-run noise; away from it, it widens with each step
and says why; on another accelerator it stays the profile's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.planning.calibrated_band import (
    RUN_TO_RUN_NOISE,
    TRANSFER_SPREAD,
    calibrated_band,
)
from cdk_sagemaker_llm.planning.calibration import Calibration, EngineRelease, calibrate
from cdk_sagemaker_llm.planning.engine_profiles import resolve_profile
from cdk_sagemaker_llm.planning.performance import (
    CopyModel,
    Efficiency,
    Layout,
    Workload,
    copy_limits,
    prediction_band,
)
from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import SearchSpace, Sizing

SPEC = ModelSpec.LLAMA_3_8B
L40S = InstanceType.G6E_XLARGE
LOAD = Workload(512, 256)
ENGINE = EngineRelease("lmi", "0.31.0")
SERVER = Efficiency(
    memory_bandwidth=0.6, decode_compute=0.5, prefill_compute=0.5, step_overhead_ms=3.0
)
"""The measured server: about 34 ms/token for one request of Llama 3 8B on one L40S, which
the engine profile's pessimistic edge puts above 50."""


def _results() -> dict[str, Any]:
    model = CopyModel(SPEC, L40S, 1, Precision.FP16, LOAD, SERVER)
    limits, _ = copy_limits(model)
    levels = []
    for concurrency in (1, 2, 4, 8, 16, 32, 64):
        at = model.level(concurrency, limits.capacity)
        levels.append(
            {"concurrency": concurrency, "p50_ms_per_token": at.ms_per_token,
             "output_tokens_per_s": at.tokens_per_s, "p50_ttft_s": at.ttft_ms / 1000,
             "requests": 4 * concurrency, "errors": 0}
        )  # fmt: skip
    return {"levels": levels}


def _calibration() -> Calibration:
    return calibrate(_results(), SPEC, Layout(L40S, 1, 1, 1), workload=LOAD, engine=ENGINE)


def _band(instance_type: InstanceType, spec: ModelSpec = SPEC, degree: int = 1) -> Any:
    calibration = _calibration()
    profile = resolve_profile(ENGINE)
    layout = Layout(instance_type, degree, instance_type.accelerator_devices // degree)
    uncalibrated = prediction_band(profile, spec, layout, LOAD, Precision.FP16)
    applied = calibration.applied_to(spec, instance_type, engine=ENGINE)
    return uncalibrated, calibrated_band(
        uncalibrated, applied, spec, layout, LOAD, Precision.FP16, ENGINE
    )


def test_on_the_measured_layout_the_band_is_the_fit_error_plus_run_to_run_noise() -> None:
    uncalibrated, band = _band(L40S)
    assert band.reasons == ()
    assert band.basis is not None and "run-to-run noise" in band.basis
    assert band.pessimistic_slowdown < 1 + 3 * RUN_TO_RUN_NOISE
    assert band.pessimistic_slowdown < uncalibrated.pessimistic_slowdown
    assert band.median_slowdown == 1.0
    assert "from the calibration (7 levels" in band.describe()


def test_away_from_the_measured_layout_the_band_widens_and_names_each_step() -> None:
    _, here = _band(L40S)
    _, bigger_instance = _band(InstanceType.G6E_2XLARGE)
    _, other_model = _band(InstanceType.G6E_2XLARGE, ModelSpec.LLAMA_2_7B)
    assert here.pessimistic_slowdown < bigger_instance.pessimistic_slowdown
    assert bigger_instance.pessimistic_slowdown < other_model.pessimistic_slowdown
    assert len(bigger_instance.reasons) == 1
    assert "calibrated on ml.g6e.xlarge, predicting ml.g6e.2xlarge" in bigger_instance.reasons
    assert any("predicting llama-2-7b" in r for r in other_model.reasons)
    assert f"+{TRANSFER_SPREAD:.0%} for each of 2 steps away" in (other_model.basis or "")


def test_on_another_accelerator_the_band_stays_the_profiles_and_says_why() -> None:
    uncalibrated, band = _band(InstanceType.G5_2XLARGE)
    assert band.pessimistic_slowdown == uncalibrated.pessimistic_slowdown
    assert band.basis is None
    assert band.reasons[-1].startswith("calibrated on NVIDIA L40S, predicting NVIDIA A10G")


def test_recommend_at_the_default_risk_keeps_the_instance_type_it_measured() -> None:
    """Uncalibrated, the L40S is offered where its median meets the SLO (the engine profile's
    pessimistic edge, times x1.80, would reject it), the band paid by its ceiling; once it is
    measured at about 34 ms/token, the default risk keeps it with the calibrated band's
    edge."""
    search = SearchSpace(instance_types=[L40S])
    slo, traffic = Slo(max_ms_per_token=40), Traffic(requests_per_second=4)
    before = recommend(SPEC, LOAD, slo, traffic, search=search, sizing=Sizing(engine=ENGINE))
    (guessed, *_) = before.options
    assert guessed.layout.instance_type is L40S and guessed.band is not None
    assert guessed.band.basis is None and guessed.max_instance_count is not None
    assert guessed.max_instance_count >= guessed.layout.instance_count
    after = recommend(
        SPEC, LOAD, slo, traffic, search=search,
        sizing=Sizing(engine=ENGINE, calibration=_calibration()),
    )  # fmt: skip
    (option, *_) = after.options
    assert option.layout.instance_type is L40S
    assert option.band is not None and option.band.basis is not None
    assert any("the calibrated band's edge" in line for line in option.reasoning)


def test_a_level_beyond_the_calibrated_concurrency_widens_and_says_so() -> None:
    calibration = _calibration()
    profile = resolve_profile(ENGINE)
    layout = Layout(L40S, 1, 1)
    uncalibrated = prediction_band(profile, SPEC, layout, LOAD, Precision.FP16)
    applied = calibration.applied_to(SPEC, L40S, engine=ENGINE)
    inside = calibrated_band(uncalibrated, applied, SPEC, layout, LOAD, Precision.FP16, ENGINE, [8])
    beyond = calibrated_band(
        uncalibrated, applied, SPEC, layout, LOAD, Precision.FP16, ENGINE, [256]
    )
    assert inside.reasons == () and inside.basis is not None
    assert beyond.pessimistic_slowdown > inside.pessimistic_slowdown
    assert any(
        "concurrency 256 is outside the calibrated 1-64 per copy" in r for r in beyond.reasons
    )


def test_predict_shows_the_calibrated_band_beside_the_conformal_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "calibration.json"
    _calibration().to_file(path)
    argv = [
        "predict", "--model", "llama-3-8b", "--instance-type", "ml.g6e.xlarge",
        "--input-tokens", "512", "--output-tokens", "256", "--concurrency", "1,8,128",
        "--engine", "lmi:0.31.0", "--calibration", str(path),
    ]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "calibrated ms/token p10-p90" in text and "**Calibrated band:** band p10-p90" in text
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    one, eight, many = data["levels"]
    assert one["regime"] == "light" and many["regime"] != "light"

    def width(level: dict[str, Any], key: str) -> float:
        low, high = level[key]
        return float(high / low)

    assert width(eight, "calibrated_ms_per_token_p10_p90") < width(eight, "ms_per_token_p10_p90")
    assert width(many, "calibrated_ms_per_token_p10_p90") > width(
        eight, "calibrated_ms_per_token_p10_p90"
    )
    assert any("concurrency 128" in r for r in data["calibrated_band"]["extrapolation"])
    assert "benchmarks/conformal_bands.py" in data["conformal_band"]["table"]


def test_predict_without_a_calibration_shows_the_conformal_band_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "predict", "--model", "llama-3-8b", "--instance-type", "ml.g6e.xlarge",
        "--input-tokens", "512", "--output-tokens", "256", "--concurrency", "1,128",
        "--format", "json",
    ]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert "calibrated_band" not in data
    for level in data["levels"]:
        low, high = level["ms_per_token_p10_p90"]
        assert low < level["ms_per_token"] < high and "calibrated_ms_per_token_p10_p90" not in level
    extrapolation = data["conformal_band"]["extrapolation"]
    assert any(reason.startswith("hardware") for reason in extrapolation)
