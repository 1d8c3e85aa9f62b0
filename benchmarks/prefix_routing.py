"""Prefix-aware routing on the loopback simulator: a shared-prefix workload against several
instances with prefix caches, routed least-outstanding or prefix-aware.

    .venv/bin/python benchmarks/prefix_routing.py [--instances 4] [--concurrency 1,8]

For each routing strategy and concurrency it runs ``Workload.shared_prefix`` (8 prefixes of
1,024 tokens, 16 requests each, 32 unique tokens) streaming, and prints the cached prompt
tokens (the simulator's truth), the prefill tokens left and the measured TTFT. The simulator
charges 50 µs per prefilled token, so TTFT follows the prefill saved. A model of a server, not
a measurement of SageMaker: it shows what the benchmark reports, and that the header reaches the
server.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("AWS_ACCESS_KEY_ID", "dummy")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "dummy")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cdk_sagemaker_llm import BenchmarkLoad, RequestProtocol, Workload
from cdk_sagemaker_llm.benchmarking import AsyncInvoker, PayloadSpec, run_benchmark
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--instances", type=int, default=4)
    parser.add_argument("--concurrency", default="1,8")
    args = parser.parse_args()
    workload = Workload.shared_prefix(
        prefixes=8, prefix_tokens=1024, requests_per_prefix=16, suffix_tokens=32, output_tokens=8
    )
    spec = PayloadSpec.of(workload, RequestProtocol(stream=True, prefix_aware_id="bench"))
    print("| routing | concurrency | cached prompt tokens | prefilled tokens | p50 TTFT ms |"
          " p90 TTFT ms |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for routing in ("least_outstanding", "prefix_aware"):
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            config = SimulatorConfig(
                instances=args.instances, routing=routing, prefix_cache_blocks=100_000,
                prefill_per_input_token_s=5e-5, max_batch=8,
            )  # fmt: skip
            with Simulator(config) as sim:
                invoker = AsyncInvoker("ep", region="us-east-1", endpoint_url=sim.endpoint_url)
                result = run_benchmark(
                    invoker, spec, BenchmarkLoad.concurrency([concurrency], requests_per_level=128),
                    warmup_requests=0,
                )  # fmt: skip
                truth = sim.truth()
            level = result.levels[0]
            cached = sum(r.cached_tokens for r in truth)
            prefilled = sum(r.input_tokens - r.cached_tokens for r in truth)
            print(
                f"| {routing} | {concurrency} | {cached} | {prefilled} | "
                f"{(level.p50_ttft_s or 0) * 1000:.1f} | {(level.p90_ttft_s or 0) * 1000:.1f} |"
            )


if __name__ == "__main__":
    main()
