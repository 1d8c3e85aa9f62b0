"""One copy of a model served by an engine profile, simulated: its memory gives the KV tokens,
its profile the scheduling policy (``selection``), its ``CopyModel`` the step costs."""

from __future__ import annotations

from ..engine_profiles import EngineProfile
from ..performance import CopyModel
from ..placement import copy_memory
from .costs import StepCosts
from .limits import BatchSettings
from .load import Load
from .loop import SimulationResult, simulate
from .policy import SchedulingPolicy
from .selection import engine_kv_bytes, kv_tokens_of, policy_for


def copy_policy(
    model: CopyModel,
    profile: EngineProfile,
    *,
    batch: BatchSettings | None = None,
    max_batch_size: int | None = None,
    max_concurrent_requests: int | None = None,
) -> SchedulingPolicy:
    """A fresh policy of ``profile`` over the KV tokens one copy of ``model``'s engine allocates
    (``selection.engine_kv_bytes``), bounded by
    the deployment's ``batch`` settings (default: the profile's, with ``max_batch_size`` as the
    request cap; ``policy_for`` states the options)."""
    if batch is None:
        batch = BatchSettings.of_profile(profile, max_sequences=max_batch_size)
    memory = copy_memory(
        model.spec,
        model.instance_type,
        model.tensor_parallel_degree,
        model.precision,
        model.workload.total_tokens,
        model.kv_cache,
    )
    return policy_for(
        profile,
        kv_tokens_of(model, engine_kv_bytes(profile, memory)),
        model.workload,
        batch=batch,
        max_concurrent_requests=max_concurrent_requests,
    )


def simulate_copy(
    model: CopyModel,
    profile: EngineProfile,
    load: Load,
    *,
    batch: BatchSettings | None = None,
    max_batch_size: int | None = None,
    max_concurrent_requests: int | None = None,
) -> SimulationResult:
    """Simulate ``load`` of ``model.workload`` on one copy (``copy_policy``)."""
    policy = copy_policy(
        model,
        profile,
        batch=batch,
        max_batch_size=max_batch_size,
        max_concurrent_requests=max_concurrent_requests,
    )
    return simulate(policy, StepCosts(model), model.workload, load)
