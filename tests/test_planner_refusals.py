"""Inputs the planner once accepted silently: each is refused (or served) as documented."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cdk_sagemaker_llm.catalog.containers import (
    DLC_LINES,
    ContainerFamily,
    parse_container_release,
)
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.calibration import EngineRelease
from cdk_sagemaker_llm.planning.decision import (
    ExpectedTraffic,
    Overrides,
    ServiceRequest,
    decide,
)
from cdk_sagemaker_llm.planning.engine_profiles import PROFILE_NAMES
from cdk_sagemaker_llm.planning.optimizations import Optimization
from cdk_sagemaker_llm.planning.performance import Layout, Workload, predict
from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import LayoutOverrides, SearchSpace, Sizing
from cdk_sagemaker_llm.planning.sizing import size

SIZE = [
    "size", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge",
    "--max-total-tokens", "99999",
]  # fmt: skip
SPEC = ModelSpec.LLAMA_3_8B  # max_context 8192
TOO_LONG = Workload(input_tokens=9000, output_tokens=128)
PREDICT = [
    "predict", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge",
    "--input-tokens", "9000", "--output-tokens", "128", "--concurrency", "1",
]  # fmt: skip
RECOMMEND = [
    "recommend", "--model", "llama-3-8b", "--instance-types", "ml.g5.2xlarge",
    "--input-tokens", "9000", "--output-tokens", "128", "--requests-per-second", "1",
    "--max-ms-per-token", "100",
]  # fmt: skip


def _context_error(error: ValidationError, prop: str) -> None:
    assert error.prop == prop
    assert "9128" in str(error) and "8192" in str(error)
    assert "max_context" in error.problem
    assert "longer context" in error.fix and "max_context" in error.fix


def test_a_request_beyond_the_model_s_context_is_refused_by_every_planning_entry() -> None:
    assert SPEC.max_context == 8192
    layout = Layout(InstanceType.G5_2XLARGE, 1, 1, 1)
    with pytest.raises(ValidationError) as predicted:
        predict(SPEC, layout, TOO_LONG, [1])
    _context_error(predicted.value, "workload")
    with pytest.raises(ValidationError) as recommended:
        recommend(SPEC, TOO_LONG, Slo(max_ms_per_token=100), Traffic(requests_per_second=1))
    _context_error(recommended.value, "workload")
    with pytest.raises(ValidationError) as sized:
        size(SPEC, InstanceType.G5_2XLARGE, max_total_tokens=99999)
    assert sized.value.prop == "max_total_tokens" and sized.value.value == 99999
    assert "8192" in sized.value.problem
    request = ServiceRequest(
        spec=SPEC,
        workload=TOO_LONG,
        slo=Slo(max_ms_per_token=100),
        traffic=ExpectedTraffic.requests_per_second(1),
        search=SearchSpace(instance_types=[InstanceType.G5_2XLARGE]),
    )
    with pytest.raises(ValidationError) as decided:
        decide(request)
    _context_error(decided.value, "workload")
    # A longest sequence set beyond the context is refused too.
    fits = replace(request, workload=Workload(input_tokens=512, output_tokens=256))
    with pytest.raises(ValidationError) as overridden:
        decide(fits, Overrides(layout=LayoutOverrides(max_model_len=9128)))
    assert overridden.value.prop == "max_model_len" and overridden.value.value == 9128


def test_a_request_at_the_context_still_plans() -> None:
    layout = Layout(InstanceType.G5_2XLARGE, 1, 1, 1)
    assert predict(SPEC, layout, Workload(8064, 128), [1]).levels


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (PREDICT, "--input-tokens + --output-tokens"),
        (RECOMMEND, "--input-tokens + --output-tokens"),
        (SIZE, "--max-total-tokens"),
    ],
)
def test_the_commands_name_the_flag_of_a_request_beyond_the_context(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag}")
    assert "context of 8192 tokens" in err and "--max-context" in err


SPECULATION = Optimization.speculative_decoding()
LAYOUT = Layout(InstanceType.G5_2XLARGE, 1, 1, 1)
ORDINARY = Workload(input_tokens=512, output_tokens=128)


@pytest.mark.parametrize(
    ("engine", "named"),
    [
        (EngineRelease("tgi", "3.3.6"), "tgi 3.3.6"),
        (EngineRelease("lmi-tensorrt-llm"), "lmi-tensorrt-llm"),
        (EngineRelease("lmi", "0.26.0"), "lmi 0.26.0"),
        ("tgi-1", "tgi-1"),
        ("lmi-trtllm", "lmi-trtllm"),
    ],
)
def test_speculation_is_not_predicted_on_an_engine_that_cannot_serve_a_draft(
    engine: object, named: str
) -> None:
    with pytest.raises(ValidationError) as error:
        predict(SPEC, LAYOUT, ORDINARY, [1], engine=engine, optimization=SPECULATION)  # type: ignore[arg-type]
    assert error.value.prop == "engine" and error.value.value == named
    assert "speculative-decoding" in error.value.problem
    assert "OPTION_SPECULATIVE_DRAFT_MODEL" in error.value.problem
    assert "LMI 0.27.0 or later" in error.value.fix


@pytest.mark.parametrize("engine", [None, EngineRelease("lmi", "0.31.0"), "lmi-vllm-v0"])
def test_speculation_is_predicted_on_lmi_with_draft_options(engine: object) -> None:
    prediction = predict(SPEC, LAYOUT, ORDINARY, [1], engine=engine, optimization=SPECULATION)  # type: ignore[arg-type]
    assert prediction.levels


def test_the_predict_command_names_engine_and_optimization(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "predict", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge",
        "--input-tokens", "512", "--output-tokens", "128", "--concurrency", "1",
        "--optimization", "speculative-decoding", "--engine", "tgi:3.3.6",
    ]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --engine='tgi 3.3.6': cannot serve the speculative-decoding")


def test_recommend_skips_speculation_on_tgi_and_says_why() -> None:
    result = recommend(
        SPEC,
        ORDINARY,
        Slo(max_ms_per_token=100),
        Traffic(requests_per_second=1),
        search=SearchSpace(instance_types=[InstanceType.G5_2XLARGE], optimizations=[SPECULATION]),
        sizing=Sizing(engine=EngineRelease("tgi", "3.3.6")),
    )
    assert all(option.optimization is None for option in result.options)
    reasons = [r.reason for r in result.rejected]
    assert any(
        r.startswith("with speculative-decoding: the engine (tgi-2-3) cannot serve it")
        for r in reasons
    ), reasons


def _results_file(tmp_path: Path, **deployment: Any) -> Path:
    from tests.test_calibration import _results

    document = _results([1, 2, 4, 8])
    document["deployment"] = deployment
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


PREDICT_7B = [
    "predict", "--model", "llama-2-7b", "--instance-type", "ml.g5.2xlarge",
    "--input-tokens", "256", "--output-tokens", "128", "--concurrency", "1,2,4,8",
    "--format", "json",
]  # fmt: skip


@pytest.mark.parametrize(
    ("deployment", "flag", "says"),
    [
        ({"instance_type": "ml.g5.12xlarge"}, "--instance-type", "instance_type ml.g5.12xlarge"),
        ({"model": "llama-3-8b"}, "--model", "model llama-3-8b"),
        (
            {"engine": {"family": "lmi", "version": "0.31.0"}},
            "--engine",
            "engine lmi 0.31.0",
        ),
        ({"precision": "int4"}, "--dtype", "precision int4"),
    ],
)
def test_predict_refuses_results_of_another_deployment_as_calibrate_does(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    deployment: dict[str, Any],
    flag: str,
    says: str,
) -> None:
    path = _results_file(tmp_path, **deployment)
    argv = [*PREDICT_7B, "--calibration", str(path), "--engine", "tgi:3.3.6"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag}="), err
    assert f"{path} says {says}" in err
    assert "cdk-sagemaker-llm calibrate" in err


def test_predict_fits_results_that_agree_and_reads_them_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _results_file(
        tmp_path,
        model="meta-llama/Llama-2-7b-hf",  # another name of the preset
        instance_type="ml.g5.2xlarge",
        tensor_parallel_degree=1,
        precision="fp16",
    )
    reads: list[str] = []
    read_text = Path.read_text

    def counted(self: Path, *args: Any, **kwargs: Any) -> str:
        reads.append(self.name)
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    assert main([*PREDICT_7B, "--calibration", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert any("calibrated on results.json" in line for line in data["assumptions"])
    assert reads.count("results.json") == 1
    # A calibration file is read once too (it was parsed, then read again to load it).
    out = tmp_path / "calibration.json"
    assert main(["calibrate", str(path), "--out", str(out), "--engine", "tgi:3.3.6"]) == 0
    capsys.readouterr()
    reads.clear()
    assert main([*PREDICT_7B, "--calibration", str(out)]) == 0
    assert reads.count("calibration.json") == 1


def test_an_empty_concurrency_item_is_an_error_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [*PREDICT_7B[:-4], "--concurrency", "1,,2"]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --concurrency: '1,,2' has an empty item" in err


def test_an_unknown_engine_lists_the_profiles_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*PREDICT_7B, "--engine", "lmi-vllm-v9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --engine='lmi-vllm-v9': is neither an engine profile nor")
    assert "lmi-vllm-v1" in err and "lmi-tensorrt-llm" in err


@pytest.mark.parametrize("command", ["predict", "recommend", "calibrate"])
def test_an_engine_release_the_catalog_does_not_list_is_bad_input(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calibrate = [
        "calibrate", str(_results_file(tmp_path)), "--out", str(tmp_path / "c.json"),
        "--model", "llama-2-7b", "--instance-type", "ml.g5.2xlarge",
    ]  # fmt: skip
    argv = {"predict": PREDICT_7B, "recommend": RECOMMEND, "calibrate": calibrate}[command]
    assert main([*argv, "--engine", "tgi:9.9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --engine='tgi:9.9': tgi 9.9 is not a release the container ")
    # The releases that exist, closest first: TGI 3.3.6 is the newest below 9.9.
    assert "(closest first: 3.3.6, 3.3.4, 3.2.3, 3.2.0, 3.1.1, 3.0.1, 2.4.0," in err


def test_an_engine_release_is_offered_its_nearest_neighbours_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*PREDICT_7B, "--engine", "lmi:0.37.0"]) == 2
    assert "(closest first: 0.36.0, 0.38.0, 0.35.0," in capsys.readouterr().err
    assert main([*PREDICT_7B, "--engine", "tgi@3.3.1"]) == 2
    assert "(closest first: 3.3.4, 3.3.6, 3.2.3," in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["tgi:", "tgi@", "tgi: "])
def test_an_engine_with_an_empty_release_is_bad_input(
    engine: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*PREDICT_7B, "--engine", engine]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --engine={engine!r}: names no release after the separator")
    assert "(tgi:3.3.6), or tgi alone when the release is unknown" in err


def test_every_release_the_catalog_lists_is_an_engine() -> None:
    for family, line in DLC_LINES.items():
        for version in line.releases:
            parsed = parse_container_release("--engine", f"{family.value.upper()}:{version}")
            assert parsed == (family, version)


def test_a_family_without_a_catalog_line_takes_no_release() -> None:
    with pytest.raises(ValidationError, match="custom has no Deep Learning Container line"):
        parse_container_release("--engine", "custom:1.0")
    assert parse_container_release("--engine", "custom") == (ContainerFamily.CUSTOM, None)


@pytest.mark.parametrize(("engine", "profile"), [("TGI-1", "tgi-1"), ("TGI:1.4.5", "tgi-1")])
def test_engine_profiles_and_families_are_read_in_any_case(
    engine: str, profile: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*PREDICT_7B, "--engine", engine]) == 0
    assert json.loads(capsys.readouterr().out)["engine"] == profile


def test_calibrate_says_a_bad_instance_type_came_from_the_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _results_file(
        tmp_path, model="llama-2-7b", instance_type="ml.nope", engine={"family": "tgi"}
    )
    argv = ["calibrate", str(path), "--out", str(tmp_path / "c.json")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: deployment.instance_type='ml.nope'"), err
    assert main([*argv, "--instance-type", "ml.nope2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --instance-type='ml.nope2'"), err


@pytest.mark.parametrize("command", ["predict", "recommend", "size"])
def test_engine_help_names_every_shipped_profile(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "2000")  # argparse wraps help at the terminal's width
    with pytest.raises(SystemExit):
        main([command, "--help"])
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "--engine ENGINE " in line]
    assert f"(any case: {', '.join(PROFILE_NAMES)})" in line
