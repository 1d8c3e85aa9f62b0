"""The synth-time fit check: does a model's copy fit on the accelerators it is given?

The arithmetic is ``planning.sizing``'s; this module turns its verdict into a synth error (the
model does not fit) or a warning (a configured concurrency the KV cache cannot hold).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from aws_cdk import Annotations
from constructs import Construct

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import ModelSpec
from ..planning.placement import head_divisibility_problem
from ..planning.sizing import GB, SizingReport, serving_facts, size
from .validation import ValidationError

_size = functools.lru_cache(maxsize=512)(size)
"""``planning.sizing.size``, computed once per model, instance type, degree, precision and
sequence length: a stack of many components of one model on one instance type asks the same
question for each (ranking the layouts is about 10 ms each; synth cost in ``benchmarks/``).
Its arguments are frozen dataclasses and enums, and its report is never changed."""


def check_fit(
    scope: Construct,
    *,
    spec: ModelSpec | None,
    environment: Mapping[str, Any],
    instance_type: InstanceType,
    accelerators: int | None,
    prop: str,
    engine: str | None = None,
) -> SizingReport | None:
    """The synth-time fit check of a model placed on ``accelerators`` of ``instance_type``.

    Raises ValidationError when the copy's tensor-parallel degree cannot shard the model's
    attention or KV heads (serving containers refuse it), or when weights + overhead + one
    sequence's KV cache exceed the accelerators' usable memory at that degree; warns when a
    configured max concurrency exceeds the sequences the KV cache holds; notes (info) when the
    check is skipped because the model spec or the hardware is unknown. ``engine`` is the
    serving image's engine profile name (``ContainerImage.engine_profile``): it ranks the
    layouts behind the recommended degree, as ``predict`` and ``recommend`` would; None: their
    default profile.
    """
    if spec is None:
        Annotations.of(scope).add_info(
            "Sizing skipped: the model's architecture is unknown. Pass spec=ModelSpec.preset(...) "
            "or ModelSpec.custom(...) to check at synth time that it fits."
        )
        return None
    if instance_type.accelerator is None or instance_type.accelerator_count is None:
        Annotations.of(scope).add_info(
            f"Sizing skipped: the catalog has no accelerator facts for {instance_type.name}. "
            "State them to check: InstanceType.of(name, accelerator=..., accelerator_count=N)."
        )
        return None
    facts = serving_facts(environment)
    # The degree counts ranks: GPUs, or NeuronCores on Inferentia2/Trainium (two per chip,
    # ``Accelerator.neuron_cores``); the sizing arithmetic counts devices, whose memory holds
    # the copy (24 ranks on ml.inf2.48xlarge are its 12 chips).
    ranks = facts.tensor_parallel_degree
    degree = (
        instance_type.devices_for_degree(ranks)
        if ranks
        else accelerators or instance_type.accelerator_count
    )
    degree = min(degree, instance_type.accelerator_count)
    arguments: dict[str, Any] = {
        "tensor_parallel_degree": degree,
        "precision": facts.precision,
        "max_total_tokens": facts.max_total_tokens,
        "engine": engine,
    }
    try:
        report = _size(spec, instance_type, **arguments)
    except TypeError:  # a spec or type holding a list cannot be a cache key
        report = size(spec, instance_type, **arguments)
    if report.head_problem is not None and not instance_type.is_neuron:
        # On Neuron the heads are padded to a multiple of the degree (neuronx-distributed's
        # ``pad_model`` / ``get_number_of_extra_heads``: 48 query heads at TP 32 are padded to
        # 64, the KV heads replicated), and the degree counts NeuronCores, not the chips sized
        # here: the GPU engines' divisibility rule does not apply.
        shardable = [
            d for d in range(1, degree) if head_divisibility_problem(spec, d) is None
        ]  # degree 1 always shards
        raise ValidationError(
            prop,
            f"tensor-parallel degree {degree} on {instance_type.name}",
            f"{spec.name} cannot be sharded at that degree: {report.head_problem}; LMI and TGI "
            "refuse to start",
            f"use a degree that divides the heads (e.g. {max(shardable)}): set the serving "
            "options' tensor_parallel_degree and the accelerators per copy to it",
        )
    if not report.fits:
        fixes = []
        recommended = report.recommended_tensor_parallel_degree
        if recommended is not None and instance_type.is_neuron:
            fixes.append(
                f"shard over more chips ({recommended} chips, tensor-parallel degree "
                f"{recommended * instance_type.tensor_parallel_ranks_per_device} NeuronCores, "
                f"fit on {instance_type.name})"
            )
        elif recommended is not None:
            fixes.append(
                f"shard over more accelerators (tensor-parallel degree "
                f"{recommended} fits on {instance_type.name})"
            )
        else:
            fixes.append("use an instance type with more or larger accelerators")
        fixes.append("use a larger instance type")
        if facts.precision.bytes_per_parameter > 0.5:
            fixes.append("quantize the weights (fp8/int8, or int4 AWQ)")
        if report.max_total_tokens > 1024:
            fixes.append("or lower the max total tokens per sequence")
        raise ValidationError(
            prop,
            instance_type.name,
            f"{spec.name} ({facts.precision.value}) does not fit on {degree} x "
            f"{instance_type.accelerator.name}: weights {report.weights_bytes / GB:.1f} GB + "
            f"overhead {report.overhead_bytes / GB:.1f} GB + KV cache of one "
            f"{report.max_total_tokens}-token sequence "
            f"{report.kv_cache_bytes_per_sequence / GB:.2f} GB = "
            f"{report.needed_bytes / GB:.1f} GB, above the {report.usable_memory_bytes / GB:.1f} "
            "GB usable",
            "; ".join(fixes),
        )
    held = report.engine_held_sequences
    if facts.max_concurrency is not None and facts.max_concurrency > held:
        Annotations.of(scope).add_warning_v2(
            "cdk-sagemaker-llm:kv-cache-concurrency",
            f"{prop}: max concurrency {facts.max_concurrency} exceeds what the KV cache holds: "
            f"{held} sequences of {report.max_total_tokens} tokens "
            f"({spec.name}, {facts.precision.value}, {degree} x {instance_type.accelerator.name}"
            + (
                f"; in the share of the memory {report.engine} allocates by default"
                if report.engine_sequences is not None
                else ""
            )
            + "). "
            "Requests beyond that queue or are preempted; lower the max concurrency or the max "
            "total tokens, or add accelerators.",
        )
    return report
