"""Synthesis weight: resources emitted and whole-process synth time, library vs plain L1.

    .venv/bin/python benchmarks/synth_time.py [--runs 7] [--sets 1,20,60] [--before DIR]

Runs ``benchmarks/synth/library_app.py`` (N model + inference-component endpoint +
component sets built with the library) and ``benchmarks/synth/l1_app.py`` (the same SageMaker
resources written with L1 constructs and inline-policy roles) alternately, each as a whole
``python`` process as ``cdk synth`` runs ``app.py``, at each number of sets, and prints the
median wall time, the per-set cost (the median's slope from the smallest size) and the
resources per type of each template, and the median CPU time (user + system, of the Python
process and the jsii Node.js process it starts): on a busy machine wall time stretches with
the other work while CPU time barely moves, so ``cpu s`` and ``cpu ms/set`` are the steadier
figures there. Alternating library and L1 runs spreads a busy machine's noise over both
alike. ``--before DIR`` adds a third app, the library from another source tree (e.g.
``git archive <commit> | tar -x -C DIR``), run in the same alternation.

The apps run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` removed from their
environment) after one untimed warm-up run each, as a user's ``cdk synth`` runs after the
first: aws-cdk-lib's modules are compiled when pip installs them, the library's (installed
editable here, or a ``--before`` tree) on their first import. Without the cache, each run of
the library app also compiled its ~50 modules from source (about 0.2 s of CPU), which the L1
app never pays.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
APPS = {"library": HERE / "synth" / "library_app.py", "plain L1": HERE / "synth" / "l1_app.py"}


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def app_environment(source: str | None) -> dict[str, str]:
    """The app's environment: bytecode cache on, the library from ``source`` if given."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if source:
        env["PYTHONPATH"] = source
    return env


def run(app: Path, sets: int, source: str | None = None) -> tuple[float, float, Counter[str]]:
    env = app_environment(source)
    with tempfile.TemporaryDirectory() as outdir:
        start, cpu_start = time.perf_counter(), _children_cpu_s()
        subprocess.run(
            [sys.executable, str(app), outdir, str(sets)], check=True, capture_output=True, env=env
        )
        elapsed, cpu = time.perf_counter() - start, _children_cpu_s() - cpu_start
        (template_file,) = Path(outdir).glob("*.template.json")
        resources = json.loads(template_file.read_text())["Resources"]
        types = Counter(r["Type"] for r in resources.values() if r["Type"] != "AWS::CDK::Metadata")
    return elapsed, cpu, types


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sets", default="1,20,60", help="comma-separated numbers of sets")
    parser.add_argument("--before", help="source tree of the library to compare with")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sets.split(",")]
    apps: dict[str, tuple[Path, str | None]] = {name: (app, None) for name, app in APPS.items()}
    if args.before:
        apps["before"] = (APPS["library"], str(Path(args.before).resolve()))
    times: dict[tuple[str, int], list[float]] = {(n, k): [] for n in apps for k in sizes}
    cpus: dict[tuple[str, int], list[float]] = {(n, k): [] for n in apps for k in sizes}
    types: dict[tuple[str, int], Counter[str]] = {}
    for app, source in apps.values():  # warm-up: writes the bytecode caches
        run(app, sizes[0], source)
    for _ in range(args.runs):
        for sets in sizes:
            for name, (app, source) in apps.items():
                elapsed, cpu, types[name, sets] = run(app, sets, source)
                times[name, sets].append(elapsed)
                cpus[name, sets].append(cpu)
    print(
        f"{'app':10} {'sets':>4} {'median s':>9} {'min s':>7} {'vs L1':>7} {'ms/set':>7} "
        f"{'cpu s':>6} {'vs L1':>6} {'cpu ms/set':>10} {'resources':>9}  by type"
    )
    for sets in sizes:
        baseline = statistics.median(times["plain L1", sets])
        cpu_baseline = statistics.median(cpus["plain L1", sets])
        for name in apps:
            median = statistics.median(times[name, sets])
            first = statistics.median(times[name, sizes[0]])
            per_set = (median - first) / (sets - sizes[0]) * 1e3 if sets != sizes[0] else 0.0
            cpu = statistics.median(cpus[name, sets])
            cpu_first = statistics.median(cpus[name, sizes[0]])
            cpu_per_set = (cpu - cpu_first) / (sets - sizes[0]) * 1e3 if sets != sizes[0] else 0.0
            counts = ", ".join(
                f"{t.split('::', 1)[1]} {n}" for t, n in sorted(types[name, sets].items())
            )
            print(
                f"{name:10} {sets:4d} {median:9.2f} {min(times[name, sets]):7.2f} "
                f"{median / baseline - 1:+7.0%} {per_set:7.0f} "
                f"{cpu:6.2f} {cpu / cpu_baseline - 1:+6.0%} {cpu_per_set:10.0f} "
                f"{sum(types[name, sets].values()):9d}  {counts}"
            )


if __name__ == "__main__":
    main()
