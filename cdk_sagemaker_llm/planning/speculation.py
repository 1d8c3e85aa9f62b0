"""Speculative decoding in the performance model: how many tokens a decode step yields, what
the draft costs, and the concurrency above which it stops paying.

A draft (a small model, or an EAGLE head on the target's hidden states) proposes ``k`` tokens;
the target verifies them in one forward pass over ``k + 1`` positions per sequence and keeps
the accepted prefix plus one token of its own. With a per-token acceptance rate ``a`` the
expected tokens per verification step are (Leviathan, Kalman and Matias, "Fast Inference from
Transformers via Speculative Decoding", ICML 2023, eq. 1)::

    E(a, k) = (1 - a^(k + 1)) / (1 - a)

One step of a batch of ``b`` sequences then costs the target's verification (its weights are
read once, but it computes ``k + 1`` positions per sequence) plus ``k`` draft steps, and yields
``E`` tokens per sequence::

    verify(b) = step(b) - roofline(b) + max(memory(b), (k + 1) x compute(b))
    time per token(b) = (verify(b) + k x draft(b)) / E

While decode is memory-bound the verification costs about one ordinary step and speculation
pays ~E/(1 + k x draft share); as the batch grows the ``k + 1`` positions make the step
compute-bound, and above some batch speculation costs more than it saves (the "break-even"
concurrency). That batch is computed, not assumed: it is where ``(k + 1) x compute(b)`` (the
verification of ``b x (k + 1)`` tokens, rejected ones included) plus ``k`` draft forward passes
cost more than ``E`` ordinary steps.

Each draft token is a forward pass of its own (a draft model's, or the EAGLE head's): its
weights read, plus the fixed cost of a forward step in the engine (launches, sampling: the
engine profile's per-step overhead for a model of that many layers), and, under tensor
parallelism, the verification's all-reduces carry ``b x (k + 1)`` tokens. The draft passes
run inside one engine step, launched by the proposer: the engine core's per-request host work
(scheduling, updating each request from the step's output: ``CopyModel.host_s``) runs once
per step, not per draft token.

A speculative step also pays two host costs an ordinary step does not (vLLM V1, 0.8-0.13,
whose engine core schedules between forward passes: the lmi-vllm-v1 profile's
``per_sequence_source``):

- the engine core's per-request work runs per token a request takes in: the scheduler appends
  each accepted token to its request and checks its stop conditions one token at a time
  (vllm/v1/core/sched/scheduler.py, ``_update_request_with_output``), so a step yielding
  ``E`` tokens per sequence pays ``E`` times the per-sequence host cost;
- the drafter's setup: the step's sampled tokens are copied to the CPU before the proposer
  builds its inputs and launches its first pass (vllm/v1/worker/gpu_model_runner.py; the EAGLE
  proposer's ``prepare_next_token_ids_cpu`` reads them as Python lists), a second
  synchronisation per step that leaves the GPU idle for about an ordinary step's fixed cost
  (``drafter_setup_s``).

Checked against vLLM V1's own measurement: Llama 3 8B on one H100 at one sequence (MT-bench,
vllm-project/vllm#16035): an EAGLE head gave 1.36x with 2 draft tokens (mean accepted length
1.89) and 1.29x with 4 (2.08). The step times these imply, 10.8 and 12.6 ms against 7.8 ms
plain, put 0.9 ms on each draft token and 1.2 ms on the verification over a plain step; the
model says 1.39x and 1.27x (``tests/test_speculation.py``). Not wholly out of sample: the
``lmi-vllm-v1`` profile's floor on a forward pass's fixed cost (0.5 ms, the prior's
``step_overhead_floor_ms``) is read from the same 0.9 ms per draft token, since the fitted
rows cannot tell that cost from a per-layer one; the speed-ups' ratio to each other and the
verification's share are not.

Published measurements the model is checked against (``tests/test_speculation.py``,
``benchmarks/speculation_sweep.py``; docs/guides/capacity-planning.md):

- vLLM team, "How Speculative Decoding Boosts vLLM Performance by up to 2.8x" (blog.vllm.ai,
  2024-10-17; vLLM 0.6, the V0 engine, so checked with ``lmi-vllm-v0``): a draft model gives
  up to 1.5x at QPS 1 (Llama 3 70B, 4 x H100, ShareGPT) and
  a 1.4x *slowdown* at high QPS: "the extra compute required to propose and verify tokens can
  sometimes slow down the system when it is already compute-bound".
- Li et al., "EAGLE-3" (arXiv 2503.01840, 2025): Llama 3.1 8B on one H100 in SGLang, 158
  tokens/s plain, 244 with EAGLE-2 (1.5x) and 373 with EAGLE-3 (2.4x) at batch 1; 1.38x
  throughput at batch 64.
- SpecDecode-Bench, "Speculative Decoding: Performance or Illusion?" (arXiv 2601.11580, vLLM
  0.10-0.11 on H100, batch 1-128): speed-ups shrink as the batch grows (the system becomes
  compute-bound), are below the 3-4x often quoted at batch 1, and verification takes 42-95%
  of the time.
- vLLM's documentation: speculation "improves inter-token latency in memory-bound LLM
  inference" (docs.vllm.ai, "Speculative decoding in vLLM").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum
from typing import Protocol

from ..catalog.model_specs import ModelSpec
from ..errors import ValidationError
from ..prop_types import typed_factory, typed_props

EAGLE_ACCEPTANCE_RATE = 0.75
"""Default per-token acceptance of an EAGLE head: vLLM measured a mean accepted length of 3.53
for EAGLE-3 on Llama 3.1 8B with 7 draft tokens on MT-bench (vllm-project/vllm#26191: 12,208
tokens accepted of 33,712 drafted in 4,816 steps), which Leviathan's expectation reproduces at
its own ``k = 7`` with ``a = 0.75`` (E = 3.60; ``a = 0.8`` would say 4.16); at the default
``k = 5`` that is E = 3.29. EAGLE's paper reports about 3.5-4 tokens per step on MT-bench for
7B-70B chat models (Li et al., "EAGLE: Speculative Sampling Requires Rethinking Feature
Uncertainty", ICML 2024, Table 1) with a draft tree, which vLLM's chain of drafts does not
build."""
EAGLE_PESSIMISTIC_ACCEPTANCE_RATE = 0.6
"""Per-token acceptance of an EAGLE head on the pessimistic side (``recommend``'s default
risk): vLLM's own MT-bench runs on Llama 3 / 3.1 8B measured mean accepted lengths of 1.89-2.08
with an EAGLE-1 head at k = 2-4 (vllm-project/vllm#16035) and 2.39 with EAGLE-3
(vllm-project/vllm#24343); ``a = 0.6`` with ``k = 5`` gives E = 2.38. Acceptance "varies
markedly across output token positions, requests, and datasets" (SpecDecode-Bench, arXiv
2601.11580)."""
DRAFT_MODEL_ACCEPTANCE_RATE = 0.7
"""Default per-token acceptance of a separate small draft model: Leviathan et al. (2023,
Table 3) measure 0.5-0.9 across target/draft pairs; 0.7 is the middle of that range."""
DRAFT_MODEL_PESSIMISTIC_ACCEPTANCE_RATE = 0.5
"""Per-token acceptance of a draft model on the pessimistic side: the low end of Leviathan et
al.'s 0.5-0.9 (2023, Table 3)."""
DEFAULT_DRAFT_LENGTH = 5
"""Draft tokens per step: vLLM's documented example (``num_speculative_tokens=5``) and LMI's
default ``option.speculative_length``."""
EAGLE_DRAFT_LAYERS = 2
"""An EAGLE head's size in the target's decoder layers, for its weights and for its reads per
draft token. SageMaker's optimization job trains an EAGLE-3 or an EAGLE-2 head depending on
the model's architecture (AWS Machine Learning Blog, "Amazon SageMaker AI introduces EAGLE
based adaptive speculative decoding to accelerate generative AI inference", 2025-11). An
EAGLE-3 head is one decoder layer, a layer fusing three of the target's hidden states, and its
own LM head over a reduced draft vocabulary of 10k-32k tokens (Li et al., "EAGLE-3", arXiv
2503.01840; the EAGLE repository's configs: ``draft_vocab_size``; vLLM blog, "Speculators
v0.3.0", 2025-12-13): by their configs about 1.7 layers' worth for Llama 3.1 8B (0.42B
parameters) and 1.6 for 70B (1.4B), rounded up to two. An EAGLE-2 head is one decoder layer
and a fusing layer that reuse the target's full LM head (Li et al. 2024, section 4): fewer
weights of its own, so two layers is the memory of the larger head, but more reads per draft
token wherever the vocabulary is large. With Llama 3's 128,256 tokens the LM head is 0.53B
parameters (2.4 of Llama 3.1 8B's decoder layers) and 1.05B for 70B (1.2 layers), so an
EAGLE-2 draft token reads about 3.6 layers' worth on 8B and 2.4 on 70B, not two: an EAGLE-2
head on a large vocabulary is predicted cheaper per draft token than it is (with Llama 2's
32,000 tokens, about 1.8 layers' worth: within two). Each draft token reads about 2 / layers
of the target's weights, and is a forward step of a 2-layer model in the engine (its fixed
per-step cost included)."""


class SpeculationKind(Enum):
    """Where the draft tokens come from."""

    EAGLE = "eagle"
    """An EAGLE head trained on the target's hidden states (SageMaker's optimization job
    trains one: ``OptimizationTechnique.speculative_decoding``)."""
    DRAFT_MODEL = "draft-model"
    """A separate small model with the target's tokenizer (``SpeculativeDecoding``)."""


class DecodeTiming(Protocol):
    """The parts of a copy's decode-step timing speculation needs (``CopyModel`` has them)."""

    @property
    def spec(self) -> ModelSpec:
        """The target model."""
        ...

    def memory_time_s(self, batch: int) -> float:
        """Seconds a decode step of ``batch`` sequences spends reading memory."""
        ...

    def compute_time_s(self, batch: int) -> float:
        """Seconds a decode step of ``batch`` sequences spends computing."""
        ...

    def step_s(self, batch: int) -> float:
        """Seconds of one decode step of ``batch`` sequences, fixed costs included."""
        ...

    def all_reduce_s(self, tokens: float) -> float:
        """Seconds of the all-reduces of one forward pass over ``tokens`` tokens."""
        ...

    def draft_forward_overhead_s(self, layers: int) -> float:
        """The fixed cost of one forward step of a ``layers``-layer model in this engine."""
        ...

    def overhead_s(self) -> float:
        """The fixed cost of one forward step of the model in this engine."""
        ...

    def host_s(self, batch: int) -> float:
        """The engine's host cost per step for ``batch`` sequences that it does not overlap
        with the GPU (its per-request work, once per token each request takes in)."""
        ...


@typed_props
@dataclass(frozen=True)
class Speculation:
    """Speculative decoding as the performance model sees it; build it with ``eagle`` or
    ``draft_model``."""

    __synth_decision__ = "Speculative decoding's figures rank the layouts (predict, recommend)"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    kind: SpeculationKind
    """Where the draft tokens come from."""
    acceptance_rate: float
    """Probability that the target accepts one draft token (0 < a < 1)."""
    draft_length: int
    """Draft tokens proposed per step (``k``)."""
    draft: ModelSpec | None = None
    """The draft model, for ``DRAFT_MODEL``."""
    pessimistic_acceptance_rate: float | None = None
    """The acceptance ``recommend`` sizes with on the pessimistic side (``Risk.PESSIMISTIC``):
    the low end of the published range when the acceptance is the default, None (the stated
    rate) when it was given as measured."""

    def __post_init__(self) -> None:
        for prop in ("acceptance_rate", "pessimistic_acceptance_rate"):
            value = getattr(self, prop)
            if value is not None and not 0 < value < 1:
                raise ValidationError(
                    f"speculation.{prop}",
                    value,
                    "must be a probability strictly between 0 and 1",
                    "pass the measured per-token acceptance, e.g. 0.7",
                )
        if not 1 <= self.draft_length <= 16:
            raise ValidationError(
                "speculation.draft_length",
                self.draft_length,
                "must be between 1 and 16 draft tokens per step",
                f"pass e.g. {DEFAULT_DRAFT_LENGTH}",
            )

    @staticmethod
    @typed_factory
    def eagle(
        *,
        acceptance_rate: float | None = None,
        draft_length: int = DEFAULT_DRAFT_LENGTH,
    ) -> Speculation:
        """An EAGLE head (what SageMaker's speculative-decoding optimization job trains).

        :param acceptance_rate: the measured per-token acceptance; default
            ``EAGLE_ACCEPTANCE_RATE`` (0.75), and ``EAGLE_PESSIMISTIC_ACCEPTANCE_RATE`` (0.6)
            on the pessimistic side of a decision.
        """
        if acceptance_rate is None:
            return Speculation(
                SpeculationKind.EAGLE,
                EAGLE_ACCEPTANCE_RATE,
                draft_length,
                pessimistic_acceptance_rate=EAGLE_PESSIMISTIC_ACCEPTANCE_RATE,
            )
        return Speculation(SpeculationKind.EAGLE, acceptance_rate, draft_length)

    @staticmethod
    @typed_factory
    def draft_model(
        draft: ModelSpec,
        *,
        acceptance_rate: float | None = None,
        draft_length: int = DEFAULT_DRAFT_LENGTH,
    ) -> Speculation:
        """A separate small draft model (``ModelSpec.preset("llama-3.2-1b")``-like).

        :param acceptance_rate: the measured per-token acceptance; default
            ``DRAFT_MODEL_ACCEPTANCE_RATE`` (0.7), and
            ``DRAFT_MODEL_PESSIMISTIC_ACCEPTANCE_RATE`` (0.5) on the pessimistic side.
        """
        if acceptance_rate is None:
            return Speculation(
                SpeculationKind.DRAFT_MODEL,
                DRAFT_MODEL_ACCEPTANCE_RATE,
                draft_length,
                draft,
                DRAFT_MODEL_PESSIMISTIC_ACCEPTANCE_RATE,
            )
        return Speculation(SpeculationKind.DRAFT_MODEL, acceptance_rate, draft_length, draft)

    def pessimistic(self) -> Speculation:
        """This speculation at its pessimistic acceptance (itself when the rate was given)."""
        if self.pessimistic_acceptance_rate is None:
            return self
        return replace(
            self, acceptance_rate=self.pessimistic_acceptance_rate, pessimistic_acceptance_rate=None
        )

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens one verification step yields per sequence (Leviathan et al. eq. 1)."""
        a, k = self.acceptance_rate, self.draft_length
        return (1 - a ** (k + 1)) / (1 - a)

    def check_draft(self, target: ModelSpec) -> None:
        """A draft model must be smaller than the model it drafts for."""
        if self.draft is not None and self.draft.parameters >= target.parameters:
            raise ValidationError(
                "speculation.draft",
                self.draft.name,
                f"has {self.draft.parameters:.3g} parameters, not fewer than the target "
                f"{target.name} ({target.parameters:.3g})",
                "use a much smaller model of the same family (same tokenizer) as the draft",
            )

    def describe(self) -> str:
        """E.g. ``EAGLE, 5 draft tokens at 75% acceptance: 3.29 tokens per step``."""
        source = (
            "EAGLE head"
            if self.kind is SpeculationKind.EAGLE
            else f"draft model {self.draft.name if self.draft else '?'}"
        )
        return (
            f"{source}, {self.draft_length} draft tokens at {self.acceptance_rate:.0%} "
            f"acceptance: {self.tokens_per_step:.2f} tokens per step"
        )


@dataclass(frozen=True)
class SpeculativeTiming:
    """Decode timing of one copy with speculative decoding.

    ``draft`` is the timing of the draft model on the same accelerators (``DRAFT_MODEL``); an
    EAGLE head costs ``EAGLE_DRAFT_LAYERS / layers`` of the target's roofline per draft token.
    """

    target: DecodeTiming
    speculation: Speculation
    draft: DecodeTiming | None = None

    def __post_init__(self) -> None:
        self.speculation.check_draft(self.target.spec)
        if self.speculation.kind is SpeculationKind.DRAFT_MODEL and self.draft is None:
            raise ValidationError(
                "speculation.draft",
                None,
                "a draft-model speculation needs the draft's timing",
                "build it with Speculation.draft_model(ModelSpec.preset(...))",
            )

    def _roofline_s(self, timing: DecodeTiming, batch: int) -> float:
        return max(timing.memory_time_s(batch), timing.compute_time_s(batch))

    def verify_step_s(self, batch: int) -> float:
        """One verification step: the target's fixed costs, its weights read once, ``k + 1``
        positions computed per sequence (rejected ones too), its all-reduces carrying
        ``batch x (k + 1)`` tokens, the engine's per-request host work once per token each
        sequence takes in (``E`` instead of one) and the drafter's setup
        (``drafter_setup_s``)."""
        target = self.target
        positions = self.speculation.draft_length + 1
        fixed = target.step_s(batch) - self._roofline_s(target, batch)
        fixed += target.all_reduce_s(batch * positions) - target.all_reduce_s(batch)
        fixed += target.host_s(batch) * (self.speculation.tokens_per_step - 1)
        fixed += self.drafter_setup_s()
        return fixed + max(target.memory_time_s(batch), positions * target.compute_time_s(batch))

    def drafter_setup_s(self) -> float:
        """The host gap between the verification and the first draft pass: the sampled tokens
        reach the CPU, and the proposer builds its inputs and launches the pass while the GPU
        waits, for about an ordinary step's fixed cost (the target's ``overhead_s``)."""
        return self.target.overhead_s()

    def draft_step_s(self, batch: int) -> float:
        """One draft token for ``batch`` sequences: a forward step of the draft model (without
        the engine core's per-request host work, which runs once per engine step), or of the
        EAGLE head (``EAGLE_DRAFT_LAYERS / layers`` of the target's roofline plus the engine's
        fixed cost of a step of that many layers)."""
        if self.draft is not None:
            return self.draft.step_s(batch) - self.draft.host_s(batch)
        target = self.target
        share = EAGLE_DRAFT_LAYERS / target.spec.layers
        return share * self._roofline_s(target, batch) + target.draft_forward_overhead_s(
            EAGLE_DRAFT_LAYERS
        )

    def step_s(self, batch: int) -> float:
        """Seconds per generated token per sequence (what ``CopyModel.step_s`` is without
        speculation): a verification plus ``k`` draft tokens, over the expected yield."""
        spent = self.verify_step_s(batch) + self.speculation.draft_length * self.draft_step_s(batch)
        return spent / self.speculation.tokens_per_step

    def speedup(self, batch: int) -> float:
        """Plain step time over speculative time per token at ``batch`` (above 1: it pays)."""
        return self.target.step_s(batch) / self.step_s(batch)

    def break_even_batch(self, capacity: int) -> int | None:
        """The smallest batch, up to ``capacity``, at which speculation no longer pays; None
        when it pays at every batch the copy can hold. Speedup falls as the batch grows (the
        verification turns compute-bound), so a binary search finds it."""
        if capacity < 1 or self.speedup(capacity) > 1:
            return None
        low, high = 1, capacity
        while low < high:
            middle = (low + high) // 2
            if self.speedup(middle) <= 1:
                high = middle
            else:
                low = middle + 1
        return low

    def describe(self, capacity: int) -> str:
        """The effect in words, for a prediction's assumptions."""
        breakeven = self.break_even_batch(capacity)
        tail = (
            f"it stops paying at {breakeven} sequences per copy"
            if breakeven is not None
            else f"it pays up to the copy's {capacity} sequences"
        )
        return (
            f"speculative decoding ({self.speculation.describe()}): "
            f"{self.speedup(1):.2f}x at one sequence; {tail}"
        )


def draft_weight_bytes(
    speculation: Speculation, target: ModelSpec, bytes_per_parameter: float
) -> float:
    """Accelerator memory the draft takes beside the target's weights: the draft model's
    weights, or ``EAGLE_DRAFT_LAYERS`` of the target's layers for an EAGLE head (an EAGLE-3
    head's decoder layer, fusion layer and own reduced-vocabulary LM head), the size its
    timing reads per draft token."""
    if speculation.draft is not None:
        return speculation.draft.parameters * bytes_per_parameter
    return EAGLE_DRAFT_LAYERS * math.ceil(target.parameters / target.layers) * bytes_per_parameter
