"""Trace replay: open-loop levels that send a trace's requests at its own timestamps.

A level replays the whole trace (``Workload.trace``) from its first request, the gaps between
timestamps divided by the level's *speedup* (2: twice as fast), as aiperf's fixed-schedule mode
replays a Mooncake trace; request ``i`` carries the trace's ``i``-th token counts. The level's
offered rate is the trace's own rate ``(n - 1) / span`` times the speedup, so the results are
those of any open-loop level (``open_loop.summarize_rate_level``): achieved rate, schedule lag,
backlog, goodput and whether the level was sustainable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..planning.workload import Trace
from .engine import BenchmarkResult, LevelResult
from .invokers import Invoker
from .open_loop import RateRunner, open_loop_settings, run_rate_level, summarize_rate_level
from .payload import InvocationRequest, PayloadSpec

TRACE_ARRIVAL = "trace"
"""The ``open_loop.arrival`` of replayed levels in results."""


def trace_of(spec: PayloadSpec) -> Trace:
    """The trace a replay sends (ValueError when the workload is not one)."""
    if not isinstance(spec.shape, Trace):
        raise ValueError(
            "BenchmarkLoad.trace_replay replays a trace: use Workload.trace(...) "
            "(--trace FILE on the command line)"
        )
    return spec.shape


def replay_rate(trace: Trace, speedup: float) -> float:
    """The offered rate of a replay at ``speedup``: the trace's own rate times the speedup
    (a trace of one request, or of requests all at one instant, counts as 1 request/s)."""
    return (trace.rate or 1.0) * speedup


class TraceReplayRunner(RateRunner):
    """Open-loop levels that replay ``trace`` at a speedup each (see the module docstring)."""

    def __init__(
        self,
        invoker: Invoker,
        factory: Callable[[int], InvocationRequest],
        *,
        trace: Trace,
        **settings: Any,
    ) -> None:
        super().__init__(invoker, factory, **settings)
        self.trace = trace

    def __call__(self, level: float) -> LevelResult:
        speedup = level
        rate = replay_rate(self.trace, speedup)
        offsets = self.trace.offsets(speedup)
        self._say(
            f"replay x{speedup:g} ({rate:.3g} requests/s): {len(offsets)} requests over "
            f"{offsets[-1]:.1f} s ..."
        )
        samples = run_rate_level(
            self.invoker, self.factory, offsets, max_concurrency=self.max_concurrency
        )
        return self._measured(samples, summarize_rate_level(samples, rate, self.slo))

    def result(
        self, spec: PayloadSpec, levels: list[LevelResult], **fields: Any
    ) -> BenchmarkResult:
        """Rate-mode results whose ``open_loop`` section states the replay."""
        result = super().result(spec, levels, **fields)
        settings = open_loop_settings(self.arrival, self.max_concurrency)
        settings.update(
            arrival=TRACE_ARRIVAL,
            seed=None,
            trace={
                **self.trace.to_dict(),
                "rate_per_s": self.trace.rate,
                "speedups": "each level's rate / the trace's rate",
            },
        )
        result.open_loop = settings
        return result
