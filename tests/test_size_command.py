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
    assert data["weights_gib"] == pytest.approx(12.55, abs=0.01)
    assert data["kv_cache_bytes_per_token"] == 524_288
    assert data["max_concurrent_sequences"] == 3  # 3.97 sequences once 2 GB overhead is taken
    assert data["recommended_tensor_parallel_degree"] == 1
    assert data["copies_per_instance"] == 1
    assert data["reasoning"]


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
    assert "tensor_parallel_degree              4" in out
    assert "recommended_tensor_parallel_degree  2" in out
    assert "reasoning:" in out and "int4" in out


def test_size_exits_1_when_the_model_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["size", "--model", "falcon-180b", "--instance-type", "ml.g5.48xlarge"]) == 1
    assert "fits                                False" in capsys.readouterr().out


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
