"""Print the cores this process may run on: by affinity where the platform has it (a container
or `taskset` limits it), else the CPU count. scripts/test.sh and .ci/lowest run one pytest
worker per core; benchmarks/profile_fitting.py counts its fold workers the same way."""

import os

print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
