"""What the capacity-planning guide says the commands print as JSON, and its calibration file,
are what this release prints and reads (the quoted command outputs themselves are generated
blocks: tests/test_doc_examples.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guides" / "capacity-planning.md"


def _documented_keys(text: str) -> set[str]:
    """The quoted names of a documented JSON shape, at any depth."""
    return set(re.findall(r'"([a-z0-9_]+)"', text))


def _actual_keys(value: Any, opaque: set[str]) -> set[str]:
    """The names of a printed JSON document at any depth; the values of ``opaque`` names
    (documented elsewhere) not descended into."""
    if isinstance(value, dict):
        return set(value) | {
            k
            for key, item in value.items()
            if key not in opaque
            for k in _actual_keys(item, opaque)
        }
    if isinstance(value, list):
        return {k for item in value for k in _actual_keys(item, opaque)}
    return set()


@pytest.mark.parametrize(
    ("opening", "argv", "skip"),
    [
        (
            'The JSON document is `{"levels"',
            "predict --model llama-2-7b --instance-type ml.g5.2xlarge --input-tokens 256 "
            "--output-tokens 128 --concurrency 1,8 --optimization awq --format json",
            set(),
        ),
        (
            'The JSON document is\n`{"options"',
            "recommend --model llama-3-8b --input-tokens 512 --output-tokens 256 "
            "--max-ms-per-token 60 --requests-per-second 4 --optimizations awq --format json",
            {"decision"},  # a shape documented elsewhere: ServiceDecision
        ),
    ],
    ids=["predict", "recommend"],
)
def test_the_documented_json_fields_are_the_ones_printed(
    opening: str, argv: str, skip: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: the guide listed a ``max_tokens_per_s_within_slo`` that ``recommend`` never
    printed, and not the ``optimization``, ``job`` and ``decision`` it does."""
    from cdk_sagemaker_llm.cli import main

    guide = GUIDE.read_text()
    start = guide.index(opening)
    shape = guide[start:].split("`", 2)[1]
    assert main(argv.split()) == 0
    printed = json.loads(capsys.readouterr().out)
    assert _documented_keys(shape) == _actual_keys(printed, skip)


def test_the_documented_calibration_file_is_one_this_release_reads_and_writes() -> None:
    from cdk_sagemaker_llm.planning.calibration import Calibration

    guide = GUIDE.read_text()
    (block,) = re.findall(r"```json\n(.*?)```", guide, re.DOTALL)
    shown = json.loads(block)
    assert Calibration.from_dict(shown).to_dict() == shown
