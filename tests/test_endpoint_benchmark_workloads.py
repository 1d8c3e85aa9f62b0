"""EndpointBenchmark with shaped workloads and the PrefixAwareId header: the construct's run,
the handlers' checks of it, and a worker over loopback sending what the CLI sends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Template
from conftest import new_stack
from test_endpoint_benchmark_handler import HANDLE, FakeS3, run_config, run_level_on_workers
from test_endpoint_benchmark_waiter import as_cloudformation

from cdk_sagemaker_llm import BenchmarkLoad, EndpointBenchmark, RequestProtocol, Workload
from cdk_sagemaker_llm.benchmarking.payload import PayloadSpec
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig
from cdk_sagemaker_llm.constructs.inference_component import InferenceComponent
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.lambdas.benchmark.run_config import check_run, payload_of
from cdk_sagemaker_llm.lambdas.benchmark.run_names import EventError
from cdk_sagemaker_llm.planning.workload import TraceRecord

SHAPES = {
    "shared-prefix": Workload.shared_prefix(
        prefixes=3, prefix_tokens=300, requests_per_prefix=4, suffix_tokens=8, output_tokens=6
    ),
    "multi-turn": Workload.multi_turn(
        conversations=2, turns=3, turn_tokens=5, output_tokens=4, system_tokens=2
    ),
    "trace": Workload.trace(
        [TraceRecord(0.1 * i, 20 + i, 3 + i, (7, 8) if i % 2 else (7,)) for i in range(5)],
        block_tokens=8,
    ),
}
EXTRA = {"Name": "bench-1-abcdef", "HandleUrl": HANDLE, "Deadline": 1e10, "StartedAt": 1.0,
         "Bucket": "results", "Prefix": "p/bench-1-abcdef/"}  # fmt: skip


@pytest.fixture(autouse=True)
def dummy_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def synth(**props: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    stack = new_stack()
    component = InferenceComponent.from_inference_component_name(
        stack, "Ic", inference_component_name="ic", endpoint_name="ep"
    )
    EndpointBenchmark(stack, "Bench", inference_component=component, **props)
    template = Template.from_stack(stack).to_json()
    (custom,) = [
        r for r in template["Resources"].values()
        if r["Type"] == "Custom::SageMakerEndpointBenchmark"
    ]  # fmt: skip
    return custom["Properties"]["Run"], custom["Metadata"]["cdk-sagemaker-llm:benchmark"]


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_the_run_carries_the_shape_and_the_handlers_send_what_the_cli_sends(kind: str) -> None:
    workload = SHAPES[kind]
    protocol = RequestProtocol(stream=True, prefix_aware_id="chat-app")
    run, plan = synth(workload=workload, protocol=protocol)
    assert run["Workload"]["Kind"] == kind and run["PrefixAwareId"] == "chat-app"
    assert kind in json.dumps(plan["Payload"]) or workload.shape is not None
    checked = check_run({**run, **EXTRA})
    # CloudFormation hands the handler every scalar as a string.
    assert check_run({**as_cloudformation({**run, "Bucket": "results"}), **EXTRA}) == checked
    deployed = payload_of(checked).build()
    local = PayloadSpec.of(workload, protocol).build()
    for index in range(12):
        assert deployed(index) == local(index)


def test_a_plain_run_is_unchanged() -> None:
    run, _ = synth()
    assert "Workload" not in run and "PrefixAwareId" not in run


def test_what_the_workers_cannot_send_fails_at_synth() -> None:
    with pytest.raises(ValidationError, match="trace_replay"):
        synth(workload=SHAPES["trace"], load=BenchmarkLoad.trace_replay())
    long = Workload.trace([TraceRecord(float(i), 4, 4) for i in range(1001)])
    with pytest.raises(ValidationError, match="at most 1000"):
        synth(workload=long)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"PrefixAwareId": "a b"}, "PrefixAwareId"),
        ({"Workload": {"Kind": "other"}}, "Workload.Kind"),
        (
            {
                "Workload": {
                    "Kind": "multi-turn",
                    "Conversations": 1,
                    "Turns": 99,
                    "TurnTokens": 3,
                    "SystemTokens": 0,
                }
            },
            "Workload.Turns",
        ),
        (
            {
                "Workload": {
                    "Kind": "trace",
                    "BlockTokens": 8,
                    "Records": [[1, 2, 3, []], [0, 2, 3, []]],
                }
            },
            r"Records\[1\]\[0\]",
        ),
        ({"Workload": {"Kind": "shared-prefix", "Prefixes": 1}}, "PrefixTokens"),
    ],
)
def test_malformed_workloads_are_rejected(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(EventError, match=message):
        run_config(**overrides)


@pytest.mark.timing
def test_a_worker_sends_the_shared_prefix_workload_with_the_header() -> None:
    run = run_config(
        RequestsPerLevel=12, InputTokens=308, OutputTokens=6, PrefixAwareId="chat-app",
        Workload={"Kind": "shared-prefix", "Prefixes": 3, "PrefixTokens": 300,
                  "RequestsPerPrefix": 4, "SuffixTokens": 8},
    )  # fmt: skip
    config = SimulatorConfig(instances=3, routing="prefix_aware", prefix_cache_blocks=1000)
    with Simulator(config) as sim:
        (result,) = run_level_on_workers(sim, run, FakeS3(), 2, lead_s=0.05)
        truth = sim.truth()
    assert result["Samples"] == 12
    assert {r.prefix_aware_id for r in truth} == {"chat-app"}
    assert sorted(r.input_tokens for r in truth) == [308] * 12
    assert sum(r.cached_tokens >= 288 for r in truth) >= 12 - 3 - 2  # all but first sends
