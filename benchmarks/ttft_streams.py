"""Where "client TTFT - simulator TTFT" goes at many streams, per request.

    .venv/bin/python benchmarks/ttft_streams.py --streams 64 [--no-pin] [--first-token-at write]

The configuration of ``peers_truth.py`` (batch 512, 32 ms + 0.05 ms per sequence per decode
step, 64 input and 32 output tokens, OpenAI chat route, streamed), driven by this library's
engine in this process (CPU 1) against the simulator in its own (CPU 0), 4 requests per
stream. Matched by request id, each request's offset splits into:

* **send**: the client's start timestamp -> the simulator's arrival stamp (the request on the
  loopback, then waiting for the simulator's one event loop to read and parse it);
* **receive**: the simulator's first-token stamp -> the client's first-token timestamp (the
  simulator encoding and writing this step's chunks for every stream, the loopback, then the
  client's one event loop reading every stream's chunk).

Both processes stamp with ``_clock.now`` (the wall clock read once per process, then
``perf_counter``): the parts carry the two anchors' skew (microseconds), their sum does not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import simulator_process

from cdk_sagemaker_llm.benchmarking import PayloadSpec, run_level
from cdk_sagemaker_llm.benchmarking.openai_target import OpenAIInvoker
from cdk_sagemaker_llm.benchmarking.simulator import fetch_truth, reset_truth


def _p(values: list[float]) -> str:
    ordered = sorted(values)
    p10, p90 = ordered[len(ordered) // 10], ordered[9 * len(ordered) // 10]
    return f"{statistics.median(ordered) * 1000:.2f} ({p10 * 1000:.2f}-{p90 * 1000:.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[64])
    parser.add_argument("--no-pin", dest="pin", action="store_false")
    args = parser.parse_args()
    if args.pin:
        os.sched_setaffinity(0, {1})
    with simulator_process.running(
        simulator_process.PEERS_SIMULATOR, 0 if args.pin else None
    ) as url:
        invoker = OpenAIInvoker(f"{url}/v1")
        factory = PayloadSpec(64, 32, True, "messages").build()
        print(f"load average {os.getloadavg()[0]:.1f}; pinned: {args.pin}")
        print("| streams | client p50 TTFT ms | truth p50 ms | error | offset ms p50 (p10-p90) "
              "| send ms | receive ms |")  # fmt: skip
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for streams in args.streams:
            reset_truth(url)
            samples = run_level(invoker, factory, streams, requests=max(64, 4 * streams))
            truth = {r.request_id: r for r in fetch_truth(url)}
            send, receive, client, true = [], [], [], []
            for sample in samples:
                record = truth.get(sample.request_id or "")
                if record is None or sample.first_token is None or record.first_token is None:
                    continue
                send.append(record.arrival - sample.start)
                receive.append(sample.first_token - record.first_token)
                client.append(sample.first_token - sample.start)
                true.append(record.first_token - record.arrival)
            offset = [c - t for c, t in zip(client, true, strict=True)]
            c50, t50 = statistics.median(client) * 1000, statistics.median(true) * 1000
            print(f"| {streams} | {c50:.1f} | {t50:.1f} | {c50 / t50 - 1:+.1%} | {_p(offset)} "
                  f"| {_p(send)} | {_p(receive)} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
