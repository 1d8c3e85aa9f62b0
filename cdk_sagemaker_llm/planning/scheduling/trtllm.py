"""TensorRT-LLM's in-flight batching (the batch manager LMI's TensorRT-LLM backend runs).

Every pass mixes the generation requests (one token each) with context (prefill) requests
within ``max_num_tokens`` tokens and ``max_batch_size`` requests (TensorRT-LLM docs, "Tuning
Max Batch Size and Max Num Tokens", nvidia.github.io/TensorRT-LLM/performance/performance-tuning-
guide; ``max_num_tokens`` default 8192). The default capacity scheduler policy
``GUARANTEED_NO_EVICT`` admits a request only when the KV cache can hold its prompt and every
token it may generate, so a started request is never paused (TensorRT-LLM docs, "Useful
Runtime Options", nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/useful-
runtime-flags.html: ``GUARANTEED_NO_EVICT`` is the default capacity scheduler policy).
Without chunked context (``enable_chunked_context``, off by default) a prompt is prefilled
whole, in a pass with room for it; with it, prompts are split into chunks that fill the pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from .policy import SchedulingPolicy
from .state import SchedulerState, Sequence, Step

TRTLLM_MAX_NUM_TOKENS = 8192
"""``max_num_tokens`` default (TensorRT-LLM performance tuning guide)."""


@dataclass
class InflightBatching(SchedulingPolicy):
    """TensorRT-LLM in-flight batching under ``GUARANTEED_NO_EVICT``."""

    kv_tokens: int
    max_batch_size: int
    max_num_tokens: int = TRTLLM_MAX_NUM_TOKENS
    chunked_context: bool = False

    def plan(self, state: SchedulerState) -> Step:
        """Every generation request, then context requests within the token budget."""
        decodes = tuple(s for s in state.running if s.prompt_left == 0)
        budget = self.max_num_tokens - len(decodes)
        prefills: list[tuple[Sequence, int]] = []
        for sequence in state.running:
            if sequence.prompt_left and budget > 0:
                take = min(sequence.prompt_left, budget)
                prefills.append((sequence, take))
                budget -= take
        reserved = state.kv_reserved()
        while state.waiting and len(state.running) < self.max_batch_size and budget > 0:
            sequence = state.waiting[0]
            need = sequence.prompt_left
            fits = need <= budget or self.chunked_context
            if not fits or reserved + sequence.reserved_tokens > self.kv_tokens:
                break
            state.waiting.popleft()
            self.start(sequence, state)
            take = min(sequence.prompt_left, budget)
            prefills.append((sequence, take))
            budget -= take
            reserved += sequence.reserved_tokens
        return Step(prefills=tuple(prefills), decodes=decodes)

    def describe(self) -> str:
        """The policy in one line."""
        chunking = "chunked context" if self.chunked_context else "whole prompts"
        return (
            f"TensorRT-LLM in-flight batching: max_batch_size {self.max_batch_size}, "
            f"max_num_tokens {self.max_num_tokens} per pass, {chunking}, GUARANTEED_NO_EVICT "
            f"over {self.kv_tokens} KV tokens (TensorRT-LLM performance tuning guide)"
        )
