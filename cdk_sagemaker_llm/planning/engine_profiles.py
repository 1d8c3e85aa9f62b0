"""Engine profiles: what a serving engine generation costs on top of the hardware roofline.

The performance model (``planning.performance``) times a decode step from bytes, FLOPS and
all-reduces; the engine decides how much of that the accelerator delivers and what it adds:
per-step overhead growing with layers and tensor-parallel degree, the efficiencies of its
decode and prefill kernels, how it limits its batch (a request count or a KV-token budget, with
its default limits), the share of the memory it allocates for weights and KV cache
(``Batching.kv_cache_memory``) and how fast its int4/fp8 kernels really are. Each profile is a
data file in ``planning/engine_profiles/`` with its provenance (sources, dates, engine versions,
hardware); ``benchmarks/fit_profiles.py`` fits the efficiencies and overheads to the published
measurements in ``benchmarks/measurements/rows.csv`` and stores the cross-validated residual
quantiles the prediction band comes from.

The container image chooses the profile (``profile_for_image``): the catalog knows the container
family and version; a user can override it (``predict(..., engine=...)``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cache
from importlib import resources
from typing import Any, Protocol

from ..catalog.containers import ContainerFamily, parse_container_release, version_tuple
from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import ModelSpec, Precision
from ..errors import ValidationError
from ..prop_types import typed_props
from .placement import KvCacheMemory, Memory

FALLBACK_PROFILE_NAME = "generic"
"""The profile of an image no other profile serves (its JSON states no containers)."""
PROFILE_NAMES = tuple(
    sorted(
        (
            entry.name.removesuffix(".json")
            for entry in resources.files(__package__).joinpath("engine_profiles").iterdir()
            if entry.name.endswith(".json")
        ),
        key=lambda name: (name == FALLBACK_PROFILE_NAME, name),
    )
)
"""Every profile shipped: the JSON files of ``planning/engine_profiles/`` (the fallback
last)."""

MIN_RESIDUALS = 5
"""A figure's band needs at least this many cross-validated residuals of the profile's own
rows; with fewer (e.g. a source measuring throughput only, so no single-request ms/token) the
band borrows the pooled residuals of every fitted profile (``Residuals.pooled``) instead of
claiming a certainty no row showed."""
MIN_RESIDUAL_SOURCES = 2
"""... and they must come from at least this many sources: one source's residuals measure that
source's own offset from the model (its client, its prompts, its engine build), not how far
another deployment lands from it (five rows of one llmperf run put lmi-vllm-v0's ms/token band
at x0.83-0.88, a band narrower than any two sources agree)."""

EXTRAPOLATION_WIDENING = 0.5
"""Each reason a prediction extrapolates (hardware, engine, model size, prompt length or TP
outside what the profile was fitted on) widens the band's log-width by this fraction: two
reasons double it. A judgement, documented in docs/guides/capacity-planning.md."""


class BatchLimit(Enum):
    """How an engine decides how many sequences run in one batch."""

    REQUESTS = "requests"
    """A request count (vLLM ``max_num_seqs``, LMI ``max_rolling_batch_size``), within the KV
    cache."""
    KV_TOKENS = "kv-tokens"
    """A KV-token budget (TGI ``MAX_BATCH_TOTAL_TOKENS``, by default what the memory left after
    the weights holds): as many sequences as their input + output tokens fit."""


class Accelerators(Enum):
    """The accelerators an engine runs on."""

    GPU = "gpu"
    """NVIDIA GPUs (CUDA)."""
    NEURON = "neuron"
    """AWS Inferentia2 and Trainium (the Neuron SDK)."""
    ANY = "any"
    """Unknown engine: any accelerator."""


@dataclass(frozen=True)
class VersionRange:
    """A container family (or a published measurement's engine name) over a version range:
    ``first`` included, ``below`` excluded, either open. An unknown version is the current
    line: it matches a range open above."""

    name: str
    first: str | None = None
    below: str | None = None

    @staticmethod
    def of(data: Mapping[str, str], key: str) -> VersionRange:
        """A range from its JSON form (``{key: name, "from": ..., "below": ...}``)."""
        return VersionRange(data[key], data.get("from"), data.get("below"))

    def matches(self, name: str, version: str | None) -> bool:
        """True when ``name`` at ``version`` lies in this range."""
        if name != self.name:
            return False
        parsed = _version(version)
        if parsed is None:
            return self.below is None
        return (self.first is None or parsed >= version_tuple(self.first)) and (
            self.below is None or parsed < version_tuple(self.below)
        )


@dataclass(frozen=True)
class Serves:
    """What an engine profile models: the containers and versions it serves, the names
    published measurements give that engine, and the accelerators it runs on (the JSON's
    ``serves``, with its ``source``). The profile-to-container mappings derive from it
    (``profile_name_for``, ``row_profile_name``, ``EngineProfile.family``)."""

    accelerators: Accelerators
    containers: tuple[VersionRange, ...]
    measured_as: tuple[VersionRange, ...]
    source: str

    def runs_on(self, instance_type: InstanceType) -> bool:
        """True when the engine runs on ``instance_type``'s accelerators."""
        if self.accelerators is Accelerators.NEURON:
            return instance_type.is_neuron
        if self.accelerators is Accelerators.GPU:
            return instance_type.is_gpu
        return True

    def refusal(self, instance_type: InstanceType) -> str | None:
        """Why the engine does not run on ``instance_type`` (vLLM on Inferentia, NeuronX on a
        GPU), in words; None when it does."""
        if self.runs_on(instance_type):
            return None
        accelerator = instance_type.accelerator
        return (
            f"runs on {self.accelerators.value} accelerators, not on "
            f"{accelerator.name if accelerator else 'no accelerator'} ({instance_type.name}): "
            f"{self.source.rstrip('.')}"
        )


@dataclass(frozen=True)
class ReleaseKernels:
    """The quantized kernels a range of an engine's releases loads instead of the profile's
    (the JSON's ``release_kernels``): a profile's kernels are fitted on the releases its rows
    measured, and a later release of the same line may load other kernels for the same
    weights. ``EngineProfile.for_release`` applies them."""

    releases: VersionRange
    """The container family and the releases, ``from`` included, ``below`` excluded."""
    kernels: Mapping[str, KernelSpeed]
    """Precision value (``int4`` ...) -> the kernel speed those releases run."""


@dataclass(frozen=True)
class Batching:
    """An engine's batch limit and its defaults."""

    limit: BatchLimit
    max_batch_size: int | None
    """The default request-count cap per copy; None when the engine has none (a KV-token
    budget only)."""
    max_batch_total_tokens: int | None
    """The default KV-token budget per copy; None: inferred from the free memory."""
    max_batch_prefill_tokens: int | None
    """Tokens one prefill step takes at most (TGI ``MAX_BATCH_PREFILL_TOKENS``, vLLM
    ``max_num_batched_tokens``); longer prompts are prefilled in chunks when
    ``chunked_prefill``."""
    chunked_prefill: bool
    source: str
    kv_cache_memory: KvCacheMemory
    """The share of a copy's memory the engine allocates, its KV cache taking what the weights
    and overhead leave of it: the one rule the closed form's limits and the scheduler
    simulation both read (``EngineProfile.engine_memory``)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "limit": self.limit.value,
            "max_batch_size": self.max_batch_size,
            "max_batch_total_tokens": self.max_batch_total_tokens,
            "max_batch_prefill_tokens": self.max_batch_prefill_tokens,
            "chunked_prefill": self.chunked_prefill,
            "source": self.source,
            "kv_cache_memory": {
                "fraction": self.kv_cache_memory.fraction,
                "of": "free" if self.kv_cache_memory.of_free else "total",
                "source": self.kv_cache_memory.source,
                **(
                    {"settings": list(self.kv_cache_memory.settings)}
                    if self.kv_cache_memory.settings
                    else {}
                ),
                **(
                    {
                        "measured_as": [
                            {"engine": engine, "fraction": fraction, "source": source}
                            for engine, fraction, source in self.kv_cache_memory.measured_as
                        ]
                    }
                    if self.kv_cache_memory.measured_as
                    else {}
                ),
            },
        }


@dataclass(frozen=True)
class KernelSpeed:
    """The real speed of an engine's quantized-weight kernels, relative to what their fewer
    bytes promise."""

    weight_read: float
    """Fraction of the FP16 kernels' bandwidth efficiency the quantized kernels reach while
    reading weights: 1.0 = the ideal 4x (int4) / 2x (fp8) fewer-bytes speed-up; 0.3 = an int4
    step reads weights only 1.2x faster than FP16."""
    compute: float
    """Fraction of FP16 compute efficiency at large batches (dequantizing costs arithmetic);
    above 1 where the kernel multiplies on faster tensor cores than FP16's (``compute_source``)."""
    source: str
    reconstruct_above: int | None = None
    """Rows (sequences in a decode step, prompt tokens in a prefill) above which the engine
    stops multiplying the quantized weights in a fused kernel and instead dequantizes each
    weight matrix to FP16 and multiplies it with cuBLAS (exllama's ``matmul_recons_thd``): a
    step then reads the quantized weights, writes them as FP16 and reads the FP16 back, at the
    FP16 kernels' bandwidth and compute efficiency. None: the fused kernel at every batch."""
    reconstruct_share: float = 1.0
    """Share of the quantized weights whose kernel reconstructs above ``reconstruct_above``
    (the others stay in the fused kernel at every batch)."""
    reconstruct_source: str = ""
    """Where ``reconstruct_above`` and ``reconstruct_share`` come from (engine source file and
    version)."""
    per_layer_ms: float = 0.0
    """Fixed cost of the quantized kernels per transformer layer per forward pass, ms,
    whatever the degree of tensor parallelism: the host's launch of kernels called from
    Python (a Triton kernel's launcher) that a short step waits for. 0: launched as cheaply
    as the FP16 kernels."""
    per_layer_source: str = ""
    """Where ``per_layer_ms`` comes from (engine source and the launch cost measured)."""
    compute_source: str = ""
    """Why ``compute`` may exceed FP16's, and what bounds it: FP8 GEMMs on FP8 tensor cores,
    whose dense peak is twice FP16's. Stated: the fit moves ``compute`` between FP16's rate
    and that peak (``benchmarks/profile_fitting.py`` ``KERNEL_COMPUTE_GRID``)."""

    def reconstructs(self, rows: float) -> bool:
        """Whether a matrix product over ``rows`` rows dequantizes to FP16 first."""
        return self.reconstruct_above is not None and rows > self.reconstruct_above

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        document: dict[str, Any] = {
            "weight_read": self.weight_read,
            "compute": self.compute,
            "source": self.source,
        }
        if self.reconstruct_above is not None:
            document["reconstruct_above"] = self.reconstruct_above
            document["reconstruct_share"] = self.reconstruct_share
            document["reconstruct_source"] = self.reconstruct_source
        if self.per_layer_source:
            document["per_layer_ms"] = self.per_layer_ms
            document["per_layer_source"] = self.per_layer_source
        if self.compute_source:
            document["compute_source"] = self.compute_source
        return document

    @staticmethod
    def of(document: Mapping[str, Any]) -> KernelSpeed:
        """A kernel speed from its JSON form (``to_dict``)."""
        above = document.get("reconstruct_above")
        return KernelSpeed(
            float(document["weight_read"]),
            float(document["compute"]),
            document["source"],
            None if above is None else int(above),
            float(document.get("reconstruct_share", 1.0)),
            document.get("reconstruct_source", ""),
            float(document.get("per_layer_ms", 0.0)),
            document.get("per_layer_source", ""),
            document.get("compute_source", ""),
        )


@dataclass(frozen=True)
class Quantiles:
    """Quantiles of the cross-validated log residuals ln(measured / predicted) of one
    figure."""

    p10: float
    p50: float
    p90: float
    low: float
    """The most negative residual seen (measured most below the prediction)."""
    high: float
    """The most positive residual seen."""

    @staticmethod
    def of(values: Sequence[float]) -> Quantiles:
        """Quantiles of ``values`` (linear interpolation between order statistics)."""
        ordered = sorted(values)
        if not ordered:
            return Quantiles(0.0, 0.0, 0.0, 0.0, 0.0)
        return Quantiles(
            _quantile(ordered, 0.1),
            _quantile(ordered, 0.5),
            _quantile(ordered, 0.9),
            ordered[0],
            ordered[-1],
        )

    def to_dict(self) -> dict[str, float]:
        """The JSON form (rounded)."""
        return {k: round(getattr(self, k), 4) for k in ("p10", "p50", "p90", "low", "high")}


def _quantile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


@dataclass(frozen=True)
class Residuals:
    """Leave-one-source-out residuals of a profile (``benchmarks/model_validation.py``)."""

    ms_per_token: Quantiles
    tokens_per_s: Quantiles
    rows: int
    """Rows the quantiles come from; 0: none (the band is a wide prior)."""
    source: str
    pooled: tuple[str, ...] = ()
    """Figures (``ms_per_token``, ``tokens_per_s``) the profile's own rows give too few
    cross-validated residuals for (``MIN_RESIDUALS``): their quantiles are the pooled
    leave-one-source-out residuals of every fitted profile, and ``band_of`` widens them as
    an extrapolation and says so."""
    pooled_source: str = ""
    """Where the pooled quantiles come from, in words."""


@dataclass(frozen=True)
class FittedRange:
    """What a profile was fitted on: outside it a prediction extrapolates."""

    gpus: tuple[str, ...]
    tensor_parallel_degrees: tuple[int, ...]
    parameters_billion: tuple[float, float]
    input_tokens: tuple[int, int]
    rows: int
    sources: tuple[str, ...]


@typed_props
@dataclass(frozen=True)
class EngineProfile:
    """One serving-engine generation's constants (see the module docstring)."""

    name: str
    """The profile's name (``tgi-1``, ``lmi-vllm-v1`` ...): its JSON file's stem."""
    engine: str
    """The engine and versions it covers, in words."""
    description: str
    """What the profile models and how it was made."""
    provenance: tuple[Mapping[str, str], ...]
    """Where the constants come from: source, date, engine version, hardware."""
    memory_bandwidth: float
    """Fraction of peak memory bandwidth decode reaches."""
    decode_compute: float
    """Fraction of peak dense FLOPS large decode batches reach."""
    prefill_compute: float
    """Fraction of peak dense FLOPS prefill reaches."""
    base_overhead_ms: float
    """Fixed per-step cost (scheduler, sampling, launches), ms."""
    per_layer_ms: float
    """Per-step cost per transformer layer at TP1, ms."""
    per_layer_per_extra_rank_ms: float
    """Per-step cost per layer for each doubling of the tensor-parallel degree (log2 TP;
    ``Efficiency.step_overhead_s``), ms."""
    per_extra_rank_ms: float
    """Per-step cost for each doubling of the tensor-parallel degree (log2 TP), ms."""
    all_reduce_scale: float
    """Multiplier on the all-reduce transfer time (1.0 = nccl-tests bandwidth)."""
    batching: Batching
    """How the engine limits its batch, with its documented defaults."""
    kernels: Mapping[str, KernelSpeed]
    """Precision value (``int4``, ``int8``, ``fp8``) -> kernel speed."""
    residuals: Residuals
    """Cross-validated residual quantiles of the profile's predictions (the bands)."""
    fitted: FittedRange | None
    """None: the profile is a prior, not fitted to measurements."""
    raw: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)
    """The JSON document the profile was read from."""
    per_sequence_ms: float = 0.0
    """Host (CPU) cost per sequence in the batch per decode step that the engine does not
    overlap with the GPU, ms (``Efficiency.per_sequence_ms``; the JSON's
    ``overhead.per_sequence_ms``, cited in ``overhead.per_sequence_source``)."""
    kv_reread_share: float = 0.0
    """Share of a KV head's re-reads by the other query heads of its group served from memory
    rather than L2 on a decode attention kernel with one query head per thread block
    (``Efficiency.kv_reread_share``; the JSON's ``efficiency.kv_reread_share``, 0 when absent)."""
    rank_cost_over_nvlink: bool = True
    """``Efficiency.rank_cost_over_nvlink`` (the JSON's ``overhead.rank_cost_over_nvlink``,
    true when absent)."""
    serves: Serves = field(
        default_factory=lambda: Serves(Accelerators.ANY, (), (), "no container stated")
    )
    """The containers, measured engine names and accelerators the profile models."""
    release_kernels: tuple[ReleaseKernels, ...] = ()
    """Releases that load other quantized kernels than the fitted ones (``for_release``)."""

    @property
    def family(self) -> ContainerFamily | None:
        """The container family the profile models first (None: any, the fallback)."""
        containers = self.serves.containers
        return ContainerFamily(containers[0].name) if containers else None

    def for_release(self, family: str, version: str | None) -> EngineProfile:
        """This profile as the container ``family`` at ``version`` runs it: with the kernels
        of the first ``release_kernels`` range that holds the release, else unchanged (a
        release no range holds, or an unknown version where every range is closed above,
        keeps the fitted kernels)."""
        for release in self.release_kernels:
            if release.releases.matches(family, version):
                return replace(self, kernels={**self.kernels, **release.kernels})
        return self

    def kernel(self, precision: Precision) -> KernelSpeed | None:
        """The kernel speed for quantized ``precision`` weights; None for fp16/bf16/fp32."""
        if precision.bytes_per_parameter >= 2:
            return None
        return self.kernels.get(precision.value)

    def extrapolation_reasons(
        self,
        spec: ModelSpec,
        gpu: str | None,
        tensor_parallel_degree: int,
        input_tokens: int,
        precision: Precision,
    ) -> list[str]:
        """Why a prediction leaves what this profile was fitted on (empty: it does not)."""
        fitted = self.fitted
        if fitted is None:
            return [f"engine: profile {self.name} is not fitted to measurements (a prior)"]
        reasons = []
        if gpu is None or gpu not in fitted.gpus:
            reasons.append(
                f"hardware: {gpu or 'this accelerator'} is not among the fitted "
                f"{', '.join(fitted.gpus)}"
            )
        degrees = fitted.tensor_parallel_degrees
        if not min(degrees) <= tensor_parallel_degree <= max(degrees):
            # Between two fitted degrees the TP terms (log2 TP overheads, all-reduces)
            # interpolate, as model size and prompt length do within their fitted ranges.
            reasons.append(
                f"tensor parallelism: TP{tensor_parallel_degree} outside the fitted "
                f"{'/'.join(map(str, degrees))}"
            )
        low, high = fitted.parameters_billion
        size = spec.parameters / 1e9
        if not low / 1.5 <= size <= high * 1.5:
            reasons.append(f"model size: {size:.1f}B outside the fitted {low:g}-{high:g}B")
        low_in, high_in = fitted.input_tokens
        if not low_in / 2 <= input_tokens <= high_in * 2:
            reasons.append(
                f"prompt length: {input_tokens} input tokens outside the fitted {low_in}-{high_in}"
            )
        if precision.bytes_per_parameter < 2:
            reasons.append(
                f"precision: {precision.value} weights use the published kernel speed, not a fit"
            )
        return reasons

    def describe(self) -> str:
        """One line: the profile and where it comes from."""
        fitted = (
            f"fitted to {self.fitted.rows} rows from {len(self.fitted.sources)} sources"
            if self.fitted
            else "a prior (not fitted)"
        )
        return (
            f"engine profile {self.name} ({self.description}; {fitted}): "
            f"{self.base_overhead_ms:g} ms + {self.per_layer_ms:g} ms/layer + "
            f"({self.per_extra_rank_ms:g} ms + {self.per_layer_per_extra_rank_ms:g} ms/layer) "
            "per TP doubling"
            + ("" if self.rank_cost_over_nvlink else " (not over NVLink)")
            + (
                f" + {self.per_sequence_ms:g} ms per sequence (host)"
                if self.per_sequence_ms
                else ""
            )
            + f" per step, batch limit {self.describe_batching()}"
        )

    def with_kv_cache_memory(self, kv_cache_memory: KvCacheMemory | None) -> EngineProfile:
        """This profile allocating ``kv_cache_memory`` (a serving environment's setting,
        ``KvCacheMemory.configured_by``) instead of its default share; None: its default."""
        if kv_cache_memory is None or kv_cache_memory == self.batching.kv_cache_memory:
            return self
        return replace(self, batching=replace(self.batching, kv_cache_memory=kv_cache_memory))

    def as_measured_by(self, engine: str) -> EngineProfile:
        """This profile as a published measurement's ``engine`` ran it: with the memory share
        that engine's own default gives (``KvCacheMemory.as_measured_by``)."""
        share = self.batching.kv_cache_memory
        return self.with_kv_cache_memory(share.as_measured_by(engine))

    def engine_memory(self, memory: Memory) -> Memory:
        """``memory`` as this engine allocates it (``Batching.kv_cache_memory``)."""
        return self.batching.kv_cache_memory.applied_to(memory)

    def describe_batching(self) -> str:
        """E.g. ``256 requests per copy`` or ``a KV-token budget (what the memory holds)``."""
        batching = self.batching
        if batching.limit is BatchLimit.KV_TOKENS:
            budget = (
                f"{batching.max_batch_total_tokens} tokens"
                if batching.max_batch_total_tokens
                else "what the memory holds"
            )
            return f"a KV-token budget ({budget})"
        return f"{batching.max_batch_size} requests per copy within the KV cache"


@dataclass(frozen=True)
class Band:
    """The p10-p90 range a prediction's measured value is expected in, and the pessimistic
    envelope sizing uses, as factors on the predicted ms/token and tokens/s."""

    ms_per_token: tuple[float, float]
    """(p10, p90) factors on the predicted ms/token."""
    tokens_per_s: tuple[float, float]
    """(p10, p90) factors on the predicted tokens/s."""
    pessimistic_ms_per_token: float
    """Factor on ms/token at the pessimistic edge: the slowest cross-validated residual
    (widened when extrapolating)."""
    pessimistic_tokens_per_s: float
    """Factor on tokens/s at the pessimistic edge."""
    median_ms_per_token: float
    median_tokens_per_s: float
    reasons: tuple[str, ...]
    """Why the band is widened (extrapolation), empty when it is not."""
    rows: int
    """Validation rows the residuals come from (a calibrated band: the benchmark's levels)."""
    basis: str | None = None
    """Where a band not made of the profile's residuals comes from (a calibration,
    ``planning.calibrated_band``); None for the profile's cross-validated band."""

    @property
    def pessimistic_slowdown(self) -> float:
        """One factor on times (and divisor of tokens/s) covering both pessimistic edges."""
        return max(self.pessimistic_ms_per_token, 1 / self.pessimistic_tokens_per_s)

    @property
    def median_slowdown(self) -> float:
        """The geometric mean of the median ms/token factor and the inverse median tokens/s
        factor."""
        return math.sqrt(self.median_ms_per_token / self.median_tokens_per_s)

    def ms_range(self, value: float) -> tuple[float, float]:
        """(p10, p90) of a predicted ms/token."""
        return value * self.ms_per_token[0], value * self.ms_per_token[1]

    def tokens_range(self, value: float) -> tuple[float, float]:
        """(p10, p90) of a predicted tokens/s."""
        return value * self.tokens_per_s[0], value * self.tokens_per_s[1]

    def describe(self) -> str:
        """One line. A calibration's band is quoted with its p10-p90; the engine profile's
        residuals only with the factors sizing takes from them (their median, and their
        slowest for ``Risk.WORST_CASE``): the band a prediction is quoted with is the
        conformal one (``planning.option_band``), which holds out of sample."""
        if self.basis is not None:
            text = (
                f"band p10-p90 {self.basis}: ms/token x"
                f"{self.ms_per_token[0]:.2f}-{self.ms_per_token[1]:.2f}, tokens/s x"
                f"{self.tokens_per_s[0]:.2f}-{self.tokens_per_s[1]:.2f}; pessimistic edge: "
                f"times x{self.pessimistic_slowdown:.2f}"
            )
        else:
            text = (
                f"the engine profile's residuals, {self.rows} cross-validated rows: median "
                f"times x{self.median_slowdown:.2f}, slowest x{self.pessimistic_slowdown:.2f}"
            )
        if self.reasons:
            text += "; widened for extrapolation: " + "; ".join(self.reasons)
        return text

    def sizing_factors(self) -> dict[str, Any]:
        """What sizing takes from the band, as JSON (``predict`` and ``recommend``'s
        ``sizing_factors``): the factor on the model's times the median sizes at, the one
        ``Risk.WORST_CASE`` sizes at, and the rows behind them."""
        return {
            "median": round(self.median_slowdown, 3),
            "worst_case": round(self.pessimistic_slowdown, 3),
            "rows": self.rows,
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "ms_per_token_factors": [round(f, 3) for f in self.ms_per_token],
            "tokens_per_s_factors": [round(f, 3) for f in self.tokens_per_s],
            "pessimistic_ms_per_token_factor": round(self.pessimistic_ms_per_token, 3),
            "pessimistic_tokens_per_s_factor": round(self.pessimistic_tokens_per_s, 3),
            "extrapolation": list(self.reasons),
            "rows": self.rows,
        } | ({"basis": self.basis} if self.basis else {})


def band_of(residuals: Residuals, reasons: Sequence[str]) -> Band:
    """The band of a prediction from its profile's residuals: p10-p90 widened by
    ``EXTRAPOLATION_WIDENING`` per extrapolation reason around the median; the pessimistic
    edge is the worst residual seen, or the widened p90 where that is worse. A figure whose
    residuals are pooled from other profiles (``Residuals.pooled``) is widened once more, and
    the band's reasons say so."""
    ms, tokens = residuals.ms_per_token, residuals.tokens_per_s
    widen_ms = 1 + EXTRAPOLATION_WIDENING * (len(reasons) + ("ms_per_token" in residuals.pooled))
    widen_tokens = 1 + EXTRAPOLATION_WIDENING * (
        len(reasons) + ("tokens_per_s" in residuals.pooled)
    )

    def factor(center: float, value: float, widen: float) -> float:
        return math.exp(center + (value - center) * widen)

    pooled = [
        f"{POOLED_LABELS[name]}: too few cross-validated {POOLED_LABELS[name]} rows of this "
        f"engine (fewer than {MIN_RESIDUALS}, or from one source); "
        f"{residuals.pooled_source or 'pooled residuals of the fitted profiles'}"
        for name in residuals.pooled
    ]
    return Band(
        ms_per_token=(factor(ms.p50, ms.p10, widen_ms), factor(ms.p50, ms.p90, widen_ms)),
        tokens_per_s=(
            factor(tokens.p50, tokens.p10, widen_tokens),
            factor(tokens.p50, tokens.p90, widen_tokens),
        ),
        pessimistic_ms_per_token=max(1.0, math.exp(ms.high), factor(ms.p50, ms.p90, widen_ms)),
        pessimistic_tokens_per_s=min(
            1.0, math.exp(tokens.low), factor(tokens.p50, tokens.p10, widen_tokens)
        ),
        median_ms_per_token=math.exp(ms.p50),
        median_tokens_per_s=math.exp(tokens.p50),
        reasons=(*reasons, *pooled),
        rows=residuals.rows,
    )


POOLED_LABELS = {"ms_per_token": "ms/token", "tokens_per_s": "tokens/s"}


# ----- Loading ----------------------------------------------------------------------------------


def _quantiles(data: Mapping[str, Any]) -> Quantiles:
    return Quantiles(*(float(data[k]) for k in ("p10", "p50", "p90", "low", "high")))


def _kv_cache_memory(data: Mapping[str, Any]) -> KvCacheMemory:
    """The JSON's ``batching.kv_cache_memory``: ``fraction`` of the ``total`` memory or of the
    ``free`` memory the weights leave, with its ``source``."""
    if data["of"] not in ("total", "free"):
        raise ValueError(f"kv_cache_memory.of={data['of']!r}: expected 'total' or 'free'")
    return KvCacheMemory(
        float(data["fraction"]),
        data["of"] == "free",
        data["source"],
        tuple(data.get("settings", ())),
        measured_as=tuple(
            (entry["engine"], float(entry["fraction"]), entry["source"])
            for entry in data.get("measured_as", ())
        ),
    )


def profile_from_dict(data: Mapping[str, Any]) -> EngineProfile:
    """An ``EngineProfile`` from its JSON document."""
    efficiency = data["efficiency"]
    overhead = data["overhead"]
    batching = data["batching"]
    residuals = data["residuals"]
    fitted = data.get("fitted")
    return EngineProfile(
        name=data["name"],
        engine=data["engine"],
        description=data["description"],
        provenance=tuple(dict(p) for p in data["provenance"]),
        memory_bandwidth=float(efficiency["memory_bandwidth"]),
        decode_compute=float(efficiency["decode_compute"]),
        prefill_compute=float(efficiency["prefill_compute"]),
        base_overhead_ms=float(overhead["base_ms"]),
        per_layer_ms=float(overhead["per_layer_ms"]),
        per_layer_per_extra_rank_ms=float(overhead["per_layer_per_extra_rank_ms"]),
        per_extra_rank_ms=float(overhead.get("per_extra_rank_ms", 0.0)),
        all_reduce_scale=float(overhead["all_reduce_scale"]),
        per_sequence_ms=float(overhead.get("per_sequence_ms", 0.0)),
        rank_cost_over_nvlink=bool(overhead.get("rank_cost_over_nvlink", True)),
        kv_reread_share=float(efficiency.get("kv_reread_share", 0.0)),
        batching=Batching(
            limit=BatchLimit(batching["limit"]),
            max_batch_size=batching["max_batch_size"],
            max_batch_total_tokens=batching["max_batch_total_tokens"],
            max_batch_prefill_tokens=batching["max_batch_prefill_tokens"],
            chunked_prefill=bool(batching["chunked_prefill"]),
            source=batching["source"],
            kv_cache_memory=_kv_cache_memory(batching["kv_cache_memory"]),
        ),
        kernels={name: KernelSpeed.of(k) for name, k in data["kernels"].items()},
        residuals=Residuals(
            _quantiles(residuals["ms_per_token"]),
            _quantiles(residuals["tokens_per_s"]),
            int(residuals["rows"]),
            residuals["source"],
            tuple(residuals.get("pooled", ())),
            residuals.get("pooled_source", ""),
        ),
        fitted=None
        if not fitted
        else FittedRange(
            gpus=tuple(fitted["gpus"]),
            tensor_parallel_degrees=tuple(int(t) for t in fitted["tensor_parallel_degrees"]),
            parameters_billion=(
                float(fitted["parameters_billion"][0]),
                float(fitted["parameters_billion"][1]),
            ),
            input_tokens=(int(fitted["input_tokens"][0]), int(fitted["input_tokens"][1])),
            rows=int(fitted["rows"]),
            sources=tuple(fitted["sources"]),
        ),
        raw=data,
        serves=_serves(data["serves"]),
        release_kernels=tuple(
            ReleaseKernels(
                VersionRange.of(release, "family"),
                {name: KernelSpeed.of(k) for name, k in release["kernels"].items()},
            )
            for release in data.get("release_kernels", ())
        ),
    )


def _serves(data: Mapping[str, Any]) -> Serves:
    return Serves(
        Accelerators(data["accelerators"]),
        tuple(VersionRange.of(c, "family") for c in data["containers"]),
        tuple(VersionRange.of(e, "engine") for e in data["measured_as"]),
        data["source"],
    )


def engine_profile(name: str) -> EngineProfile:
    """The shipped profile called ``name`` (one of ``PROFILE_NAMES``, in any case: ``TGI-1`` is
    ``tgi-1``, as ``--engine`` reads it)."""
    key = str(name).strip().lower()
    if key not in PROFILE_NAMES:
        raise ValidationError(
            "engine",
            name,
            "is not a known engine profile",
            f"use one of {', '.join(PROFILE_NAMES)} (any case)",
        )
    return _shipped_profile(key)


@cache
def _shipped_profile(name: str) -> EngineProfile:
    """The JSON of the shipped profile ``name`` (a key of ``PROFILE_NAMES``), read once."""
    text = resources.files(__package__).joinpath("engine_profiles", f"{name}.json").read_text()
    return profile_from_dict(json.loads(text))


def all_profiles() -> list[EngineProfile]:
    """Every shipped profile."""
    return [engine_profile(name) for name in PROFILE_NAMES]


# ----- Choosing a profile ---------------------------------------------------------------------


def profile_name_for(family: ContainerFamily | str, version: str | None) -> str:
    """The profile that models a container ``family`` at ``version``: the one whose JSON
    states it serves them (``Serves.containers``), else the fallback (``generic``)."""
    family = ContainerFamily(family)
    for profile in all_profiles():
        if any(c.matches(family.value, version) for c in profile.serves.containers):
            return profile.name
    return FALLBACK_PROFILE_NAME


def _version(version: str | None) -> tuple[int, ...] | None:
    if not version:
        return None
    try:
        return version_tuple(version)
    except ValueError:
        return None


def profile_for_image(family: ContainerFamily | str, version: str | None) -> EngineProfile:
    """The profile of a container image (see ``profile_name_for``), with the quantized
    kernels its release loads (``EngineProfile.for_release``)."""
    profile = engine_profile(profile_name_for(family, version))
    return profile.for_release(ContainerFamily(family).value, version)


class ContainerRelease(Protocol):
    """A serving container's family and release (``planning.calibration.EngineRelease`` is
    one): enough to choose its profile."""

    @property
    def family(self) -> str: ...

    @property
    def version(self) -> str | None: ...

    @property
    def kv_cache_memory(self) -> KvCacheMemory | None: ...


DEFAULT_PROFILE_NAME = "lmi-vllm-v1"
"""The profile used when no image or engine is given: the newest LMI (vLLM V1) line, the
library's recommended serving image."""


def resolve_profile(
    engine: EngineProfile | str | Any | None, neuron: bool = False
) -> EngineProfile:
    """``engine`` as a profile: a profile, a profile name, a ``calibration.EngineRelease``
    (its container family and version choose it; the memory share it is configured with
    replaces the profile's), or None for the default (``lmi-neuronx`` on
    Inferentia/Trainium, ``DEFAULT_PROFILE_NAME`` elsewhere)."""
    if engine is None:
        return engine_profile("lmi-neuronx" if neuron else DEFAULT_PROFILE_NAME)
    if isinstance(engine, EngineProfile):
        return engine
    if not isinstance(engine, str):  # a calibration.EngineRelease: the container it names
        profile = profile_for_image(engine.family, engine.version)
        return profile.with_kv_cache_memory(engine.kv_cache_memory)
    return engine_profile(engine)


def profile_on(
    engine: EngineProfile | str | Any | None, instance_type: InstanceType, prop: str = "engine"
) -> EngineProfile:
    """``resolve_profile`` for a layout on ``instance_type``: a ValidationError naming
    ``prop`` where that engine does not run on the type's accelerators (predicting it as other
    hardware would be a guess)."""
    profile = resolve_profile(engine, instance_type.is_neuron)
    refusal = profile.serves.refusal(instance_type)
    if refusal is not None:
        neuron = profile.serves.accelerators is Accelerators.NEURON
        wanted = "an Inferentia/Trainium" if neuron else "a GPU"
        raise ValidationError(
            prop,
            profile.name,
            refusal,
            f"pass an engine that runs on {instance_type.name} (omit it for the default there), "
            f"or {wanted} instance type",
        )
    return profile


ROW_RELEASE = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+)")
"""A release number in a measurement's engine version: dotted digits, after an optional ``v``,
not inside a word (``r24.07`` is a container tag)."""


def row_profile_name(engine: str, engine_version: str | None) -> str:
    """The profile a published measurement belongs to, from its engine name (``tgi``,
    ``lmi-vllm``, ``vllm``, ``lmi-trtllm``, ``trtllm``, ``nim``, ``lmi-neuronx``) and version:
    the profile whose JSON names it (``Serves.measured_as``), else the fallback. The version is
    the first release number the text states (``1.0.0rc3`` -> 1.0.0, ``r24.07 (Triton
    TensorRT-LLM backend 0.11)`` -> 0.11: a container tag is not a release); none is the current
    line."""
    stated = ROW_RELEASE.search(engine_version or "")
    version = stated.group(1) if stated else None
    for profile in all_profiles():
        if any(e.matches(engine, version) for e in profile.serves.measured_as):
            return profile.name
    return FALLBACK_PROFILE_NAME


def parse_engine(
    text: str, prop: str = "--engine"
) -> EngineProfile | tuple[ContainerFamily, str | None]:
    """``--engine`` as written: a profile name (``tgi-1``) as its profile, else a container
    ``FAMILY[:VERSION]`` as its family and release (``catalog.containers.
    parse_container_release``: a release the catalog lists, or none); both in any case. Neither
    is a ``ValidationError`` naming ``prop`` and listing the profiles and the families."""
    name = str(text).strip().lower()
    if name in PROFILE_NAMES:
        return engine_profile(name)
    try:
        return parse_container_release(prop, text)
    except ValidationError as error:
        if ":" in str(text) or "@" in str(text):
            raise
        # Neither a profile nor a family: the fix lists both, not only the families.
        raise ValidationError(
            prop,
            text,
            "is neither an engine profile nor a container family the library knows",
            f"pass a profile ({', '.join(PROFILE_NAMES)}) or a container FAMILY[:VERSION] "
            f"with FAMILY {error.fix.removeprefix('pass ')}",
        ) from error


def engine_argument(text: str | None) -> EngineProfile | None:
    """A command line's ``--engine`` as a profile (``parse_engine``): a profile name, or a
    container image as ``family[:version]`` (``tgi:1.4.5``, ``lmi:0.33.0``) whose profile is
    the one serving it; None when not given."""
    if text is None:
        return None
    parsed = parse_engine(text)
    return parsed if isinstance(parsed, EngineProfile) else profile_for_image(*parsed)


def profile_origin(profile: EngineProfile) -> str:
    """Where an engine profile's efficiencies come from, without claiming a fit it lacks: a
    prior, or the published measurements (rows and sources) it was fitted to."""
    fitted = profile.fitted
    if fitted is None:
        return f"the {profile.name} profile's prior, not fitted to measurements of this engine"
    sources = len(fitted.sources)
    return (
        f"the {profile.name} profile, fitted to {fitted.rows} published measurements from "
        f"{sources} source{'' if sources == 1 else 's'}"
    )
