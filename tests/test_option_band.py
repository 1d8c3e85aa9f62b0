"""The band an option quotes (``planning.option_band``): the conformal band of its predicted
level's regime and distance, or a calibration's, against the option's own figures; never the
engine profile's residuals it was sized with (issue 30 item 4: the band a decision shows is
the one that holds out of sample)."""

from __future__ import annotations

import json

import pytest

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.planning.conformal_band import conformal_bands, load_regime
from cdk_sagemaker_llm.planning.engine_profiles import Band, resolve_profile
from cdk_sagemaker_llm.planning.option_band import option_band
from cdk_sagemaker_llm.planning.performance import Layout, Workload, prediction_band
from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import Risk, SearchSpace, Sizing

LAYOUT = Layout(InstanceType.G6E_XLARGE, 1, 1)
LOAD = Workload(512, 256)


def _profile_band() -> Band:
    return prediction_band(
        resolve_profile("lmi-vllm-v1"), ModelSpec.LLAMA_3_8B, LAYOUT, LOAD, Precision.FP16
    )


@pytest.mark.parametrize("regime", ["light", "near the knee", "saturated"])
def test_an_uncalibrated_option_quotes_the_conformal_band_around_its_own_figures(
    regime: str,
) -> None:
    """The conformal factors are on the model's point prediction; an option's figures are
    that times its sizing median, so the quoted factors are divided by it."""
    band = _profile_band()
    reasons = ("hardware: an unfitted GPU",)
    quoted = option_band(band, regime, reasons, band.median_slowdown)
    conformal = conformal_bands().band(regime, 1)
    assert quoted.source == "conformal" and quoted.regime == regime
    assert quoted.ms_per_token == pytest.approx(
        tuple(f / band.median_slowdown for f in conformal.ms_per_token)
    )
    assert quoted.tokens_per_s == pytest.approx(
        tuple(f * band.median_slowdown for f in conformal.tokens_per_s)
    )
    assert quoted.ms_per_token != pytest.approx(band.ms_per_token)  # not the profile's


def test_a_calibrated_option_quotes_the_calibrations_band() -> None:
    narrowed = Band(
        ms_per_token=(0.95, 1.06),
        tokens_per_s=(0.94, 1.05),
        pessimistic_ms_per_token=1.08,
        pessimistic_tokens_per_s=1 / 1.08,
        median_ms_per_token=1.0,
        median_tokens_per_s=1.0,
        reasons=(),
        rows=5,
        basis="from the calibration's 5 levels",
    )
    quoted = option_band(narrowed, "saturated", (), 1.0)
    assert quoted.source == "calibrated" and quoted.regime is None
    assert quoted.ms_per_token == narrowed.ms_per_token
    assert quoted.basis.startswith("from the calibration")


@pytest.mark.parametrize("risk", list(Risk))
def test_every_option_quotes_the_band_of_its_predicted_level(risk: Risk) -> None:
    """Was: each option's band was the engine profile's p10-p90 (x0.76-2.05 for this layout),
    which at saturation held 75 % of the published measurements out of sample."""
    (option, *_) = recommend(
        ModelSpec.LLAMA_3_8B,
        LOAD,
        Slo(max_ms_per_token=150),
        Traffic(concurrency=600),
        search=SearchSpace(instance_types=[InstanceType.G6E_XLARGE], max_instance_count=20),
        sizing=Sizing(risk=risk),
    ).options
    assert option.band is not None and option.p10_p90 is not None
    centre = risk.slowdown(option.band) if risk is not Risk.PESSIMISTIC else None
    centre = centre or option.band.median_slowdown
    quoted = option.p10_p90
    assert quoted.source == "conformal" and quoted.centre == pytest.approx(centre)
    assert quoted.regime in {"light", "near the knee", "saturated"}
    conformal = conformal_bands().band(quoted.regime, len(quoted.extrapolation))
    assert [f * centre for f in quoted.ms_per_token] == pytest.approx(conformal.ms_per_token)
    data = option.to_dict()
    assert data["band"]["source"] == "conformal"
    assert data["sizing_factors"]["median"] == pytest.approx(option.band.median_slowdown, abs=1e-3)
    assert (data["sizing_factors"]["ceiling"] is None) == (risk is not Risk.PESSIMISTIC)
    line = next(r for r in option.reasoning if r.startswith("p10-p90 of ms/token at the peak"))
    assert quoted.basis in line


def test_the_quoted_regime_is_the_predicted_levels_against_the_medians_knee() -> None:
    """A light traffic on one copy is quoted with the light cell, a heavy one with its own."""
    quoted = {}
    for concurrency in (4, 200):
        (option, *_) = recommend(
            ModelSpec.LLAMA_3_8B,
            LOAD,
            Slo(max_ms_per_token=200),
            Traffic(concurrency=concurrency),
            search=SearchSpace(instance_types=[InstanceType.G6E_XLARGE]),
            sizing=Sizing(risk=Risk.MEDIAN),
        ).options
        assert option.p10_p90 is not None
        quoted[concurrency] = option.p10_p90.regime
    assert quoted[4] == "light"
    assert quoted[200] != "light"
    assert load_regime(4, 256) == "light"


def test_the_markdown_shows_each_options_ms_per_token_p10_p90(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens",
        "256", "--max-ms-per-token", "60", "--requests-per-second", "4", "--top", "1",
        "--instance-types", "ml.g6e.xlarge",
    ]  # fmt: skip
    assert main([*argv, "--format", "json"]) == 0
    option = json.loads(capsys.readouterr().out)["options"][0]
    ms = option["predicted"]["ms_per_token"]
    low, high = (ms * f for f in option["band"]["ms_per_token_factors"])
    assert main([*argv, "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| ms/token | ms/token p10-p90 |" in out
    assert f"| {ms:.1f} | {low:.1f}-{high:.1f} |" in out


def test_a_services_decision_records_the_quoted_band_and_plan_shows_it() -> None:
    """The decision metadata a pull request reviews carries the p10-p90 of the predicted
    ms/token; a template of an earlier release, without it, still reads."""
    from cdk_sagemaker_llm.planning.decision_record import Prediction
    from cdk_sagemaker_llm.review.render import _p10_p90

    (option, *_) = recommend(
        ModelSpec.LLAMA_3_8B,
        LOAD,
        Slo(max_ms_per_token=60),
        Traffic(requests_per_second=4),
        search=SearchSpace(instance_types=[InstanceType.G6E_XLARGE]),
    ).options
    assert option.p10_p90 is not None
    ms = option.predicted.ms_per_token
    band = (ms * option.p10_p90.ms_per_token[0], ms * option.p10_p90.ms_per_token[1])
    recorded = Prediction(1, 1, 1, ms, 50.0, 100.0, 0.4, ms_per_token_p10_p90=band)
    entry = recorded.to_metadata()
    assert entry["ms_per_token_p10_p90"] == [round(v, 2) for v in band]
    read = Prediction.from_metadata(entry, [])
    assert read.ms_per_token_p10_p90 == pytest.approx(band, abs=0.01)
    low, high = read.ms_per_token_p10_p90
    assert _p10_p90(read) == f" (p10-p90 {low:.1f}-{high:.1f})"  # what the template records
    older = {k: v for k, v in entry.items() if k != "ms_per_token_p10_p90"}
    assert Prediction.from_metadata(older, []).ms_per_token_p10_p90 is None
    assert _p10_p90(Prediction.from_metadata(older, [])) == ""


def test_recommend_and_predict_quote_one_band_for_the_same_level(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The option's quoted p10-p90 is ``predict``'s for the same layout and level: the two
    commands no longer show two bands for one prediction."""
    argv = [
        "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "256",
        "--format", "json",
    ]  # fmt: skip
    assert main(["recommend", *argv, "--max-ms-per-token", "60", "--concurrency", "28",
                 "--instance-types", "ml.g6e.xlarge", "--top", "1"]) == 0  # fmt: skip
    option = json.loads(capsys.readouterr().out)["options"][0]
    assert option["instance_count"] == 1 and option["tensor_parallel_degree"] == 1
    ms = option["predicted"]["ms_per_token"]
    quoted = [ms * f for f in option["band"]["ms_per_token_factors"]]
    assert main(["predict", *argv, "--instance-type", "ml.g6e.xlarge",
                 "--concurrency", str(option["concurrency_per_copy"])]) == 0  # fmt: skip
    (level,) = json.loads(capsys.readouterr().out)["levels"]
    assert quoted == pytest.approx(level["ms_per_token_p10_p90"], rel=0.01)
    assert level["regime"] == option["band"]["regime"]
