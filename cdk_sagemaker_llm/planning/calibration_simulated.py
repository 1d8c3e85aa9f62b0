"""The last stage of a calibration (``calibration_fit.calibrate``): the efficiency factors refined
through the engine's scheduler simulation (``planning.scheduling``), the model the ``simulate``
command serves and ``predict --simulate-scheduler`` times.

The closed form the first stages fit cannot see a chunking scheduler's TTFT under load (a new
prompt's chunks share the running batch's passes; the queue for KV cache grows past the
batch's steady state), so a fit that matches TTFT there moves the decode factors instead: a
sweep the engine simulation itself served (Llama 3.1 8B on ml.g5.2xlarge, ``lmi-vllm-v1``,
512 in / 32 out, 1-64 clients) came back at 100 % of peak bandwidth and 20 % decode compute,
its busiest levels 9-11 % off where the uncalibrated profile was within 4 %. Here each
candidate's levels are simulated under the benchmark's closed-loop clients, spread over the
copies as the load balancer spreads them, and scored by the same squared log errors as the
closed-form fit (p50 ms/token, tokens/s and, where streamed, p50 TTFT), so the factors kept are
the ones that reproduce the measurement through the engine's own batching. The search starts
from the better of the closed-form fit and the engine profile's factors (so it never ends
farther from the levels than the profile, on this objective), with or without the batch limit
the closed form inferred, and moves one factor at a time along the calibration grids with
strides of 4, 2 and 1 grid steps until no move improves."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from .calibration_grids import FitGrids
from .efficiency import Efficiency
from .engine_profiles import EngineProfile
from .performance import CopyModel
from .scheduling.capacity import CopySimulation, SimulatedLevel
from .scheduling.prediction import load_balancer_shares

STRIDES = (4, 2, 1)
"""Grid steps per move, coarse to fine."""
STEADY_ERROR = 0.01
"""Each simulated level stops once its mean ms/token is known within 1 % standard error
(``ClosedLoop.steady_error``): the same clients and knees as every round, at 16-36 % fewer
passes (``benchmarks/README.md``, "The scheduler simulation against the closed form")."""


class MeasuredTarget(Protocol):
    """One measured level as the simulated fit scores it (``calibration_fit.MeasuredLevel``)."""

    @property
    def concurrency(self) -> int: ...
    @property
    def ms_per_token(self) -> float: ...
    @property
    def tokens_per_s(self) -> float: ...
    @property
    def ttft_ms(self) -> float | None: ...


@dataclass(frozen=True)
class SimulatedFit:
    """The benchmarked deployment simulated: ``model`` (one copy) under ``profile``'s
    scheduler, ``copies`` copies sharing each level's clients."""

    model: CopyModel
    profile: EngineProfile
    levels: Sequence[MeasuredTarget]
    copies: int
    grids: FitGrids
    """The values each factor may take (``FitGrids.searched``)."""

    def error(self, efficiency: Efficiency, batch_limit: int | None) -> float:
        """Sum of squared log errors of the simulated levels (p50 ms/token, tokens/s, and p50
        TTFT where measured); infinite where a level serves no request or refuses some."""
        simulated = self._simulated(efficiency, batch_limit)
        if simulated is None:
            return math.inf
        total = 0.0
        for level, shares in zip(self.levels, simulated, strict=True):
            tokens = sum(at.tokens_per_s * count for at, count in shares)
            total += math.log(tokens / level.tokens_per_s) ** 2
            total += math.log(_slowest(shares, "ms_per_token") / level.ms_per_token) ** 2
            if level.ttft_ms is not None:
                ttft_ms = _slowest(shares, "ttft_s") * 1000
                total += math.log(ttft_ms / level.ttft_ms) ** 2
        return total

    def ms_per_token_errors(self, efficiency: Efficiency, batch_limit: int | None) -> list[float]:
        """The relative error of the simulated p50 ms/token at each level (the figure
        ``Calibration.rms_error`` scores, through the simulation); empty where a level serves
        no request or refuses some."""
        simulated = self._simulated(efficiency, batch_limit)
        if simulated is None:
            return []
        return [
            _slowest(shares, "ms_per_token") / level.ms_per_token - 1
            for level, shares in zip(self.levels, simulated, strict=True)
        ]

    def _simulated(
        self, efficiency: Efficiency, batch_limit: int | None
    ) -> list[list[tuple[SimulatedLevel, int]]] | None:
        """Each level simulated, as the copies' shares of its clients (``clients, count``);
        None where a level serves no request or refuses some."""
        simulation = CopySimulation(
            replace(self.model, efficiency=efficiency), self.profile, batch_limit, STEADY_ERROR
        )
        levels = []
        for level in self.levels:
            shares = load_balancer_shares(self.copies, level.concurrency)
            simulated = [(simulation.level(clients), count) for clients, count in shares]
            if any(not at.result.outcomes or at.result.rejected for at, _ in simulated):
                return None
            levels.append(simulated)
        return levels

    def refine(
        self, starts: Sequence[Efficiency], batch_limits: Sequence[int | None]
    ) -> tuple[Efficiency, int | None, float]:
        """The factors and batch limit of least ``error``, with that error: the best pair of
        ``starts`` and ``batch_limits``, then one factor at a time along its grid
        (``grids``, ``STRIDES``)."""
        scored = [
            (self.error(start, limit), index, start, limit)
            for index, (start, limit) in enumerate(
                (start, limit) for limit in batch_limits for start in starts
            )
        ]
        best, _, efficiency, limit = min(scored, key=lambda entry: entry[:2])
        if not math.isfinite(best):
            return starts[0], batch_limits[0], best
        for stride in STRIDES:
            moved = True
            while moved:
                moved = False
                for name, grid in self.grids.searched():
                    for candidate in _moves(efficiency, name, grid, stride):
                        error = self.error(candidate, limit)
                        if error < best - 1e-12:
                            best, efficiency, moved = error, candidate, True
        return efficiency, limit, best


def _slowest(simulated: Sequence[tuple[SimulatedLevel, int]], metric: str) -> float:
    """The p50 of ``metric`` on the busiest share of the copies (the benchmark's p50 pools every
    copy's requests; the busier copies set it where the shares differ by one client)."""
    return max(at.result.percentile(metric, 0.5) for at, _ in simulated)


def _moves(
    efficiency: Efficiency, name: str, grid: Sequence[float], stride: int
) -> list[Efficiency]:
    """``efficiency`` with ``name`` ``stride`` grid steps down and up from its nearest
    grid value."""
    value = getattr(efficiency, name)
    nearest = min(range(len(grid)), key=lambda index: abs(grid[index] - value))
    return [
        replace(efficiency, **{name: grid[index]})  # type: ignore[arg-type]
        for index in (nearest - stride, nearest + stride)
        if 0 <= index < len(grid)
    ]
