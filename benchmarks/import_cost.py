"""The Python CPU that importing the library costs the synth benchmark's app (issue 19 item 9).

    .venv/bin/python benchmarks/import_cost.py [--runs 5] [--before DIR] [--modules]

Each run is a fresh Python process (bytecode cache on, as a user's ``cdk synth`` after the
first; see ``synth_time.py``) that first imports what the plain-L1 app imports (``aws_cdk``,
``aws_iam``, ``aws_sagemaker``, which starts the jsii kernel) and makes one typed call into
aws-cdk-lib (whose first one loads jsii's runtime type checker, in any app), then times
``import library_app`` (``benchmarks/synth/library_app.py``: the library's names a model +
inference-component endpoint + component synth uses) with ``time.process_time()``: the
library's own import cost in the Python process, which the plain-L1 app does not pay. Prints
the median over the runs, and with ``--before`` the same for the library from another source
tree (alternated with this one). Then, in the same process, the CPU of building the first
model + endpoint + component set (``add_sets(stack, 1)``, no synth): what a checked function,
a jsii class or the fit check does once per process on its first use. ``--modules`` lists
the library's modules that the import loaded and the aws-cdk-lib modules it added beyond the
primed ones.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYNTH = HERE / "synth"
PROBE = f"""
import json, os, sys, time
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
import aws_cdk
from aws_cdk import aws_iam, aws_sagemaker
aws_cdk.Duration.seconds(1)  # the first typed call loads jsii's type checker, as in any app
before = set(sys.modules)
sys.path.insert(0, {str(SYNTH)!r})
start = time.process_time()
import library_app
cpu = time.process_time() - start
loaded = sorted(m for m in set(sys.modules) - before
                if m.startswith(("cdk_sagemaker_llm", "aws_cdk")))
stack = aws_cdk.Stack(aws_cdk.App(), "Library", env=aws_cdk.Environment(region="us-west-2"))
start = time.process_time()
library_app.add_sets(stack, 1)
first_set = time.process_time() - start
print(json.dumps({{"cpu": cpu, "first_set": first_set, "modules": loaded}}))
"""


def probe(source: str | None) -> dict[str, object]:
    """One fresh process: the import's CPU seconds and the modules it loaded."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if source:
        env["PYTHONPATH"] = source
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=SYNTH,  # not a source tree's root: ``-c`` puts the working directory on sys.path
    ).stdout
    result: dict[str, object] = json.loads(out.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", help="another source tree's root, measured alternately")
    parser.add_argument("--modules", action="store_true", help="list the modules loaded")
    args = parser.parse_args()
    sources: dict[str, str | None] = {"this tree": None}
    if args.before:
        sources = {"before": args.before, **sources}
    for source in sources.values():
        probe(source)  # warm the bytecode cache
    cpu: dict[str, list[float]] = {name: [] for name in sources}
    first: dict[str, list[float]] = {name: [] for name in sources}
    last: dict[str, dict[str, object]] = {}
    for _ in range(args.runs):
        for name, source in sources.items():
            last[name] = probe(source)
            cpu[name].append(float(last[name]["cpu"]))  # type: ignore[arg-type]
            first[name].append(float(last[name]["first_set"]))  # type: ignore[arg-type]
    for name in sources:
        for what, figures in (("import", cpu[name]), ("first set", first[name])):
            runs = ", ".join(f"{1e3 * c:.0f}" for c in figures)
            median, least = 1e3 * statistics.median(figures), 1e3 * min(figures)
            print(f"{name}, {what}: median {median:.0f} ms CPU, min {least:.0f} ({runs})")
        if args.modules:
            modules = list(last[name]["modules"])  # type: ignore[call-overload]
            print(f"  {len(modules)} modules: " + " ".join(modules))


if __name__ == "__main__":
    main()
