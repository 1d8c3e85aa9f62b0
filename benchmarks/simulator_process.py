"""What the client-side benchmarks (``load_generator.py``, ``worker_capacity.py``,
``peers_truth.py``, ``ttft_streams.py``) share: the loopback simulator in a process of its own,
and this process's CPU time."""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PEERS_SIMULATOR = [
    sys.executable, "-m", "cdk_sagemaker_llm.benchmarking.simulator_cli", "--max-batch", "512",
    "--step-base-s", "0.032", "--step-per-sequence-s", "0.00005",
]  # fmt: skip
"""The simulator ``peers_truth.py`` and ``ttft_streams.py`` measure against: batch 512, 32 ms +
0.05 ms per sequence per decode step."""


def cpu_seconds() -> float:
    """User + system CPU time of this process, all threads (``getrusage``)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pin_client(args: argparse.Namespace) -> None:
    """Pin this process to ``args.client_cpu`` and, unless ``args.server_cpu`` names one, leave
    the simulator another CPU when there is one."""
    cpus = sorted(os.sched_getaffinity(0))
    if args.server_cpu is None and len(cpus) > 1:
        args.server_cpu = next(cpu for cpu in cpus if cpu != args.client_cpu)
    os.sched_setaffinity(0, {args.client_cpu})


def start(command: list[str], server_cpu: int | None) -> tuple[subprocess.Popen[str], str]:
    """Run ``command`` (a simulator that prints its loopback URL first) from the repository
    root, pinned to ``server_cpu`` when given; returns the process and the URL."""
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        preexec_fn=(lambda: os.sched_setaffinity(0, {server_cpu}))
        if server_cpu is not None
        else None,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        process.kill()
        raise SystemExit(f"simulator did not start: {url!r}")
    return process, url


@contextmanager
def running(command: list[str], server_cpu: int | None) -> Iterator[str]:
    """:func:`start` the simulator, give its URL, and stop it on the way out."""
    process, url = start(command, server_cpu)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(10)
