"""The batch limits one deployment configures on its engine, per copy: the one place the
closed form (``performance.profile_limits``) and the simulation (``selection.policy_for``) read
them from. A deployment states what it set; what it leaves unset is the container's documented
default, carried by the engine profile's ``batching`` block (each profile cites its source)."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ValidationError
from ..engine_profiles import BatchLimit, EngineProfile

DEFAULT_MAX_BATCH_SIZE = 64
"""The server's per-copy batch limit assumed when none is given: the top of the range LMI's
documentation recommends for 7B-70B models (djl-serving, LMI "Instance Type Selection":
"Estimated Max Batch Size Range" 32-64). Raise it (``max_batch_size``) when you configure a
larger ``max_rolling_batch_size`` / ``MAX_CONCURRENT_REQUESTS``; vLLM's own default is 256."""


@dataclass(frozen=True)
class BatchSettings:
    """What bounds one copy's running batch, as the deployment configured its engine."""

    max_sequences: int | None
    """Requests one copy runs at once: vLLM ``max_num_seqs``, LMI ``max_rolling_batch_size``,
    TensorRT-LLM ``max_batch_size``, TGI ``--max-batch-size``; None: no request cap, only the
    KV-token budget (TGI's default)."""
    max_tokens_per_pass: int | None
    """Tokens one forward pass may compute: vLLM ``max_num_batched_tokens``, TensorRT-LLM
    ``max_num_tokens``, TGI ``MAX_BATCH_PREFILL_TOKENS``; None: the policy's own default."""
    max_batch_total_tokens: int | None = None
    """TGI ``MAX_BATCH_TOTAL_TOKENS``: the KV tokens the batch may hold; None: what the memory
    left after the weights holds (TGI infers it at warm-up)."""

    @staticmethod
    def of_profile(
        profile: EngineProfile,
        *,
        max_sequences: int | None = None,
        max_tokens_per_pass: int | None = None,
    ) -> BatchSettings:
        """The settings of a deployment of ``profile``'s engine: the values it configured
        (``max_sequences``, ``max_tokens_per_pass``), the profile's documented defaults for the
        rest. A request-capped engine whose profile states no cap gets
        ``DEFAULT_MAX_BATCH_SIZE``."""
        for name, value in (
            ("max_batch_size", max_sequences),
            ("max_tokens_per_pass", max_tokens_per_pass),
        ):
            if value is not None and value < 1:
                raise ValidationError(
                    name,
                    value,
                    "must be a positive number of requests or tokens per copy",
                    "pass what the deployment configures, e.g. 256 (vLLM max_num_seqs)",
                )
        batching = profile.batching
        sequences = max_sequences
        if sequences is None and batching.limit is not BatchLimit.KV_TOKENS:
            sequences = batching.max_batch_size or DEFAULT_MAX_BATCH_SIZE
        return BatchSettings(
            max_sequences=sequences,
            max_tokens_per_pass=max_tokens_per_pass or batching.max_batch_prefill_tokens,
            max_batch_total_tokens=batching.max_batch_total_tokens,
        )

    def describe(self) -> str:
        """The settings in words."""
        sequences = "no request cap" if self.max_sequences is None else self.max_sequences
        tokens = self.max_tokens_per_pass or "the engine's default"
        return f"max sequences {sequences} per copy, max tokens per pass {tokens}"
