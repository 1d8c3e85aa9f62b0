"""``cdk-sagemaker-llm size``."""

from __future__ import annotations

import json

import pytest

from cdk_sagemaker_llm.cli import main


def test_size_json_reproduces_the_published_example(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "size",
            "--model",
            "llama-2-7b",
            "--instance-type",
            "ml.g5.xlarge",
            "--max-total-tokens",
            "4096",
            "--format",
            "json",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] is True
    assert data["weights_gb"] == pytest.approx(13.48, abs=0.01)  # one unit: decimal GB
    assert not any(key.endswith("_gib") for key in data)
    assert data["kv_cache_bytes_per_token"] == 524_288
    assert data["max_concurrent_sequences"] == 3  # 3.97 sequences once 2 GB overhead is taken
    assert data["recommended_tensor_parallel_degree"] == 1
    assert data["copies_per_instance"] == 1
    assert data["serves"] is True
    assert data["single_request_ms_per_token"] > 0
    assert data["reasoning"]
    assert not any("1 copies" in line for line in data["reasoning"])


def test_size_text_with_hugging_face_id_dtype_and_degree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "size",
            "--model",
            "meta-llama/Meta-Llama-3-70B-Instruct",
            "--instance-type",
            "ml.g5.12xlarge",
            "--dtype",
            "int4",
            "--tensor-parallel-degree",
            "4",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "tensor_parallel_degree                    4" in out
    assert "recommended_tensor_parallel_degree        4" in out
    assert "reasoning:" in out and "int4" in out


def test_size_exits_1_when_the_model_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["size", "--model", "falcon-180b", "--instance-type", "ml.g5.48xlarge"]) == 1
    out = capsys.readouterr().out
    assert "fits                                      False" in out
    # A model that does not fit puts no copy on an instance.
    assert "copies_per_instance                       0" in out


def test_size_exits_1_when_the_degree_does_not_shard_the_heads(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Falcon 7B's 71 attention heads shard over no degree above 1: a verdict, not a warning."""
    argv = ["size", "--model", "falcon-7b", "--instance-type", "ml.g5.12xlarge"]
    assert main([*argv, "--tensor-parallel-degree", "2", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] is True and data["serves"] is False
    assert data["head_problem"] == "71 attention heads do not divide over 2 accelerators"
    assert data["copies_per_instance"] == 0
    assert data["recommended_tensor_parallel_degree"] == 1
    assert main([*argv, "--format", "json"]) == 0


def test_size_takes_a_custom_model_spec_from_flags(capsys: pytest.CaptureFixture[str]) -> None:
    custom = [
        "--model", "my-7b", "--parameters", "7.24e9", "--layers", "32",
        "--attention-heads", "32", "--kv-heads", "8", "--head-dim", "128",
        "--max-context", "32768",
    ]  # fmt: skip
    code = main(["size", *custom, "--instance-type", "ml.g5.xlarge", "--format", "json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["model"] == "my-7b"
    assert data["kv_cache_bytes_per_token"] == 131_072  # same as the Mistral 7B preset


def test_size_counts_the_sequences_the_engines_share_of_the_memory_holds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """vLLM takes 0.9 of the GPU: Llama 3 8B on one A10G holds 11 sequences of 4,096 tokens in
    all the memory the weights leave and 6 in vLLM's share, the figure the recommended layout's
    ranking reads; TGI takes all of it and reports no second figure."""
    argv = ["size", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge"]
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["max_concurrent_sequences"] == 11
    assert data["engine_max_concurrent_sequences"] == 6
    assert any("allocates 90% of the accelerators' memory" in line for line in data["reasoning"])
    assert main([*argv, "--engine", "tgi-1", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine_max_concurrent_sequences"] is None


def test_size_reads_the_engine_memory_share_the_container_will_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Falcon 40B fp16 over four A10Gs at 2,048 tokens fits in the 96 GB but not in vLLM's
    default 90 %: ``size`` exits 1 saying so (it exited 0), recommends no degree, and with the
    share the container will be given (``--engine-memory-share``, as the synth-time check reads
    ``OPTION_GPU_MEMORY_UTILIZATION``) it serves; a share that is not a fraction exits 2."""
    base = ["size", "--model", "falcon-40b", "--instance-type", "ml.g5.12xlarge"]
    base += ["--tensor-parallel-degree", "4", "--max-total-tokens", "2048", "--format", "json"]
    assert main(base) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] is True and data["serves"] is False
    assert data["recommended_tensor_parallel_degree"] is None
    assert any(line.startswith("does not start:") for line in data["reasoning"])
    assert main([*base, "--engine-memory-share", "0.97"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["serves"] is True and data["engine_max_concurrent_sequences"] >= 1
    assert main([*base, "--engine-memory-share", "97"]) == 2
    assert "--engine-memory-share=97.0: the engine takes a fraction" in capsys.readouterr().err


def test_a_parameter_count_in_billions_is_refused_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--parameters 7.24`` (billions) was sized as a 7-parameter model with no weights: 0.0 GB
    of weights and a KV cache of the whole GPU. Fewer parameters than the stated attention's
    projections hold is refused, with the count the flag takes."""
    custom = [
        "--model", "my-7b", "--parameters", "7.24", "--layers", "32",
        "--attention-heads", "32", "--kv-heads", "8", "--head-dim", "128",
        "--max-context", "32768",
    ]  # fmt: skip
    assert main(["size", *custom, "--instance-type", "ml.g5.xlarge"]) == 2
    err = capsys.readouterr().err
    assert "--parameters=7.24" in err
    assert "attention projections" in err and "e.g. 7.24e9" in err


def test_unknown_model_names_the_cli_flags_not_python(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["size", "--model", "gpt-9", "--instance-type", "ml.g5.xlarge"]) == 2
    err = capsys.readouterr().err
    assert "--parameters" in err and "ModelSpec.custom" not in err
    assert main(["size", "--parameters", "7e9", "--instance-type", "ml.g5.xlarge"]) == 2
    assert "--layers, --attention-heads, --head-dim, --max-context" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["--model", "gpt-9", "--instance-type", "ml.g5.xlarge"],
        ["--model", "llama-3-8b", "--instance-type", "g5.xlarge"],
        ["--model", "llama-3-8b", "--instance-type", "ml.g5.xlarge", "--dtype", "int3"],
        ["--model", "llama-3-8b", "--instance-type", "ml.c7i.xlarge"],
    ],
)
def test_size_exits_2_on_bad_input(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["size", *argv]) == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "fix"),
    [
        ("ml.g5.2xlargee", "Fix: did you mean ml.g5.2xlarge"),
        ("ml.c7i.xlarge", "Fix: use an accelerated type the catalog knows"),
    ],
)
def test_size_on_a_type_the_catalog_does_not_know_names_the_closest_or_an_example(
    name: str, fix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo gets the catalog types it resembles; a CPU type, which resembles no catalog
    type closely, gets examples rather than look-alikes (ml.c7i.xlarge is not ml.g7.xlarge)."""
    assert main(["size", "--model", "llama-3-8b", "--instance-type", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --instance-type='{name}': not an instance type the catalog")
    assert fix in err
