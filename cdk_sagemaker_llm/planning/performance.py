"""Performance model: per-token latency, TTFT and throughput of a serving layout, from first
principles.

A decode step of one model copy (tensor-parallel degree TP, batch b sequences of mean context L)
takes (domain.md "Performance model"; the roofline model of Williams et al., "Roofline: an
insightful visual performance model", CACM 2009; Pope et al., "Efficiently Scaling Transformer
Inference", MLSys 2023)::

    step = max(bytes_read / (TP x bandwidth x eta_mem), flops / (TP x peak x eta_compute))
           + overhead + b x per-sequence host cost + all_reduce(b)
    bytes_read = weight bytes read per step + b x L x KV bytes per token
    flops      = 2 x active parameters x b  +  4 x layers x hidden x L x b   (attention)

and prefill of one request of I input tokens takes
``(2 x active parameters x I + 2 x layers x hidden x I^2) / (TP x peak x eta_prefill)`` plus its
all-reduces. Tensor parallelism does two all-reduces per layer (after attention and after the
MLP; Shoeybi et al., "Megatron-LM", 2019); a ring all-reduce of M bytes over TP devices takes
``latency + 2 (TP - 1) / TP x M / link bandwidth``.

In a closed loop (c clients per copy, each sending its next request when the last one ends, as
the library's benchmark does) one cycle of the copy serves every client once::

    cycle = c x prefill + output tokens x step(c)      (continuous batching interleaves them)
    ms/token (end-to-end / output tokens) = cycle / output tokens
    tokens/s = c x output tokens / cycle

A copy holds at most ``min(KV capacity, server batch limit)`` sequences; clients beyond it wait
for a slot (Little's law: their wait is the extra cycles). A request must finish within
SageMaker's 60 s invocation timeout (aws-facts.md), which caps concurrency too.

The efficiency factors (``planning.efficiency.Efficiency``) and the links all-reduces take
(``planning.interconnect``) are explicit, documented and calibratable from a
benchmark's ``results.json`` (``planning.calibration``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..catalog.prices import DEFAULT_PRICE_LIST
from ..errors import ValidationError
from .conformal_band import REGIMES, ConformalBand, conformal_bands, load_regime
from .decode_attention import SHARED, DecodeAttention
from .efficiency import Efficiency, efficiency_of
from .engine_profiles import (
    Band,
    ContainerRelease,
    EngineProfile,
    KernelSpeed,
    band_of,
    profile_on,
    profile_origin,
)
from .interconnect import PEER_ALL_REDUCE_MAX_BYTES, Interconnect, interconnect_of
from .knee import THROUGHPUT, TTFT, Knee, KneeRule, LevelFigures, trip_reason
from .placement import (
    GB,
    MIN_KV_HEADROOM_BYTES,
    KvCacheMemory,
    Memory,
    copy_memory,
    head_divisibility_problem,
    host_memory_problem,
    kv_bytes_per_token_per_copy,
)
from .scheduling.limits import DEFAULT_MAX_BATCH_SIZE, BatchSettings
from .workload import Workload, check_workload_context

if TYPE_CHECKING:  # imported where used: a model without speculative decoding or an
    # optimization (a synth's fit check) never needs them, and importing them costs synth time
    from .optimizations import Optimization
    from .speculation import Speculation, SpeculativeTiming

INVOCATION_TIMEOUT_S = 60.0
"""SageMaker real-time InvokeEndpoint times out after 60 s (SageMaker developer guide,
"InvokeEndpoint": the container must answer within 60 seconds)."""
ALL_REDUCES_PER_LAYER = 2
"""Megatron-style tensor parallelism all-reduces twice per transformer layer (Shoeybi et al.,
"Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism", 2019)."""
KNEE_MIN_GAIN_PER_DOUBLING = KneeRule().min_gain_per_doubling
"""The knee rule's default (``planning.knee.KneeRule``, which the benchmark applies too): the
last concurrency before doubling it buys less than 10 % more throughput."""
FP16_BYTES = 2
"""Bytes of one FP16 weight (what a reconstructing quantized kernel writes and reads back)."""


# ----- Inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """How a model is placed: instance type, accelerators per copy, copies, instances."""

    instance_type: InstanceType
    tensor_parallel_degree: int
    copies_per_instance: int
    instance_count: int = 1

    def __post_init__(self) -> None:
        accelerators = self.instance_type.accelerator_devices
        for prop in ("tensor_parallel_degree", "copies_per_instance", "instance_count"):
            value = getattr(self, prop)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValidationError(prop, value, "must be a positive integer", "pass e.g. 1")
        if self.tensor_parallel_degree * self.copies_per_instance > accelerators:
            raise ValidationError(
                "copies_per_instance",
                self.copies_per_instance,
                f"{self.copies_per_instance} copies x tensor-parallel degree "
                f"{self.tensor_parallel_degree} need more than the {accelerators} accelerators "
                f"of {self.instance_type.name}",
                f"use at most {accelerators // self.tensor_parallel_degree} copies per instance "
                "or a smaller degree",
            )

    @property
    def copies(self) -> int:
        """Copies of the model in the whole deployment: instances x copies per instance."""
        return self.instance_count * self.copies_per_instance

    def describe(self) -> str:
        """E.g. ``2 x ml.p4d.24xlarge, TP2 x 4 copies each``."""
        return (
            f"{self.instance_count} x {self.instance_type.name}, TP{self.tensor_parallel_degree}"
            f" x {self.copies_per_instance} cop{'y' if self.copies_per_instance == 1 else 'ies'}"
            " each"
        )


# ----- Architecture arithmetic ----------------------------------------------------------------


def hidden_size(spec: ModelSpec) -> int:
    """Model width: attention heads x head dimension."""
    return spec.attention_heads * spec.head_dim


def weight_bytes_read(spec: ModelSpec, precision: Precision, batch: int) -> float:
    """Weight bytes one decode step reads. Dense models read every weight; a mixture of experts
    reads the shared weights plus the experts its batch's tokens route to (expected distinct
    experts of E when each token picks k: E x (1 - (1 - k/E)^b))."""
    total = spec.parameters * precision.bytes_per_parameter
    if spec.experts <= 1:
        return total
    expert = (spec.parameters - spec.active_parameters) / (spec.experts - spec.experts_per_token)
    shared = spec.parameters - spec.experts * expert
    touched = spec.experts * (1 - (1 - spec.experts_per_token / spec.experts) ** batch)
    return (shared + touched * expert) * precision.bytes_per_parameter


# ----- The copy model -------------------------------------------------------------------------


@dataclass(frozen=True)
class CopyLevel:
    """What one copy serves at one closed-loop load (``CopyModel.level``)."""

    ms_per_token: float
    """Per-token latency a request sees: end-to-end latency / output tokens."""
    ttft_ms: float
    """Time to first token, queueing included."""
    e2e_ms: float
    """End-to-end latency of one request."""
    tokens_per_s: float
    """Output tokens/s of the copy."""


@dataclass(frozen=True)
class CopyModel:
    """The first-principles timing of one copy of a model on one layout."""

    spec: ModelSpec
    instance_type: InstanceType
    tensor_parallel_degree: int
    precision: Precision
    workload: Workload
    efficiency: Efficiency
    kernel: KernelSpeed | None = None
    """The engine's real speed on quantized weights (None: the ideal fewer-bytes speed-up)."""
    slowdown: float = 1.0
    """Factor ``level`` applies to the times (ms/token, TTFT, end-to-end) and divides the
    tokens/s by: a band edge when sizing for a risk (``recommend(risk=...)``); 1 is the model's
    central prediction. One factor keeps Little's law between the figures."""
    speculation: Speculation | None = None
    """Speculative decoding (``planning.speculation``): decode steps yield more tokens at a
    verification and draft cost; None: plain decoding."""
    decode_attention: DecodeAttention = SHARED
    """How the engine's decode attention reads a grouped-query KV head
    (``planning.decode_attention``): shared (the default) reads the KV cache once a step."""
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO
    """How the KV cache is stored (``KvCachePrecision``): its bytes per token set both the
    sequences that fit (``copy_limits``) and the KV bytes a decode step reads
    (``memory_time_s``)."""
    _figures: tuple[float, float] = field(init=False, repr=False, compare=False)
    """(memory bandwidth GB/s, dense FP16 TFLOPS) of one accelerator."""
    _link: Interconnect = field(init=False, repr=False, compare=False)
    """The link the all-reduces cross (``interconnect_of``), read once: every step asks."""
    _kv_read_per_token: float = field(init=False, repr=False, compare=False)
    """KV-cache bytes a decode step reads per context token of one sequence (the cache's bytes
    per token times the reads of the decode attention kernel), read once: every step asks."""

    def __post_init__(self) -> None:
        # A ValidationError here when the vendor does not publish the figures: no guessing.
        object.__setattr__(
            self, "_figures", self.instance_type.accelerator_figures("instance_type")
        )
        object.__setattr__(
            self, "_link", interconnect_of(self.instance_type, self.tensor_parallel_degree)
        )
        object.__setattr__(
            self,
            "_kv_read_per_token",
            kv_bytes_per_token_per_copy(
                self.spec, self.tensor_parallel_degree, self.precision, self.kv_cache
            )
            * self.decode_attention.kv_read_factor(self.spec, self.efficiency.kv_reread_share),
        )

    @cached_property
    def _bandwidth(self) -> float:
        bandwidth_gbps, _ = self._figures
        return bandwidth_gbps * 1e9 * self.tensor_parallel_degree * self.efficiency.memory_bandwidth

    def _flops_rate(self, efficiency: float) -> float:
        _, tflops = self._figures
        return tflops * 1e12 * self.tensor_parallel_degree * efficiency

    def all_reduce_s(self, tokens: float) -> float:
        """Seconds of the all-reduces of one forward pass over ``tokens`` tokens (0 at TP1)."""
        degree = self.tensor_parallel_degree
        if degree == 1:
            return 0.0
        message = tokens * hidden_size(self.spec) * 2  # fp16 activations
        one = self._link.all_reduce_s(
            degree, message, self.efficiency.all_reduce_scale, self._own_all_reduce
        )
        return ALL_REDUCES_PER_LAYER * self.spec.layers * one

    def _reconstructed_share(self, rows: float) -> float:
        """Share of the quantized weights multiplied as reconstructed FP16 over ``rows`` rows
        (``KernelSpeed.reconstruct_above`` / ``reconstruct_share``)."""
        if self.kernel is None or not self.kernel.reconstructs(rows):
            return 0.0
        return self.kernel.reconstruct_share

    def _weight_compute_factor(self, rows: float) -> float:
        """Share of FP16 compute the weights' matrix products reach over ``rows`` rows: the
        fused quantized kernel's, FP16's (1) for the weights it reconstructs as FP16."""
        if self.kernel is None:
            return 1.0
        share = self._reconstructed_share(rows)
        return 1 / ((1 - share) / self.kernel.compute + share)

    def _weight_traffic_s(self, rows: float, batch: int) -> float:
        """Seconds of weight memory traffic of one forward pass over ``rows`` rows. A fused
        quantized kernel reads the fewer bytes at its ``weight_read`` share of FP16's bandwidth
        efficiency; a reconstructing one reads them, writes the matrix as FP16 and reads it
        back for cuBLAS, all at FP16's efficiency."""
        weights = weight_bytes_read(self.spec, self.precision, batch)
        if self.kernel is None:
            return weights / self._bandwidth
        share = self._reconstructed_share(rows)
        fp16 = weights / self.precision.bytes_per_parameter * FP16_BYTES
        fused = (1 - share) * weights / self.kernel.weight_read
        return (fused + share * (weights + 2 * fp16)) / self._bandwidth

    def overhead_s(self) -> float:
        """The fixed cost of one forward step (grows with layers and TP degree), with the
        quantized kernels' own launch cost per layer (``KernelSpeed.per_layer_ms``)."""
        return self._overhead

    @cached_property
    def _overhead(self) -> float:
        """``overhead_s``, worked out once: every step asks."""
        launches = 0.0 if self.kernel is None else self.kernel.per_layer_ms * self.spec.layers
        return self.efficiency.step_overhead_s(self.spec.layers, self._ranks_paid) + launches / 1000

    @cached_property
    def _own_all_reduce(self) -> bool:
        """Whether the engine's own all-reduce replaces NCCL's on this copy's link: over
        NVLink, for an engine that has one (``Efficiency.rank_cost_over_nvlink`` False)."""
        return not self.efficiency.rank_cost_over_nvlink and self._link.nvlink

    @cached_property
    def _ranks_paid(self) -> int:
        """The TP degree the per-rank step costs are paid at: 1 where the engine's own
        all-reduce replaces NCCL's (``_own_all_reduce``)."""
        return 1 if self._own_all_reduce else self.tensor_parallel_degree

    def draft_forward_overhead_s(self, layers: int) -> float:
        """The fixed cost of one forward step of a ``layers``-layer draft (an EAGLE head) in
        this engine, at this TP degree (``planning.speculation``)."""
        return self.efficiency.step_overhead_s(layers, self._ranks_paid)

    def host_s(self, batch: int) -> float:
        """The host cost of one engine step of ``batch`` sequences that the engine does not
        overlap with the GPU (``Efficiency.host_s``)."""
        return self.efficiency.host_s(batch)

    def memory_time_s(self, batch: int, context: float | None = None) -> float:
        """Seconds a decode step spends reading weights and the batch's KV cache (``context``:
        the mean context of its sequences; default the workload's ``mean_context``), the cache
        as many times as the decode attention kernel reads it (``decode_attention``)."""
        mean = self.workload.mean_context if context is None else context
        kv = batch * mean * self._kv_read_per_token
        return self._weight_traffic_s(batch, batch) + kv / self._bandwidth

    def compute_time_s(self, batch: int, context: float | None = None) -> float:
        """Seconds a decode step spends on arithmetic at the decode compute efficiency
        (``context`` as ``memory_time_s``)."""
        mean = self.workload.mean_context if context is None else context
        per_token = (
            2 * self.spec.active_parameters / self._weight_compute_factor(batch)
            + 4 * self.spec.layers * hidden_size(self.spec) * mean
        )
        return batch * per_token / self._flops_rate(self.efficiency.decode_compute)

    def step_s(self, batch: int, context: float | None = None) -> float:
        """Time per generated token of ``batch`` sequences of mean ``context`` tokens (default
        the workload's): one decode step (roofline + overhead + the host's per-sequence cost +
        all-reduces), or with speculative decoding a verification and its draft over the tokens
        they yield (at the workload's mean context)."""
        if self.speculation is not None:
            return self._speculative.step_s(batch)
        return (
            max(self.memory_time_s(batch, context), self.compute_time_s(batch, context))
            + self.overhead_s()
            + self.host_s(batch)
            + self.all_reduce_s(batch)
        )

    @cached_property
    def _speculative(self) -> SpeculativeTiming:
        from .speculation import SpeculativeTiming

        assert self.speculation is not None
        plain = replace(self, speculation=None)
        draft = self.speculation.draft
        return SpeculativeTiming(
            plain,
            self.speculation,
            None if draft is None else replace(plain, spec=draft, kernel=None),
        )

    def prefill_s(self) -> float:
        """Seconds to prefill one request's input tokens."""
        return self._prefill

    @cached_property
    def _prefill(self) -> float:
        return self.prefill_tokens_s(self.workload.input_tokens)

    def prefill_tokens_s(self, tokens: int, prior: int = 0) -> float:
        """Seconds of one forward pass that prefills ``tokens`` prompt tokens after ``prior``
        tokens already in the KV cache (a chunk of a longer prompt, or the suffix after a
        cached prefix): causal attention over ``prior + tokens`` less what the prior tokens
        already computed, so the chunks of a prompt sum to its whole prefill's attention."""
        attention = (prior + tokens) ** 2 - prior**2
        flops = (
            2 * self.spec.active_parameters * tokens / self._weight_compute_factor(tokens)
            + 2 * self.spec.layers * hidden_size(self.spec) * attention
        )
        # A reconstructing kernel first reads the quantized weights and writes them as FP16
        # (cuBLAS's own weight reads overlap the prefill's arithmetic, as FP16's do).
        quantized = self._reconstructed_share(tokens) * weight_bytes_read(
            self.spec, self.precision, 1
        )
        written = quantized / self.precision.bytes_per_parameter * FP16_BYTES
        reconstruction = (quantized + written) / self._bandwidth
        return (
            flops / self._flops_rate(self.efficiency.prefill_compute)
            + reconstruction
            + self.all_reduce_s(tokens)
            + self.overhead_s()
        )

    def critical_batch(self) -> int:
        """The smallest batch whose decode step is compute-bound (capped at 100,000)."""
        low, high = 1, 100_000
        if self.compute_time_s(high) < self.memory_time_s(high):
            return high
        while low < high:
            middle = (low + high) // 2
            if self.compute_time_s(middle) >= self.memory_time_s(middle):
                high = middle
            else:
                low = middle + 1
        return low

    def cycle_s(self, batch: int) -> float:
        """Time for ``batch`` in-flight requests to each finish once (closed loop): their
        prefills' work, one forward pass's fixed cost per prefill pass, and the output tokens'
        decode steps. Requests finish and rejoin spread over the cycle's decode steps, and those
        that rejoin during one step are prefilled together (TensorRT-LLM's in-flight batching
        packs context requests into one pass up to ``max_num_tokens``; a prefill-first engine
        prefills its waiting requests as one batch), so at most one prefill pass per decode step
        pays the fixed cost: min(batch, output tokens) passes, not one per request."""
        overhead = self.overhead_s()
        passes = min(batch, self.workload.output_tokens)
        return (
            batch * (self.prefill_s() - overhead)
            + passes * overhead
            + self.workload.output_tokens * self.step_s(batch)
        )

    def held_s(self, batch: int, arrivals_per_s: float) -> float:
        """Mean seconds a new request is held back before a running ``batch`` takes in its
        prefill (``Efficiency.prefill_hold_steps``), with requests arriving at
        ``arrivals_per_s``. The engine prefills once the hold H (those decode steps at this
        batch's step time) has passed since its last prefill, or at once when it has. With
        Poisson arrivals at rate r, the first after a prefill comes at a and waits (H - a)+,
        those behind it join the same prefill; per prefill the waits sum to r H^2 / 2 over
        x + e^-x requests (x = r H), a mean of H x / (2 (x + e^-x)): nothing at light load, H / 2
        when requests arrive faster than the hold. A lone request (``batch`` 1) has no running
        batch to wait for."""
        steps = self.efficiency.prefill_hold_steps
        if steps <= 0 or batch <= 1 or arrivals_per_s <= 0:
            return 0.0
        hold = steps * self.step_s(batch)
        x = arrivals_per_s * hold
        return hold * x / (2 * (x + math.exp(-x)))

    def first_token_s(self, batch: int, cycle: float) -> float:
        """Seconds from a request's admission to its first token, in a batch of ``batch``
        whose requests each finish once per ``cycle`` seconds: the step in progress, then its
        own prefill with the share of the other requests' prefills that run with it (a
        prefill-first engine prefills the requests waiting together; its own is not one of
        them)."""
        prefill = self.prefill_s()
        concurrent_prefills = (batch - 1) * prefill / cycle
        return self.step_s(batch) + prefill * (1 + concurrent_prefills)

    def level(self, clients: float, capacity: int) -> CopyLevel:
        """What ``clients`` closed-loop clients see on one copy that holds ``capacity``
        sequences at once."""
        if clients <= 0:
            return CopyLevel(0.0, 0.0, 0.0, 0.0)
        batch = max(1, min(math.ceil(clients), capacity))
        cycle = self.cycle_s(batch)
        served = min(clients, capacity)
        # Held back before its prefill, a request is out of the batch's cycle that long.
        held = self.held_s(batch, (served - 1) / cycle)
        cycle += held
        tokens_per_s = served * self.workload.output_tokens / cycle
        # Little's law: clients = throughput x e2e latency.
        e2e = clients * self.workload.output_tokens / tokens_per_s
        waiting = e2e - cycle  # time queued for a slot when clients exceed capacity
        ttft = waiting + held + self.first_token_s(batch, cycle)
        slower = self.slowdown
        return CopyLevel(
            ms_per_token=e2e / self.workload.output_tokens * 1000 * slower,
            ttft_ms=ttft * 1000 * slower,
            e2e_ms=e2e * 1000 * slower,
            tokens_per_s=tokens_per_s / slower,
        )


# ----- Predictions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LevelPrediction:
    """What the model predicts at one concurrency of the whole deployment."""

    concurrency: int
    """In-flight requests across the whole deployment (instances x copies)."""
    ms_per_token: float
    """Per-token latency a request sees: end-to-end latency / output tokens."""
    ttft_ms: float
    """Time to first token: prefill + queueing."""
    e2e_ms: float
    """End-to-end latency of one request."""
    tokens_per_s: float
    """Output tokens/s of the whole deployment."""
    requests_per_s: float
    """Requests/s of the whole deployment."""
    ms_per_token_band: tuple[float, float] | None = None
    """(p10, p90) of ms/token: the conformal band of the level's regime and the prediction's
    extrapolation distance (``planning.conformal_band``)."""
    tokens_per_s_band: tuple[float, float] | None = None
    """(p10, p90) of tokens/s."""
    regime: str | None = None
    """The level's load regime against the copy's knee (``conformal_band.REGIMES``)."""
    calibrated_ms_per_token_band: tuple[float, float] | None = None
    """(p10, p90) of ms/token from a calibration's band (``planning.calibrated_band``); None
    without a calibration, or where it is no narrower than the engine profile's."""
    calibrated_tokens_per_s_band: tuple[float, float] | None = None
    """(p10, p90) of tokens/s from a calibration's band."""

    def with_band(self, band: ConformalBand) -> LevelPrediction:
        """This level with the p10-p90 ranges of its conformal ``band``."""
        return replace(
            self,
            ms_per_token_band=band.ms_range(self.ms_per_token),
            tokens_per_s_band=band.tokens_range(self.tokens_per_s),
            regime=band.regime,
        )

    def with_calibrated_band(self, band: Band) -> LevelPrediction:
        """This level with the p10-p90 ranges of a calibration's ``band``."""
        return replace(
            self,
            calibrated_ms_per_token_band=band.ms_range(self.ms_per_token),
            calibrated_tokens_per_s_band=band.tokens_range(self.tokens_per_s),
        )

    @property
    def times_out(self) -> bool:
        """True when a request at this level takes longer than SageMaker's 60 s invocation
        timeout (``INVOCATION_TIMEOUT_S``): such requests fail, so the level's figures are
        what the copy would do, not what clients receive."""
        return self.e2e_ms > INVOCATION_TIMEOUT_S * 1000

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (rounded)."""
        data: dict[str, Any] = {
            "concurrency": self.concurrency,
            "ms_per_token": round(self.ms_per_token, 2),
            "ttft_ms": round(self.ttft_ms, 1),
            "e2e_ms": round(self.e2e_ms, 1),
            "tokens_per_s": round(self.tokens_per_s, 1),
            "requests_per_s": round(self.requests_per_s, 3),
            "times_out": self.times_out,
        }
        if self.regime is not None:
            data["regime"] = self.regime
        for name, ms, tokens in (
            ("", self.ms_per_token_band, self.tokens_per_s_band),
            ("calibrated_", self.calibrated_ms_per_token_band, self.calibrated_tokens_per_s_band),
        ):
            if ms is not None and tokens is not None:
                data[f"{name}ms_per_token_p10_p90"] = [round(v, 2) for v in ms]
                data[f"{name}tokens_per_s_p10_p90"] = [round(v, 1) for v in tokens]
        return data


@dataclass(frozen=True)
class Prediction:
    """The model's prediction for one layout and workload at several concurrencies."""

    layout: Layout
    workload: Workload
    levels: list[LevelPrediction]
    knee: Knee
    max_concurrency: int
    """Whole deployment: copies x min(KV capacity, server batch limit, 60 s timeout)."""
    assumptions: list[str]
    extrapolated: bool = True
    """True when no calibration covers the prediction (see ``assumptions``)."""
    max_concurrency_reason: str = ""
    """Which limit sets ``max_concurrency``."""
    engine: str = ""
    """The engine profile the figures come from (``planning.engine_profiles``)."""
    band: Band | None = None
    """The engine profile's residual band (its cross-validated residuals, widened where the
    prediction extrapolates: ``band.reasons``): ``recommend`` sizes the peak at its median and
    ``Risk.WORST_CASE`` at its slowest residual (the JSON's ``sizing_factors``). The levels'
    p10-p90 are the conformal band's, not this band's."""
    extrapolation: tuple[str, ...] = ()
    """Each way the prediction leaves what its profile was fitted on: the conformal band's
    distance (``prediction_reasons``)."""
    calibrated_band: Band | None = None
    """The band a calibration leaves (``planning.calibrated_band``); None without one."""

    def to_dict(self) -> dict[str, Any]:
        """The ``predict --format json`` document."""
        data: dict[str, Any] = {
            "levels": [level.to_dict() for level in self.levels],
            "knee": {"concurrency": self.knee.concurrency, "reason": self.knee.detail},
            "max_concurrency": self.max_concurrency,
            "assumptions": list(self.assumptions),
        }
        if self.engine:
            data["engine"] = self.engine
        if self.band is not None:
            data["sizing_factors"] = self.band.sizing_factors()
        data["conformal_band"] = {
            "extrapolation": list(self.extrapolation),
            "table": conformal_bands().provenance,
        }
        if self.calibrated_band is not None:
            data["calibrated_band"] = self.calibrated_band.to_dict()
        return data


@dataclass(frozen=True)
class CopyLimits:
    """What limits the sequences one copy serves at once."""

    kv_sequences: int
    batch_limit: int
    timeout_sequences: int

    @property
    def capacity(self) -> int:
        """Sequences one copy holds at once: min of the KV cache and the server's batch limit."""
        return min(self.kv_sequences, self.batch_limit)

    @property
    def max_concurrency(self) -> int:
        """Requests one copy can have in flight: capacity, and within the 60 s timeout."""
        return min(self.capacity, self.timeout_sequences)

    kv_token_budget: bool = False
    """True when the engine batches by a KV-token budget (TGI) rather than a request count."""

    def reason(self) -> str:
        """Which limit binds, in words."""
        limit = self.max_concurrency
        if limit == self.timeout_sequences and self.timeout_sequences < self.capacity:
            return f"the {INVOCATION_TIMEOUT_S:g} s invocation timeout"
        if limit == self.kv_sequences:
            return "the KV-token budget" if self.kv_token_budget else "the KV cache"
        return "the server batch limit"


def _timeout_sequences(model: CopyModel, capacity: int) -> int:
    """The most in-flight requests per copy whose end-to-end latency stays within 60 s (the
    cycle grows with the batch: a binary search)."""
    low, high = 0, capacity
    while low < high:
        middle = (low + high + 1) // 2
        if model.cycle_s(middle) <= INVOCATION_TIMEOUT_S:
            low = middle
        else:
            high = middle - 1
    return low


def copy_limits(
    model: CopyModel,
    max_batch_size: int | None = DEFAULT_MAX_BATCH_SIZE,
    *,
    max_batch_total_tokens: int | None = None,
    kv_cache_memory: KvCacheMemory | None = None,
) -> tuple[CopyLimits, Memory]:
    """The limits of one copy, and its memory breakdown.

    :param max_batch_size: the engine's request-count cap per copy; None when it has none and
        batches by a KV-token budget only (TGI).
    :param max_batch_total_tokens: a KV-token budget per copy (TGI ``MAX_BATCH_TOTAL_TOKENS``);
        None: what the memory left after the weights holds.
    :param kv_cache_memory: the share of the memory the engine allocates (its profile's
        ``Batching.kv_cache_memory``); None: all of it.
    """
    memory = copy_memory(
        model.spec,
        model.instance_type,
        model.tensor_parallel_degree,
        model.precision,
        model.workload.total_tokens,
        model.kv_cache,
    )
    if model.speculation is not None:  # the draft's weights sit beside the target's
        from .speculation import draft_weight_bytes

        draft = draft_weight_bytes(
            model.speculation, model.spec, model.precision.bytes_per_parameter
        )
        memory = replace(memory, weights_bytes=memory.weights_bytes + draft)
    if kv_cache_memory is not None:
        memory = kv_cache_memory.applied_to(memory)
    kv = memory.sequences
    if max_batch_total_tokens is not None:
        kv = min(kv, max_batch_total_tokens // model.workload.total_tokens)
    limit = kv if max_batch_size is None else max_batch_size
    capacity = min(kv, limit)
    return (
        CopyLimits(
            kv, limit, _timeout_sequences(model, capacity), kv_token_budget=max_batch_size is None
        ),
        memory,
    )


def profile_limits(
    model: CopyModel,
    profile: EngineProfile,
    max_batch_size: int | None = None,
    *,
    batch: BatchSettings | None = None,
) -> tuple[CopyLimits, Memory]:
    """``copy_limits`` under the deployment's batch settings (``scheduling.limits``): ``batch``
    as configured, else the engine profile's defaults with ``max_batch_size`` as its request
    cap. The simulation (``scheduling.selection.policy_for``) reads the same settings."""
    if batch is None:
        batch = BatchSettings.of_profile(profile, max_sequences=max_batch_size)
    return copy_limits(
        model,
        batch.max_sequences,
        max_batch_total_tokens=batch.max_batch_total_tokens,
        kv_cache_memory=profile.batching.kv_cache_memory,
    )


def profile_model(
    spec: ModelSpec,
    layout: Layout,
    precision: Precision,
    workload: Workload,
    profile: EngineProfile,
    efficiency: Efficiency | None = None,
    slowdown: float = 1.0,
    speculation: Speculation | None = None,
    decode_attention: DecodeAttention = SHARED,
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO,
) -> CopyModel:
    """A ``CopyModel`` of one copy of ``layout`` with an engine profile's efficiencies (or
    measured ``efficiency``), its quantized-kernel speed, a band ``slowdown``, optional
    speculative decoding, the decode attention kernel (``planning.decode_attention``) and
    the KV cache's precision."""
    return CopyModel(
        spec,
        layout.instance_type,
        layout.tensor_parallel_degree,
        precision,
        workload,
        efficiency if efficiency is not None else efficiency_of(profile),
        profile.kernel(precision),
        slowdown,
        speculation,
        decode_attention=decode_attention,
        kv_cache=kv_cache,
    )


def prediction_band(
    profile: EngineProfile,
    spec: ModelSpec,
    layout: Layout,
    workload: Workload,
    precision: Precision,
    optimization: Optimization | None = None,
) -> Band:
    """The band of a prediction: the profile's residuals, widened for each way the prediction
    leaves what the profile was fitted on (``prediction_reasons``)."""
    return band_of(
        profile.residuals,
        prediction_reasons(profile, spec, layout, workload, precision, optimization),
    )


def prediction_reasons(
    profile: EngineProfile,
    spec: ModelSpec,
    layout: Layout,
    workload: Workload,
    precision: Precision,
    optimization: Optimization | None = None,
) -> list[str]:
    """Each way a prediction leaves what ``profile`` was fitted on (speculative decoding is
    not in the fitted data): its extrapolation distance."""
    reasons = profile.extrapolation_reasons(
        spec,
        gpu_name(layout.instance_type),
        layout.tensor_parallel_degree,
        workload.input_tokens,
        precision,
    )
    if optimization is not None and optimization.speculation is not None:
        reasons.append(
            "speculative decoding: no published measurement of it is in the fitted data; "
            "its tokens per step assume the stated acceptance rate"
        )
    return reasons


def optimization_notes(
    optimization: Optimization,
    model: CopyModel,
    limits: CopyLimits,
    *,
    price_per_hour: float | None,
) -> list[str]:
    """What an optimization changes in a prediction, and the job it needs, in words."""
    notes = [f"optimization: {optimization.describe()}"]
    if model.speculation is not None:
        notes.append(model._speculative.describe(limits.capacity))
    job = optimization.job(model.spec, price_per_hour)
    notes.append(f"needs an optimization job: {job.describe()}")
    return notes


_GPU_NAMES = {
    "NVIDIA A10G": "A10G",
    "NVIDIA L4": "L4",
    "NVIDIA L40S": "L40S",
    "NVIDIA A100 40GB": "A100-40GB",
    "NVIDIA A100 80GB": "A100-80GB",
    "NVIDIA H100": "H100-80GB",
    "NVIDIA H200": "H200",
}


def gpu_name(instance_type: InstanceType) -> str | None:
    """The measurement data's name of an instance type's accelerator (``A10G``,
    ``A100-40GB``, ``A100-80GB``, ``H100-80GB`` ...), None when it has none."""
    accelerator = instance_type.accelerator
    if accelerator is None:
        return None
    return _GPU_NAMES.get(accelerator.name, accelerator.name)


def _engine_reserve_words(memory: Memory, profile: EngineProfile | None) -> str:
    """E.g. `` - 8.6 GB the engine leaves unallocated (it takes 90% of the accelerators' memory)``,
    or nothing where the engine takes all of it."""
    if profile is None or not memory.engine_reserve_bytes:
        return ""
    share = profile.batching.kv_cache_memory
    setting = f", as {share.set_by} sets" if share.set_by else ""
    return (
        f" - {memory.engine_reserve_bytes / GB:.1f} GB the engine leaves unallocated "
        f"(it takes {share.describe()}{setting})"
    )


def _compute_bound_note(model: CopyModel) -> str:
    critical = model.critical_batch()
    if critical >= 100_000:
        return (
            "decode stays memory-bound at any batch: each sequence's KV reads grow as fast as "
            "its FLOPs"
        )
    return f"decode turns compute-bound near batch {critical}"


def copy_knee(
    model: CopyModel,
    limits: CopyLimits,
    slo_ms_per_token: float | None = None,
    slo_ttft_ms: float | None = None,
) -> Knee:
    """The knee of one copy under the benchmark's rule (``planning.knee``): the last
    concurrency, doubling from 1, before one that buys < 10 % throughput per doubling or
    breaks the SLO; or the copy's limit. ``concurrency`` is 0 when one request already breaks
    the SLO, and ``detail`` says why in words."""
    limits_ms = slo_ms_per_token is not None and math.isfinite(slo_ms_per_token)
    per_token = slo_ms_per_token if limits_ms else None  # a TTFT-only SLO: no per-token limit
    rule = KneeRule(KNEE_MIN_GAIN_PER_DOUBLING, per_token, None, slo_ttft_ms)
    limit = limits.max_concurrency
    if limit < 1:
        return Knee(0, rule.describe(), detail="no request fits: " + limits.reason())
    previous: LevelFigures | None = None
    concurrency = 1
    while True:
        at = model.level(concurrency, limits.capacity)
        figures = LevelFigures(concurrency, at.tokens_per_s, at.ms_per_token, at.ttft_ms)
        tripped = trip_reason(rule, figures, previous)
        if tripped is not None:
            knee = 0 if previous is None else int(previous.concurrency)
            detail = _knee_detail(model, tripped, knee, figures, rule)
            return Knee(knee, rule.describe(), concurrency, tripped, detail=detail)
        if concurrency >= limit:
            detail = f"{limit} per copy is the most {limits.reason()} allows"
            return Knee(limit, rule.describe(), detail=detail)
        previous = figures
        concurrency = min(concurrency * 2, limit)


def _knee_detail(
    model: CopyModel, tripped: str, knee: int, level: LevelFigures, rule: KneeRule
) -> str:
    """Why a predicted knee is where it is, in words."""
    if tripped == THROUGHPUT:
        return (
            f"throughput gain per doubling falls below {rule.min_gain_per_doubling:.0%} past "
            f"{knee} per copy ({_compute_bound_note(model)}; KV reads and prefills grow with "
            "the batch)"
        )
    if tripped == TTFT:
        limit, figure, unit = rule.slo_ttft_ms, level.ttft_ms, "ms to first token"
        if knee:  # TTFT grows with the load: name the figure that broke the limit
            return f"{int(level.concurrency)} per copy takes {figure:.0f} {unit} > {limit:g}"
    else:
        limit, figure, unit = rule.slo_ms_per_token, level.ms_per_token, "ms/token"
    if knee == 0:
        return f"even one request takes {figure:.1f} {unit} > {limit:g}"
    return f"{int(level.concurrency)} per copy exceeds {limit:g} {unit}"


def _deployment_level(
    model: CopyModel, copies: int, concurrency: int, capacity: int
) -> LevelPrediction:
    """Spread ``concurrency`` over ``copies`` (the load balancer's even share, some copies one
    more) and sum."""
    base, extra = divmod(concurrency, copies)
    parts = [(base + 1, extra), (base, copies - extra)]
    tokens = 0.0
    worst = (0.0, 0.0, 0.0)
    for clients, count in parts:
        if count == 0 or clients == 0:
            continue
        at = model.level(clients, capacity)
        tokens += at.tokens_per_s * count
        worst = max(worst, (at.ms_per_token, at.ttft_ms, at.e2e_ms))
    ms, ttft, e2e = worst
    return LevelPrediction(
        concurrency=concurrency,
        ms_per_token=ms,
        ttft_ms=ttft,
        e2e_ms=e2e,
        tokens_per_s=tokens,
        requests_per_s=tokens / model.workload.output_tokens,
    )


def precision_problem(instance_type: InstanceType, precision: Precision) -> str | None:
    """Why ``instance_type``'s accelerator cannot serve ``precision`` weights at the speed the
    model assumes, or None: FP8 needs FP8 tensor cores (``Accelerator.fp8``; on Ampere an
    engine falls back to weight-only kernels the profiles have no speed for), BF16 a device
    with BF16 arithmetic (``Accelerator.bf16``: not a T4)."""
    accelerator = instance_type.accelerator
    if accelerator is None:
        return None
    if precision is Precision.FP8 and not accelerator.fp8:
        return (
            f"{accelerator.name} has no FP8 tensor cores (FP8 needs Ada, Hopper or Blackwell), "
            "so FP8 weights are not offered on it"
        )
    if precision is Precision.BF16 and not accelerator.bf16:
        return (
            f"{accelerator.name} has no BF16 (it needs compute capability 8.0, Ampere or later; "
            "vLLM refuses to start), so BF16 weights are not offered on it"
        )
    return None


def precision_fix(precision: Precision) -> str:
    """What to do where ``precision_problem`` refuses ``precision``."""
    if precision is Precision.BF16:
        return "serve FP16 on it (the same weights, cast at load), or pick an Ampere or later GPU"
    return "serve FP16/BF16 or int4 AWQ on it, or pick an instance type with FP8 (g6, g6e, p5)"


def kv_cache_precision_problem(
    instance_type: InstanceType, kv_cache: KvCachePrecision
) -> str | None:
    """Why ``instance_type``'s accelerator cannot hold a ``kv_cache`` KV cache, or None: an FP8
    KV cache needs FP8 support (``Accelerator.fp8``: TensorRT-LLM's FP8 KV cache and FP8
    attention kernels run on Ada, Hopper and Blackwell; nvidia.github.io/TensorRT-LLM,
    "Quantization", support matrix), as FP8 weights do (``precision_problem``)."""
    accelerator = instance_type.accelerator
    if kv_cache is not KvCachePrecision.FP8 or accelerator is None or accelerator.fp8:
        return None
    return (
        f"{accelerator.name} has no FP8 support (an FP8 KV cache needs Ada, Hopper or "
        "Blackwell), so an FP8 KV cache is not offered on it"
    )


def check_kv_cache_precision(
    instance_type: InstanceType,
    kv_cache: KvCachePrecision,
    fix: str = "keep the KV cache at auto (the activation precision) on it, or pick an instance "
    "type with FP8 (g6, g6e, p5)",
) -> None:
    """Raise a ValidationError naming ``kv_cache_precision``, its value, the
    ``kv_cache_precision_problem`` and ``fix`` (the caller's remedy) when ``instance_type``
    cannot hold a ``kv_cache`` KV cache."""
    problem = kv_cache_precision_problem(instance_type, kv_cache)
    if problem:
        raise ValidationError("kv_cache_precision", kv_cache.value, problem, fix)


def _check_fit(
    spec: ModelSpec,
    layout: Layout,
    memory: Memory,
    memory_precision: Precision,
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO,
) -> None:
    problem = precision_problem(layout.instance_type, memory_precision)
    if problem:
        raise ValidationError(
            "precision", memory_precision.value, problem, precision_fix(memory_precision)
        )
    check_kv_cache_precision(layout.instance_type, kv_cache)
    problem = head_divisibility_problem(spec, layout.tensor_parallel_degree)
    if problem:
        raise ValidationError(
            "tensor_parallel_degree",
            layout.tensor_parallel_degree,
            problem,
            "use a degree that divides the attention and KV heads",
        )
    problem = host_memory_problem(spec, layout.instance_type, memory_precision)
    if problem:
        raise ValidationError(
            "instance_type",
            layout.instance_type.name,
            problem,
            "use a larger Neuron instance (more host memory) or a GPU instance",
        )
    if memory.sequences < 1:
        raise ValidationError(
            "layout",
            layout.describe(),
            f"{spec.name} leaves {memory.kv_free_bytes / GB:.1f} GB for the KV cache per copy"
            f"{memory.after_the_reserve()}; "
            f"it needs at least {MIN_KV_HEADROOM_BYTES / GB:g} GB and one sequence of "
            f"{memory.kv_bytes_per_sequence / GB:.2f} GB",
            "use a larger tensor-parallel degree, a larger instance type or quantization",
        )


class MeasuredEfficiency(Protocol):
    """Efficiency factors measured on a benchmark, as ``predict`` uses them: a
    ``planning.calibration.Calibration`` (which builds on this module, so the need is declared
    here rather than imported)."""

    @property
    def efficiency(self) -> Efficiency: ...

    def describe(self) -> str: ...

    def coverage_notes(
        self,
        spec: ModelSpec,
        layout: Layout,
        workload: Workload,
        precision: Precision,
        concurrency: Sequence[int],
        kv_cache_precision: KvCachePrecision = KvCachePrecision.AUTO,
    ) -> list[str]: ...


def predict(
    spec: ModelSpec,
    layout: Layout,
    workload: Workload,
    concurrency: Sequence[int],
    *,
    precision: Precision = Precision.FP16,
    calibration: MeasuredEfficiency | None = None,
    max_batch_size: int | None = None,
    engine: EngineProfile | ContainerRelease | str | None = None,
    optimization: Optimization | None = None,
    kv_cache_precision: KvCachePrecision = KvCachePrecision.AUTO,
) -> Prediction:
    """Predict ms/token, TTFT and throughput of ``layout`` serving ``workload`` at each
    ``concurrency`` (whole deployment), its knee, its maximum concurrency and the band of
    the figures.

    :param optimization: serve the model optimized (``Optimization.awq()``, ``.fp8()``,
        ``.speculative_decoding(...)``): its precision replaces ``precision``, and the
        assumptions name the optimization job it needs with its time and cost.

    :param calibration: efficiency factors fitted from a benchmark; default the engine
        profile's (fitted to published measurements, or a prior: ``profile_origin``).
    :param max_batch_size: the server's per-copy request cap; default the engine's (vLLM/LMI
        256, TGI none: a KV-token budget).
    :param engine: the engine profile (``planning.engine_profiles``), its name, or None for the
        default (``lmi-vllm-v1``; ``lmi-neuronx`` on Inferentia/Trainium);
        ``ContainerImage.engine_profile`` gives an image's.
    :param kv_cache_precision: how the engine stores the KV cache (``KvCachePrecision``);
        ``FP8`` halves its bytes per token (twice the sequences fit, half the KV reads per
        step) and needs an accelerator with FP8. Default ``AUTO``: the activation precision.
    """
    levels_in = list(concurrency)
    if not levels_in or any(
        not isinstance(c, int) or isinstance(c, bool) or c < 1 for c in levels_in
    ):
        raise ValidationError(
            "concurrency", levels_in, "must be positive integers", "pass e.g. 1,2,4,8"
        )
    if max_batch_size is not None and max_batch_size < 1:
        raise ValidationError("max_batch_size", max_batch_size, "must be positive", "pass 256")
    check_workload_context(spec, workload)
    profile = profile_on(engine, layout.instance_type)
    if optimization is not None:
        optimization.check_engine(engine, profile.name)
        precision = optimization.precision(precision)
    model = profile_model(
        spec,
        layout,
        precision,
        workload,
        profile,
        calibration.efficiency if calibration else None,
        speculation=optimization.speculation if optimization else None,
        kv_cache=kv_cache_precision,
    )
    limits, memory = profile_limits(model, profile, max_batch_size)
    _check_fit(spec, layout, memory, precision, kv_cache_precision)
    copies = layout.copies
    knee = copy_knee(model, limits)
    reasons = prediction_reasons(profile, spec, layout, workload, precision, optimization)
    band = band_of(profile.residuals, reasons)
    levels = banded_levels(
        [_deployment_level(model, copies, c, limits.capacity) for c in sorted(levels_in)],
        copies,
        knee.concurrency or 1,
        len(reasons),
    )
    assumptions = describe_assumptions(model, layout, limits, memory, profile=profile)
    if optimization is not None:
        price = DEFAULT_PRICE_LIST.price_per_hour(layout.instance_type)  # as recommend's default
        assumptions += optimization_notes(optimization, model, limits, price_per_hour=price)
    assumptions.append(band.describe())
    assumptions += conformal_notes(levels, len(reasons))
    extrapolated = True
    if calibration is None:
        assumptions.append(
            f"no calibration: efficiency factors from {profile_origin(profile)}; every figure is "
            "extrapolated (pass --calibration results.json from a benchmark of this layout)"
        )
    else:
        assumptions.append(calibration.describe())
        notes = calibration.coverage_notes(
            spec, layout, workload, precision, levels_in, kv_cache_precision
        )
        extrapolated = bool(notes)
        assumptions.extend(notes)
    return Prediction(
        layout=layout,
        workload=workload,
        levels=levels,
        knee=replace(
            knee,
            concurrency=(knee.concurrency or 0) * copies,
            tripped_at=None if knee.tripped_at is None else knee.tripped_at * copies,
            detail=f"per copy: {knee.detail}; x {copies} copies",
        ),
        max_concurrency=limits.max_concurrency * copies,
        assumptions=assumptions,
        extrapolated=extrapolated,
        max_concurrency_reason=limits.reason(),
        engine=profile.name,
        band=band,
        extrapolation=tuple(reasons),
    )


def conformal_notes(levels: Sequence[LevelPrediction], reasons: int) -> list[str]:
    """Where the levels' p10-p90 come from: the table, then the cell of each regime they are
    in (a pooled cell says so)."""
    table = conformal_bands()
    regimes = [r for r in REGIMES if any(level.regime == r for level in levels)]
    return [
        f"levels' p10-p90: the conformal band of the level's load regime ({table.provenance})",
        *(f"conformal band, {table.band(regime, reasons).describe()}" for regime in regimes),
    ]


def banded_levels(
    levels: Sequence[LevelPrediction], copies: int, knee_per_copy: int, reasons: int
) -> list[LevelPrediction]:
    """``levels`` (of ``copies`` copies whose knee is ``knee_per_copy``) with the conformal
    band of each one's load regime at ``reasons`` extrapolation reasons."""
    table = conformal_bands()
    return [
        level.with_band(
            table.band(load_regime(level.concurrency / copies, max(1, knee_per_copy)), reasons)
        )
        for level in levels
    ]


def describe_assumptions(
    model: CopyModel,
    layout: Layout,
    limits: CopyLimits,
    memory: Memory,
    *,
    profile: EngineProfile | None = None,
) -> list[str]:
    """The model's inputs and limits, in words, in order (``profile``: the engine profile
    the model uses, described after the accelerator and named in the quantized-weights
    line)."""
    accelerator = layout.instance_type.accelerator
    assert accelerator is not None
    degree = layout.tensor_parallel_degree
    lines = [
        f"layout: {layout.describe()} = {layout.copies} copies; concurrency is for the whole "
        "deployment, spread evenly over the copies",
        f"workload: {model.workload.input_tokens} input + {model.workload.output_tokens} output "
        "tokens per request, closed loop (each client sends its next request when the last ends)",
        f"{accelerator.name}: {model._figures[0]:g} GB/s, "
        f"{model._figures[1]:g} dense FP16 TFLOPS each (aws-facts; NVIDIA/AWS datasheets)",
        *([profile.describe()] if profile is not None else []),
        f"efficiency: {model.efficiency.describe()}",
        f"memory per copy: {memory.usable_bytes / GB:.1f} GB usable - "
        f"{memory.weights_bytes / GB:.1f} GB weights - "
        f"{memory.overhead_bytes / GB:.1f} GB overhead"
        + _engine_reserve_words(memory, profile)
        + f" = {memory.kv_free_bytes / GB:.1f} GB KV cache = {limits.kv_sequences} sequences of "
        f"{model.workload.total_tokens} tokens"
        + (" (FP8 KV cache: 1 byte per element)" if model.kv_cache is KvCachePrecision.FP8 else ""),
        f"server batch limit {limits.batch_limit} per copy; {limits.timeout_sequences} per copy "
        f"within the {INVOCATION_TIMEOUT_S:g} s invocation timeout; max concurrency set by "
        f"{limits.reason()}",
        f"decode step at batch 1: {model.step_s(1) * 1000:.1f} ms; prefill of one request "
        f"{model.prefill_s() * 1000:.1f} ms; {_compute_bound_note(model)}",
    ]
    if degree > 1:
        link = interconnect_of(layout.instance_type, degree)
        latency = f"{link.latency_us:g} us at TP2: {link.source}"
        if model._own_all_reduce and link.peer_all_reduce_latency_us is not None:
            latency = (
                f"{link.peer_all_reduce_latency_us:g} us by the engine's own all-reduce up to "
                f"{PEER_ALL_REDUCE_MAX_BYTES // 2**20} MiB: {link.peer_all_reduce_source}; "
                f"NCCL's beyond: {latency}"
            )
        lines.append(
            f"tensor parallelism: {ALL_REDUCES_PER_LAYER * model.spec.layers} all-reduces per "
            f"step over {link.name}{link.unmeasured_note()} ({link.bandwidth_gbps:g} GB/s, "
            f"{latency}) = {model.all_reduce_s(1) * 1000:.2f} ms per step at batch 1"
        )
    if model.precision.bytes_per_parameter < 2:
        lines.append(_quantized_note(model, profile.name if profile else None))
    if model.spec.experts > 1:
        lines.append(
            f"mixture of experts: {model.spec.active_parameters / 1e9:.1f}B of "
            f"{model.spec.parameters / 1e9:.1f}B parameters active per token; a step reads the "
            "experts its batch routes to"
        )
    return lines


def _quantized_note(model: CopyModel, engine: str | None) -> str:
    """The quantized weights' line: the kernel speed the model used, and whose it is."""
    kind = model.precision.value
    kernel = model.kernel
    if kernel is None:
        return (
            f"{kind} weights: no kernel speed stated, modeled as fewer bytes read at the FP16 "
            "kernels' bandwidth efficiency and FP16 compute (the ideal speed-up): calibrate"
        )
    ideal = 2 / model.precision.bytes_per_parameter
    whose = f"the {engine} profile's" if engine else "the stated"
    note = (
        f"{kind} weights: {whose} {kind} kernels read weights at {kernel.weight_read:.0%} of the "
        f"FP16 kernels' bandwidth efficiency (about {ideal * kernel.weight_read:.1f}x faster "
        f"weight reads than FP16, not the ideal {ideal:g}x) and reach {kernel.compute:.0%} of "
        f"FP16 compute ({kernel.source})"
    )
    if kernel.reconstruct_above is not None:
        note += (
            f"; above {kernel.reconstruct_above} sequences per step (and in prefill) "
            f"{kernel.reconstruct_share:.0%} of the weights are dequantized to FP16 and "
            "multiplied with cuBLAS, which moves more bytes than FP16 weights do"
        )
    if kernel.per_layer_ms:
        note += (
            f"; their launches cost {kernel.per_layer_ms:g} ms per layer per step at any TP "
            f"degree ({kernel.per_layer_ms * model.spec.layers:.1f} ms for "
            f"{model.spec.layers} layers; why: the profile's kernels.{kind}.per_layer_source)"
        )
    return note
