"""Hugging Face TGI's router scheduling (``text-generation-router``).

TGI 1.x (``router/src/infer.rs`` ``batching_task``, ``router/src/queue.rs`` ``next_batch``):
a new batch is prefilled whole, as one forward pass, while every running sequence waits (no
chunking); it is taken from the queue in arrival order while its prompt tokens stay within
``MAX_BATCH_PREFILL_TOKENS`` and its prompt + ``max_new_tokens`` within what the running batch
leaves of ``MAX_BATCH_TOTAL_TOKENS`` (inferred at warm-up from the memory the weights leave).
While a batch runs, a new one is only taken when at least ``waiting_served_ratio`` x the running
batch's size are waiting, unless ``max_waiting_tokens`` decode steps have passed since the last
prefill. Beyond ``MAX_CONCURRENT_REQUESTS`` requests in flight the router answers 429 ("Model is
overloaded"). Defaults: TGI launcher reference (huggingface.co/docs/text-generation-inference/
reference/launcher) and the router's own arguments (``router/src/main.rs``, ``#[clap(default_value
= "1.2")] waiting_served_ratio``, ``"20"`` ``max_waiting_tokens``): ``--waiting-served-ratio``
1.2, ``--max-waiting-tokens`` 20, ``--max-concurrent-requests`` 128,
``--max-batch-prefill-tokens`` 4096.

TGI 3.x (``backends/v3/src/backend.rs``, ``backends/v3/src/queue.rs``; TGI v3 "Chunking" and
prefix caching, huggingface.co/docs/text-generation-inference/conceptual/chunking): a prompt that
does not fit the prefill budget is chunked, the running batch decodes in the same forward pass
as the new chunk (its tokens come out of the budget), there is no ``waiting_served_ratio``
wait, and a prompt's prefix already in the KV cache is not prefilled again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .policy import SchedulingPolicy
from .state import SchedulerState, Sequence, Step

TGI_WAITING_SERVED_RATIO = 1.2
"""``--waiting-served-ratio`` default (TGI launcher reference)."""
TGI_MAX_WAITING_TOKENS = 20
"""``--max-waiting-tokens`` default (TGI launcher reference)."""
TGI_MAX_CONCURRENT_REQUESTS = 128
"""``--max-concurrent-requests`` default (TGI launcher reference): beyond it, 429."""
TGI_MAX_BATCH_PREFILL_TOKENS = 4096
"""``--max-batch-prefill-tokens`` default (TGI launcher reference)."""


def _cap(max_batch_size: int | None) -> str:
    """``--max-batch-size`` in a policy's description (nothing when unset)."""
    return "" if max_batch_size is None else f", MAX_BATCH_SIZE {max_batch_size}"


def _room(max_batch_size: int | None, running: int) -> int:
    """Requests a new batch may add: ``--max-batch-size`` less the running batch (TGI launcher
    reference: "the maximum batch size the server will handle"; ``queue.rs`` ``next_batch``
    stops at it), unbounded when unset."""
    if max_batch_size is None:
        return 1 << 62
    return max(0, max_batch_size - running)


@dataclass
class TgiPrefillFirst(SchedulingPolicy):
    """TGI 1.x and 2.x: whole prompts prefilled while the running batch waits."""

    kv_tokens: int
    """``MAX_BATCH_TOTAL_TOKENS``."""
    max_batch_prefill_tokens: int = TGI_MAX_BATCH_PREFILL_TOKENS
    waiting_served_ratio: float = TGI_WAITING_SERVED_RATIO
    max_waiting_tokens: int = TGI_MAX_WAITING_TOKENS
    max_concurrent_requests: int = TGI_MAX_CONCURRENT_REQUESTS
    max_batch_size: int | None = None
    """``--max-batch-size`` (None: unset, the default; the token budgets alone bound the batch)."""
    _waiting_tokens: int = field(default=0, init=False)
    _decode_next: bool = field(default=False, init=False)

    def refuses(self, in_flight: int) -> bool:
        """TGI's router refuses beyond ``max_concurrent_requests``."""
        return in_flight >= self.max_concurrent_requests

    def plan(self, state: SchedulerState) -> Step:
        """A new batch's prefill (the running batch stalls), else one decode step."""
        running = state.running
        if running and self._decode_next:
            self._decode_next = False
            return Step(decodes=tuple(running))
        min_size = None
        if running and self._waiting_tokens < self.max_waiting_tokens:
            min_size = math.floor(len(running) * self.waiting_served_ratio)
        batch = self._next_batch(state, min_size)
        if batch:
            self._waiting_tokens = 1
            self._decode_next = True
            for sequence in batch:
                self.start(sequence, state)
            return Step(prefills=tuple((s, s.prompt_left) for s in batch))
        if not running:
            return Step()
        self._waiting_tokens += 1
        return Step(decodes=tuple(running))

    def coasted(self, passes: int) -> None:
        """Decode steps without a prefill count towards ``max_waiting_tokens``."""
        self._waiting_tokens += passes

    def coast_limit(self, state: SchedulerState) -> tuple[int | None, bool]:
        """While ``waiting_served_ratio`` holds the queue back, until ``max_waiting_tokens``
        decode steps have passed or enough requests arrive."""
        if state.waiting and self._waiting_tokens < self.max_waiting_tokens:
            return self.max_waiting_tokens - self._waiting_tokens, True
        return super().coast_limit(state)

    def _next_batch(self, state: SchedulerState, min_size: int | None) -> list[Sequence]:
        """``queue.rs`` ``next_batch``: entries in order within both token budgets; none when
        fewer than ``min_size`` are waiting or fit."""
        if min_size is not None and len(state.waiting) < min_size:
            return []
        budget = self.kv_tokens - state.kv_reserved()
        prefill = reserved = 0
        batch: list[Sequence] = []
        room = _room(self.max_batch_size, len(state.running))
        for sequence in state.waiting:
            if len(batch) == room:
                break
            prefill += sequence.prompt_left
            reserved += sequence.reserved_tokens
            if prefill > self.max_batch_prefill_tokens or reserved > budget:
                break
            batch.append(sequence)
        if not batch or (min_size is not None and len(batch) < min_size):
            return []
        for _ in batch:
            state.waiting.popleft()
        return batch

    def describe(self) -> str:
        """The policy in one line."""
        return (
            f"TGI prefill-first: MAX_BATCH_TOTAL_TOKENS {self.kv_tokens}, "
            f"MAX_BATCH_PREFILL_TOKENS {self.max_batch_prefill_tokens}, waiting_served_ratio "
            f"{self.waiting_served_ratio:g}, max_waiting_tokens {self.max_waiting_tokens}, "
            f"MAX_CONCURRENT_REQUESTS {self.max_concurrent_requests}{_cap(self.max_batch_size)} "
            "(TGI launcher reference; router/src/infer.rs, queue.rs)"
        )


@dataclass
class TgiChunked(SchedulingPolicy):
    """TGI 3.x: chunked prefill mixed with the running batch's decode, prefix caching."""

    kv_tokens: int
    max_batch_prefill_tokens: int = TGI_MAX_BATCH_PREFILL_TOKENS
    max_concurrent_requests: int = TGI_MAX_CONCURRENT_REQUESTS
    prefix_caching: bool = True
    max_batch_size: int | None = None
    """``--max-batch-size`` (None: unset, the default)."""

    def refuses(self, in_flight: int) -> bool:
        """TGI's router refuses beyond ``max_concurrent_requests``."""
        return in_flight >= self.max_concurrent_requests

    def plan(self, state: SchedulerState) -> Step:
        """The running batch's decodes and prompt chunks, then new prompts (the last one
        chunked) within the prefill budget less the running batch's tokens."""
        decodes: list[Sequence] = []
        prompting: list[Sequence] = []
        reserved = 0  # state.kv_reserved(), in the same walk over the batch
        for sequence in state.running:
            reserved += sequence.reserved_tokens
            (prompting if sequence.prompt_left else decodes).append(sequence)
        budget = self.max_batch_prefill_tokens - len(decodes)
        prefills: list[tuple[Sequence, int]] = []
        for sequence in prompting:
            if budget > 0:
                take = min(sequence.prompt_left, budget)
                prefills.append((sequence, take))
                budget -= take
        room = _room(self.max_batch_size, len(state.running))
        while state.waiting and budget > 0 and room > 0:
            sequence = state.waiting[0]
            if reserved + sequence.reserved_tokens > self.kv_tokens:
                break
            state.waiting.popleft()
            self.start(sequence, state)
            reserved += sequence.reserved_tokens
            take = min(sequence.prompt_left, budget)
            prefills.append((sequence, take))
            budget -= take
            room -= 1
        return Step(prefills=tuple(prefills), decodes=tuple(decodes))

    def describe(self) -> str:
        """The policy in one line."""
        return (
            f"TGI 3 chunked prefill: MAX_BATCH_TOTAL_TOKENS {self.kv_tokens}, "
            f"MAX_BATCH_PREFILL_TOKENS {self.max_batch_prefill_tokens} per pass (decodes "
            f"included), MAX_CONCURRENT_REQUESTS {self.max_concurrent_requests}"
            f"{_cap(self.max_batch_size)}, prefix caching "
            "(TGI launcher reference; backends/v3/src/backend.rs, queue.rs)"
        )
