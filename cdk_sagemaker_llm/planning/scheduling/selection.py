"""Which scheduling policy an engine profile runs, read from the profile's own batching fields
(``EngineProfile.batching``): a KV-token budget is TGI's router (chunked from 3.x), a compiled
batch is NeuronX, a chunked token budget is vLLM V1, a per-pass token budget without chunking
is TensorRT-LLM's in-flight batching, and a request cap alone is vLLM V0's prefill-first."""

from __future__ import annotations

from ..engine_profiles import BatchLimit, EngineProfile
from ..performance import CopyModel
from ..placement import kv_bytes_per_token_per_copy
from ..workload import Workload
from .limits import DEFAULT_MAX_BATCH_SIZE, BatchSettings
from .neuronx import StaticBatchSlots
from .policy import SchedulingPolicy
from .tgi import (
    TGI_MAX_BATCH_PREFILL_TOKENS,
    TGI_MAX_CONCURRENT_REQUESTS,
    TgiChunked,
    TgiPrefillFirst,
)
from .trtllm import InflightBatching
from .vllm import VLLM_V0_MIN_BATCHED_TOKENS, VllmChunked, VllmPrefillFirst

NEURON_ENGINE = "lmi-neuronx"
"""The profile ``engine`` of the NeuronX backends (``engine_profiles/lmi-neuronx.json``)."""


def kv_tokens_of(model: CopyModel, kv_free_bytes: float) -> int:
    """KV-cache tokens ``kv_free_bytes`` of KV cache hold on one copy."""
    per_token = kv_bytes_per_token_per_copy(
        model.spec, model.tensor_parallel_degree, model.precision, model.kv_cache
    )
    return max(0, int(kv_free_bytes // per_token))


def policy_for(
    profile: EngineProfile,
    kv_tokens: int,
    workload: Workload,
    *,
    batch: BatchSettings | None = None,
    max_concurrent_requests: int | None = None,
) -> SchedulingPolicy:
    """A fresh policy of ``profile`` over ``kv_tokens`` KV tokens per copy, bounded by the
    deployment's ``batch`` settings (default: the profile's, ``BatchSettings.of_profile``), the
    same the closed form reads (``performance.profile_limits``). A budget that could not hold
    the workload's longest prompt is raised to it, as the engines require at launch (TGI:
    ``max_batch_prefill_tokens`` >= ``max_input_tokens``; vLLM V0: the per-pass budget >= the
    longest prompt). TensorRT-LLM instead runs such prompts with chunked context: its scheduler
    fills a pass with the generation requests first, so a whole prompt as long as the budget
    could join only an empty batch, and one longer never (``microBatchScheduler.cpp``); chunked
    context is how it serves contexts longer than ``max_num_tokens`` (TensorRT-LLM docs, "Long
    Sequences": chunked context "allows TensorRT LLM to handle requests with longer contexts").

    :param max_concurrent_requests: TGI's ``MAX_CONCURRENT_REQUESTS``; default 128.
    """
    batching = profile.batching
    if batch is None:
        batch = BatchSettings.of_profile(profile)
    longest = workload.longest_input_tokens
    seqs = batch.max_sequences
    per_pass = batch.max_tokens_per_pass
    if batching.limit is BatchLimit.KV_TOKENS:
        budget = min(batch.max_batch_total_tokens or kv_tokens, kv_tokens)
        prefill = per_pass or TGI_MAX_BATCH_PREFILL_TOKENS
        cap = max_concurrent_requests or TGI_MAX_CONCURRENT_REQUESTS
        if batching.chunked_prefill:
            return TgiChunked(budget, prefill, cap, max_batch_size=seqs)
        return TgiPrefillFirst(
            budget, max(prefill, longest), max_concurrent_requests=cap, max_batch_size=seqs
        )
    seqs = seqs or DEFAULT_MAX_BATCH_SIZE
    if profile.engine == NEURON_ENGINE:
        return StaticBatchSlots(kv_tokens, seqs)
    if batching.chunked_prefill:
        return VllmChunked(kv_tokens, seqs, per_pass or VLLM_V0_MIN_BATCHED_TOKENS)
    if per_pass is not None:  # a prompt past max_num_tokens only runs chunked
        return InflightBatching(kv_tokens, seqs, per_pass, chunked_context=longest > per_pass)
    return VllmPrefillFirst(
        kv_tokens, seqs, max(VLLM_V0_MIN_BATCHED_TOKENS, workload.longest_tokens)
    )
