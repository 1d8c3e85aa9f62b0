"""What the scheduler simulation (``planning.scheduling``) costs against the closed form, and
where their capacities differ: for a few layouts, the maximum tokens/s within a ms/token limit
by the closed form (``layout_capacity.max_throughput_within``, the fast screen) and by bisecting
closed-loop clients over the simulation (``CopySimulation.capacity_within``), with the wall
time of each, and the knee of each.

    .venv/bin/python benchmarks/simulation_cost.py            # the table
    .venv/bin/python benchmarks/simulation_cost.py --repeat 3 # best of 3 timings
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.planning.engine_profiles import EngineProfile, engine_profile
from cdk_sagemaker_llm.planning.layout_capacity import max_throughput_within
from cdk_sagemaker_llm.planning.performance import (
    CopyLimits,
    CopyModel,
    Layout,
    copy_knee,
    profile_limits,
    profile_model,
)
from cdk_sagemaker_llm.planning.scheduling.capacity import CopySimulation
from cdk_sagemaker_llm.planning.workload import Workload

T = TypeVar("T")


@dataclass(frozen=True)
class Case:
    spec: ModelSpec
    instance: str
    tp: int
    profile: str
    workload: Workload
    slo_ms: float


CASES = (
    Case(ModelSpec.LLAMA_3_8B, "ml.g5.2xlarge", 1, "tgi-1", Workload(512, 256), 100),
    Case(ModelSpec.LLAMA_3_8B, "ml.g6e.xlarge", 1, "lmi-vllm-v1", Workload(512, 256), 100),
    Case(ModelSpec.LLAMA_3_8B, "ml.g6e.xlarge", 1, "lmi-trtllm", Workload(2000, 500), 40),
    Case(ModelSpec.LLAMA_3_70B, "ml.p4d.24xlarge", 8, "tgi-1", Workload(3800, 256), 100),
    Case(ModelSpec.LLAMA_3_70B, "ml.p4d.24xlarge", 8, "lmi-vllm-v1", Workload(3800, 256), 100),
    Case(ModelSpec.LLAMA_3_70B, "ml.p4d.24xlarge", 8, "tgi-2-3", Workload(512, 256), 100),
)


def _best(function: Callable[[], T], repeat: int) -> tuple[float, T]:
    """(best CPU seconds of ``repeat`` runs, the value): CPU time, so a busy machine's other
    processes do not count."""
    best, value = float("inf"), function()
    for _ in range(repeat):
        start = time.process_time()
        value = function()
        best = min(best, time.process_time() - start)
    return best, value


def _setup(case: Case) -> tuple[EngineProfile, Layout, CopyModel, CopyLimits]:
    profile = engine_profile(case.profile)
    layout = Layout(InstanceType.of(case.instance), case.tp, 1)
    model = profile_model(case.spec, layout, Precision.FP16, case.workload, profile)
    limits, _ = profile_limits(model, profile)
    return profile, layout, model, limits


def closed_form(case: Case) -> tuple[int, float, int]:
    """(clients per copy, tokens/s within the limit, knee) by the closed form."""
    profile, layout, model, limits = _setup(case)
    found = max_throughput_within(case.spec, layout, case.workload, case.slo_ms, engine=profile)
    knee = copy_knee(model, limits).concurrency or 0  # 0: one request already breaks it
    if found is None:
        return 0, 0.0, knee
    return found.concurrency_per_copy, found.level.tokens_per_s, knee


STEADY_ERROR = 0.01
"""The ``ClosedLoop.steady_error`` of the last column: each level stops once its mean ms/token
is known within 1 % (standard error)."""


def simulated(case: Case, steady_error: float | None = None) -> tuple[int, float, int, int]:
    """The same by searching clients over the simulation, and the forward passes its levels
    simulated (the work, whatever else shares the CPU)."""
    profile, _, model, limits = _setup(case)
    simulation = CopySimulation(model, profile, steady_error=steady_error)
    found = simulation.capacity_within(case.slo_ms, limits.max_concurrency)
    knee = simulation.knee(limits.max_concurrency).clients
    passes = sum(simulation.level(c).result.passes for c in simulation.simulated_clients())
    return (found.clients, found.tokens_per_s, knee, passes) if found else (0, 0.0, knee, passes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print(
        "| case | closed form: clients, tokens/s, knee, CPU ms | simulation: clients, "
        f"tokens/s, knee, CPU ms, passes | sim / closed | steady_error {STEADY_ERROR:g}: "
        "clients, tokens/s, knee, CPU ms, passes |"
    )
    print("|---|---|---|---|---|")
    for case in CASES:
        closed_s, (c_clients, c_tokens, c_knee) = _best(partial(closed_form, case), args.repeat)
        sim_s, (s_clients, s_tokens, s_knee, s_passes) = _best(
            partial(simulated, case), args.repeat
        )
        quick_s, (q_clients, q_tokens, q_knee, q_passes) = _best(
            partial(simulated, case, STEADY_ERROR), args.repeat
        )
        name = (
            f"{case.spec.name} {case.instance} TP{case.tp} {case.profile} "
            f"{case.workload.input_tokens}/{case.workload.output_tokens} <= {case.slo_ms:g} ms"
        )
        ratio = s_tokens / c_tokens if c_tokens else float("nan")
        print(
            f"| {name} | {c_clients}, {c_tokens:.0f}, {c_knee}, {closed_s * 1000:.0f} | "
            f"{s_clients}, {s_tokens:.0f}, {s_knee}, {sim_s * 1000:.0f}, {s_passes} | "
            f"{ratio:.2f} | {q_clients}, {q_tokens:.0f}, {q_knee}, {quick_s * 1000:.0f}, "
            f"{q_passes} |"
        )


if __name__ == "__main__":
    main()
