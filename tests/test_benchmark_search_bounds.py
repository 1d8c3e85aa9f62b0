"""Honest search bounds (a knee or rate no level failed is "at least", naming what raises it)
and searches that start from an expected value (a prediction)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cdk_sagemaker_llm.benchmarking import BenchmarkLoad, KneeRule, LevelResult, find_knee
from cdk_sagemaker_llm.benchmarking.benchmark_load import (
    DEFAULT_SEARCH_CAP,
    OPEN_SEARCH_MAX_ERROR_RATE,
)
from cdk_sagemaker_llm.benchmarking.report import render_markdown
from cdk_sagemaker_llm.benchmarking.search import (
    SearchRule,
    knee_judge,
    next_level,
    run_search,
    search_section,
    sustainable_judge,
)
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError

REQUESTS = 128
"""Requests per level of the modelled runs (a fixed count, as the issue's figures used)."""


def modelled(concurrency: int, knee: int, errors_above: int | None = None) -> LevelResult:
    """An endpoint whose throughput grows linearly up to ``knee`` in flight, then stays flat
    (a server with batch ``knee``); every request fails above ``errors_above``."""
    failing = errors_above is not None and concurrency > errors_above
    return LevelResult(
        concurrency=concurrency, requests=REQUESTS, errors=REQUESTS if failing else 0,
        errors_by_kind={}, error_rate=1.0 if failing else 0.0, duration_s=1.0,
        p50_latency_s=1.0, p90_latency_s=1.0, p99_latency_s=1.0, p50_ms_per_token=10.0,
        p90_ms_per_token=10.0, output_tokens=1,
        output_tokens_per_s=0.0 if failing else 100.0 * min(concurrency, knee),
        requests_per_s=1.0,
    )  # fmt: skip


def searched(rule: SearchRule, knee: int, knee_rule: KneeRule | None = None) -> list[LevelResult]:
    levels, _ = run_search(
        rule, lambda x: modelled(int(x), knee), knee_judge(knee_rule or KneeRule())
    )
    return levels


FULL_SWEEP = [1, 2, 4, 8, 16, 32, 64, 128]


# ----- honest bounds -------------------------------------------------------------------------


def test_a_sweep_that_never_trips_reports_a_lower_bound() -> None:
    knee = find_knee([modelled(c, 64) for c in (1, 2, 4, 8)], raise_with="--concurrency")
    assert knee.concurrency == 8 and knee.at_least and knee.tripped_at is None
    assert "at least concurrency 8" in knee.describe() and "--concurrency" in knee.describe()
    real = find_knee([modelled(c, 4) for c in (1, 2, 4, 8)])
    assert real.concurrency == 4 and not real.at_least and real.tripped_at == 8


def test_a_search_that_never_fails_says_at_least_and_names_the_flag() -> None:
    rule = SearchRule("knee", 1, 8)
    levels, state = run_search(rule, lambda x: modelled(int(x), 64), knee_judge(KneeRule()))
    section = search_section(rule, state, REQUESTS * len(levels), "rule", "--search-cap")
    assert section["found"] == 8 and section["at_least"] is True
    assert section["raise_with"] == "--search-cap" and section["first_failing"] is None
    rate_rule = SearchRule("max-rate", 1.0, 8.0)
    sustainable = [_rate_level(r, True) for r in (1.0, 2.0, 4.0, 8.0)]
    state = next_level(rate_rule, sustainable, sustainable_judge)
    assert search_section(rate_rule, state, 4, "rule", "--request-rate")["at_least"] is True


def _rate_level(rate: float, sustainable: bool) -> LevelResult:
    level = modelled(1, 1)
    level.target_rate_per_s, level.sustainable = rate, sustainable
    return level


def test_a_knee_search_given_no_range_doubles_to_the_knee_not_to_8() -> None:
    load = BenchmarkLoad.knee_search()
    assert load.levels == (1, DEFAULT_SEARCH_CAP) and load.open_ended
    assert load.knee_rule.max_error_rate == OPEN_SEARCH_MAX_ERROR_RATE
    assert "--search-cap" in load.raise_with
    assert load.search_rule is not None
    levels = searched(load.search_rule, 64, load.knee_rule)
    assert find_knee(levels, load.knee_rule).concurrency == 64  # the server: batch 64
    # ... and where errors rise before throughput flattens, there.
    judge = knee_judge(load.knee_rule)
    levels, state = run_search(load.search_rule, lambda x: modelled(int(x), 512, 32), judge)
    assert state.good is not None and state.good.concurrency == 32
    stated = BenchmarkLoad.knee_search(knee_rule=KneeRule(max_error_rate=0.5), high=None)
    assert stated.knee_rule.max_error_rate == 0.5


# ----- searches from an expectation ----------------------------------------------------------


@pytest.mark.parametrize("knee", [2, 4, 8, 16, 24, 32, 64, 100])
def test_a_right_prediction_finds_the_knee_with_half_a_doubling_sweeps_requests(
    knee: int,
) -> None:
    full = [modelled(c, knee) for c in FULL_SWEEP]
    full_knee = find_knee(full).concurrency
    assert full_knee is not None
    levels = searched(SearchRule("knee", 1, 128, expected=knee), knee)
    found = find_knee(levels).concurrency
    assert found is not None and abs(math.log2(found / full_knee)) < 1
    assert found == knee or found == 128  # a knee at 100 > 128/sqrt(2) ... is found exactly
    spent = sum(level.requests for level in levels)
    full_spent = sum(level.requests for level in full)
    print(f"knee {knee}: levels {[lv.concurrency for lv in levels]}, {spent} of {full_spent}")
    assert spent <= 0.5 * full_spent


@pytest.mark.parametrize(("knee", "expected"), [(64, 16), (64, 128), (4, 64), (100, 8)])
def test_a_wrong_prediction_widens_until_the_measurement_agrees(knee: int, expected: int) -> None:
    levels = searched(SearchRule("knee", 1, 128, expected=expected), knee)
    assert levels[0].concurrency == expected  # it starts where it was told
    full_knee = find_knee([modelled(c, knee) for c in FULL_SWEEP]).concurrency
    found = find_knee(levels).concurrency
    assert found is not None and full_knee is not None
    assert abs(math.log2(found / full_knee)) < 1
    assert len(levels) < len(FULL_SWEEP) + 2


def test_the_expected_knee_is_judged_against_a_level_below_it() -> None:
    # Predicted 64, real knee 8: 64 passes alone (nothing below it), so the search steps down.
    levels = searched(SearchRule("knee", 1, 128, expected=64), 8)
    found = find_knee(levels).concurrency
    assert found is not None and abs(math.log2(found / 8)) < 1  # a sweep's answer, within 2x
    assert min(level.concurrency for level in levels) < 8


def test_a_max_rate_search_from_an_expected_rate() -> None:
    rule = SearchRule("max-rate", 1.0, 100.0, expected=20.0)
    levels, state = run_search(rule, lambda r: _rate_level(r, r <= 25.0), sustainable_judge)
    assert levels[0].target_rate_per_s == 20.0 and state.good is not None
    assert 20.0 <= (state.good.target_rate_per_s or 0) <= 25.0 and len(levels) <= 4


def test_the_expectation_is_checked() -> None:
    with pytest.raises(ValidationError, match=r"knee_search\(expected\)"):
        BenchmarkLoad.knee_search(high=64, expected=128)
    with pytest.raises(ValidationError, match="int"):
        BenchmarkLoad.knee_search(high=64, expected=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="range"):
        SearchRule("knee", 1, 8, expected=16)
    load = BenchmarkLoad.max_rate_search(low=1, high=64, expected=10.5)
    assert load.search_rule is not None and load.search_rule.expected == 10.5


# ----- end to end: CLI, results.json, report -------------------------------------------------


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def _cli(sim: Simulator, out: Path, *flags: str) -> int:
    return main(
        [
            "benchmark", "--endpoint-name", "ep", "--region", "us-east-1",
            "--endpoint-url", sim.endpoint_url, "--input-tokens", "4", "--output-tokens", "6",
            "--out", str(out), *flags,
        ]
    )  # fmt: skip


def test_cli_bound_prediction_and_report(
    credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = SimulatorConfig(max_batch=4, step_base_s=0.004, step_per_sequence_s=0.0002)
    bound, expected = tmp_path / "bound.json", tmp_path / "expected.json"
    with Simulator(config) as sim:
        assert _cli(sim, bound, "--search", "knee", "--concurrency", "1,2") == 0
        assert _cli(
            sim, expected, "--search", "knee", "--search-cap", "32", "--expect-knee", "4",
            "--min-gain-per-doubling", "0.25",
        ) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "knee: at least concurrency 2" in err and "--concurrency" in err
    data = json.loads(bound.read_text())
    assert data["knee"]["at_least"] is True and data["search"]["at_least"] is True
    assert "at least 2" in render_markdown(_result(bound))
    data = json.loads(expected.read_text())
    assert data["search"]["expected"] == 4 and data["search"]["levels_run"][0] == 4
    assert data["search"]["high"] == 32 and data["knee"]["at_least"] is False
    assert "expected 4" in render_markdown(_result(expected)) and "expected 4" in err


def _result(path: Path):  # type: ignore[no-untyped-def]
    from cdk_sagemaker_llm.benchmarking import BenchmarkResult

    return BenchmarkResult.from_dict(json.loads(path.read_text()))


def test_cli_flags_that_need_a_search(
    credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["benchmark", "--endpoint-name", "e", "--region", "us-east-1", "--out", "x"]
    assert main([*base, "--expect-knee", "8"]) == 2
    assert "--expect-knee starts a knee search" in capsys.readouterr().err
    assert main([*base, "--search", "knee", "--concurrency", "1,8", "--search-cap", "64"]) == 2
    assert "--search-cap caps" in capsys.readouterr().err


# ----- deploy time: attributes and the gate --------------------------------------------------


def test_the_deploy_time_gate_treats_a_bound_as_unknown() -> None:
    from cdk_sagemaker_llm.benchmarking import BenchmarkResult
    from cdk_sagemaker_llm.lambdas.benchmark.results import RAISE_WITH
    from cdk_sagemaker_llm.lambdas.benchmark.signal import gate_failures

    levels = [modelled(c, 64) for c in (1, 2, 4, 8)]
    knee = find_knee(levels, raise_with=RAISE_WITH)
    result = BenchmarkResult(payload={}, levels=levels, knee=knee)
    gate = {
        "MaxP50MsPerToken": None, "MaxP50TtftMs": None, "MaxErrorRate": None,
        "MinKneeConcurrency": 16, "MinOutputTokensPerS": None, "MinSustainableRate": None,
    }  # fmt: skip
    (failure,) = gate_failures({"Gate": gate}, result)
    assert "unknown: at least 8" in failure and "highest level" in failure
    assert gate_failures({"Gate": {**gate, "MinKneeConcurrency": 8}}, result) == []
    measured = BenchmarkResult(payload={}, levels=levels, knee=find_knee(levels[:3]))
    assert not measured.knee.at_least or measured.knee.concurrency == 4


def test_the_ttft_gate_fails_a_slow_first_token_at_the_lowest_level() -> None:
    """``MaxP50TtftMs`` fails the run when the lowest level's p50 TTFT is above it (or was not
    measured: no stream), and passes it otherwise."""
    from cdk_sagemaker_llm.benchmarking import BenchmarkResult
    from cdk_sagemaker_llm.lambdas.benchmark.signal import gate_failures

    levels = [modelled(c, 64) for c in (1, 2, 4, 8)]
    levels[0].p50_ttft_s = 0.9
    result = BenchmarkResult(payload={}, levels=levels, knee=find_knee(levels))
    gate = {
        "MaxP50MsPerToken": None, "MaxP50TtftMs": 500, "MaxErrorRate": None,
        "MinKneeConcurrency": None, "MinOutputTokensPerS": None, "MinSustainableRate": None,
    }  # fmt: skip
    (failure,) = gate_failures({"Gate": gate}, result)
    assert "p50 TTFT at concurrency 1 is 900 ms, above the SLO of 500 ms" in failure
    assert gate_failures({"Gate": {**gate, "MaxP50TtftMs": 1000}}, result) == []
    levels[0].p50_ttft_s = None
    (unmeasured,) = gate_failures({"Gate": {**gate, "MaxP50TtftMs": 1000}}, result)
    assert "is n/a ms" in unmeasured


def test_the_error_rate_gate_fails_failed_requests_where_the_figures_rest() -> None:
    """Half of every request failing still published a knee (the figures count successes):
    ``MaxErrorRate`` fails the run at the first level up to the knee above it, naming the kinds;
    failures past the knee (the overload the sweep was for) do not count."""
    from cdk_sagemaker_llm.benchmarking import BenchmarkResult
    from cdk_sagemaker_llm.lambdas.benchmark.signal import gate_failures

    levels = [modelled(c, 4) for c in (1, 2, 4, 8, 16, 32)]
    result = BenchmarkResult(payload={}, levels=levels, knee=find_knee(levels))
    assert result.knee_level is not None and result.knee_level.concurrency < 32
    gate = {
        "MaxP50MsPerToken": None, "MaxP50TtftMs": None, "MaxErrorRate": 0.05,
        "MinKneeConcurrency": None, "MinOutputTokensPerS": None, "MinSustainableRate": None,
    }  # fmt: skip
    assert gate_failures({"Gate": gate}, result) == []
    past = levels[-1]
    past.errors, past.error_rate, past.errors_by_kind = past.requests // 2, 0.5, {"Throttled": 1}
    assert gate_failures({"Gate": gate}, result) == []
    failing = levels[1]
    failing.errors, failing.error_rate = failing.requests // 2, 0.5
    failing.errors_by_kind = {"ModelError": failing.errors}
    (failure,) = gate_failures({"Gate": gate}, result)
    assert failure == (
        f"{failing.errors} of {failing.requests} requests failed at concurrency 2 (50.0%: "
        f"ModelError {failing.errors}), above the gate's 5.0%"
    )
    assert gate_failures({"Gate": {**gate, "MaxErrorRate": None}}, result) == []
