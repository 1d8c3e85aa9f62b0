"""The values a calibration (``calibration_fit.calibrate``) tries for each efficiency factor:
grids over the factor's range, the efficiencies bounded by what the measured accelerator was
measured to reach (``catalog.instance_types.AchievedPeak``), as the engine profiles are fitted
(``benchmarks/profile_fitting.py`` ``physical_bounds``; issue 30 item 3). A fit that wants more
than that ceiling is not a faster server but a cost the model charges that the server does not
pay; the calibration's notes say so (``Calibration.fit_notes``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..catalog.instance_types import AchievedPeak

MEMORY_BANDWIDTH_GRID = [round(0.30 + 0.025 * i, 3) for i in range(29)]
"""Memory-bandwidth efficiencies the fit tries: 0.30 to 1.00 of the accelerator's peak."""
STEP_OVERHEAD_GRID_MS = [0.5 * i for i in range(61)]
"""Per-step overheads the fit tries: 0 to 30 ms."""
DECODE_COMPUTE_GRID = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
"""Decode compute efficiencies the fit tries."""
PREFILL_COMPUTE_GRID = [round(0.05 * i, 2) for i in range(2, 21)]
"""Prefill compute efficiencies the fit tries: 0.10 to 1.00."""
PREFILL_HOLD_GRID = [
    0.0,
    1.0,
    2.0,
    3.0,
    4.0,
    6.0,
    8.0,
    10.0,
    12.0,
    16.0,
    20.0,
    24.0,
    32.0,
    48.0,
    64.0,
]
"""Decode steps of prefill hold the fit tries: 0 (the next step takes a new request) to
64 (three times TGI's default ``max_waiting_tokens``). At an end of a grid the fit's value is
reported, not trusted (``Calibration.fit_notes``)."""

LABELS = {
    "memory_bandwidth": "memory bandwidth efficiency",
    "step_overhead_ms": "per-step overhead (ms)",
    "prefill_compute": "prefill compute efficiency",
    "decode_compute": "decode compute efficiency",
}
"""The searched factors (``Efficiency`` fields), in words."""


@dataclass(frozen=True)
class FitGrids:
    """The grids one calibration searches, on one accelerator."""

    memory_bandwidth: Sequence[float] = tuple(MEMORY_BANDWIDTH_GRID)
    step_overhead_ms: Sequence[float] = tuple(STEP_OVERHEAD_GRID_MS)
    prefill_compute: Sequence[float] = tuple(PREFILL_COMPUTE_GRID)
    decode_compute: Sequence[float] = tuple(DECODE_COMPUTE_GRID)
    ceilings: frozenset[str] = frozenset()
    """The factors whose grid ends at the accelerator's measured ceiling."""

    @staticmethod
    def bounded_by(achieved: AchievedPeak | None) -> FitGrids:
        """The grids up to ``achieved``'s bandwidth and compute ceilings, each ending at its
        ceiling; the full grids where the accelerator has no measured ceiling."""
        if achieved is None:
            return FitGrids()
        compute = achieved.compute
        ceilings = {"memory_bandwidth"} | (
            {"prefill_compute", "decode_compute"} if compute is not None else set()
        )
        return FitGrids(
            memory_bandwidth=_up_to(MEMORY_BANDWIDTH_GRID, achieved.memory_bandwidth),
            prefill_compute=_up_to(PREFILL_COMPUTE_GRID, compute),
            decode_compute=_up_to(DECODE_COMPUTE_GRID, compute),
            ceilings=frozenset(ceilings),
        )

    def searched(self) -> list[tuple[str, Sequence[float]]]:
        """Each searched factor (an ``Efficiency`` field) with its grid."""
        return [(name, getattr(self, name)) for name in LABELS]


def _up_to(grid: Sequence[float], ceiling: float | None) -> tuple[float, ...]:
    """``grid``'s values up to ``ceiling``, ending at it (the whole grid where None)."""
    if ceiling is None:
        return tuple(grid)
    return (*(value for value in grid if value < ceiling), ceiling)
