"""Command-line flags and tables a new user met: errors name the flag, tables flag what they cannot price."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.catalog.prices import PriceList
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.performance import Workload
from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import Pricing, SearchSpace

PREDICT_8B_G5 = [
    "predict", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge",
    "--input-tokens", "512", "--output-tokens", "256", "--concurrency", "1,4",
]  # fmt: skip


def test_predict_tensor_parallel_degree_beyond_the_gpus_names_the_flag_and_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Was: "copies_per_instance: 1 ... use at most 0 copies per instance".
    assert main([*PREDICT_8B_G5, "--tensor-parallel-degree", "2"]) == 2
    err = capsys.readouterr().err
    assert "--tensor-parallel-degree" in err and "2" in err
    assert "ml.g5.2xlarge has 1 GPUs" in err
    assert "pass a degree of 1, or an instance type with at least 2 GPUs" in err
    assert "at most 0 copies" not in err
    # size says the same.
    size = ["size", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge"]
    assert main([*size, "--tensor-parallel-degree", "2"]) == 2
    assert "--tensor-parallel-degree" in capsys.readouterr().err


def test_size_latency_and_verdict_agree(capsys: pytest.CaptureFixture[str]) -> None:
    # Was: a 36 ms/token single-request latency beside "no layout meets 100 ms/token" (the
    # real limit: 2048 output tokens at that speed take longer than the 60 s timeout).
    argv = [
        "size", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge",
        "--max-total-tokens", "8192", "--format", "json",
    ]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    single = data["single_request_ms_per_token"]
    reasons = " / ".join(data["reasoning"])
    assert data["max_tokens_per_s_within_100_ms_per_token"] is None
    assert "no layout meets 100 ms/token" not in reasons
    # The limit that binds is named with its figures, and the single-request figure is the
    # one the limit measures (end-to-end / output tokens), so the two cannot disagree.
    assert "60 s invocation timeout" in reasons
    assert f"({single:.1f} ms/token)" in reasons
    assert single < 100


def test_recommend_ranks_price_unknown_options_last_and_flags_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    prices = PriceList(
        as_of="2025-01-01",
        source="test",
        region="us-east-1",
        prices={"ml.g5.2xlarge": 1.5},
    )
    result = recommend(
        ModelSpec.LLAMA_3_8B,
        Workload(512, 256),
        Slo(max_ms_per_token=300),
        Traffic(concurrency=4),
        search=SearchSpace(instance_types=[InstanceType.G6E_XLARGE, InstanceType.G5_2XLARGE]),
        pricing=Pricing(prices=prices),
    )
    assert result.options[0].layout.instance_type.name == "ml.g5.2xlarge"
    assert result.options[-1].price_per_hour is None
    # The catalog has no price for ml.p6e-gb200.36xlarge: far faster, yet listed after g5.
    argv = [
        "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens",
        "256", "--max-ms-per-token", "300", "--concurrency", "4", "--instance-types",
        "ml.p6e-gb200.36xlarge,ml.g5.2xlarge",
    ]  # fmt: skip
    assert main(argv) == 0
    table = capsys.readouterr().out.split("<details>")[0]
    assert table.index("| 1 | 1 x ml.g5.2xlarge") < table.index("ml.p6e-gb200.36xlarge")
    assert "| price unknown | price unknown |" in table
    assert "**Price unknown** for ml.p6e-gb200.36xlarge" in table
    assert "ranked after every priced option" in table


def test_recommend_markdown_flags_an_unpriced_option(capsys: pytest.CaptureFixture[str]) -> None:
    from cdk_sagemaker_llm.commands.recommend import render_markdown

    result = recommend(
        ModelSpec.LLAMA_3_8B,
        Workload(512, 256),
        Slo(max_ms_per_token=300),
        Traffic(concurrency=4),
        search=SearchSpace(instance_types=[InstanceType.G5_2XLARGE]),
        pricing=Pricing(
            prices=PriceList(as_of="2025-01-01", source="test", region="us-east-1", prices={})
        ),
    )
    out = render_markdown("llama-3-8b", result)
    assert "price unknown" in out
    assert "ranked after every priced option" in out


def test_a_ttft_only_slo(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens",
        "256", "--concurrency", "4", "--instance-types", "ml.g5.2xlarge", "--format", "json",
    ]  # fmt: skip
    assert main([*argv, "--max-ttft-ms", "2000"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["options"]
    assert all(option["predicted"]["ttft_ms"] <= 2000 for option in data["options"])
    assert any("SLO TTFT <= 2000 ms" in line for line in data["assumptions"])
    # Neither bound: a clear error naming both flags.
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "error: --max-ms-per-token / --max-ttft-ms='no per-token limit, no TTFT limit': "
        "an SLO needs at least one bound."
    )
    assert "None" not in err
    # The planning type: at least one bound.
    assert Slo(max_ttft_ms=500).describe() == "TTFT <= 500 ms"
    with pytest.raises(ValidationError) as raised:
        Slo()
    assert str(raised.value) == (
        "max_ms_per_token / max_ttft_ms='no per-token limit, no TTFT limit': an SLO needs at "
        "least one bound. Fix: pass Slo(max_ms_per_token=100), Slo(max_ttft_ms=2000) or both"
    )
    assert not Slo(max_ttft_ms=500).limits_ms_per_token
    with pytest.raises(ValidationError, match="max_ms_per_token"):
        Slo(max_ms_per_token=0)
    with pytest.raises(ValidationError, match="max_ms_per_token"):
        Slo(max_ms_per_token=float("nan"))


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["size", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge"], 1),
        ([*PREDICT_8B_G5], 1),
        (["--help"], 0),  # argparse itself ignores a closed stdout
    ],
    ids=["size", "predict", "help"],
)
def test_a_reader_that_stops_early_gets_no_traceback(argv: list[str], code: int) -> None:
    """``... | head -1``: the reader is gone before the command writes (deterministic: the
    pipe's read end is closed before the command starts)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "cdk_sagemaker_llm.cli", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in result.stderr
    assert "BrokenPipeError" not in result.stderr
    assert result.returncode == code


PREDICT_8B_G6 = [
    "predict", "--model", "llama-3-8b", "--instance-type", "ml.g6.xlarge",
    "--input-tokens", "4000", "--output-tokens", "200", "--concurrency", "1,16", "--format", "json",
]  # fmt: skip
"""One L4 with 4,000-token prompts: the KV cache sets the most in flight."""


def test_predict_states_an_fp8_kv_cache_and_sizes_twice_the_sequences(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--kv-cache-precision fp8`` halves the KV bytes per token: the sequences the memory
    holds double (within one of rounding), the assumptions say so, and the scheduler simulation
    reads the same KV cache."""
    assert main(PREDICT_8B_G6) == 0
    auto = json.loads(capsys.readouterr().out)
    assert main([*PREDICT_8B_G6, "--kv-cache-precision", "fp8"]) == 0
    fp8 = json.loads(capsys.readouterr().out)
    assert abs(fp8["max_concurrency"] - 2 * auto["max_concurrency"]) <= 2
    assert any("FP8 KV cache" in line for line in fp8["assumptions"])
    assert not any("FP8 KV cache" in line for line in auto["assumptions"])
    simulated = [*PREDICT_8B_G6, "--engine", "lmi-vllm-v1", "--simulate-scheduler"]
    assert main(simulated) == 0
    simulated_auto = json.loads(capsys.readouterr().out)
    assert main([*simulated, "--kv-cache-precision", "fp8"]) == 0
    simulated_fp8 = json.loads(capsys.readouterr().out)
    assert simulated_fp8["knee"]["concurrency"] >= simulated_auto["knee"]["concurrency"]
    busiest = [levels["levels"][-1]["tokens_per_s"] for levels in (simulated_auto, simulated_fp8)]
    assert busiest[1] > busiest[0]


def test_predict_refuses_an_fp8_kv_cache_where_the_accelerator_has_no_fp8(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*PREDICT_8B_G5, "--kv-cache-precision", "fp8"]) == 2
    err = capsys.readouterr().err
    assert "--kv-cache-precision" in err and "A10G has no FP8" in err
    assert main([*PREDICT_8B_G5, "--kv-cache-precision", "int4"]) == 2
    assert "use auto (the activation precision: fp16/bf16) or fp8" in capsys.readouterr().err


RECOMMEND_8B_KV_BOUND = [
    "recommend", "--model", "llama-3-8b", "--input-tokens", "4000", "--output-tokens", "500",
    "--max-ms-per-token", "100", "--concurrency", "64", "--format", "json",
    "--instance-types", "ml.g5.2xlarge,ml.g6.xlarge",
]  # fmt: skip
"""A KV-bound workload on an A10G (no FP8) and an L4 (FP8)."""


def test_recommend_sizes_with_an_fp8_kv_cache_and_says_so_in_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``recommend --kv-cache-precision fp8``: every option is sized with the FP8 KV cache
    (fewer L4s than with the fp16 cache) and says so, the A10G is rejected with the typed kind,
    and the decision records it; an unknown precision names the flag."""
    assert main(RECOMMEND_8B_KV_BOUND) in (0, 1)
    auto = json.loads(capsys.readouterr().out)
    assert main([*RECOMMEND_8B_KV_BOUND, "--kv-cache-precision", "fp8"]) == 0
    fp8 = json.loads(capsys.readouterr().out)
    assert {o["kv_cache_precision"] for o in fp8["options"]} == {"fp8"}
    assert {o["kv_cache_precision"] for o in auto["options"]} == {"auto"}
    l4 = [
        next(o for o in d["options"] if o["instance_type"] == "ml.g6.xlarge") for d in (auto, fp8)
    ]
    assert l4[1]["instance_count"] < l4[0]["instance_count"]
    assert [r["kind"] for r in fp8["rejected"]] == ["kv cache precision"]
    assert fp8["decision"]["kv_cache_precision"] == "fp8"
    assert "kv_cache_precision" not in auto["decision"]
    assert main([*RECOMMEND_8B_KV_BOUND, "--kv-cache-precision", "fp4"]) == 2
    assert "--kv-cache-precision='fp4'" in capsys.readouterr().err
