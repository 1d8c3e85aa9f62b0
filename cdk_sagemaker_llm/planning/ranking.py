"""Ranking the layouts of one instance type: which tensor-parallel degree x copies serves the
most output tokens/s within a per-token latency limit, and why the others serve less.

``sizing`` ranks with it (the degree it recommends, and the synth-time fit check's), and
``recommend`` shares its degrees and rejection reasons; it needs none of the search's pricing,
calibration or optimizations, so a synth that checks a model's fit does not import them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import ModelSpec, Precision
from ..errors import ValidationError
from .efficiency import Efficiency
from .engine_profiles import ContainerRelease, EngineProfile, resolve_profile
from .layout_capacity import LayoutCapacity, max_throughput_within
from .performance import CopyLimits, CopyModel, Layout, Workload, profile_limits, profile_model
from .placement import (
    GB,
    MIN_KV_HEADROOM_BYTES,
    Memory,
    head_divisibility_problem,
    host_memory_problem,
)

__all__ = ["RankedLayout", "RejectionKind", "degrees", "rank_layouts"]


class RejectionKind(Enum):
    """Why the search rejected a layout or an instance type: what a user changes to get an
    option (``planning.decision`` blames the prop each kind points at)."""

    MEMORY = "memory"
    """The model, its KV cache or the host memory does not fit: more accelerator memory."""
    HEAD_DIVISIBILITY = "head divisibility"
    """The tensor-parallel degree does not divide the attention heads."""
    TIMEOUT = "timeout"
    """One request alone outlives the 60 s invocation timeout."""
    SLO = "slo"
    """One request alone misses the latency limit."""
    INSTANCE_COUNT = "instance count"
    """The traffic needs more instances than ``max_instance_count``."""
    UNPREDICTABLE = "unpredictable"
    """No accelerator, or its vendor publishes no performance figures: nothing to predict."""
    ENGINE = "engine"
    """The serving engine cannot serve it (an optimization, or hardware it does not run on)."""
    PRECISION = "precision"
    """The accelerator has no kernels for the precision asked (FP8 without FP8 tensor cores)."""
    KV_CACHE_PRECISION = "kv cache precision"
    """The accelerator cannot hold the KV cache's precision asked (an FP8 KV cache without FP8:
    ``performance.kv_cache_precision_problem``)."""
    NO_LAYOUT = "no layout"
    """No tensor-parallel degree of the search splits the instance into copies."""


def degrees(instance_type: InstanceType) -> list[int]:
    """Tensor-parallel degrees that split an instance into whole copies."""
    count = instance_type.accelerator_devices
    return [d for d in range(1, count + 1) if count % d == 0]


def _reject_reason(
    efficiency_model: CopyModel,
    limits: CopyLimits,
    memory: Memory,
    max_ms_per_token: float,
    max_ttft_ms: float | None = None,
) -> tuple[RejectionKind, str]:
    """Why ``efficiency_model``'s layout serves nothing within the latency limits (an SLO's;
    its model, instance type, TP degree, precision and workload are the layout's): the kind,
    and the reason in words (led by the kind's name)."""
    spec, workload = efficiency_model.spec, efficiency_model.workload
    problem = head_divisibility_problem(spec, efficiency_model.tensor_parallel_degree)
    if problem:
        return RejectionKind.HEAD_DIVISIBILITY, f"head divisibility: {problem}"
    problem = host_memory_problem(spec, efficiency_model.instance_type, efficiency_model.precision)
    if problem:
        return RejectionKind.MEMORY, f"memory: {problem}"
    if limits.kv_sequences < 1:
        kv_free, per_sequence = memory.kv_free_bytes, memory.kv_bytes_per_sequence
        if kv_free < MIN_KV_HEADROOM_BYTES:
            return RejectionKind.MEMORY, (
                f"memory: leaves {kv_free / GB:.1f} GB for the KV cache per copy "
                f"(< {MIN_KV_HEADROOM_BYTES / GB:g} GB headroom{memory.after_the_reserve()})"
            )
        return RejectionKind.MEMORY, (
            f"memory: {kv_free / GB:.1f} GB of KV cache holds no sequence of "
            f"{workload.total_tokens} tokens ({per_sequence / GB:.2f} GB)"
        )
    if limits.timeout_sequences < 1:
        alone = efficiency_model.cycle_s(1)
        return RejectionKind.TIMEOUT, (
            f"timeout: one request alone ({workload.input_tokens} in + "
            f"{workload.output_tokens} out) takes {alone:.0f} s "
            f"({alone * 1000 / workload.output_tokens:.1f} ms/token), longer than the 60 s "
            "invocation timeout: fewer output tokens per request or a faster layout"
        )
    single = efficiency_model.level(1, limits.capacity)
    ms, ttft = single.ms_per_token, single.ttft_ms
    if ms > max_ms_per_token:
        return RejectionKind.SLO, (
            f"slo: one request alone takes {ms:.1f} ms/token > {max_ms_per_token:g}"
        )
    return RejectionKind.SLO, (
        f"slo: one request alone takes {ttft:.0f} ms to first token > {max_ttft_ms:g}"
    )


@dataclass(frozen=True)
class RankedLayout:
    """A layout of one instance and what it serves at its best within a latency limit."""

    layout: Layout
    capacity: LayoutCapacity | None
    """None when the layout cannot serve (heads, memory, or the latency limit)."""
    reason: str
    """Why it ranks where it does, or why it cannot serve."""

    @property
    def tokens_per_s(self) -> float:
        """Output tokens/s of one instance at its best within the limit (0 when it cannot)."""
        return self.capacity.level.tokens_per_s if self.capacity else 0.0


def rank_layouts(
    spec: ModelSpec,
    instance_type: InstanceType,
    workload: Workload,
    *,
    max_ms_per_token: float = 100.0,
    precision: Precision = Precision.FP16,
    engine: EngineProfile | ContainerRelease | str | None = None,
    efficiency: Efficiency | None = None,
    max_batch_size: int | None = None,
) -> list[RankedLayout]:
    """Every TP x copies layout of one instance, ranked by the output tokens/s it serves within
    ``max_ms_per_token`` (most first); the first entry's reason says why the others lose.

    :param engine: the engine profile (``planning.engine_profiles``), its name or a container
        release; default the one ``predict`` and ``recommend`` use (``lmi-vllm-v1``;
        ``lmi-neuronx`` on Inferentia/Trainium), so that all three rank one model alike.
    :param efficiency: measured factors instead of the profile's.
    :param max_batch_size: a per-copy request cap instead of the profile's batch limit.
    """
    if not max_ms_per_token > 0:  # NaN too; as ``Slo`` refuses it
        raise ValidationError(
            "max_ms_per_token", max_ms_per_token, "must be positive", "pass e.g. 100"
        )
    profile = resolve_profile(engine, instance_type.is_neuron)
    ranked: list[RankedLayout] = []
    for degree in degrees(instance_type):
        layout = Layout(instance_type, degree, instance_type.accelerator_devices // degree)
        model = profile_model(spec, layout, precision, workload, profile, efficiency)
        limits, memory = profile_limits(model, profile, max_batch_size)
        capacity = max_throughput_within(
            spec,
            layout,
            workload,
            max_ms_per_token,
            precision=precision,
            efficiency=efficiency,
            max_batch_size=max_batch_size,
            engine=profile,
        )
        if capacity is None:
            _, reason = _reject_reason(model, limits, memory, max_ms_per_token)
        else:
            reason = (
                f"TP{degree} x {layout.copies_per_instance}: {capacity.level.tokens_per_s:.0f} "
                f"tokens/s with {capacity.concurrency_per_copy} in flight per copy "
                f"(KV holds {limits.kv_sequences}, batch limit {limits.batch_limit}; "
                f"{model.step_s(capacity.concurrency_per_copy) * 1000:.1f} ms per step"
                + (
                    f" of which {model.all_reduce_s(capacity.concurrency_per_copy) * 1000:.1f}"
                    " ms all-reduce)"
                    if degree > 1
                    else ")"
                )
            )
        ranked.append(RankedLayout(layout, capacity, reason))
    ranked.sort(key=lambda r: -r.tokens_per_s)
    return _explain_winner(ranked)


def _explain_winner(ranked: list[RankedLayout]) -> list[RankedLayout]:
    """Append to the winner's reason why each other serving layout serves less."""
    if not ranked or ranked[0].capacity is None:
        return ranked
    best = ranked[0]
    assert best.capacity is not None
    best_in_flight = best.capacity.concurrency_per_copy * best.layout.copies_per_instance
    why = []
    for loser in ranked[1:]:
        if loser.capacity is None:
            continue
        in_flight = loser.capacity.concurrency_per_copy * loser.layout.copies_per_instance
        share = loser.tokens_per_s / best.tokens_per_s
        head = (
            f"TP{loser.layout.tensor_parallel_degree} x {loser.layout.copies_per_instance} "
            f"serves {loser.tokens_per_s:.0f} tokens/s ({share:.0%}) with {in_flight} requests "
            f"in flight vs {best_in_flight}"
        )
        if loser.layout.tensor_parallel_degree > best.layout.tensor_parallel_degree:
            why.append(
                head + ": wider sharding splits the weight reads but not the per-step overhead, "
                "adds all-reduces to every step, and leaves fewer copies to batch requests"
            )
        elif loser.capacity.concurrency_per_copy < loser.capacity.limits.capacity:
            why.append(
                head + f": its copies are slower (fewer accelerators each), so only "
                f"{loser.capacity.concurrency_per_copy} in flight per copy stay within the "
                "latency limit"
            )
        else:
            why.append(
                head + ": each copy keeps a whole copy of the weights, leaving less memory for "
                f"the KV cache ({loser.capacity.limits.kv_sequences} sequences per copy)"
            )
    if not why:
        return ranked
    reason = best.reason + "; beats " + "; ".join(why)
    return [RankedLayout(best.layout, best.capacity, reason), *ranked[1:]]
