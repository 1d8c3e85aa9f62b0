"""Sizing formulas, model specs and prices (no CDK synthesis: fast)."""

from __future__ import annotations

import pytest

from cdk_sagemaker_llm.catalog.instance_types import (
    A10G,
    A100_40GB,
    CATALOG,
    Accelerator,
    InstanceType,
)
from cdk_sagemaker_llm.catalog.model_specs import PRESETS, ModelSpec, Precision
from cdk_sagemaker_llm.catalog.prices import DEFAULT_PRICE_LIST, PriceList
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.performance import Layout, Workload, predict
from cdk_sagemaker_llm.planning.sizing import (
    GB,
    blended_price_per_million_tokens,
    copies_per_instance,
    cost_per_hour,
    cost_per_million_tokens,
    critical_batch_size,
    fits,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    max_concurrent_sequences,
    recommended_tensor_parallel_degree,
    serving_facts,
    size,
    throughput_tokens_per_second,
    usable_memory_bytes,
    weights_bytes,
    weights_memory_bytes,
)


def test_published_example_llama_2_7b_fp16_on_one_a10g_holds_a_batch_of_about_4() -> None:
    """domain.md: ~14 GB weights, ~10 GB left; at seq 4096, 32 layers, 32 KV heads,
    d_head 128 -> a batch of about 4."""
    spec, a10g = ModelSpec.LLAMA_2_7B, InstanceType.G5_XLARGE
    weights = weights_bytes(spec, Precision.FP16)
    assert weights / GB == pytest.approx(14, abs=0.6)
    usable = usable_memory_bytes(a10g)
    assert usable / GB == pytest.approx(24, abs=0.1)  # 22,888 MiB usable = 24.0 GB
    assert (usable - weights) / GB == pytest.approx(10, abs=0.6)
    per_sequence = kv_cache_bytes(spec, Precision.FP16, seq_len=4096)
    assert per_sequence == 2 * 4096 * 32 * 32 * 128 * 2
    # The published arithmetic (no separate overhead): 10.5 GB / 2.15 GB -> 4.
    published = max_concurrent_sequences(spec, a10g, max_total_tokens=4096, overhead_bytes=0)
    assert published == 4
    # With the ~2 GB framework overhead subtracted too: 3.97 -> 3 whole sequences.
    free = usable - weights_memory_bytes(spec, Precision.FP16)
    assert free / per_sequence == pytest.approx(4, abs=0.05)
    assert max_concurrent_sequences(spec, a10g, max_total_tokens=4096) == 3
    report = size(spec, a10g, max_total_tokens=4096)
    assert report.fits and report.max_concurrent_sequences == 3
    assert report.kv_cache_bytes_per_token == 524_288
    assert round(report.weights_gib, 1) == 12.6


def test_kv_cache_per_token_uses_kv_heads_grouped_query_attention_shrinks_it() -> None:
    mha = ModelSpec.custom(
        "mha-70b", parameters=69e9, layers=80, attention_heads=64, head_dim=128, max_context=4096
    )
    gqa = ModelSpec.LLAMA_2_70B
    assert kv_cache_bytes_per_token(mha) / kv_cache_bytes_per_token(gqa) == 8
    assert gqa.grouped_query_factor == 8
    assert kv_cache_bytes_per_token(ModelSpec.FALCON_7B) == 2 * 32 * 1 * 64 * 2  # multi-query
    assert kv_cache_bytes_per_token(ModelSpec.LLAMA_3_8B, Precision.FP32) == 2 * 32 * 8 * 128 * 4
    # Weight-only quantization keeps the KV cache in fp16.
    assert kv_cache_bytes_per_token(ModelSpec.LLAMA_3_8B, Precision.INT4_AWQ) == 131_072


@pytest.mark.parametrize(
    ("precision", "bytes_per_parameter"),
    [
        (Precision.FP32, 4),
        (Precision.FP16, 2),
        (Precision.BF16, 2),
        (Precision.FP8, 1),
        (Precision.INT8, 1),
        (Precision.INT4_AWQ, 0.5),
    ],
)
def test_weights_bytes_per_precision(precision: Precision, bytes_per_parameter: float) -> None:
    assert weights_bytes(ModelSpec.LLAMA_3_70B, precision) == 70.6e9 * bytes_per_parameter


def test_fit_and_recommended_degree() -> None:
    g5_12 = InstanceType.G5_12XLARGE
    assert not fits(ModelSpec.LLAMA_2_13B, InstanceType.G5_XLARGE)
    assert fits(ModelSpec.LLAMA_2_13B, g5_12, tensor_parallel_degree=2)
    # Short sequences: with the generic profile (64 requests per copy) one copy per A10G serves
    # most (each holds 44 sequences of 1,024 tokens). With the default (predict's) lmi-vllm-v1
    # profile, fitted within the A10G/L4 bandwidth ceiling with its engine core's host cost
    # per sequence, TP2 x 2 (208 sequences per copy) and TP1 x 4 serve within 2% of each other
    # (about 1,850 against 1,830 tokens/s within 100 ms/token): TP2's larger batches just make
    # up for half the copies.
    assert (
        recommended_tensor_parallel_degree(
            ModelSpec.LLAMA_3_8B, g5_12, max_total_tokens=1024, engine="generic"
        )
        == 1
    )
    assert (
        recommended_tensor_parallel_degree(ModelSpec.LLAMA_3_8B, g5_12, max_total_tokens=1024) == 2
    )
    # 4,096-token sequences: TP1 leaves 6 GB of KV cache per copy (11 sequences); TP4 frees the
    # memory three replicas of the weights would take and serves more (generic profile: 64
    # requests per copy); the fitted lmi-vllm-v1 default's larger batches make TP2 x 2 serve most.
    assert recommended_tensor_parallel_degree(ModelSpec.LLAMA_3_8B, g5_12, engine="generic") == 4
    assert recommended_tensor_parallel_degree(ModelSpec.LLAMA_3_8B, g5_12) == 2
    assert copies_per_instance(g5_12, 1) == 4
    # 70B fp16 (138 GB) fits on 4 of p4d's 40 GB A100s with KV room for 19 sequences per copy;
    # TP8 holds 141 and serves more. AWQ int4 fits on 2 A10Gs, but there a 3,072-token prompt
    # takes ~5 s to prefill: one request per copy stays within 100 ms/token, TP4 serves more.
    assert fits(ModelSpec.LLAMA_2_70B, InstanceType.P4D_24XLARGE, tensor_parallel_degree=4)
    assert recommended_tensor_parallel_degree(ModelSpec.LLAMA_2_70B, InstanceType.P4D_24XLARGE) == 8
    assert fits(
        ModelSpec.LLAMA_3_70B, g5_12, tensor_parallel_degree=2, precision=Precision.INT4_AWQ
    )
    assert (
        recommended_tensor_parallel_degree(
            ModelSpec.LLAMA_3_70B, g5_12, precision=Precision.INT4_AWQ
        )
        == 4
    )
    assert recommended_tensor_parallel_degree(ModelSpec.FALCON_180B, g5_12) is None


def test_degrees_must_divide_the_attention_heads() -> None:
    # Falcon 7B's 71 heads only shard over 1 device; report it when asked for 4.
    report = size(ModelSpec.FALCON_7B, InstanceType.G5_12XLARGE, tensor_parallel_degree=4)
    assert report.recommended_tensor_parallel_degree == 1
    assert any("71 attention heads do not divide" in line for line in report.reasoning)


def test_size_report_for_a_model_that_does_not_fit_names_the_fixes() -> None:
    report = size(ModelSpec.FALCON_180B, InstanceType.G5_48XLARGE)
    assert not report.fits
    assert report.recommended_tensor_parallel_degree is None
    assert report.tensor_parallel_degree == 8
    assert report.max_concurrent_sequences == 0
    assert "quantization" in report.reasoning[-2]
    assert report.to_dict()["fits"] is False


def test_size_rejects_unknown_hardware_and_bad_degrees() -> None:
    with pytest.raises(ValidationError, match="sizing cannot check it"):
        size(ModelSpec.LLAMA_3_8B, InstanceType.of("ml.c7i.4xlarge"))
    cpu_only = InstanceType.of("ml.c7i.4xlarge", accelerator_count=0)
    with pytest.raises(ValidationError, match="accelerated instance type"):
        size(ModelSpec.LLAMA_3_8B, cpu_only)
    with pytest.raises(ValidationError, match="has 1 accelerators"):
        size(ModelSpec.LLAMA_3_8B, InstanceType.G5_XLARGE, tensor_parallel_degree=2)
    with pytest.raises(ValidationError):
        copies_per_instance(InstanceType.G5_XLARGE, 0)


def test_stated_accelerators_make_an_unknown_type_sizable() -> None:
    """A type the catalog does not know sizes once its accelerators are stated."""
    stated = InstanceType.of("ml.p3.16xlarge", accelerator=A100_40GB, accelerator_count=8)
    report = size(ModelSpec.LLAMA_3_8B, stated)
    assert report.fits and report.usable_memory_bytes == 40_960 * 2**20  # degree 1
    assert report.copies_per_instance == 8
    assert stated.with_accelerators(A10G, 4).accelerator_memory_mib == 4 * A10G.memory_mib


def test_critical_batch_size_is_flops_over_bandwidth() -> None:
    assert critical_batch_size(A10G) == pytest.approx(116.7, abs=0.1)
    assert critical_batch_size(A100_40GB) == pytest.approx(200.6, abs=0.1)


def test_cost_formulas() -> None:
    tokens_per_second = throughput_tokens_per_second(32, 0.04)
    assert tokens_per_second == 800
    assert cost_per_hour(InstanceType.G5_12XLARGE, 2) == pytest.approx(14.18)
    assert cost_per_hour("ml.unknown.xlarge") is None
    per_million = cost_per_million_tokens(7.09, tokens_per_second)
    assert per_million == pytest.approx(7.09 / (800 * 3600 / 1e6))
    blended = blended_price_per_million_tokens(7.09, tokens_per_second, discount=0.2)
    assert blended == pytest.approx(0.8 * 7.09 / (800 * 3600 / 1e6) / 4)
    assert blended_price_per_million_tokens(7.09, 800) == pytest.approx(per_million / 4)
    with pytest.raises(ValidationError):
        cost_per_million_tokens(7.09, 0)
    with pytest.raises(ValidationError):
        blended_price_per_million_tokens(7.09, 800, discount=1.5)
    with pytest.raises(ValidationError):
        throughput_tokens_per_second(8, 0)


def test_price_list_is_dated_sourced_complete_and_overridable() -> None:
    assert DEFAULT_PRICE_LIST.as_of and DEFAULT_PRICE_LIST.source and DEFAULT_PRICE_LIST.region
    assert set(DEFAULT_PRICE_LIST.prices) <= set(CATALOG)
    # Types added without a price read from the pricing page report none (not a guess).
    assert DEFAULT_PRICE_LIST.price_per_hour(InstanceType.P5E_48XLARGE) is None
    custom = DEFAULT_PRICE_LIST.with_prices({"ml.g5.xlarge": 1.0}, region="eu-west-1")
    assert custom.price_per_hour(InstanceType.G5_XLARGE) == 1.0
    assert custom.region == "eu-west-1"
    assert DEFAULT_PRICE_LIST.price_per_hour("ml.g5.xlarge") == 1.408
    mine = PriceList(as_of="2026-01-01", source="our contract", region="us-west-2", prices={})
    assert cost_per_hour(InstanceType.G5_XLARGE, prices=mine) is None
    with pytest.raises(ValidationError):
        PriceList(as_of="x", source="y", region="z", prices={"ml.g5.xlarge": -1})


def test_presets_and_hugging_face_ids() -> None:
    assert {
        "llama-2-7b",
        "llama-2-13b",
        "llama-2-70b",
        "llama-3-8b",
        "llama-3-70b",
        "llama-3.1-8b",
        "llama-3.1-70b",
        "mistral-7b",
        "mixtral-8x7b",
        "falcon-7b",
        "falcon-40b",
        "falcon-180b",
    } <= set(PRESETS)
    assert ModelSpec.preset("Llama-3.1-70B") is ModelSpec.LLAMA_3_1_70B
    assert ModelSpec.LLAMA_3_1_8B.max_context == 131_072
    assert ModelSpec.FALCON_40B.kv_heads == 8 and ModelSpec.FALCON_180B.attention_heads == 232
    lookups = {
        "meta-llama/Meta-Llama-3-8B-Instruct": ModelSpec.LLAMA_3_8B,
        "meta-llama/Llama-2-7b-chat-hf": ModelSpec.LLAMA_2_7B,
        "meta-llama/Llama-2-70b-hf": ModelSpec.LLAMA_2_70B,
        "meta-llama/Meta-Llama-3.1-70B-Instruct": ModelSpec.LLAMA_3_1_70B,
        "mistralai/Mistral-7B-Instruct-v0.2": ModelSpec.MISTRAL_7B,
        "mistralai/Mixtral-8x7B-Instruct-v0.1": ModelSpec.MIXTRAL_8X7B,
        "tiiuae/falcon-180B-chat": ModelSpec.FALCON_180B,
    }
    for model_id, spec in lookups.items():
        assert ModelSpec.from_hugging_face_id(model_id) is spec, model_id
    assert ModelSpec.from_hugging_face_id("my-org/my-model") is None
    with pytest.raises(ValidationError, match="no preset"):
        ModelSpec.preset("gpt-5")


def test_custom_specs_are_validated_and_round_trip_through_metadata() -> None:
    spec = ModelSpec.custom(
        "mine",
        parameters=3e9,
        layers=28,
        attention_heads=24,
        kv_heads=8,
        hidden_size=3072,
        max_context=8192,
    )
    assert spec.head_dim == 128
    assert ModelSpec.from_metadata(spec.to_metadata()) == spec
    with pytest.raises(ValidationError, match="must divide"):
        ModelSpec.custom(
            "bad",
            parameters=1e9,
            layers=2,
            attention_heads=10,
            kv_heads=3,
            head_dim=64,
            max_context=1024,
        )
    with pytest.raises(ValidationError, match="head dimension"):
        ModelSpec.custom("bad", parameters=1e9, layers=2, attention_heads=8, max_context=1024)
    with pytest.raises(ValidationError):
        ModelSpec.custom(
            "bad", parameters=0, layers=2, attention_heads=8, head_dim=64, max_context=1024
        )


def test_precision_names_and_serving_environment() -> None:
    assert Precision.of("bfloat16") is Precision.BF16
    assert Precision.of("AWQ") is Precision.INT4_AWQ
    with pytest.raises(ValidationError):
        Precision.of("int3")
    lmi = serving_facts(
        {
            "OPTION_TENSOR_PARALLEL_DEGREE": "2",
            "OPTION_MAX_MODEL_LEN": "8192",
            "OPTION_MAX_ROLLING_BATCH_SIZE": "32",
            "OPTION_QUANTIZE": "awq",
            "HF_MODEL_ID": "meta-llama/Meta-Llama-3-8B",
        }
    )
    assert (lmi.tensor_parallel_degree, lmi.max_total_tokens, lmi.max_concurrency) == (2, 8192, 32)
    assert lmi.precision is Precision.INT4_AWQ
    tgi = serving_facts({"SM_NUM_GPUS": "4", "MAX_TOTAL_TOKENS": "4096", "DTYPE": "bfloat16"})
    assert (tgi.tensor_parallel_degree, tgi.max_total_tokens, tgi.precision) == (
        4,
        4096,
        Precision.BF16,
    )
    assert serving_facts({"OPTION_TENSOR_PARALLEL_DEGREE": "max"}).tensor_parallel_degree is None


def test_fit_and_layout_errors_of_the_memory_only_model_stay_fixed() -> None:
    """Each of these was wrong before the performance model."""
    p4d, g5_12 = InstanceType.P4D_24XLARGE, InstanceType.G5_12XLARGE
    # < 1 GB left for the KV cache is no fit (before: accepted, 0.3 GB and 0.6 GB).
    assert not fits(ModelSpec.FALCON_40B, p4d, tensor_parallel_degree=2)
    assert not fits(ModelSpec.MIXTRAL_8X7B, g5_12, tensor_parallel_degree=4)
    # Ranked by what a layout serves, not the smallest degree that fits (before: TP1).
    assert recommended_tensor_parallel_degree(ModelSpec.LLAMA_2_13B, p4d) != 1
    # Head divisibility is part of the verdict (before: a warning beside fits=True).
    falcon = size(ModelSpec.FALCON_7B, g5_12, tensor_parallel_degree=2)
    assert falcon.fits and not falcon.serves and falcon.copies_per_instance == 0
    # A model that does not fit puts no copy on an instance (before: 1).
    assert size(ModelSpec.FALCON_180B, InstanceType.G5_48XLARGE).copies_per_instance == 0


def test_sizing_on_an_accelerator_without_published_flops_checks_memory_only() -> None:
    """g7e's GPU has published memory (EC2: 98,304 MiB) but no dense FP16 TFLOPS: the fit is
    checked, latency is not predicted, and the report says why."""
    report = size(ModelSpec.LLAMA_2_13B, InstanceType.G7E_2XLARGE)
    assert report.fits and report.tensor_parallel_degree == 1
    assert report.critical_batch_size is None and report.single_request_ms_per_token is None
    assert "latency cannot be ranked" in report.reasoning[-2]
    assert report.reasoning[-1].startswith(
        "latency not predicted on NVIDIA RTX PRO 6000 Blackwell Server Edition"
    )
    assert critical_batch_size(Accelerator.RTX_PRO_6000_SERVER) is None
    with pytest.raises(ValidationError, match="cannot be predicted on NVIDIA RTX PRO 6000"):
        predict(
            ModelSpec.LLAMA_2_13B,
            Layout(InstanceType.G7E_2XLARGE, 1, 1),
            Workload(256, 128),
            [1],
        )


def test_a_copy_beyond_the_engines_share_fits_but_does_not_serve() -> None:
    """Falcon 40B fp16 over four A10Gs at 2,048 tokens fits in the whole memory (TGI's share),
    not in the 90% vLLM takes: vLLM refuses to start, and ``size`` said it serves."""
    falcon = ModelSpec.preset("falcon-40b")
    vllm = size(falcon, InstanceType.G5_12XLARGE, tensor_parallel_degree=4, max_total_tokens=2048)
    assert vllm.fits and not vllm.engine_fits and not vllm.serves
    assert vllm.copies_per_instance == 0
    assert any(
        line.startswith("does not start:") and "at least 97%" in line for line in vllm.reasoning
    ), vllm.reasoning
    tgi = size(
        falcon,
        InstanceType.G5_12XLARGE,
        tensor_parallel_degree=4,
        max_total_tokens=2048,
        engine="tgi-2-3",
    )
    assert tgi.serves and tgi.copies_per_instance == 1
