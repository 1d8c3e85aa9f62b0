"""Once a layout is measured, the measurement decides: a calibration keeps its measured levels,
and ``recommend`` sizes the measured layout from them (capacity within the SLO interpolated
between the levels around it, the knee as measured, the ceiling at the calibrated band's edge),
falling back to the fitted model, said in the reasoning, elsewhere."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.calibration import CALIBRATION_VERSION, Calibration, EngineRelease
from cdk_sagemaker_llm.planning.calibration_fit import calibrate
from cdk_sagemaker_llm.planning.measured_curve import MeasuredCurve, MeasuredPoint
from cdk_sagemaker_llm.planning.performance import Layout, Workload
from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import SearchSpace, Sizing

G5 = InstanceType.G5_2XLARGE
LOAD = Workload(2503, 63)
ENGINE = EngineRelease("tgi", "1.4.2")
TWO_LEVELS = [(1, 40.0, 24.0), (10, 120.0, 80.0)]
"""A coarse published-style sweep: 1 and 10 in flight, (concurrency, ms/token, tokens/s)."""


def _results(levels: list[tuple[int, float, float]]) -> dict[str, Any]:
    return {
        "payload": {"input_tokens": LOAD.input_tokens, "output_tokens": LOAD.output_tokens},
        "levels": [
            {"concurrency": c, "p50_ms_per_token": ms, "output_tokens_per_s": tput}
            for c, ms, tput in levels
        ],
    }


@pytest.fixture(scope="module")
def two_level() -> Calibration:
    return calibrate(_results(TWO_LEVELS), ModelSpec.MISTRAL_7B, Layout(G5, 1, 1), engine=ENGINE)


def _ask(calibration: Calibration, rate: float, workload: Workload = LOAD, slo: float = 75.0):
    answer = recommend(
        ModelSpec.MISTRAL_7B,
        workload,
        Slo(max_ms_per_token=slo),
        Traffic(requests_per_second=rate),
        search=SearchSpace(instance_types=[G5], max_instance_count=16),
        sizing=Sizing(calibration=calibration),
        top=1,
    )
    assert answer.options, answer.rejected
    return answer.options[0]


def test_capacity_within_an_slo_is_interpolated_between_the_levels_around_it() -> None:
    curve = MeasuredCurve.of([MeasuredPoint(c, ms, t) for c, ms, t in TWO_LEVELS], LOAD)
    capacity = curve.capacity_within(75.0)
    assert capacity is not None
    # 75 ms/token lies 35/80 of the way from 40 (1 in flight) to 120 (10 in flight).
    assert capacity.concurrency == pytest.approx(1 + 9 * 35 / 80)
    assert capacity.at_slo == pytest.approx(capacity.concurrency * 1000 / (75.0 * 63))
    assert capacity.proven == pytest.approx(24.0 / 63)
    assert capacity.beyond == pytest.approx(80.0 / 63)
    assert curve.capacity_within(200.0) is None  # no level breaks it: the SLO does not bind
    assert curve.capacity_within(30.0) is None  # no level meets it


def test_the_measured_knee_follows_the_one_knee_rule() -> None:
    flat = MeasuredCurve.of(
        [MeasuredPoint(1, 20, 50), MeasuredPoint(2, 21, 95), MeasuredPoint(4, 30, 100)], LOAD
    )
    knee = flat.knee(None)
    assert (knee.concurrency, knee.reason, knee.tripped_at) == (2, "throughput", 4)
    assert flat.knee(25.0).reason == "slo"


def test_a_calibration_keeps_the_measured_levels_per_copy_in_its_file(
    tmp_path: Path, two_level: Calibration
) -> None:
    assert two_level.measured is not None
    assert [p.concurrency for p in two_level.measured.points] == [1, 10]
    path = tmp_path / "calibration.json"
    two_level.to_file(path)
    document = json.loads(path.read_text())
    assert document["version"] == CALIBRATION_VERSION  # 2 added the measured levels
    assert document["measured"]["points"][1] == {
        "concurrency": 10,
        "ms_per_token": 120.0,
        "tokens_per_s": 80.0,
        "ttft_ms": None,
    }
    assert Calibration.from_file(path).measured == two_level.measured


def test_a_version_1_file_still_reads_and_sizes_from_the_fitted_model_saying_so(
    tmp_path: Path, two_level: Calibration
) -> None:
    document = two_level.to_dict()
    document["version"] = 1
    del document["measured"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    old = Calibration.from_file(path)
    assert old.measured is None
    option = _ask(old, 0.5)
    assert any("keeps no measured levels" in line for line in option.reasoning)
    document["version"] = CALIBRATION_VERSION + 1
    path.write_text(json.dumps(document))
    with pytest.raises(ValidationError, match="version 1 or 2 or 3"):
        Calibration.from_file(path)


def test_recommend_after_a_two_level_calibration_sizes_the_measured_layout_at_its_capacity(
    two_level: Calibration,
) -> None:
    assert two_level.measured is not None
    capacity = two_level.measured.capacity_within(75.0)
    assert capacity is not None
    for copies_needed in (1, 2, 4, 7):
        rate = capacity.at_slo * (copies_needed - 0.2)
        option = _ask(two_level, rate)
        # Sized and scaled at the interpolated capacity (to a hundredth), not at the 1 in
        # flight the sweep proves: the measured need, no more.
        assert option.scaling_target == math.floor(capacity.concurrency * 100) / 100
        assert option.to_dict()["target_concurrency_per_copy"] == option.scaling_target
        assert option.layout.instance_count == copies_needed
        assert option.ceiling >= option.layout.instance_count
        assert "the measurement sizes it" in option.reasoning[0]
        # The capacity it is sized on is the measured rate at that target.
        assert option.requests_per_s_per_copy == pytest.approx(capacity.at_slo, rel=0.01)


def test_a_workload_far_from_the_measured_one_falls_back_to_the_fitted_model(
    two_level: Calibration,
) -> None:
    option = _ask(two_level, 0.5, workload=Workload(1024, 63))
    assert not any("the measurement sizes it" in line for line in option.reasoning)
    (line,) = [line for line in option.reasoning if line.startswith("measurement:")]
    assert "1024 input tokens against 2503 measured" in line
    assert "the fitted model transfers the measurement" in line


def test_an_slo_beyond_the_measured_levels_is_extrapolated_by_the_fitted_model(
    two_level: Calibration,
) -> None:
    option = _ask(two_level, 0.5, slo=200.0)
    (line,) = [line for line in option.reasoning if line.startswith("measurement:")]
    assert "beyond 10 per copy the fitted model extrapolates" in line


def test_an_llm_service_scales_a_measured_layout_on_its_measured_capacity(
    two_level: Calibration,
) -> None:
    from cdk_sagemaker_llm.planning.decision import ExpectedTraffic, ServiceRequest, decide

    assert two_level.measured is not None
    capacity = two_level.measured.capacity_within(75.0)
    assert capacity is not None
    request = ServiceRequest(
        spec=ModelSpec.MISTRAL_7B,
        workload=LOAD,
        slo=Slo(max_ms_per_token=75.0),
        traffic=ExpectedTraffic.requests_per_second(capacity.at_slo * 3.8),
        search=SearchSpace(instance_types=[G5], max_instance_count=8),
        sizing=Sizing(calibration=two_level),
    )
    decision = decide(request)
    assert decision.layout.instance_type is G5
    assert decision.layout.instance_count == 4  # the measured need, not the fitted model's
    target = math.floor(capacity.concurrency * 100) / 100
    assert decision.scaling.target_concurrency_per_copy == target
    assert decision.scaling.max_copies >= 4


def test_a_ttft_limit_the_benchmark_could_not_check_falls_back_and_says_why(
    two_level: Calibration,
) -> None:
    answer = recommend(
        ModelSpec.MISTRAL_7B,
        LOAD,
        Slo(max_ms_per_token=75.0, max_ttft_ms=5000),
        Traffic(requests_per_second=0.5),
        search=SearchSpace(instance_types=[G5], max_instance_count=16),
        sizing=Sizing(calibration=two_level),
        top=1,
    )
    (option,) = answer.options
    (line,) = [line for line in option.reasoning if line.startswith("measurement:")]
    assert "did not stream" in line
