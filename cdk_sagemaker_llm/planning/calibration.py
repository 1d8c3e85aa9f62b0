"""Calibration: fit the performance model's efficiency factors to a benchmark's results.

The benchmark (``cdk-sagemaker-llm benchmark``, ``EndpointBenchmark``) writes ``results.json``:
its ``payload`` states input and output tokens, each of its ``levels`` the client concurrency,
the p50 ms/token (end-to-end latency / output tokens), output tokens/s and, when streaming,
the p50 TTFT. ``calibrate`` searches the memory-bandwidth efficiency, the per-step overhead and
the decode compute efficiency that make the model's predictions match those levels best (least
squares on the logarithm of ms/token and tokens/s), and the prefill efficiency from TTFT.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..catalog.model_specs import ModelSpec, Precision
from ..errors import ValidationError
from .performance import (
    DEFAULT_EFFICIENCY,
    CopyModel,
    Efficiency,
    Layout,
    Workload,
)
from .placement import copy_memory

_MEMORY_GRID = [round(0.30 + 0.025 * i, 3) for i in range(29)]  # 0.30 .. 1.00
_OVERHEAD_GRID_MS = [0.5 * i for i in range(61)]  # 0 .. 30 ms
_COMPUTE_GRID = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
_PREFILL_GRID = [round(0.05 * i, 2) for i in range(2, 21)]  # 0.10 .. 1.00


@dataclass(frozen=True)
class MeasuredLevel:
    """One benchmark level, as calibration reads it."""

    concurrency: int
    ms_per_token: float
    tokens_per_s: float
    ttft_ms: float | None


@dataclass(frozen=True)
class Calibration:
    """Efficiency factors fitted to one benchmark of one model on one layout."""

    efficiency: Efficiency
    model: str
    instance_type: str
    tensor_parallel_degree: int
    copies: int
    """Copies the benchmarked endpoint had (instances x copies per instance)."""
    precision: str
    input_tokens: int
    output_tokens: int
    concurrency_range: tuple[int, int]
    """Lowest and highest benchmarked concurrency, whole deployment."""
    levels: int
    rms_error: float
    """Root-mean-square relative error of the fitted ms/token over the levels."""
    source: str = "results.json"

    def describe(self) -> str:
        """Where the factors come from, in one line."""
        low, high = self.concurrency_range
        return (
            f"calibrated on {self.source}: {self.model} on {self.instance_type} "
            f"TP{self.tensor_parallel_degree} x {self.copies} copies, {self.input_tokens} in / "
            f"{self.output_tokens} out, concurrency {low}-{high} ({self.levels} levels, "
            f"{self.rms_error:.0%} rms error): {self.efficiency.describe()}"
        )

    def coverage_notes(
        self,
        spec: ModelSpec,
        layout: Layout,
        workload: Workload,
        precision: Precision,
        concurrency: Sequence[int],
    ) -> list[str]:
        """Where a prediction leaves what this calibration measured (empty: it does not)."""
        notes = []
        if spec.name != self.model:
            notes.append(f"extrapolated: calibrated on {self.model}, predicting {spec.name}")
        if layout.instance_type.name != self.instance_type:
            notes.append(
                f"extrapolated: calibrated on {self.instance_type}, predicting "
                f"{layout.instance_type.name}"
            )
        if layout.tensor_parallel_degree != self.tensor_parallel_degree:
            notes.append(
                f"extrapolated: calibrated at TP{self.tensor_parallel_degree}, predicting "
                f"TP{layout.tensor_parallel_degree}"
            )
        if precision.value != self.precision:
            notes.append(
                f"extrapolated: calibrated in {self.precision}, predicting {precision.value}"
            )
        for name, measured, wanted in (
            ("input", self.input_tokens, workload.input_tokens),
            ("output", self.output_tokens, workload.output_tokens),
        ):
            if not measured / 2 <= wanted <= measured * 2:
                notes.append(
                    f"extrapolated: {wanted} {name} tokens, calibrated at {measured} "
                    "(more than 2x away)"
                )
        low, high = self.concurrency_range
        per_copy_low = low / self.copies
        per_copy_high = high / self.copies
        outside = [c for c in concurrency if not per_copy_low <= c / layout.copies <= per_copy_high]
        if outside:
            notes.append(
                f"extrapolated: concurrency {', '.join(map(str, outside))} is outside the "
                f"calibrated {per_copy_low:g}-{per_copy_high:g} per copy"
            )
        return notes


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def measured_levels(results: Mapping[str, Any]) -> list[MeasuredLevel]:
    """The usable levels of a ``results.json`` document: concurrency, p50 ms/token and tokens/s
    measured without errors taking most requests."""
    levels = results.get("levels")
    if not isinstance(levels, list):
        raise ValidationError(
            "results.levels",
            type(levels).__name__,
            "a benchmark results document has a list of levels",
            "pass the results.json the benchmark wrote",
        )
    found = []
    for level in levels:
        if not isinstance(level, Mapping):
            continue
        concurrency = level.get("concurrency")
        ms = _number(level.get("p50_ms_per_token"))
        tput = _number(level.get("output_tokens_per_s"))
        error_rate = level.get("error_rate") or 0
        if not isinstance(concurrency, int) or ms is None or tput is None or error_rate > 0.5:
            continue
        ttft_s = _number(level.get("p50_ttft_s"))
        found.append(
            MeasuredLevel(concurrency, ms, tput, None if ttft_s is None else ttft_s * 1000)
        )
    return sorted(found, key=lambda level: level.concurrency)


def _workload(results: Mapping[str, Any], workload: Workload | None) -> Workload:
    if workload is not None:
        return workload
    payload = results.get("payload")
    payload = payload if isinstance(payload, Mapping) else {}
    input_tokens = payload.get("input_tokens")
    output_tokens = payload.get("output_tokens")
    if not isinstance(input_tokens, int) or not isinstance(output_tokens, int):
        raise ValidationError(
            "results.payload",
            {"input_tokens": input_tokens, "output_tokens": output_tokens},
            "calibration needs the benchmark's input and output tokens per request",
            "benchmark with synthetic prompts (--input-tokens), or pass workload=Workload(...)",
        )
    return Workload(input_tokens, output_tokens)


def calibrate(
    results: Mapping[str, Any] | Any,
    spec: ModelSpec,
    layout: Layout,
    precision: Precision = Precision.FP16,
    *,
    workload: Workload | None = None,
    source: str = "results.json",
) -> Calibration:
    """Fit the efficiency factors to a benchmark of ``spec`` on ``layout``.

    :param results: the ``results.json`` document (a mapping) or a ``BenchmarkResult``.
    :param workload: default the benchmark payload's input/output tokens.
    """
    document = results.to_dict() if hasattr(results, "to_dict") else results
    if not isinstance(document, Mapping):
        raise ValidationError(
            "results",
            type(results).__name__,
            "must be a results.json document or a BenchmarkResult",
            "pass json.load(open('results.json'))",
        )
    levels = measured_levels(document)
    if len(levels) < 2:
        raise ValidationError(
            "results.levels",
            len(levels),
            "calibration needs at least two levels with p50 ms/token and throughput",
            "benchmark at several concurrencies, e.g. 1,2,4,8",
        )
    load = _workload(document, workload)
    fit = _Fit(spec, layout, precision, load, levels)
    efficiency = fit.decode(DEFAULT_EFFICIENCY)
    with_ttft = [level for level in levels if level.ttft_ms is not None]
    if with_ttft:
        efficiency = fit.decode(fit.prefill(efficiency, with_ttft[0]))
    efficiency = fit.decode(fit.compute(efficiency))
    model = CopyModel(
        spec, layout.instance_type, layout.tensor_parallel_degree, precision, load, efficiency
    )
    relative = [
        model.level(level.concurrency / layout.copies, fit.capacity)[0] / level.ms_per_token - 1
        for level in levels
    ]
    return Calibration(
        efficiency=efficiency,
        model=spec.name,
        instance_type=layout.instance_type.name,
        tensor_parallel_degree=layout.tensor_parallel_degree,
        copies=layout.copies,
        precision=precision.value,
        input_tokens=load.input_tokens,
        output_tokens=load.output_tokens,
        concurrency_range=(levels[0].concurrency, levels[-1].concurrency),
        levels=len(levels),
        rms_error=math.sqrt(sum(r * r for r in relative) / len(relative)),
        source=source,
    )


class _Fit:
    """Least-squares search of one factor group at a time (coordinate descent)."""

    def __init__(
        self,
        spec: ModelSpec,
        layout: Layout,
        precision: Precision,
        load: Workload,
        levels: list[MeasuredLevel],
    ) -> None:
        self.spec, self.layout, self.precision, self.load = spec, layout, precision, load
        self.levels = levels
        memory = copy_memory(
            spec, layout.instance_type, layout.tensor_parallel_degree, precision, load.total_tokens
        )
        # The batch limit is unknown here: the largest measured concurrency per copy bounds it.
        most = max(level.concurrency for level in levels) / layout.copies
        self.capacity = max(1, min(memory.sequences, math.ceil(most)))

    def _model(self, efficiency: Efficiency) -> CopyModel:
        return CopyModel(
            self.spec,
            self.layout.instance_type,
            self.layout.tensor_parallel_degree,
            self.precision,
            self.load,
            efficiency,
        )

    def error(self, efficiency: Efficiency) -> float:
        """Sum of squared log errors of ms/token and tokens/s over the levels."""
        model = self._model(efficiency)
        copies = self.layout.copies
        total = 0.0
        for level in self.levels:
            ms, _, _, tput = model.level(level.concurrency / copies, self.capacity)
            total += math.log(ms / level.ms_per_token) ** 2
            total += math.log(tput * copies / level.tokens_per_s) ** 2
        return total

    def _best(self, candidates: list[Efficiency]) -> Efficiency:
        return min(candidates, key=self.error)

    def decode(self, start: Efficiency) -> Efficiency:
        """Memory-bandwidth efficiency and per-step overhead."""
        return self._best(
            [
                replace(start, memory_bandwidth=memory, step_overhead_ms=overhead)
                for memory in _MEMORY_GRID
                for overhead in _OVERHEAD_GRID_MS
            ]
        )

    def compute(self, start: Efficiency) -> Efficiency:
        """Decode compute efficiency (matters only where decode is compute-bound)."""
        return self._best([replace(start, decode_compute=c) for c in _COMPUTE_GRID])

    def prefill(self, start: Efficiency, level: MeasuredLevel) -> Efficiency:
        """Prefill efficiency from the TTFT of the lowest streamed level."""
        assert level.ttft_ms is not None
        measured = level.ttft_ms

        def error(candidate: Efficiency) -> float:
            ttft = self._model(candidate).level(
                level.concurrency / self.layout.copies, self.capacity
            )[1]
            return abs(math.log(ttft / measured))

        return min((replace(start, prefill_compute=p) for p in _PREFILL_GRID), key=error)
