"""Measurements close the loop: a deploy-time benchmark's results.json, as the
benchmark Lambda writes it, -> ``cdk-sagemaker-llm calibrate`` (local path or s3:// URI) -> a
calibration file -> ``recommend``/``predict --calibration`` change their answer in the
measured direction; another model transfers only engine/hardware-level factors and warns;
another engine is an error."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cdk_sagemaker_llm.benchmarking import LevelResult
from cdk_sagemaker_llm.benchmarking._clock import now
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.lambdas.benchmark.results import build_result, figures_of, write_results
from cdk_sagemaker_llm.lambdas.benchmark.run_config import check_run
from cdk_sagemaker_llm.lambdas.runtime_support import Budget
from cdk_sagemaker_llm.planning.calibration import (
    CALIBRATION_FORMAT,
    CALIBRATION_VERSION,
    Calibration,
    EngineRelease,
)
from cdk_sagemaker_llm.planning.efficiency import DEFAULT_EFFICIENCY, Efficiency, efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
from cdk_sagemaker_llm.planning.performance import CopyModel, Layout, Workload, copy_limits, predict
from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import SearchSpace, Sizing

SPEC = ModelSpec.LLAMA_2_7B
G5 = InstanceType.G5_2XLARGE
LOAD = Workload(256, 128)
SLOW = Efficiency(
    memory_bandwidth=0.45, decode_compute=0.4, prefill_compute=0.4, step_overhead_ms=8.0
)
"""A server slower than the uncalibrated model (75 % bandwidth, 2 ms per step)."""
DEPLOYMENT = {
    "Model": "llama-2-7b",
    "EngineFamily": "tgi",
    "EngineVersion": "3.3.6",
    "InstanceType": "ml.g5.2xlarge",
    "TensorParallelDegree": "1",  # CloudFormation sends numbers as strings
    "CopiesPerInstance": 1,
    "Precision": "fp16",
}
BUCKET = "results"


@pytest.fixture(autouse=True)
def dummy_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def _levels(efficiency: Efficiency, concurrencies: list[int]) -> list[dict[str, Any]]:
    """The aggregated level records of a server that behaves like the model with
    ``efficiency`` (what a real endpoint with those efficiencies would measure)."""
    model = CopyModel(SPEC, G5, 1, Precision.FP16, LOAD, efficiency)
    limits, _ = copy_limits(model)
    records = []
    for c in concurrencies:
        at = model.level(c, limits.capacity)
        ms, ttft, e2e, tput = at.ms_per_token, at.ttft_ms, at.e2e_ms, at.tokens_per_s
        level = LevelResult(
            concurrency=c, requests=4 * c, errors=0, errors_by_kind={}, error_rate=0.0,
            duration_s=4 * e2e / 1000, p50_latency_s=e2e / 1000, p90_latency_s=e2e / 1000,
            p99_latency_s=e2e / 1000, p50_ms_per_token=ms, p90_ms_per_token=ms,
            output_tokens=4 * c * LOAD.output_tokens, output_tokens_per_s=tput,
            requests_per_s=tput / LOAD.output_tokens, p50_ttft_s=ttft / 1000,
        )  # fmt: skip
        records.append(
            {
                "Level": level.to_dict(),
                "Distribution": {"concurrency": c, "workers": 0},
                "FirstError": None,
            }
        )
    return records


def _write(s3: Any, deployment: dict[str, Any] | None) -> str:
    """results.json written by the benchmark Lambda's own writer; returns its S3 URI."""
    concurrencies = [1, 2, 4, 8, 16]
    raw: dict[str, Any] = {
        "Name": "bench-1234abcd-abcdef",
        "HandleUrl": "https://cloudformation-waitcondition-us-east-1.s3.amazonaws.com/h?sig=1",
        "Deadline": now() + 3600,
        "StartedAt": now(),
        "Bucket": BUCKET,
        "Prefix": "endpoint-benchmarks/bench-1234abcd-abcdef/",
        "EndpointName": "ep",
        "InferenceComponentName": "ic-1",
        "InputTokens": LOAD.input_tokens,
        "OutputTokens": LOAD.output_tokens,
        "Stream": True,
        "Format": "tgi",
        "Concurrencies": concurrencies,
        "RequestsPerLevel": 0,
        "WorkerCapacity": 256,
        "Copies": 1,
        "Rule": {"MinGainPerDoubling": 0.1},
        "Gate": {},
    }
    if deployment is not None:
        raw["Deployment"] = deployment
    run = check_run(raw)
    levels = _levels(SLOW, concurrencies)
    result = build_result(run, levels, now())
    figures = figures_of(run, result)
    write_results(run, levels, result, figures, [], s3=s3, budget=Budget())
    return str(figures["ResultsS3Uri"])


@pytest.fixture
def s3() -> Any:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def _calibrate_file(
    tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str], *extra: str
) -> Path:
    uri = _write(s3, DEPLOYMENT)
    out = tmp_path / "calibration.json"
    assert main(["calibrate", uri, "--out", str(out), *extra]) == 0
    captured = capsys.readouterr()
    assert f"wrote {out}" in captured.out
    assert "warning: decode compute efficiency 0.2 is the lowest value" in captured.err
    return out


def test_results_from_s3_become_a_versioned_calibration_file(
    tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str], api_contract: list[str]
) -> None:
    out = _calibrate_file(tmp_path, s3, capsys)
    assert "s3:GetObject" in api_contract
    document = json.loads(out.read_text())
    assert document["format"] == CALIBRATION_FORMAT
    assert document["version"] == CALIBRATION_VERSION
    assert document["engine"] == {"family": "tgi", "version": "3.3.6"}
    assert document["hardware"] == {"instance_type": "ml.g5.2xlarge", "accelerator": "NVIDIA A10G"}
    assert document["tensor_parallel_degree"] == 1
    assert document["model"]["name"] == "llama-2-7b"
    assert document["workload"] == {"input_tokens": 256, "output_tokens": 128}
    assert document["source"].startswith("s3://results/endpoint-benchmarks/")
    calibration = Calibration.from_file(out)
    assert calibration.to_dict() == document  # round trip
    # The fit recovers the slower server.
    assert calibration.efficiency.memory_bandwidth == pytest.approx(0.45, abs=0.03)
    assert calibration.efficiency.step_overhead_ms == pytest.approx(8.0, abs=1.0)
    # Decode never turns compute-bound at these levels: its efficiency is not pinned, and
    # the fit says so instead of passing the grid's end off as a measurement.
    assert calibration.fit_notes() == [
        "decode compute efficiency 0.2 is the lowest value the fit tries: these levels may "
        "not constrain it, or the server is outside the model's range there"
    ]
    # The run folder works too, and a local copy gives the same factors.
    folder = tmp_path / "folder.json"
    assert main(["calibrate", "s3://results/endpoint-benchmarks/bench-1234abcd-abcdef/",
                 "--out", str(folder)]) == 0  # fmt: skip
    local = tmp_path / "results.json"
    key = "endpoint-benchmarks/bench-1234abcd-abcdef/results.json"
    local.write_bytes(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert main(["calibrate", str(local), "--out", str(tmp_path / "local.json")]) == 0
    again = Calibration.from_file(tmp_path / "local.json")
    assert again.efficiency == calibration.efficiency


def test_recommend_changes_its_answer_in_the_measured_direction(
    tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _calibrate_file(tmp_path, s3, capsys)
    argv = [
        "recommend", "--model", "llama-2-7b", "--input-tokens", "256", "--output-tokens", "128",
        "--max-ms-per-token", "100", "--requests-per-second", "4", "--instance-types",
        "ml.g5.2xlarge", "--format", "json", "--risk", "median",  # the calibration's effect
    ]  # fmt: skip
    assert main(argv) == 0
    uncalibrated = json.loads(capsys.readouterr().out)["options"][0]
    assert main([*argv, "--calibration", str(out), "--engine", "tgi:3.3.4"]) == 0
    calibrated = json.loads(capsys.readouterr().out)
    option = calibrated["options"][0]
    # Measured slower than modeled: more instances for the same traffic and SLO.
    assert option["instance_count"] > uncalibrated["instance_count"]
    assert option["predicted"]["ms_per_token"] > uncalibrated["predicted"]["ms_per_token"]
    assert any("calibrated on s3://results/" in line for line in calibrated["assumptions"])
    assert any("tgi 3.3.6, applied to tgi 3.3.4" in line for line in calibrated["assumptions"])
    # predict agrees: slower than the uncalibrated figure at the same layout.
    predict_argv = [
        "predict", "--model", "llama-2-7b", "--instance-type", "ml.g5.2xlarge",
        "--input-tokens", "256", "--output-tokens", "128", "--concurrency", "8",
        "--format", "json",
    ]  # fmt: skip
    assert main(predict_argv) == 0
    before = json.loads(capsys.readouterr().out)["levels"][0]["ms_per_token"]
    assert main([*predict_argv, "--calibration", str(out)]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["levels"][0]["ms_per_token"] > before * 1.3
    assert any("engine assumed to be the calibrated tgi 3.3.6" in a for a in after["assumptions"])


def test_another_model_transfers_only_engine_and_hardware_factors_and_warns(
    tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _calibrate_file(tmp_path, s3, capsys)
    argv = [
        "predict", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge",
        "--input-tokens", "256", "--output-tokens", "128", "--concurrency", "4",
        "--calibration", str(out), "--format", "json",
    ]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    notes = " / ".join(json.loads(captured.out)["assumptions"])
    assert "calibrated on llama-2-7b, applied to llama-3-8b: only the engine- and " in notes
    assert "hardware-level factors transfer" in notes
    # Said on stderr too, where a script reading the JSON still shows it.
    assert "warning: calibrated on llama-2-7b, applied to llama-3-8b" in captured.err
    recommend_argv = [
        "recommend", "--model", "llama-3-8b", "--input-tokens", "256", "--output-tokens",
        "128", "--max-ms-per-token", "100", "--concurrency", "4", "--instance-types",
        "ml.g5.2xlarge", "--calibration", str(out), "--format", "json", "--risk", "median",
    ]  # fmt: skip
    assert main(recommend_argv) == 0
    assert "warning: calibrated on llama-2-7b, applied to llama-3-8b" in capsys.readouterr().err
    # In Python: the factors that transfer, and on other hardware only the engine's overhead.
    calibration = Calibration.from_file(out)
    other = calibration.applied_to(ModelSpec.LLAMA_3_8B, G5, engine=EngineRelease("tgi", "3.3.6"))
    measured, tp = calibration.efficiency, calibration.tensor_parallel_degree
    assert other.efficiency.memory_bandwidth == measured.memory_bandwidth
    # The measured overhead at the calibrated layers and TP, grown as the engine profile grows.
    assert other.efficiency.step_overhead_s(SPEC.layers, tp) == pytest.approx(
        measured.step_overhead_s(SPEC.layers, tp)
    )
    assert len(other.warnings) == 1
    assert calibration.applied_to(SPEC, G5).efficiency == measured  # what was measured
    elsewhere = calibration.applied_to(SPEC, InstanceType.G6E_XLARGE)
    assert elsewhere.efficiency.step_overhead_s(SPEC.layers, tp) == pytest.approx(
        measured.step_overhead_s(SPEC.layers, tp)
    )
    # Not transferred: the target engine's profile (tgi 3.3.6 -> tgi-2-3), not the generic one.
    tgi = efficiency_of(engine_profile("tgi-2-3"))
    assert elsewhere.efficiency.decode_compute == tgi.decode_compute
    assert elsewhere.efficiency.prefill_compute == tgi.prefill_compute
    assert tgi.decode_compute != DEFAULT_EFFICIENCY.decode_compute
    # ... and the overhead grows with TP as that profile's does.
    assert elsewhere.efficiency.step_overhead_s(
        SPEC.layers, 4
    ) > elsewhere.efficiency.step_overhead_s(SPEC.layers, 1)
    assert any("only the engine-level per-step overhead" in w for w in elsewhere.warnings)
    prediction = predict(ModelSpec.LLAMA_3_8B, Layout(G5, 1, 1), LOAD, [4], calibration=other)
    assert prediction.extrapolated
    # recommend states the transfer too.
    result = recommend(
        ModelSpec.LLAMA_3_8B,
        LOAD,
        Slo(max_ms_per_token=100),
        Traffic(concurrency=4),
        search=SearchSpace(instance_types=[G5]),
        sizing=Sizing(calibration=calibration),
    )
    assert any("applied to llama-3-8b" in line for line in result.assumptions)


def test_another_engine_is_an_error_naming_the_file_the_engines_and_the_fix(
    tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _calibrate_file(tmp_path, s3, capsys)
    base = [
        "recommend", "--model", "llama-2-7b", "--input-tokens", "256", "--output-tokens", "128",
        "--max-ms-per-token", "100", "--concurrency", "4", "--instance-types", "ml.g5.2xlarge",
        "--calibration", str(out),
    ]  # fmt: skip
    for engine in ("lmi:0.31.0", "tgi:2.4.0"):  # another family; another major release
        assert main([*base, "--engine", engine]) == 2
        err = capsys.readouterr().err
        assert f"calibration='{out}'" in err  # the calibration file, not its results
        assert "measures tgi 3.3.6, but the target runs" in err
        assert "Fix: benchmark the deployment on" in err
    calibration = Calibration.from_file(out)
    with pytest.raises(ValidationError, match=r"lmi 0\.31\.0"):
        calibration.applied_to(SPEC, G5, engine=EngineRelease("lmi", "0.31.0"))
    with pytest.raises(ValidationError, match=r"lmi 0\.31\.0"):
        recommend(
            SPEC,
            LOAD,
            Slo(max_ms_per_token=100),
            Traffic(concurrency=4),
            search=SearchSpace(instance_types=[G5]),
            sizing=Sizing(calibration=calibration, engine=EngineRelease("lmi", "0.31.0")),
        )


def test_engine_compatibility_follows_caret_ranges() -> None:
    assert EngineRelease("tgi", "3.3.6").compatible_with(EngineRelease("tgi", "3.0.0"))
    assert not EngineRelease("tgi", "3.3.6").compatible_with(EngineRelease("tgi", "2.4.0"))
    assert EngineRelease("lmi", "0.31.0").compatible_with(EngineRelease("lmi", "0.31.2"))
    assert not EngineRelease("lmi", "0.31.0").compatible_with(EngineRelease("lmi", "0.32.0"))
    assert EngineRelease("lmi").compatible_with(EngineRelease("lmi", "0.31.0"))  # version unknown
    assert EngineRelease.parse("TGI@3.3.6") == EngineRelease("tgi", "3.3.6")
    with pytest.raises(ValidationError, match=r"engine\.family"):
        EngineRelease("vllm-ish")


@pytest.mark.parametrize("text", ["tgi:9.9", "tgi:", "lmi@"])
def test_an_engine_release_the_catalog_does_not_list_is_refused_by_the_library_too(
    text: str,
) -> None:
    with pytest.raises(ValidationError, match=r"engine.*(not a release|names no release)"):
        EngineRelease.parse(text)


def test_results_without_the_deployment_need_the_flags(
    tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = _write(s3, None)
    out = tmp_path / "calibration.json"
    assert main(["calibrate", uri, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--model, --instance-type, --engine" in err
    assert "keyed by engine, hardware, degree and model" in err
    flags = ["--model", "llama-2-7b", "--instance-type", "ml.g5.2xlarge", "--engine", "tgi:3.3.6"]
    assert main(["calibrate", uri, "--out", str(out), *flags]) == 0
    assert Calibration.from_file(out).engine == EngineRelease("tgi", "3.3.6")
    # A flag contradicting the results' deployment section is an error.
    stated = _write(s3, DEPLOYMENT)
    assert main(["calibrate", stated, "--out", str(out), "--model", "llama-3-8b"]) == 2
    assert "says model llama-2-7b" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("s3://results/missing/results.json", "NoSuchKey"),
        ("s3://results", "s3://BUCKET/KEY"),
    ],
)
def test_unreadable_results_are_one_line_errors(
    source: str, message: str, tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", source, "--out", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_calibration_files_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "not-a-calibration.json"
    results.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ValidationError, match="is not a calibration file"):
        Calibration.from_file(results)
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({"format": CALIBRATION_FORMAT, "version": 99}))
    with pytest.raises(ValidationError, match="version"):
        Calibration.from_file(newer)
    argv = [
        "recommend", "--model", "llama-2-7b", "--input-tokens", "256", "--output-tokens", "128",
        "--max-ms-per-token", "100", "--concurrency", "4", "--instance-types", "ml.g5.2xlarge",
    ]  # fmt: skip
    assert main([*argv, "--calibration", str(results)]) == 2
    assert "--calibration" in capsys.readouterr().err


def test_a_custom_model_benchmarked_by_the_stack_calibrates_without_model(
    tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run carries the model's architecture (EndpointBenchmark's Run.Deployment.ModelSpec,
    numbers as CloudFormation sends them: strings); results.json's deployment section has it
    typed again, and `calibrate` fits a ModelSpec.custom model with no --model."""
    custom = ModelSpec.custom(
        "my-7b",
        parameters=SPEC.parameters,
        layers=SPEC.layers,
        attention_heads=SPEC.attention_heads,
        kv_heads=SPEC.kv_heads,
        head_dim=SPEC.head_dim,
        max_context=SPEC.max_context,
    )
    as_sent = {key: str(value) for key, value in custom.to_metadata().items()}
    uri = _write(s3, {**DEPLOYMENT, "Model": "my-7b", "ModelSpec": as_sent})
    key = uri.removeprefix(f"s3://{BUCKET}/")
    results = json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert ModelSpec.from_metadata(results["deployment"]["model_spec"]) == custom
    assert results["deployment"]["model_spec"]["layers"] == SPEC.layers  # typed again
    out = tmp_path / "calibration.json"
    assert main(["calibrate", uri, "--out", str(out)]) == 0
    calibration = Calibration.from_file(out)
    assert (calibration.model, calibration.layers) == ("my-7b", SPEC.layers)
    assert calibration.efficiency.memory_bandwidth == pytest.approx(0.45, abs=0.03)


@pytest.mark.parametrize(
    ("deployment", "message"),
    [
        ({"ModelSpec": {"name": "m", "layers": "0"}}, "Run.Deployment.ModelSpec.layers"),
        ({"ModelSpec": {"name": "m", "layers": 2}}, "Run.Deployment.ModelSpec: missing"),
        ({"ModelSpec": {"name": "m", "vocab": 2}}, "unknown properties"),
        ({"ModelSpec": "llama"}, "Run.Deployment.ModelSpec: expected an object"),
        ({"Injected": "x"}, "unknown properties"),
        ({"TensorParallelDegree": "0"}, "Run.Deployment.TensorParallelDegree"),
        ({"Model": 7}, "Run.Deployment.Model"),
        ("tgi", "Run.Deployment: expected an object"),
    ],
)
def test_a_malformed_deployment_in_the_run_is_rejected_with_the_field(
    deployment: Any, message: str, s3: Any
) -> None:
    from cdk_sagemaker_llm.lambdas.benchmark.run_names import EventError

    with pytest.raises(EventError, match=message):
        _write(s3, deployment)


FAST = Efficiency(
    memory_bandwidth=0.98, decode_compute=0.7, prefill_compute=0.8, step_overhead_ms=0.2
)
"""A server faster than the engine profile (tgi-2-3: 85 % bandwidth, 0.02 ms per layer and
0.1 ms per sequence per step)."""


def test_a_faster_measurement_moves_recommend_the_other_way_on_the_same_engine(
    tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The round trip in both directions, against the uncalibrated answer *of the same engine*
    (tgi 3.3: the tgi-2-3 profile), so that the calibration alone moves the answer: a server
    measured faster than the profile needs fewer instances, a slower one more."""
    argv = [
        "recommend", "--model", "llama-2-7b", "--input-tokens", "256", "--output-tokens", "128",
        "--max-ms-per-token", "100", "--requests-per-second", "32", "--instance-types",
        "ml.g5.2xlarge", "--format", "json", "--risk", "median", "--engine", "tgi:3.3.6",
        "--max-instance-count", "64",
    ]  # fmt: skip
    assert main(argv) == 0
    uncalibrated = json.loads(capsys.readouterr().out)["options"][0]
    counts = {}
    for name, measured in (("fast", FAST), ("slow", SLOW)):
        monkeypatch.setattr(sys.modules[__name__], "SLOW", measured)  # what _write measures
        uri = _write(s3, DEPLOYMENT)
        out = tmp_path / f"{name}.json"
        assert main(["calibrate", uri, "--out", str(out)]) == 0
        capsys.readouterr()
        assert main([*argv, "--calibration", str(out)]) == 0
        counts[name] = json.loads(capsys.readouterr().out)["options"][0]["instance_count"]
    assert counts["fast"] < uncalibrated["instance_count"] < counts["slow"], (
        counts,
        uncalibrated["instance_count"],
    )


def test_an_open_loop_sweep_is_refused_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A request-rate sweep's levels carry the peak in flight as their concurrency: fitting
    them as closed-loop levels would calibrate to the wrong load."""
    from cdk_sagemaker_llm.planning.calibration_fit import measured_levels

    levels = [record["Level"] for record in _levels(SLOW, [1, 2, 4])]
    for record in levels:
        record["target_rate_per_s"] = 5.0
    rate = {"mode": "rate", "open_loop": {"arrival": "poisson"}, "payload": {}, "levels": levels}
    path = tmp_path / "rate.json"
    path.write_text(json.dumps(rate))
    out = tmp_path / "c.json"
    flags = ["--model", "llama-2-7b", "--instance-type", "ml.g5.2xlarge", "--engine", "tgi:3.3.6"]
    assert main(["calibrate", str(path), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "open-loop sweep" in err and "needs a concurrency sweep" in err
    assert "Traceback" not in err and not out.exists()
    with pytest.raises(ValidationError, match=r"results\.mode"):
        measured_levels(rate)
    assert len(measured_levels({**rate, "mode": "concurrency"})) == 3  # the same levels, closed


def test_the_fit_never_ends_worse_than_the_uncalibrated_factors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Levels measured from a server that behaves exactly as the uncalibrated model predicts
    (the engine profile's factors, which the fit's grids cannot express: per-layer and
    per-sequence costs): the search ended farther from them than where it could have stayed."""
    from cdk_sagemaker_llm.planning.calibration_fit import calibrate
    from cdk_sagemaker_llm.planning.engine_profiles import resolve_profile

    engine = EngineRelease("tgi", "3.3.6")
    uncalibrated = efficiency_of(resolve_profile(engine))
    levels = [record["Level"] for record in _levels(uncalibrated, [1, 2, 4, 8, 16])]
    document = {
        "payload": {"input_tokens": LOAD.input_tokens, "output_tokens": LOAD.output_tokens},
        "levels": levels,
        "deployment": {"instance_type": "ml.g5.2xlarge"},
    }
    layout = Layout(G5, 1, 1, 1)
    calibration = calibrate(document, SPEC, layout, engine=engine)
    assert calibration.efficiency == uncalibrated
    assert calibration.rms_error < 1e-9
    path = tmp_path / "exact.json"
    path.write_text(json.dumps(document))
    out = tmp_path / "c.json"
    flags = ["--model", SPEC.name, "--engine", "tgi:3.3.6", "--out", str(out)]
    assert main(["calibrate", str(path), *flags]) == 0
    assert "the calibration keeps the profile's" in capsys.readouterr().err


def test_the_share_of_the_memory_the_benchmarked_engine_took_is_fitted_and_checked(
    tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--engine-memory-share``: the share the benchmarked container took (its results do not
    state it) times the fit's KV cache. A share in which the benchmarked model could not have
    started (Llama 2 7B on one A10G at TGI's ``CUDA_MEMORY_FRACTION`` 0.5: 12 GB for 13.5 GB
    of weights) is an error naming the flag; it was fitted at 220 % rms error before."""
    uri = _write(s3, DEPLOYMENT)
    out = tmp_path / "shared.json"
    argv = ["calibrate", uri, "--out", str(out)]
    assert main([*argv, "--engine-memory-share", "0.5"]) == 2
    error = capsys.readouterr().err
    assert "--engine-memory-share" in error.split(":")[1]  # the props at fault name the flag
    assert "unallocated as --engine-memory-share=0.5 sets" in error
    assert "the share of the memory its engine took (--engine-memory-share=0.5)" in error
    assert not out.exists()
    assert main([*argv, "--engine-memory-share", "1"]) == 0  # TGI's default: the same fit
    capsys.readouterr()
    default = Calibration.from_file(_calibrate_file(tmp_path, s3, capsys))
    assert Calibration.from_file(out).efficiency == default.efficiency


def test_the_share_the_results_state_is_the_one_fitted(
    tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A deploy-time benchmark states the share its model's environment gave the engine
    (``deployment.engine_memory_share``): ``calibrate`` fits with it without the flag, names
    it where the layout cannot hold a request in it, and refuses a flag that contradicts it."""
    uri = _write(s3, {**DEPLOYMENT, "EngineMemoryShare": "0.5"})
    out = tmp_path / "stated.json"
    assert main(["calibrate", uri, "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "unallocated as s3://results/" in error and "engine_memory_share=0.5 sets" in error
    assert main(["calibrate", uri, "--out", str(out), "--engine-memory-share", "0.7"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: --engine-memory-share=0.7:")
    assert "says engine_memory_share 0.5" in error
    assert not out.exists()


def test_the_kv_cache_precision_the_results_state_is_the_one_fitted(
    tmp_path: Path, s3: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A deploy-time benchmark of a server with an FP8 KV cache states it
    (``deployment.kv_cache_precision``): ``calibrate`` fits and records it without
    ``--kv-cache-precision`` (it fitted the activation precision's cache before, unless the
    flag was passed), and the flag agreeing with it is accepted."""
    fp8_server = {**DEPLOYMENT, "InstanceType": "ml.g6e.xlarge", "KvCachePrecision": "fp8"}
    uri = _write(s3, fp8_server)
    out = tmp_path / "fp8.json"
    assert main(["calibrate", uri, "--out", str(out)]) == 0
    assert json.loads(out.read_text())["kv_cache_precision"] == "fp8"
    again = tmp_path / "again.json"
    assert main(["calibrate", uri, "--out", str(again), "--kv-cache-precision", "fp8"]) == 0
    assert Calibration.from_file(again).efficiency == Calibration.from_file(out).efficiency
    capsys.readouterr()
