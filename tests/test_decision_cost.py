"""``benchmarks/decision_cost.py`` keeps running: it times the decisions issue 30 budgets (a
default ``recommend``, an ``LlmService`` decision) and prints one row per case with its budget.
No assertion reads the times (they depend on the machine)."""

from __future__ import annotations

import pytest
from conftest import benchmark_module


def test_every_case_decides_and_is_reported_against_its_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cost = benchmark_module("decision_cost")
    assert cost.main(["--repeat", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == len(cost.CASES) == 3
    for row, case in zip(rows, cost.CASES, strict=True):
        name, seconds, budget = (cell.strip() for cell in row.strip("|").split("|"))
        assert name == case.name
        assert float(seconds) >= 0
        assert float(budget) == cost.BUDGETS_S[case.budget]
    # the cases decide: a recommendation with options, a service decision on a named type
    assert cost.CASES[0].run().options
    decision = cost.CASES[1].run()
    assert decision.layout.instance_type.name in {"ml.g5.12xlarge", "ml.g6e.2xlarge"}
