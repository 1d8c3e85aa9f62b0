"""The loop a new user runs: a server measured by ``benchmark`` over loopback HTTP (the
``simulate`` command, tuned to decode like Llama 3 8B on one L40S, about 30-40 ms/token),
``calibrate``, then ``recommend`` at the default risk. The measurement must win: the measured
instance type stays, sized within one instance of what the measured levels need, with the
single-request prediction within 10% of the measurement."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

from test_simulate_command import CLI, CREDENTIALS, _environment, simulate

SLO_MS_PER_TOKEN = 50.0
RATE = 20.0
OUTPUT_TOKENS = 32
SERVER = [
    "--port", "0", "--container", "lmi", "--max-batch", "64", "--step-base-s", "0.03",
    "--step-per-sequence-s", "0.0004", "--prefill-per-input-token-s", "0.00002",
]  # fmt: skip
"""One decode step of 30 ms plus 0.4 ms per sequence in the batch: an L40S-like Llama 3 8B."""


def _run(*argv: str, cwd: Path) -> str:
    ran = subprocess.run(
        [*CLI, *argv], capture_output=True, text=True, timeout=600, cwd=cwd,
        env={**_environment(), **CREDENTIALS},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def _measured_need(levels: list[dict[str, Any]]) -> int:
    """Copies the measured levels need for ``RATE`` within the SLO: at the busiest level whose
    p50 ms/token meets it, each copy serves its measured requests/s."""
    within = [level for level in levels if level["p50_ms_per_token"] <= SLO_MS_PER_TOKEN]
    best = max(within, key=lambda level: level["output_tokens_per_s"])
    return math.ceil(RATE / (best["output_tokens_per_s"] / OUTPUT_TOKENS))


def test_simulate_benchmark_calibrate_recommend_keeps_the_measured_instance(
    tmp_path: Path,
) -> None:
    with simulate(*SERVER) as url:
        _run(
            "benchmark", "--endpoint-name", "ep", "--endpoint-url", url, "--region", "us-east-1",
            "--concurrency", "1,2,4,8,16", "--input-tokens", "512", "--output-tokens",
            str(OUTPUT_TOKENS), "--requests-per-level", "16", "--stream", "--out", "results.json",
            cwd=tmp_path,
        )  # fmt: skip
    levels = json.loads((tmp_path / "results.json").read_text())["levels"]
    _run(
        "calibrate", "results.json", "--out", "calibration.json", "--model", "llama-3-8b",
        "--instance-type", "ml.g6e.xlarge", "--engine", "lmi:0.31.0", cwd=tmp_path,
    )  # fmt: skip
    workload = ["--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "32"]
    calibrated = ["--calibration", "calibration.json", "--engine", "lmi:0.31.0"]
    recommended = _run(
        "recommend", *workload, "--max-ms-per-token", str(SLO_MS_PER_TOKEN),
        "--requests-per-second", str(RATE), "--instance-types",
        "ml.g6e.xlarge,ml.g6e.2xlarge,ml.g5.2xlarge", *calibrated, "--format", "json",
        cwd=tmp_path,
    )  # fmt: skip
    answer = json.loads(recommended)
    option = answer["options"][0]
    assert option["risk"] == "pessimistic"  # the default
    assert option["instance_type"] == "ml.g6e.xlarge"
    assert abs(option["instance_count"] - _measured_need(levels)) <= 1
    assert option["instance_count"] <= option["max_instance_count"]
    assert option["band"]["basis"].startswith("from the calibration")
    single = _run(
        "predict", *workload, "--instance-type", "ml.g6e.xlarge", "--concurrency", "1",
        *calibrated, "--format", "json", cwd=tmp_path,
    )  # fmt: skip
    predicted = json.loads(single)["levels"][0]["ms_per_token"]
    measured = levels[0]["p50_ms_per_token"]
    assert abs(predicted / measured - 1) <= 0.10
