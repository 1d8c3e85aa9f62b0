"""``calibrate`` scored on the level it did not see: each sweep is calibrated on all its levels but
the busiest, and that level is predicted, by the closed form (what ``recommend`` sizes with) and
by the scheduler simulation (``predict --simulate-scheduler``, the ``simulate`` command).

    python benchmarks/calibration_held_out.py

Two sets of sweeps:

- **published**: every closed-loop sweep of ``measurements/rows.csv`` with three or more levels
  of one layout and workload (``sizing_replay._sweeps``), calibrated with the engine the row's
  profile serves;
- **engine simulation**: sweeps the scheduler simulation itself serves (on the virtual clock,
  every round run), so the truth is known: a calibration that cannot recover it from its own
  model's output does not converge. Each sweep is served twice: with the profile's own factors,
  and as a server slower than the profile (``SLOWER``), which the calibration must move to.

Each row prints ln(predicted / measured) as a percentage for the uncalibrated profile and the
calibration, ms/token and tokens/s, closed form and simulated; the summary gives the median and
90th percentile of |error| per set.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile_fitting as pf
from sizing_replay import _sweeps

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.calibration import EngineRelease
from cdk_sagemaker_llm.planning.calibration_fit import calibrate
from cdk_sagemaker_llm.planning.efficiency import Efficiency, efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import (
    EngineProfile,
    engine_profile,
    resolve_profile,
)
from cdk_sagemaker_llm.planning.performance import Layout, Workload, profile_limits, profile_model
from cdk_sagemaker_llm.planning.scheduling.capacity import CopySimulation

SIMULATED = [
    # model, instance type, profile, input, output, levels
    ("llama-3.1-8b", "ml.g5.2xlarge", "lmi-vllm-v1", 512, 32, (1, 2, 4, 8, 16, 32, 64)),
    ("llama-3.1-8b", "ml.g5.2xlarge", "lmi-vllm-v1", 512, 256, (1, 4, 16, 32, 64)),
    ("llama-3.1-8b", "ml.g6e.xlarge", "lmi-vllm-v1", 2000, 64, (1, 4, 16, 64)),
    ("llama-3-8b", "ml.g5.2xlarge", "tgi-1", 512, 32, (1, 2, 4, 8, 16, 32)),
    ("llama-3-8b", "ml.g5.2xlarge", "tgi-2-3", 1000, 128, (1, 4, 16, 64)),
    ("llama-3-8b", "ml.g6e.xlarge", "lmi-trtllm", 512, 64, (1, 4, 16, 64)),
]
"""Sweeps the engine simulation serves as the truth: short and long outputs and prompts, each
batching policy the profiles name."""
SLOWER: dict[str, float] = {
    "memory_bandwidth": 0.7,
    "step_overhead_ms": 3.0,
    "prefill_compute": 0.45,
}
"""A server slower than its profile: grid values of the factors ``calibrate`` searches."""


@dataclass(frozen=True)
class Level:
    """One measured (or simulated-as-truth) level."""

    concurrency: int
    ms_per_token: float
    tokens_per_s: float
    ttft_ms: float | None


@dataclass(frozen=True)
class Sweep:
    """One layout and workload measured at several levels."""

    label: str
    spec: ModelSpec
    layout: Layout
    precision: Precision
    workload: Workload
    profile: EngineProfile
    levels: Sequence[Level]


def release_of(profile: EngineProfile) -> EngineRelease:
    """A container release ``profile`` serves (the first of its JSON's ``serves.containers``)."""
    served = profile.serves.containers[0]
    release = EngineRelease(served.name, served.first or "0.0.1")
    assert resolve_profile(release).name == profile.name, (profile.name, release)
    return release


def published() -> list[Sweep]:
    """The published closed-loop sweeps with three or more levels."""
    rows, _ = pf.load_rows()
    found = []
    for sweep in _sweeps(rows):
        if len(sweep) < 3 or any(row.burst for row in sweep):
            continue
        first = sweep[0]
        found.append(
            Sweep(
                f"{first.source} {first.model_name} {first.instance_type.name} "
                f"TP{first.tensor_parallel_degree}",
                first.spec,
                first.layout,
                first.precision,
                first.workload,
                engine_profile(first.profile),
                [Level(r.concurrency, r.ms_per_token, r.tokens_per_s, r.ttft_ms) for r in sweep],  # type: ignore[arg-type]
            )
        )
    return found


def simulated(slower: bool) -> list[Sweep]:
    """``SIMULATED``, each level simulated (every round run) with its profile's own factors, or
    with ``SLOWER``'s."""
    found = []
    for model, instance_type, name, input_tokens, output_tokens, clients in SIMULATED:
        spec = ModelSpec.preset(model)
        layout = Layout(InstanceType.of(instance_type), 1, 1)
        workload = Workload(input_tokens, output_tokens)
        profile = engine_profile(name)
        factors = replace(efficiency_of(profile), **SLOWER) if slower else None  # type: ignore[arg-type]
        truth = CopySimulation(
            profile_model(spec, layout, Precision.FP16, workload, profile, factors), profile
        )
        levels = []
        for count in clients:
            at = truth.level(count)
            levels.append(
                Level(
                    count,
                    at.result.percentile("ms_per_token", 0.5),
                    at.tokens_per_s,
                    at.result.percentile("ttft_s", 0.5) * 1000,
                )
            )
        found.append(
            Sweep(
                f"{model} {instance_type} {name} {input_tokens}/{output_tokens}",
                spec,
                layout,
                Precision.FP16,
                workload,
                profile,
                levels,
            )
        )
    return found


def held_out(sweep: Sweep) -> dict[str, tuple[float, float, float, float]] | None:
    """ln(predicted / measured) of the busiest level (ms/token and tokens/s, closed form and
    simulated), uncalibrated and calibrated on the others; None where calibrate refuses."""
    *seen, busiest = sweep.levels
    document = {
        "levels": [
            {
                "concurrency": level.concurrency,
                "p50_ms_per_token": level.ms_per_token,
                "output_tokens_per_s": level.tokens_per_s,
                "p50_ttft_s": None if level.ttft_ms is None else level.ttft_ms / 1000,
            }
            for level in seen
        ]
    }
    try:
        calibration = calibrate(
            document,
            sweep.spec,
            sweep.layout,
            sweep.precision,
            workload=sweep.workload,
            engine=release_of(sweep.profile),
        )
    except ValidationError:
        return None
    return {
        "uncalibrated": _errors(sweep, busiest, None, None),
        "calibrated": _errors(sweep, busiest, calibration.efficiency, calibration.batch_limit),
    }


def _errors(
    sweep: Sweep, level: Level, efficiency: Efficiency | None, batch_limit: int | None
) -> tuple[float, float, float, float]:
    profile = sweep.profile
    model = profile_model(
        sweep.spec, sweep.layout, sweep.precision, sweep.workload, profile, efficiency
    )
    limits, _ = profile_limits(model, profile, batch_limit)
    closed = model.level(level.concurrency, limits.capacity)
    at = CopySimulation(model, profile, batch_limit).level(level.concurrency)
    return (
        math.log(closed.ms_per_token / level.ms_per_token),
        math.log(closed.tokens_per_s / level.tokens_per_s),
        math.log(at.result.percentile("ms_per_token", 0.5) / level.ms_per_token),
        math.log(at.tokens_per_s / level.tokens_per_s),
    )


FIGURES = ("closed ms/token", "closed tokens/s", "simulated ms/token", "simulated tokens/s")


def report(title: str, sweeps: Sequence[Sweep]) -> None:
    """Each sweep's held-out errors and the summary, Markdown."""
    print(f"\n### {title}\n")
    print("| sweep | held out | " + " | ".join(f"{f} (uncal / cal)" for f in FIGURES) + " |")
    print("|---|---:|" + "---:|" * len(FIGURES))
    scored = []
    for sweep in sweeps:
        errors = held_out(sweep)
        if errors is None:
            print(f"| {sweep.label} | refused by calibrate |" + " |" * len(FIGURES))
            continue
        scored.append(errors)
        cells = [
            f"{math.expm1(before):+.0%} / {math.expm1(after):+.0%}"
            for before, after in zip(errors["uncalibrated"], errors["calibrated"], strict=True)
        ]
        print(f"| {sweep.label} | {sweep.levels[-1].concurrency} | " + " | ".join(cells) + " |")
    print("\n| | " + " | ".join(FIGURES) + " |")
    print("|---|" + "---:|" * len(FIGURES))
    for which in ("uncalibrated", "calibrated"):
        cells = []
        for index in range(len(FIGURES)):
            values = sorted(abs(math.expm1(errors[which][index])) for errors in scored)
            p90 = values[min(len(values) - 1, math.ceil(0.9 * len(values)) - 1)]
            cells.append(f"{statistics.median(values):.0%} / {p90:.0%}")
        print(f"| {which} (median / p90 abs error) | " + " | ".join(cells) + " |")


def main() -> int:
    """Print both tables."""
    report("Published sweeps (busiest level held out)", published())
    report(
        "Engine-simulated sweeps, the profile's factors (busiest level held out)", simulated(False)
    )
    report("Engine-simulated sweeps, a slower server (busiest level held out)", simulated(True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
