"""Live benchmark progress: a status line within each level on a terminal, plain lines in logs."""

from __future__ import annotations

import io

import pytest

from cdk_sagemaker_llm.benchmarking import BenchmarkLoad, run_benchmark
from cdk_sagemaker_llm.benchmarking.invokers import AsyncInvoker
from cdk_sagemaker_llm.benchmarking.payload import PayloadSpec
from cdk_sagemaker_llm.benchmarking.progress import ERASE_LINE, LiveProgress
from cdk_sagemaker_llm.benchmarking.samples import RequestSample
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _sample(error: str | None = None) -> RequestSample:
    sample = RequestSample(start=0.0, end=1.0)
    sample.error = error
    return sample


def test_a_terminal_sees_requests_errors_and_elapsed_within_a_level() -> None:
    terminal = _Terminal()
    progress = LiveProgress(terminal, redraw_s=0.0)
    progress.line("concurrency 4: 16 requests ...")
    progress.record(_sample())
    progress.record(_sample("throttling"))
    assert "2 requests done, 1 errors" in terminal.getvalue()
    assert "s elapsed" in terminal.getvalue()
    progress.line("concurrency 4: 16 requests, 1 errors")
    # the status line is erased before the level's summary, and counters start again
    assert terminal.getvalue().endswith(f"{ERASE_LINE}concurrency 4: 16 requests, 1 errors\n")
    assert progress.status().startswith("0 requests done, 0 errors")


def test_redraws_are_rate_limited() -> None:
    terminal = _Terminal()
    progress = LiveProgress(terminal, redraw_s=3600)
    progress.line("level")
    for _ in range(50):
        progress.record(_sample())
    assert terminal.getvalue().count(ERASE_LINE) == 1


def test_a_log_gets_only_plain_lines() -> None:
    log = io.StringIO()  # not a terminal
    progress = LiveProgress(log)
    progress.line("concurrency 1: 4 requests ...")
    progress.record(_sample())
    progress.line("concurrency 1: 4 requests, 0 errors")
    assert log.getvalue() == "concurrency 1: 4 requests ...\nconcurrency 1: 4 requests, 0 errors\n"


@pytest.mark.loopback
def test_the_invoker_reports_every_request_of_a_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    terminal = _Terminal()
    progress = LiveProgress(terminal, redraw_s=0.0)
    config = SimulatorConfig(response_format="tgi", max_batch=2, step_base_s=0.001)
    with Simulator(config) as sim:
        invoker = AsyncInvoker("ep", region="us-west-2", endpoint_url=sim.endpoint_url)
        invoker.on_sample = progress.record
        run_benchmark(
            invoker,
            PayloadSpec(input_tokens=4, output_tokens=4),
            BenchmarkLoad.concurrency([1, 2], requests_per_level=5),
            progress=progress.line,
        )
    text = terminal.getvalue()
    assert "5 requests done, 0 errors" in text  # the last redraw of each level
    assert text.count("1 requests done") == 3  # warm-up and both levels start from zero
