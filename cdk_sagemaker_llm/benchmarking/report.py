"""Reports of a :class:`~.engine.BenchmarkResult`: a hand-written SVG chart and Markdown."""

from __future__ import annotations

import math
from html import escape
from typing import Any

from .distributions import METRICS, PERCENTILES, percentile_key
from .engine import BenchmarkResult, Knee, LevelResult
from .invokers import default_endpoint_url

_WIDTH, _HEIGHT = 720, 440
_LEFT, _RIGHT, _TOP, _BOTTOM = 80, 30, 50, 60


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[low, high]``."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def _label(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e5 else f"{value:.3g}"


def render_svg(result: BenchmarkResult) -> str:
    """Latency versus throughput: p50 ms/token (y) against output tokens/s (x), one point per
    concurrency level, the knee circled, the SLO as a dashed line."""
    points = [
        level
        for level in sorted(result.levels, key=_position)
        if level.p50_ms_per_token is not None
    ]
    title = "Latency vs throughput"
    payload = result.payload
    subtitle = (
        f"{payload.get('input_tokens') or payload.get('prompts')} in / "
        f"{payload.get('output_tokens')} out tokens"
        f"{', streaming' if payload.get('stream') else ''}"
    )
    name = result.target.get("endpoint_name")
    if name:
        component = result.target.get("inference_component")
        subtitle = f"{name}{' / ' + component if component else ''}: {subtitle}"
    xs = [level.output_tokens_per_s for level in points] or [0.0, 1.0]
    ys = [level.p50_ms_per_token or 0.0 for level in points] or [0.0, 1.0]
    slo = result.slo_ms_per_token
    x_ticks = _nice_ticks(0.0, max(xs))
    y_ticks = _nice_ticks(0.0, max([*ys, slo or 0.0]))
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM

    def sx(value: float) -> float:
        return _LEFT + plot_w * (value - x_ticks[0]) / (x_ticks[-1] - x_ticks[0])

    def sy(value: float) -> float:
        return _TOP + plot_h * (1 - (value - y_ticks[0]) / (y_ticks[-1] - y_ticks[0]))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{_WIDTH}" height="{_HEIGHT}" fill="white"/>',
        f'<text x="{_WIDTH / 2}" y="20" text-anchor="middle" font-size="15" '
        f'font-weight="bold">{escape(title)}</text>',
        f'<text x="{_WIDTH / 2}" y="38" text-anchor="middle" fill="#555">{escape(subtitle)}</text>',
    ]
    for tick in x_ticks:
        x = sx(tick)
        out.append(
            f'<line x1="{x:.1f}" y1="{_TOP}" x2="{x:.1f}" y2="{_TOP + plot_h}" stroke="#eee"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{_TOP + plot_h + 18}" text-anchor="middle">{_label(tick)}</text>'
        )
    for tick in y_ticks:
        y = sy(tick)
        out.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + plot_w}" y2="{y:.1f}" stroke="#eee"/>'
        )
        out.append(f'<text x="{_LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{_label(tick)}</text>')
    out += [
        f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="none" '
        f'stroke="#333"/>',
        f'<text x="{_LEFT + plot_w / 2}" y="{_HEIGHT - 15}" text-anchor="middle">'
        "output tokens/s</text>",
        f'<text x="20" y="{_TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 20 {_TOP + plot_h / 2})">p50 ms per output token</text>',
    ]
    if slo is not None:
        y = sy(slo)
        out.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + plot_w}" y2="{y:.1f}" '
            f'stroke="#c00" stroke-dasharray="6 4"/>'
        )
        out.append(
            f'<text x="{_LEFT + plot_w - 4}" y="{y - 5:.1f}" text-anchor="end" fill="#c00">'
            f"SLO {slo:g} ms/token</text>"
        )
    if points:
        path = " ".join(
            f"{sx(lv.output_tokens_per_s):.1f},{sy(lv.p50_ms_per_token or 0):.1f}" for lv in points
        )
        out.append(f'<polyline points="{path}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    for level in points:
        x, y = sx(level.output_tokens_per_s), sy(level.p50_ms_per_token or 0)
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="#1f77b4"/>')
        name = (
            f"c={level.concurrency}"
            if level.target_rate_per_s is None
            else f"{level.target_rate_per_s:g}/s"
        )
        out.append(f'<text x="{x + 7:.1f}" y="{y - 7:.1f}">{escape(name)}</text>')
        if level.target_rate_per_s is None and level.concurrency == result.knee.concurrency:
            out.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="10" fill="none" stroke="#d62728" '
                f'stroke-width="2"/>'
            )
            out.append(f'<text x="{x + 7:.1f}" y="{y + 20:.1f}" fill="#d62728">knee</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _position(level: LevelResult) -> float:
    """Where a level sits on its sweep's axis: its request rate (open loop) or concurrency."""
    return level.target_rate_per_s if level.target_rate_per_s is not None else level.concurrency


def _cell(value: float | None, digits: int = 1, scale: float = 1.0) -> str:
    return "-" if value is None else f"{value * scale:,.{digits}f}"


def _row(level: LevelResult, knee: int | None, stream: bool, goodput: bool) -> str:
    cells = [
        f"**{level.concurrency}**" if level.concurrency == knee else str(level.concurrency),
        str(level.requests),
        f"{level.errors} ({level.error_rate:.1%})",
        _cell(level.p50_latency_s, 3),
        _cell(level.p90_latency_s, 3),
        _cell(level.p99_latency_s, 3),
        _cell(level.p50_ms_per_token),
        _cell(level.output_tokens_per_s),
        _cell(level.requests_per_s, 2),
    ]
    if stream:
        cells += [
            _cell(level.p50_ttft_s, 1, 1000),
            _cell(level.p50_itl_s, 1, 1000),
            _cell(level.p50_tpot_s, 1, 1000),
        ]
    if goodput:
        cells.append(_cell(level.goodput_requests_per_s, 2))
    return "| " + " | ".join(cells) + " |"


def _rate_row(level: LevelResult, stream: bool) -> str:
    cells = [
        f"{level.target_rate_per_s:g}",
        _cell(level.achieved_rate_per_s, 2),
        f"{_cell(level.p50_schedule_lag_s, 1, 1000)} / {_cell(level.p99_schedule_lag_s, 1, 1000)}",
        str(level.concurrency),
        str(level.requests),
        f"{level.errors} ({level.error_rate:.1%})",
        _cell(level.p50_latency_s, 3),
        _cell(level.p99_latency_s, 3),
        _cell(level.p50_ms_per_token),
        _cell(level.output_tokens_per_s),
        _cell(level.goodput_requests_per_s, 2),
        "yes" if level.sustainable else ("no, backlog grows" if level.backlog_growing else "no"),
    ]
    if stream:
        cells += [_cell(level.p50_ttft_s, 1, 1000), _cell(level.p50_tpot_s, 1, 1000)]
    return "| " + " | ".join(cells) + " |"


def _rate_table(result: BenchmarkResult, stream: bool) -> list[str]:
    header = (
        "| rate/s | achieved/s | lag p50 / p99 ms | peak in flight | requests | errors | "
        "p50 latency s | p99 latency s | p50 ms/token | output tokens/s | goodput req/s | "
        "sustainable |" + (" p50 TTFT ms | p50 TPOT ms |" if stream else "")
    )
    lines = [header, "|" + "---:|" * (14 if stream else 12)]
    lines += [_rate_row(level, stream) for level in sorted(result.levels, key=_position)]
    lines.append("")
    goodput = result.goodput or {}
    lines.append(
        f"- Sustainable rate: **{sustainable_rate_words(goodput)}** "
        f"({goodput.get('rule')}; goodput >= {goodput.get('sustainable_fraction', 0):.0%} of "
        "the offered rate, backlog not growing)."
    )
    open_loop = result.open_loop or {}
    process = (
        open_loop.get("process") or f"{open_loop.get('arrival')} (seed {open_loop.get('seed')})"
    )
    lines.append(
        f"- Arrivals: {process}, max concurrency {open_loop.get('max_concurrency') or 'none'}."
    )
    return lines


def _knee_markdown(knee: Knee) -> str:
    if knee.concurrency is None:
        return f"concurrency **none** (even the lowest level trips the {knee.reason} rule)"
    if knee.at_least:
        hint = f"; raise it with {knee.raise_with}" if knee.raise_with else ""
        return (
            f"concurrency **at least {knee.concurrency}** (no level tripped the rule: the knee "
            f"lies above the highest level run, not at it{hint})"
        )
    return (
        f"concurrency **{knee.concurrency}** ({knee.reason} rule tripped at concurrency "
        f"{knee.tripped_at})"
    )


def sustainable_rate_words(goodput: dict[str, Any]) -> str:
    """The sustainable rate in words: measured, a lower bound (naming what raises it), or
    none."""
    rate = goodput.get("sustainable_rate_per_s")
    if rate is None:
        return "none (the lowest rate is not sustainable)"
    if goodput.get("sustainable_rate_at_least"):
        hint = f"; raise it with {goodput['raise_with']}" if goodput.get("raise_with") else ""
        return f"at least {rate:g} requests/s (every rate run was sustainable{hint})"
    return f"{rate:g} requests/s"


def search_words(search: dict[str, Any]) -> str:
    """What a search found, beside its expectation when it had one."""
    found = search["found"]
    if found is None:
        text = "nothing (the lowest level fails)"
    elif search.get("at_least"):
        hint = f"; raise it with {search['raise_with']}" if search.get("raise_with") else ""
        text = f"at least {found:g} (no level failed{hint})"
    else:
        text = f"{found:g}"
    if search.get("expected") is not None:
        text = f"{text}, expected {search['expected']:g}"
    return text


def summary_lines(result: BenchmarkResult) -> list[str]:
    """The headline figures, one per line: the knee or sustainable rate (a lower bound said
    so), the search and its expectation."""
    if result.mode == "rate":
        goodput = result.goodput or {}
        lines = [f"sustainable rate: {sustainable_rate_words(goodput)} ({goodput.get('rule')})"]
    else:
        lines = [f"knee: {result.knee.describe()}; rule: {result.knee.rule}"]
    search = result.search
    if search is not None:
        lines.append(
            f"search ({search['rule']}): found {search_words(search)}; levels "
            f"{search['levels_run']}, {search['requests']} requests"
        )
    return lines + error_lines(result)


def error_lines(result: BenchmarkResult) -> list[str]:
    """Why requests failed: per error kind, the first failure's HTTP status, code and message,
    with the URL the requests went to (e.g. an OpenAI base URL without ``/v1`` answers 404)."""
    firsts: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    requests = sum(level.requests for level in result.levels)
    for level in sorted(result.levels, key=_position):
        for kind, error in (level.first_errors or {}).items():
            firsts.setdefault(kind, error)
            counts[kind] = counts.get(kind, 0) + level.errors_by_kind.get(kind, 0)
    url = target_url(result.target or {}, stream=bool((result.payload or {}).get("stream")))
    lines = []
    for kind, error in sorted(firsts.items()):
        status = f"HTTP {error['status']} " if error.get("status") is not None else ""
        lines.append(
            f"{kind} errors: {counts[kind]} of {requests} requests; first: {status}"
            f"{error.get('code') or 'error'}: {error.get('message') or 'no message'}"
            + (f" ({url})" if url else "")
        )
    return lines


def target_url(target: dict[str, Any], *, stream: bool = False) -> str | None:
    """The URL the requests went to, as far as the results' ``target`` says: a streamed run
    invokes ``invocations-response-stream`` (InvokeEndpointWithResponseStream), and a China
    region's endpoint is under ``amazonaws.com.cn``."""
    if target.get("kind") == "openai" and target.get("base_url"):
        return f"{str(target['base_url']).rstrip('/')}{target.get('route') or ''}"
    name = target.get("endpoint_name")
    if not name:
        return None
    region = target.get("region")
    base = target.get("endpoint_url") or (default_endpoint_url(str(region)) if region else None)
    route = "invocations-response-stream" if stream else "invocations"
    return f"{str(base).rstrip('/')}/endpoints/{name}/{route}" if base else None


def _search_lines(result: BenchmarkResult) -> list[str]:
    search = result.search
    if search is None:
        return []
    return [
        f"- Search ({search['kind']}): found **{search_words(search)}** with "
        f"{search['requests']} requests over levels {search['levels_run']} (in run order). "
        f"Rule: {search['rule']}."
    ]


def _distribution_lines(result: BenchmarkResult) -> list[str]:
    """One table per level: each measured distribution's mean, std and p1 ... p99.9 (ms)."""
    stats = ("mean", "std", *(percentile_key(q) for q in PERCENTILES))
    lines: list[str] = []
    for level in sorted(result.levels, key=_position):
        if not level.distributions:
            continue
        name = (
            f"concurrency {level.concurrency}"
            if level.target_rate_per_s is None
            else f"rate {level.target_rate_per_s:g}/s"
        )
        lines += ["", f"### {name} (ms)", "", "| metric | n | " + " | ".join(stats) + " |"]
        lines.append("|---|" + "---:|" * (len(stats) + 1))
        for metric in METRICS:
            values = level.distributions.get(metric)
            if values:
                cells = [_cell(values.get(stat), 2, 1000) for stat in stats]
                lines.append(f"| {metric} | {values['count']} | " + " | ".join(cells) + " |")
    if lines:
        lines = ["", "## Distributions", "", DEFINITIONS, *lines]
    return lines


DEFINITIONS = (
    "TTFT: first token - sent; TPOT: (latency - TTFT) / (output tokens - 1) per request (vLLM's "
    "TPOT, AIPerf's inter-token latency); ITL: every gap between token events, pooled (vLLM's "
    "ITL); ITL per request: each request's mean gap; e2e: last byte - sent. Percentiles by "
    "linear interpolation, std over the population, as NumPy computes them for both tools."
)


def render_markdown(result: BenchmarkResult) -> str:
    """A Markdown report: the payload, one table row per level, the knee (closed loop) or the
    sustainable rate (open loop), throughput, cost, the search if any."""
    payload = result.payload
    stream = any(level.p50_ttft_s is not None for level in result.levels)
    lines = ["# Benchmark results", ""]
    if result.target:
        lines.append(
            "Target: " + ", ".join(f"{k} `{v}`" for k, v in result.target.items() if v) + "  "
        )
    lines.append(
        "Payload: "
        + ", ".join(f"{key} `{value}`" for key, value in payload.items() if value is not None)
    )
    if result.mode == "rate":
        lines += ["", *_rate_table(result, stream), *_best_and_cost_lines(result)]
        lines += _search_lines(result)
        return "\n".join([*lines, *_distribution_lines(result)]) + "\n"
    goodput = any(level.good_requests is not None for level in result.levels)
    lines += ["", "| concurrency | requests | errors | p50 latency s | p90 latency s | "
              "p99 latency s | p50 ms/token | output tokens/s | requests/s |"
              + (" p50 TTFT ms | p50 ITL ms | p50 TPOT ms |" if stream else "")
              + (" goodput req/s |" if goodput else "")]  # fmt: skip
    lines.append("|" + "---:|" * (9 + (3 if stream else 0) + (1 if goodput else 0)))
    lines += [_row(level, result.knee.concurrency, stream, goodput) for level in result.levels]
    if goodput and result.goodput:
        lines += ["", f"- Goodput: {result.goodput.get('rule')}."]
    lines.append("")
    lines.append(f"- Knee: {_knee_markdown(result.knee)}. Rule: {result.knee.rule}.")
    lines += _best_and_cost_lines(result)
    lines += _search_lines(result)
    return "\n".join([*lines, *_distribution_lines(result)]) + "\n"


def _best_and_cost_lines(result: BenchmarkResult) -> list[str]:
    """The max throughput within the SLO and the cost per 1M output tokens (at the knee and
    there), closed loop or open (an open-loop report dropped both)."""
    lines = []
    best = result.max_throughput_level
    if best is not None:
        within = (
            f" within the SLO of {result.slo_ms_per_token:g} ms/token"
            if result.slo_ms_per_token is not None
            else ""
        )
        where = (
            f"{best.target_rate_per_s:g} requests/s"
            if best.target_rate_per_s is not None
            else f"concurrency {best.concurrency}"
        )
        lines.append(
            f"- Max throughput{within}: {best.output_tokens_per_s:,.1f} output tokens/s at {where}."
        )
    cost = result.to_dict().get("cost")
    for key, label in (
        ("per_1m_output_tokens_at_knee", "at the knee"),
        ("per_1m_output_tokens_at_max_throughput", "at max throughput"),
    ):
        if cost and cost.get(key) is not None:
            discount = f" less {cost['discount']:.0%}" if cost.get("discount") else ""
            lines.append(
                f"- Cost per 1M output tokens {label}: ${cost[key]:,.2f} "
                f"(at ${cost['price_per_hour']:g}/hour{discount}; "
                f"{cost.get('price_basis') or 'given'})."
            )
    return lines
