"""The loopback simulator serving a model from the engine simulation: what a client measures on
it (the server's own virtual clock, never the wall clock) is what ``planning.scheduling``
predicts for the same profile and workload, so simulate -> benchmark -> calibrate -> recommend
is one consistent loop. Requests go through a real boto3 ``sagemaker-runtime`` client, whose
calls botocore validates against the service model."""

from __future__ import annotations

import itertools
import json
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from cdk_sagemaker_llm.benchmarking.simulated_engine import EngineSimulation
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig, TruthRecord
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
from cdk_sagemaker_llm.planning.performance import KNEE_MIN_GAIN_PER_DOUBLING
from cdk_sagemaker_llm.planning.scheduling.capacity import CopySimulation
from cdk_sagemaker_llm.planning.workload import Workload

SPEC = ModelSpec.from_hugging_face_id("meta-llama/Llama-3.1-8B-Instruct")
WORKLOAD = Workload(input_tokens=128, output_tokens=32)
LONG_PROMPTS = Workload(input_tokens=2048, output_tokens=16)
"""Prefill-bound on an A10G: simulated throughput gains 19%, 13%, then 8% per doubling of the
clients, so the knee (4) lies below the request cap (8)."""
MAX_BATCH = 8
TIME_SCALE = 0.2
"""Passes sleep a fifth of their simulated time: fast, while a pass stays long against the
client's own work between requests (which the virtual clock caps at the pass in progress)."""

SINGLE_REQUEST_TOLERANCE = 0.02
"""One request alone runs the same passes as the simulation: only rounding differs."""
THROUGHPUT_TOLERANCE = 0.15
"""Closed-loop clients start together here and spread over one request in the simulation, and
a client's next request joins at the next pass (up to one pass late)."""


def engine(
    profile: str, workload: Workload = WORKLOAD, max_concurrent_requests: int | None = None
) -> EngineSimulation:
    assert SPEC is not None
    return EngineSimulation.of(
        SPEC,
        InstanceType.of("ml.g5.2xlarge"),
        engine_profile(profile),
        workload,
        time_scale=TIME_SCALE,
        max_batch_size=MAX_BATCH,
        max_concurrent_requests=max_concurrent_requests,
    )


@contextmanager
def serving(simulation: EngineSimulation) -> Iterator[Simulator]:
    with Simulator(SimulatorConfig(engine=simulation)) as simulator:
        yield simulator


def runtime(url: str) -> object:
    return boto3.session.Session(aws_access_key_id="test", aws_secret_access_key="test").client(
        "sagemaker-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}, read_timeout=120),
    )


def body_of(workload: Workload) -> str:
    """An inputs-API request of ``workload``'s tokens (one word, one token)."""
    return json.dumps(
        {
            "inputs": " ".join(["word"] * workload.input_tokens),
            "parameters": {"max_new_tokens": workload.output_tokens, "details": True},
        }
    )


def closed_loop(url: str, clients: int, rounds: int, workload: Workload = WORKLOAD) -> None:
    """``clients`` threads, each sending ``rounds`` requests one after the other."""
    errors: list[BaseException] = []
    body = body_of(workload)

    def client() -> None:
        try:
            sagemaker = runtime(url)
            for _ in range(rounds):
                response = sagemaker.invoke_endpoint(  # type: ignore[attr-defined]
                    EndpointName="llm", Body=body, ContentType="application/json"
                )
                answer = json.loads(response["Body"].read())
                if isinstance(answer, list):  # TGI's answer: a one-element list
                    (answer,) = answer
                assert answer["details"]["generated_tokens"] == workload.output_tokens
        except BaseException as error:  # reported by the test thread
            errors.append(error)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads)


def virtual_ms_per_token(record: TruthRecord) -> float:
    assert record.virtual_end is not None and record.virtual_arrival is not None
    return (record.virtual_end - record.virtual_arrival) / record.output_tokens * 1000


def measured_tokens_per_s(records: list[TruthRecord], clients: int) -> float:
    """Closed-loop throughput on the virtual clock by Little's law: clients x tokens per
    request / mean end-to-end latency (left out: each client's first request, the warm-up)."""
    steady = records[clients:]
    mean_e2e_ms = sum(virtual_ms_per_token(r) * r.output_tokens for r in steady) / len(steady)
    return clients * steady[0].output_tokens / (mean_e2e_ms / 1000)


@pytest.mark.parametrize("profile", ["lmi-vllm-v1", "tgi-1"])
def test_a_request_alone_takes_the_simulated_ms_per_token_and_ttft(profile: str) -> None:
    simulation = engine(profile)
    predicted = CopySimulation(simulation.model, simulation.profile, MAX_BATCH).level(1)
    with serving(simulation) as simulator:
        closed_loop(simulator.endpoint_url, clients=1, rounds=3)
        records = simulator.truth()
    assert [r.outcome for r in records] == ["ok"] * 3
    for record in records:
        assert record.virtual_first_token is not None and record.virtual_arrival is not None
        ttft_ms = (record.virtual_first_token - record.virtual_arrival) * 1000
        assert virtual_ms_per_token(record) == pytest.approx(
            predicted.ms_per_token, rel=SINGLE_REQUEST_TOLERANCE
        )
        assert ttft_ms == pytest.approx(predicted.ttft_ms, rel=SINGLE_REQUEST_TOLERANCE)


def test_closed_loop_throughput_and_knee_match_the_simulation() -> None:
    workload = LONG_PROMPTS
    simulation = engine("lmi-vllm-v1", workload)
    predicted = CopySimulation(simulation.model, simulation.profile, MAX_BATCH)
    measured: dict[int, float] = {}
    with serving(simulation) as simulator:
        for clients in (1, 2, 4, 8):
            simulator.reset()
            closed_loop(simulator.endpoint_url, clients, rounds=4, workload=workload)
            records = simulator.truth()
            assert all(r.outcome == "ok" for r in records)
            measured[clients] = measured_tokens_per_s(records, clients)
    for clients, tokens_per_s in measured.items():
        assert tokens_per_s == pytest.approx(
            predicted.level(clients).tokens_per_s, rel=THROUGHPUT_TOLERANCE
        ), clients
    # Within one doubling: a level's gain near the rule's 10% may fall either side of it.
    knee = predicted.knee(MAX_BATCH).clients
    assert knee_of(measured) in {knee // 2, knee, knee * 2}
    assert knee < MAX_BATCH  # the case checks a knee that is not merely the request cap


def knee_of(levels: dict[int, float]) -> int:
    """The library's doubling rule over measured levels: the last before a doubling buys less
    than ``KNEE_MIN_GAIN_PER_DOUBLING`` more throughput."""
    clients = sorted(levels)
    for previous, current in itertools.pairwise(clients):
        gain = (levels[current] / levels[previous]) ** (1 / math.log2(current / previous)) - 1
        if gain < KNEE_MIN_GAIN_PER_DOUBLING:
            return previous
    return clients[-1]


def test_tgi_refuses_beyond_its_concurrent_request_limit_as_the_container_does() -> None:
    simulation = engine("tgi-1", Workload(input_tokens=128, output_tokens=2000), 2)
    long_body = json.dumps({**json.loads(body_of(simulation.model.workload)), "stream": True})
    with serving(simulation) as simulator:
        sagemaker = runtime(simulator.endpoint_url)
        streams = [
            sagemaker.invoke_endpoint_with_response_stream(  # type: ignore[attr-defined]
                EndpointName="llm", Body=long_body, ContentType="application/json"
            )
            for _ in range(2)
        ]
        with pytest.raises(ClientError) as refused:
            sagemaker.invoke_endpoint(  # type: ignore[attr-defined]
                EndpointName="llm", Body=long_body, ContentType="application/json"
            )
        for stream in streams:
            stream["Body"].close()
        outcomes = [r.outcome for r in simulator.truth()]
    error = refused.value.response
    assert error["Error"]["Code"] == "ModelError"
    assert error["OriginalStatusCode"] == 429
    assert "Model is overloaded" in error["OriginalMessage"]
    assert outcomes[2] == "throttled"


def test_a_time_scale_that_is_not_positive_is_refused() -> None:
    assert SPEC is not None
    with pytest.raises(ValidationError, match="time_scale"):
        EngineSimulation.of(
            SPEC,
            InstanceType.of("ml.g5.2xlarge"),
            engine_profile("tgi-1"),
            WORKLOAD,
            time_scale=0.0,
        )


def test_a_prompt_beyond_the_engines_token_budget_is_refused_and_the_engine_serves_on() -> None:
    simulation = engine("tgi-1")
    kv_tokens = simulation.policy().kv_tokens
    too_long = json.dumps(
        {"inputs": " ".join(["word"] * (kv_tokens + 1)), "parameters": {"max_new_tokens": 4}}
    )
    with Simulator(SimulatorConfig(engine=simulation, response_format="tgi")) as simulator:
        sagemaker = runtime(simulator.endpoint_url)
        with pytest.raises(ClientError) as refused:
            sagemaker.invoke_endpoint(  # type: ignore[attr-defined]
                EndpointName="llm", Body=too_long, ContentType="application/json"
            )
        closed_loop(simulator.endpoint_url, clients=1, rounds=1)
        outcomes = [r.outcome for r in simulator.truth()]
    assert refused.value.response["Error"]["Code"] == "ModelError"
    assert refused.value.response["OriginalStatusCode"] == 422  # TGI's input validation
    assert outcomes == ["model_error", "ok"]


def test_an_invocation_past_its_time_limit_leaves_the_engine_and_the_next_is_served() -> None:
    simulation = engine("lmi-vllm-v1", Workload(input_tokens=128, output_tokens=2000))
    # 2,000 tokens take tens of seconds on the engine's clock; the next request's 4 tokens a
    # fraction of one. The limit is on the engine's clock: 5 s there, 1 s of wall time at the
    # time scale of 0.2, which still leaves the next request most of a second on a busy machine.
    config = SimulatorConfig(engine=simulation, invocation_timeout_s=5.0)
    with Simulator(config) as simulator:
        sagemaker = runtime(simulator.endpoint_url)
        with pytest.raises(ClientError) as timed_out:
            sagemaker.invoke_endpoint(  # type: ignore[attr-defined]
                EndpointName="llm",
                Body=body_of(Workload(input_tokens=128, output_tokens=2000)),
                ContentType="application/json",
            )
        closed_loop(
            simulator.endpoint_url,
            clients=1,
            rounds=1,
            workload=Workload(input_tokens=16, output_tokens=4),
        )
        truth = simulator.truth()
        outcomes = [r.outcome for r in truth]
    assert timed_out.value.response["Error"]["Code"] == "ModelError"
    assert outcomes == ["timeout", "ok"]
    (expired, _) = truth
    # Expired after the limit on the engine's clock (5 s) x the time scale, not 5 s of wall.
    assert 1.0 <= (expired.end or 0.0) - expired.arrival < 5.0


@pytest.mark.parametrize("client", ["async", "threads"])
def test_a_request_tgi_refuses_for_load_counts_as_throttling(
    client: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TGI refuses past ``max_concurrent_requests`` with 429 "Model is overloaded", which
    SageMaker relays as a ModelError (424) with ``OriginalStatusCode`` 429: the benchmark
    counted it as a model error where the simulator's own truth says throttled."""
    from cdk_sagemaker_llm.benchmarking import AsyncInvoker, BotoInvoker, PayloadSpec, run_level

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    simulation = engine("tgi-1", Workload(input_tokens=16, output_tokens=64), 2)
    with Simulator(SimulatorConfig(engine=simulation, response_format="tgi")) as simulator:
        url = simulator.endpoint_url
        invoker = (
            AsyncInvoker("ep", region="us-east-1", endpoint_url=url)
            if client == "async"
            else BotoInvoker("ep", region="us-east-1", endpoint_url=url)
        )
        spec = PayloadSpec(input_tokens=16, output_tokens=64, response_format="tgi")
        samples = run_level(invoker, spec, 6, requests=12)
        truth = {record.request_id: record.outcome for record in simulator.truth()}
    refused = [s for s in samples if truth[s.request_id] == "throttled"]  # type: ignore[index]
    assert refused, truth
    assert {s.error for s in refused} == {"throttling"}
    assert all(s.error is None for s in samples if truth[s.request_id] == "ok")  # type: ignore[index]


@pytest.mark.parametrize(
    ("profile", "fmt", "status"), [("lmi-vllm-v1", "lmi", 424), ("tgi-1", "tgi", 422)]
)
def test_a_request_past_the_models_context_is_refused_at_once(
    profile: str, fmt: str, status: int
) -> None:
    """vLLM refuses a prompt plus max_new_tokens beyond the model's context at once; the
    simulated LMI served it for a minute, until the invocation limit, holding a batch slot."""
    assert SPEC is not None
    body = json.dumps({"inputs": "hi there", "parameters": {"max_new_tokens": 1_000_000}})
    with Simulator(SimulatorConfig(engine=engine(profile), response_format=fmt)) as simulator:
        with pytest.raises(ClientError) as refused:
            runtime(simulator.endpoint_url).invoke_endpoint(  # type: ignore[attr-defined]
                EndpointName="llm", Body=body, ContentType="application/json"
            )
        (record,) = simulator.truth()
    assert refused.value.response["OriginalStatusCode"] == status
    assert str(SPEC.max_context) in refused.value.response["Error"]["Message"]
    assert record.outcome == "model_error" and (record.end or 0) - record.arrival < 5
