"""EndpointBenchmark in open-loop and search modes: the construct's run and validation, and the
handlers over loopback against the simulator (the Advance/worker loop of the workflow, levels
split across workers, the same results.json as the CLI)."""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import pytest
from aws_cdk.assertions import Template
from conftest import new_stack
from loadproof import LagMonitor
from test_endpoint_benchmark_handler import HANDLE, FakeS3, invoker, run_config
from test_endpoint_benchmark_waiter import as_cloudformation

from cdk_sagemaker_llm import (
    Arrival,
    BenchmarkEngine,
    BenchmarkGate,
    BenchmarkLoad,
    EndpointBenchmark,
    GoodputSlo,
    PeakCapacity,
    RequestProtocol,
)
from cdk_sagemaker_llm.benchmarking import BenchmarkResult
from cdk_sagemaker_llm.benchmarking._clock import now
from cdk_sagemaker_llm.benchmarking.arrivals import achieved_rate
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig
from cdk_sagemaker_llm.constructs.benchmark_options import DEFAULT_WORKER_RATE_CAPACITY
from cdk_sagemaker_llm.constructs.inference_component import InferenceComponent
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.lambdas.benchmark.advance import advance_step
from cdk_sagemaker_llm.lambdas.benchmark.run_config import check_run, workers_of
from cdk_sagemaker_llm.lambdas.benchmark.run_names import EventError
from cdk_sagemaker_llm.lambdas.benchmark.worker import check_slice, run_worker


@pytest.fixture(autouse=True)
def dummy_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


LEAD_S = 0.5
"""How far ahead Advance schedules a level's start: time for the workers' threads to start even
on a busy machine (a late start is reported as skew, not measured as load)."""


def rate_run(**overrides: Any) -> dict[str, Any]:
    return run_config(
        **{"Mode": "rate", "Concurrencies": [], "Rates": [20, 40], "Arrival": "poisson",
           "Seed": 4, "WorkerRateCapacity": 15, "OutputTokens": 10, "RequestsPerLevel": 40,
           **overrides}
    )  # fmt: skip


def workflow(
    sim: Simulator, run: dict[str, Any], s3: FakeS3
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """What the state machine does: Advance, then the level's workers at once (one thread each,
    like the Map's iterations), until done."""
    signals: list[dict[str, Any]] = []
    maps: list[dict[str, Any]] = []
    state: dict[str, Any] = {"Run": run, "Levels": [], "Done": False}
    for _ in range(40):
        state = advance_step(
            state, s3=s3, put=lambda url, body: signals.append(dict(body)), now=now(), lead_s=LEAD_S
        )
        if state["Done"]:
            return state, signals, maps
        maps.append(state["Pending"])
        threads = [
            threading.Thread(
                target=run_worker,
                args=({"Run": run, "Slice": item},),
                kwargs={"invoker": invoker(sim), "s3": s3, "remaining_s": 600},
            )
            for item in state["Slices"]
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    raise AssertionError("the workflow did not finish")


ARRIVAL_ABS_S = 0.05
"""How much later than scheduled the server may see a request on an idle machine: the
worker's event loop waking, signing and sending it, behind the other requests of a Poisson
burst (a few milliseconds each); ``LagMonitor.allowance`` stretches it by this run's load."""


@pytest.mark.timing
def test_a_rate_sweep_splits_levels_across_workers_and_writes_the_cli_schema() -> None:
    config = SimulatorConfig(max_batch=8, step_base_s=0.004, step_per_sequence_s=0.0002)
    run = rate_run()
    s3 = FakeS3()
    with Simulator(config) as sim, LagMonitor() as monitor:
        state, signals, maps = workflow(sim, run, s3)
        truth = sim.truth()
    assert state["Outcome"] == "SUCCESS", signals
    assert [(m["Level"], m["Workers"]) for m in maps] == [(20, 2), (40, 3)]  # 15/s per worker
    assert len(truth) == 80 and all(r.outcome == "ok" for r in truth)
    results = s3.json(f"{run['Prefix']}results.json")
    parsed = BenchmarkResult.from_dict(results)
    assert parsed.mode == "rate" and parsed.open_loop and parsed.open_loop["seed"] == 4
    for level in parsed.levels:
        assert level.requests == 40 and level.target_rate_per_s in (20, 40)
        assert level.achieved_rate_per_s is not None and level.sustainable is not None
        assert level.p50_schedule_lag_s is not None and level.good_requests == 40
    assert {d["rate"]: d["workers"] for d in results["distribution"]} == {20: 2, 40: 3}
    assert results["goodput"]["sustainable_rate_per_s"] in (20, 40)
    assert results["knee"]["concurrency"] is None
    figures = json.loads(signals[0]["Data"])
    assert figures["SustainableRequestsPerSecond"] == results["goodput"]["sustainable_rate_per_s"]
    # The workers' shares make up one Poisson process of the level's rate (deterministic: the
    # seeded schedule itself), and the server saw each request when it was scheduled: the
    # i-th of the first 40 arrivals (the 20/s level) no earlier than the i-th scheduled send
    # and at most the idle bound later, stretched by what this run's load did (a late send
    # only delays, so sorted arrivals stay within that bound of the sorted schedule).
    scheduled = sorted(
        maps[0]["StartAt"] + offset
        for part in range(2)
        for offset in Arrival.poisson(seed=4).share(20, 40, part, 2)
    )
    assert achieved_rate(scheduled) == pytest.approx(20, rel=0.25)
    first = sorted(r.arrival for r in truth)[:40]
    late = [arrival - send for arrival, send in zip(first, scheduled, strict=True)]
    assert min(late) >= -0.002 and max(late) <= monitor.allowance(ARRIVAL_ABS_S), (
        max(late),
        monitor,
    )


@pytest.mark.timing
def test_a_knee_search_in_the_workflow_finds_the_simulators_batch() -> None:
    # Steps of 12 ms: a request of 8 tokens takes about 100 ms, so the client's own work
    # between requests (a few ms, stretched on a busy machine) costs concurrency 4 little of
    # its throughput, and 8 gains less than the rule's 25 % over it (with 4 ms steps, a loaded
    # run once found 8).
    config = SimulatorConfig(max_batch=4, step_base_s=0.012, step_per_sequence_s=0.0006)
    run = run_config(
        Concurrencies=[1, 64], Search="knee", OutputTokens=8, Rule={"MinGainPerDoubling": 0.25}
    )
    s3 = FakeS3()
    with Simulator(config) as sim, LagMonitor() as monitor:
        state, signals, maps = workflow(sim, run, s3)
        truth = sim.truth()
    assert state["Outcome"] == "SUCCESS"
    results = s3.json(f"{run['Prefix']}results.json")
    search = results["search"]
    assert [m["Level"] for m in maps] == search["levels_run"]
    assert search["levels_run"][:4] == [1, 2, 4, 8]
    assert search["found"] == results["knee"]["concurrency"]
    # batch 4: the knee of a full sweep; within one level when the monitor saw a loaded
    # machine (loadproof: the client, not the server, can then set the next level's gain)
    levels_off = abs(math.log2(search["found"] / 4))
    assert levels_off < 1 or (monitor.loaded and levels_off <= 1), (search, monitor)
    assert search["requests"] == len(truth) == sum(lv["requests"] for lv in results["levels"])
    full_sweep = sum(max(4 * c, 16) for c in (1, 2, 4, 8, 16, 32, 64))
    assert search["requests"] <= 0.5 * full_sweep
    assert json.loads(signals[0]["Data"])["KneeConcurrency"] == search["found"]


@pytest.mark.timing
def test_a_max_rate_search_gates_on_the_sustainable_rate() -> None:
    config = SimulatorConfig(
        max_batch=4, step_base_s=0.016, step_per_sequence_s=0.0008, max_queue=4
    )  # about 20 requests/s of 10 tokens; overload is throttled. Slow steps and low rates keep
    # the client's own work small beside them on a busy machine.
    run = rate_run(
        Rates=[5, 80], Search="max-rate", WorkerRateCapacity=50, Stream=True,
        Slo={"TtftMs": 800}, Gate={"MinSustainableRate": 1000},
    )  # fmt: skip
    s3 = FakeS3()
    with Simulator(config) as sim:
        state, signals, maps = workflow(sim, run, s3)
    assert state["Outcome"] == "FAILURE"
    results = s3.json(f"{run['Prefix']}results.json")
    found = results["goodput"]["sustainable_rate_per_s"]
    assert found is not None and 5 <= found <= 20
    assert results["search"]["found"] == found
    assert [m["Level"] for m in maps][:3] == [5, 10, 20]
    assert (
        "sustainable rate is" in signals[0]["Reason"] and "minimum of 1000" in signals[0]["Reason"]
    )
    assert results["gate"]["passed"] is False


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"Mode": "burst"}, "Run.Mode"),
        ({"Rates": []}, "Run.Rates"),
        ({"Rates": [10, 5]}, "increasing"),
        ({"Rates": [0]}, "above 0"),
        ({"Concurrencies": [1]}, "Run.Concurrencies: an open-loop run"),
        ({"Search": "knee"}, "knee searches concurrency"),
        ({"Search": "fastest"}, "Run.Search"),
        ({"Arrival": "bursty"}, "Run.Arrival"),
        ({"Seed": -1}, "Run.Seed"),
        ({"MaxConcurrency": 5000}, "Run.MaxConcurrency"),
        ({"Slo": {"TtftMs": 0}}, "Run.Slo.TtftMs"),
        ({"Slo": {"Fraction": 2}}, "Run.Slo.Fraction"),
        ({"Slo": {"P99": 1}}, "unknown properties"),
        ({"Rates": [100_000], "WorkerRateCapacity": 1}, "Run.WorkerRateCapacity"),
    ],
)
def test_malformed_open_loop_runs_are_rejected(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(EventError, match=message):
        rate_run(**overrides)


def test_a_searched_level_must_lie_in_the_range_and_a_swept_one_in_the_list() -> None:
    run = rate_run(Search="max-rate")
    assert check_slice({"Level": 27.5, "Workers": 2, "Worker": 1, "StartAt": 1}, run)
    with pytest.raises(EventError, match="not a level of this run"):
        check_slice({"Level": 50, "Workers": 4, "Worker": 0, "StartAt": 1}, run)
    with pytest.raises(EventError, match="not a level of this run"):
        check_slice({"Level": 27.5, "Workers": 2, "Worker": 0, "StartAt": 1}, rate_run())
    assert HANDLE.startswith("https://")


# ----- the construct ------------------------------------------------------------------------


def synth_run(**props: Any) -> tuple[dict[str, Any], dict[str, Any], EndpointBenchmark]:
    stack = new_stack()
    component = InferenceComponent.from_inference_component_name(
        stack, "Ic", inference_component_name="ic", endpoint_name="ep"
    )
    bench = EndpointBenchmark(stack, "Bench", inference_component=component, **props)
    template = Template.from_stack(stack).to_json()
    (custom,) = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "Custom::SageMakerEndpointBenchmark"
    ]
    return custom["Properties"]["Run"], custom["Metadata"]["cdk-sagemaker-llm:benchmark"], bench


def test_the_construct_runs_a_rate_sweep_its_handler_accepts() -> None:
    run, plan, bench = synth_run(
        load=BenchmarkLoad.request_rates(
            [5, 10, 250], arrival=Arrival.constant(), max_concurrency=300,
            slo=GoodputSlo(ttft_ms=500, fraction=0.9),
        ),
        gate=BenchmarkGate(min_sustainable_requests_per_s=8),
        protocol=RequestProtocol(stream=True),  # TTFT is measured on streamed responses
    )  # fmt: skip
    assert run["Mode"] == "rate" and run["Rates"] == [5, 10, 250] and run["Concurrencies"] == []
    assert (run["Arrival"], run["Seed"], run["MaxConcurrency"]) == ("constant", 0, 300)
    assert run["Slo"] == {"TtftMs": 500, "Fraction": 0.9}
    assert run["Gate"] == {"MinSustainableRate": 8}
    assert run["WorkerRateCapacity"] == DEFAULT_WORKER_RATE_CAPACITY
    assert bench.max_workers == 3  # 250/s at 100/s per worker
    assert plan["RequestRates"] == "5/s, 10/s, 250/s" and "constant" in plan["Arrival"]
    assert "sustainable rate >= 8/s" in plan["Gate"] and "TTFT <= 500 ms" in plan["Goodput"]
    assert plan["Workers"].startswith("up to 3")
    checked = check_run(
        {**run, "Name": "bench-1-abcdef", "HandleUrl": HANDLE, "Deadline": 1e9, "StartedAt": 1.0,
         "Bucket": "results", "Prefix": "p/bench-1-abcdef/"}
    )  # fmt: skip
    assert checked["Mode"] == "rate" and workers_of(checked, 250) == 3
    # CloudFormation hands the handler every scalar as a string.
    resolved = {**run, "Bucket": "results"}
    extra = {"Name": "bench-1-abcdef", "HandleUrl": HANDLE, "Deadline": 1e9, "StartedAt": 1.0,
             "Prefix": "p/bench-1-abcdef/"}  # fmt: skip
    assert check_run({**as_cloudformation(resolved), **extra}) == check_run({**resolved, **extra})
    assert isinstance(bench.sustainable_requests_per_second, float)


def test_the_construct_runs_searches_and_keeps_a_plain_sweeps_run_unchanged() -> None:
    plain, _, _ = synth_run()
    assert plain["Concurrencies"] == [1, 2, 4, 8, 16, 32]
    assert not {"Mode", "Rates", "Search", "Slo", "WorkerRateCapacity"} & set(plain)
    knee, plan, _ = synth_run(load=BenchmarkLoad.knee_search(low=1, high=256))
    assert (knee["Search"], knee["SearchResolution"], knee["Concurrencies"]) == (
        "knee",
        0.25,
        [1, 256],
    )
    assert plan["Search"].startswith("knee by bracketing")
    rates, _, _ = synth_run(load=BenchmarkLoad.max_rate_search(low=1, high=512))
    poisson, _, _ = synth_run(load=BenchmarkLoad.request_rates([1, 2]))
    assert (poisson["Arrival"], poisson["Seed"]) == ("poisson", 0)
    assert rates["Search"] == "max-rate" and "Slo" not in rates  # the handler's default: 95 %


@pytest.mark.parametrize(
    ("build", "prop"),
    [
        (lambda: BenchmarkLoad.request_rates([]), "BenchmarkLoad.request_rates(rates)"),
        (lambda: BenchmarkLoad.request_rates([0]), "BenchmarkLoad.request_rates(rates)[0]"),
        (lambda: BenchmarkLoad.request_rates([4, 2]), "BenchmarkLoad.request_rates(rates)"),
        (lambda: BenchmarkLoad.request_rates([1, "2"]), "BenchmarkLoad.request_rates(rates)[1]"),
        (lambda: BenchmarkLoad.concurrency(max_concurrency=4), "BenchmarkLoad.concurrency"),
        (lambda: BenchmarkLoad.concurrency(arrival=Arrival.poisson()), "BenchmarkLoad.concurrency"),
        (lambda: Arrival.poisson(seed=-1), "Arrival.poisson(seed)"),
        (lambda: Arrival.constant(seed=3), "Arrival.constant"),
        (
            lambda: BenchmarkLoad.request_rates([1], max_concurrency=0),
            "BenchmarkLoad.request_rates(max_concurrency)",
        ),
        (
            lambda: BenchmarkLoad.request_rates([1], arrival="poisson"),
            "BenchmarkLoad.request_rates(arrival)",
        ),
        (
            lambda: BenchmarkLoad.max_rate_search(low=8, high=1),
            "BenchmarkLoad.max_rate_search(high)",
        ),
        (lambda: BenchmarkLoad.knee_search(low=1, high=8.5), "BenchmarkLoad.knee_search(high)"),
        (
            lambda: BenchmarkLoad.knee_search(high=8, resolution=0),
            "BenchmarkLoad.knee_search(resolution)",
        ),
        (
            lambda: BenchmarkLoad.concurrency(slo={"ttft_ms": 5}),
            "BenchmarkLoad.concurrency(slo)",
        ),
        (
            lambda: BenchmarkLoad.concurrency(slo=GoodputSlo(fraction=0.8)),
            "BenchmarkLoad.concurrency(slo)",
        ),
        (
            lambda: BenchmarkLoad.knee_search(high=8, slo=GoodputSlo(ttft_ms=5, fraction=0.8)),
            "BenchmarkLoad.knee_search(slo).fraction",
        ),
        (
            lambda: BenchmarkLoad.request_rates([1], requests_per_level=1),
            "BenchmarkLoad.request_rates(requests_per_level)",
        ),
        (
            lambda: BenchmarkEngine.lambda_workers(worker_rate_capacity=0),
            "BenchmarkEngine.lambda_workers(worker_rate_capacity)",
        ),
    ],
)
def test_every_invalid_load_names_its_factory_argument(build: Any, prop: str) -> None:
    """A load is checked where it is written: combinations that mean nothing (an arrival
    process for concurrency levels) have no argument to write them with."""
    with pytest.raises(ValidationError) as raised:
        build()
    assert raised.value.prop == prop
    assert raised.value.fix


@pytest.mark.parametrize(
    ("props", "prop"),
    [
        (
            lambda: {
                "load": BenchmarkLoad.request_rates([10_000]),
                "engine": BenchmarkEngine.lambda_workers(worker_rate_capacity=100),
            },
            "BenchmarkEngine.lambda_workers(worker_rate_capacity)",
        ),
        (
            lambda: {
                "load": BenchmarkLoad.request_rates([1], max_concurrency=4096),
                "engine": BenchmarkEngine.lambda_workers(worker_capacity=16),
            },
            "BenchmarkEngine.lambda_workers(worker_capacity)",
        ),
        (
            lambda: {"gate": BenchmarkGate(min_sustainable_requests_per_s=1)},
            "gate.min_sustainable_requests_per_s",
        ),
        (
            lambda: {
                "load": BenchmarkLoad.request_rates([1]),
                "gate": BenchmarkGate(min_knee_concurrency=2),
            },
            "gate.min_knee_concurrency",
        ),
        (
            lambda: {
                "load": BenchmarkLoad.request_rates([1]),
                "gate": BenchmarkGate(peak=PeakCapacity.concurrency(8, max_copies=2)),
            },
            "gate.peak",
        ),
        (
            lambda: {
                "copies": 3,
                "gate": BenchmarkGate(peak=PeakCapacity.requests_per_second(8, max_copies=2)),
            },
            "gate.peak.max_copies",
        ),
    ],
)
def test_a_load_the_engine_or_gate_cannot_serve_names_the_prop(props: Any, prop: str) -> None:
    stack = new_stack()
    component = InferenceComponent.from_inference_component_name(
        stack, "Ic", inference_component_name="ic", endpoint_name="ep"
    )
    with pytest.raises(ValidationError) as raised:
        EndpointBenchmark(stack, "Bench", inference_component=component, **props())
    assert raised.value.prop == prop
    assert raised.value.fix


def test_a_peak_gate_reaches_the_run_the_handler_checks_and_plan_shows_it() -> None:
    run, plan, _ = synth_run(
        copies=2,
        gate=BenchmarkGate(peak=PeakCapacity.requests_per_second(6.5, max_copies=5)),
    )
    assert run["Gate"] == {"PeakRequestsPerS": 6.5, "MaxCopies": 5}
    assert plan["Gate"] == "measured capacity per copy x 5 copies >= peak 6.5 requests/s"
    resolved = {**run, "Bucket": "results"}
    extra = {"Name": "bench-1-abcdef", "HandleUrl": HANDLE, "Deadline": 1e9, "StartedAt": 1.0,
             "Prefix": "p/bench-1-abcdef/"}  # fmt: skip
    checked = check_run({**resolved, **extra})
    assert checked["Gate"]["PeakRequestsPerS"] == 6.5 and checked["Gate"]["MaxCopies"] == 5
    # CloudFormation hands the handler every scalar as a string.
    assert check_run({**as_cloudformation(resolved), **extra}) == checked
    run, _, _ = synth_run(
        load=BenchmarkLoad.knee_search(high=64),
        gate=BenchmarkGate(peak=PeakCapacity.concurrency(48, max_copies=4)),
    )
    assert run["Gate"] == {"PeakConcurrency": 48, "MaxCopies": 4}


@pytest.mark.parametrize(
    ("build", "prop"),
    [
        (lambda: PeakCapacity.requests_per_second(0, max_copies=2),
         "PeakCapacity.requests_per_second(peak)"),
        (lambda: PeakCapacity.requests_per_second(4, max_copies=0),
         "PeakCapacity.requests_per_second(max_copies)"),
        (lambda: PeakCapacity.concurrency(0, max_copies=2), "PeakCapacity.concurrency(peak)"),
        (lambda: PeakCapacity.concurrency(8, max_copies=10_001),
         "PeakCapacity.concurrency(max_copies)"),
    ],
)  # fmt: skip
def test_a_peak_gate_out_of_range_names_its_argument(build: Any, prop: str) -> None:
    with pytest.raises(ValidationError) as raised:
        build()
    assert raised.value.prop == prop and raised.value.fix
