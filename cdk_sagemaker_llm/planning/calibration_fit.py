"""Fitting a calibration (``planning.calibration.Calibration``) to a benchmark's results.

The benchmark (``cdk-sagemaker-llm benchmark``, ``EndpointBenchmark``) writes ``results.json``:
its ``payload`` states input and output tokens, each of its ``levels`` the client concurrency,
the p50 ms/token (end-to-end latency / output tokens), output tokens/s and, when streaming,
the p50 TTFT (``measured_levels``). ``calibrate`` searches the memory-bandwidth efficiency, the
per-step overhead and the decode compute efficiency that make the model's predictions match
those levels best (least squares on the logarithm of ms/token and tokens/s), over the grids
``planning.calibration`` states. TTFT is fitted across every streamed level with the model of
TTFT under load (``CopyModel.level``): the wait for admission beyond the batch limit, the hold
before a running batch takes a new prefill in (``Efficiency.prefill_hold_steps``,
``CopyModel.held_s``), the step in progress, and the request's own prefill with the share of
the others' run with it. Two constants come from it: the prefill efficiency from the lightest
streamed level, where no queueing mixes in, and the hold from every streamed level (least
squares on the logarithm of TTFT, ``TtftFit``), after which the decode factors are searched
again (a held request is out of the batch, which the end-to-end figures see).
``Calibration.ttft_rms_error`` records how well TTFT fits. The wait for admission needs the
server's batch limit, which a benchmark does not state: the fit assumes the largest measured
concurrency per copy until the levels show clients queueing below it (tokens/s flat while
ms/token and TTFT grow with the queue), then finds the limit among the measured concurrencies
(``Calibration.batch_limit``, with a note on how to apply it). (An earlier fit moved the
prefill efficiency to every level's TTFT instead: it absorbed the queueing as a slower prefill,
and the end-to-end fit of a loopback round trip went from 1% to 18% rms error.) Where no level
streamed, the prefill efficiency is searched on the end-to-end figures instead: with long
prompts and short outputs the prefills that stall the running batch set how ms/token grows with
the load, and a fit that held them at the engine profile's efficiency left 34% rms on a
two-level sweep (fmbench Mistral 7B on ml.g5.2xlarge, 2,503 in / 63 out), pushing the bandwidth
efficiency to 100% and the decode compute efficiency to its floor to compensate. Last, the
factors are refined through the engine's scheduler simulation (``calibration_simulated``) and
kept where the simulation explains the levels better than the closed form does: a chunking
scheduler's TTFT under load is beyond the closed form, whose fit then moved the decode factors
(``benchmarks/calibration_held_out.py``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..errors import ValidationError
from .calibration import Calibration, EngineRelease
from .calibration_grids import PREFILL_HOLD_GRID, FitGrids
from .calibration_simulated import SimulatedFit
from .efficiency import DEFAULT_EFFICIENCY, Efficiency, efficiency_of
from .engine_profiles import EngineProfile, resolve_profile
from .measured_curve import MeasuredCurve, MeasuredPoint
from .performance import CopyModel, Layout, Workload, check_kv_cache_precision
from .placement import copy_memory


@dataclass(frozen=True)
class MeasuredLevel:
    """One benchmark level, as calibration reads it."""

    concurrency: int
    ms_per_token: float
    tokens_per_s: float
    ttft_ms: float | None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def measured_levels(results: Mapping[str, Any]) -> list[MeasuredLevel]:
    """The usable levels of a ``results.json`` document: concurrency, p50 ms/token and tokens/s
    measured without errors taking most requests. An open-loop document (``"mode": "rate"``)
    is refused: its levels' concurrency is the peak in flight, not a closed-loop level."""
    mode = results.get("mode", "concurrency")
    if mode != "concurrency":
        raise ValidationError(
            "results.mode",
            mode,
            "is an open-loop sweep: its levels' concurrency is the peak in flight, not a "
            "closed-loop concurrency",
            "calibrate needs a concurrency sweep: benchmark with --concurrency, not --request-rate",
        )
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
        error_rate = _number(level.get("error_rate")) or 0.0
        if (
            not isinstance(concurrency, int)
            or isinstance(concurrency, bool)
            or concurrency < 1
            or ms is None
            or tput is None
            or error_rate > 0.5
        ):
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
    engine: EngineRelease | None = None,
    kv_cache_precision: KvCachePrecision = KvCachePrecision.AUTO,
) -> Calibration:
    """Fit the efficiency factors to a benchmark of ``spec`` on ``layout``.

    :param results: the ``results.json`` document (a mapping) or a ``BenchmarkResult``.
    :param workload: default the benchmark payload's input/output tokens.
    :param engine: the serving engine benchmarked (the calibration's key); without it the
        calibration cannot be checked against the engine it is applied to.
    :param kv_cache_precision: how the benchmarked engine stored the KV cache
        (``KvCachePrecision``, as ``predict``'s): the fit times the copy with it and the
        calibration records it. FP8 on an accelerator without FP8 is a ValidationError
        (``performance.check_kv_cache_precision``).
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
    check_kv_cache_precision(
        layout.instance_type,
        kv_cache_precision,
        "state the KV cache precision the benchmarked server ran with (auto on it)",
    )
    load = _workload(document, workload)
    profile = resolve_profile(engine, layout.instance_type.is_neuron)
    _check_measurable(spec, layout, precision, load, kv_cache_precision, profile)
    fit = _Fit(spec, layout, precision, load, levels, profile, kv_cache_precision)
    with_ttft = [level for level in levels if level.ttft_ms is not None]
    efficiency = fit.admission(DEFAULT_EFFICIENCY, with_ttft)
    for _ in range(2):
        # TTFT and the decode factors share the step time (a request's first token waits for
        # the step in progress; a held request is out of the batch): a second round settles it.
        if with_ttft:
            efficiency = fit.prefill(efficiency, with_ttft[0])
            efficiency = fit.decode(fit.hold(efficiency, with_ttft))
        else:
            # No TTFT measured: the prefills' share of the end-to-end figures pins the prefill
            # efficiency (long prompts' prefills stall the batch's decode under load).
            efficiency = fit.decode(fit.prefill_end_to_end(efficiency))
        efficiency = fit.decode(fit.compute(efficiency))
    # Coordinate descent over grids can end farther from the levels than the uncalibrated
    # factors (the engine profile's, which the grids cannot express: per-layer and per-sequence
    # costs): never worse than where predictions start, on the fit's own objective.
    start = efficiency_of(profile)
    if fit.total(start, with_ttft) < fit.total(efficiency, with_ttft):
        efficiency = start
    efficiency = fit.simulated(efficiency, profile, with_ttft)
    model = fit.model(efficiency)
    relative = [
        model.level(level.concurrency / layout.copies, fit.capacity).ms_per_token
        / level.ms_per_token
        - 1
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
        rms_error=_rms(relative),
        source=source,
        engine=engine,
        accelerator=layout.instance_type.accelerator.name
        if layout.instance_type.accelerator
        else None,
        layers=spec.layers,
        ttft_rms_error=fit.ttft_rms_error(efficiency, with_ttft) if with_ttft else None,
        batch_limit=fit.batch_limit,
        measured=_curve(levels, layout.copies, load),
        kv_cache_precision=kv_cache_precision,
        simulated_rms_error=fit.simulated_rms_error,
    )


def _rms(relative: Sequence[float]) -> float:
    """Root mean square of the relative errors ``relative``."""
    return math.sqrt(sum(r * r for r in relative) / len(relative))


def _curve(levels: Sequence[MeasuredLevel], copies: int, workload: Workload) -> MeasuredCurve:
    """The measured levels per copy (the load balancer spreads a level evenly over copies)."""
    return MeasuredCurve.of(
        [
            MeasuredPoint(
                level.concurrency / copies,
                level.ms_per_token,
                level.tokens_per_s / copies,
                level.ttft_ms,
            )
            for level in levels
        ],
        workload,
    )


DEPLOYMENT_KEYS = (
    "model",
    "model_spec",
    "engine",
    "instance_type",
    "tensor_parallel_degree",
    "copies_per_instance",
    "precision",
    "engine_memory_share",
    "kv_cache_precision",
)
"""The keys of a results document's ``deployment`` section (what was benchmarked)."""


def deployment_of(results: Mapping[str, Any]) -> dict[str, Any]:
    """The ``deployment`` section of a ``results.json``: ``model``, ``model_spec``
    (``ModelSpec.to_metadata()``), ``engine`` (``{"family", "version"}``), ``instance_type``,
    ``tensor_parallel_degree``, ``copies_per_instance``, ``precision``,
    ``engine_memory_share`` (the share of the memory its environment gave the engine) and
    ``kv_cache_precision`` (``fp8`` where its environment set an FP8 KV cache), with
    ``copies``
    (instances x copies per instance) from the ``run`` section the benchmark Lambda writes;
    only the keys the document states."""
    section = results.get("deployment")
    found: dict[str, Any] = {}
    if isinstance(section, Mapping):
        found = {key: section[key] for key in DEPLOYMENT_KEYS if section.get(key) is not None}
    run = results.get("run")
    if isinstance(run, Mapping) and isinstance(run.get("copies"), int):
        found["copies"] = run["copies"]
    return found


def _check_measurable(
    spec: ModelSpec,
    layout: Layout,
    precision: Precision,
    load: Workload,
    kv_cache: KvCachePrecision,
    profile: EngineProfile,
) -> None:
    """A layout that cannot hold one request of ``spec`` (weights and one sequence's KV
    cache) in the share of the memory its engine takes cannot be what was benchmarked (the
    engine refuses to start): a ValidationError, not a fit at any error (70B on one A10G was
    fitted at 1,947 % rms error; Llama 2 7B on one A10G at a TGI memory fraction of 0.5 at
    220 %)."""
    memory = profile.engine_memory(
        copy_memory(
            spec, layout.instance_type, layout.tensor_parallel_degree, precision,
            load.total_tokens, kv_cache,
        )
    )  # fmt: skip
    if memory.sequences < 1:
        fix = (
            "state the model, instance type, tensor-parallel degree and precision that were "
            "benchmarked"
        )
        if memory.reserve_set_by is not None:
            fix += f", and the share of the memory its engine took ({memory.reserve_set_by})"
        raise ValidationError(
            "layout",
            f"{spec.name} {precision.value} on {layout.describe()}",
            f"does not fit: {memory.kv_free_bytes / 1e9:.1f} GB left for the KV cache per copy "
            f"after the weights{memory.after_the_reserve()}, so the results cannot be a "
            "benchmark of it",
            fix,
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
        profile: EngineProfile,
        kv_cache: KvCachePrecision = KvCachePrecision.AUTO,
    ) -> None:
        self.spec, self.layout, self.precision, self.load = spec, layout, precision, load
        self.levels, self.kv_cache = levels, kv_cache
        memory = copy_memory(
            spec,
            layout.instance_type,
            layout.tensor_parallel_degree,
            precision,
            load.total_tokens,
            kv_cache,
        )
        self.sequences = profile.engine_memory(memory).sequences
        """The sequences the benchmarked engine's KV cache holds (its share of the memory,
        ``EngineProfile.engine_memory``, as the closed form's limits and the simulation count)."""
        accelerator = layout.instance_type.accelerator
        self.grids = FitGrids.bounded_by(accelerator.achieved if accelerator else None)
        """The values the fit tries, up to what the accelerator was measured to reach."""
        # The largest measured concurrency per copy bounds the batch limit until ``admission``
        # finds the levels queueing below it.
        self.capacity = self._unbounded()
        self.batch_limit: int | None = None
        """The batch limit ``admission`` found (None: no level queued for admission)."""
        self.simulated_rms_error: float | None = None
        """The rms error of the simulated ms/token where ``simulated`` kept its refinement
        (None: the closed-form fit was kept)."""

    def _unbounded(self) -> int:
        """The sequences a copy runs at once without a batch limit: what its memory holds, up
        to the largest measured concurrency per copy."""
        most = max(level.concurrency for level in self.levels) / self.layout.copies
        return max(1, min(self.sequences, math.ceil(most)))

    def model(self, efficiency: Efficiency) -> CopyModel:
        """The benchmarked copy timed with ``efficiency``."""
        return CopyModel(
            self.spec,
            self.layout.instance_type,
            self.layout.tensor_parallel_degree,
            self.precision,
            self.load,
            efficiency,
            kv_cache=self.kv_cache,
        )

    def error(self, efficiency: Efficiency) -> float:
        """Sum of squared log errors of ms/token and tokens/s over the levels."""
        model = self.model(efficiency)
        copies = self.layout.copies
        total = 0.0
        for level in self.levels:
            at = model.level(level.concurrency / copies, self.capacity)
            total += math.log(at.ms_per_token / level.ms_per_token) ** 2
            total += math.log(at.tokens_per_s * copies / level.tokens_per_s) ** 2
        return total

    def total(self, efficiency: Efficiency, ttft: list[MeasuredLevel]) -> float:
        """``error`` plus the squared log errors of the streamed levels' TTFT."""
        errors = self._ttft(efficiency).errors(ttft) if ttft else []
        return self.error(efficiency) + sum(error * error for error in errors)

    def _refit(self, start: Efficiency, ttft: list[MeasuredLevel]) -> Efficiency:
        """One round of the decode and TTFT factors at the current capacity."""
        efficiency = self.decode(start)
        if ttft:
            efficiency = self.prefill(efficiency, ttft[0])
            efficiency = self.decode(self.hold(efficiency, ttft))
        return efficiency

    def admission(self, start: Efficiency, ttft: list[MeasuredLevel]) -> Efficiency:
        """The batch limit the levels show, if any: the server runs at most that many
        sequences per copy, and the clients beyond it queue for admission (their ms/token and
        TTFT grow with the queue while tokens/s stays flat). Each measured concurrency per copy
        below the largest is tried with the factors refitted to it; one is kept only where it
        halves the squared log error of ms/token, tokens/s and TTFT of assuming none, so that
        a server which merely slows down under load is not read as queueing."""
        start = self._refit(start, ttft)
        best = (self.total(start, ttft), self.capacity, start)
        measured = {math.ceil(level.concurrency / self.layout.copies) for level in self.levels}
        unbounded = self._unbounded()
        for capacity in sorted(c for c in measured if c < unbounded):
            self.capacity = capacity
            efficiency = self._refit(start, ttft)
            total = self.total(efficiency, ttft)
            if total < best[0] / 2 and total < best[0] - 1e-9:
                best = (total, capacity, efficiency)
        _, self.capacity, efficiency = best
        self.batch_limit = self.capacity if self.capacity < unbounded else None
        return efficiency

    def simulated(
        self, efficiency: Efficiency, profile: EngineProfile, ttft: list[MeasuredLevel]
    ) -> Efficiency:
        """The closed-form fit ``efficiency``, or where ``profile``'s scheduler simulation
        explains the levels better (a smaller ``total`` over the same figures), the factors
        refined through it (``calibration_simulated``), starting from the fit or the profile's
        own factors, with or without the batch limit ``admission`` found; the batch limit
        follows the refinement, and ``simulated_rms_error`` records its fit."""
        limits = [self.batch_limit, None] if self.batch_limit is not None else [None]
        simulated = SimulatedFit(
            self.model(efficiency), profile, self.levels, self.layout.copies, self.grids
        )
        refined, limit, error = simulated.refine([efficiency, efficiency_of(profile)], limits)
        if error >= self.total(efficiency, ttft):
            return efficiency
        self.batch_limit = limit
        self.capacity = limit or self._unbounded()
        self.simulated_rms_error = _rms(simulated.ms_per_token_errors(refined, limit))
        return refined

    def _best(self, candidates: list[Efficiency]) -> Efficiency:
        return min(candidates, key=self.error)

    def decode(self, start: Efficiency) -> Efficiency:
        """Memory-bandwidth efficiency and per-step overhead."""
        return self._best(
            [
                replace(start, memory_bandwidth=memory, step_overhead_ms=overhead)
                for memory in self.grids.memory_bandwidth
                for overhead in self.grids.step_overhead_ms
            ]
        )

    def prefill_end_to_end(self, start: Efficiency) -> Efficiency:
        """Prefill compute efficiency from the end-to-end figures, where no level streamed:
        with long prompts the prefills set how ms/token and tokens/s grow with the load."""
        grid = self.grids.prefill_compute
        return self._best([replace(start, prefill_compute=p) for p in grid])

    def compute(self, start: Efficiency) -> Efficiency:
        """Decode compute efficiency (matters only where decode is compute-bound)."""
        return self._best([replace(start, decode_compute=c) for c in self.grids.decode_compute])

    def _ttft(self, efficiency: Efficiency) -> TtftFit:
        return TtftFit(
            self.model(efficiency), self.capacity, self.layout.copies, self.grids.prefill_compute
        )

    def ttft_rms_error(self, efficiency: Efficiency, levels: list[MeasuredLevel]) -> float:
        """Root-mean-square relative error of the predicted TTFT over the streamed ``levels``."""
        return self._ttft(efficiency).rms_error(levels)

    def prefill(self, start: Efficiency, level: MeasuredLevel) -> Efficiency:
        """Prefill efficiency from the TTFT of the lightest streamed level."""
        return self._ttft(start).prefill(level).model.efficiency

    def hold(self, start: Efficiency, levels: list[MeasuredLevel]) -> Efficiency:
        """The prefill hold that fits the TTFT of every streamed level best."""
        return self._ttft(start).hold(levels).model.efficiency


@dataclass(frozen=True)
class TtftFit:
    """The TTFT half of a calibration, over a timed copy: the prefill efficiency from the
    lightest streamed level and the prefill hold (``Efficiency.prefill_hold_steps``) from every
    streamed level, each the grid value of least squared log error. ``calibrate`` uses it;
    ``benchmarks/ttft_under_load.py`` scores it out of sample on published sweeps."""

    model: CopyModel
    """The copy, timed with the factors fitted so far."""
    capacity: int
    """Sequences the copy holds at once (beyond them, requests wait for admission)."""
    copies: int = 1
    """Copies the measured levels' concurrency was spread over."""
    prefill_grid: Sequence[float] = tuple(FitGrids().prefill_compute)
    """The prefill compute efficiencies ``prefill`` tries (``FitGrids``)."""

    def errors(self, levels: Sequence[MeasuredLevel]) -> list[float]:
        """ln(predicted / measured TTFT) of each of the streamed ``levels``."""
        errors = []
        for level in levels:
            assert level.ttft_ms is not None
            at = self.model.level(level.concurrency / self.copies, self.capacity)
            errors.append(math.log(at.ttft_ms / level.ttft_ms))
        return errors

    def rms_error(self, levels: Sequence[MeasuredLevel]) -> float:
        """Root-mean-square relative error of the predicted TTFT over ``levels``."""
        return _rms([math.expm1(error) for error in self.errors(levels)])

    def _with(self, efficiency: Efficiency) -> TtftFit:
        return replace(self, model=replace(self.model, efficiency=efficiency))

    def prefill(self, level: MeasuredLevel) -> TtftFit:
        """The prefill efficiency that fits ``level``'s TTFT (the lightest streamed one)."""
        start = self.model.efficiency
        return min(
            (self._with(replace(start, prefill_compute=p)) for p in self.prefill_grid),
            key=lambda fit: abs(fit.errors([level])[0]),
        )

    def hold(self, levels: Sequence[MeasuredLevel]) -> TtftFit:
        """The prefill hold (decode steps) that fits the TTFT of ``levels`` best."""
        start = self.model.efficiency
        return min(
            (self._with(replace(start, prefill_hold_steps=steps)) for steps in PREFILL_HOLD_GRID),
            key=lambda fit: sum(error * error for error in fit.errors(levels)),
        )
