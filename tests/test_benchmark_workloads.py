"""Shaped workloads (shared prefixes, multi-turn, trace replay), the PrefixAwareId header, and
the simulator's prefix-aware routing and prefix cache: over loopback HTTP, checked against the
simulator's ground truth (counts and routing only: nothing here depends on timing)."""

from __future__ import annotations

import collections
import io
import json
from pathlib import Path

import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from cdk_sagemaker_llm.benchmarking import AsyncInvoker, BenchmarkLoad, BotoInvoker, run_benchmark
from cdk_sagemaker_llm.benchmarking.payload import (
    PREFIX_AWARE_HEADER,
    PayloadFormat,
    PayloadSpec,
    RequestProtocol,
)
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.workload import TraceRecord, Workload, parse_trace

SHARED = Workload.shared_prefix(
    prefixes=4, prefix_tokens=512, requests_per_prefix=8, suffix_tokens=16, output_tokens=4
)


@pytest.fixture(autouse=True)
def dummy_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def _prompts(workload: Workload, count: int, fmt: PayloadFormat = PayloadFormat.AUTO) -> list:
    factory = PayloadSpec.of(workload, RequestProtocol(fmt)).build()
    return [json.loads(factory(index).body) for index in range(count)]


def test_shared_prefix_requests_share_exactly_their_prefix() -> None:
    bodies = _prompts(SHARED, 64)
    words = [body["inputs"].split() for body in bodies]
    assert all(len(w) == 512 + 16 for w in words)
    assert SHARED.input_tokens == 528 and "4 shared prefixes of 512 tokens" in SHARED.describe()
    for index in range(28):
        prompt, same, other = words[index], words[index + 4], words[index + 1]
        assert prompt[:512] == same[:512] and prompt[512:] != same[512:]
        assert prompt[:512] != other[:512]
    # After prefixes x requests_per_prefix requests the workload repeats itself.
    assert bodies[32:] == bodies[:32]


def test_multi_turn_resends_the_history() -> None:
    workload = Workload.multi_turn(
        conversations=2, turns=3, turn_tokens=5, output_tokens=4, system_tokens=3
    )
    bodies = _prompts(workload, 8, PayloadFormat.MESSAGES)
    # Request t x conversations + c is turn t of conversation c.
    first, second, third = bodies[0], bodies[2], bodies[4]
    assert [m["role"] for m in third["messages"]] == [
        "system", "user", "assistant", "user", "assistant", "user"
    ]  # fmt: skip
    assert third["messages"][:4] == second["messages"]
    assert second["messages"][:2] == first["messages"]
    assert bodies[1]["messages"][1] != first["messages"][1]  # another conversation
    assert bodies[6]["messages"][1] != first["messages"][1]  # a new conversation starts over
    assert len(third["messages"][-1]["content"].split()) == 5
    assert workload.input_tokens == round(3 + 5 + 2 * (5 + 4) / 2)
    inputs = _prompts(workload, 3)
    assert len(inputs[2]["inputs"].split()) == 3 + 5 + 4 + 5


def test_trace_requests_carry_their_tokens_and_blocks(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text(
        '{"timestamp": 0, "input_length": 40, "output_length": 7, "hash_ids": [1, 2]}\n'
        '{"timestamp": 500, "input_length": 30, "output_length": 3, "hash_ids": [1]}\n'
        "\n"
        '{"timestamp_s": 2.0, "input_tokens": 12, "output_tokens": 9}\n'
    )
    workload = Workload.trace(str(path), block_tokens=16)
    assert workload.shape is not None and workload.shape.rate == pytest.approx(1.0)
    assert (workload.input_tokens, workload.output_tokens) == (27, 6)
    bodies = _prompts(workload, 3)
    words = [body["inputs"].split() for body in bodies]
    assert [len(w) for w in words] == [40, 30, 12]
    assert [body["parameters"]["max_new_tokens"] for body in bodies] == [7, 3, 9]
    assert words[0][:16] == words[1][:16] and words[0][16:32] != words[1][16:32]
    chat = _prompts(workload, 1, PayloadFormat.MESSAGES)[0]
    assert chat["max_tokens"] == 7
    for bad, prop in (
        ('{"timestamp": 5, "input_length": 1, "output_length": 1}\n{"timestamp": 1, '
         '"input_length": 1, "output_length": 1}', "timestamp_s"),
        ('{"input_length": 1, "output_length": 1}', "timestamp"),
        ('{"timestamp": 0, "input_length": 0, "output_length": 1}', "input_length"),
    ):  # fmt: skip
        with pytest.raises(ValidationError, match=prop):
            Workload.trace(parse_trace(bad))


def test_shapes_check_their_arguments() -> None:
    with pytest.raises(ValidationError, match="prefixes"):
        Workload.shared_prefix(prefixes=0, prefix_tokens=8, requests_per_prefix=2)
    with pytest.raises(ValidationError, match="turns"):
        Workload.multi_turn(conversations=1, turns=65, turn_tokens=8)
    with pytest.raises(ValidationError, match="200000"):
        Workload.multi_turn(conversations=1, turns=64, turn_tokens=4000, output_tokens=1000)
    with pytest.raises(ValidationError, match="prefix_aware_id"):
        RequestProtocol(prefix_aware_id="no spaces")
    with pytest.raises(ValueError, match="drop prompts"):
        PayloadSpec(shape=SHARED.shape, prompts="p.jsonl")


def _run(routing: str, protocol: RequestProtocol) -> tuple[list, dict]:
    config = SimulatorConfig(
        instances=4, routing=routing, prefix_cache_blocks=4096, prefill_per_input_token_s=1e-5
    )
    with Simulator(config) as sim:
        invoker = AsyncInvoker("ep", region="us-east-1", endpoint_url=sim.endpoint_url)
        result = run_benchmark(
            invoker,
            PayloadSpec.of(SHARED, protocol),
            BenchmarkLoad.concurrency([1], requests_per_level=32),
            warmup_requests=0,
        )
        return sim.truth(), result.to_dict()


@pytest.mark.timing
def test_prefix_aware_routing_reuses_the_prefix_cache() -> None:
    """A shared-prefix workload against 4 instances with prefix caches: prefix-aware routing
    sends every request of a prefix to one instance, so all but each prefix's first request
    find the 512-token prefix cached; least-outstanding routing spreads them (one at a time,
    ties drawn by a seeded generator), so more prefixes are prefilled again."""
    stream = RequestProtocol(stream=True, prefix_aware_id="chat-app")
    aware, aware_results = _run("prefix_aware", stream)
    spread, spread_results = _run("least_outstanding", stream)
    by_prefix: dict[int, set[int]] = collections.defaultdict(set)
    for index, record in enumerate(aware):
        by_prefix[index % 4].add(record.instance)
        assert record.prefix_aware_id == "chat-app"
    assert all(len(instances) == 1 for instances in by_prefix.values())
    assert sum(r.cached_tokens == 0 for r in aware) == 4
    assert all(r.cached_tokens == 512 for r in aware[4:])
    assert len({r.instance for r in spread}) > 1
    misses = sum(r.cached_tokens == 0 for r in spread)
    assert misses > 4
    prefilled = sum(r.input_tokens - r.cached_tokens for r in aware)
    assert prefilled < sum(r.input_tokens - r.cached_tokens for r in spread)
    # The results state the workload and the header, and carry TTFT for the comparison.
    payload = aware_results["payload"]
    assert payload["workload"]["kind"] == "shared-prefix"
    assert payload["prefix_aware_id"] == "chat-app" and payload["prompts"] == "shared-prefix"
    assert aware_results["levels"][0]["p50_ttft_s"] > 0
    assert spread_results["levels"][0]["p50_ttft_s"] > 0


@pytest.mark.loopback
def test_the_header_is_part_of_the_routing_key() -> None:
    """Per the API reference, requests with the same prefix *and* the same PrefixAwareId go to
    the same instance: without the header, the prefix alone decides."""
    without, _ = _run("prefix_aware", RequestProtocol())
    assert {r.prefix_aware_id for r in without} == {None}
    for prefix in range(4):
        assert len({r.instance for r in without[prefix::4]}) == 1


def test_boto_client_sends_the_prefix_aware_id() -> None:
    import boto3

    client = boto3.client("sagemaker-runtime", region_name="us-east-1")
    invoker = BotoInvoker("ep", client=client)
    factory = PayloadSpec.of(SHARED, RequestProtocol(prefix_aware_id="app")).build()
    answer = b'{"generated_text": "a b", "details": {"generated_tokens": 2}}'
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_endpoint",
            {"Body": StreamingBody(io.BytesIO(answer), len(answer)),
             "ResponseMetadata": {"RequestId": "r"}},
            {"EndpointName": "ep", "Body": factory(0).body, "ContentType": "application/json",
             "Accept": "application/json", "PrefixAwareId": "app"},
        )  # fmt: skip
        sample = invoker.invoke_one(client, factory(0))
    assert sample.ok and sample.output_tokens == 2
    assert (
        (
            client.meta.service_model.operation_model("InvokeEndpoint")
            .input_shape.members["PrefixAwareId"]
            .serialization["name"]
        )
        == PREFIX_AWARE_HEADER
    )


@pytest.mark.timing
def test_trace_replay_sends_at_the_trace_timestamps(tmp_path: Path) -> None:
    records = [TraceRecord(0.05 * i, 8 + i, 2 + i % 3) for i in range(12)]
    workload = Workload.trace(records)
    with Simulator(SimulatorConfig()) as sim:
        invoker = AsyncInvoker("ep", region="us-east-1", endpoint_url=sim.endpoint_url)
        result = run_benchmark(
            invoker,
            PayloadSpec.of(workload, RequestProtocol()),
            BenchmarkLoad.trace_replay([1, 2]),
            keep_samples=True,
            warmup_requests=0,
        )
        truth = sim.truth()
    assert [r.input_tokens for r in truth] == [8 + i for i in range(12)] * 2
    assert [r.output_tokens for r in truth] == [2 + i % 3 for i in range(12)] * 2
    data = result.to_dict()
    assert data["mode"] == "rate" and data["open_loop"]["arrival"] == "trace"
    rates = [level["target_rate_per_s"] for level in data["levels"]]
    assert rates == pytest.approx([20.0, 40.0])
    scheduled = sorted(s.scheduled for s in result.samples or [] if s.scheduled is not None)
    assert len(scheduled) == 24
    with pytest.raises(ValueError, match=r"Workload\.trace"):
        run_benchmark(invoker, PayloadSpec.of(SHARED, RequestProtocol()),
                      BenchmarkLoad.trace_replay(), warmup_requests=0)  # fmt: skip


@pytest.mark.loopback
def test_cli_workload_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        "\n".join(
            json.dumps({"timestamp": 40 * i, "input_length": 10, "output_length": 3})
            for i in range(6)
        )
    )
    with Simulator(SimulatorConfig(instances=2, routing="prefix_aware")) as sim:
        common = ["benchmark", "--endpoint-name", "ep", "--region", "us-east-1",
                  "--endpoint-url", sim.endpoint_url]  # fmt: skip
        out = tmp_path / "shared.json"
        assert main([*common, "--shared-prefixes", "2", "--prefix-tokens", "300",
                     "--requests-per-prefix", "2", "--output-tokens", "3", "--concurrency",
                     "1,2", "--requests-per-level", "4", "--prefix-aware-id", "app",
                     "--out", str(out)]) == 0  # fmt: skip
        assert json.loads(out.read_text())["payload"]["workload"]["prefixes"] == 2
        assert {r.prefix_aware_id for r in sim.truth()} == {"app"}
        out = tmp_path / "turns.json"
        assert main([*common, "--conversations", "2", "--turns", "2", "--turn-tokens", "4",
                     "--format", "messages", "--concurrency", "1", "--requests-per-level", "4",
                     "--out", str(out)]) == 0  # fmt: skip
        out = tmp_path / "replay.json"
        assert main([*common, "--trace", str(trace), "--replay-speedup", "1,2",
                     "--out", str(out)]) == 0  # fmt: skip
        assert json.loads(out.read_text())["open_loop"]["arrival"] == "trace"
        assert main(["report", str(out)]) == 0
    for flags in (
        ["--shared-prefixes", "2"],
        ["--shared-prefixes", "2", "--prefix-tokens", "3", "--requests-per-prefix", "2",
         "--trace", str(trace)],
        ["--trace", str(trace), "--output-tokens", "3"],
        ["--replay-speedup", "1"],
        ["--trace", str(trace), "--replay-speedup", "1", "--concurrency", "2"],
        ["--conversations", "2", "--turns", "2", "--turn-tokens", "2", "--input-tokens", "3"],
        ["--system-tokens", "3"],
    ):  # fmt: skip
        assert main(["benchmark", "--endpoint-name", "e", "--region", "us-east-1",
                     "--out", str(tmp_path / "x"), *flags]) == 2, flags  # fmt: skip


def test_a_prefix_aware_id_longer_than_the_api_allows_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """botocore's sagemaker-runtime model caps PrefixAwareId at 64 characters; a 65-character
    id is refused by the construct props, the CLI flag and the benchmark handler."""
    import botocore.session

    from cdk_sagemaker_llm.benchmarking.payload import PREFIX_AWARE_ID_MAX_LENGTH
    from cdk_sagemaker_llm.lambdas.benchmark.run_names import EventError
    from cdk_sagemaker_llm.lambdas.benchmark.run_workload import check_workload

    model = botocore.session.get_session().get_service_model("sagemaker-runtime")
    for operation in ("InvokeEndpoint", "InvokeEndpointWithResponseStream"):
        member = model.operation_model(operation).input_shape.members["PrefixAwareId"]
        assert member.metadata["max"] == PREFIX_AWARE_ID_MAX_LENGTH
    RequestProtocol(prefix_aware_id="a" * 64)
    with pytest.raises(ValidationError, match=r"prefix_aware_id.*1 to 64.*65 characters"):
        RequestProtocol(prefix_aware_id="a" * 65)
    assert main(["benchmark", "--endpoint-name", "e", "--region", "us-east-1",
                 "--out", str(tmp_path / "x"), "--prefix-aware-id", "a" * 65]) == 2  # fmt: skip
    assert "1 to 64" in capsys.readouterr().err
    with pytest.raises(EventError, match="PrefixAwareId"):
        check_workload({"PrefixAwareId": "a" * 65}, "Runs[0]")
