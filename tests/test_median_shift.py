"""``benchmarks/median_shift.py``: the median shift a held-out row would get is its profile's
other training sources' (never its own, never a validation-only source's), and the table
scores each error both ways."""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

import pytest
from conftest import benchmark_module


@pytest.fixture(scope="module")
def held() -> list[Any]:
    fitting = benchmark_module("profile_fitting")
    rows, _ = fitting.load_rows()
    few = [row for row in rows if row.profile == "lmi-vllm-v0"]
    assert len({row.source for row in few}) >= 2
    return fitting.leave_one_source_out(few)


def test_a_rows_shift_comes_from_its_profiles_other_sources(held: list[Any]) -> None:
    shift = benchmark_module("median_shift")
    source = held[0].row.source
    others = [h for h in held if h.row.source != source]
    ms = [e for h in others for k, e in h.errors.items() if k in ("ms_per_token", "itl_ms")]
    tokens = [e for h in others for k, e in h.errors.items() if k == "tokens_per_s"]
    expected = 0.0
    if min(len(ms), len(tokens)) >= shift.MIN_ERRORS:
        expected = (statistics.median(ms) - statistics.median(tokens)) / 2
    assert shift.log_shift(held, "lmi-vllm-v0", source) == pytest.approx(expected)
    # the row's own source never shifts it: moving its errors leaves the shift as it was
    moved = [
        replace(h, errors={k: e + 5 for k, e in h.errors.items()}) if h.row.source == source else h
        for h in held
    ]
    assert shift.log_shift(moved, "lmi-vllm-v0", source) == pytest.approx(expected)


def test_the_table_scores_every_banded_error_both_ways(held: list[Any]) -> None:
    shift = benchmark_module("median_shift")
    lines = shift.table(held)
    cells = {tuple(c.strip() for c in line.strip("|").split("|")[:2]): line for line in lines[2:]}
    errors = [k for h in held for k in h.errors if k in shift.FIGURES]
    counted = sum(
        int(line.strip("|").split("|")[2]) for key, line in cells.items() if key[0] == "all"
    )
    assert counted == len(errors)
    assert {key[0] for key in cells} >= {"all", "profile lmi-vllm-v0"}
