"""The most a layout serves within a latency limit (``max_throughput_within``, its answer a
``LayoutCapacity``): one copy's predicted levels walked from one request in flight up to its
batch limit, stopping at the first that misses the per-token (or TTFT) limit, the busiest
within it kept. The search ``recommend`` and ``rank_layouts`` size every layout by."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from .efficiency import DEFAULT_EFFICIENCY, Efficiency
from .engine_profiles import ContainerRelease, EngineProfile, resolve_profile
from .performance import (
    CopyLevel,
    CopyLimits,
    CopyModel,
    Layout,
    LevelPrediction,
    copy_limits,
    profile_limits,
    profile_model,
)
from .placement import head_divisibility_problem, host_memory_problem
from .scheduling.limits import DEFAULT_MAX_BATCH_SIZE
from .workload import Workload

if TYPE_CHECKING:  # a model without speculative decoding never needs it (synth time)
    from .speculation import Speculation


@dataclass(frozen=True)
class LayoutCapacity:
    """What one layout serves at its best within a per-token latency limit."""

    layout: Layout
    concurrency_per_copy: int
    level: LevelPrediction
    limits: CopyLimits
    reasoning: list[str] = field(default_factory=list)
    next_ttft_ms: float | None = None
    """Predicted TTFT at one more request per copy (None: the copy's limit is reached): what
    a TTFT limit stopped the walk at."""


def max_throughput_within(
    spec: ModelSpec,
    layout: Layout,
    workload: Workload,
    max_ms_per_token: float,
    *,
    precision: Precision = Precision.FP16,
    efficiency: Efficiency | None = None,
    max_batch_size: int | None = None,
    max_ttft_ms: float | None = None,
    engine: EngineProfile | ContainerRelease | str | None = None,
    slowdown: float = 1.0,
    speculation: Speculation | None = None,
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO,
) -> LayoutCapacity | None:
    """The highest-throughput concurrency per copy whose ms/token (and TTFT) meet the limits,
    or None when even one request per copy misses them or the layout does not fit.

    Without ``engine`` the model is the plain first-principles one with ``efficiency``
    (default ``DEFAULT_EFFICIENCY``) and ``max_batch_size`` (default
    ``DEFAULT_MAX_BATCH_SIZE``); with it, the profile's efficiencies (unless ``efficiency`` is
    given), kernels and batch limit (its KV-token budget or request cap, as
    ``profile_limits``; a ``max_batch_size`` given overrides it). ``slowdown`` multiplies the
    times and divides tokens/s: a band edge. ``kv_cache``: how the KV cache is stored
    (``KvCachePrecision``; FP8 holds about twice the sequences).
    """
    if head_divisibility_problem(spec, layout.tensor_parallel_degree) or host_memory_problem(
        spec, layout.instance_type, precision
    ):
        return None
    if engine is None:
        model = CopyModel(
            spec,
            layout.instance_type,
            layout.tensor_parallel_degree,
            precision,
            workload,
            efficiency if efficiency is not None else DEFAULT_EFFICIENCY,
            None,
            slowdown,
            speculation,
            kv_cache=kv_cache,
        )
        limits, _ = copy_limits(
            model, DEFAULT_MAX_BATCH_SIZE if max_batch_size is None else max_batch_size
        )
    else:
        profile = resolve_profile(engine, layout.instance_type.is_neuron)
        model = profile_model(
            spec,
            layout,
            precision,
            workload,
            profile,
            efficiency,
            slowdown,
            speculation,
            kv_cache=kv_cache,
        )
        limits, _ = profile_limits(model, profile, max_batch_size)
    return _best_within(model, layout, workload, limits, max_ms_per_token, max_ttft_ms)


def _best_within(
    model: CopyModel,
    layout: Layout,
    workload: Workload,
    limits: CopyLimits,
    max_ms_per_token: float,
    max_ttft_ms: float | None,
) -> LayoutCapacity | None:
    best: tuple[int, CopyLevel] | None = None
    ttft_ms: dict[int, float] = {}
    for clients in _client_counts(limits.max_concurrency):
        if clients > limits.capacity + 1:
            break  # past the batch limit only the queue grows: no level serves more, and
            # the TTFT one past the best is recorded
        at = model.level(clients, limits.capacity)
        ttft_ms[clients] = at.ttft_ms
        if at.ms_per_token > max_ms_per_token or (
            max_ttft_ms is not None and at.ttft_ms > max_ttft_ms
        ):
            break
        if best is None or at.tokens_per_s > best[1].tokens_per_s:
            best = (clients, at)
    if best is None:
        return None
    clients, at = best
    ms, ttft, e2e, tput = at.ms_per_token, at.ttft_ms, at.e2e_ms, at.tokens_per_s
    copies = layout.copies
    level = LevelPrediction(
        concurrency=clients * copies,
        ms_per_token=ms,
        ttft_ms=ttft,
        e2e_ms=e2e,
        tokens_per_s=tput * copies,
        requests_per_s=tput * copies / workload.output_tokens,
    )
    return LayoutCapacity(layout, clients, level, limits, [], ttft_ms.get(clients + 1))


def _client_counts(limit: int) -> range:
    return range(1, limit + 1)
