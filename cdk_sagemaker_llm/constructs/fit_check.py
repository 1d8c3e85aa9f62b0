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
from ..catalog.model_specs import ModelSpec, Precision
from ..planning.configured_sizing import size_as_configured
from ..planning.placement import KvCacheMemory, head_divisibility_problem
from ..planning.sizing import GB, SizingReport, size
from .validation import ValidationError

_size = functools.lru_cache(maxsize=512)(size)
"""``planning.sizing.size``, computed once per model, instance type, degree, precision and
sequence length: a stack of many components of one model on one instance type asks the same
question for each (ranking the layouts is about 10 ms each; synth cost in ``benchmarks/``).
Its arguments are frozen dataclasses and enums, and its report is never changed."""


def _sized(spec: ModelSpec, instance_type: InstanceType, **arguments: Any) -> SizingReport:
    """``_size``, or ``size`` where an argument cannot be a cache key (a spec or type holding a
    list)."""
    try:
        return _size(spec, instance_type, **arguments)
    except TypeError:
        return size(spec, instance_type, **arguments)


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
    attention or KV heads (serving containers refuse it), when weights + overhead + one
    sequence's KV cache exceed the accelerators' usable memory at that degree, or when they fit
    in that memory but not in the share the image's engine allocates (vLLM's
    ``gpu_memory_utilization``, as the environment sets it: the engine refuses to start), which
    is a warning where no image names the engine; warns when a configured max concurrency
    exceeds the sequences the engine's KV cache holds; notes (info) when the check is skipped
    because the model spec or the hardware is unknown. ``engine`` is the
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
    copy = size_as_configured(
        spec, instance_type, environment, engine=engine, accelerators=accelerators, sizer=_sized
    )
    facts, share, report = copy.facts, copy.share, copy.report
    degree = report.tensor_parallel_degree
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
        _refuse_the_misfit(report, instance_type, facts.precision, prop)
    if not report.engine_fits:
        _check_the_engines_share(
            scope, report, share, engine is not None, facts.precision, instance_type, prop
        )
    _warn_of_the_concurrency(scope, report, facts.max_concurrency, share, instance_type, prop)
    return report


def _fixes(report: SizingReport, instance_type: InstanceType, precision: Precision) -> list[str]:
    """What makes a copy that does not fit in memory fit."""
    fixes = []
    recommended = report.recommended_tensor_parallel_degree
    if recommended is not None and recommended != report.tensor_parallel_degree:
        if instance_type.is_neuron:
            fixes.append(
                f"shard over more chips ({recommended} chips, tensor-parallel degree "
                f"{recommended * instance_type.tensor_parallel_ranks_per_device} NeuronCores, "
                f"fit on {instance_type.name})"
            )
        else:
            fixes.append(
                f"shard over more accelerators (tensor-parallel degree "
                f"{recommended} fits on {instance_type.name})"
            )
    elif recommended is None:
        fixes.append("use an instance type with more or larger accelerators")
    fixes.append("use a larger instance type")
    if precision.bytes_per_parameter > 0.5:
        fixes.append("quantize the weights (fp8/int8, or int4 AWQ)")
    if report.max_total_tokens > 1024:
        fixes.append("or lower the max total tokens per sequence")
    return fixes


def _accelerators(report: SizingReport, instance_type: InstanceType) -> str:
    """E.g. ``1 x NVIDIA A10G``."""
    assert instance_type.accelerator is not None
    return f"{report.tensor_parallel_degree} x {instance_type.accelerator.name}"


def _refuse_the_misfit(
    report: SizingReport, instance_type: InstanceType, precision: Precision, prop: str
) -> None:
    """The ValidationError of a copy whose weights, overhead and one sequence's KV cache exceed
    its accelerators' memory."""
    raise ValidationError(
        prop,
        instance_type.name,
        f"{report.model} ({report.precision}) does not fit on "
        f"{_accelerators(report, instance_type)}: weights "
        f"{report.weights_bytes / GB:.1f} GB + overhead {report.overhead_bytes / GB:.1f} GB + KV "
        f"cache of one {report.max_total_tokens}-token sequence "
        f"{report.kv_cache_bytes_per_sequence / GB:.2f} GB = {report.needed_bytes / GB:.1f} GB, "
        f"above the {report.usable_memory_bytes / GB:.1f} GB usable",
        "; ".join(_fixes(report, instance_type, precision)),
    )


def _check_the_engines_share(
    scope: Construct,
    report: SizingReport,
    share: KvCacheMemory,
    engine_known: bool,
    precision: Precision,
    instance_type: InstanceType,
    prop: str,
) -> None:
    """A copy that fits in its accelerators' memory but not in the ``share`` its engine
    allocates: the engine refuses to start (vLLM's ``check_enough_kv_cache_memory``: "No
    available memory for the cache blocks. Try increasing `gpu_memory_utilization`"). Refused
    where the image names the engine; a warning where the engine is the default guess."""
    least = share.least_fraction(report.memory)
    problem = (
        f"{report.model} ({report.precision}) fits on {_accelerators(report, instance_type)} "
        f"({report.usable_memory_bytes / GB:.1f} GB usable), but its engine ({report.engine}) "
        f"allocates {share.describe()} {_chosen(share)}, "
        f"which leaves no room for one {report.max_total_tokens}-token sequence's KV cache: the "
        "engine refuses to start"
    )
    fixes = _fixes(report, instance_type, precision)
    if share.settings and least <= 1:
        fixes.insert(
            0,
            f"raise the engine's share to at least {least:.2f}: set "
            f"{' or '.join(share.settings)} in the environment"
            + (
                " (LmiOptions' and VllmOptions' gpu_memory_utilization render vLLM's)"
                if any(setting.endswith("GPU_MEMORY_UTILIZATION") for setting in share.settings)
                else ""
            ),
        )
    if engine_known:
        raise ValidationError(prop, instance_type.name, problem, "; ".join(fixes))
    Annotations.of(scope).add_warning_v2(
        "cdk-sagemaker-llm:engine-memory-share",
        f"{prop}: {problem}, if the image runs that default engine. Fix: {'; '.join(fixes)}.",
    )


def _chosen(share: KvCacheMemory) -> str:
    """``by default``, or ``as OPTION_GPU_MEMORY_UTILIZATION=0.95 sets``."""
    return f"as {share.set_by} sets" if share.set_by else "by default"


def _warn_of_the_concurrency(
    scope: Construct,
    report: SizingReport,
    max_concurrency: int | None,
    share: KvCacheMemory,
    instance_type: InstanceType,
    prop: str,
) -> None:
    """Warn when a configured max concurrency exceeds the sequences the engine's KV cache
    holds."""
    held = report.engine_held_sequences
    if max_concurrency is None or max_concurrency <= held:
        return
    Annotations.of(scope).add_warning_v2(
        "cdk-sagemaker-llm:kv-cache-concurrency",
        f"{prop}: max concurrency {max_concurrency} exceeds what the KV cache holds: "
        f"{held} sequences of {report.max_total_tokens} tokens "
        f"({report.model}, {report.precision}, {_accelerators(report, instance_type)}"
        + (
            f"; in the share of the memory {report.engine} allocates {_chosen(share)}"
            if report.engine_sequences is not None
            else ""
        )
        + "). "
        "Requests beyond that queue or are preempted; lower the max concurrency or the max "
        "total tokens, or add accelerators.",
    )
