"""Each benchmark tool's p50 TTFT beside the simulator's truth for the same requests.

    bash benchmarks/peers.sh            # installs the peers in their own venvs, then runs this

Starts the loopback simulator in its own process (batch 256, 32 ms + 0.05 ms per sequence per
decode step: 1 stream sees about 32 ms TTFT), then for each stream count runs this library's
``benchmark --target openai`` and each peer found under ``--peers`` (AIPerf ``profile``,
GuideLLM ``benchmark``, vLLM ``bench serve``) at that concurrency against its
``/v1/chat/completions`` route, with 64 input and 32 output tokens, and prints the tool's p50
TTFT, the truth's (the simulator's arrival -> first token of the same requests) and the error.
A peer that is not installed is skipped; a peer's output that cannot be read is reported with
its file, not guessed. Peer flags are those of AIPerf 0.13, GuideLLM 0.8 and vLLM 0.33.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cdk_sagemaker_llm.benchmarking.simulator import fetch_truth, reset_truth

MODEL = "simulated"
INPUT, OUTPUT = 64, 32


def requests_for(streams: int) -> int:
    return max(64, 4 * streams)


def ours(url: str, streams: int, folder: Path, peers: Path) -> float | None:
    out = folder / "ours.json"
    subprocess.run(
        [sys.executable, "-m", "cdk_sagemaker_llm.cli", "benchmark", "--target", "openai",
         "--base-url", f"{url}/v1", "--model", MODEL, "--stream", "--concurrency", str(streams),
         "--input-tokens", str(INPUT), "--output-tokens", str(OUTPUT),
         "--requests-per-level", str(requests_for(streams)), "--out", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    return json.loads(out.read_text())["levels"][0]["p50_ttft_s"] * 1000


def aiperf(url: str, streams: int, folder: Path, peers: Path) -> float | None:
    subprocess.run(
        [str(peers / "aiperf/bin/aiperf"), "profile", "--model", MODEL, "--url", url,
         "--endpoint-type", "chat", "--streaming", "--concurrency", str(streams),
         "--request-count", str(requests_for(streams)), "--synthetic-input-tokens-mean",
         str(INPUT), "--output-tokens-mean", str(OUTPUT), "--tokenizer",
         os.environ.get("TOKENIZER", "gpt2"), "--artifact-dir", str(folder / "aiperf")],
        check=True, capture_output=True,
    )  # fmt: skip
    (export,) = (folder / "aiperf").rglob("profile_export_aiperf.json")
    return float(json.loads(export.read_text())["time_to_first_token"]["p50"])


def guidellm(url: str, streams: int, folder: Path, peers: Path) -> float | None:
    out = folder / "guidellm.json"
    subprocess.run(
        [str(peers / "guidellm/bin/guidellm"), "benchmark", "--target", url, "--model", MODEL,
         "--profile", "concurrent", "--rate", str(streams), "--max-requests",
         str(requests_for(streams)), "--data", f"prompt_tokens={INPUT},output_tokens={OUTPUT}",
         "--processor", os.environ.get("TOKENIZER", "gpt2"), "--output-path", str(out)],
        check=True, capture_output=True,
    )  # fmt: skip
    metrics = json.loads(out.read_text())["benchmarks"][0]["metrics"]
    return float(metrics["time_to_first_token_ms"]["successful"]["median"])


def vllm(url: str, streams: int, folder: Path, peers: Path) -> float | None:
    subprocess.run(
        [str(peers / "vllm/bin/vllm"), "bench", "serve", "--backend", "openai-chat",
         "--base-url", url, "--endpoint", "/v1/chat/completions", "--model", MODEL,
         "--tokenizer", os.environ.get("TOKENIZER", "gpt2"), "--dataset-name", "random",
         "--random-input-len", str(INPUT), "--random-output-len", str(OUTPUT),
         "--num-prompts", str(requests_for(streams)), "--max-concurrency", str(streams),
         "--save-result", "--result-dir", str(folder), "--result-filename", "vllm.json"],
        check=True, capture_output=True,
    )  # fmt: skip
    return float(json.loads((folder / "vllm.json").read_text())["median_ttft_ms"])


TOOLS: dict[str, Callable[[str, int, Path, Path], float | None]] = {
    "cdk-sagemaker-llm": ours, "aiperf": aiperf, "guidellm": guidellm, "vllm bench serve": vllm,
}  # fmt: skip
INSTALLED = {"aiperf": "aiperf", "guidellm": "guidellm", "vllm bench serve": "vllm"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("streams", nargs="*", type=int, default=[1, 64, 256])
    parser.add_argument("--peers", default="benchmarks/.peers-venv", type=Path)
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-m", "cdk_sagemaker_llm.benchmarking.simulator", "--max-batch",
         "256", "--step-base-s", "0.032", "--step-per-sequence-s", "0.00005"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        print("| tool | streams | p50 TTFT ms | truth p50 ms | error |")
        print("|---|---:|---:|---:|---:|")
        for streams in args.streams:
            for name, tool in TOOLS.items():
                venv = INSTALLED.get(name)
                if venv is not None and not (args.peers / venv / "bin/python").exists():
                    continue
                reset_truth(url)
                with tempfile.TemporaryDirectory() as folder:
                    try:
                        measured = tool(url, streams, Path(folder), args.peers)
                    except (subprocess.CalledProcessError, KeyError, ValueError, OSError) as error:
                        print(f"| {name} | {streams} | failed: {error} | | |")
                        continue
                truth = [r.ttft_s for r in fetch_truth(url) if r.outcome == "ok" and r.ttft_s]
                # Warm-ups and probes a tool sends are in the truth too; the median shrugs them.
                true = statistics.median(truth) * 1000 if truth else None
                error = f"{(measured / true - 1):+.1%}" if measured and true else "-"
                shown = f"{measured:.1f}" if measured else "-"
                print(f"| {name} | {streams} | {shown} | {true:.1f} | {error} |")
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
