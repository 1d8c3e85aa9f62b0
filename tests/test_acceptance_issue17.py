"""Issue 17 acceptance audit: what a platform engineer reads before betting a budget on
``recommend``/``predict``/``LlmService`` says what it assumed, and the acceptance tests cannot
pass vacuously."""

from __future__ import annotations

import pytest

from cdk_sagemaker_llm.cli import main


def _table_rows(markdown: str) -> list[str]:
    table = markdown.split("<details>")[0]
    return [line for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]


def test_recommend_table_names_each_options_optimization(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Was: two rows 'TP4 x 2' on the same instance, one speculative decoding at $25/hour and
    one AWQ at $101/hour, with nothing in the table saying which was which."""
    argv = [
        "recommend", "--model", "llama-3-70b", "--input-tokens", "512", "--output-tokens",
        "256", "--max-ms-per-token", "80", "--requests-per-second", "2", "--instance-types",
        "ml.g5.12xlarge,ml.p4d.24xlarge", "--optimizations", "awq,speculative-decoding",
        "--top", "10",
    ]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = _table_rows(out)
    assert rows
    optimized = [row for row in rows if " with " in row.split("|")[3]]
    assert any("with speculative-decoding" in row for row in optimized), rows
    assert any("with awq" in row for row in optimized), rows
    # The median's cheapest option names its optimization too (70B fits 4 A10Gs only as int4).
    median = next(line for line in out.splitlines() if "at the median the cheapest" in line)
    assert "ml.g5.12xlarge" not in median or "with awq" in median, median
