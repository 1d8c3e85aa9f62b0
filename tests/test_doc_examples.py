"""Command output quoted in the guides is generated, not typed: each block between
``<!-- generated: NAME -->`` and ``<!-- /generated: NAME -->`` in a guide is what the command
of ``EXAMPLES[NAME]`` prints today (its headings one level deeper, to sit under the guide's),
and the ``model-validation`` blocks (README and the capacity-planning guide) are what
``benchmarks/model_validation.py --aggregate`` prints.
When the model or its profiles change (``benchmarks/fit_profiles.py``), regenerate the blocks
with ``UPDATE_DOC_EXAMPLES=1 pytest tests/test_doc_examples.py`` and review the diff."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import benchmark_module

from cdk_sagemaker_llm.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES: dict[str, tuple[str, list[str]]] = {
    "size-llama-2-13b": (
        "docs/guides/capacity-planning.md",
        ["size", "--model", "llama-2-13b", "--instance-type", "ml.p4d.24xlarge"],
    ),
    "predict-llama-2-13b": (
        "docs/guides/capacity-planning.md",
        [
            "predict", "--model", "llama-2-13b", "--instance-type", "ml.g5.12xlarge",
            "--tensor-parallel-degree", "4", "--copies", "1", "--input-tokens", "256",
            "--output-tokens", "128", "--concurrency", "1,8,32,128", "--engine", "tgi:1.4.5",
        ],
    ),
    "recommend-llama-3-8b": (
        "docs/guides/capacity-planning.md",
        [
            "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens",
            "256", "--max-ms-per-token", "60", "--requests-per-second", "4", "--top", "3",
        ],
    ),
}  # fmt: skip


def _block(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)(<!-- /generated: {re.escape(name)} -->)",
        re.DOTALL,
    )


FENCED = {"size-llama-2-13b": "text"}
"""Examples quoted as a code block (plain text output), with the block's language."""


def _printed(name: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 0
    out = capsys.readouterr().out.rstrip("\n") + "\n"
    if name in FENCED:
        return f"```{FENCED[name]}\n{out}```\n"
    # One heading level deeper: the guide's section heading sits above the output.
    return re.sub(r"^(#+) ", r"#\1 ", out, flags=re.MULTILINE)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_quoted_command_output_is_what_the_command_prints(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path, argv = EXAMPLES[name]
    document = ROOT / path
    text = document.read_text(encoding="utf-8")
    match = _block(name).search(text)
    assert match is not None, f"{path} has no generated block {name}"
    printed = _printed(name, argv, capsys)
    if os.environ.get("UPDATE_DOC_EXAMPLES") == "1":
        updated = text[: match.start(2)] + printed + text[match.end(2) :]
        document.write_text(updated, encoding="utf-8")
        return
    assert match.group(2) == printed, (
        f"{path}: the {name} block is stale; regenerate it with "
        "UPDATE_DOC_EXAMPLES=1 pytest tests/test_doc_examples.py"
    )


VALIDATION_DOCUMENTS = ("README.md", "docs/guides/capacity-planning.md")
"""Where the validation figures are quoted: the README's "how far to trust the decisions" and
the guide's performance-model section."""


def test_the_quoted_validation_figures_are_what_model_validation_prints(
    held_out: tuple[list[Any], list[Any]],
) -> None:
    """The accuracy the docs claim is the leave-one-source-out validation of today's profiles
    and data: what ``model_validation.py --aggregate`` prints (its ``render`` without details,
    over conftest's held-out predictions, computed once per session)."""
    benchmark_module("profile_fitting")
    validation = benchmark_module("model_validation")
    rows, predictions = held_out
    stdout = validation.render(predictions, details=False, rows=rows)
    printed = f"```text\n{stdout.rstrip(chr(10))}\n```\n"
    for path in VALIDATION_DOCUMENTS:
        document = ROOT / path
        text = document.read_text(encoding="utf-8")
        match = _block("model-validation").search(text)
        assert match is not None, f"{path} has no generated block model-validation"
        if os.environ.get("UPDATE_DOC_EXAMPLES") == "1":
            document.write_text(text[: match.start(2)] + printed + text[match.end(2) :], "utf-8")
            continue
        assert match.group(2) == printed, (
            f"{path}: the model-validation block is stale; regenerate it with "
            "UPDATE_DOC_EXAMPLES=1 pytest tests/test_doc_examples.py"
        )
