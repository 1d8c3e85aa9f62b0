"""Worker capacity: how much load one 1-vCPU worker (the EndpointBenchmark Lambda's size) drives
while still measuring what the server does.

Starts the loopback simulator in its own process (pinned to another CPU when there is one),
pins the client to one CPU, and measures with the asyncio client, streaming:

1. **Closed loop**: at each concurrency (default 64 ... 512), the client's p50 latency and p50
   TTFT against the simulator's server-side ground truth for the same requests (matched by
   request id). The worker capacity is the highest concurrency whose p50 latency error is
   within 2 % and p50 TTFT error within 5 %.
2. **Open loop**: at each request rate (default 50, 100, 200 requests/s, Poisson), the schedule
   lag of sends (p50, p99), the achieved rate, and the same errors against the truth.

The simulator never queues (its batch holds every request). It records each token's time as
the moment that request's bytes are written (``WireTimeSimulator``), not the end of the decode
step: a step of 512 streams takes the simulator itself milliseconds to write out, which is the
server's cost, not the client's. The error left is loopback plus the client's own overhead
(event-loop delay, event-stream decoding, JSON parsing).

    .venv/bin/python benchmarks/worker_capacity.py [--concurrency 64,128,256,384,512]
        [--rates 50,100,200] [--seconds 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("AWS_ACCESS_KEY_ID", "dummy")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "dummy")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import simulator_process

from cdk_sagemaker_llm.benchmarking import (
    AsyncInvoker,
    PayloadSpec,
    RequestSample,
    percentile,
    run_level,
)
from cdk_sagemaker_llm.benchmarking._clock import now
from cdk_sagemaker_llm.benchmarking.arrivals import schedule
from cdk_sagemaker_llm.benchmarking.open_loop import run_rate_level, summarize_rate_level
from cdk_sagemaker_llm.benchmarking.simulator import (
    Simulator,
    SimulatorConfig,
    TruthRecord,
    fetch_truth,
    reset_truth,
)

REGION = "us-east-1"
MAX_P50_ERROR_PCT = 2.0
MAX_TTFT_ERROR_PCT = 5.0


class WireTimeSimulator(Simulator):
    """The simulator, each token timed when its request's bytes are written (see above)."""

    def _emit_token(self, request: Any, t: float) -> bool:
        return super()._emit_token(request, now())


def serve(step_ms: float, output_tokens: int) -> None:
    """Run a ``WireTimeSimulator`` that never queues; print its URL on the first line."""
    config = SimulatorConfig(
        max_batch=100_000,
        step_base_s=step_ms / 1000,
        step_per_sequence_s=0.0,
        prefill_per_input_token_s=0.0,
        default_max_new_tokens=output_tokens,
    )
    simulator = WireTimeSimulator(config)

    async def run() -> None:
        await simulator.serve()
        print(simulator.endpoint_url, flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


def start_simulator(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    """The simulator in its own process, pinned to its own CPU when there is one."""
    command = [
        sys.executable, __file__, "--serve", "--step-ms", str(args.step_ms),
        "--output-tokens", str(args.output_tokens),
    ]  # fmt: skip
    return simulator_process.start(command, args.server_cpu)


def errors_against_truth(samples: list[RequestSample], truth: list[TruthRecord]) -> dict[str, Any]:
    """Client p50 latency and TTFT against the server's, for the same requests."""
    by_id = {record.request_id: record for record in truth}
    matched = [
        (s, by_id[s.request_id])
        for s in samples
        if s.ok and s.request_id is not None and s.request_id in by_id and s.ttft_s is not None
    ]
    client_p50 = percentile([s.latency_s for s, _ in matched], 50) or 0.0
    truth_p50 = percentile([record.latency_s or 0.0 for _, record in matched], 50) or 0.0
    client_ttft = percentile([s.ttft_s or 0.0 for s, _ in matched], 50) or 0.0
    truth_ttft = percentile([record.ttft_s or 0.0 for _, record in matched], 50) or 0.0
    return {
        "requests": len(samples),
        "errors": sum(1 for s in samples if not s.ok),
        "client_p50_latency_s": client_p50,
        "truth_p50_latency_s": truth_p50,
        "p50_error_pct": 100 * (client_p50 - truth_p50) / truth_p50 if truth_p50 else None,
        "client_p50_ttft_s": client_ttft,
        "truth_p50_ttft_s": truth_ttft,
        "ttft_error_pct": 100 * (client_ttft - truth_ttft) / truth_ttft if truth_ttft else None,
    }


def closed_loop(
    invoker: AsyncInvoker, url: str, spec: PayloadSpec, concurrency: int, args: argparse.Namespace
) -> dict[str, Any]:
    run_level(invoker, spec, concurrency, requests=concurrency)  # connections, code paths
    reset_truth(url)
    before = simulator_process.cpu_seconds()
    samples = run_level(invoker, spec, concurrency, requests=args.rounds * concurrency)
    cpu = simulator_process.cpu_seconds() - before
    result = {
        "concurrency": concurrency,
        "cpu_s": cpu,
        **errors_against_truth(samples, fetch_truth(url)),
    }
    result["within_limits"] = bool(
        result["errors"] == 0
        and result["p50_error_pct"] is not None
        and abs(result["p50_error_pct"]) <= MAX_P50_ERROR_PCT
        and result["ttft_error_pct"] is not None
        and abs(result["ttft_error_pct"]) <= MAX_TTFT_ERROR_PCT
    )
    print(
        f"closed loop c={concurrency:5d}: {result['requests']} requests, {result['errors']} "
        f"errors, p50 {result['client_p50_latency_s']:.4f} s vs truth "
        f"{result['truth_p50_latency_s']:.4f} s ({result['p50_error_pct']:+.2f} %), TTFT p50 "
        f"{1000 * result['client_p50_ttft_s']:.2f} ms vs {1000 * result['truth_p50_ttft_s']:.2f}"
        f" ms ({result['ttft_error_pct']:+.2f} %), CPU {cpu:.1f} s"
        f"{'' if result['within_limits'] else '  OVER LIMITS'}",
        flush=True,
    )
    return result


def open_loop(
    invoker: AsyncInvoker, url: str, spec: PayloadSpec, rate: float, args: argparse.Namespace
) -> dict[str, Any]:
    run_rate_level(invoker, spec, schedule(rate, max(8, int(rate)), seed=1))  # warm-up (1 s)
    reset_truth(url)
    count = int(rate * args.seconds)
    samples = run_rate_level(invoker, spec, schedule(rate, count, seed=args.seed))
    level = summarize_rate_level(samples, rate)
    result = {
        "rate": rate,
        "achieved_rate_per_s": level.achieved_rate_per_s,
        "p50_schedule_lag_ms": 1000 * (level.p50_schedule_lag_s or 0.0),
        "p99_schedule_lag_ms": 1000 * (level.p99_schedule_lag_s or 0.0),
        "peak_in_flight": level.concurrency,
        **errors_against_truth(samples, fetch_truth(url)),
    }
    print(
        f"open loop {rate:5g}/s: {result['requests']} requests, achieved "
        f"{result['achieved_rate_per_s']:.2f}/s, schedule lag p50 "
        f"{result['p50_schedule_lag_ms']:.2f} ms p99 {result['p99_schedule_lag_ms']:.2f} ms, "
        f"peak in flight {result['peak_in_flight']}, p50 error {result['p50_error_pct']:+.2f} %, "
        f"TTFT error {result['ttft_error_pct']:+.2f} %",
        flush=True,
    )
    return result


def main() -> int:
    """Measure and print; the capacity line summarizes the closed-loop part."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--concurrency", default="64,128,256,384,512")
    parser.add_argument("--rounds", type=int, default=2, help="requests per level / concurrency")
    parser.add_argument("--rates", default="50,100,200")
    parser.add_argument("--seconds", type=float, default=5.0, help="per open-loop level")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--input-tokens", type=int, default=32)
    parser.add_argument("--step-ms", type=float, default=50.0, help="simulator decode step")
    parser.add_argument("--client-cpu", type=int, default=0)
    parser.add_argument("--server-cpu", type=int, default=None)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.step_ms, args.output_tokens)
        return 0
    simulator_process.pin_client(args)
    process, url = start_simulator(args)
    print(
        f"simulator {url} (CPU {args.server_cpu}), client on CPU {args.client_cpu}; streaming "
        f"{args.input_tokens} in / {args.output_tokens} out tokens, {args.step_ms:g} ms steps",
        flush=True,
    )
    spec = PayloadSpec(
        input_tokens=args.input_tokens, output_tokens=args.output_tokens, stream=True
    )
    invoker = AsyncInvoker("bench", region=REGION, endpoint_url=url)
    figures: dict[str, Any] = {"closed_loop": [], "open_loop": []}
    try:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            figures["closed_loop"].append(closed_loop(invoker, url, spec, concurrency, args))
        for rate in (float(r) for r in args.rates.split(",")):
            figures["open_loop"].append(open_loop(invoker, url, spec, rate, args))
    finally:
        process.terminate()
        process.wait(10)
    within = [r["concurrency"] for r in figures["closed_loop"] if r["within_limits"]]
    capacity = 0
    for result in figures["closed_loop"]:  # the highest level below the first one over limits
        if not result["within_limits"]:
            break
        capacity = result["concurrency"]
    figures["capacity"] = capacity
    print(
        f"worker capacity: {capacity} concurrent streams within {MAX_P50_ERROR_PCT:g} % p50 and "
        f"{MAX_TTFT_ERROR_PCT:g} % TTFT error (levels within limits: {within})"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
