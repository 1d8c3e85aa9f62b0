"""``cdk-sagemaker-llm benchmark`` and ``report`` end to end against the simulator."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig
from cdk_sagemaker_llm.cli import main


@pytest.fixture(autouse=True)
def dummy_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.mark.parametrize("client", ["async", "threads"])
def test_benchmark_then_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], client: str
) -> None:
    out = tmp_path / "results.json"
    config = SimulatorConfig(response_format="tgi", max_batch=2, step_base_s=0.002)
    with Simulator(config) as sim:
        code = main(
            [
                "benchmark", "--endpoint-name", "ep", "--inference-component", "ic",
                "--region", "us-west-2", "--endpoint-url", sim.endpoint_url,
                "--concurrency", "4,1,2", "--input-tokens", "6", "--output-tokens", "8",
                "--requests-per-level", "6", "--stream", "--latency-slo-ms-per-token", "50",
                "--price-per-hour", "1.5", "--client", client, "--out", str(out),
            ]
        )  # fmt: skip
        truth = sim.truth()
    assert code == 0
    err = capsys.readouterr().err
    assert "concurrency 1: 6 requests" in err and "knee: concurrency" in err
    data = json.loads(out.read_text())
    assert data["payload"]["input_tokens"] == 6 and data["payload"]["stream"] is True
    assert [level["concurrency"] for level in data["levels"]] == [1, 2, 4]
    for level in data["levels"]:
        assert level["requests"] == 6 and level["errors"] == 0
        assert level["p50_ttft_s"] > 0 and level["p50_ms_per_token"] > 0
    assert set(data["knee"]) >= {"concurrency", "rule"}
    assert data["target"]["inference_component"] == "ic"
    assert data["cost"]["price_per_hour"] == 1.5
    assert len(truth) == 19  # warm-up + 3 levels of 6
    assert {r.inference_component for r in truth} == {"ic"}

    chart, markdown = tmp_path / "chart.svg", tmp_path / "report.md"
    assert main(["report", str(out), "--chart", str(chart), "--markdown", str(markdown)]) == 0
    svg = ET.parse(chart).getroot()
    assert svg.tag.endswith("svg")
    circles = svg.findall("{http://www.w3.org/2000/svg}circle")
    assert len(circles) == 3 + 1  # one per level, one around the knee
    text = markdown.read_text()
    assert text.count("\n| ") == 4  # header and three rows
    assert "p50 TTFT ms" in text and "Knee: concurrency" in text and "Cost per 1M" in text
    assert main(["report", str(out)]) == 0
    assert "| concurrency |" in capsys.readouterr().out


def test_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["benchmark", "--endpoint-name", "e", "--concurrency", "0", "--out", "x"])
    missing = tmp_path / "missing.json"
    assert main(["report", str(missing)]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--input-tokens", "--output-tokens", "--requests-per-level"])
def test_bad_numbers_name_their_flag(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["benchmark", "--endpoint-name", "e", "--out", "x", flag, "0"])
    assert f"argument {flag}: '0': must be at least 1" in capsys.readouterr().err


def test_no_region_names_the_flag(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    assert main(["benchmark", "--endpoint-name", "e", "--out", "x"]) == 2
    assert "pass --region" in capsys.readouterr().err


def test_no_credentials_gives_a_hint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    code = main(["benchmark", "--endpoint-name", "e", "--region", "us-west-2", "--out", "x"])
    assert code == 2
    err = capsys.readouterr().err
    assert "no AWS credentials found" in err and "AWS_ACCESS_KEY_ID" in err
