"""The edge the default risk sizes the autoscaling ceiling at: the conformal band's held-out
p90 for an uncalibrated prediction, the calibrated band's edge after a calibration of the
layout, never faster than the median."""

from __future__ import annotations

import math

import pytest

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.planning.calibrated_band import calibrated_band
from cdk_sagemaker_llm.planning.conformal_band import REGIMES, conformal_bands
from cdk_sagemaker_llm.planning.engine_profiles import Band, resolve_profile
from cdk_sagemaker_llm.planning.performance import Layout, Workload, prediction_band
from cdk_sagemaker_llm.planning.pessimistic_edge import pessimistic_edge

LAYOUT = Layout(InstanceType.G5_2XLARGE, 1, 1)
LOAD = Workload(512, 256)


def _profile_band() -> Band:
    return prediction_band(
        resolve_profile("tgi-1"), ModelSpec.LLAMA_2_7B, LAYOUT, LOAD, Precision.FP16
    )


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("reasons", [0, 1, 3])
def test_an_uncalibrated_edge_is_the_conformal_p90_of_its_regime_and_distance(
    regime: str, reasons: int
) -> None:
    band = _profile_band()
    edge = pessimistic_edge(band, regime, reasons)
    conformal = conformal_bands().band(regime, reasons)
    expected = max(band.median_slowdown, conformal.ms_per_token[1], 1 / conformal.tokens_per_s[0])
    assert edge.slowdown == pytest.approx(expected)
    assert "conformal band's p90" in edge.basis and regime in edge.basis
    assert edge.relative_to(band) >= 1


def test_the_edge_is_not_the_profile_bands_slowest_residual() -> None:
    """Near the knee on a fitted layout the held-out p90 is narrower than the profile's
    slowest residual, which ``Risk.WORST_CASE`` keeps."""
    band = _profile_band()
    edge = pessimistic_edge(band, "near the knee", 0)
    assert edge.slowdown < band.pessimistic_slowdown


def test_a_calibrated_edge_is_the_calibrated_bands() -> None:
    band = _profile_band()
    measured = calibrated_band(band, None, ModelSpec.LLAMA_2_7B, LAYOUT, LOAD, Precision.FP16, None)
    assert measured is band  # no calibration: the profile's band, the conformal edge
    narrowed = Band(
        ms_per_token=(0.9, 1.1),
        tokens_per_s=(0.9, 1.1),
        pessimistic_ms_per_token=1.16,
        pessimistic_tokens_per_s=1 / 1.16,
        median_ms_per_token=1.0,
        median_tokens_per_s=1.0,
        reasons=(),
        rows=5,
        basis="from the calibration (5 levels)",
    )
    edge = pessimistic_edge(narrowed, "saturated", 2)
    assert edge.slowdown == pytest.approx(1.16)
    assert edge.basis.startswith("the calibrated band's edge")
    assert math.isclose(edge.relative_to(narrowed), 1.16)
