"""Synthesis weight: resources emitted and whole-process synth time, library vs plain L1.

    .venv/bin/python benchmarks/synth_time.py [--runs 7]

Runs ``benchmarks/synth/library_app.py`` (one model + inference-component endpoint +
component built with the library) and ``benchmarks/synth/l1_app.py`` (the same SageMaker
resources written with L1 constructs and inline-policy roles) alternately, each as a whole
``python`` process as ``cdk synth`` runs ``app.py``, and prints the median wall time and the
resources per type of each template.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
APPS = {"library": HERE / "synth" / "library_app.py", "plain L1": HERE / "synth" / "l1_app.py"}


def run(app: Path) -> tuple[float, Counter[str]]:
    with tempfile.TemporaryDirectory() as outdir:
        start = time.perf_counter()
        subprocess.run([sys.executable, str(app), outdir], check=True, capture_output=True)
        elapsed = time.perf_counter() - start
        (template_file,) = Path(outdir).glob("*.template.json")
        resources = json.loads(template_file.read_text())["Resources"]
        types = Counter(r["Type"] for r in resources.values() if r["Type"] != "AWS::CDK::Metadata")
    return elapsed, types


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in APPS}
    types: dict[str, Counter[str]] = {}
    for _ in range(args.runs):
        for name, app in APPS.items():
            elapsed, types[name] = run(app)
            times[name].append(elapsed)
    baseline = statistics.median(times["plain L1"])
    print(f"{'app':10} {'median s':>9} {'min s':>7} {'vs L1':>7} {'resources':>9}  by type")
    for name in APPS:
        median = statistics.median(times[name])
        counts = ", ".join(f"{t.split('::', 1)[1]} {n}" for t, n in sorted(types[name].items()))
        print(
            f"{name:10} {median:9.2f} {min(times[name]):7.2f} {median / baseline - 1:+7.0%} "
            f"{sum(types[name].values()):9d}  {counts}"
        )


if __name__ == "__main__":
    main()
