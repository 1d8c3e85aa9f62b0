"""Load-generator efficiency: the asyncio invoker against a thread pool of blocking boto3 calls.

Starts the loopback simulator in its own process (so its CPU time is not the client's),
pins the client to one CPU, and runs the same closed-loop level with both clients:

* ``async``   — :class:`cdk_sagemaker_llm.benchmarking.AsyncInvoker` (one event loop, raw
  HTTP/1.1, botocore SigV4 signer);
* ``threads`` — :class:`cdk_sagemaker_llm.benchmarking.BotoInvoker`: a thread pool of blocking
  ``invoke_endpoint`` calls on one shared boto3 client with ``max_pool_connections`` equal to
  the concurrency (the approach of AWS's published benchmarking notebook).

For each it prints the client's p50 latency against the simulator's server-side ground truth
for the same requests (matched by request id) and the client's CPU seconds per 1,000 requests
(``getrusage`` user + system of the whole client process, all threads).

    .venv/bin/python benchmarks/load_generator.py [--concurrency 256] [--requests 1024]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("AWS_ACCESS_KEY_ID", "dummy")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "dummy")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import boto3
import simulator_process
from botocore.config import Config

from cdk_sagemaker_llm.benchmarking import (
    AsyncInvoker,
    BotoInvoker,
    PayloadSpec,
    percentile,
    run_level,
    summarize_level,
)
from cdk_sagemaker_llm.benchmarking.simulator import fetch_truth, reset_truth

REGION = "us-east-1"


def start_simulator(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    """The simulator in its own process, pinned to another CPU when there is one."""
    command = [
        sys.executable,
        "-m",
        "cdk_sagemaker_llm.benchmarking.simulator_cli",
        "--max-batch",
        str(args.concurrency),
        "--step-base-s",
        str(args.step_ms / 1000),
        "--step-per-sequence-s",
        "0.00002",
        "--default-max-new-tokens",
        str(args.output_tokens),
    ]
    return simulator_process.start(command, args.server_cpu)


def measure(
    name: str, invoker: Any, url: str, spec: PayloadSpec, args: argparse.Namespace
) -> dict[str, Any]:
    """One level with ``invoker``: client CPU, p50 latency vs ground truth."""
    # Warm up connections, code paths and the server.
    run_level(invoker, spec, args.concurrency, requests=args.concurrency)
    reset_truth(url)
    before = simulator_process.cpu_seconds()
    samples = run_level(invoker, spec, args.concurrency, requests=args.requests)
    cpu = simulator_process.cpu_seconds() - before
    truth = {record.request_id: record for record in fetch_truth(url)}
    level = summarize_level(samples, args.concurrency)
    matched = [
        (s, truth[s.request_id])
        for s in samples
        if s.ok and s.request_id is not None and s.request_id in truth
    ]
    client_p50 = percentile([s.latency_s for s, _ in matched], 50) or 0.0
    truth_p50 = percentile([record.latency_s or 0.0 for _, record in matched], 50) or 0.0
    result = {
        "client": name,
        "stream": spec.stream,
        "requests": level.requests,
        "errors": level.errors,
        "client_p50_latency_s": client_p50,
        "truth_p50_latency_s": truth_p50,
        "p50_error_pct": 100 * (client_p50 - truth_p50) / truth_p50 if truth_p50 else None,
        "cpu_s": cpu,
        "cpu_s_per_1000_requests": 1000 * cpu / max(1, level.requests),
        "output_tokens_per_s": level.output_tokens_per_s,
    }
    if spec.stream:
        ttft_client = percentile([s.ttft_s for s, _ in matched if s.ttft_s is not None], 50)
        ttft_truth = percentile(
            [record.ttft_s or 0.0 for s, record in matched if s.ttft_s is not None], 50
        )
        result["client_p50_ttft_s"] = ttft_client
        result["truth_p50_ttft_s"] = ttft_truth
    print(
        f"{name:8s} stream={spec.stream!s:5s} requests={level.requests} errors={level.errors} "
        f"p50 client {client_p50:.4f} s truth {truth_p50:.4f} s "
        f"(error {result['p50_error_pct']:+.2f} %)  "
        f"CPU {cpu:.2f} s = {result['cpu_s_per_1000_requests']:.2f} s / 1,000 requests",
        flush=True,
    )
    return result


def main() -> int:
    """Run both clients side by side and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--requests", type=int, default=1024, help="measured requests per run")
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--input-tokens", type=int, default=32)
    parser.add_argument("--step-ms", type=float, default=20.0, help="simulator decode step")
    parser.add_argument("--client-cpu", type=int, default=0, help="CPU the client is pinned to")
    parser.add_argument("--server-cpu", type=int, default=None, help="CPU for the simulator")
    parser.add_argument("--skip-stream", action="store_true")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    simulator_process.pin_client(args)
    process, url = start_simulator(args)
    print(
        f"simulator {url} (CPU {args.server_cpu}), client on CPU {args.client_cpu}, "
        f"concurrency {args.concurrency}, {args.requests} requests per run, "
        f"{args.input_tokens} in / {args.output_tokens} out tokens",
        flush=True,
    )
    results = []
    try:
        spec = PayloadSpec(input_tokens=args.input_tokens, output_tokens=args.output_tokens)
        async_invoker = AsyncInvoker("bench", region=REGION, endpoint_url=url)
        results.append(measure("async", async_invoker, url, spec, args))
        client = boto3.session.Session().client(
            "sagemaker-runtime",
            region_name=REGION,
            endpoint_url=url,
            config=Config(
                max_pool_connections=args.concurrency,
                retries={"total_max_attempts": 1, "mode": "adaptive"},
            ),
        )
        results.append(measure("threads", BotoInvoker("bench", client=client), url, spec, args))
        if not args.skip_stream:
            streamed = PayloadSpec(
                input_tokens=args.input_tokens, output_tokens=args.output_tokens, stream=True
            )
            results.append(measure("async", async_invoker, url, streamed, args))
            results.append(
                measure("threads", BotoInvoker("bench", client=client), url, streamed, args)
            )
    finally:
        process.terminate()
        process.wait(10)
    by_key = {(r["client"], r["stream"]): r for r in results}
    for stream in (False, True):
        fast, slow = by_key.get(("async", stream)), by_key.get(("threads", stream))
        if fast and slow:
            ratio = fast["cpu_s_per_1000_requests"] / slow["cpu_s_per_1000_requests"]
            print(
                f"stream={stream}: async uses {ratio:.2f}x the CPU of the thread pool per request"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
