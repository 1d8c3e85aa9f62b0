"""``cdk-sagemaker-llm predict`` and ``recommend``: flags, JSON documents, Markdown, exit codes."""

from __future__ import annotations

import json

import pytest

from cdk_sagemaker_llm.cli import main

PREDICT = [
    "predict", "--model", "llama-2-7b", "--instance-type", "ml.p4d.24xlarge",
    "--input-tokens", "256", "--output-tokens", "128",
]  # fmt: skip
RECOMMEND = [
    "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "256",
    "--max-ms-per-token", "60", "--risk", "median",
]  # fmt: skip
# (These tests exercise the command's mechanics at the median; the pessimistic default is
# tested in test_recommend_sizes_pessimistically_by_default.)


def test_predict_json_has_exactly_the_documented_fields(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*PREDICT, "--tensor-parallel-degree", "2", "--copies", "4", "--instance-count", "2"]
    argv += ["--engine", "generic"]  # its batch limit of 64 per copy
    assert main([*argv, "--concurrency", "1,2,4,8,1024", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {
        "levels",
        "knee",
        "max_concurrency",
        "assumptions",
        "engine",
        "sizing_factors",
        "conformal_band",
    }
    assert set(data["conformal_band"]) == {"extrapolation", "table"}
    assert data["engine"] == "generic"
    assert set(data["sizing_factors"]) == {"median", "worst_case", "rows"}
    assert [level["concurrency"] for level in data["levels"]] == [1, 2, 4, 8, 1024]
    for level in data["levels"]:
        assert set(level) == {
            "concurrency",
            "ms_per_token",
            "ttft_ms",
            "e2e_ms",
            "tokens_per_s",
            "requests_per_s",
            "times_out",
            "regime",
            "ms_per_token_p10_p90",
            "tokens_per_s_p10_p90",
        }
        low, high = level["ms_per_token_p10_p90"]
        assert low <= level["ms_per_token"] <= high
        assert level["times_out"] == (level["e2e_ms"] > 60_000)
    assert set(data["knee"]) == {"concurrency", "reason"}
    # Whole deployment: 2 instances x 4 copies x a batch limit of 64.
    assert data["max_concurrency"] == 512
    assert any(
        "2 x ml.p4d.24xlarge, TP2 x 4 copies each = 8 copies" in a for a in data["assumptions"]
    )
    assert any("extrapolated" in a for a in data["assumptions"])


def test_predict_defaults_to_the_recommended_layout_and_prints_markdown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*PREDICT, "--concurrency", "8,64"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### Predicted: llama-2-7b on 1 x ml.p4d.24xlarge, TP1 x 8 copies each")
    assert (
        "| concurrency | regime | ms/token | ms/token p10-p90 | TTFT ms | tokens/s "
        "| tokens/s p10-p90 | requests/s |" in out
    )
    assert "**Band (p10-p90):** conformal, by load regime and" in out
    assert "**Engine:** lmi-vllm-v1; **sizing factors:** the engine profile's residuals" in out
    assert "**Knee:**" in out and "**Max concurrency:**" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--concurrency", "1,x"], None),
        (["--concurrency", "1", "--tensor-parallel-degree", "3"], "attention heads"),
        (["--concurrency", "1", "--copies", "9"], "--copies=9"),
        (["--concurrency", "0"], None),
    ],
)
def test_predict_bad_input_exits_2(
    extra: list[str], message: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    if message is None:
        with pytest.raises(SystemExit) as exit_info:
            main([*PREDICT, *extra])
        assert exit_info.value.code == 2
    else:
        assert main([*PREDICT, *extra]) == 2
        assert message in capsys.readouterr().err


def test_recommend_json_is_cheapest_first_with_the_documented_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [*RECOMMEND, "--requests-per-second", "4", "--top", "3", "--format", "json"]
    assert (
        main(
            [*argv, "--instance-types", "ml.g5.xlarge,ml.g6e.xlarge,ml.p4d.24xlarge,ml.g5.12xlarge"]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert {"options", "rejected"} <= set(data)
    assert 1 <= len(data["options"]) <= 3
    prices = [option["price_per_hour"] for option in data["options"]]
    assert prices == sorted(prices)
    for option in data["options"]:
        assert {
            "instance_type", "tensor_parallel_degree", "copies_per_instance", "instance_count",
            "concurrency_per_copy", "predicted", "price_per_hour", "cost_per_million_tokens",
            "reasoning",
        } <= set(option)  # fmt: skip
        assert option["predicted"]["ms_per_token"] <= 60
        assert option["reasoning"]
    for rejection in data["rejected"]:
        assert {"instance_type", "reason"} <= set(rejection)


def test_recommend_markdown_for_a_pull_request_and_price_basis(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [*RECOMMEND, "--concurrency", "16", "--instance-types", "ml.g5.xlarge,ml.g5.12xlarge"]
    assert main([*argv, "--price-basis", "savings-plan-1y", "--region", "eu-west-1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### Recommended layouts for llama-3-8b")
    assert "| # | instances at peak | TP x copies |" in out
    assert "| ceiling (max instances) |" in out
    assert "<details><summary>Why the first option</summary>" in out
    assert "savings-plan-1y" in out and "no eu-west-1 prices" in out


def test_recommend_without_an_option_advises_by_the_rejections_kinds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Llama 3 70B in int4 on ml.g5.12xlarge: memory at TP1, int4 refused at TP2/TP4. The
    summary said "No layout meets the SLO"; it names the kinds and the fix, with no lower
    precision and no looser SLO."""
    argv = [
        "recommend", "--model", "llama-3-70b", "--dtype", "int4", "--input-tokens", "1024",
        "--output-tokens", "256", "--max-ms-per-token", "100", "--concurrency", "8",
        "--instance-types", "ml.g5.12xlarge",
    ]  # fmt: skip
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "**No layout serves this traffic** (rejected: memory, precision)." in out
    fix = next(line for line in out.splitlines() if line.startswith("Fix: "))
    assert "serve a precision the candidates offer" in fix and "more accelerator memory" in fix
    assert "lower the precision" not in fix and "relax the SLO" not in fix
    assert "No layout meets the SLO" not in out


def test_recommend_json_without_an_option_carries_the_markdowns_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "recommend", "--model", "llama-3-70b", "--dtype", "int4", "--input-tokens", "1024",
        "--output-tokens", "256", "--max-ms-per-token", "100", "--concurrency", "8",
        "--instance-types", "ml.g5.12xlarge",
    ]  # fmt: skip
    assert main(argv) == 1
    markdown_fix = next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith("Fix: ")
    )
    assert main([*argv, "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["options"] == []
    assert f"Fix: {data['no_option_fix']}." == markdown_fix
    # With an option there is nothing to fix: the field is null, not absent.
    assert main([*RECOMMEND, "--concurrency", "16", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["no_option_fix"] is None


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--instance-types", "ml.g5.2xlargee"],
            "error: --instance-types='ml.g5.2xlargee': not an instance type the catalog knows"
            ", so its accelerators and their performance are unknown and nothing on it can be "
            "predicted. Fix: did you mean ml.g5.2xlarge",
        ),
        (
            ["--region", "us-east-9"],
            "error: --region='us-east-9': not an AWS region the library knows",
        ),
    ],
)
def test_recommend_names_the_flag_the_value_and_the_fix(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in a candidate was rejected as unpredictable (exit 1, "No layout meets the
    SLO"); a bad region was blamed on "Pricing.region", a prop the command has no flag for."""
    assert main([*RECOMMEND, "--concurrency", "4", *argv]) == 2
    assert capsys.readouterr().err.startswith(expected)


def test_predict_on_a_mistyped_instance_type_names_the_closest_catalog_types(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``ml.g5.2xlargee`` was answered "llama-3-8b fits at no tensor-parallel degree there. Fix:
    use a larger instance type or quantization": the type was unknown, not too small."""
    argv = [
        "predict", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlargee",
        "--input-tokens", "512", "--output-tokens", "256", "--concurrency", "4",
    ]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --instance-type='ml.g5.2xlargee': not an instance type the")
    assert "Fix: did you mean ml.g5.2xlarge" in err and "larger instance type" not in err


@pytest.mark.parametrize(
    ("url", "fix"),
    [
        (
            "https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct",
            "Fix: pass the id the URL names: --model meta-llama/Meta-Llama-3-8B-Instruct",
        ),
        ("https://huggingface.co/Qwen/Qwen2-7B", "--model Qwen/Qwen2-7B, with --parameters"),
        ("https://huggingface.co/spaces/a/b", "(e.g. tiiuae/falcon-7b)"),
    ],
)
def test_a_pasted_hub_url_as_model_is_answered_with_the_id_it_names(
    url: str, fix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Hub page's URL was answered with JumpStart ids that merely resemble it."""
    assert main([*RECOMMEND, "--concurrency", "4", "--model", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --model='{url}': a URL, not a model id. ")
    assert fix in err and "JumpStart" not in err


def test_recommend_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    # No layout: 1, with the rejections listed.
    strict = [
        "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "256",
        "--max-ms-per-token", "5", "--concurrency", "4", "--instance-types", "ml.g5.xlarge",
    ]  # fmt: skip
    assert main(strict) == 1
    out = capsys.readouterr().out
    assert "**No layout serves this traffic** (rejected: slo)." in out
    assert "Fix: relax the SLO (--max-ms-per-token, --max-ttft-ms)" in out
    # Bad input: 2.
    assert main([*RECOMMEND, "--concurrency", "4", "--instance-types", "g5.xlarge"]) == 2
    with pytest.raises(SystemExit):
        main([*RECOMMEND])  # neither a rate nor a concurrency
    with pytest.raises(SystemExit):
        main([*RECOMMEND, "--concurrency", "4", "--requests-per-second", "2"])
    assert main([*RECOMMEND, "--concurrency", "4", "--instance-types", "ml.g5.xlarge"]) == 0


def test_predict_flags_the_levels_past_the_invocation_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A level whose requests outlive SageMaker's 60 s invocation timeout is flagged in the
    table, in a line under it and in JSON (``times_out``): it printed 1,139 tokens/s at a
    13-minute TTFT as if served."""
    argv = [
        "predict", "--model", "llama-3.1-70b", "--instance-type", "ml.p4d.24xlarge",
        "--input-tokens", "4096", "--output-tokens", "1024", "--concurrency", "1,256",
    ]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "| 256 | saturated, past the 60 s timeout |" in text
    assert "**Past the 60 s invocation timeout** at concurrency 256:" in text
    assert main([*argv, "--format", "json"]) == 0
    levels = json.loads(capsys.readouterr().out)["levels"]
    assert [level["times_out"] for level in levels] == [False, True]


def test_recommend_on_inferentia_names_the_neuron_cores_and_describes_no_llm_service(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The model counts Neuron chips; LMI NeuronX's degree counts NeuronCores, two per
    Inferentia2 chip. And LlmService serves NVIDIA GPUs only, so its section would describe a
    deployment LlmService refuses."""
    argv = ["recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens",
            "128", "--max-ms-per-token", "80", "--requests-per-second", "2", "--instance-types",
            "ml.inf2.8xlarge", "--engine", "lmi-neuronx"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| TP1 (2 NeuronCores) x 1 |" in out
    assert "As an LlmService" not in out
    assert "Not as an LlmService: LlmService serves NVIDIA GPU instances" in out
    assert "tensor-parallel degree 2 (the NeuronCores" in out
    assert main([*argv, "--format", "json"]) == 0
    assert "decision" not in json.loads(capsys.readouterr().out)


LLAMA_3_8B_ON_A10G = [
    "--model",
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "--input-tokens",
    "512",
    "--output-tokens",
    "256",
]


def test_recommend_and_predict_size_the_memory_share_the_container_will_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--engine-memory-share`` (as ``size`` and the synth-time check read it): at vLLM's
    0.5 Llama 3 8B leaves no KV cache on one A10G, so ``recommend`` rejects that layout naming
    the flag (it ranked it first: the share was always the profile's 0.9), and ``predict``
    counts the sequences the smaller share holds. The flag names a container's setting, so
    ``recommend`` (which searches GPUs and Inferentia alike) needs ``--engine`` with it."""
    argv = ["recommend", *LLAMA_3_8B_ON_A10G, "--max-ms-per-token", "50"]
    argv += ["--requests-per-second", "4", "--instance-types", "ml.g5.2xlarge,ml.g5.12xlarge"]
    argv += ["--engine", "lmi:0.33.0", "--format", "json"]
    assert main(argv) == 0
    default = json.loads(capsys.readouterr().out)
    assert default["options"][0]["instance_type"] == "ml.g5.2xlarge"
    assert main([*argv, "--engine-memory-share", "0.5"]) == 0
    halved = json.loads(capsys.readouterr().out)
    assert {o["instance_type"] for o in halved["options"]} == {"ml.g5.12xlarge"}
    (single,) = [r for r in halved["rejected"] if r["instance_type"] == "ml.g5.2xlarge"]
    assert single["kind"] == "memory"
    assert "unallocated as --engine-memory-share=0.5 sets" in single["reason"]
    single_a10g = [a if a != "ml.g5.2xlarge,ml.g5.12xlarge" else "ml.g5.2xlarge" for a in argv]
    assert main([*single_a10g, "--engine-memory-share", "0.5"]) == 1
    fix = json.loads(capsys.readouterr().out)["no_option_fix"]
    assert "a larger share of the memory than --engine-memory-share=0.5" in fix
    without_engine = [a for a in argv if a not in ("--engine", "lmi:0.33.0")]
    assert main([*without_engine, "--engine-memory-share", "0.5"]) == 2
    assert "pass --engine too" in capsys.readouterr().err

    argv = ["predict", *LLAMA_3_8B_ON_A10G, "--instance-type", "ml.g5.12xlarge"]
    argv += ["--tensor-parallel-degree", "2", "--concurrency", "1,256", "--format", "json"]
    assert main([*argv, "--engine-memory-share", "0.5"]) == 0
    memory = [
        line
        for line in json.loads(capsys.readouterr().out)["assumptions"]
        if line.startswith("memory per copy")
    ]
    assert (
        memory
        and "as --engine-memory-share=0.5 sets) = 3.9 GB KV cache = 39 sequences" in (memory[0])
    )
