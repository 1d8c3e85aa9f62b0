"""Decode attention on grouped-query models (``planning/decode_attention.py``): which kernel a
TensorRT-LLM release runs a model on, and what re-reading a KV head per query head costs a
decode step."""

from __future__ import annotations

import sys
from dataclasses import replace
from types import ModuleType

import pytest
from conftest import benchmark_module

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.decode_attention import DecodeAttention, trtllm_decode_attention
from cdk_sagemaker_llm.planning.efficiency import Efficiency, efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
from cdk_sagemaker_llm.planning.performance import CopyModel, Workload

MISTRAL = ModelSpec.MISTRAL_7B  # 32 query heads over 8 KV heads of 128: 4 per KV head
LLAMA_70B = ModelSpec.LLAMA_2_70B  # 64 over 8 of 128: XQA's precompiled group
FALCON_180B = ModelSpec.FALCON_180B  # 232 over 8 of 64: 29 per KV head
LLAMA_7B = ModelSpec.LLAMA_2_7B  # multi-head: one query head per KV head


def test_tensorrt_llm_before_xqa_reads_a_kv_head_once_per_query_head() -> None:
    assert not trtllm_decode_attention((0, 6), LLAMA_70B).shares_kv_head
    assert not trtllm_decode_attention((0, 7), MISTRAL).shares_kv_head


def test_xqas_precompiled_kernels_cover_eight_query_heads_per_kv_head_of_128_only() -> None:
    assert trtllm_decode_attention((0, 9), LLAMA_70B).shares_kv_head
    assert not trtllm_decode_attention((0, 9), MISTRAL).shares_kv_head
    falcon = trtllm_decode_attention((0, 9), FALCON_180B)
    assert not falcon.shares_kv_head
    assert "29 of 64" in falcon.reason
    assert not trtllm_decode_attention((0, 11), MISTRAL).shares_kv_head


def test_later_tensorrt_llm_releases_share_every_grouped_query_head() -> None:
    for spec in (MISTRAL, LLAMA_70B, FALCON_180B):
        assert trtllm_decode_attention((0, 16), spec).shares_kv_head
        assert trtllm_decode_attention((1, 0), spec).shares_kv_head


def test_a_multi_head_model_reads_its_kv_cache_once_on_any_kernel() -> None:
    assert trtllm_decode_attention((0, 6), LLAMA_7B).shares_kv_head
    per_head = DecodeAttention.per_query_head("masked multi-head attention")
    assert per_head.kv_read_factor(LLAMA_7B, 1.0) == 1.0


def test_re_reads_of_a_kv_head_scale_with_its_group_and_their_share_from_memory() -> None:
    per_head = DecodeAttention.per_query_head("masked multi-head attention")
    assert per_head.kv_read_factor(MISTRAL, 0.5) == pytest.approx(1 + 3 * 0.5)
    assert per_head.kv_read_factor(FALCON_180B, 0.5) == pytest.approx(1 + 28 * 0.5)
    assert per_head.kv_read_factor(MISTRAL, 0.0) == 1.0
    assert DecodeAttention.shared().kv_read_factor(FALCON_180B, 1.0) == 1.0


def test_a_grouped_query_decode_step_on_a_per_query_head_kernel_reads_more_kv_bytes() -> None:
    """Mistral 7B at 120 sequences of 2,048 output tokens on one H200 (TensorRT-LLM 0.9's static
    batch): re-reading each KV head for its 4 query heads makes the step's KV traffic
    1 + 3 x share times the shared kernel's, and only the KV part of the step grows."""
    efficiency = replace(efficiency_of(engine_profile("lmi-trtllm")), kv_reread_share=0.5)
    shared = CopyModel(
        MISTRAL, InstanceType.P5E_48XLARGE, 1, Precision.FP16, Workload(128, 2048), efficiency
    )
    per_head = replace(shared, decode_attention=trtllm_decode_attention((0, 9), MISTRAL))
    weights = shared.memory_time_s(1, context=0)
    assert per_head.memory_time_s(1, context=0) == pytest.approx(weights)
    kv_shared = shared.memory_time_s(120) - weights
    kv_per_head = per_head.memory_time_s(120) - weights
    assert kv_per_head == pytest.approx(2.5 * kv_shared)
    assert per_head.step_s(120) > shared.step_s(120)


def test_the_share_of_re_reads_from_memory_is_a_fraction() -> None:
    with pytest.raises(ValidationError, match="kv_reread_share"):
        Efficiency(kv_reread_share=1.5)


def test_the_tensorrt_llm_profile_fits_a_share_of_re_reads_from_memory() -> None:
    """Its rows of releases before XQA (NVIDIA's 0.5-0.6 overview, FMBench's 0.7.1) identify
    the share; it lies strictly between L2 serving every re-read and none."""
    profile = engine_profile("lmi-trtllm")
    assert 0 < profile.kv_reread_share < 1
    assert efficiency_of(profile).kv_reread_share == profile.kv_reread_share


@pytest.fixture(scope="module")
def fitting() -> ModuleType:
    return benchmark_module("profile_fitting")


def test_a_measured_rows_kernel_follows_its_tensorrt_llm_release(fitting: ModuleType) -> None:
    rows, _ = sys.modules["profile_fitting"].load_rows()
    kernel = {
        (row.source, row.spec.name): row.decode_attention.shares_kv_head
        for row in rows
        if row.profile == "lmi-trtllm"
    }
    assert kernel[("trtllm-perf-v0.9", "mistral-7b")] is False
    assert kernel[("trtllm-perf-v0.9", "llama-2-70b")] is True
    assert kernel[("trtllm-perf-v0.6", "llama-2-70b")] is False
    assert kernel[("fmbench-2024-01", "llama-2-70b")] is False  # TensorRT-LLM 0.7.1
    assert kernel[("trtllm-perf-overview-v1.0", "llama-3.1-8b")] is True
    assert kernel[("nim-benchmarking-perf", "llama-3.1-70b")] is True  # release not stated
