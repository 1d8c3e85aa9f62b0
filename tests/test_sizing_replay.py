"""``benchmarks/sizing_replay.py``'s breakdown of the peak cost: the capacity accuracy each rung
of the measured need asks for, the measured curve's elasticity, and the decomposition of the
default risk's cost (on constructed answers; the replay itself runs ``recommend`` on every
published sweep and is a benchmark, not a test)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from conftest import benchmark_module

from cdk_sagemaker_llm.planning.measured_curve import CopyCapacity, MeasuredCurve, MeasuredPoint
from cdk_sagemaker_llm.planning.performance import Workload


@pytest.fixture(scope="module")
def replay() -> Any:
    benchmark_module("profile_fitting")
    return benchmark_module("sizing_replay")


def _answer(replay: Any, multiple: float, predicted: float, default: float | None = None) -> Any:
    """A question at ``multiple`` copies' worth of a measured capacity of 1 request/s, one
    copy per instance, sized at ``Risk.MEDIAN`` on ``predicted`` requests/s per copy (and at
    the default on ``default``, else the same) as ``recommend`` sizes a rate."""

    def sized(rate_per_copy: float) -> Any:
        instances = math.ceil(multiple / rate_per_copy)
        return replay.Sized(instances, instances, 1.0, rate_per_copy)

    return replay.Answer(
        key="source model ml.g5.2xlarge TP1 100/100",
        profile="tgi-1",
        slo=50.0,
        multiple=multiple,
        rate=multiple,
        copies_per_instance=1,
        measured=CopyCapacity(10.0, 1.0, 0.9, 1.1),
        elasticity=None,
        needed=math.ceil(multiple),
        at_least=math.ceil(multiple),
        proven=math.ceil(multiple),
        default=sized(predicted if default is None else default),
        at_median=sized(predicted),
        tuned=None,
    )


@pytest.mark.parametrize("multiple", [0.8, 1.6, 3.2, 6.4])
@pytest.mark.parametrize("target", [1.15, 1.5])
def test_a_rung_costs_more_than_the_target_exactly_below_its_capacity_threshold(
    replay: Any, multiple: float, target: float
) -> None:
    """Just above the threshold the rung costs at most ``target`` x its need, just below it
    more: the threshold is the rate in copies over the instances the target allows."""
    at = replay.threshold(_answer(replay, multiple, 1.0), target)
    above, below = _answer(replay, multiple, at * 1.001), _answer(replay, multiple, at * 0.999)
    assert above.median / above.needed <= target < below.median / below.needed


def test_the_capacity_thresholds_of_the_replayed_rungs(replay: Any) -> None:
    """0.8 of a copy's capacity costs 2x a need of one as soon as the predicted capacity is
    below 0.8 of measured; the 1.15x target asks 0.8 at every rung, the 1.5x one 0.8 / 0.53 /
    0.53 / 0.64."""
    found = {
        multiple: [
            round(replay.threshold(_answer(replay, multiple, 1.0), t), 2)
            for t in replay.COST_TARGETS
        ]
        for multiple in replay.RATES_IN_COPIES
    }
    assert found == {0.8: [0.8, 0.8], 1.6: [0.8, 0.53], 3.2: [0.8, 0.53], 6.4: [0.8, 0.64]}


def test_the_elasticity_is_the_inverse_log_slope_of_ms_per_token_around_the_slo(
    replay: Any,
) -> None:
    """On a curve where ms/token grows as the square root of the concurrency, capacity moves
    twice as much as ms/token; a curve that does not rise around the SLO has none."""
    workload = Workload(100, 100)
    rising = MeasuredCurve.of(
        [MeasuredPoint(1, 20.0, 50.0), MeasuredPoint(4, 40.0, 100.0), MeasuredPoint(16, 80, 200)],
        workload,
    )
    assert replay.elasticity(rising, 30.0) == pytest.approx(2.0)
    assert replay.elasticity(rising, 60.0) == pytest.approx(2.0)
    assert replay.elasticity(rising, 100.0) is None  # every level meets it
    flat = MeasuredCurve.of([MeasuredPoint(1, 40.0, 25.0), MeasuredPoint(4, 40.0, 100.0)], workload)
    assert replay.elasticity(flat, 40.0) is None


def test_the_decomposition_ends_at_the_default_risks_cost_and_starts_at_the_capacity_error(
    replay: Any,
) -> None:
    """Predicted capacity 0.75 of measured at a need of one: 1.33x with fractional instances,
    2x whole; a default whose target serves 0.5 costs 2x at 0.8 and 4x at 1.6 copies."""
    answers = [
        _answer(replay, 0.8, 0.75, default=0.5),
        _answer(replay, 1.6, 0.75, default=0.5),
    ]
    fractional, whole, default = replay.decomposition(answers)
    assert fractional == pytest.approx((1 / 0.75, 1 / 0.75))
    assert whole[0] == pytest.approx((2 / 1 + 3 / 2) / 2)  # ceil(0.8 / 0.75), ceil(1.6 / 0.75)
    assert default[0] == pytest.approx((2 / 1 + 4 / 2) / 2)
    lines = replay.render(answers, details=False).splitlines()
    assert any(line.startswith("the default risk's peak cost") for line in lines)
    assert "peak cost / measured need: median 2.00x" in "\n".join(lines)


def test_the_replay_counts_the_questions_within_each_target(replay: Any) -> None:
    """The default risk's cost per question against the two targets: at 0.8, 1.6 and 3.2
    copies' worth a copy serving 0.9 (or 0.85) of the measured capacity costs its need (1, 2
    and 4 instances), one serving 0.5 costs 2, 2 and 1.75x: three of six within either."""
    answers = [
        _answer(replay, 0.8, 0.9),
        _answer(replay, 1.6, 0.9),
        _answer(replay, 3.2, 0.9, default=0.85),
        _answer(replay, 0.8, 0.9, default=0.5),
        _answer(replay, 1.6, 0.9, default=0.5),
        _answer(replay, 3.2, 0.9, default=0.5),
    ]
    costs = sorted(a.expected / a.needed for a in answers)
    assert costs == pytest.approx([1.0, 1.0, 1.0, 1.75, 2.0, 2.0])
    text = replay.render(answers, details=False)
    assert "within 1.15x 3 of 6, within 1.5x 3" in text


def test_the_server_timed_source_is_read_at_the_clients_latency_and_no_other(
    replay: Any,
) -> None:
    """``--client-latency``: Hugging Face's TGI rows (TGI's ``time_per_token``, the router's
    queue left out) take the client's request latency / output tokens; every other row is
    as recorded. Llama 2 70B on p4d TP8 at 10 users: 52.82 -> 56.1 ms/token."""
    fitting = benchmark_module("profile_fitting")
    rows, _ = fitting.load_rows()
    read = replay.at_client_latency(rows)
    changed = [(old, new) for old, new in zip(rows, read, strict=True) if old != new]
    assert changed and {old.source for old, _ in changed} == set(replay.SERVER_TIMED_SOURCES)
    ((old, new),) = [
        (old, new)
        for old, new in changed
        if old.model_name == "llama-2-70b"
        and old.instance_type.name == "ml.p4d.24xlarge"
        and old.concurrency == 10
        and old.precision.value == "fp16"
    ]
    assert old.ms_per_token == pytest.approx(52.82)
    assert new.ms_per_token == pytest.approx(56.1, abs=0.05)


def test_a_scaling_target_past_the_measured_capacity_runs_the_copy_over_the_slo(
    replay: Any,
) -> None:
    """A curve at 30 / 40 / 60 ms/token with 1 / 2 / 4 in flight reaches 50 ms/token at 3 in
    flight: a target of 3.5 runs it at 55 ms/token (10 % over), one of 2.5 within the SLO, and
    one past the busiest level at that level's 60 (20 % over). The replay counts the first
    and the last per risk, with the worst overshoot."""
    curve = MeasuredCurve.of(
        [MeasuredPoint(1, 30.0, 33.3), MeasuredPoint(2, 40.0, 50.0), MeasuredPoint(4, 60.0, 66.7)],
        Workload(input_tokens=100, output_tokens=100),
    )
    capacity = curve.capacity_within(50.0)
    assert capacity is not None and capacity.concurrency == pytest.approx(3.0)
    base = dataclasses.replace(_answer(replay, 0.8, 1.0), curve=curve, measured=capacity)
    answers = [
        dataclasses.replace(base, default=replay.Sized(1, 1, target, 1.0))
        for target in (3.5, 2.5, 5.0)
    ]
    assert [a.over_slo(a.default) for a in answers] == pytest.approx([0.10, 0.0, 0.20])
    text = replay.render(answers, details=False)
    assert (
        "scaling target above the measured capacity within the SLO (default risk): 2 of 3, "
        "ms/token at the peak up to 20.0% over the SLO"
    ) in text
    assert "scaling target above the measured capacity within the SLO (Risk.MEDIAN): 0 of 3" in text
