"""Sizing: does a model fit, how many sequences its KV cache holds, which layout serves most,
what it costs.

The formulas are domain.md's ("Sizing formulas", "Cost"): weights are parameters x bytes per
parameter plus about 2 GB of framework overhead per accelerator; the KV cache takes
2 (K and V) x layers x KV heads x head dimension x bytes per element per token; the sequences
that fit are what is left of the accelerators' usable memory divided by one sequence's KV cache,
provided at least 1 GB is left (``planning.placement``). The recommended tensor-parallel degree
is the layout that serves the most output tokens/s within 100 ms/token according to the
performance model with the serving engine's profile (``planning.performance``,
``planning.engine_profiles``, ``planning.ranking.rank_layouts``; the image's profile where the
image is known, else the one ``predict`` and ``recommend`` default to), not the smallest degree
that fits. Every size is in decimal GB.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..catalog.containers import vllm_variable
from ..catalog.instance_types import Accelerator, InstanceType
from ..catalog.model_specs import ModelSpec, Precision
from ..catalog.prices import DEFAULT_PRICE_LIST, PriceList
from ..errors import ValidationError
from ..prop_types import typed_factory, typed_props
from .engine_profiles import EngineProfile, profile_origin, resolve_profile
from .performance import INVOCATION_TIMEOUT_S, Layout, Workload, profile_model
from .placement import (
    FRAMEWORK_OVERHEAD_BYTES,
    GB,
    GIB,
    MIB,
    MIN_KV_HEADROOM_BYTES,
    KvCacheMemory,
    Memory,
    copy_memory,
    head_divisibility_problem,
    kv_bytes_per_token_per_copy,
)
from .ranking import RankedLayout, rank_layouts
from .workload import check_context

SIZING_SLO_MS_PER_TOKEN = 100.0
"""The per-token latency the recommended layout must meet (domain.md's example limit)."""
DEFAULT_MAX_TOTAL_TOKENS = 4096
"""Sequence length assumed when none is configured: the model's context, capped at 4096."""
BLENDED_INPUT_OUTPUT_RATIO = 3
"""The blended price weighs input and output tokens 3:1 (the published definition)."""


# ----- Memory -------------------------------------------------------------------------------


@typed_factory
def weights_bytes(spec: ModelSpec, precision: Precision = Precision.FP16) -> float:
    """Bytes the weights take: parameters x bytes per parameter (no overhead)."""
    return spec.parameters * precision.bytes_per_parameter


@typed_factory
def weights_memory_bytes(
    spec: ModelSpec,
    precision: Precision = Precision.FP16,
    *,
    overhead_bytes: float = FRAMEWORK_OVERHEAD_BYTES,
) -> float:
    """Memory the model needs before any KV cache: weights plus framework overhead."""
    return weights_bytes(spec, precision) + overhead_bytes


@typed_factory
def kv_cache_bytes_per_token(spec: ModelSpec, precision: Precision = Precision.FP16) -> int:
    """KV-cache bytes of one token: 2 (K and V) x layers x KV heads x head dim x bytes/element.

    Grouped-query attention is why this uses KV heads: it shrinks the cache by
    ``attention_heads / kv_heads`` compared with multi-head attention.
    """
    return 2 * spec.layers * spec.kv_heads * spec.head_dim * precision.kv_bytes_per_element


@typed_factory
def kv_cache_bytes(
    spec: ModelSpec, precision: Precision = Precision.FP16, *, batch: int = 1, seq_len: int
) -> int:
    """KV-cache bytes of ``batch`` sequences of ``seq_len`` tokens."""
    return batch * seq_len * kv_cache_bytes_per_token(spec, precision)


@typed_factory
def usable_memory_bytes(instance_type: InstanceType, accelerators: int | None = None) -> int:
    """Usable accelerator memory of ``accelerators`` devices (default all) of the type."""
    if instance_type.accelerator is None or instance_type.accelerator_count is None:
        return 0
    count = instance_type.accelerator_count if accelerators is None else accelerators
    return instance_type.accelerator.memory_mib * MIB * count


@typed_factory
def default_max_total_tokens(spec: ModelSpec) -> int:
    """The sequence length sizing assumes when none is configured."""
    return min(spec.max_context, DEFAULT_MAX_TOTAL_TOKENS)


@typed_factory
def sizing_workload(max_total_tokens: int) -> Workload:
    """The request sizing ranks layouts with: ``max_total_tokens`` split 3:1 input:output (the
    ratio of the published blended-price definition)."""
    output = max(1, max_total_tokens // (BLENDED_INPUT_OUTPUT_RATIO + 1))
    return Workload(max(1, max_total_tokens - output), output)


@typed_factory
def kv_free_bytes(
    spec: ModelSpec,
    instance_type: InstanceType,
    *,
    tensor_parallel_degree: int | None = None,
    precision: Precision = Precision.FP16,
    overhead_bytes: float = FRAMEWORK_OVERHEAD_BYTES,
) -> float:
    """Memory left for the KV cache of one copy: N accelerators x (memory - overhead) - weights
    (N defaults to all of the instance's accelerators; negative when the weights do not fit)."""
    degree = tensor_parallel_degree or instance_type.accelerator_devices
    return (
        usable_memory_bytes(instance_type, degree)
        - overhead_bytes * degree
        - weights_bytes(spec, precision)
    )


@typed_factory
def max_concurrent_sequences(
    spec: ModelSpec,
    instance_type: InstanceType,
    *,
    tensor_parallel_degree: int | None = None,
    max_total_tokens: int | None = None,
    precision: Precision = Precision.FP16,
    overhead_bytes: float = FRAMEWORK_OVERHEAD_BYTES,
) -> int:
    """Sequences of ``max_total_tokens`` whose KV cache fits beside one copy of the model:
    (N accelerators x (memory - overhead) - weights) / KV bytes per sequence, rounded down; 0
    when less than 1 GB is left. N defaults to all of the instance's accelerators;
    ``overhead_bytes`` is per accelerator."""
    tokens = max_total_tokens or default_max_total_tokens(spec)
    degree = tensor_parallel_degree or instance_type.accelerator_devices
    free = kv_free_bytes(
        spec,
        instance_type,
        tensor_parallel_degree=degree,
        precision=precision,
        overhead_bytes=overhead_bytes,
    )
    if free < MIN_KV_HEADROOM_BYTES:
        return 0
    return math.floor(free / (kv_bytes_per_token_per_copy(spec, degree, precision) * tokens))


@typed_factory
def fits(
    spec: ModelSpec,
    instance_type: InstanceType,
    *,
    tensor_parallel_degree: int | None = None,
    max_total_tokens: int | None = None,
    precision: Precision = Precision.FP16,
    overhead_bytes: float = FRAMEWORK_OVERHEAD_BYTES,
) -> bool:
    """True when weights + overhead leave at least 1 GB and one sequence of
    ``max_total_tokens`` of KV cache on ``tensor_parallel_degree`` accelerators (default all)."""
    return (
        max_concurrent_sequences(
            spec,
            instance_type,
            tensor_parallel_degree=tensor_parallel_degree,
            max_total_tokens=max_total_tokens,
            precision=precision,
            overhead_bytes=overhead_bytes,
        )
        >= 1
    )


@typed_factory
def tensor_parallel_candidates(spec: ModelSpec, instance_type: InstanceType) -> list[int]:
    """Degrees a copy can be sharded over on this type: they divide the instance's accelerator
    count (whole copies per instance) and the attention and KV heads (whole heads per device)."""
    count = instance_type.accelerator_count or 0
    return [
        degree
        for degree in range(1, count + 1)
        if count % degree == 0 and head_divisibility_problem(spec, degree) is None
    ]


@typed_factory
def ranked_layouts(
    spec: ModelSpec,
    instance_type: InstanceType,
    *,
    max_total_tokens: int | None = None,
    precision: Precision = Precision.FP16,
    engine: EngineProfile | str | None = None,
) -> list[RankedLayout]:
    """The instance's TP x copies layouts ranked by the output tokens/s they serve within
    100 ms/token on the sizing workload (``sizing_workload``) with the ``engine`` profile
    (default: ``predict``'s and ``recommend``'s, ``engine_profiles.resolve_profile``)."""
    tokens = max_total_tokens or default_max_total_tokens(spec)
    if instance_type.accelerator is None or not instance_type.accelerator.performance_known:
        return []  # nothing to rank by: the smallest degree that fits is recommended
    return rank_layouts(
        spec,
        instance_type,
        sizing_workload(tokens),
        max_ms_per_token=SIZING_SLO_MS_PER_TOKEN,
        precision=precision,
        engine=engine,
    )


@typed_factory
def recommended_tensor_parallel_degree(
    spec: ModelSpec,
    instance_type: InstanceType,
    *,
    max_total_tokens: int | None = None,
    precision: Precision = Precision.FP16,
    overhead_bytes: float = FRAMEWORK_OVERHEAD_BYTES,
    engine: EngineProfile | str | None = None,
) -> int | None:
    """The degree whose layout serves the most within 100 ms/token; when none meets that
    latency, the smallest degree that fits in the memory the engine allocates; None when none
    fits.

    Not simply the smallest degree that fits: Llama 2 13B on ml.p4d.24xlarge fits at TP1 with
    room for a handful of sequences per copy, and TP2 x 4 copies serves far more.

    :param overhead_bytes: per accelerator; a non-default value skips the ranking (the
        performance model assumes the default) and returns the smallest degree that fits.
    :param engine: the serving engine's profile or its name; default ``predict``'s.
    """
    ranked = ranked_layouts(
        spec, instance_type, max_total_tokens=max_total_tokens, precision=precision, engine=engine
    )
    return _recommended_degree(
        spec,
        instance_type,
        ranked,
        max_total_tokens=default_max_total_tokens(spec)
        if max_total_tokens is None
        else max_total_tokens,
        precision=precision,
        overhead_bytes=overhead_bytes,
        profile=resolve_profile(engine, instance_type.is_neuron),
    )


def _recommended_degree(
    spec: ModelSpec,
    instance_type: InstanceType,
    ranked: list[RankedLayout],
    *,
    max_total_tokens: int,
    precision: Precision,
    overhead_bytes: float,
    profile: EngineProfile,
) -> int | None:
    """``recommended_tensor_parallel_degree`` from the layouts already ranked (``size`` ranks
    them once for both); where none serves the sizing workload, the smallest degree that fits
    in the share of the memory ``profile``'s engine allocates."""
    if ranked and ranked[0].capacity is not None and overhead_bytes == FRAMEWORK_OVERHEAD_BYTES:
        return ranked[0].layout.tensor_parallel_degree
    for degree in tensor_parallel_candidates(spec, instance_type):
        held = _engine_sequences(
            spec, instance_type, degree, precision, max_total_tokens, overhead_bytes, profile
        )
        if held != 0 and fits(
            spec,
            instance_type,
            tensor_parallel_degree=degree,
            max_total_tokens=max_total_tokens,
            precision=precision,
            overhead_bytes=overhead_bytes,
        ):
            return degree
    return None


@typed_factory
def copies_per_instance(instance_type: InstanceType, tensor_parallel_degree: int) -> int:
    """Copies of a model sharded over ``tensor_parallel_degree`` accelerators one instance holds."""
    if tensor_parallel_degree < 1:
        raise ValidationError(
            "tensor_parallel_degree",
            tensor_parallel_degree,
            "must be at least 1",
            "shard each copy over at least one accelerator",
        )
    return (instance_type.accelerator_count or 0) // tensor_parallel_degree


@typed_factory
def critical_batch_size(accelerator: Accelerator) -> float | None:
    """B* = FLOPS / memory bandwidth (ops per byte): below this batch, decode is memory-bound
    (A10G: 70 TFLOPS / 600 GB/s = about 116); None when the vendor does not publish them."""
    if accelerator.memory_bandwidth_gbps is None or accelerator.fp16_tflops is None:
        return None
    return accelerator.fp16_tflops * 1e12 / (accelerator.memory_bandwidth_gbps * 1e9)


# ----- Cost ---------------------------------------------------------------------------------


@typed_factory
def throughput_tokens_per_second(concurrency: float, p50_inter_token_latency_s: float) -> float:
    """Throughput = concurrency / p50 inter-token latency (seconds)."""
    if p50_inter_token_latency_s <= 0:
        raise ValidationError(
            "p50_inter_token_latency_s",
            p50_inter_token_latency_s,
            "must be positive",
            "pass the measured median gap between tokens, in seconds",
        )
    return concurrency / p50_inter_token_latency_s


@typed_factory
def cost_per_hour(
    instance_type: InstanceType | str,
    instance_count: int = 1,
    *,
    prices: PriceList = DEFAULT_PRICE_LIST,
) -> float | None:
    """Price per hour of ``instance_count`` instances, or None when the list has no price."""
    price = prices.price_per_hour(instance_type)
    return None if price is None else price * instance_count


def _check_throughput(tokens_per_second: float) -> None:
    if tokens_per_second <= 0:
        raise ValidationError(
            "tokens_per_second",
            tokens_per_second,
            "must be positive",
            "pass a measured throughput (concurrency / p50 inter-token latency)",
        )


@typed_factory
def cost_per_million_tokens(price_per_hour: float, tokens_per_second: float) -> float:
    """Cost per 1M tokens = price per hour / (tokens/s x 3600 / 10^6)."""
    _check_throughput(tokens_per_second)
    return price_per_hour / (tokens_per_second * 3600 / 1e6)


@typed_factory
def blended_price_per_million_tokens(
    price_per_hour: float, tokens_per_second: float, *, discount: float = 0.0
) -> float:
    """Blended price per 1M tokens at a 3:1 input:output ratio (the published definition):
    (1 - discount) x price per hour / (tokens/s x 3600 / 10^6) / 4."""
    _check_throughput(tokens_per_second)
    if not 0 <= discount < 1:
        raise ValidationError(
            "discount", discount, "must be in [0, 1)", "pass e.g. 0.3 for a 30% discount"
        )
    return (
        (1 - discount)
        * price_per_hour
        / (tokens_per_second * 3600 / 1e6)
        / (BLENDED_INPUT_OUTPUT_RATIO + 1)
    )


# ----- Reports ------------------------------------------------------------------------------


@typed_props
@dataclass(frozen=True)
class SizingReport:
    """Everything sizing says about one model on one instance type at one degree (sizes in
    decimal GB)."""

    __synth_decision__ = "A sizing report is computed"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    model: str
    """The model's name (its spec's)."""
    instance_type: str
    """The instance type's name, e.g. ``ml.g5.12xlarge``."""
    precision: str
    """The weights' precision, e.g. ``fp16``."""
    tensor_parallel_degree: int
    """Accelerators one copy is sharded over."""
    max_total_tokens: int
    """The longest sequence (input + output tokens) one request may have."""
    fits: bool
    """Memory verdict: weights + overhead leave >= 1 GB and one sequence of KV cache."""
    weights_bytes: float
    """The weights of one copy, in bytes."""
    overhead_bytes: float
    """Framework overhead of the whole copy (per accelerator x degree)."""
    usable_memory_bytes: int
    """Accelerator memory one copy may use (its accelerators' usable memory), in bytes."""
    kv_cache_bytes_per_token: int
    """KV cache one token takes in one copy, in bytes."""
    kv_cache_bytes_per_sequence: int
    """KV cache one sequence of ``max_total_tokens`` takes, in bytes."""
    max_concurrent_sequences: int
    """Sequences of ``max_total_tokens`` whose KV cache fits at once in one copy."""
    recommended_tensor_parallel_degree: int | None
    """The smallest degree at which the model serves; None when none does."""
    copies_per_instance: int
    """Copies one instance holds at this degree; 0 when the copy cannot serve."""
    critical_batch_size: float | None
    """The batch above which decode turns compute-bound on this accelerator (FLOPS over
    bandwidth); None when the vendor publishes neither."""
    reasoning: list[str] = field(default_factory=list)
    """How each figure was reached, one line each."""
    head_problem: str | None = None
    """Why the degree cannot shard the attention/KV heads, or None."""
    single_request_ms_per_token: float | None = None
    """Predicted ms/token of one request alone at this degree on the sizing workload
    (end-to-end latency / output tokens, as the 100 ms/token limit measures it)."""
    max_tokens_per_s_within_slo: float | None = None
    """Predicted output tokens/s of one instance at this degree within 100 ms/token."""
    engine: str | None = None
    """The engine profile the ranking and latency figures use; None when the accelerator's
    performance is unknown (nothing is ranked)."""
    engine_sequences: int | None = None
    """Sequences of ``max_total_tokens`` the KV cache holds within the share of the memory the
    engine allocates (its profile's ``Batching.kv_cache_memory``: vLLM's
    ``gpu_memory_utilization``), what its batch limits and ``predict`` read; None where the
    engine allocates all of it (``max_concurrent_sequences`` then)."""

    @property
    def memory(self) -> Memory:
        """One copy's memory as sized: usable, weights, overhead and one sequence's KV cache."""
        return Memory(
            usable_bytes=self.usable_memory_bytes,
            weights_bytes=self.weights_bytes,
            overhead_bytes=self.overhead_bytes,
            kv_bytes_per_sequence=self.kv_cache_bytes_per_sequence,
        )

    @property
    def engine_fits(self) -> bool:
        """The copy fits in the share of the memory its engine allocates (the engine starts:
        vLLM refuses to when its KV cache cannot hold one sequence)."""
        return self.fits and self.engine_held_sequences >= 1

    @property
    def serves(self) -> bool:
        """The verdict: the copy fits in the memory its engine allocates and its degree shards
        the heads evenly."""
        return self.engine_fits and self.head_problem is None

    @property
    def engine_held_sequences(self) -> int:
        """The sequences the engine's KV cache holds: ``engine_sequences`` where the engine
        allocates a share of the memory, else ``max_concurrent_sequences``."""
        if self.engine_sequences is None:
            return self.max_concurrent_sequences
        return self.engine_sequences

    @property
    def weights_gib(self) -> float:
        """Weights (without overhead) in GiB."""
        return self.weights_bytes / GIB

    @property
    def weights_gb(self) -> float:
        """Weights (without overhead) in GB."""
        return self.weights_bytes / GB

    @property
    def needed_bytes(self) -> float:
        """Weights + overhead + the KV cache of one sequence: what fitting means."""
        return self.weights_bytes + self.overhead_bytes + self.kv_cache_bytes_per_sequence

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (rounded where human-facing; sizes in GB)."""
        return {
            "model": self.model,
            "instance_type": self.instance_type,
            "precision": self.precision,
            "tensor_parallel_degree": self.tensor_parallel_degree,
            "max_total_tokens": self.max_total_tokens,
            "fits": self.fits,
            "serves": self.serves,
            "head_problem": self.head_problem,
            "weights_gb": round(self.weights_bytes / GB, 2),
            "overhead_gb": round(self.overhead_bytes / GB, 2),
            "usable_memory_gb": round(self.usable_memory_bytes / GB, 2),
            "kv_cache_free_gb": round(
                (self.usable_memory_bytes - self.weights_bytes - self.overhead_bytes) / GB, 2
            ),
            "kv_cache_bytes_per_token": self.kv_cache_bytes_per_token,
            "kv_cache_gb_per_sequence": round(self.kv_cache_bytes_per_sequence / GB, 3),
            "max_concurrent_sequences": self.max_concurrent_sequences,
            "engine_max_concurrent_sequences": self.engine_sequences,
            "recommended_tensor_parallel_degree": self.recommended_tensor_parallel_degree,
            "copies_per_instance": self.copies_per_instance,
            "critical_batch_size": round(self.critical_batch_size, 1)
            if self.critical_batch_size is not None
            else None,
            "single_request_ms_per_token": None
            if self.single_request_ms_per_token is None
            else round(self.single_request_ms_per_token, 1),
            "max_tokens_per_s_within_100_ms_per_token": None
            if self.max_tokens_per_s_within_slo is None
            else round(self.max_tokens_per_s_within_slo, 0),
            "engine": self.engine,
            "reasoning": list(self.reasoning),
        }


def _copies(count: int) -> str:
    return f"{count} cop{'y' if count == 1 else 'ies'}"


def _require_accelerators(instance_type: InstanceType) -> None:
    """Sizing needs the instance type's accelerators."""
    if instance_type.accelerator is None or instance_type.accelerator_count is None:
        raise ValidationError(
            "instance_type",
            instance_type.name,
            "sizing needs an accelerated instance type whose accelerators are known"
            if instance_type.accelerators_known
            else "the catalog does not know this type's accelerators, so sizing cannot check it",
            "use a GPU or Neuron type such as ml.g5.xlarge, ml.g6e.12xlarge, ml.inf2.48xlarge, "
            "or state the accelerators: InstanceType.of(name, accelerator=Accelerator.H100, "
            "accelerator_count=8)",
        )


def _check_degree(degree: int, instance_type: InstanceType) -> None:
    """A tensor-parallel degree the instance's accelerators hold."""
    count = instance_type.accelerator_count or 0
    if degree < 1 or degree > count:
        raise ValidationError(
            "tensor_parallel_degree",
            degree,
            f"{instance_type.name} has {count} accelerators",
            f"pass a degree between 1 and {count}",
        )


@typed_factory
def size(
    spec: ModelSpec,
    instance_type: InstanceType,
    *,
    tensor_parallel_degree: int | None = None,
    precision: Precision = Precision.FP16,
    max_total_tokens: int | None = None,
    overhead_bytes: float = FRAMEWORK_OVERHEAD_BYTES,
    engine: EngineProfile | str | None = None,
    kv_cache_memory: KvCacheMemory | None = None,
) -> SizingReport:
    """Size ``spec`` on ``instance_type``.

    :param tensor_parallel_degree: accelerators per copy; default the recommended degree (or
        all accelerators when the model fits at none).
    :param max_total_tokens: prompt + output tokens per sequence; default the model's
        context capped at 4096.
    :param overhead_bytes: framework overhead per accelerator. Default 2 GB.
    :param engine: the serving engine's profile (``planning.engine_profiles``) or its name,
        which ranks the layouts and predicts the latency; default the one ``predict`` and
        ``recommend`` use (``lmi-vllm-v1``; ``lmi-neuronx`` on Inferentia/Trainium).
        ``ContainerImage.engine_profile`` gives an image's.
    :param kv_cache_memory: the share of the memory the engine allocates, where the serving
        environment sets it (``KvCacheMemory.configured_by``); default the profile's.
    """
    _require_accelerators(instance_type)
    assert instance_type.accelerator is not None and instance_type.accelerator_count is not None
    tokens = default_max_total_tokens(spec) if max_total_tokens is None else max_total_tokens
    if tokens < 1:
        raise ValidationError("max_total_tokens", tokens, "must be positive", "pass e.g. 4096")
    check_context(spec, tokens, "max_total_tokens")
    count = instance_type.accelerator_count
    profile = resolve_profile(engine, instance_type.is_neuron).with_kv_cache_memory(kv_cache_memory)
    ranked = (
        ranked_layouts(
            spec, instance_type, max_total_tokens=tokens, precision=precision, engine=profile
        )
        if overhead_bytes == FRAMEWORK_OVERHEAD_BYTES
        else []
    )
    recommended = _recommended_degree(  # the ranking above, not a second one
        spec,
        instance_type,
        ranked,
        max_total_tokens=tokens,
        precision=precision,
        overhead_bytes=overhead_bytes,
        profile=profile,
    )
    degree = tensor_parallel_degree or recommended or count
    _check_degree(degree, instance_type)
    weights = weights_bytes(spec, precision)
    per_token = kv_bytes_per_token_per_copy(spec, degree, precision)
    usable = usable_memory_bytes(instance_type, degree)
    sequences = max_concurrent_sequences(
        spec,
        instance_type,
        tensor_parallel_degree=degree,
        max_total_tokens=tokens,
        precision=precision,
        overhead_bytes=overhead_bytes,
    )
    engine_sequences = _engine_sequences(
        spec, instance_type, degree, precision, tokens, overhead_bytes, profile
    )
    head_problem = head_divisibility_problem(spec, degree)
    held = sequences if engine_sequences is None else engine_sequences
    serves = held >= 1 and head_problem is None
    accelerator = instance_type.accelerator
    reasoning = _memory_reasoning(
        spec,
        instance_type,
        degree=degree,
        precision=precision,
        tokens=tokens,
        overhead_bytes=overhead_bytes,
        sequences=sequences,
        engine=(profile, engine_sequences),
    )
    if head_problem:
        reasoning.append(
            f"cannot serve at tensor-parallel degree {degree}: {head_problem}; serving "
            "containers refuse such a degree"
        )
    reasoning.append(_recommendation_reasoning(instance_type, ranked, recommended, profile, tokens))
    chosen = next((r for r in ranked if r.layout.tensor_parallel_degree == degree), None)
    b_star = critical_batch_size(accelerator)
    reasoning.append(_critical_batch_reasoning(accelerator, b_star))
    single = None
    if serves and b_star is not None:
        single = _single_request_ms_per_token(
            spec, instance_type, degree, precision, tokens, profile
        )
        reasoning.append(_sizing_engine_note(profile, engine is None))
    return SizingReport(
        model=spec.name,
        instance_type=instance_type.name,
        precision=precision.value,
        tensor_parallel_degree=degree,
        max_total_tokens=tokens,
        fits=sequences >= 1,
        weights_bytes=weights,
        overhead_bytes=overhead_bytes * degree,
        usable_memory_bytes=usable,
        kv_cache_bytes_per_token=per_token,
        kv_cache_bytes_per_sequence=per_token * tokens,
        max_concurrent_sequences=sequences,
        recommended_tensor_parallel_degree=recommended,
        copies_per_instance=count // degree if serves else 0,
        critical_batch_size=b_star,
        reasoning=reasoning,
        head_problem=head_problem,
        single_request_ms_per_token=single,
        max_tokens_per_s_within_slo=chosen.tokens_per_s if chosen and chosen.capacity else None,
        engine=profile.name if accelerator.performance_known else None,
        engine_sequences=engine_sequences,
    )


@typed_factory
def configured_kv_cache_memory(
    engine: EngineProfile | str | None, neuron: bool, environment: Mapping[str, Any]
) -> KvCacheMemory:
    """The share of the memory ``engine`` allocates as a serving ``environment`` sets it
    (``KvCacheMemory.configured_by``: vLLM's ``gpu_memory_utilization``), else the profile's
    default: ``size``'s ``kv_cache_memory``."""
    default = resolve_profile(engine, neuron).batching.kv_cache_memory
    return default.configured_by(environment)


def _engine_sequences(
    spec: ModelSpec,
    instance_type: InstanceType,
    degree: int,
    precision: Precision,
    tokens: int,
    overhead_bytes: float,
    profile: EngineProfile,
) -> int | None:
    """The sequences of ``tokens`` one copy's KV cache holds within the share of the memory
    ``profile``'s engine allocates (``EngineProfile.engine_memory``, as ``predict`` counts
    them); None where that share is all of it."""
    memory = copy_memory(spec, instance_type, degree, precision, tokens)
    memory = replace(memory, overhead_bytes=overhead_bytes * degree)
    reserved = profile.engine_memory(memory)
    if not reserved.engine_reserve_bytes:
        return None
    return reserved.sequences


def _memory_reasoning(
    spec: ModelSpec,
    instance_type: InstanceType,
    *,
    degree: int,
    precision: Precision,
    tokens: int,
    overhead_bytes: float,
    sequences: int,
    engine: tuple[EngineProfile, int | None],
) -> list[str]:
    """The memory arithmetic of one copy: weights, KV cache per token, usable memory, and
    whether (and by how much) the sequences fit; then how many the ``engine`` profile's share
    of the memory holds, where it allocates less than all of it (``_engine_sequences``)."""
    assert instance_type.accelerator is not None
    weights = weights_bytes(spec, precision)
    per_token = kv_bytes_per_token_per_copy(spec, degree, precision)
    per_sequence = per_token * tokens
    usable = usable_memory_bytes(instance_type, degree)
    overhead = overhead_bytes * degree
    free = usable - weights - overhead
    accelerator = instance_type.accelerator
    reasoning = [
        f"weights: {spec.parameters / 1e9:.2f}B parameters x {precision.bytes_per_parameter:g} "
        f"bytes ({precision.value}) = {weights / GB:.1f} GB, plus "
        f"{overhead_bytes / GB:.1f} GB framework overhead "
        + ("on its accelerator" if degree == 1 else f"on each of its {degree} accelerators"),
        f"KV cache: 2 x {spec.layers} layers x {max(spec.kv_heads, degree)} KV heads x "
        f"{spec.head_dim} head dim x {precision.kv_bytes_per_element} bytes = {per_token:,} bytes "
        f"per token, {per_sequence / GB:.2f} GB per sequence of {tokens} tokens"
        + (
            f" (grouped-query attention: {spec.grouped_query_factor:g}x smaller than multi-head)"
            if spec.kv_heads < spec.attention_heads
            else ""
        ),
        f"memory: {degree} x {accelerator.name} = {usable / GB:.1f} GB usable "
        f"({accelerator.memory_mib:,} MiB each)",
    ]
    if sequences >= 1:
        reasoning.append(
            f"fits: {free / GB:.1f} GB left for the KV cache holds {sequences} sequences of "
            f"{tokens} tokens"
        )
        profile, engine_sequences = engine
        share = profile.batching.kv_cache_memory
        if engine_sequences:
            reasoning.append(
                f"the {profile.name} engine allocates {share.describe()}: its KV cache holds "
                f"{engine_sequences} of those sequences"
            )
        elif engine_sequences == 0:
            memory = Memory(usable, weights, overhead, per_sequence)
            reasoning.append(
                f"does not start: the {profile.name} engine allocates {share.describe()}, "
                "whose KV cache holds none of those sequences (an engine that cannot hold one "
                "refuses to start: vLLM's check_enough_kv_cache_memory); it needs a share of "
                f"at least {share.least_fraction(memory):.0%}"
            )
    elif free > 0:
        reasoning.append(
            f"does not fit: {free / GB:.1f} GB left for the KV cache, below the "
            f"{MIN_KV_HEADROOM_BYTES / GB:g} GB headroom or one {per_sequence / GB:.2f} GB sequence"
        )
    else:
        reasoning.append(
            f"does not fit: needs {(weights + overhead + per_sequence) / GB:.1f} GB "
            f"(weights + overhead + one sequence), {degree} accelerators have {usable / GB:.1f} GB"
        )
    return reasoning


def _recommendation_reasoning(
    instance_type: InstanceType,
    ranked: list[RankedLayout],
    recommended: int | None,
    profile: EngineProfile,
    tokens: int,
) -> str:
    """Which tensor-parallel degree is recommended and why (the ranking, or the smallest fit)."""
    assert instance_type.accelerator is not None and instance_type.accelerator_count is not None
    count = instance_type.accelerator_count
    if recommended is None:
        share = profile.batching.kv_cache_memory
        within = (
            f" within the {share.describe()} the {profile.name} engine allocates"
            if share.fraction < 1
            else ""
        )
        return (
            f"no degree fits on {instance_type.name}{within}: use a larger instance type, an "
            "instance with more accelerators, or quantization (fp8/int8, int4 AWQ)"
        )
    if ranked and ranked[0].capacity is not None:
        return (
            f"recommended: tensor-parallel degree {recommended}, "
            f"{_copies(count // recommended)} per instance, the layout serving the most "
            f"tokens/s within {SIZING_SLO_MS_PER_TOKEN:g} ms/token by the {profile.name} "
            "engine profile "
            f"({sizing_workload(tokens).input_tokens} in / "
            f"{sizing_workload(tokens).output_tokens} out): {ranked[0].reason}"
        )
    why = (
        _why_none_ranks(ranked)
        if instance_type.accelerator.performance_known
        else "latency cannot be ranked, see below"
    )
    return (
        f"recommended: tensor-parallel degree {recommended}, "
        f"{_copies(count // recommended)} per instance (the smallest degree that fits; {why})"
    )


def _critical_batch_reasoning(accelerator: Accelerator, b_star: float | None) -> str:
    """The batch below which decode is memory-bound, or why latency is not predicted."""
    if b_star is None:
        return (
            f"latency not predicted on {accelerator.name}: {accelerator.unpublished}; the "
            "memory checks above still hold"
        )
    return (
        f"critical batch size: {accelerator.fp16_tflops:g} TFLOPS / "
        f"{accelerator.memory_bandwidth_gbps:g} GB/s = {b_star:.0f}; below it decode is "
        "memory-bound"
    )


def _why_none_ranks(ranked: list[RankedLayout]) -> str:
    """Why no layout serves within the sizing limit: each degree's binding reason (the 60 s
    timeout, memory, heads or the latency itself), never a latency claim the figures contradict."""
    if not ranked:
        return f"no layout meets {SIZING_SLO_MS_PER_TOKEN:g} ms/token"
    reasons = "; ".join(
        f"TP{r.layout.tensor_parallel_degree}: {r.reason}" for r in ranked if r.capacity is None
    )
    return (
        f"no layout serves the sizing workload within {SIZING_SLO_MS_PER_TOKEN:g} ms/token "
        f"and the {INVOCATION_TIMEOUT_S:g} s invocation timeout: {reasons}"
    )


def _sizing_engine_note(profile: EngineProfile, default: bool) -> str:
    """What the sizing's latency figures assume: the engine profile used, and why that one."""
    why = (
        "the default of `predict` and `recommend`; pass --engine FAMILY:VERSION for another "
        "serving image"
        if default
        else "the serving image's or the one given"
    )
    return (
        f"latency and tokens/s: the {profile.name} engine profile ({why}; "
        f"{profile_origin(profile)}; batch limit {profile.describe_batching()}), at the median, "
        "no band; `cdk-sagemaker-llm predict` gives the figures with their band"
    )


def _single_request_ms_per_token(
    spec: ModelSpec,
    instance_type: InstanceType,
    degree: int,
    precision: Precision,
    tokens: int,
    profile: EngineProfile,
) -> float:
    """ms/token of one request alone on the sizing workload, as the sizing limit measures it:
    end-to-end latency (prefill + every decode step) / output tokens."""
    layout = Layout(instance_type, degree, max(1, instance_type.accelerator_devices // degree))
    model = profile_model(spec, layout, precision, sizing_workload(tokens), profile)
    return model.level(1, 1).ms_per_token


# ----- What a serving container's environment says -------------------------------------------


@typed_props
@dataclass(frozen=True)
class ServingFacts:
    """The sizing-relevant settings of a serving container, read from its environment."""

    precision: Precision
    tensor_parallel_degree: int | None
    max_total_tokens: int | None
    max_concurrency: int | None
    hugging_face_id: str | None


def _int(value: Any) -> int | None:
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


@typed_factory
def serving_facts(environment: Mapping[str, Any]) -> ServingFacts:
    """Sizing settings from LMI (``OPTION_*``), TGI or SageMaker vLLM (``SM_VLLM_*``)
    variables; values that are not literal numbers (tokens, ``max``) count as unset."""
    env = dict(environment)
    model_id = env.get("HF_MODEL_ID")
    return ServingFacts(
        precision=Precision.from_environment(env),
        tensor_parallel_degree=_int(env.get("OPTION_TENSOR_PARALLEL_DEGREE"))
        or _int(env.get("SM_NUM_GPUS"))
        or _int(env.get(vllm_variable("tensor-parallel-size"))),
        max_total_tokens=_int(env.get("OPTION_MAX_MODEL_LEN"))
        or _int(env.get("MAX_TOTAL_TOKENS"))
        or _int(env.get(vllm_variable("max-model-len"))),
        max_concurrency=_int(env.get("OPTION_MAX_ROLLING_BATCH_SIZE"))
        or _int(env.get("MAX_CONCURRENT_REQUESTS"))
        or _int(env.get(vllm_variable("max-num-seqs"))),
        hugging_face_id=model_id if isinstance(model_id, str) else None,
    )
