"""What a serving engine reaches of an accelerator's peaks, and its fixed costs
(``Efficiency``): the fractions of memory bandwidth and compute a decode step and a prefill
reach, the step's overheads (per step, per layer, per extra tensor-parallel rank, per sequence
on the host) and the all-reduce scale. An engine profile states them (``efficiency_of``); a
benchmark's results replace them (``planning.calibration``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ValidationError
from .engine_profiles import EngineProfile


@dataclass(frozen=True)
class Efficiency:
    """Fractions of the accelerator's peak a serving engine reaches, and its fixed costs.

    Defaults are from public measurements (see each field); a benchmark's results replace them
    (``planning.calibration_fit.calibrate``).
    """

    memory_bandwidth: float = 0.75
    """Fraction of peak memory bandwidth decode reaches. Default 0.75: optimized decode kernels
    reach 60-80 % "model bandwidth utilization" (Databricks, "LLM Inference Performance
    Engineering: Best Practices", 2023); with 0.75 and the 2 ms overhead below the model lands
    within 15 % of NVIDIA NeMo's published Llama-2-7B latencies on A100 at TP 1/2/4/8 and of
    Hugging Face's single-request TGI figures on ml.g5.12xlarge (16.8 ms/token for Llama 2 7B,
    21.0 for 13B; "Llama 2 on Amazon SageMaker a Benchmark", 2023)."""
    decode_compute: float = 0.5
    """Fraction of peak dense FP16 FLOPS large decode batches reach. Default 0.5 (decode GEMMs
    are skinny; serving engines reach 30-60 % model FLOPs utilization, Pope et al. 2023)."""
    prefill_compute: float = 0.6
    """Fraction of peak FLOPS prefill reaches. Default 0.6 (prefill runs large GEMMs)."""
    step_overhead_ms: float = 2.0
    """Fixed per-step cost (scheduler, sampling, kernel launches), ms. Default 2 ms: fitted with
    ``memory_bandwidth`` to the NeMo latencies above."""
    per_layer_ms: float = 0.0
    """Per-step cost per transformer layer, ms (an engine profile's; 0 in the defaults)."""
    per_layer_per_extra_rank_ms: float = 0.0
    """Per-step cost per layer for each doubling of the tensor-parallel degree (log2 TP: once
    at TP2, twice at TP4, three times at TP8), ms (an engine profile's; 0 in the defaults)."""
    per_extra_rank_ms: float = 0.0
    """Per-step cost for each doubling of the tensor-parallel degree (log2 TP), ms: the rank
    synchronisation of the SageMaker containers (TGI's router steps every shard over gRPC;
    collectives synchronise in log2 TP rounds), which keeps their latency nearly flat from
    TP1 to TP8 on g5 (an engine profile's; 0 in the defaults)."""
    all_reduce_scale: float = 1.0
    """Multiplier on the all-reduce transfer time (bytes / nccl-tests bandwidth): the engine's
    all-reduce of large (prefill) messages is often slower than the interconnect allows."""
    per_sequence_ms: float = 0.0
    """Host (CPU) cost per sequence in the batch per decode step, ms, that the engine does not
    overlap with the GPU's step: per-request Python work every step (sampling bookkeeping,
    stopping criteria, incremental detokenization, building each request's output), which
    makes a step at 256 sequences slower than its roofline. Each engine profile cites its
    value (0 in the defaults)."""
    prefill_hold_steps: float = 0.0
    """Decode steps a new request can be held back before a running batch takes in its
    prefill: a prefill-first engine keeps decoding rather than stall the batch for every
    arrival (TGI's router waits up to ``max_waiting_tokens``, 20 steps by default, while fewer
    than ``waiting_served_ratio`` x the running batch are waiting: ``planning.scheduling.tgi``).
    0 (the default): the next step takes it. ``calibrate`` fits it to the TTFT a benchmark
    measured under load (``CopyModel.held_s``)."""
    kv_reread_share: float = 0.0
    """Share of each extra read of a KV head that comes from memory rather than L2 when the
    decode attention kernel runs one query head per thread block
    (``decode_attention.DecodeAttention.per_query_head``): a grouped-query step then reads the
    KV cache ``1 + (group - 1) x share`` times. 0 (the default): L2 serves every re-read; an
    engine profile fits it where its rows ran such a kernel."""

    rank_cost_over_nvlink: bool = True
    """Whether the per-rank step costs (``per_extra_rank_ms``, ``per_layer_per_extra_rank_ms``)
    apply where the accelerators share NVLink. False for an engine whose own all-reduce
    replaces NCCL's there and only there (vLLM's custom all-reduce: NVLink only, disabled on
    more than two PCIe GPUs); the link's all-reduce time still applies, at that kernel's
    measured latency where the link has it (``Interconnect.peer_all_reduce_latency_us``)."""

    def __post_init__(self) -> None:
        if not 0 <= self.kv_reread_share <= 1:
            raise ValidationError(
                "efficiency.kv_reread_share",
                self.kv_reread_share,
                "must be in [0, 1]",
                "pass the share of a KV head's re-reads served from memory rather than L2",
            )
        for prop in ("memory_bandwidth", "decode_compute", "prefill_compute"):
            value = getattr(self, prop)
            if not 0 < value <= 1:
                raise ValidationError(
                    f"efficiency.{prop}", value, "must be in (0, 1]", "pass a fraction of peak"
                )
        for prop in (
            "step_overhead_ms",
            "per_layer_ms",
            "per_layer_per_extra_rank_ms",
            "per_extra_rank_ms",
            "all_reduce_scale",
            "per_sequence_ms",
        ):
            if getattr(self, prop) < 0:
                raise ValidationError(
                    f"efficiency.{prop}",
                    getattr(self, prop),
                    "must not be negative",
                    "pass milliseconds per decode step (a factor for all_reduce_scale)",
                )
        if not 0 <= self.prefill_hold_steps < math.inf:
            raise ValidationError(
                "efficiency.prefill_hold_steps",
                self.prefill_hold_steps,
                "must be a finite number of decode steps, 0 or more",
                "pass e.g. 20 (TGI's max_waiting_tokens), or 0 for an engine that prefills a "
                "new request at the next step",
            )

    def step_overhead_s(self, layers: int, tensor_parallel_degree: int) -> float:
        """Fixed cost of one forward step, seconds: base + per layer x layers + (per extra
        rank + per layer per extra rank x layers) x log2 TP. Logarithmic, not linear, in TP:
        the published SageMaker TGI measurements put about 8-11 ms of it at TP4 and 15 ms at
        TP8 on g5, for 32 to 80 layers alike (benchmarks/measurements)."""
        return (
            self.step_overhead_ms
            + self.per_layer_ms * layers
            + (self.per_extra_rank_ms + self.per_layer_per_extra_rank_ms * layers)
            * math.log2(tensor_parallel_degree)
        ) / 1000

    def host_s(self, batch: int) -> float:
        """Host cost of one decode step of ``batch`` sequences that the engine does not
        overlap with the GPU, seconds (``per_sequence_ms`` x batch)."""
        return self.per_sequence_ms * batch / 1000

    def describe(self) -> str:
        """The factors in one line."""
        text = (
            f"memory bandwidth {self.memory_bandwidth:.0%} of peak, decode compute "
            f"{self.decode_compute:.0%}, prefill compute {self.prefill_compute:.0%}, "
            f"{self.step_overhead_ms:g} ms per-step overhead"
        )
        if self.per_layer_ms or self.per_layer_per_extra_rank_ms or self.per_extra_rank_ms:
            text += (
                f" + {self.per_layer_ms:g} ms per layer + ({self.per_extra_rank_ms:g} ms + "
                f"{self.per_layer_per_extra_rank_ms:g} ms per layer) per TP doubling"
                + ("" if self.rank_cost_over_nvlink else " (not over NVLink)")
            )
        if self.per_sequence_ms:
            text += f" + {self.per_sequence_ms:g} ms per sequence (host)"
        if self.all_reduce_scale != 1.0:
            text += f", all-reduces x{self.all_reduce_scale:g}"
        if self.prefill_hold_steps:
            text += f", new requests held up to {self.prefill_hold_steps:g} decode steps"
        return text


DEFAULT_EFFICIENCY = Efficiency()
"""The uncalibrated efficiency factors of an unknown engine (the ``generic`` profile's)."""


def efficiency_of(profile: EngineProfile) -> Efficiency:
    """The efficiency factors and overheads an engine profile states."""
    return Efficiency(
        memory_bandwidth=profile.memory_bandwidth,
        decode_compute=profile.decode_compute,
        prefill_compute=profile.prefill_compute,
        step_overhead_ms=profile.base_overhead_ms,
        per_layer_ms=profile.per_layer_ms,
        per_layer_per_extra_rank_ms=profile.per_layer_per_extra_rank_ms,
        per_extra_rank_ms=profile.per_extra_rank_ms,
        all_reduce_scale=profile.all_reduce_scale,
        per_sequence_ms=profile.per_sequence_ms,
        kv_reread_share=profile.kv_reread_share,
        rank_cost_over_nvlink=profile.rank_cost_over_nvlink,
    )
