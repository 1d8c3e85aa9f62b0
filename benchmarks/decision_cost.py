"""CPU time of the decisions issue 30 budgets (item 1): a default ``recommend`` (<= 1 s) and the
decision an ``LlmService`` takes at synth (<= +0.5 s per service), each run in process on the
pure planning package, best of ``--repeat`` runs (``time.process_time``: the CPU this process
spent, which a busy machine stretches far less than wall time).

    .venv/bin/python benchmarks/decision_cost.py [--repeat 5]

The cases: the README's ``recommend`` (Llama 3 8B, 512 in / 256 out, <= 60 ms/token, 4
requests/s, every GPU and Neuron type of the catalog: the whole-catalog search
``cli_startup.py`` times as a command); and ``LlmService``'s ``decide`` for the README's service
(the same model, workload and traffic with a minimum of 1 request/s, <= 2 s to the first
token, LMI 0.38.0's engine) over its two candidate types and over every GPU type (a service
that names no candidates).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.planning.calibration import EngineRelease
from cdk_sagemaker_llm.planning.decider import decide
from cdk_sagemaker_llm.planning.performance import Workload
from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import SearchSpace, Sizing
from cdk_sagemaker_llm.planning.service_request import ExpectedTraffic, ServiceRequest

SPEC = ModelSpec.LLAMA_3_8B
WORKLOAD = Workload(512, 256)
LMI = EngineRelease("lmi", "0.38.0")
BUDGETS_S = {"recommend": 1.0, "LlmService": 0.5}
"""Issue 30's budgets: a default ``recommend`` within 1 s, an ``LlmService`` synth within
+0.5 s per service."""


@dataclass(frozen=True)
class Case:
    """One decision to time."""

    name: str
    budget: str
    """The budget it answers to (a key of ``BUDGETS_S``)."""
    run: Callable[[], object]


def _recommend() -> object:
    return recommend(
        SPEC,
        WORKLOAD,
        Slo(max_ms_per_token=60),
        Traffic(requests_per_second=4),
    )


def _service(instance_types: list[InstanceType] | None) -> Callable[[], object]:
    request = ServiceRequest(
        spec=SPEC,
        workload=WORKLOAD,
        slo=Slo(max_ms_per_token=60, max_ttft_ms=2000),
        traffic=ExpectedTraffic.requests_per_second(4, minimum=1),
        search=SearchSpace(instance_types=instance_types),
        sizing=Sizing(engine=LMI),
    )
    return lambda: decide(request)


CASES = (
    Case("recommend, README command (whole catalog)", "recommend", _recommend),
    Case(
        "LlmService decide, README service (g5.12xlarge, g6e.2xlarge)",
        "LlmService",
        _service([InstanceType.G5_12XLARGE, InstanceType.G6E_2XLARGE]),
    ),
    Case("LlmService decide, every GPU type", "LlmService", _service(None)),
)


def cpu_seconds(run: Callable[[], object], repeat: int) -> float:
    """The least CPU time of ``repeat`` runs of ``run`` (the first run included: the profiles
    and catalogs it loads are cached for the process, as in a synth that decides once)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args(argv).repeat
    print(f"| decision | CPU s (best of {repeat}) | budget s |")
    print("|---|---:|---:|")
    for case in CASES:
        print(f"| {case.name} | {cpu_seconds(case.run, repeat):.2f} | {BUDGETS_S[case.budget]:g} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
