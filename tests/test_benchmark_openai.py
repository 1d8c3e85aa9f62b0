"""The OpenAI-compatible target: chat completions and completions, streamed or not, usage
when offered, against the loopback simulator's OpenAI routes, which serve the same simulated
engine as its SageMaker routes: both paths are measured against one truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdk_sagemaker_llm.benchmarking import percentile
from cdk_sagemaker_llm.benchmarking.openai_target import OpenAIInvoker
from cdk_sagemaker_llm.benchmarking.payload import PayloadSpec, StreamParser, parse_response
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig, TruthRecord
from cdk_sagemaker_llm.cli import main

CONFIG = SimulatorConfig(max_batch=8, step_base_s=0.01, step_per_sequence_s=0.0005)


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def run(out: Path, *flags: str) -> dict:  # type: ignore[type-arg]
    common = ["--concurrency", "8", "--input-tokens", "8", "--output-tokens", "12",
              "--requests-per-level", "32", "--out", str(out)]  # fmt: skip
    assert main(["benchmark", *flags, *common]) == 0
    return json.loads(out.read_text())


def truth_p50(truth: list[TruthRecord]) -> tuple[float, float]:
    ttfts = [r.ttft_s or 0.0 for r in truth]
    itls = [((r.end or 0.0) - (r.first_token or 0.0)) / (r.output_tokens - 1) for r in truth]
    return percentile(ttfts, 50) or 0.0, percentile(itls, 50) or 0.0


def test_both_targets_measure_the_same_engine_alike(tmp_path: Path) -> None:
    with Simulator(CONFIG) as sim:
        sagemaker = run(
            tmp_path / "sm.json", "--endpoint-name", "ep", "--region", "us-east-1",
            "--endpoint-url", sim.endpoint_url, "--format", "messages", "--stream",
            "--keep-samples",
        )  # fmt: skip
        sm_truth = [r for r in sim.truth()[1:] if r.route == "sagemaker"]
        sim.reset()
        openai = run(
            tmp_path / "oa.json", "--target", "openai", "--base-url", f"{sim.endpoint_url}/v1",
            "--model", "simulated", "--stream", "--keep-samples",
        )  # fmt: skip
        oa_truth = sim.truth()[1:]
    assert {r.route for r in oa_truth} == {"openai"} and {r.api for r in oa_truth} == {"messages"}
    assert openai["target"]["kind"] == "openai" and openai["target"]["route"] == "/chat/completions"
    assert set(openai) >= set(sagemaker) - {"cost"}  # one results.json schema
    for data, truth in ((sagemaker, sm_truth), (openai, oa_truth)):
        (level,) = data["levels"]
        assert level["requests"] == 32 == len(truth) and level["errors"] == 0
        assert level["distributions"]["itl_s"]["count"] == 32 * 11
        assert level["output_tokens"] == 32 * 12  # usage.completion_tokens, offered and read
        # Request by request (one clock: the simulator runs in this process), each path's TTFT
        # contains the engine's: sent before the server's arrival, read after its first token.
        # (How close they are is measured in benchmarks/, not asserted on a shared machine.)
        by_id = {record.request_id: record for record in truth}
        for sample in data["samples"]:
            record = by_id[sample["request_id"]]
            assert sample["start"] < record.arrival and sample["first_token"] > record.first_token
            assert sample["output_tokens"] == record.output_tokens == 12
    print(
        f"p50 TTFT: sagemaker {sagemaker['levels'][0]['p50_ttft_s'] * 1000:.2f} ms "
        f"(truth {truth_p50(sm_truth)[0] * 1000:.2f}), openai "
        f"{openai['levels'][0]['p50_ttft_s'] * 1000:.2f} ms (truth {truth_p50(oa_truth)[0] * 1000:.2f})"
    )


@pytest.mark.parametrize(("fmt", "stream"), [("completions", True), ("completions", False),
                                             ("messages", False)])  # fmt: skip
def test_completions_and_unstreamed_answers(tmp_path: Path, fmt: str, stream: bool) -> None:
    with Simulator(CONFIG) as sim:
        flags = ["--target", "openai", "--base-url", f"{sim.endpoint_url}/v1", "--format", fmt]
        data = run(tmp_path / "r.json", *flags, *(["--stream"] if stream else []))
        truth = sim.truth()[1:]
    (level,) = data["levels"]
    assert level["errors"] == 0 and level["output_tokens"] == 32 * 12
    assert {r.api for r in truth} == {fmt} and {r.streamed for r in truth} == {stream}
    assert ("p50_ttft_s" in level) is stream


def test_the_sse_format_and_errors() -> None:
    parser = StreamParser("completions")
    parser.feed(
        b'data: {"object": "text_completion", "choices": [{"index": 0, "text": " a"}]}\n\n', 1.0
    )
    parser.feed(b'data: {"choices": [{"index": 0, "text": " b"}]}\n\ndata: {"choices": [], ', 2.0)
    parser.feed(b'"usage": {"completion_tokens": 7}}\n\ndata: [DONE]\n\n', 3.0)
    assert (parser.tokens, parser.output_tokens, parser.done, parser.gaps) == (2, 7, True, [1.0])
    assert parse_response(b'{"choices": [{"text": "a b c"}]}', "completions") == 3
    error = OpenAIInvoker._http_error(
        400,
        {},
        b'{"object": "error", "message": "bad model", "type": "NotFoundError", "code": 404}',
    )
    assert (error.code, error.message) == ("NotFoundError", "bad model")
    nested = OpenAIInvoker._http_error(429, {}, b'{"error": {"message": "slow", "type": "rate"}}')
    assert (nested.status, nested.message) == (429, "slow")
    body = json.loads(PayloadSpec(4, 3, True, "completions").build()(0).body)
    assert body["stream_options"] == {"include_usage": True} and "prompt" in body
    with pytest.raises(ValueError, match="base URL"):
        OpenAIInvoker("127.0.0.1:8000")


def test_an_api_key_is_sent_as_a_bearer_token() -> None:
    invoker = OpenAIInvoker("http://127.0.0.1:9/v1", api_key="sk-test")
    request = PayloadSpec(2, 2, False, "messages").build()(0)
    head = invoker._encode(request).split(b"\r\n\r\n")[0].decode()
    assert head.startswith("POST /v1/chat/completions HTTP/1.1")
    assert "Authorization: Bearer sk-test" in head


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--target", "openai"], "needs --base-url"),
        (["--target", "openai", "--base-url", "http://x/v1", "--endpoint-name", "e"],
         "--endpoint-name applies to --target sagemaker"),
        (["--target", "openai", "--base-url", "http://x/v1", "--format", "tgi"], "takes --format"),
        (["--endpoint-name", "e", "--format", "completions"], "is an OpenAI route"),
        (["--endpoint-name", "e", "--model", "m"], "--model applies to --target openai"),
        (["--region", "us-east-1"], "needs --endpoint-name"),
    ],
)  # fmt: skip
def test_target_flags_that_do_not_go_together(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert main(["benchmark", "--out", "x", *flags]) == 2
    assert message in capsys.readouterr().err


def test_failed_requests_say_why_in_the_output_and_the_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A base URL without /v1: every request gets a 404; the output and results.json carry
    the first error of the kind, with its status and the URL the requests went to."""
    with Simulator(CONFIG) as sim:
        out = tmp_path / "oa.json"
        # Every request fails: the run measures nothing, and says so (exit 1).
        assert main(["benchmark", "--target", "openai", "--base-url", sim.endpoint_url,
                     "--model", "simulated", "--concurrency", "1", "--requests-per-level", "4",
                     "--out", str(out)]) == 1  # fmt: skip
    data = json.loads(out.read_text())
    (level,) = data["levels"]
    assert level["errors"] == level["requests"] == 4
    ((kind, first),) = level["first_errors"].items()
    assert first["status"] == 404 and level["errors_by_kind"][kind] == 4
    err = capsys.readouterr().err
    url = f"{sim.endpoint_url}/chat/completions"
    assert f"{kind} errors: 4 of 4 requests; first: HTTP 404 " in err
    assert f"({url})" in err
    assert "error: every request failed (4 of 4), so the results measure nothing" in err
