"""The benchmark's region: ``--region``, ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the profile,
in that order (as the AWS CLI reads them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdk_sagemaker_llm.benchmarking.invokers import AsyncInvoker, BotoInvoker
from cdk_sagemaker_llm.benchmarking.region import resolve_region
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig
from cdk_sagemaker_llm.cli import main


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No region anywhere but where a test puts one; dummy credentials."""
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    path = tmp_path / "config"
    path.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(path))
    return path


def test_the_aws_cli_order(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_region() is None
    config_file.write_text("[default]\nregion = eu-west-1\n")
    assert resolve_region() == "eu-west-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    assert resolve_region() == "us-west-2"
    monkeypatch.setenv("AWS_REGION", "us-east-1")  # overrides AWS_DEFAULT_REGION (the bug)
    assert resolve_region() == "us-east-1"
    assert resolve_region("ap-south-1") == "ap-south-1"


def test_aws_region_alone_reaches_both_invokers(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    assert AsyncInvoker("e").region == "us-east-1"
    boto = BotoInvoker("e", endpoint_url="http://127.0.0.1:9")
    boto._client(1)
    assert boto.region == "us-east-1" and boto.client.meta.region_name == "us-east-1"


def test_benchmark_runs_with_only_aws_region(
    config_file: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    out = tmp_path / "results.json"
    with Simulator(SimulatorConfig(response_format="tgi", step_base_s=0.001)) as sim:
        code = main(
            [
                "benchmark", "--endpoint-name", "ep", "--endpoint-url", sim.endpoint_url,
                "--concurrency", "1", "--requests-per-level", "2", "--output-tokens", "4",
                "--out", str(out),
            ]
        )  # fmt: skip
    assert code == 0
    assert json.loads(out.read_text())["target"]["region"] == "us-east-1"


def test_no_region_says_what_is_read(config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["benchmark", "--endpoint-name", "e", "--out", "x"]) == 2
    err = capsys.readouterr().err
    assert "--region, AWS_REGION, AWS_DEFAULT_REGION, or the profile's region" in err
    with pytest.raises(ValueError, match="AWS_REGION, AWS_DEFAULT_REGION"):
        AsyncInvoker("e")
