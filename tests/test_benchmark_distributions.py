"""Full distributions (p1 ... p99.9, mean, std) with the peer tools' definitions, and the CSV
and per-request JSONL exports of the CLI and of ``report``."""

from __future__ import annotations

import csv
import json
import math
import statistics
from pathlib import Path

import pytest

from cdk_sagemaker_llm.benchmarking import RequestSample, summarize_level
from cdk_sagemaker_llm.benchmarking.distributions import (
    METRICS,
    PERCENTILES,
    distribution,
    level_distributions,
)
from cdk_sagemaker_llm.benchmarking.exports import csv_columns, levels_csv, requests_jsonl
from cdk_sagemaker_llm.benchmarking.payload import StreamParser
from cdk_sagemaker_llm.benchmarking.simulator import Simulator, SimulatorConfig
from cdk_sagemaker_llm.cli import main


def test_statistics_are_numpys_defaults() -> None:
    stats = distribution(float(v) for v in range(1, 101))
    assert stats is not None and stats["count"] == 100
    assert stats["mean"] == 50.5 and stats["min"] == 1.0 and stats["max"] == 100.0
    assert stats["std"] == pytest.approx(statistics.pstdev(range(1, 101)), abs=1e-6)  # ddof 0
    # numpy.percentile(range(1, 101), q) (linear): 1 + 0.99 q
    for q in PERCENTILES:
        assert stats[f"p{q:g}"] == pytest.approx(1 + 0.99 * q, abs=1e-6)
    assert set(stats) >= {"p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p99.9"}
    assert distribution([]) is None and distribution([2.0])["p99.9"] == 2.0  # type: ignore[index]


def streamed(start: float, ttft: float, gaps: list[float], tail: float = 0.0) -> RequestSample:
    """A request streamed with these token gaps (seconds), ending ``tail`` after its last token."""
    parser = StreamParser("lmi")
    t = start + ttft
    for gap in [0.0, *gaps]:
        t += gap
        parser.feed(b'{"token": {"id": 1, "text": "a", "log_prob": -1}}\n', t)
    parser.feed(b'{"generated_text": "a"}\n', t)  # the last line: no token of its own
    parser.close(t)
    return RequestSample(
        start=start, end=t + tail, output_tokens=parser.output_tokens,
        first_token=parser.first_token, last_token=parser.last_token,
        stream_tokens=parser.tokens, itl_gaps_s=parser.gaps,
    )  # fmt: skip


def test_the_definitions_of_ttft_itl_tpot_and_e2e() -> None:
    short = streamed(0.0, 0.1, [0.01, 0.01], tail=0.02)  # 3 tokens
    long = streamed(1.0, 0.2, [0.02] * 7)  # 8 tokens
    stats = level_distributions([short, long])
    assert set(stats) == set(METRICS)
    assert stats["ttft_s"]["p50"] == pytest.approx(0.15)
    # vLLM's ITL: every gap pooled (2 + 7), so the long answer weighs more.
    assert stats["itl_s"]["count"] == 9
    assert stats["itl_s"]["mean"] == pytest.approx((2 * 0.01 + 7 * 0.02) / 9, abs=1e-7)
    # Per request: the mean gap of each, the tail after the last token left out.
    assert stats["itl_per_request_s"]["count"] == 2
    assert stats["itl_per_request_s"]["min"] == pytest.approx(0.01)
    # vLLM's TPOT (AIPerf's ITL): (e2e - TTFT) / (tokens - 1), the tail included.
    assert stats["tpot_s"]["min"] == pytest.approx((0.02 + 0.02) / 2)
    assert stats["e2e_latency_s"]["max"] == pytest.approx(0.2 + 7 * 0.02)
    unstreamed = RequestSample(start=0.0, end=1.0, output_tokens=10)
    assert set(level_distributions([unstreamed])) == {"e2e_latency_s"}
    assert "itl_gaps_s" not in short.to_dict()  # exports and workers stay one small record


def test_csv_flattens_every_distribution() -> None:
    level = summarize_level([streamed(0.0, 0.1, [0.01] * 4), streamed(0.1, 0.1, [0.02] * 4)], 2)
    rows = list(csv.DictReader(levels_csv([level]).splitlines()))
    assert list(rows[0]) == csv_columns()
    assert float(rows[0]["ttft_s_p50"]) == pytest.approx(0.1)
    assert float(rows[0]["itl_s_p99.9"]) == pytest.approx(0.02)
    assert rows[0]["target_rate_per_s"] == ""  # not measured in closed loop
    lines = requests_jsonl([streamed(0.0, 0.1, [0.01])]).splitlines()
    assert json.loads(lines[0])["ttft_s"] == pytest.approx(0.1)


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "dummy")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def test_cli_exports_beside_the_results(credentials: None, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    config = SimulatorConfig(response_format="tgi", max_batch=4, step_base_s=0.002)
    with Simulator(config) as sim:
        code = main(
            [
                "benchmark", "--endpoint-name", "ep", "--region", "us-east-1",
                "--endpoint-url", sim.endpoint_url, "--concurrency", "1,4", "--stream",
                "--input-tokens", "4", "--output-tokens", "6", "--requests-per-level", "8",
                "--export", "csv,jsonl,chart,markdown", "--out", str(out),
            ]
        )  # fmt: skip
        truth = sim.truth()[1:]  # the warm-up request first
    assert code == 0
    data = json.loads(out.read_text())
    assert "samples" not in data  # the per-request export does not keep them in the JSON
    level = data["levels"][0]["distributions"]
    assert level["itl_s"]["count"] == 8 * 5 and level["ttft_s"]["count"] == 8
    rows = list(csv.DictReader((tmp_path / "run.levels.csv").read_text().splitlines()))
    assert [row["concurrency"] for row in rows] == ["1", "4"]
    requests = [
        json.loads(line) for line in (tmp_path / "run.requests.jsonl").read_text().splitlines()
    ]
    assert len(requests) == 16 == len(truth)
    assert {r["output_tokens"] for r in requests} == {6}
    # The client's TTFT is the server's plus the loopback trip: never below it.
    first = {round(r.ttft_s or 0, 3) for r in truth}
    assert min(r["ttft_s"] for r in requests) >= min(first) - 0.001
    assert (tmp_path / "run.chart.svg").read_text().startswith("<svg")
    assert "## Distributions" in (tmp_path / "run.report.md").read_text()
    # report: the same CSV from results.json; JSONL only from kept samples.
    again = tmp_path / "again.csv"
    assert main(["report", str(out), "--csv", str(again)]) == 0
    assert again.read_text().splitlines()[0] == ",".join(csv_columns())
    assert main(["report", str(out), "--jsonl", str(tmp_path / "x.jsonl")]) == 2


def test_bad_export_names_its_formats(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["benchmark", "--endpoint-name", "e", "--out", "x", "--export", "xlsx"])
    assert "formats are csv, jsonl, chart, markdown" in capsys.readouterr().err
    assert math.isfinite(1.0)
