"""Wall time of the command-line tools that synthesize nothing (``size``, ``predict``,
``recommend``), each run in a fresh interpreter, and whether they loaded aws_cdk.

    .venv/bin/python benchmarks/cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {
    "size --help": ["size", "--help"],
    "size": ["size", "--model", "llama-2-13b", "--instance-type", "ml.p4d.24xlarge"],
    "predict": [
        "predict",
        "--model",
        "llama-2-7b",
        "--instance-type",
        "ml.p4d.24xlarge",
        "--input-tokens",
        "256",
        "--output-tokens",
        "128",
        "--concurrency",
        "1,8,64,512",
    ],
    "recommend (whole catalog)": [
        "recommend",
        "--model",
        "llama-3-8b",
        "--input-tokens",
        "512",
        "--output-tokens",
        "256",
        "--max-ms-per-token",
        "60",
        "--requests-per-second",
        "4",
    ],
}
PROBE = (
    "import sys, runpy; sys.argv = ['cdk-sagemaker-llm', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('cdk_sagemaker_llm.cli', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    "print('aws_cdk' in sys.modules, file=sys.stderr)\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    print(f"| command | median s | min s | loads aws_cdk |  ({runs} runs, {sys.executable})")
    print("|---|---:|---:|---|")
    for name, argv in COMMANDS.items():
        times = []
        loads = ""
        for _ in range(runs):
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True
            )
            times.append(time.perf_counter() - start)
            loads = done.stderr.strip().splitlines()[-1]
        print(f"| `{name}` | {statistics.median(times):.2f} | {min(times):.2f} | {loads} |")


if __name__ == "__main__":
    main()
