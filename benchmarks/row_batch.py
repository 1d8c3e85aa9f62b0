"""The batch settings a published measurement ran its engine with, read from the row's notes
(``measurements/rows.csv``): what the source states (trtllm-bench's ``max_batch_size`` /
``max_num_tokens``, vLLM's ``--max-num-seqs`` / ``--max-num-batched-tokens``), trtllm-bench's own
batch choice where it made it, vLLM's server defaults on the row's GPU and ``trtllm-serve``'s
defaults where a run kept them, and the engine profile's documented defaults for the rest
(``planning.scheduling.limits.BatchSettings``). The closed form and the simulation both read
them, so a row is predicted under the limits it was measured under."""

from __future__ import annotations

import math
import re

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.engine_profiles import EngineProfile
from cdk_sagemaker_llm.planning.placement import copy_memory
from cdk_sagemaker_llm.planning.scheduling.limits import BatchSettings

STATED_SEQUENCES = (
    re.compile(r"max runtime batch (\d[\d,]*)"),
    re.compile(r"--max[-_]num[-_]seqs[= ](\d[\d,]*)"),
    re.compile(r"\bmax_num_seqs[= ](\d[\d,]*)"),
    re.compile(r"--max_batch_size[= ](\d[\d,]*)"),
)
"""How the notes state the request cap per copy (trtllm-bench's summary, vLLM's flag)."""
STATED_TOKENS = (
    re.compile(r"max runtime tokens (\d[\d,]*)"),
    re.compile(r"--max[-_]num[-_]batched[-_]tokens[= ](\d[\d,]*)"),
    re.compile(r"--max_num_tokens[= ](\d[\d,]*)"),
)
"""How the notes state the token budget per forward pass."""
TRTLLM_BENCH_CHOSE = re.compile(r"max batch size chosen by trtllm-bench")
"""A trtllm-bench run that left ``max_batch_size`` / ``max_num_tokens`` to its heuristic."""
TRTLLM_BENCH_MAX_BATCH = 4096
"""trtllm-bench's heuristic caps the batch at 4,096 requests (TensorRT-LLM
``tensorrt_llm/bench/build/tuning.py`` ``finetune_setting``: ``min(kv_cache_max_requests,
4096)``)."""


TRTLLM_SERVE_DEFAULTS = re.compile(r"trtllm-serve's defaults")
"""A ``trtllm-serve`` run the notes say left its batch limits at the server's defaults."""
TRTLLM_SERVE_BATCH = (2048, 8192)
"""(``max_batch_size``, ``max_num_tokens``) of ``trtllm-serve`` at its defaults: the CLI's
``--max_batch_size`` and ``--max_num_tokens`` default to ``BuildConfig``'s
(``tensorrt_llm/commands/serve.py``; ``tensorrt_llm/builder.py`` ``BuildConfig``:
``max_batch_size: int = 2048``, ``max_num_tokens: int = 8192``), not the LMI container's 256
(``option.max_rolling_batch_size``) the lmi-trtllm profile carries."""


VLLM_SERVE_DEFAULTS = re.compile(r"vllm serve .*default engine arguments")
"""A ``vllm serve`` run the notes say left every engine argument at its default."""
VLLM_LARGE_GPU_MIB = 70 * 1024
"""vLLM sets its defaults by the GPU: on one of at least 70 GiB that is not an A100 (H100,
H200), the OpenAI server runs ``max_num_seqs`` 1,024 and ``max_num_batched_tokens`` 8,192, on
any other 256 and 2,048 (vLLM ``engine/arg_utils.py``, the defaults by usage context, and its
test ``tests/engine/test_arg_utils.py`` ``test_defaults_with_usage_context``: "For GPUs like
H100, H200, and MI300x with >= 70GB memory")."""
VLLM_LARGE_GPU_DEFAULTS = (1024, 8192)
"""(``max_num_seqs``, ``max_num_batched_tokens``) of vLLM's OpenAI server on such a GPU."""


def _vllm_serve_defaults(notes: str, instance_type: InstanceType) -> tuple[int | None, int | None]:
    """The batch limits a ``vllm serve`` run at its default arguments had on the row's GPU,
    where they differ from the profile's (``VLLM_LARGE_GPU_MIB``); (None, None) otherwise."""
    accelerator = instance_type.accelerator
    if VLLM_SERVE_DEFAULTS.search(notes) is None or accelerator is None:
        return None, None
    if accelerator.memory_mib < VLLM_LARGE_GPU_MIB or "A100" in accelerator.name:
        return None, None
    return VLLM_LARGE_GPU_DEFAULTS


def _server_defaults(notes: str, instance_type: InstanceType) -> tuple[int | None, int | None]:
    """The batch limits a server run at its defaults had, where the notes say so and they
    differ from the profile's (``trtllm-serve``, ``vllm serve``); (None, None) otherwise."""
    if TRTLLM_SERVE_DEFAULTS.search(notes) is not None:
        return TRTLLM_SERVE_BATCH
    return _vllm_serve_defaults(notes, instance_type)


def _stated(notes: str, patterns: tuple[re.Pattern[str], ...]) -> int | None:
    for pattern in patterns:
        match = pattern.search(notes)
        if match is not None:
            return int(match.group(1).replace(",", ""))
    return None


def trtllm_bench_batch(kv_sequences: int) -> int:
    """The ``max_batch_size`` trtllm-bench's maximum-throughput heuristic picks for a copy whose
    KV cache holds ``kv_sequences`` requests of the dataset's lengths (TensorRT-LLM
    ``bench/build/tuning.py`` ``finetune_setting``: at most 4,096, rounded up to a multiple of
    32, 128 or 256 by size, at least 64): at or above what the KV cache holds, so the KV cache
    binds.

    Its token budget is not taken: the same heuristic gives ``max_num_tokens`` 2,048 for
    2,048-token prompts, which whole-prompt scheduling (``scheduling.trtllm``) could admit only
    into an empty batch, one request at a time; the page's 2,048/2,048 rows (9,305 output
    tokens/s for Llama 3.1 8B on one H100) rule that out, so the rows keep TensorRT-LLM's
    documented default (``max_num_tokens`` 8,192, the lmi-trtllm profile's)."""
    batch = min(kv_sequences, TRTLLM_BENCH_MAX_BATCH)
    if batch < 256:
        return max(64, 32 * math.ceil(batch / 32))
    if batch < 1024:
        return 128 * math.ceil(batch / 128)
    return 256 * math.ceil(batch / 256)


def row_batch(
    notes: str,
    profile: EngineProfile,
    *,
    spec: ModelSpec,
    instance_type: InstanceType,
    tensor_parallel_degree: int,
    precision: Precision,
    input_tokens: int,
    output_tokens: int,
) -> BatchSettings | None:
    """The settings the row's source ran its engine with; None when it states none (the
    profile's defaults apply)."""
    sequences = _stated(notes, STATED_SEQUENCES)
    tokens = _stated(notes, STATED_TOKENS)
    if sequences is None and tokens is None:
        sequences, tokens = _server_defaults(notes, instance_type)
    if TRTLLM_BENCH_CHOSE.search(notes) and sequences is None:
        try:
            memory = copy_memory(
                spec, instance_type, tensor_parallel_degree, precision, input_tokens + output_tokens
            )
        except ValidationError:
            return None
        sequences = trtllm_bench_batch(memory.sequences)
    if sequences is None and tokens is None:
        return None
    return BatchSettings.of_profile(profile, max_sequences=sequences, max_tokens_per_pass=tokens)
