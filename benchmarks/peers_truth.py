"""Each benchmark tool's p50 TTFT beside the simulator's truth, with what each tool costs.

    bash benchmarks/peers.sh 64 256 512   # installs the peers in their own venvs, then this

Starts the loopback simulator in its own process (batch 512, 32 ms + 0.05 ms per sequence per
decode step: 1 stream sees about 32 ms TTFT), then for each stream count runs this library's
``benchmark --target openai`` and each peer found under ``--peers`` (AIPerf ``profile``,
GuideLLM ``benchmark run``, vLLM ``bench serve``) at that concurrency against its
``/v1/chat/completions`` route, streamed, with 64 input and 32 output tokens, 4 requests per
stream (at least 64). With ``--pin`` (the default) the simulator runs on CPU 0 and each tool on
CPU 1 (``taskset``). For each run it prints:

* the tool's p50 TTFT, the truth's (the simulator's arrival -> first token of the same
  requests; warm-up requests a tool sends are in the truth too, the median shrugs them) and the
  error;
* the most requests the simulator held at once (arrival to end), and their time-weighted mean
  from the first arrival to the last end;
* the tool's CPU time (user + system, all its processes, start-up included) per 1,000 requests
  the simulator received;
* the tool's peak memory: the largest sum of proportional set sizes (PSS, shared pages split
  between the processes that share them) over its process tree, sampled every 0.2 s.

A peer that is not installed is skipped; a peer that fails is reported with its last output
line, not guessed. The peers' flags are those their ``--help`` prints: AIPerf 0.13.0,
GuideLLM 0.8.1, vLLM 0.33.0. The peers load a tokenizer from ``--tokenizer`` (a folder that
``peers_tokenizer.py`` writes: no network).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import simulator_process

from cdk_sagemaker_llm.benchmarking.simulator import TruthRecord, fetch_truth, reset_truth

MODEL = "simulated"
INPUT, OUTPUT = 64, 32


def requests_for(streams: int) -> int:
    return max(64, 4 * streams)


@dataclass
class Run:
    """One tool at one stream count: its command, and how to read its p50 TTFT (ms)."""

    command: list[str]
    p50_ttft_ms: Callable[[], float]
    env: dict[str, str] | None = None


def ours(url: str, streams: int, folder: Path, peers: Path, tokenizer: str) -> Run:
    out = folder / "ours.json"
    command = [
        sys.executable, "-m", "cdk_sagemaker_llm.cli", "benchmark", "--target", "openai",
        "--base-url", f"{url}/v1", "--model", MODEL, "--stream", "--concurrency", str(streams),
        "--input-tokens", str(INPUT), "--output-tokens", str(OUTPUT),
        "--requests-per-level", str(requests_for(streams)), "--out", str(out),
    ]  # fmt: skip
    return Run(command, lambda: json.loads(out.read_text())["levels"][0]["p50_ttft_s"] * 1000)


def aiperf(url: str, streams: int, folder: Path, peers: Path, tokenizer: str) -> Run:
    command = [
        str(peers / "aiperf/bin/aiperf"), "profile", "--model", MODEL, "--url", url,
        "--endpoint-type", "chat", "--streaming", "--concurrency", str(streams),
        "--request-count", str(requests_for(streams)), "--synthetic-input-tokens-mean",
        str(INPUT), "--output-tokens-mean", str(OUTPUT), "--tokenizer", tokenizer,
        "--artifact-dir", str(folder / "aiperf"),
    ]  # fmt: skip

    def read() -> float:
        (export,) = (folder / "aiperf").rglob("profile_export_aiperf.json")
        return float(json.loads(export.read_text())["time_to_first_token"]["p50"])

    return Run(command, read)


def guidellm(url: str, streams: int, folder: Path, peers: Path, tokenizer: str) -> Run:
    out = folder / "guidellm.json"
    command = [
        str(peers / "guidellm/bin/guidellm"), "run",
        "--backend", f"kind=openai_http,target={url},model={MODEL},validate_backend=false",
        "--profile", f"kind=concurrent,streams={streams}",
        "--constraint", f"kind=max_requests,count={requests_for(streams)}",
        "--tokenizer", f"kind=huggingface_auto,model={tokenizer}",
        "--data", f"kind=synthetic_text,prompt_tokens={INPUT},output_tokens={OUTPUT}",
        "--output", f"kind=json,path={out}", "--disable-console",
    ]  # fmt: skip

    def read() -> float:
        metrics = json.loads(out.read_text())["benchmarks"][0]["metrics"]
        return float(metrics["time_to_first_token_ms"]["successful"]["median"])

    return Run(command, read)


def vllm(url: str, streams: int, folder: Path, peers: Path, tokenizer: str) -> Run:
    command = [
        str(peers / "vllm/bin/vllm"), "bench", "serve", "--backend", "openai-chat",
        "--base-url", url, "--endpoint", "/v1/chat/completions", "--model", MODEL,
        "--tokenizer", tokenizer, "--dataset-name", "random",
        "--random-input-len", str(INPUT), "--random-output-len", str(OUTPUT),
        "--num-prompts", str(requests_for(streams)), "--max-concurrency", str(streams),
        "--save-result", "--result-dir", str(folder), "--result-filename", "vllm.json",
    ]  # fmt: skip
    return Run(command, lambda: json.loads((folder / "vllm.json").read_text())["median_ttft_ms"])


TOOLS: dict[str, Callable[[str, int, Path, Path, str], Run]] = {
    "cdk-sagemaker-llm": ours, "aiperf": aiperf, "guidellm": guidellm, "vllm bench serve": vllm,
}  # fmt: skip
INSTALLED = {"aiperf": "aiperf", "guidellm": "guidellm", "vllm bench serve": "vllm"}


# -- what a process tree costs -----------------------------------------------------------------


def _tree(root: int) -> list[int]:
    """``root`` and its descendants, from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += parents.get(pid, [])
    return found


def _pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class TreeSampler(threading.Thread):
    """Samples a process tree's PSS sum and each process's CPU time until stopped."""

    def __init__(self, root: int, interval_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.root, self.interval_s = root, interval_s
        self.peak_pss_kb = 0
        self.cpu_by_pid: dict[int, float] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            pids = _tree(self.root)
            self.peak_pss_kb = max(self.peak_pss_kb, sum(_pss_kb(pid) for pid in pids))
            for pid in pids:
                self.cpu_by_pid[pid] = max(self.cpu_by_pid.get(pid, 0.0), _cpu_s(pid))
            self.stopped.wait(self.interval_s)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_measured(
    run: Run, cpu: str | None
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Run ``run.command`` (on CPU ``cpu`` if given); returns its CPU seconds (the larger of
    the reaped children's rusage and the sampled tree), peak PSS MB and the finished process."""
    command = (["taskset", "-c", cpu] if cpu is not None else []) + run.command
    before = _children_cpu_s()
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, text=True)
        sampler = TreeSampler(process.pid)
        sampler.start()
        process.wait()
        sampler.stopped.set()
        sampler.join()
        output.seek(0)
        text = output.read()
    cpu_s = max(_children_cpu_s() - before, sum(sampler.cpu_by_pid.values()))
    done = subprocess.CompletedProcess(command, process.returncode, text, "")
    return cpu_s, sampler.peak_pss_kb / 1024, done


def in_flight(truth: list[TruthRecord]) -> tuple[int, float]:
    """The most requests the server held at once, and the time-weighted mean from the first
    arrival to the last end."""
    events = sorted(
        [(r.arrival, 1) for r in truth if r.end is not None]
        + [(r.end, -1) for r in truth if r.end is not None]
    )
    if not events:
        return 0, 0.0
    held = peak = 0
    area, last = 0.0, events[0][0]
    for t, step in events:
        area += held * (t - last)
        held, last = held + step, t
        peak = max(peak, held)
    span = events[-1][0] - events[0][0]
    return peak, area / span if span > 0 else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("streams", nargs="*", type=int, default=[64, 256, 512])
    parser.add_argument("--peers", default="benchmarks/.peers-venv", type=Path)
    parser.add_argument("--tokenizer", default="benchmarks/.peers-venv/tokenizer")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset")
    parser.add_argument("--no-pin", dest="pin", action="store_false",
                        help="run the simulator and the tools on any CPU")  # fmt: skip
    args = parser.parse_args()
    tokenizer = str(Path(args.tokenizer).resolve())
    chosen = args.tools.split(",")
    with simulator_process.running(
        simulator_process.PEERS_SIMULATOR, 0 if args.pin else None
    ) as url:
        print(f"load average before: {os.getloadavg()[0]:.1f}; pinned: {args.pin}")
        print("| tool | streams | p50 TTFT ms | truth p50 ms | error | peak in flight | "
              "mean in flight | CPU s / 1,000 req | peak PSS MB |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for streams in args.streams:
            for name, tool in TOOLS.items():
                venv = INSTALLED.get(name)
                if name not in chosen:
                    continue
                if venv is not None and not (args.peers / venv / "bin/python").exists():
                    continue
                reset_truth(url)
                with tempfile.TemporaryDirectory() as folder:
                    run = tool(url, streams, Path(folder), args.peers.resolve(), tokenizer)
                    cpu_s, pss_mb, done = run_measured(run, "1" if args.pin else None)
                    try:
                        if done.returncode:
                            raise RuntimeError(f"exit {done.returncode}")
                        measured = run.p50_ttft_ms()
                    except (RuntimeError, KeyError, ValueError, OSError) as error:
                        tail = done.stdout.strip().splitlines()[-3:]
                        print(f"| {name} | {streams} | failed: {error}: {' / '.join(tail)} |")
                        continue
                records = fetch_truth(url)
                truth = [r.ttft_s for r in records if r.outcome == "ok" and r.ttft_s]
                true = statistics.median(truth) * 1000 if truth else float("nan")
                peak, mean = in_flight(records)
                per_1000 = cpu_s / max(1, len(records)) * 1000
                print(f"| {name} | {streams} | {measured:.1f} | {true:.1f} | "
                      f"{measured / true - 1:+.1%} | {peak} | {mean:.0f} | {per_1000:.1f} | "
                      f"{pss_mb:.0f} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
