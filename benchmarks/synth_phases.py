"""Where a synth's CPU goes, by process and phase, library vs plain L1 (issue 19 item 9).

    .venv/bin/python benchmarks/synth_phases.py [--runs 3] [--sets 1,60] [--before DIR]

Runs the synth benchmark's apps (``benchmarks/synth/library_app.py`` and ``l1_app.py``, and
with ``--before`` the library from another source tree) alternately as whole processes, like
``synth_time.py``, with ``benchmarks/synth/node_phases.js`` preloaded into the jsii kernel's
Node.js process, and prints the median CPU seconds (user + system) of: all processes; the
Python process (with jsii's small launcher process); the Node.js process outside
``app.synth()`` (loading aws-cdk-lib and answering the constructs' round trips);
``app.synth()`` without its validation; aws-cdk-lib's CloudFormation validation engine start;
and its validating of the templates. Then the per-set cost of each (the medians' slope
between the smallest and the largest size). CPU, unlike wall time, barely moves with the load
of a shared machine.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
APPS = {"library": HERE / "synth" / "library_app.py", "plain L1": HERE / "synth" / "l1_app.py"}
PRELOAD = HERE / "synth" / "node_phases.js"
COLUMNS = {
    "all": "all processes",
    "python": "Python process",
    "node, outside synth": "Node.js outside app.synth()",
    "synth": "app.synth() without validation",
    "engine start": "validation engine start",
    "validating": "validating the templates",
}


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def app_environment(source: str | None) -> dict[str, str]:
    """The app's environment: bytecode cache on (as a user's ``cdk synth`` after the first;
    see ``synth_time.py``), the library from ``source`` if given."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if source:
        env["PYTHONPATH"] = source
    return env


def run(app: Path, sets: int, source: str | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as outdir:
        phases = Path(outdir) / "phases.jsonl"
        env = dict(app_environment(source), NODE_OPTIONS=f"--require {PRELOAD}")
        env["PHASE_OUT"] = str(phases)
        start = _children_cpu_s()
        subprocess.run(
            [sys.executable, str(app), str(Path(outdir) / "out"), str(sets)],
            check=True,
            capture_output=True,
            env=env,
        )
        total = _children_cpu_s() - start
        node = {k: v / 1e3 for k, v in json.loads(phases.read_text().splitlines()[-1]).items()}
    validation = node["validation engine start"] + node["validating the templates"]
    return {
        "all": total,
        "python": total - node["node process"],
        "node, outside synth": node["node process"] - node["app.synth"],
        "synth": node["app.synth"] - validation,
        "engine start": node["validation engine start"],
        "validating": node["validating the templates"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sets", default="1,60", help="comma-separated numbers of sets")
    parser.add_argument("--before", help="source tree of the library to compare with")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sets.split(",")]
    apps: dict[str, tuple[Path, str | None]] = {name: (app, None) for name, app in APPS.items()}
    if args.before:
        apps["before"] = (APPS["library"], str(Path(args.before).resolve()))
    runs: dict[tuple[str, int], list[dict[str, float]]] = {(n, k): [] for n in apps for k in sizes}
    for app, source in apps.values():  # warm-up: writes the bytecode caches (synth_time.py)
        run(app, sizes[0], source)
    for _ in range(args.runs):
        for sets in sizes:
            for name, (app, source) in apps.items():
                runs[name, sets].append(run(app, sets, source))

    def median(name: str, sets: int, column: str) -> float:
        return statistics.median(r[column] for r in runs[name, sets])

    print(
        "CPU s, median of",
        args.runs,
        "runs: " + "; ".join(f"{k} = {v}" for k, v in COLUMNS.items()),
    )
    print(f"{'app':10} {'sets':>4} " + " ".join(f"{c:>19}" for c in COLUMNS))
    for sets in sizes:
        for name in apps:
            print(
                f"{name:10} {sets:4d} "
                + " ".join(f"{median(name, sets, c):19.2f}" for c in COLUMNS)
            )
    if len(sizes) > 1:
        first, last = sizes[0], sizes[-1]
        print(f"CPU ms per set ({first} -> {last} sets)")
        for name in apps:
            slopes = [
                (median(name, last, c) - median(name, first, c)) / (last - first) * 1e3
                for c in COLUMNS
            ]
            print(f"{name:10} {'':4} " + " ".join(f"{slope:19.1f}" for slope in slopes))


if __name__ == "__main__":
    main()
