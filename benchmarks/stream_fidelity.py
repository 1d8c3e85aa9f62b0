"""Streaming fidelity: the benchmark's TTFT and ITL against the strict simulator's truth.

    .venv/bin/python benchmarks/stream_fidelity.py [--concurrency 64] [--requests 256]

For each request schema (``lmi``, ``tgi``, ``messages`` on both simulated containers) it starts
the loopback simulator in its own process, runs ``cdk-sagemaker-llm benchmark --stream
--format F`` at one concurrency level, and prints the benchmark's p50/p90 TTFT and p50 ITL
next to the simulator's server-side truth for the same requests, with the relative error.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("AWS_ACCESS_KEY_ID", "dummy")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "dummy")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cdk_sagemaker_llm.benchmarking import percentile
from cdk_sagemaker_llm.benchmarking.simulator import fetch_truth, reset_truth
from cdk_sagemaker_llm.cli import main as cli

CASES = [("lmi", "lmi"), ("tgi", "tgi"), ("lmi", "messages"), ("tgi", "messages")]


def run(container: str, fmt: str, concurrency: int, requests: int) -> dict[str, float]:
    """One level against a simulator process; measured and true p50/p90 TTFT and p50 ITL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "cdk_sagemaker_llm.benchmarking.simulator_cli",
         "--response-format", container, "--max-batch", "32", "--step-base-s", "0.02",
         "--step-per-sequence-s", "0.0005"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "results.json"
            reset_truth(url)
            code = cli(
                ["benchmark", "--endpoint-name", "ep", "--region", "us-east-1",
                 "--endpoint-url", url, "--concurrency", str(concurrency), "--input-tokens",
                 "64", "--output-tokens", "32", "--requests-per-level", str(requests),
                 "--stream", "--format", fmt, "--out", str(out)]
            )  # fmt: skip
            assert code == 0
            (level,) = json.loads(out.read_text())["levels"]
        truth = [r for r in fetch_truth(url)[1:] if r.outcome == "ok"]
    finally:
        server.terminate()
        server.wait(10)
    ttfts = [r.ttft_s or 0.0 for r in truth]
    itls = [((r.end or 0.0) - (r.first_token or 0.0)) / (r.output_tokens - 1) for r in truth]
    return {
        "p50_ttft_s": level["p50_ttft_s"],
        "true_p50_ttft_s": percentile(ttfts, 50) or 0.0,
        "p90_ttft_s": level["p90_ttft_s"],
        "true_p90_ttft_s": percentile(ttfts, 90) or 0.0,
        "p50_itl_s": level["p50_itl_s"],
        "true_p50_itl_s": percentile(itls, 50) or 0.0,
    }


def main() -> None:
    """Print one row per case."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--requests", type=int, default=256)
    args = parser.parse_args()
    print("| container | --format | p50 TTFT ms (truth, error) | p90 TTFT ms (truth, error) "
          "| p50 ITL ms (truth, error) |")  # fmt: skip
    print("|---|---|---:|---:|---:|")
    for container, fmt in CASES:
        r = run(container, fmt, args.concurrency, args.requests)
        cells = []
        for key in ("p50_ttft_s", "p90_ttft_s", "p50_itl_s"):
            measured, true = r[key], r["true_" + key]
            cells.append(f"{measured * 1e3:.1f} ({true * 1e3:.1f}, {measured / true - 1:+.1%})")
        print(f"| {container} | {fmt} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
