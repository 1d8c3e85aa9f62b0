"""What a scheduler works on: requests, the sequences they become once the engine holds them,
and the forward pass (``Step``) a policy plans from its waiting queue and its running batch."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SimRequest:
    """One request: when it arrives, its prompt and generated tokens, and the prompt tokens a
    prefix cache can serve once an earlier request with the same ``prefix_key`` has run."""

    index: int
    arrival_s: float
    input_tokens: int
    output_tokens: int
    prefix_key: object = None
    """Requests with equal keys share their first ``prefix_tokens`` prompt tokens."""
    prefix_tokens: int = 0
    client: int = -1
    """The closed-loop client that sent it (-1: an open-loop arrival)."""
    leaves: tuple[object, ...] = ()
    """Prefix keys its prompt leaves in the cache once prefilled (default: ``prefix_key``)."""

    @property
    def cached_keys(self) -> tuple[object, ...]:
        """The prefix keys a prefix cache holds after its prefill."""
        if self.leaves:
            return self.leaves
        return () if self.prefix_key is None else (self.prefix_key,)


@dataclass(eq=False, slots=True)
class Sequence:
    """A request the engine holds: how much of its prompt is in the KV cache, how many tokens it
    has generated, and when its first token and its end came."""

    request: SimRequest
    prompt_tokens: int
    """Tokens to prefill before decoding: the prompt, plus what it had generated when a
    preemption dropped its KV cache (vLLM recomputes them)."""
    prefilled: int = 0
    generated: int = 0
    decoded: int = 0
    """Tokens generated since its prompt (re)prefilled: what its KV cache holds beyond it."""
    first_token_s: float | None = None
    finished_s: float | None = None
    preemptions: int = 0
    last_token_s: float | None = None
    longest_gap_s: float = 0.0
    """The longest wait between two of its tokens (a stall while others prefill)."""
    cached: int = 0
    """KV tokens its last preemption freed into the prefix cache, which a resume can reuse while
    they are not evicted (vLLM V1 with prefix caching; ``vllm.VllmChunked``)."""

    @property
    def prompt_left(self) -> int:
        """Prompt tokens still to prefill."""
        return self.prompt_tokens - self.prefilled

    @property
    def context(self) -> int:
        """Tokens in its KV cache now."""
        return self.prefilled + self.decoded

    @property
    def reserved_tokens(self) -> int:
        """KV tokens its whole life needs: prompt + every token it may generate."""
        return self.request.input_tokens + self.request.output_tokens

    def advance(self, tokens: int, now: float) -> None:
        """Apply one forward pass: ``tokens`` prompt tokens prefilled (0: a decode step).
        Finishing the prompt samples a token, as a decode step does."""
        self.prefilled += tokens
        if self.prompt_left > 0:
            return
        self.generated += 1
        self.decoded += 1
        if self.first_token_s is None:
            self.first_token_s = now
        if self.last_token_s is not None:
            self.longest_gap_s = max(self.longest_gap_s, now - self.last_token_s)
        self.last_token_s = now

    def decode(self, now: float) -> None:
        """Apply one decode pass (its prompt is in the KV cache, its first token sampled): the
        hot path of ``advance(0, now)`` without its prompt checks."""
        self.generated += 1
        self.decoded += 1
        gap = now - self.last_token_s  # type: ignore[operator]  # set by its first token
        if gap > self.longest_gap_s:
            self.longest_gap_s = gap
        self.last_token_s = now

    def preempt(self) -> None:
        """Drop its KV cache; it will prefill its prompt and what it generated again (what the
        cache held is kept in ``cached``, for an engine whose prefix cache can serve it)."""
        self.cached = self.context
        self.prompt_tokens = self.request.input_tokens + self.generated
        self.prefilled = 0
        self.decoded = 0
        self.preemptions += 1

    @property
    def done(self) -> bool:
        """Whether it has generated every token it asked for."""
        return self.generated >= self.request.output_tokens


@dataclass(frozen=True)
class Step:
    """One forward pass: prompt chunks to prefill (sequence, tokens) and sequences decoding one
    token each."""

    prefills: tuple[tuple[Sequence, int], ...] = ()
    decodes: tuple[Sequence, ...] = ()

    @property
    def empty(self) -> bool:
        """Whether the pass has no work."""
        return not self.prefills and not self.decodes


@dataclass
class SchedulerState:
    """The engine's queue and batch; policies move sequences from ``waiting`` to ``running``
    (and back, on a preemption)."""

    kv_tokens: int
    """KV-cache tokens one copy holds (from the memory the weights leave, or a stated budget)."""
    waiting: deque[Sequence] = field(default_factory=deque)
    running: list[Sequence] = field(default_factory=list)
    cached_prefixes: set[object] = field(default_factory=set)
    """Prefix keys whose KV blocks are cached (engines with prefix caching)."""

    def kv_used(self) -> int:
        """KV tokens the running sequences hold now."""
        return sum(sequence.context for sequence in self.running)

    def kv_reserved(self) -> int:
        """KV tokens the running sequences' whole lives need (engines that reserve up front)."""
        return sum(sequence.reserved_tokens for sequence in self.running)
