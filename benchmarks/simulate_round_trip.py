"""simulate -> benchmark -> calibrate on the loopback simulator serving a model from the engine
simulation (``cdk-sagemaker-llm simulate --model``), in real time: what the benchmark measures
on the wall clock against what the scheduler simulation predicts for the same profile and
workload (``predict --simulate-scheduler``), and what ``calibrate`` fits from it. The gap is
the loopback's own cost (HTTP, JSON, the client, the CPU's other work), which the virtual
clock of the truth leaves out (``tests/test_simulated_engine.py`` compares that one).

    .venv/bin/python benchmarks/simulate_round_trip.py
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-m", "cdk_sagemaker_llm.cli"]


def main() -> int:
    """Run the loop once and print the figures (Markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", default="meta-llama/Llama-3.1-8B-Instruct")
    parser.add_argument("--instance-type", default="ml.g5.2xlarge")
    parser.add_argument("--engine", default="lmi-vllm-v1", help="the engine profile served")
    parser.add_argument(
        "--container", default="lmi:0.33.0", help="FAMILY:VERSION calibrate keys the fit by"
    )
    parser.add_argument("--input-tokens", type=int, default=256)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--requests-per-level", type=int, default=16)
    args = parser.parse_args()
    layout = ["--model", args.model, "--instance-type", args.instance_type]
    sizes = ["--input-tokens", str(args.input_tokens), "--output-tokens", str(args.output_tokens)]
    with tempfile.TemporaryDirectory() as folder:
        results = Path(folder) / "results.json"
        server = subprocess.Popen(
            [*CLI, "simulate", "--port", "0", *layout, "--engine", args.engine, *sizes],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            env = {**os.environ, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
            bench = ["--endpoint-name", "ep", "--endpoint-url", url, "--region", "us-east-1"]
            level = ["--concurrency", args.concurrency, "--requests-per-level"]
            subprocess.run(
                [
                    *CLI,
                    "benchmark",
                    *bench,
                    *level,
                    str(args.requests_per_level),
                    *sizes,
                    "--out",
                    str(results),
                ],
                check=True,
                env=env,
                capture_output=True,
                timeout=600,
            )
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        measured = json.loads(results.read_text())
        predicted = json.loads(
            subprocess.run(
                [
                    *CLI,
                    "predict",
                    *layout,
                    *sizes,
                    "--concurrency",
                    args.concurrency,
                    "--engine",
                    args.engine,
                    "--simulate-scheduler",
                    "--format",
                    "json",
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        calibrated = subprocess.run(
            [
                *CLI,
                "calibrate",
                str(results),
                "--out",
                str(Path(folder) / "c.json"),
                *layout,
                "--tensor-parallel-degree",
                "1",
                "--copies",
                "1",
                "--engine",
                args.container,
            ],
            capture_output=True,
            text=True,
        )
    _print(measured, predicted)
    print(f"\ncalibrate: {calibrated.stdout.strip() or calibrated.stderr.strip()}")
    return 0


def _print(measured: dict[str, Any], predicted: dict[str, Any]) -> None:
    levels = {level["concurrency"]: level for level in predicted["levels"]}
    print("| concurrency | ms/token measured | simulated | tokens/s measured | simulated |")
    print("|---:|---:|---:|---:|---:|")
    for level in measured["levels"]:
        want = levels[level["concurrency"]]
        print(
            f"| {level['concurrency']} | {level['p50_ms_per_token']:.1f} | "
            f"{want['ms_per_token']:.1f} | {level['output_tokens_per_s']:.0f} | "
            f"{want['tokens_per_s']:.0f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
