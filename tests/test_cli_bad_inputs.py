"""Bad command-line input found by trying it (review of issue 17/19's CLI): each is exit 2 with
an error naming the flag (or the file's field), the value and the fix, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdk_sagemaker_llm.cli import main

PREDICT = [
    "predict", "--model", "llama-3-8b", "--instance-type", "ml.g5.12xlarge",
    "--input-tokens", "512", "--output-tokens", "128", "--concurrency", "4",
]  # fmt: skip
SIZE = ["size", "--model", "llama-3-8b", "--instance-type", "ml.g5.12xlarge"]


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line ``argv`` prints, after checking it exits 2 without a traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("error: ")
    return err


@pytest.mark.parametrize("degree", ["0", "-2"])
@pytest.mark.parametrize("command", [PREDICT, SIZE], ids=["predict", "size"])
def test_a_degree_below_one_is_not_a_request_for_fewer_gpus(
    command: list[str], degree: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Was: "ml.g5.12xlarge has 4 GPUs; a copy cannot span fewer than that. Fix: pass a degree
    # of 1, 2, 4, or an instance type with at least 0 GPUs".
    err = _error([*command, "--tensor-parallel-degree", degree], capsys)
    assert f"--tensor-parallel-degree={degree}: must be a positive integer" in err
    assert "pass a degree of 1, 2, 4 for ml.g5.12xlarge" in err
    assert "at least" not in err


def _results(tmp_path: Path, **deployment: object) -> str:
    """A results.json whose deployment section states ``deployment`` (levels are not read
    before the deployment is checked)."""
    path = tmp_path / "results.json"
    stated = {
        "model": "llama-2-7b",
        "engine": {"family": "tgi", "version": "3.3.6"},
        "instance_type": "ml.g5.2xlarge",
        "precision": "fp16",
        **deployment,
    }
    path.write_text(json.dumps({"levels": [], "deployment": stated}))
    return str(path)


@pytest.mark.parametrize("degree", ["abc", 0, True])
def test_calibrate_names_a_results_file_s_bad_degree(
    tmp_path: Path, degree: object, capsys: pytest.CaptureFixture[str]
) -> None:
    # Was: TypeError: '<' not supported between instances of 'str' and 'int'.
    results = _results(tmp_path, tensor_parallel_degree=degree)
    err = _error(["calibrate", results, "--out", str(tmp_path / "c.json")], capsys)
    assert "deployment.tensor_parallel_degree" in err and "must be a positive integer" in err


RECOMMEND = [
    "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "128",
    "--max-ms-per-token", "50",
]  # fmt: skip


@pytest.mark.parametrize("rate", ["inf", "nan", "0"])
def test_recommend_refuses_a_rate_that_is_not_a_positive_finite_number(
    rate: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Was (inf): OverflowError: cannot convert float infinity to integer, in _evaluate.
    err = _error([*RECOMMEND, "--requests-per-second", rate], capsys)
    assert f"--requests-per-second={float(rate)}: must be a positive, finite rate" in err
    assert "pass e.g. 5" in err


CUSTOM = [
    "predict", "--model", "mine", "--parameters", "7e9", "--layers", "32",
    "--attention-heads", "32", "--head-dim", "128", "--max-context", "4096",
    "--instance-type", "ml.g5.12xlarge", "--input-tokens", "512", "--output-tokens", "128",
    "--concurrency", "4",
]  # fmt: skip


@pytest.mark.parametrize(
    ("flag", "value", "problem"),
    [
        # Was: ValueError: cannot convert float NaN to integer (placement.sequences).
        ("--parameters", "nan", "must be a positive, finite number of parameters"),
        # Was: "--instance-type='ml.g5.12xlarge': mine fits at no tensor-parallel degree there".
        ("--parameters", "inf", "must be a positive, finite number of parameters"),
        # Was: spec.kv_heads=7 (the library's field, not the flag).
        ("--kv-heads", "7", "must divide attention_heads (32)"),
        ("--active-parameters", "9e9", "must be positive and at most parameters"),
        ("--layers", "0", "must be a positive integer"),
    ],
)
def test_a_custom_model_s_bad_fact_names_its_flag(
    flag: str, value: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = list(CUSTOM)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
    else:
        argv += [flag, value]
    err = _error(argv, capsys)
    assert err.startswith(f"error: {flag}=") and problem in err
