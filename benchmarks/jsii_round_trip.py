"""What one jsii round trip costs, and an acknowledgment through ``Validations`` against the
metadata entry the library writes (issue 19, synth cost).

    .venv/bin/python benchmarks/jsii_round_trip.py [--calls 2000]

In one process: ``--calls`` reads of ``node.path`` (the cheapest call there is: wall time and
the Python process's CPU per call), then 300 constructs each given three cdk-nag
acknowledgments through ``Validations.of(c).acknowledge(...)`` and 300 given them as one
``node.add_metadata("aws:cdk:acknowledged-rules", ...)`` entry (``constructs/nag.py``), with
the Python CPU and the CPU of the processes jsii started (its launcher and kernel, read from
``/proc``: Linux only; 10 ms clock ticks, so about 0.03 ms resolution per construct).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk import Acknowledgment, Validations
from constructs import Construct

TICKS = os.sysconf("SC_CLK_TCK")


def children_cpu_s(pid: int | None = None) -> float:
    """CPU seconds (user + system) of the live processes below ``pid`` (default this one)."""
    pid = os.getpid() if pid is None else pid
    total = 0.0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as children:
            for child in children.read().split():
                with open(f"/proc/{child}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / TICKS + children_cpu_s(int(child))
    return total


RULES = [
    "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:us-west-2:<AWS::AccountId>:"
    f"log-group:/aws/sagemaker/{kind}/*]"
    for kind in ("Endpoints", "InferenceComponents", "Jobs")
]


def per_construct(
    label: str, action: Callable[[Construct], None], constructs: list[Construct]
) -> None:
    python, kernel = time.process_time(), children_cpu_s()
    for construct in constructs:
        action(construct)
    python, kernel = time.process_time() - python, children_cpu_s() - kernel
    count = len(constructs)
    print(
        f"{label:44} Python {python / count * 1e3:.3f} ms, "
        f"launcher + kernel {kernel / count * 1e3:.3f} ms per construct"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    stack = cdk.Stack(cdk.App(), "Stack")
    node = Construct(stack, "Probe").node
    paths = [node.path for _ in range(200)]  # warm-up
    wall, python = time.perf_counter(), time.process_time()
    paths = [node.path for _ in range(args.calls)]
    wall, python = time.perf_counter() - wall, time.process_time() - python
    assert len(set(paths)) == 1
    print(
        f"one round trip (node.path x {args.calls}): {wall / args.calls * 1e3:.3f} ms wall, "
        f"{python / args.calls * 1e3:.3f} ms Python CPU"
    )
    via_validations = [Construct(stack, f"V{i}") for i in range(300)]
    via_metadata = [Construct(stack, f"M{i}") for i in range(300)]
    per_construct(
        "Validations.of(c).acknowledge(3 rules)",
        lambda c: Validations.of(c).acknowledge(
            *[Acknowledgment(id=rule, reason="inherent") for rule in RULES]
        ),
        via_validations,
    )
    per_construct(
        "c.node.add_metadata(acknowledged-rules, 3)",
        lambda c: c.node.add_metadata(
            "aws:cdk:acknowledged-rules", {f"Annotation::{rule}": "inherent" for rule in RULES}
        ),
        via_metadata,
    )


if __name__ == "__main__":
    main()
