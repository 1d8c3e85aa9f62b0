"""The batch settings a published row ran its engine with (``benchmarks/row_batch.py``): what
the source states, trtllm-bench's heuristic where it chose, none otherwise; and the closed form
predicts the row under them."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from conftest import benchmark_module

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile


@pytest.fixture(scope="module")
def row_batch() -> ModuleType:
    return benchmark_module("row_batch")


def _settings(row_batch: ModuleType, notes: str, profile: str = "lmi-trtllm") -> Any:
    return row_batch.row_batch(
        notes,
        engine_profile(profile),
        spec=ModelSpec.LLAMA_3_8B,
        instance_type=InstanceType.of("ml.p5.48xlarge"),
        tensor_parallel_degree=1,
        precision=Precision.FP16,
        input_tokens=128,
        output_tokens=128,
    )


def test_a_row_states_its_runtime_batch_and_token_budget(row_batch: ModuleType) -> None:
    stated = _settings(row_batch, "engine: TP8, max runtime batch 2048, max runtime tokens 8192")
    assert (stated.max_sequences, stated.max_tokens_per_pass) == (2048, 8192)
    vllm = _settings(row_batch, "vllm serve --max-num-batched-tokens=4096", "lmi-vllm-v1")
    assert (vllm.max_sequences, vllm.max_tokens_per_pass) == (256, 4096)  # max_num_seqs default


def test_a_row_that_states_nothing_runs_at_the_profiles_defaults(row_batch: ModuleType) -> None:
    assert _settings(row_batch, "AIPerf at fixed concurrency") is None


def test_vllm_serve_at_its_defaults_runs_1024_sequences_on_an_h100_and_256_on_an_a100(
    row_batch: ModuleType,
) -> None:
    """vLLM's OpenAI server defaults by GPU: 1,024 sequences and 8,192 batched tokens on a GPU
    of >= 70 GiB other than the A100, the profile's 256 and 2,048 elsewhere."""
    notes = "to 'vllm serve Qwen/Qwen3-14B' (vLLM 0.11.0, V1 engine, default engine arguments)"
    h100 = _settings(row_batch, notes, "lmi-vllm-v1")
    assert (h100.max_sequences, h100.max_tokens_per_pass) == (1024, 8192)
    a100 = row_batch.row_batch(
        notes,
        engine_profile("lmi-vllm-v1"),
        spec=ModelSpec.LLAMA_3_8B,
        instance_type=InstanceType.of("ml.p4de.24xlarge"),
        tensor_parallel_degree=1,
        precision=Precision.FP16,
        input_tokens=128,
        output_tokens=128,
    )
    assert a100 is None
    stated = _settings(row_batch, notes + ", --max-num-seqs 64", "lmi-vllm-v1")
    assert stated.max_sequences == 64


def test_trtllm_bench_sizes_the_batch_by_the_kv_cache_up_to_4096(row_batch: ModuleType) -> None:
    """``finetune_setting``: at or above what the KV cache holds (2,000 -> 2,048, multiples of
    256 above 1,024), at least 64, at most 4,096; the token budget stays the profile's."""
    assert row_batch.trtllm_bench_batch(2000) == 2048
    assert row_batch.trtllm_bench_batch(300) == 384
    assert row_batch.trtllm_bench_batch(10_000) == 4096
    assert row_batch.trtllm_bench_batch(40) == 64
    chosen = _settings(row_batch, "max batch size chosen by trtllm-bench (not stated)")
    assert chosen.max_sequences >= 1024  # an 8B copy on one 80 GB H100 holds thousands
    assert chosen.max_tokens_per_pass == 8192  # TensorRT-LLM's default, the profile's


def test_the_closed_form_predicts_a_row_under_its_stated_batch_limit() -> None:
    """trtllm-bench's Llama 70B TP8 rows ran up to 2,048 requests at once: the closed form's
    copy holds more than the lmi-trtllm profile's 256."""
    fitting = benchmark_module("profile_fitting")
    rows, _ = fitting.load_rows()
    row = next(r for r in rows if r.source == "trtllm-0.16-llama70b-tp8-sweep-2025-07")
    profile = engine_profile(row.profile)
    model = fitting.CopyModel(
        row.spec,
        row.instance_type,
        row.tensor_parallel_degree,
        row.precision,
        row.workload,
        fitting.efficiency_of(profile),
        profile.kernel(row.precision),
    )
    assert row.batch.max_sequences == 2048
    limits, _ = fitting.profile_limits(model, profile, batch=row.batch)
    assert limits.capacity > profile.batching.max_batch_size


def test_trtllm_serve_at_its_defaults_runs_2048_requests_and_8192_tokens_per_pass(
    row_batch: ModuleType,
) -> None:
    """``trtllm-serve`` defaults its batch limits to TensorRT-LLM's ``BuildConfig`` (2,048
    requests, 8,192 tokens per pass), not the LMI container's 256 that the profile carries."""
    notes = "to 'trtllm-serve Qwen/Qwen3-14B' (batch limits not stated, trtllm-serve's defaults)"
    served = _settings(row_batch, notes)
    assert (served.max_sequences, served.max_tokens_per_pass) == (2048, 8192)
    stated = _settings(row_batch, f"{notes}; --max_batch_size 512")
    assert (stated.max_sequences, stated.max_tokens_per_pass) == (512, 8192)
