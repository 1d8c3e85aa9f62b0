"""Engine arithmetic: percentiles, summaries, merging, the knee, cost, payloads, parsing."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cdk_sagemaker_llm.benchmarking import (
    BenchmarkResult,
    KneeRule,
    LevelResult,
    PayloadSpec,
    RequestSample,
    cost_per_million_tokens,
    find_knee,
    percentile,
    summarize_level,
)
from cdk_sagemaker_llm.benchmarking.payload import (
    ResponseFormatError,
    StreamModelError,
    StreamParser,
    classify_error,
    parse_response,
    synthetic_prompt,
)


def sample(
    start: float, latency: float, tokens: int = 10, error: str | None = None
) -> RequestSample:
    return RequestSample(start=start, end=start + latency, output_tokens=tokens, error=error)


def level(concurrency: int, tokens_per_s: float, ms_per_token: float = 10.0) -> LevelResult:
    return LevelResult(
        concurrency=concurrency, requests=10, errors=0, errors_by_kind={}, error_rate=0.0,
        duration_s=1.0, p50_latency_s=1.0, p90_latency_s=1.0, p99_latency_s=1.0,
        p50_ms_per_token=ms_per_token, p90_ms_per_token=ms_per_token, output_tokens=1,
        output_tokens_per_s=tokens_per_s, requests_per_s=1.0,
    )  # fmt: skip


def test_percentile_matches_linear_interpolation() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 99) == 3.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile(list(range(1, 101)), 90) == pytest.approx(90.1)
    assert percentile([5, 1, 3], 0) == 1 and percentile([5, 1, 3], 100) == 5


def test_summarize_level() -> None:
    samples = [sample(0.0, 1.0), sample(0.0, 2.0), sample(1.0, 3.0, tokens=30)]
    samples += [sample(0.5, 0.1, 0, "throttling"), sample(0.5, 0.1, 0, "timeout")]
    result = summarize_level(samples, 2)
    assert (result.requests, result.errors, result.error_rate) == (5, 2, 0.4)
    assert result.errors_by_kind == {"throttling": 1, "model_error": 0, "timeout": 1, "other": 0}
    assert result.p50_latency_s == 2.0  # successful requests only
    assert result.p50_ms_per_token == 100.0  # 1000/10, 2000/10, 3000/30
    assert result.duration_s == 4.0
    assert result.output_tokens_per_s == 50 / 4
    assert result.requests_per_s == 3 / 4
    assert result.p50_ttft_s is None and "p50_ttft_s" not in result.to_dict()


def test_merged_workers_give_percentiles_of_all_samples_not_averages() -> None:
    rng = random.Random(7)
    worker_a = [sample(rng.random(), rng.random()) for _ in range(101)]
    worker_b = [sample(rng.random(), 5 + rng.random()) for _ in range(52)]
    merged = summarize_level(worker_a + worker_b, 8)
    latencies = sorted(s.latency_s for s in worker_a + worker_b)
    assert merged.p50_latency_s == pytest.approx(latencies[len(latencies) // 2])
    averaged = (
        summarize_level(worker_a, 8).p50_latency_s + summarize_level(worker_b, 8).p50_latency_s  # type: ignore[operator]
    ) / 2
    assert merged.p50_latency_s != pytest.approx(averaged)
    round_trip = [RequestSample.from_dict(json.loads(json.dumps(s.to_dict()))) for s in worker_a]
    assert summarize_level(round_trip, 8) == summarize_level(worker_a, 8)


def test_streaming_metrics() -> None:
    s = RequestSample(
        start=0.0, end=1.0, output_tokens=5, first_token=0.2, last_token=1.0, stream_tokens=5
    )
    assert s.ttft_s == 0.2 and s.itl_s == pytest.approx(0.2) and s.ms_per_token == 200.0
    result = summarize_level([s], 1)
    assert result.p50_ttft_s == 0.2 and result.p50_itl_s == pytest.approx(0.2)


def test_knee_by_throughput_gain_per_doubling() -> None:
    levels = [level(1, 100), level(2, 190), level(4, 350), level(8, 370), level(16, 372)]
    knee = find_knee(levels, KneeRule(min_gain_per_doubling=0.10))
    assert (knee.concurrency, knee.tripped_at, knee.reason) == (4, 8, "throughput")
    assert "gain per doubling < 10%" in knee.rule
    # Gain is per doubling: 1 -> 4 is two doublings, 100 -> 150 is +22% each.
    assert find_knee([level(1, 100), level(4, 150)], KneeRule(0.2)).concurrency == 4
    assert find_knee([level(1, 100), level(4, 140)], KneeRule(0.2)).concurrency == 1


def test_knee_by_slo_and_errors() -> None:
    levels = [level(1, 100, 20), level(2, 200, 30), level(4, 400, 60)]
    knee = find_knee(levels, KneeRule(slo_ms_per_token=50))
    assert (knee.concurrency, knee.tripped_at, knee.reason) == (2, 4, "slo")
    assert find_knee(levels, KneeRule(slo_ms_per_token=10)).concurrency is None
    never = find_knee(levels)
    assert (never.concurrency, never.tripped_at) == (4, None)
    failing = [level(1, 100), level(2, 200)]
    failing[1].error_rate = 0.2
    assert find_knee(failing, KneeRule(max_error_rate=0.05)).reason == "errors"


def test_result_json_cost_and_max_throughput_within_slo() -> None:
    levels = [level(1, 100, 20), level(2, 200, 30), level(4, 300, 60)]
    result = BenchmarkResult(
        payload=PayloadSpec(input_tokens=10, output_tokens=5).describe(),
        levels=levels,
        knee=find_knee(levels, KneeRule(slo_ms_per_token=50)),
        slo_ms_per_token=50,
        price_per_hour=7.2,
    )
    data = json.loads(result.to_json())
    assert data["knee"]["concurrency"] == 2
    assert data["max_throughput_within_slo"]["concurrency"] == 2
    assert data["cost"]["per_1m_output_tokens_at_knee"] == pytest.approx(7.2 / (200 * 3600 / 1e6))
    assert cost_per_million_tokens(3.6, 1000) == pytest.approx(1.0)
    assert cost_per_million_tokens(3.6, 0) is None
    assert set(data["levels"][0]) >= {
        "concurrency", "requests", "errors", "p50_latency_s", "p90_latency_s", "p99_latency_s",
        "p50_ms_per_token", "output_tokens_per_s", "requests_per_s",
    }  # fmt: skip
    assert BenchmarkResult.from_dict(data).to_dict() == data


def test_synthetic_payload() -> None:
    spec = PayloadSpec(input_tokens=12, output_tokens=7)
    factory = spec.build()
    first, second = json.loads(factory(0).body), json.loads(factory(1).body)
    assert len(first["inputs"].split()) == 12
    assert first["parameters"] == {"max_new_tokens": 7, "details": True}
    assert first["inputs"] != second["inputs"]
    assert synthetic_prompt(3, 0) == "the of and"
    with pytest.raises(ValueError, match="response_format"):
        PayloadSpec(response_format="vllm")


def test_jsonl_prompts_local_and_s3(tmp_path: Path) -> None:
    lines = [
        json.dumps({"inputs": "hello", "parameters": {"max_new_tokens": 3}}),
        json.dumps({"prompt": "bonjour"}),
        "",
        json.dumps("hola"),
    ]
    path = tmp_path / "prompts.jsonl"
    path.write_text("\n".join(lines))
    factory = PayloadSpec(output_tokens=9, prompts=str(path)).build()
    bodies = [json.loads(factory(i).body) for i in range(4)]
    assert [b["inputs"] for b in bodies] == ["hello", "bonjour", "hola", "hello"]
    assert [b["parameters"]["max_new_tokens"] for b in bodies] == [3, 9, 9, 3]
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="prompts")
        s3.put_object(Bucket="prompts", Key="p.jsonl", Body=path.read_bytes())
        factory = PayloadSpec(prompts="s3://prompts/p.jsonl").build(s3)
        assert json.loads(factory(1).body)["inputs"] == "bonjour"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"nothing": 1}))
    with pytest.raises(ValueError, match=r"bad\.jsonl:1"):
        PayloadSpec(prompts=str(bad)).build()


def test_parse_responses() -> None:
    lmi = json.dumps({"generated_text": "a b c", "details": {"generated_tokens": 4}}).encode()
    tgi = json.dumps([{"generated_text": "a b c", "details": {"generated_tokens": 4}}]).encode()
    assert parse_response(lmi) == parse_response(tgi) == 4
    assert parse_response(lmi, "lmi") == 4 and parse_response(tgi, "tgi") == 4
    assert parse_response(b'{"generated_text": "a b c"}') == 3  # counted without details
    with pytest.raises(ResponseFormatError):
        parse_response(lmi, "tgi")
    with pytest.raises(ResponseFormatError):
        parse_response(b"<html>")


def test_stream_parser_lines_split_across_parts() -> None:
    lmi = (
        b"".join(
            json.dumps({"token": {"id": i, "text": "x", "log_prob": 0}}).encode() + b"\n"
            for i in range(3)
        )
        + json.dumps({"generated_text": "xxx", "details": {"generated_tokens": 3}}).encode()
        + b"\n"
    )
    parser = StreamParser("lmi")
    for i in range(0, len(lmi), 7):
        parser.feed(lmi[i : i + 7], float(i))
    parser.close(1e9)
    assert (parser.tokens, parser.output_tokens, parser.first_token) == (3, 3, 42.0)
    tgi = b'data:{"token": {"id": 1, "text": "a", "special": false}}\n\ndata:{"token": {"id": 2, "text": "</s>", "special": true}, "details": {"generated_tokens": 2}}\n\n'
    parser = StreamParser("auto")
    parser.feed(tgi, 1.0)
    assert (parser.tokens, parser.output_tokens) == (1, 2)
    with pytest.raises(ResponseFormatError):
        StreamParser("lmi").feed(tgi, 0.0)


def test_classify_error() -> None:
    assert classify_error("ThrottlingException") == "throttling"
    assert classify_error("Anything", status=429) == "throttling"
    assert classify_error("ModelError", "Received server error (500)") == "model_error"
    assert classify_error("ModelError", "Your invocation timed out while waiting") == "timeout"
    assert classify_error("ModelInvocationTimeExceeded") == "timeout"
    assert classify_error("ReadTimeout") == "timeout"
    assert classify_error("InternalFailure") == "other"
    # TGI's 429 "Model is overloaded", relayed by SageMaker as a ModelError (424).
    assert classify_error("ModelError", "Model is overloaded", 424, 429) == "throttling"
    assert classify_error("ModelError", "bad input", 424, 422) == "model_error"


def test_stream_flag_sent_only_when_streaming() -> None:
    """LMI and TGI stream only when the body asks; without streaming nothing asks."""
    for fmt in ("auto", "lmi", "tgi"):
        plain = json.loads(PayloadSpec(response_format=fmt).build()(0).body)
        streamed = json.loads(PayloadSpec(response_format=fmt, stream=True).build()(0).body)
        assert "stream" not in plain and "stream" not in plain["parameters"]
        assert streamed["stream"] is True and "stream" not in streamed["parameters"]
    plain = json.loads(PayloadSpec(response_format="messages", output_tokens=5).build()(0).body)
    assert plain == {"messages": [{"role": "user", "content": synthetic_prompt(256)}],
                     "max_tokens": 5}  # fmt: skip
    spec = PayloadSpec(response_format="messages", stream=True, parameters={"temperature": 0})
    streamed = json.loads(spec.build()(0).body)
    assert streamed["stream"] is True and streamed["temperature"] == 0
    assert streamed["stream_options"] == {"include_usage": True}


def test_messages_prompts(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    chat = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    path.write_text(json.dumps({"messages": chat, "parameters": {"max_tokens": 4}}) + "\n"
                    + json.dumps("hello"))  # fmt: skip
    factory = PayloadSpec(response_format="messages", prompts=str(path)).build()
    first, second = json.loads(factory(0).body), json.loads(factory(1).body)
    assert first["messages"] == chat and first["max_tokens"] == 4
    assert second["messages"] == [{"role": "user", "content": "hello"}]
    with pytest.raises(ValueError, match="--format messages"):
        PayloadSpec(response_format="lmi", prompts=str(path)).build()


def test_parse_chat_completions() -> None:
    answer = {"choices": [{"message": {"role": "assistant", "content": "a b c"}}]}
    assert parse_response(json.dumps(answer).encode(), "messages") == 3
    with_usage = {**answer, "usage": {"completion_tokens": 7}}
    assert parse_response(json.dumps(with_usage).encode()) == 7  # auto detects chat
    with pytest.raises(ResponseFormatError):
        parse_response(json.dumps({"generated_text": "x"}).encode(), "messages")
    chunk = {"choices": [{"delta": {"role": "assistant", "content": ""}}]}  # role only
    stream = b"data: " + json.dumps(chunk).encode() + b"\n\n"
    for k in range(3):
        chunk = {"choices": [{"delta": {"content": f" w{k}"}, "finish_reason": None}]}
        stream += b"data: " + json.dumps(chunk).encode() + b"\n\n"
    stream += b'data: {"choices": [], "usage": {"completion_tokens": 4}}\n\ndata: [DONE]\n\n'
    parser = StreamParser("messages")
    for i, byte in enumerate(stream):
        parser.feed(bytes([byte]), float(i))
    parser.close(1e9)
    assert (parser.tokens, parser.output_tokens, parser.done) == (3, 4, True)
    assert parser.first_token is not None and parser.first_token > 80  # not the role chunk
    lines = StreamParser("messages")  # LMI rolling-batch chat streams the chunks as JSON lines
    lines.feed(json.dumps(chunk).encode() + b"\n", 1.0)
    assert lines.tokens == 1


@pytest.mark.parametrize(
    ("fmt", "answer"),
    [
        ("lmi", {"generated_text": "a b", "details": {"generated_tokens": 2}}),
        ("auto", [{"generated_text": "a b", "details": {"generated_tokens": 2}}]),
        ("messages", {"choices": [{"message": {"content": "a b"}}]}),
    ],
)
def test_a_streaming_request_answered_in_one_piece_is_an_error(fmt: str, answer: Any) -> None:
    parser = StreamParser(fmt)
    with pytest.raises(ResponseFormatError, match="stream"):
        parser.feed(json.dumps(answer).encode() + b"\n", 1.0)


def test_model_errors_inside_streams() -> None:
    lmi_error = {"token": {"id": -1, "text": "", "log_prob": -1, "special_token": True},
                 "generated_text": "", "details": {"finish_reason": "error"}}  # fmt: skip
    with pytest.raises(StreamModelError):
        StreamParser("lmi").feed(json.dumps(lmi_error).encode() + b"\n", 1.0)
    with pytest.raises(StreamModelError) as raised:
        StreamParser("tgi").feed(b'data:{"error": "overloaded"}\n\n', 1.0)
    assert not raised.value.overloaded
    # TGI streams its refusal for load as an event: {"error", "error_type": "overloaded"}.
    overloaded = b'data:{"error": "Model is overloaded", "error_type": "overloaded"}\n\n'
    with pytest.raises(StreamModelError) as raised:
        StreamParser("tgi").feed(overloaded, 1.0)
    assert raised.value.overloaded


TOKEN_LINE = b'{"token": {"id": 1, "text": "a", "log_prob": -1}}\n'
TGI_TOKEN = b'data:{"token": {"id": 1, "text": "a", "special": false}}\n\n'
CHAT_CHUNK = b'data: {"choices": [{"delta": {"content": " a"}, "finish_reason": null}]}\n\n'


@pytest.mark.parametrize(
    ("fmt", "truncated", "last"),
    [
        ("lmi", TOKEN_LINE * 2, b'{"generated_text": "a a", "details": {}}\n'),
        ("tgi", TGI_TOKEN * 2,
         b'data:{"token": {"id": 2, "text": "b", "special": false}, "generated_text": "a a b"}\n\n'),
        ("auto", TOKEN_LINE * 2, b'{"generated_text": "a a"}'),  # no trailing newline
        ("messages", CHAT_CHUNK * 2,
         b'data: {"choices": [{"delta": {}, "finish_reason": "length"}]}\n\n'),
        ("messages", CHAT_CHUNK * 2, b"data: [DONE]\n\n"),
        ("completions", b'data: {"choices": [{"text": " a"}]}\n\n',
         b'data: {"choices": [{"text": "", "finish_reason": "stop"}]}\n\n'),
    ],
)  # fmt: skip
def test_a_stream_that_ends_before_its_last_event_is_an_error(
    fmt: str, truncated: bytes, last: bytes
) -> None:
    """A stream cut short (cleanly) is a ResponseFormatError, not a success with fewer tokens;
    the same stream with its last event closes."""
    cut = StreamParser(fmt)
    cut.feed(truncated, 1.0)
    with pytest.raises(ResponseFormatError, match="ended before its last event"):
        cut.close(2.0)
    whole = StreamParser(fmt)
    whole.feed(truncated + last, 1.0)
    whole.close(2.0)
    assert whole.complete and whole.tokens >= 1


def test_a_truncated_stream_is_counted_as_an_error_by_the_invoker() -> None:
    from cdk_sagemaker_llm.benchmarking.invokers import BotoInvoker

    class Client:
        def invoke_endpoint_with_response_stream(self, **_: Any) -> dict[str, Any]:
            parts = [{"PayloadPart": {"Bytes": TOKEN_LINE}}] * 3  # no generated_text line
            return {"ResponseMetadata": {"RequestId": "r"}, "Body": iter(parts)}

    request = PayloadSpec(input_tokens=4, output_tokens=8, stream=True, response_format="lmi")
    sample = BotoInvoker("ep").invoke_one(Client(), request.build()(0))
    assert sample.error == "other" and sample.error_code == "ResponseFormatError"
    assert "ended before its last event" in (sample.error_message or "")


def test_max_throughput_within_the_slo_skips_levels_failing_more_than_the_rule_allows() -> None:
    from dataclasses import replace

    failing = replace(level(8, 200.0), errors=13, error_rate=13 / 16)
    levels = [level(1, 140.0), failing]
    rule = KneeRule(max_error_rate=0.05)
    result = BenchmarkResult(
        payload={}, levels=levels, knee=find_knee(levels, rule), max_error_rate=0.05
    )
    assert (result.knee.concurrency, result.knee.reason) == (1, "errors")
    best = result.max_throughput_level
    assert best is not None and best.concurrency == 1
    data = result.to_dict()
    assert data["max_throughput_within_slo"]["concurrency"] == 1
    assert data["max_error_rate"] == 0.05
    assert BenchmarkResult.from_dict(data).max_throughput_level == best  # read back alike
    unlimited = BenchmarkResult(payload={}, levels=levels, knee=find_knee(levels, KneeRule()))
    assert unlimited.max_throughput_level is failing and "max_error_rate" not in unlimited.to_dict()
