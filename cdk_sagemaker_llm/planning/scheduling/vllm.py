"""vLLM's scheduler, as LMI's vLLM backend runs it.

KV blocks are allocated as sequences grow, not reserved up front; when a running sequence cannot
get a slot for its next token, the most recently admitted one is preempted and its prompt and
generated tokens are recomputed later (vLLM docs, "Optimization and Tuning": preemption,
``RECOMPUTE`` mode by default).

V0 (``vllm/core/scheduler.py`` ``_schedule_default``, prefill-first unless
``enable_chunked_prefill``): when waiting prompts can be admitted (within ``max_num_seqs``,
``max_num_batched_tokens`` and the free KV blocks) the pass prefills them and the running batch
waits; otherwise every running sequence decodes one token. Without chunked prefill
``max_num_batched_tokens`` defaults to ``max(max_model_len, 2048)`` (``vllm/config.py``
``SchedulerConfig``).

V1 (``vllm/v1/core/sched/scheduler.py``; vLLM engine arguments, docs.vllm.ai/en/v0.8.5/
serving/engine_args.html): one token budget per pass, ``max_num_batched_tokens``; running
sequences are scheduled first (one token each, or the next chunk of a prompt), then waiting ones
in arrival order while ``max_num_seqs``, the budget and the free KV blocks allow, the last prompt
chunked to the budget; automatic prefix caching is on by default. A pass that had to preempt a
running sequence admits no waiting one (``schedule``: the waiting queue is scheduled only ``if
not preempted_reqs``), and a preempted sequence's freed blocks stay in the prefix cache until
evicted, so it resumes from what survives there rather than from its first token: a burst
larger than the KV cache runs what fits and the rest wait, without thrashing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice

from .policy import SchedulingPolicy
from .state import SchedulerState, Sequence, Step

VLLM_V0_MIN_BATCHED_TOKENS = 2048
"""``_DEFAULT_MAX_NUM_BATCHED_TOKENS`` of vLLM V0 (``vllm/config.py``): without chunked prefill
the budget is ``max(max_model_len, 2048)``."""
VLLM_KV_WATERMARK = 0.01
"""``watermark`` of V0's block manager (``vllm/core/block_manager.py``): a prompt is admitted
only while 1 % of the KV blocks stay free."""


def _make_room(state: SchedulerState, sequence: Sequence, used: int, need: int) -> int | None:
    """Preempt the most recently admitted sequences until ``need`` more KV tokens fit beside
    ``used``; the KV tokens used after, or None when ``sequence`` itself had to go."""
    while used + need > state.kv_tokens:
        victim = state.running.pop()
        used -= victim.context
        victim.preempt()
        state.waiting.appendleft(victim)
        if victim is sequence:
            return None
    return used


@dataclass
class VllmPrefillFirst(SchedulingPolicy):
    """vLLM V0 without chunked prefill."""

    kv_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_on_demand: bool = True

    def plan(self, state: SchedulerState) -> Step:
        """Waiting prompts if any can be admitted, else one decode step of the batch."""
        admitted = self._admit(state)
        if admitted:
            return Step(prefills=tuple((s, s.prompt_left) for s in admitted))
        used = state.kv_used()
        index = 0
        while index < len(state.running):  # preemption pops from the end, past ``index``
            room = _make_room(state, state.running[index], used, 1)
            if room is not None:
                used = room + 1
            index += 1
        return Step(decodes=tuple(state.running))

    def _admit(self, state: SchedulerState) -> list[Sequence]:
        free = state.kv_tokens * (1 - VLLM_KV_WATERMARK) - state.kv_used()
        tokens = 0
        admitted: list[Sequence] = []
        while state.waiting and len(state.running) < self.max_num_seqs:
            sequence = state.waiting[0]
            need = sequence.prompt_left
            if tokens + need > self.max_num_batched_tokens or need > free:
                break
            state.waiting.popleft()
            self.start(sequence, state)
            admitted.append(sequence)
            tokens += need
            free -= need
        return admitted

    def describe(self) -> str:
        """The policy in one line."""
        return (
            f"vLLM V0 prefill-first: max_num_seqs {self.max_num_seqs}, max_num_batched_tokens "
            f"{self.max_num_batched_tokens}, {self.kv_tokens} KV tokens allocated as sequences "
            "grow, preemption by recompute (vllm/core/scheduler.py)"
        )


@dataclass
class VllmChunked(SchedulingPolicy):
    """vLLM V1: one token budget per pass shared by decodes and prompt chunks."""

    kv_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_on_demand: bool = True
    prefix_caching: bool = True
    _resumable: list[Sequence] = field(default_factory=list, repr=False)
    """Preempted sequences waiting with KV blocks still in the prefix cache."""

    def plan(self, state: SchedulerState) -> Step:
        """Running sequences first (a token, or a prompt chunk), then waiting prompts unless
        the running ones forced a preemption in this pass: V1 schedules the waiting queue only
        ``if not preempted_reqs`` (``vllm/v1/core/sched/scheduler.py`` ``schedule``)."""
        budget = self.max_num_batched_tokens
        used = state.kv_used()
        planned: list[tuple[Sequence, int]] = []
        preempted = False
        index = 0
        while index < len(state.running) and budget > 0:  # preemption pops past ``index``
            sequence = state.running[index]
            index += 1
            left = sequence.prompt_left
            need = min(left, budget) if left else 1
            if used + need > state.kv_tokens:  # only then is anyone preempted
                held = len(state.running)
                room = _make_room(state, sequence, used, need)
                self._resumable.extend(islice(state.waiting, held - len(state.running)))
                preempted = True
                if room is None:
                    break
                used = room
            used += need
            budget -= need
            planned.append((sequence, need))
        if not preempted:
            used = self._admit(state, budget, used, planned)
        self._evict(state.kv_tokens - used)
        prefills: list[tuple[Sequence, int]] = []
        decodes: list[Sequence] = []
        for sequence, need in planned:
            if sequence.prompt_left:
                prefills.append((sequence, need))
            else:
                decodes.append(sequence)
        return Step(prefills=tuple(prefills), decodes=tuple(decodes))

    def _admit(
        self,
        state: SchedulerState,
        budget: int,
        used: int,
        planned: list[tuple[Sequence, int]],
    ) -> int:
        """Admit waiting prompts in arrival order while ``max_num_seqs``, the token budget and
        the free KV blocks allow (a prompt's first chunk must fit: V1 allocates a request's
        blocks for the tokens each pass computes, ``KVCacheManager.allocate_slots``); the KV
        tokens used after."""
        while state.waiting and budget > 0 and len(state.running) < self.max_num_seqs:
            sequence = state.waiting[0]
            before = sequence.prefilled
            self.start(sequence, state)
            resumed = self._resume(sequence, state.kv_tokens - used)
            need = min(sequence.prompt_left, budget)
            if used + resumed + need > state.kv_tokens:
                state.running.pop()
                if resumed:
                    sequence.prefilled = before
                break
            state.waiting.popleft()
            sequence.cached = 0
            planned.append((sequence, need))
            budget -= need
            used += resumed + need
        return used

    def _resume(self, sequence: Sequence, free: int) -> int:
        """A preempted sequence's blocks that the prefix cache still holds count as computed
        (V1 frees a preempted request's blocks to the cache, and a resumed request looks its
        tokens up there like any prompt's, ``get_computed_blocks``): the KV tokens reused."""
        if not (self.prefix_caching and sequence.cached):
            return 0
        kept = min(sequence.cached, free, sequence.prompt_tokens - 1)
        if kept <= sequence.prefilled:
            return 0
        reused = kept - sequence.prefilled
        sequence.prefilled = kept
        return reused

    def _evict(self, free: int) -> None:
        """What the running batch allocates is taken from the free blocks, the cached ones
        among them: a waiting sequence's cached tokens shrink to the free KV tokens (freed
        blocks are evicted least recently used first, and a request's in reverse order, so its
        prompt's head survives longest: vLLM ``v1/core/block_pool.py``, ``free_blocks``)."""
        if not self._resumable:
            return
        kept = []
        for sequence in self._resumable:
            sequence.cached = min(sequence.cached, max(0, free))
            if sequence.cached:
                kept.append(sequence)
        self._resumable = kept

    def describe(self) -> str:
        """The policy in one line."""
        return (
            f"vLLM V1 chunked prefill: max_num_seqs {self.max_num_seqs}, max_num_batched_tokens "
            f"{self.max_num_batched_tokens} per pass, {self.kv_tokens} KV tokens allocated as "
            "sequences grow, preemption by recompute, prefix caching "
            "(vllm/v1/core/sched/scheduler.py)"
        )
