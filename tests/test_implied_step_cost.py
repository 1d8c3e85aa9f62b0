"""benchmarks/implied_step_cost.py: each single-request row's measured ms/token splits into the
model's prefill share, reads and host cost, and the step cost it implies."""

from __future__ import annotations

import pytest
from conftest import benchmark_module

implied = benchmark_module("implied_step_cost")
fitting = benchmark_module("profile_fitting")


def test_the_parts_and_the_implied_cost_add_up_to_the_measured_ms_per_token() -> None:
    rows, _ = fitting.load_rows()
    costs = implied.implied_costs(rows, "tgi-1", "fp16")
    assert len(costs) >= 30  # Hugging Face's and FMBench's single-request FP16 rows
    profile = implied.engine_profile("tgi-1")
    for cost in costs:
        row = cost.row
        assert row.concurrency == 1 and row.profile == "tgi-1"
        model = row.model(profile, implied.efficiency_of(profile))
        host = model.host_s(1) * 1000
        assert cost.prefill_per_token_ms + cost.reads_ms + host + cost.implied_ms == (
            pytest.approx(row.ms_per_token)
        )
        assert cost.modelled_ms == pytest.approx(
            (model.overhead_s() + model.all_reduce_s(1)) * 1000
        )


def test_fmbench_long_prompts_imply_a_step_cost_the_model_holds_flat() -> None:
    """The finding benchmarks/README.md states: at TP4 the implied cost of Llama 2 13B grows
    with the prompt while the modelled one does not."""
    rows, _ = fitting.load_rows()
    tp4 = [
        c
        for c in implied.implied_costs(rows, "tgi-1", "fp16")
        if c.row.source == "fmbench-2024-01" and c.row.instance_type.name == "ml.g5.12xlarge"
    ]
    by_prompt = sorted(tp4, key=lambda c: c.row.input_tokens)
    assert by_prompt[-1].implied_ms > 2 * by_prompt[0].implied_ms
    assert len({round(c.modelled_ms, 6) for c in by_prompt}) == 1


def test_the_cli_prints_a_table_and_refuses_an_empty_selection(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert implied.main([]) == 0
    assert "| implied step cost |" in capsys.readouterr().out
    assert implied.main(["--precision", "int8"]) == 1
    assert "no single-request int8 rows of tgi-1" in capsys.readouterr().err
