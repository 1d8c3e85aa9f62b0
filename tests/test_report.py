"""The hand-written SVG chart and the Markdown table."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from cdk_sagemaker_llm.benchmarking import BenchmarkResult, KneeRule, LevelResult, find_knee
from cdk_sagemaker_llm.benchmarking.report import _nice_ticks, render_markdown, render_svg

SVG = "{http://www.w3.org/2000/svg}"


def level(concurrency: int, tokens_per_s: float, ms_per_token: float | None) -> LevelResult:
    return LevelResult(
        concurrency=concurrency, requests=8, errors=0, errors_by_kind={}, error_rate=0.0,
        duration_s=1.0, p50_latency_s=0.5, p90_latency_s=0.6, p99_latency_s=0.7,
        p50_ms_per_token=ms_per_token, p90_ms_per_token=ms_per_token, output_tokens=10,
        output_tokens_per_s=tokens_per_s, requests_per_s=2.0,
    )  # fmt: skip


def result(slo: float | None = 40.0) -> BenchmarkResult:
    levels = [level(1, 100, 10), level(2, 190, 12), level(4, 360, 20), level(8, 380, 45)]
    return BenchmarkResult(
        payload={"input_tokens": 128, "output_tokens": 64, "stream": False},
        levels=levels,
        knee=find_knee(levels, KneeRule(slo_ms_per_token=slo)),
        target={"endpoint_name": "ep & co", "inference_component": "ic"},
        slo_ms_per_token=slo,
        price_per_hour=2.0,
    )


def test_svg_is_well_formed_and_marks_points_knee_and_slo() -> None:
    root = ET.fromstring(render_svg(result()))
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert {"c=1", "c=2", "c=4", "c=8", "knee", "SLO 40 ms/token"} <= set(texts)
    assert "ep &amp; co" in render_svg(result())
    points = root.find(f"{SVG}polyline").get("points").split()  # type: ignore[union-attr]
    xs = [float(p.split(",")[0]) for p in points]
    assert xs == sorted(xs)  # throughput rises with concurrency here
    knee_ring = [c for c in root.iter(f"{SVG}circle") if c.get("r") == "10"]
    assert len(knee_ring) == 1


def test_svg_without_slo_or_points() -> None:
    empty = result(None)
    for lv in empty.levels:
        lv.p50_ms_per_token = None
    root = ET.fromstring(render_svg(empty))
    assert root.find(f"{SVG}polyline") is None


def test_markdown_table() -> None:
    text = render_markdown(result())
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 5
    assert rows[3].startswith("| **4** |")  # the knee, in bold
    assert "Max throughput within the SLO of 40 ms/token: 360.0" in text
    assert "$1.54" in text  # 2.0 / (360 * 3600 / 1e6)


def test_nice_ticks() -> None:
    assert _nice_ticks(0, 380) == [0, 100, 200, 300, 400]
    assert _nice_ticks(0, 0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]


def test_an_open_loop_report_gives_its_max_throughput_and_cost_too() -> None:
    """The rate table is followed by the max throughput within the SLO and the cost per 1M
    output tokens there, as a closed-loop report's (an open-loop report dropped both)."""
    levels = [level(1, 100, 10), level(2, 190, 12), level(4, 360, 20)]
    for rate, each in zip((1.0, 2.0, 4.0), levels, strict=True):
        each.target_rate_per_s = rate
    run = BenchmarkResult(
        payload={"input_tokens": 128, "output_tokens": 64},
        levels=levels,
        knee=find_knee(levels),
        mode="rate",
        slo_ms_per_token=40.0,
        price_per_hour=2.0,
        goodput={"rule": "r", "sustainable_fraction": 0.9},
        open_loop={"arrival": "poisson", "seed": 0},
    )
    text = render_markdown(run)
    assert "- Max throughput within the SLO of 40 ms/token: 360.0 output tokens/s at 4 " in text
    assert "- Cost per 1M output tokens at max throughput: $1.54" in text


def test_the_url_named_with_an_error_is_the_one_the_requests_went_to() -> None:
    """A streamed run invokes invocations-response-stream, and a China region's runtime is
    under amazonaws.com.cn: the report named /invocations on amazonaws.com for both."""
    from cdk_sagemaker_llm.benchmarking.report import target_url

    target = {"endpoint_name": "llm", "region": "cn-north-1"}
    assert target_url(target) == (
        "https://runtime.sagemaker.cn-north-1.amazonaws.com.cn/endpoints/llm/invocations"
    )
    assert target_url({**target, "region": "us-east-1"}, stream=True) == (
        "https://runtime.sagemaker.us-east-1.amazonaws.com/endpoints/llm/"
        "invocations-response-stream"
    )
