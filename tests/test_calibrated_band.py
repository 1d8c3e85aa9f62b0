"""A calibration replaces the engine profile's band where it measured: on the measured layout
the band is the fit's residual plus run-to-run noise; away from it, it widens with each step
and says why; on another accelerator it stays the profile's."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

import pytest

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.calibrated_band import (
    RUN_TO_RUN_NOISE,
    TRANSFER_SPREAD,
    calibrated_band,
)
from cdk_sagemaker_llm.planning.calibration import Calibration, EngineRelease
from cdk_sagemaker_llm.planning.calibration_fit import calibrate
from cdk_sagemaker_llm.planning.decision import ExpectedTraffic, ServiceRequest, decide
from cdk_sagemaker_llm.planning.efficiency import Efficiency
from cdk_sagemaker_llm.planning.engine_profiles import resolve_profile
from cdk_sagemaker_llm.planning.performance import (
    CopyModel,
    Layout,
    Workload,
    copy_limits,
    predict,
    prediction_band,
)
from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import SearchSpace, Sizing

SPEC = ModelSpec.LLAMA_3_8B
L40S = InstanceType.G6E_XLARGE
LOAD = Workload(512, 256)
ENGINE = EngineRelease("lmi", "0.32.0")  # the first LMI that keeps an FP8 KV cache
SERVER = Efficiency(
    memory_bandwidth=0.6, decode_compute=0.5, prefill_compute=0.5, step_overhead_ms=3.0
)
"""The measured server: about 34 ms/token for one request of Llama 3 8B on one L40S, which
the engine profile's pessimistic edge puts above 50."""


def _results(
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO,
    concurrencies: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64),
) -> dict[str, Any]:
    """A results.json of the constructed server (``SERVER``'s factors) at ``concurrencies``,
    its KV cache stored at ``kv_cache``."""
    model = CopyModel(SPEC, L40S, 1, Precision.FP16, LOAD, SERVER, kv_cache=kv_cache)
    limits, _ = copy_limits(model)
    levels = []
    for concurrency in concurrencies:
        at = model.level(concurrency, limits.capacity)
        levels.append(
            {"concurrency": concurrency, "p50_ms_per_token": at.ms_per_token,
             "output_tokens_per_s": at.tokens_per_s, "p50_ttft_s": at.ttft_ms / 1000,
             "requests": 4 * concurrency, "errors": 0}
        )  # fmt: skip
    return {"levels": levels}


@functools.cache
def _calibration() -> Calibration:
    """The constructed server's calibration, fitted once (a fit is seconds of coordinate
    descent; every test reads the same one)."""
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
        "--engine", "lmi:0.32.0", "--calibration", str(path),
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


# ----- the KV cache a calibration measured -------------------------------------------------------


def _fp8_kv_results() -> dict[str, Any]:
    """The same server with an FP8 KV cache (half the KV bytes per token: more sequences fit
    and each decode step reads half the KV cache)."""
    return _results(KvCachePrecision.FP8, (1, 4, 16, 64))


@functools.cache
def _fp8_kv_calibration() -> Calibration:
    return calibrate(
        _fp8_kv_results(),
        SPEC,
        Layout(L40S, 1, 1, 1),
        workload=LOAD,
        engine=ENGINE,
        kv_cache_precision=KvCachePrecision.FP8,
    )


def test_a_calibration_fitted_with_an_fp8_kv_cache_round_trips_through_json_with_it() -> None:
    calibration = _fp8_kv_calibration()
    assert calibration.kv_cache_precision is KvCachePrecision.FP8
    document = json.loads(json.dumps(calibration.to_dict()))
    assert document["kv_cache_precision"] == "fp8"
    read = Calibration.from_dict(document)
    assert read.kv_cache_precision is KvCachePrecision.FP8
    assert read.to_dict() == document
    assert "fp8 KV cache" in calibration.describe()


def test_the_fit_times_the_copy_with_the_kv_cache_it_was_told() -> None:
    """At 4,096 + 1,024 tokens an L40S holds 44 sequences of Llama 3 8B with the activation
    precision's KV cache and 89 with an FP8 one: a server measured at 64 in flight with an FP8
    KV cache is fitted exactly when the fit is told so, and not when it assumes the default
    (it must then queue the top level and read twice the KV bytes per step)."""
    long = Workload(4096, 1024)
    model = CopyModel(SPEC, L40S, 1, Precision.FP16, long, SERVER, kv_cache=KvCachePrecision.FP8)
    limits, _ = copy_limits(model)
    levels = []
    for concurrency in (1, 4, 16, 32, 64):
        at = model.level(concurrency, limits.capacity)
        levels.append(
            {"concurrency": concurrency, "p50_ms_per_token": at.ms_per_token,
             "output_tokens_per_s": at.tokens_per_s, "p50_ttft_s": at.ttft_ms / 1000,
             "requests": 4 * concurrency, "errors": 0}
        )  # fmt: skip

    def fitted(kv_cache: KvCachePrecision) -> Calibration:
        return calibrate(
            {"levels": levels}, SPEC, Layout(L40S, 1, 1, 1), workload=long, engine=ENGINE,
            kv_cache_precision=kv_cache,
        )  # fmt: skip

    told, assumed = fitted(KvCachePrecision.FP8), fitted(KvCachePrecision.AUTO)
    assert told.rms_error < 0.01
    assert told.efficiency.memory_bandwidth == SERVER.memory_bandwidth
    assert told.efficiency.step_overhead_ms == SERVER.step_overhead_ms
    assert assumed.rms_error > 0.05


def test_a_calibration_file_without_a_kv_cache_precision_reads_as_auto() -> None:
    document = _calibration().to_dict()
    del document["kv_cache_precision"]
    document["version"] = 2  # what release 2 wrote: no KV cache precision
    assert Calibration.from_dict(document).kv_cache_precision is KvCachePrecision.AUTO


def test_a_bad_kv_cache_precision_in_a_calibration_file_names_the_field() -> None:
    document = {**_calibration().to_dict(), "kv_cache_precision": "int4"}
    with pytest.raises(ValidationError) as error:
        Calibration.from_dict(document, where="calibration.json")
    assert error.value.prop == "calibration.json.kv_cache_precision"
    assert error.value.value == "int4"


def test_an_fp8_kv_calibration_on_hardware_without_fp8_is_refused() -> None:
    with pytest.raises(ValidationError) as error:
        calibrate(
            _results(),
            SPEC,
            Layout(InstanceType.G5_2XLARGE, 1, 1, 1),
            workload=LOAD,
            kv_cache_precision=KvCachePrecision.FP8,
        )
    assert error.value.prop == "kv_cache_precision"
    assert "NVIDIA A10G has no FP8 support" in error.value.problem


def test_an_fp8_kv_calibration_applied_to_an_auto_prediction_is_extrapolated_naming_both() -> None:
    calibration = _fp8_kv_calibration()
    applied = calibration.applied_to(SPEC, L40S, engine=ENGINE)
    layout = Layout(L40S, 1, 1)
    auto = predict(SPEC, layout, LOAD, [1, 16], calibration=applied, engine=ENGINE)
    fp8 = predict(
        SPEC, layout, LOAD, [1, 16], calibration=applied, engine=ENGINE,
        kv_cache_precision=KvCachePrecision.FP8,
    )  # fmt: skip
    assert auto.extrapolated and not fp8.extrapolated
    (note,) = [n for n in auto.assumptions if "KV cache" in n and n.startswith("extrapolated")]
    assert "calibrated with KV cache fp8, predicting KV cache auto" in note
    assert not any(n.startswith("extrapolated") for n in fp8.assumptions)


def test_the_calibrated_band_holds_at_the_measured_kv_cache_and_widens_at_another() -> None:
    calibration = _fp8_kv_calibration()
    profile = resolve_profile(ENGINE)
    layout = Layout(L40S, 1, 1)
    uncalibrated = prediction_band(profile, SPEC, layout, LOAD, Precision.FP16)
    applied = calibration.applied_to(SPEC, L40S, engine=ENGINE)

    def band(kv_cache: KvCachePrecision) -> Any:
        return calibrated_band(
            uncalibrated, applied, SPEC, layout, LOAD, Precision.FP16, ENGINE, [16],
            kv_cache_precision=kv_cache,
        )  # fmt: skip

    same, other = band(KvCachePrecision.FP8), band(KvCachePrecision.AUTO)
    assert same.reasons == () and same.basis is not None
    assert other.pessimistic_slowdown > same.pessimistic_slowdown
    assert other.reasons == (
        "calibrated with KV cache fp8, predicting KV cache auto (its bytes per token set the "
        "sequences that fit and the KV reads per step)",
    )


def test_the_measured_levels_size_only_the_kv_cache_they_measured() -> None:
    calibration = _fp8_kv_calibration()
    layout = Layout(L40S, 1, 1)
    curve, _ = calibration.measured_curve_for(
        SPEC, layout, LOAD, Precision.FP16, ENGINE, KvCachePrecision.FP8
    )
    assert curve is not None
    other, _ = calibration.measured_curve_for(
        SPEC, layout, LOAD, Precision.FP16, ENGINE, KvCachePrecision.AUTO
    )
    assert other is None


def test_recommend_with_another_kv_cache_than_calibrated_sizes_with_a_widened_band() -> None:
    calibration = _fp8_kv_calibration()
    slo, traffic = Slo(max_ms_per_token=40), Traffic(requests_per_second=4)
    sizing = Sizing(engine=ENGINE, calibration=calibration)

    def top(kv_cache: KvCachePrecision) -> Any:
        search = SearchSpace(instance_types=[L40S], kv_cache_precision=kv_cache)
        (option, *_) = recommend(SPEC, LOAD, slo, traffic, search=search, sizing=sizing).options
        return option

    same, other = top(KvCachePrecision.FP8), top(KvCachePrecision.AUTO)
    assert same.band is not None and same.band.reasons == ()
    assert other.band is not None
    assert any("calibrated with KV cache fp8, predicting KV cache auto" in r
               for r in other.band.reasons)  # fmt: skip
    assert other.band.pessimistic_slowdown > same.band.pessimistic_slowdown


CALIBRATE = [
    "--model", "llama-3-8b", "--instance-type", "ml.g6e.xlarge", "--engine", "lmi:0.32.0",
]  # fmt: skip
"""What ``_results`` does not state (it has no ``deployment`` section)."""
PAYLOAD = {"input_tokens": LOAD.input_tokens, "output_tokens": LOAD.output_tokens}
"""A results.json's ``payload``: the benchmark's tokens per request."""


def test_calibrate_s_kv_cache_precision_flag_reaches_the_calibration_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps({**_fp8_kv_results(), "payload": PAYLOAD}))
    fp8, auto = tmp_path / "fp8.json", tmp_path / "auto.json"
    assert main(["calibrate", str(results), "--out", str(fp8), *CALIBRATE,
                 "--kv-cache-precision", "fp8"]) == 0  # fmt: skip
    assert main(["calibrate", str(results), "--out", str(auto), *CALIBRATE]) == 0
    assert "fp8 KV cache" in capsys.readouterr().out
    assert json.loads(fp8.read_text())["kv_cache_precision"] == "fp8"
    assert json.loads(auto.read_text())["kv_cache_precision"] == "auto"  # the default


def test_calibrate_refuses_an_fp8_kv_cache_on_hardware_without_fp8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps({**_results(), "payload": PAYLOAD}))
    argv = ["calibrate", str(results), "--out", str(tmp_path / "out.json"), "--model",
            "llama-3-8b", "--instance-type", "ml.g5.2xlarge", "--engine", "lmi:0.32.0",
            "--kv-cache-precision", "fp8"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --kv-cache-precision='fp8': NVIDIA A10G has no FP8 support"), err
    assert not (tmp_path / "out.json").exists()


def test_predict_with_another_kv_cache_than_calibrated_is_extrapolated_off_the_calibrated_band(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "calibration.json"
    _calibration().to_file(path)  # an AUTO KV cache
    argv = [
        "predict", "--model", "llama-3-8b", "--instance-type", "ml.g6e.xlarge",
        "--input-tokens", "512", "--output-tokens", "256", "--concurrency", "1,8",
        "--engine", "lmi:0.32.0", "--calibration", str(path), "--format", "json",
    ]  # fmt: skip
    assert main(argv) == 0
    same = json.loads(capsys.readouterr().out)
    assert main([*argv, "--kv-cache-precision", "fp8"]) == 0
    other = json.loads(capsys.readouterr().out)
    reason = (
        "calibrated with KV cache auto, predicting KV cache fp8 (its bytes per token set the "
        "sequences that fit and the KV reads per step)"
    )
    assert not any(a.startswith("extrapolated") for a in same["assumptions"])
    assert same["calibrated_band"]["extrapolation"] == []
    assert f"extrapolated: {reason}" in other["assumptions"]
    assert other["calibrated_band"]["extrapolation"] == [reason]
    assert (
        other["calibrated_band"]["ms_per_token_factors"][1]
        > same["calibrated_band"]["ms_per_token_factors"][1]
    )


def test_an_llm_service_sizes_from_the_measurement_only_at_the_kv_cache_it_measured() -> None:
    """``LlmService``'s decision (``decide``): with the measured FP8 KV cache the measured
    capacity within the SLO sets the scaling target; with the activation precision's KV cache
    the fitted model sizes it, with a band widened for the step away (a lower target, more
    instances)."""
    calibration = _fp8_kv_calibration()
    assert calibration.measured is not None
    capacity = calibration.measured.capacity_within(45.0)
    assert capacity is not None

    def decided(kv_cache: KvCachePrecision) -> Any:
        return decide(
            ServiceRequest(
                spec=SPEC,
                workload=LOAD,
                slo=Slo(max_ms_per_token=45.0),
                traffic=ExpectedTraffic.requests_per_second(capacity.at_slo * 2.5),
                search=SearchSpace(
                    instance_types=[L40S], max_instance_count=8, kv_cache_precision=kv_cache
                ),
                sizing=Sizing(engine=ENGINE, calibration=calibration),
            )
        )

    same, other = decided(KvCachePrecision.FP8), decided(KvCachePrecision.AUTO)
    assert same.scaling.target_concurrency_per_copy == math.floor(capacity.concurrency * 100) / 100
    assert same.layout.instance_count == 3  # 2.5 x the measured capacity per copy
    assert other.scaling.target_concurrency_per_copy < same.scaling.target_concurrency_per_copy
    assert other.layout.instance_count > same.layout.instance_count
