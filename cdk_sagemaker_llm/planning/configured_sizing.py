"""One copy sized as its serving container's environment configures it: the degree, precision,
longest sequence and memory share the environment sets. The synth-time fit check
(``constructs/fit_check.py``) and ``plan``'s review of a template (``review/serving.py``) both
size a placement through it, so that they cannot read one environment two ways. No aws_cdk
here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import ModelSpec
from .placement import KvCacheMemory
from .sizing import ServingFacts, SizingReport, configured_kv_cache_memory, serving_facts, size


@dataclass(frozen=True)
class ConfiguredCopy:
    """A copy as its environment configures it (``size_as_configured``)."""

    facts: ServingFacts
    """The environment's sizing settings (precision, degree, longest sequence, concurrency)."""
    share: KvCacheMemory
    """The share of the memory its engine allocates, as the environment sets it."""
    report: SizingReport
    """``size``'s report at that degree, precision, sequence length and share."""


def size_as_configured(
    spec: ModelSpec,
    instance_type: InstanceType,
    environment: Mapping[str, Any],
    *,
    engine: str | None,
    accelerators: int | None,
    sizer: Callable[..., SizingReport] = size,
) -> ConfiguredCopy:
    """Size one copy of ``spec`` on ``instance_type`` as ``environment`` configures it.

    The copy spans the degree the environment states (``OPTION_TENSOR_PARALLEL_DEGREE``,
    ``SM_NUM_GPUS``; on Inferentia2/Trainium it counts NeuronCores, two per chip, and the
    memory that holds the copy is the chips': ``InstanceType.devices_for_degree``), else
    ``accelerators`` (the placement's), else every accelerator, and at most the instance's.
    ``engine`` is the image's engine profile name (None: the default). ``sizer`` is ``size``
    or a cached copy of it. Raises ValidationError naming ``environment['VAR']`` on a memory
    share that is not a fraction (``KvCacheMemory.configured_by``)."""
    assert instance_type.accelerator_count is not None, "sized only with accelerator facts"
    facts = serving_facts(environment)
    ranks = facts.tensor_parallel_degree
    degree = (
        instance_type.devices_for_degree(ranks)
        if ranks
        else accelerators or instance_type.accelerator_count
    )
    degree = min(degree, instance_type.accelerator_count)
    share = configured_kv_cache_memory(engine, instance_type.is_neuron, environment)
    report = sizer(
        spec,
        instance_type,
        tensor_parallel_degree=degree,
        precision=facts.precision,
        max_total_tokens=facts.max_total_tokens,
        engine=engine,
        kv_cache_memory=share,
    )
    return ConfiguredCopy(facts, share, report)
