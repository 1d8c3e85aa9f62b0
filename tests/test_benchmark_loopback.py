"""The engine over real HTTP against the simulator, checked against its ground truth."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from loadproof import LagMonitor

from cdk_sagemaker_llm.benchmarking import (
    AsyncInvoker,
    BenchmarkLoad,
    BotoInvoker,
    Invoker,
    KneeRule,
    PayloadSpec,
    percentile,
    run_benchmark,
    run_level,
    summarize_level,
)
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig, TruthRecord

# Loopback overheads are around a millisecond; what a busy machine adds is measured (LagMonitor)
# and allowed on top.
ABS_S = 0.03
REL = 0.10

Factory = Callable[[Simulator, str | None], Invoker]
INVOKERS: dict[str, Factory] = {
    "async": lambda sim, ic: AsyncInvoker(
        "ep", inference_component=ic, region="us-east-1", endpoint_url=sim.endpoint_url
    ),
    "threads": lambda sim, ic: BotoInvoker(
        "ep", inference_component=ic, region="us-east-1", endpoint_url=sim.endpoint_url
    ),
}


@pytest.fixture(autouse=True)
def dummy_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def close(measured: float | None, truth: float | None, monitor: LagMonitor | None = None) -> bool:
    """Within the error bound; its absolute part stretched by what this run's load did."""
    assert measured is not None and truth is not None
    allowance = monitor.allowance(ABS_S) if monitor else ABS_S
    return abs(measured - truth) <= allowance + REL * truth


@pytest.mark.timing
@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("client", sorted(INVOKERS))
@pytest.mark.parametrize(
    ("container", "fmt"),
    [("lmi", "auto"), ("tgi", "auto"), ("lmi", "messages"), ("tgi", "messages")],
)  # fmt: skip
def test_per_request_metrics_match_ground_truth(
    client: str, stream: bool, container: str, fmt: str
) -> None:
    config = SimulatorConfig(
        response_format=container, max_batch=2, step_base_s=0.004, step_per_sequence_s=0.001
    )
    with Simulator(config) as sim:
        invoker = INVOKERS[client](sim, "ic-1")
        spec = PayloadSpec(input_tokens=8, output_tokens=12, stream=stream, response_format=fmt)
        run_level(invoker, spec, 4, requests=4)  # warm-up: boto3's first calls are slow
        sim.reset()
        with LagMonitor() as monitor:
            samples = run_level(invoker, spec, 4, requests=10)
        truth = {record.request_id: record for record in sim.truth()}
    assert len(samples) == len(truth) == 10
    assert all(s.ok and s.concurrency == 4 for s in samples)
    assert {r.inference_component for r in truth.values()} == {"ic-1"}
    assert {r.input_tokens for r in truth.values()} == {8}
    # The container streamed exactly when the benchmark streamed: the body asked for it.
    assert {(r.stream, r.streamed) for r in truth.values()} == {(stream, stream)}
    assert {r.api for r in truth.values()} == {"messages" if fmt == "messages" else "inputs"}
    assert max(r.queue_s or 0 for r in truth.values()) > 0  # 4 in flight, batch of 2: queueing
    for s in samples:
        t = truth[s.request_id]  # type: ignore[index]
        assert s.output_tokens == t.output_tokens == 12
        assert s.start <= t.arrival and t.end <= s.end  # type: ignore[operator]
        assert close(s.latency_s, t.latency_s, monitor), monitor
        if stream:
            assert s.stream_tokens == 12
            assert close(s.ttft_s, t.ttft_s, monitor), monitor
            truth_itl = (t.end - t.first_token) / (t.output_tokens - 1)  # type: ignore[operator]
            assert close(s.itl_s, truth_itl, monitor), monitor
        else:
            assert s.ttft_s is None
    summary = summarize_level(samples, 4)
    truth_latencies = [t.latency_s or 0.0 for t in truth.values()]
    assert close(summary.p50_latency_s, percentile(truth_latencies, 50), monitor), monitor
    assert close(summary.p90_latency_s, percentile(truth_latencies, 90), monitor), monitor
    window = max(t.end or 0 for t in truth.values()) - min(t.arrival for t in truth.values())
    truth_tokens_per_s = sum(t.output_tokens for t in truth.values()) / window
    assert summary.output_tokens_per_s == pytest.approx(
        truth_tokens_per_s, rel=REL + monitor.allowance(0.0) / window
    ), monitor
    assert (summary.p50_ttft_s is not None) == stream


def outcome_kind(record: TruthRecord) -> str | None:
    return {"ok": None, "throttled": "throttling"}.get(record.outcome, record.outcome)


@pytest.mark.timing
@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("client", sorted(INVOKERS))
def test_errors_counted_by_kind(client: str, stream: bool) -> None:
    config = SimulatorConfig(
        max_batch=2,
        max_queue=2,
        step_base_s=0.003,
        model_error_every=7,
        invocation_timeout_s=0.12,
    )
    with Simulator(config) as sim:
        spec = PayloadSpec(input_tokens=4, output_tokens=30, stream=stream)
        samples = run_level(INVOKERS[client](sim, None), spec, 8, requests=60)
        truth = {record.request_id: record for record in sim.truth()}
    assert len(samples) == len(truth) == 60
    for s in samples:
        assert s.error == outcome_kind(truth[s.request_id]), (s, truth[s.request_id])  # type: ignore[index]
    summary = summarize_level(samples)
    expected = {"throttling": 0, "model_error": 0, "timeout": 0, "other": 0}
    for record in truth.values():
        kind = outcome_kind(record)
        if kind:
            expected[kind] += 1
    assert summary.errors_by_kind == expected
    assert all(expected[kind] > 0 for kind in ("throttling", "model_error", "timeout"))
    assert summary.error_rate == pytest.approx(sum(expected.values()) / 60)


@pytest.mark.timing
def test_knee_where_the_simulator_saturates() -> None:
    # Steps of 6 ms: the server's batch, not the clients' Python time on a busy machine, sets
    # each level's throughput (at 2 ms a loaded run once measured 8 clients >10% above 4).
    config = SimulatorConfig(max_batch=4, step_base_s=0.006, step_per_sequence_s=0.0006)
    with Simulator(config) as sim:
        invoker = INVOKERS["async"](sim, None)
        result = run_benchmark(
            invoker,
            PayloadSpec(input_tokens=4, output_tokens=40),
            BenchmarkLoad.concurrency(
                [1, 2, 4, 8],
                requests_per_level=12,
                knee_rule=KneeRule(min_gain_per_doubling=0.10),
            ),
            warmup_requests=0,
            price_per_hour=3.6,
        )
        truth = sim.truth()
    assert [level.concurrency for level in result.levels] == [1, 2, 4, 8]
    assert (result.knee.concurrency, result.knee.tripped_at) == (4, 8)
    assert result.knee.reason == "throughput"
    assert len(truth) == 48 and max(r.queue_s or 0 for r in truth[36:]) > 0.05
    knee_level = result.knee_level
    assert knee_level is not None
    cost = result.to_dict()["cost"]["per_1m_output_tokens_at_knee"]
    assert cost == pytest.approx(3.6 / (knee_level.output_tokens_per_s * 3600 / 1e6))


@pytest.mark.timing
def test_duration_bounded_level_keeps_concurrency_in_flight() -> None:
    with Simulator(SimulatorConfig(max_batch=8, step_base_s=0.002)) as sim:
        spec = PayloadSpec(input_tokens=4, output_tokens=10)
        samples = run_level(INVOKERS["async"](sim, None), spec, 3, duration_s=0.3)
        truth = sim.truth()
    assert len(samples) == len(truth) >= 6
    # Closed loop: never more than 3 requests inside the server at once.
    events = sorted([(r.arrival, 1) for r in truth] + [(r.end or 0, -1) for r in truth])
    in_flight = peak = 0
    for _, delta in events:
        in_flight += delta
        peak = max(peak, in_flight)
    assert peak == 3
    assert max(s.start for s in samples) - min(s.start for s in samples) <= 0.3 + ABS_S


@pytest.mark.timing
def test_async_invoker_reconnects_when_an_idle_keep_alive_connection_was_closed() -> None:
    with Simulator(SimulatorConfig(step_base_s=0.001)) as sim:
        invoker = AsyncInvoker("ep", region="us-east-1", endpoint_url=sim.endpoint_url)
        spec = PayloadSpec(input_tokens=2, output_tokens=2)
        factory = spec.build()
        issued = iter(range(2))

        def next_request():  # type: ignore[no-untyped-def]
            index = next(issued, None)
            if index == 1:  # the server drops idle connections between the two requests
                for task in list(sim._connections):
                    sim._loop.call_soon_threadsafe(task.cancel)  # type: ignore[union-attr]
                import time

                time.sleep(0.05)
            return None if index is None else factory(index)

        samples = invoker.invoke_many(next_request, 1)
    assert [s.error for s in samples] == [None, None]
    assert len(sim.truth()) == 2
