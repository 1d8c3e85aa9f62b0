"""The deploy-time benchmark's peak gate: after the sweep, the measured capacity of one copy
times the most copies autoscaling allows must serve the declared peak, or the wait condition
gets FAILURE with the measured knee, the most copies, the peak and what to change.

The Advance handler runs each step against S3 under moto (every call checked against
botocore's service model by ``conftest``), on worker samples whose throughput is known: two
requests/s at concurrency 2, no more at 4 (the knee is 2, tripped at 4 by throughput).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from test_endpoint_benchmark_handler import run_config

from cdk_sagemaker_llm.benchmarking import RequestSample
from cdk_sagemaker_llm.lambdas.benchmark.advance import advance_step, plan_level
from cdk_sagemaker_llm.lambdas.benchmark.run_config import results_key, samples_key
from cdk_sagemaker_llm.lambdas.benchmark.run_names import EventError

OUTPUT_TOKENS = 20
SECONDS_PER_REQUEST = {1: 1.0, 2: 1.0, 4: 2.0}
"""Each level's request duration: 1, 2, 2 requests/s at concurrency 1, 2, 4."""
SPAN_S = 4.0


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="results")
        yield client


def level_samples(concurrency: int) -> bytes:
    """``concurrency`` closed-loop streams, each sending requests back to back for 4 s."""
    seconds = SECONDS_PER_REQUEST[concurrency]
    samples = [
        RequestSample(
            start=100.0 + k * seconds, end=100.0 + (k + 1) * seconds, output_tokens=OUTPUT_TOKENS
        ).to_dict()
        for _ in range(concurrency)
        for k in range(int(SPAN_S / seconds))
    ]
    return json.dumps({"samples": samples, "late_s": 0.0}).encode()


def sweep(s3: Any, copies: int = 1, rule: dict[str, Any] | None = None, **gate: Any) -> Any:
    """Run Advance over the sweep 1, 2, 4 (one worker each) and return the signal sent."""
    run = run_config(
        Concurrencies=[1, 2, 4],
        Copies=copies,
        Rule=rule or {"MinGainPerDoubling": 0.1},
        Gate=gate,
        Deadline=10_000.0,
        StartedAt=1.0,
    )
    for level in (1, 2, 4):
        key = f"{samples_key(run, level, 0)}.json"
        s3.put_object(Bucket="results", Key=key, Body=level_samples(level))
    signals: list[dict[str, Any]] = []
    state: dict[str, Any] = {"Run": run, "Levels": [], "Done": False, **plan_level(run, 1, 50.0)}
    while not state["Done"]:
        state = advance_step(
            state, s3=s3, put=lambda url, body: signals.append(dict(body)), now=200.0, lead_s=0.0
        )
    (signal,) = signals
    results = s3.get_object(Bucket="results", Key=results_key(run, "results.json"))
    return signal, json.loads(results["Body"].read())


def test_a_peak_the_knee_cannot_serve_at_the_most_copies_fails_with_the_figures(s3: Any) -> None:
    signal, results = sweep(s3, PeakRequestsPerS=5, MaxCopies=2)
    assert results["knee"]["concurrency"] == 2 and results["knee"]["tripped_at"] == 4
    assert signal["Status"] == "FAILURE"
    reason = signal["Reason"]
    assert (
        "the measured capacity at the most copies cannot serve the peak: 2 requests/s per copy "
        "(the knee, concurrency 2 over 1 copies: 2 requests/s) x 2 copies (the most "
        "autoscaling allows) = 4 requests/s, below the peak of 5 requests/s" in reason
    )
    assert "to at least 3 copies, choose a bigger instance type, or relax the SLO" in reason
    assert "max_instance_count" in reason
    assert results["gate"]["passed"] is False
    assert results["gate"]["limits"]["PeakRequestsPerS"] == 5


def test_a_peak_the_knee_serves_at_the_most_copies_passes(s3: Any) -> None:
    signal, results = sweep(s3, PeakRequestsPerS=5, MaxCopies=3)
    assert signal["Status"] == "SUCCESS"
    assert results["gate"] == {
        "limits": {
            "MaxP50MsPerToken": None, "MaxP50TtftMs": None, "MaxErrorRate": None,
            "MinKneeConcurrency": None, "MinOutputTokensPerS": None, "MinSustainableRate": None,
            "PeakRequestsPerS": 5, "PeakConcurrency": None, "MaxCopies": 3,
        },
        "passed": True,
        "failures": [],
    }  # fmt: skip


def test_a_peak_in_flight_is_served_at_the_knee_concurrency_per_copy(s3: Any) -> None:
    # Two copies ran the sweep: the knee of 2 in flight is 1 per copy, the autoscaling target.
    signal, _ = sweep(s3, copies=2, PeakConcurrency=4, MaxCopies=3)
    assert signal["Status"] == "FAILURE"
    assert (
        "1 requests in flight per copy (the knee, concurrency 2 over 2 copies) x 3 copies (the "
        "most autoscaling allows) = 3 requests in flight, below the peak of 4 requests in "
        "flight" in signal["Reason"]
    )
    assert "to at least 4 copies" in signal["Reason"]
    signal, _ = sweep(s3, copies=2, PeakConcurrency=4, MaxCopies=4)
    assert signal["Status"] == "SUCCESS"


def test_no_knee_is_no_capacity_and_a_lower_bound_serves_only_when_it_reaches(s3: Any) -> None:
    # An SLO the lowest level misses: no knee, so nothing serves the peak.
    signal, _ = sweep(s3, rule={"MinGainPerDoubling": 0.1, "SloMsPerToken": 10}, PeakRequestsPerS=1,
                      MaxCopies=8)  # fmt: skip
    assert signal["Status"] == "FAILURE"
    assert "no knee: even the lowest level trips the rule (slo)" in signal["Reason"]
    # No level trips (gain 0 allowed): the knee, 4, is a lower bound at 2 requests/s.
    rule = {"MinGainPerDoubling": 0.0}
    signal, _ = sweep(s3, rule=rule, PeakRequestsPerS=4, MaxCopies=2)
    assert signal["Status"] == "SUCCESS"  # the bound already serves the peak
    signal, _ = sweep(s3, rule=rule, PeakRequestsPerS=5, MaxCopies=2)
    assert signal["Status"] == "FAILURE"
    assert (
        "the capacity at the peak is unknown: at least 2 requests/s per copy" in (signal["Reason"])
    )


@pytest.mark.parametrize(
    ("gate", "message"),
    [
        ({"PeakRequestsPerS": 5}, "MaxCopies goes with a peak"),
        ({"MaxCopies": 2}, "MaxCopies goes with a peak"),
        ({"PeakRequestsPerS": 5, "PeakConcurrency": 4, "MaxCopies": 2}, "expected one of"),
        ({"PeakConcurrency": 0, "MaxCopies": 2}, "PeakConcurrency: expected an integer"),
        ({"PeakRequestsPerS": 0, "MaxCopies": 2}, "a peak rate is above 0"),
        ({"PeakRequestsPerS": 5, "MaxCopies": 10_001}, "MaxCopies: expected an integer"),
    ],
)
def test_a_malformed_peak_gate_is_refused(gate: dict[str, Any], message: str) -> None:
    with pytest.raises(EventError, match=message):
        run_config(Gate=gate)
