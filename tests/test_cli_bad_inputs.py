"""Bad command-line input found by trying it: each is exit 2 with
an error naming the flag (or the file's field), the value and the fix, never a traceback."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cdk_sagemaker_llm import BenchmarkGate, CopyScaling
from cdk_sagemaker_llm.catalog.prices import PriceList
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError, check_range
from cdk_sagemaker_llm.planning.calibration_fit import measured_levels

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


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        # Was: json.decoder.JSONDecodeError.
        ({"manifest.json": "not json"}, "manifest.json cannot be read as JSON"),
        # Was: AttributeError: 'list' object has no attribute 'get' (plan/template.py).
        ({"Stack.template.json": "[1]"}, "Stack.template.json is not a JSON object"),
        # Was: AttributeError: 'str' object has no attribute 'items'.
        ({"Stack.template.json": '{"Resources": "x"}'}, "Resources is not an object"),
    ],
)
def test_plan_names_an_assembly_file_it_cannot_read(
    tmp_path: Path, files: dict[str, str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    err = _error(["plan", str(tmp_path)], capsys)
    assert err.startswith(f"error: assembly_dir={str(tmp_path)!r}") and problem in err
    assert "pass the directory `cdk synth` wrote" in err


@pytest.mark.parametrize(
    ("flag", "value", "shown", "problem"),
    [
        # Was: accepted (NaN and inf prices made the plan's costs nan/inf).
        ("--price", "ml.g5.2xlarge=nan", "'ml.g5.2xlarge=nan'", "finite USD amount"),
        ("--price", "ml.g5.2xlarge=inf", "'ml.g5.2xlarge=inf'", "finite USD amount"),
        # Was: "prices['ml.g5.2xlarge']=-1.0" / "discount=1.5" (not the flags).
        ("--price", "ml.g5.2xlarge=-1", "'ml.g5.2xlarge=-1'", "finite USD amount"),
        ("--discount", "1.5", "1.5", "must be a fraction from 0 to below 1"),
        ("--discount", "nan", "nan", "must be a fraction from 0 to below 1"),
    ],
)
def test_plan_s_price_flags_are_named_with_their_values(
    tmp_path: Path,
    flag: str,
    value: str,
    shown: str,
    problem: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _error(["plan", str(tmp_path), flag, value], capsys)
    assert err.startswith(f"error: {flag}={shown}: ") and problem in err


@pytest.mark.parametrize("price", [float("nan"), float("inf")])
def test_a_price_list_refuses_a_price_that_is_not_finite(price: float) -> None:
    with pytest.raises(ValidationError, match="must be a non-negative, finite number"):
        PriceList(as_of="today", source="test", region="us-east-1", prices={"ml.g5.xlarge": price})


def test_calibrate_names_out_when_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Was: "path='...': cannot be written" (Calibration.to_file's argument, not the flag).
    document = json.loads(Path(_results(tmp_path, tensor_parallel_degree=1)).read_text())
    document["payload"] = {"input_tokens": 256, "output_tokens": 128}
    document["levels"] = [
        {"concurrency": c, "p50_ms_per_token": 30.0 + c, "output_tokens_per_s": 30.0 * c}
        for c in (1, 2, 4, 8)
    ]
    results = tmp_path / "results.json"
    results.write_text(json.dumps(document))
    out = str(tmp_path / "missing" / "c.json")
    err = _error(["calibrate", str(results), "--out", out], capsys)
    assert err.startswith(f"error: --out={out!r}: cannot be written")


@pytest.mark.parametrize("concurrency", [-3, 0, True])
def test_calibration_skips_a_level_without_a_positive_concurrency(concurrency: object) -> None:
    # Was (-3): ValueError: math domain error in the fit.
    level = {"p50_ms_per_token": 20.0, "output_tokens_per_s": 50.0, "error_rate": "n/a"}
    levels = [{**level, "concurrency": concurrency}, {**level, "concurrency": 2}]
    assert [found.concurrency for found in measured_levels({"levels": levels})] == [2]


@pytest.mark.parametrize("flag", ["--max-instance-count", "--max-batch-size"])
def test_a_range_error_s_fix_names_the_flag_too(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Was: "--max-instance-count=0: must be at least 1. Fix: set max_instance_count within
    # that range" (check_range's default fix names the library's prop).
    err = _error([*RECOMMEND, "--concurrency", "2", flag, "0"], capsys)
    assert f"Fix: set {flag} within that range" in err


@pytest.mark.parametrize("value", [math.inf, -math.inf])
def test_no_range_takes_an_infinity(value: float) -> None:
    # Was: check_range passed inf when a prop had only a minimum (CopyScaling's target per
    # copy, BenchmarkGate's figures), a value the CDK's JSON cannot carry.
    with pytest.raises(ValidationError, match=r"must be finite and at least 0\.001"):
        CopyScaling(target_concurrency_per_copy=value)
    with pytest.raises(ValidationError, match=r"must be finite and at least 0\.001"):
        BenchmarkGate(max_p50_ms_per_token=value)
    with pytest.raises(ValidationError, match="must be finite and between 1 and 5"):
        check_range("x", value, minimum=1, maximum=5)
    check_range("x", 10**400, minimum=1)  # a huge integer is finite (no float overflow)


@pytest.mark.parametrize("document", [[], {"version": 99}])
def test_a_file_that_is_no_calibration_is_the_flag_s_value(
    tmp_path: Path, document: object, capsys: pytest.CaptureFixture[str]
) -> None:
    # Was: "--calibration c.json='list': ..." / "--calibration c.json=None: ..." (the file's
    # path in the prop, its type or missing format as the value).
    path = tmp_path / "c.json"
    path.write_text(json.dumps(document))
    err = _error([*RECOMMEND, "--concurrency", "2", "--calibration", str(path)], capsys)
    assert err.startswith(f"error: --calibration={str(path)!r}: is not a calibration file")


AT_ONE_REQUEST_PER_S = [
    "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "128",
    "--requests-per-second", "1",
]  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--max-ms-per-token", "inf"], "--max-ms-per-token=inf: must be a finite bound"),
        (["--max-ms-per-token", "50", "--max-ttft-ms", "inf"], "--max-ttft-ms=inf"),
        (["--max-ms-per-token", "50", "--instance-types", ""], "--instance-types='': names no"),
        (["--max-ms-per-token", "50", "--instance-types", " , "], "names no instance type"),
    ],
)
def test_recommend_names_an_unbounded_slo_or_an_empty_candidate_list(
    flags: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Was: an infinite bound was "max_ms_per_token / max_ttft_ms ... pass Slo(...)" (the
    # Python API's words), and an empty --instance-types searched every type.
    assert named in _error([*AT_ONE_REQUEST_PER_S, *flags], capsys)


def test_an_engine_on_hardware_it_does_not_run_on_names_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Was: predict and size answered 60.7 ms/token for LMI NeuronX on an A10G.
    for command in (PREDICT, SIZE):
        err = _error([*command, "--engine", "lmi-neuronx"], capsys)
        assert "--engine='lmi-neuronx': runs on neuron accelerators" in err


def _measured(tmp_path: Path) -> str:
    """A results.json of two measured levels that states nothing of its deployment."""
    path = tmp_path / "measured.json"
    levels = [
        {"concurrency": c, "p50_ms_per_token": ms, "output_tokens_per_s": tps}
        for c, ms, tps in ((1, 30.0, 33.0), (4, 36.0, 110.0))
    ]
    path.write_text(
        json.dumps({"levels": levels, "payload": {"input_tokens": 512, "output_tokens": 64}})
    )
    return str(path)


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--model", "llama-3-70b"], "does not fit"),
        (["--model", "llama-3-8b", "--copies", "0"], "--copies=0: must be a positive integer"),
    ],
)
def test_calibrate_refuses_a_layout_the_measurement_cannot_be_of(
    flags: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Was: 70B on one A10G was fitted at 1,947 % rms error and written; --copies 0 became 1.
    argv = [
        "calibrate", _measured(tmp_path), "--instance-type", "ml.g5.2xlarge",
        "--engine", "lmi:0.38.0", "--out", str(tmp_path / "c.json"), *flags,
    ]  # fmt: skip
    err = _error(argv, capsys)
    assert named in err
    assert not (tmp_path / "c.json").exists()
