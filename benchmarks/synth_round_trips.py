"""Where a synth's jsii round trips come from: each request to the CDK's Node.js process, by call
site in the library (or the app), for the synth benchmark's library and L1 apps.

    .venv/bin/python benchmarks/synth_round_trips.py [--sets 1,11] [--top 40] [--app library]

Runs the app (``benchmarks/synth/library_app.py`` or ``l1_app.py``) once per number of sets,
each in a fresh process, counting the requests jsii sends to its kernel (``_NodeProcess.send``,
a private jsii API: fine for a benchmark, not for the library), and prints the round trips per
set (the slope between the sizes) and, at the largest size, the busiest call sites with the
kernel API each calls. Unlike wall time, the counts do not depend on how busy the machine is.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
APPS = {"library": HERE / "synth" / "library_app.py", "l1": HERE / "synth" / "l1_app.py"}

PROBE = """
import collections, json, os, runpy, sys
from jsii._kernel.providers import process
sites = collections.Counter()
send = process._NodeProcess.send

def counting(self, request, response_type):
    frame, where = sys._getframe(1), "(jsii start-up)"
    while frame is not None:
        name = frame.f_code.co_filename
        if "cdk_sagemaker_llm" in name or "benchmarks" in name:
            where = f"{name.rsplit('/', 1)[-1]}:{frame.f_lineno} {frame.f_code.co_name}"
            break
        frame = frame.f_back
    api = getattr(request, "method", None) or getattr(request, "property", None)
    api = api or getattr(request, "fqn", None) or ""
    sites[f"{type(request).__name__.removesuffix('Request')} {api} <- {where}"] += 1
    return send(self, request, response_type)

process._NodeProcess.send = counting
app, sys.argv = sys.argv[1], sys.argv[1:]
runpy.run_path(app, run_name="__main__")
print(json.dumps(dict(sites)))
"""


def count(app: Path, sets: int) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as outdir:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(app), outdir, str(sets)],
            check=True,
            capture_output=True,
            text=True,
            cwd=outdir,  # not the checkout: PYTHONPATH may name another source tree
        )
    counts: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="1,11", help="two comma-separated numbers of sets")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--app", choices=sorted(APPS), default="library")
    args = parser.parse_args()
    small, large = (int(n) for n in args.sets.split(","))
    few, many = count(APPS[args.app], small), count(APPS[args.app], large)
    per_set = (sum(many.values()) - sum(few.values())) / (large - small)
    print(
        f"{args.app}: {sum(few.values())} round trips at {small} sets, "
        f"{sum(many.values())} at {large}: {per_set:.1f} per set"
    )
    print(f"{'per set':>7}  call (kernel API <- call site)")
    slopes = {site: (n - few.get(site, 0)) / (large - small) for site, n in many.items()}
    for site, slope in sorted(slopes.items(), key=lambda item: -item[1])[: args.top]:
        if slope:
            print(f"{slope:7.1f}  {site}")


if __name__ == "__main__":
    main()
