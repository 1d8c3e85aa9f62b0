"""The validation's load regimes (``benchmarks/model_validation.py``): where a published row sits
against the knee of its copy decides whether it scores light load, the knee or saturation."""

from __future__ import annotations

import ast
import sys
from dataclasses import replace
from types import ModuleType
from typing import Any

import pytest
from conftest import BENCHMARKS, benchmark_module

from cdk_sagemaker_llm.planning.efficiency import efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile


@pytest.fixture(scope="module")
def validation() -> ModuleType:
    benchmark_module("profile_fitting")
    return benchmark_module("model_validation")


@pytest.fixture(scope="module")
def rows(validation: ModuleType) -> list[Any]:
    loaded, skipped = sys.modules["profile_fitting"].load_rows()
    assert not skipped
    return loaded  # type: ignore[no-any-return]


def _held(rows: list[Any], source: str, predicted_knee: int) -> list[Any]:
    """The source's rows as held-out predictions whose fit predicts ``predicted_knee`` (the
    predicted figures are not read by the regimes)."""
    fitting = sys.modules["profile_fitting"]
    unused = fitting.Predicted(1.0, 1.0, 1.0, 1.0)
    return [
        fitting.HeldOutPrediction(row, unused, {}, True, predicted_knee)
        for row in rows
        if row.source == source
    ]


def test_a_sweep_is_split_at_its_measured_knee(validation: ModuleType, rows: list[Any]) -> None:
    """NIM 1.8.0's Llama 3.3 70B sweep (5,000 in / 500 out, 1-250 in flight) gains 13 % from
    50 to 100 and under 1 % from 100 to 150: its knee is 100, whatever the fit predicts."""
    held = [h for h in _held(rows, "nim-benchmarking-perf", 8) if h.row.input_tokens == 5000]
    knees = validation.measured_knees(held)
    regimes = {h.row.concurrency: validation.regime_of(h, knees) for h in held}
    assert regimes == {
        1: "light",
        5: "light",
        25: "light",
        50: "near the knee",
        100: "near the knee",
        150: "saturated",
        200: "saturated",
        250: "saturated",
    }


def test_a_row_without_a_measured_knee_is_read_against_the_predicted_one(
    validation: ModuleType, rows: list[Any]
) -> None:
    held = [h for h in _held(rows, "fmbench-2024-01", 8) if h.row.concurrency in (1, 2, 4)]
    regimes = {validation.regime_of(h, {}) for h in held if h.row.concurrency == 2}
    assert regimes == {"light"}
    regimes = {validation.regime_of(h, {}) for h in held if h.row.concurrency == 4}
    assert regimes == {"near the knee"}


def test_offline_runs_are_saturated_below_any_knee(validation: ModuleType, rows: list[Any]) -> None:
    """A static batch (TensorRT-LLM 0.9.0's peak-throughput tables) ran the engine at the
    batch the source chose for its peak: saturated even where the predicted knee is higher."""
    held = _held(rows, "trtllm-perf-v0.9", 100_000)
    assert held and all(h.row.static_batch for h in held)
    assert {validation.regime_of(h, {}) for h in held} == {"saturated"}


def test_every_validation_only_source_has_rows_and_a_reason(rows: list[Any]) -> None:
    """A source the fits leave out is one the data has, and says why it is left out."""
    fitting = sys.modules["profile_fitting"]
    sources = {row.source for row in rows}
    for source, why in fitting.VALIDATION_ONLY_SOURCES.items():
        assert source in sources, source
        assert len(why) > 40, source
        assert not any(fitting.trains(row) for row in rows if row.source == source)
    assert all(fitting.trains(row) for row in rows if row.source == "trtllm-perf-v0.6")


def test_the_gpustack_rows_are_left_out_for_the_held_out_pages_not_a_batch_limit(
    rows: list[Any],
) -> None:
    """The GPUStack vLLM rows are predicted at the batch limits they ran (vLLM 0.11's defaults
    for the GPU: 1,024 sequences and 8,192 tokens per pass on the H100), so a mismatch with the
    profile's limits is no reason to leave them out; the harness they share with the held-out
    Qwen3-8B pages is."""
    fitting = sys.modules["profile_fitting"]
    source = "gpustack-perf-lab-qwen3-14b-32b-2025-11"
    on_h100 = [
        row
        for row in rows
        if row.source == source and row.profile == "lmi-vllm-v1" and row.gpu == "H100-80GB"
    ]
    assert on_h100
    assert {(row.batch.max_sequences, row.batch.max_tokens_per_pass) for row in on_h100} == {
        (1024, 8192)
    }
    why = fitting.VALIDATION_ONLY_SOURCES[source]
    assert "Qwen3-8B pages, which issue 30 holds out" in why
    assert "not the lmi-vllm-v1 profile's" not in why


def test_the_benchmarks_model_a_copy_with_the_librarys_factory() -> None:
    """Scripts that model one copy of a measured layout call ``performance.profile_model`` (the
    profile's efficiencies, kernel speed and defaults in one place), never ``CopyModel(...)``."""
    by_hand = [
        path.name
        for path in sorted(BENCHMARKS.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "CopyModel"
    ]
    assert by_hand == []


def test_a_bursts_tpot_is_predicted_by_replaying_the_burst_as_the_source_measured_it(
    rows: list[Any],
) -> None:
    """A row whose requests were all sent at once is a burst; its mean TPOT is the scheduler
    simulation's over the replayed burst (the 128-in / 4-out vLLM run on the A100: three decode
    steps per request, shared with the burst's prefill chunks), not the steady closed loop's."""
    fitting = sys.modules["profile_fitting"]
    bursts = [row for row in rows if row.burst]
    assert bursts and all(row.source != "fmbench-2024-01" for row in bursts)
    assert not any(row.burst for row in rows if row.source == "nim-benchmarking-perf")
    (row,) = [
        row
        for row in bursts
        if row.source == "gpustack-perf-lab-qwen3-14b-32b-2025-11"
        and row.gpu == "A100-80GB"
        and row.profile == "lmi-vllm-v1"
        and row.model_name == "qwen3-14b"
        and row.output_tokens == 4
    ]
    profile = engine_profile(row.profile)
    efficiency = efficiency_of(profile)
    predicted = fitting.predict_row(row, profile, efficiency)
    steady = fitting.predict_row(replace(row, burst=False), profile, efficiency)
    assert predicted.tokens_per_s == steady.tokens_per_s
    assert predicted.itl_ms != pytest.approx(steady.itl_ms, rel=0.5)
    # the replay is within a factor of two of the measured TPOT; the steady state is not
    assert 0.5 < predicted.itl_ms / row.itl_ms < 2
    assert not 0.5 < steady.itl_ms / row.itl_ms < 2


def test_leave_one_source_out_gives_the_same_predictions_in_parallel_as_in_one_process(
    rows: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folds run in forked processes, one per core: each fold's refit and predictions are
    the same as in this process, in the same order."""
    fitting = sys.modules["profile_fitting"]
    few = [row for row in rows if row.profile == "lmi-vllm-v0"]
    assert len({row.source for row in few}) >= 2
    monkeypatch.setattr(fitting, "_fold_workers", lambda folds: 2)
    parallel = fitting.leave_one_source_out(few)
    monkeypatch.setattr(fitting, "_fold_workers", lambda folds: 1)
    serial = fitting.leave_one_source_out(few)
    assert [held.row.index for held in parallel] == sorted(row.index for row in few)
    assert parallel == serial


def test_the_regime_table_scores_both_bands_on_the_same_pairs(
    validation: ModuleType, rows: list[Any]
) -> None:
    """Each regime's row states the conformal band's coverage (what ``predict`` prints per
    level and ``recommend``/``plan`` quote per option, the one issue 30's target names) and the
    engine profile residuals' (sizing takes their median) over the same (row, figure) pairs,
    so neither is read for the other."""
    conformal_bands = benchmark_module("conformal_bands")
    held = [h for h in _held(rows, "nim-benchmarking-perf", 8) if h.row.input_tokens == 5000]
    knees = validation.measured_knees(held)
    saturated = [h for h in held if validation.regime_of(h, knees) == "saturated"]
    light = [h for h in held if validation.regime_of(h, knees) == "light"]
    assert saturated and light
    profile_hits = [validation.BandHit(h, h in light, 1, 2.0) for h in held]
    conformal_hits = [
        validation.ConformalHit(
            conformal_bands.Residual(h.row.index, h.row.source, "tokens_per_s", "unused", "1", 0.0),
            h in saturated,
            2.0,
        )
        for h in held
    ]
    table = validation.regime_table(held, [], profile_hits, conformal_hits)
    assert table[0].endswith(
        "band p10-p90 coverage: conformal (quoted) | engine profile residuals |"
    )
    by_regime = {line.split(" | ")[0].lstrip("| "): line for line in table[2:]}
    n_light, n_saturated = len(light), len(saturated)
    assert by_regime["light"].endswith(f"| 0% of {n_light} | 100% of {n_light} |")
    assert by_regime["saturated"].endswith(f"| 100% of {n_saturated} | 0% of {n_saturated} |")
    assert by_regime["all"].endswith(
        f"| {n_saturated / len(held):.0%} of {len(held)} | {n_light / len(held):.0%} of "
        f"{len(held)} |"
    )


def test_a_sweep_whose_own_figures_overflow_a_16_bit_kv_cache_is_predicted_with_an_fp8_one(
    rows: list[Any],
) -> None:
    """NIM 1.8.0's Llama 3.3 70B FP8 sweep on two H100s (5,000 in / 500 out) decodes about 86
    sequences at once from 100 in flight (920 tokens/s x 93 ms ITL), where a 16-bit KV cache
    holds 53 of them: the memory law says the engine ran an FP8 one, so the whole sweep is
    predicted with it, and its saturated throughput then comes within 10 % (a 16-bit cache's
    prediction is 20 % short). No other sweep's figures prove one; a row whose figures fit the
    16-bit cache keeps it."""
    fitting = sys.modules["profile_fitting"]
    nim = [row for row in rows if row.source == "nim-benchmarking-perf"]
    assert nim and {row.kv_cache.value for row in nim} == {"fp8"}
    assert {row.kv_cache.value for row in rows if row not in nim} == {"auto"}

    (saturated,) = [row for row in nim if row.concurrency == 250]
    decoding = fitting.decoding_at_once(saturated)
    assert decoding == pytest.approx(85.8, abs=0.5)
    profile = engine_profile(saturated.profile)
    efficiency = efficiency_of(profile)
    as_stated = replace(saturated, kv_cache=type(saturated.kv_cache).AUTO)
    sixteen_bit = fitting.profile_limits(as_stated.model(profile), profile)[0].capacity
    assert decoding > sixteen_bit * fitting.KV_IMPLIED_MARGIN
    fp8 = fitting.predict_row(saturated, profile, efficiency).tokens_per_s
    auto = fitting.predict_row(as_stated, profile, efficiency).tokens_per_s
    assert fp8 / saturated.tokens_per_s == pytest.approx(1, abs=0.10)
    assert auto / saturated.tokens_per_s < 0.85

    # the same sweep at half the throughput decodes 43 at once: within the 16-bit cache
    halved = [
        replace(row, kv_cache=as_stated.kv_cache, tokens_per_s=row.tokens_per_s / 2) for row in nim
    ]
    assert {row.kv_cache.value for row in fitting.implied_kv_cache(halved)} == {"auto"}


def test_no_row_decodes_more_sequences_at_once_than_it_has_in_flight(rows: list[Any]) -> None:
    """Little's law over the decode phase bounds what a row's ITL and throughput may say
    together: tokens/s x ITL (the sequences decoding at once, ``decoding_at_once``) cannot
    exceed the requests in flight. A row past it (5 % for rounding) was transcribed wrong:
    the figure the FP8 KV cache rule reads would be wrong too."""
    fitting = sys.modules["profile_fitting"]
    checked = [(row, fitting.decoding_at_once(row)) for row in rows]
    checked = [(row, decoding) for row, decoding in checked if decoding is not None]
    assert len(checked) >= 30
    over = [
        (row.index, round(decoding, 1), row.concurrency)
        for row, decoding in checked
        if decoding > 1.05 * row.concurrency
    ]
    assert not over


def test_a_sensitivity_leaves_out_the_rows_it_names_and_only_those(
    validation: ModuleType, rows: list[Any]
) -> None:
    """``--without SOURCE@GPU`` scores the validation without one source's rows on one GPU (the
    GPUStack H100 runs), ``--without SOURCE`` without all of them; a name that matches no row
    is refused, naming the flag and the value."""
    source = "gpustack-perf-lab-qwen3-14b-32b-2025-11"
    held = _held(rows, source, 8) + _held(rows, "nim-benchmarking-perf", 8)
    gpus = {h.row.gpu for h in held if h.row.source == source}
    assert gpus == {"A100-80GB", "H100-80GB"}
    kept, kept_rows = validation.without(held, rows, [f"{source}@H100-80GB"])
    assert {h.row.gpu for h in kept if h.row.source == source} == {"A100-80GB"}
    assert [h for h in held if h.row.source != source] == [
        h for h in kept if h.row.source != source
    ]
    assert not any(row.source == source and row.gpu == "H100-80GB" for row in kept_rows)
    assert len(kept_rows) == len(rows) - sum(
        row.source == source and row.gpu == "H100-80GB" for row in rows
    )
    kept, _ = validation.without(held, rows, [source])
    assert all(h.row.source != source for h in kept)
    with pytest.raises(SystemExit, match=r"--without gpustack@H100-80GB: no row"):
        validation.without(held, rows, ["gpustack@H100-80GB"])
