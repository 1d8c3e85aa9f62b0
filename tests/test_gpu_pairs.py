"""``benchmarks/gpu_pairs.py``: one source's workload on two GPUs, the measured speed ratio
against the model's, and a GPU's rows predicted with other spec figures."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from conftest import benchmark_module

HEADER = (
    "source_id,citation,engine,engine_version,gpu,instance_type,tp,model,precision,"
    "input_tokens,output_tokens,concurrency,ms_per_token,ttft_ms,e2e_latency_s,"
    "output_tokens_per_s,requests_per_s,read_from_chart,notes"
)


def _row(source: str, gpu: str, output_tokens: int, tokens_per_s: float) -> str:
    return (
        f"{source},c,vllm,0.11.0,{gpu},,1,llama-3.1-8b,bf16,1000,{output_tokens},16,,,,"
        f"{tokens_per_s},,false,n"
    )


@pytest.fixture(scope="module")
def gpu_pairs() -> Any:
    return benchmark_module("gpu_pairs")


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    fitting = benchmark_module("profile_fitting")
    path: Path = tmp_path_factory.mktemp("gpu_pairs") / "rows.csv"
    lines = [
        HEADER,
        _row("lab", "A100-80GB", 200, 1000),
        _row("lab", "H100-80GB", 190, 1500),  # pairs: output within 10 %
        _row("lab", "H100-80GB", 300, 1400),  # does not: 300 against 200
        _row("other", "H100-80GB", 200, 2000),  # another source's run never pairs
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    loaded, skipped = fitting.load_rows(path)
    assert not skipped
    return list(loaded)


def test_one_sources_workload_on_two_gpus_pairs_and_nothing_else_does(
    gpu_pairs: Any, rows: list[Any]
) -> None:
    (pair,) = gpu_pairs.pairs(rows)
    assert (pair.first.gpu, pair.second.gpu) == ("A100-80GB", "H100-80GB")
    assert pair.second.output_tokens == 190
    assert pair.measured_ratio == pytest.approx(1.5)


def test_the_models_ratio_is_that_of_its_two_predictions(gpu_pairs: Any, rows: list[Any]) -> None:
    (pair,) = gpu_pairs.pairs(rows)
    first = gpu_pairs._predicted_tokens_per_s(pair.first)
    second = gpu_pairs._predicted_tokens_per_s(pair.second)
    assert pair.predicted_ratio == pytest.approx(second / first)
    assert pair.first_accuracy == pytest.approx(1000 / first)
    assert pair.second_accuracy == pytest.approx(1500 / second)
    # The H100 has 1.64x the A100's bandwidth and 3.17x its dense compute: the model expects
    # more than the measured 1.5x here, so the H100 falls short of it.
    assert 1.5 < pair.predicted_ratio < 3.2
    assert pair.shortfall < 0


def test_a_gpus_rows_predicted_with_other_figures_move_its_ratio(
    gpu_pairs: Any, rows: list[Any]
) -> None:
    # The H100's rows given the A100 80GB's own figures (2,039 GB/s, 312 TFLOPS): the model then
    # expects about the A100's speed of them.
    a100 = gpu_pairs.SpecFigures(2039, 312)
    (pair,) = gpu_pairs.pairs(rows, {"H100-80GB": a100})
    assert pair.predicted_ratio == pytest.approx(1.0, abs=0.05)
    assert pair.second.instance_type.accelerator.memory_bandwidth_gbps == 2039


def test_the_report_states_each_pair_and_each_sources_shortfall(
    gpu_pairs: Any, rows: list[Any]
) -> None:
    lines = gpu_pairs.report(gpu_pairs.pairs(rows))
    pair_line = next(line for line in lines if line.startswith("| lab | lmi-vllm-v1"))
    assert "| H100-80GB / A100-80GB | 1.50 |" in pair_line
    assert "| 1.64 | 3.17 |" in pair_line  # the spec sheets' bandwidth and compute ratios
    summary = next(line for line in lines if line.startswith("| lab | H100-80GB / A100-80GB"))
    assert "| 1 |" in summary


def test_a_spec_that_is_not_gpu_bandwidth_tflops_fails_naming_the_flag(gpu_pairs: Any) -> None:
    assert gpu_pairs.SpecFigures.parse("H100-80GB=2000,756") == (
        "H100-80GB",
        gpu_pairs.SpecFigures(2000.0, 756.0),
    )
    with pytest.raises(argparse.ArgumentTypeError, match=r"--spec 'H100-80GB=fast'.*GPU=GBPS"):
        gpu_pairs.SpecFigures.parse("H100-80GB=fast")


def test_a_spec_for_a_gpu_no_row_names_fails_naming_it(gpu_pairs: Any, rows: list[Any]) -> None:
    """Figures for a GPU the rows do not name would change nothing: refused, with the names
    the rows use."""
    with pytest.raises(SystemExit, match=r"--spec H100: no row .* A100-80GB, H100-80GB"):
        gpu_pairs.pairs(rows, {"H100": gpu_pairs.SpecFigures(2000, 756)})
