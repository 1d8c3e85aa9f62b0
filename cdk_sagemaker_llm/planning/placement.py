"""Placing one copy of a model on accelerators: where its memory goes and whether its attention
heads shard evenly.

Memory (domain.md "Sizing formulas"): weights are parameters x bytes per parameter; each
accelerator of a copy loses about 2 GB to the framework (CUDA context, activations, CUDA graphs);
the KV cache takes 2 (K and V) x layers x KV heads x head dimension x bytes per element per token.
What is left must hold at least 1 GB and one whole sequence, or the copy cannot serve.
Units: decimal gigabytes (GB, 10^9 bytes) throughout; accelerator memory is reported by the
driver in MiB and converted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..errors import ValidationError, is_token

GB = 1_000_000_000
"""Bytes in a (decimal) gigabyte: the unit every report uses."""
GIB = 1024**3
"""Bytes in a gibibyte."""
MIB = 1024**2
"""Bytes in a mebibyte (the unit drivers report accelerator memory in)."""
FRAMEWORK_OVERHEAD_BYTES = 2 * GB
"""Memory the serving framework takes on each accelerator besides weights and KV cache (CUDA
context, activations, CUDA graphs): about 2 GB (domain.md)."""
MIN_KV_HEADROOM_BYTES = 1 * GB
"""A layout must leave at least 1 GB for the KV cache on each copy: with less, the server can
hold only a few short sequences and its memory profiling (vLLM, TGI warm-up) refuses to start."""


def head_divisibility_problem(spec: ModelSpec, tensor_parallel_degree: int) -> str | None:
    """Why ``tensor_parallel_degree`` cannot shard ``spec``'s heads, or None when it can.

    Each device must hold whole attention heads, and either whole KV heads or a replica of one
    (vLLM's rule: KV heads divisible by TP, or TP divisible by KV heads).
    """
    if spec.attention_heads % tensor_parallel_degree:
        return (
            f"{spec.attention_heads} attention heads do not divide over {tensor_parallel_degree} "
            "accelerators"
        )
    if spec.kv_heads % tensor_parallel_degree and tensor_parallel_degree % spec.kv_heads:
        return (
            f"{spec.kv_heads} KV heads neither divide over nor replicate evenly onto "
            f"{tensor_parallel_degree} accelerators"
        )
    return None


def kv_bytes_per_token_per_copy(
    spec: ModelSpec,
    tensor_parallel_degree: int,
    precision: Precision,
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO,
) -> int:
    """KV-cache bytes one token takes in one copy, counting KV heads replicated when TP
    exceeds the KV heads (each device then keeps a whole KV head), at the ``kv_cache``
    precision (default the activation precision)."""
    kv_heads = max(spec.kv_heads, tensor_parallel_degree)
    return 2 * spec.layers * kv_heads * spec.head_dim * kv_cache.bytes_per_element(precision)


@dataclass(frozen=True)
class Memory:
    """Where one copy's memory goes."""

    usable_bytes: float
    weights_bytes: float
    overhead_bytes: float
    kv_bytes_per_sequence: int
    engine_reserve_bytes: float = 0.0
    """What the engine leaves unallocated (``KvCacheMemory.applied_to``): 0 for an engine that
    gives the KV cache everything the weights and overhead leave."""
    reserve_set_by: str | None = None
    """The serving environment's setting that chose the engine's share
    (``OPTION_GPU_MEMORY_UTILIZATION=0.5``: ``KvCacheMemory.set_by``), or None for its default."""

    @property
    def kv_free_bytes(self) -> float:
        """What is left for the KV cache (negative when the weights do not fit)."""
        return (
            self.usable_bytes - self.weights_bytes - self.overhead_bytes - self.engine_reserve_bytes
        )

    def after_the_reserve(self) -> str:
        """``, after the 8.6 GB the engine leaves unallocated`` (naming the setting that chose
        the share, where one did), or nothing where it takes all (for a reason that quotes
        ``kv_free_bytes``)."""
        if not self.engine_reserve_bytes:
            return ""
        setting = f" as {self.reserve_set_by} sets" if self.reserve_set_by else ""
        reserve = self.engine_reserve_bytes / GB
        return f", after the {reserve:.1f} GB the engine leaves unallocated{setting}"

    @property
    def sequences(self) -> int:
        """Whole sequences the KV cache holds (0 without the 1 GB headroom)."""
        if self.kv_free_bytes < MIN_KV_HEADROOM_BYTES:
            return 0
        return math.floor(self.kv_free_bytes / self.kv_bytes_per_sequence)


@dataclass(frozen=True)
class KvCacheMemory:
    """How much of a copy's memory an engine allocates at launch, the KV cache getting what its
    weights and overhead leave of that: ``fraction`` of the whole memory (vLLM's
    ``gpu_memory_utilization``) or, with ``of_free``, of what the weights and overhead leave
    (TensorRT-LLM's ``free_gpu_memory_fraction``). An engine profile states its own
    (``Batching.kv_cache_memory``), with its ``source``."""

    fraction: float
    of_free: bool
    source: str
    settings: tuple[str, ...] = ()
    """The serving environment's variables that set ``fraction`` (vLLM's
    ``SM_VLLM_GPU_MEMORY_UTILIZATION``, LMI's ``OPTION_GPU_MEMORY_UTILIZATION``); empty where
    the engine has none."""
    set_by: str | None = None
    """The setting that chose ``fraction`` (``OPTION_GPU_MEMORY_UTILIZATION=0.95``), or None
    where it is the engine's default (``source``)."""
    measured_as: tuple[tuple[str, float, str], ...] = ()
    """(engine name, fraction, source) for the published measurements' engines that run the same
    engine with another default than the container (trtllm-bench's 0.9 of the free memory
    where LMI's TensorRT-LLM container takes 0.95): what ``as_measured_by`` gives their rows."""

    def as_measured_by(self, engine: str) -> KvCacheMemory:
        """This share as a published measurement's ``engine`` (its rows.csv name) ran it."""
        for name, fraction, _source in self.measured_as:
            if name == engine:
                return replace(self, fraction=fraction, set_by=f"{engine}'s default")
        return self

    def configured_by(self, environment: Mapping[str, Any]) -> KvCacheMemory:
        """This share as a serving ``environment`` sets it: the first of ``settings`` it holds,
        else unchanged (and unchanged for a value resolved only at deploy time: a CDK token, or
        a template's intrinsic function). Raises ValidationError on a value that is not a
        fraction (``set_to``)."""
        for variable in self.settings:
            if variable not in environment:
                continue
            setting = environment[variable]
            if is_token(setting) or not isinstance(setting, str | int | float):
                return self  # known at deploy time only (a token, a template's intrinsic)
            return self.set_to(str(setting), f"environment['{variable}']", variable)
        return self

    def set_to(self, value: str | float, prop: str, setting: str) -> KvCacheMemory:
        """This share at ``value``, chosen by ``setting`` (a variable, a flag). Raises
        ValidationError naming ``prop`` on a value that is not a fraction above 0 and at most
        1: the engine refuses it at start."""
        try:
            fraction = float(value)
        except ValueError:
            fraction = math.nan
        if not 0 < fraction <= 1:
            raise ValidationError(
                prop,
                value,
                "the engine takes a fraction of the memory above 0 and at most 1",
                f"pass e.g. {self.fraction:g} (the engine's default)",
            )
        return replace(self, fraction=fraction, set_by=f"{setting}={value}")

    def least_fraction(self, memory: Memory) -> float:
        """The smallest ``fraction`` at which ``memory``'s KV cache holds one sequence and the
        1 GB headroom (``Memory.sequences`` >= 1), rounded up to the hundredth a setting is
        written in; above 1 where no share does."""
        needed = float(max(memory.kv_bytes_per_sequence, MIN_KV_HEADROOM_BYTES))
        if self.of_free:
            whole = memory.usable_bytes - memory.weights_bytes - memory.overhead_bytes
        else:
            whole = memory.usable_bytes
            needed += memory.weights_bytes + memory.overhead_bytes
        return math.ceil(100 * needed / whole) / 100 if whole > 0 else math.inf

    def applied_to(self, memory: Memory) -> Memory:
        """``memory`` with the share this engine leaves unallocated set aside."""
        whole = memory.usable_bytes
        if self.of_free:
            whole -= memory.weights_bytes + memory.overhead_bytes
        reserve = (1 - self.fraction) * max(0.0, whole)
        return replace(memory, engine_reserve_bytes=reserve, reserve_set_by=self.set_by)

    def describe(self) -> str:
        """E.g. ``90% of the accelerators' memory``."""
        whole = "the memory the weights leave" if self.of_free else "the accelerators' memory"
        return f"{self.fraction:.0%} of {whole}"


def copy_memory(
    spec: ModelSpec,
    instance_type: InstanceType,
    tensor_parallel_degree: int,
    precision: Precision,
    sequence_tokens: int,
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO,
) -> Memory:
    """One copy's memory: usable memory of its accelerators, weights, ~2 GB framework overhead
    per accelerator (CUDA context, activations, graphs: each shard has its own), and the KV
    cache of one sequence of ``sequence_tokens`` at the ``kv_cache`` precision."""
    accelerator = instance_type.accelerator
    memory_mib = accelerator.memory_mib if accelerator else 0
    return Memory(
        usable_bytes=memory_mib * MIB * tensor_parallel_degree,
        weights_bytes=spec.parameters * precision.bytes_per_parameter,
        overhead_bytes=FRAMEWORK_OVERHEAD_BYTES * tensor_parallel_degree,
        kv_bytes_per_sequence=kv_bytes_per_token_per_copy(
            spec, tensor_parallel_degree, precision, kv_cache
        )
        * sequence_tokens,
    )


HOST_RESERVED_BYTES = 2 * GB
"""Host memory the operating system, the model server and the runtime keep for themselves."""


def host_memory_problem(
    spec: ModelSpec, instance_type: InstanceType, precision: Precision
) -> str | None:
    """Why the instance's host memory cannot stage the weights, or None.

    The Neuron runtime loads a compiled model's weights through host memory before copying them
    to the devices (AWS Neuron documentation, "Neuron runtime": the model is loaded into host
    memory, then onto the NeuronCores), so an Inferentia/Trainium instance needs host memory
    for the whole weights (ml.inf2.xlarge: 16 GiB). GPU servers stream safetensors shards to
    the devices and are not held to this.
    """
    if not instance_type.is_neuron or instance_type.memory_mib is None:
        return None
    weights = spec.parameters * precision.bytes_per_parameter
    host = instance_type.memory_mib * MIB
    if weights <= host - HOST_RESERVED_BYTES:
        return None
    return (
        f"{weights / GB:.1f} GB of weights do not fit in the {host / GB:.1f} GB host memory "
        f"(less {HOST_RESERVED_BYTES / GB:g} GB reserved) the Neuron runtime loads them through"
    )
