"""Exports of a :class:`~.engine.BenchmarkResult` beside ``results.json``: one CSV row per
level (every figure and every distribution flattened), one JSON line per request, and the
existing chart and Markdown, written by the CLI (``--export``) and by the deploy-time benchmark
(to S3) under the same names.

``EXPORTS`` names the formats; :func:`export_files` renders the ones asked for as
``{file name: bytes}``, so the CLI writes them to disk and the deploy-time benchmark puts them
in S3 from the same code.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from typing import Any

from .distributions import METRICS, PERCENTILES, percentile_key
from .engine import BenchmarkResult, LevelResult
from .report import render_markdown, render_svg
from .samples import RequestSample

EXPORTS = ("csv", "jsonl", "chart", "markdown")
"""Export formats: ``csv`` (levels), ``jsonl`` (requests), ``chart`` (SVG), ``markdown``."""
FILE_NAMES = {
    "csv": "levels.csv",
    "jsonl": "requests.jsonl",
    "chart": "chart.svg",
    "markdown": "report.md",
}
"""The name of each export (the CLI prefixes the stem of ``--out``)."""
CONTENT_TYPES = {
    "csv": "text/csv",
    "jsonl": "application/jsonl",
    "chart": "image/svg+xml",
    "markdown": "text/markdown",
}
STATS = ("count", "mean", "std", "min", "max", *(percentile_key(q) for q in PERCENTILES))
"""The statistics of each distribution, in CSV column order."""
_SCALARS = tuple(
    name
    for name in LevelResult.__dataclass_fields__
    if name not in ("errors_by_kind", "distributions")
)


def csv_columns() -> list[str]:
    """The CSV header: the level's own figures, errors by kind, then ``<metric>_<stat>``."""
    return [
        *_SCALARS,
        "errors_by_kind",
        *(f"{metric}_{stat}" for metric in METRICS for stat in STATS),
    ]


def levels_csv(levels: Sequence[LevelResult]) -> str:
    """One row per level; a figure a level did not measure is an empty cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(csv_columns())
    for level in levels:
        row: list[Any] = [_cell(getattr(level, name)) for name in _SCALARS]
        row.append(";".join(f"{k}={v}" for k, v in sorted(level.errors_by_kind.items()) if v))
        stats = level.distributions or {}
        for metric in METRICS:
            row += [_cell((stats.get(metric) or {}).get(stat)) for stat in STATS]
        writer.writerow(row)
    return out.getvalue()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.9g}"
    return value


def request_record(sample: RequestSample) -> dict[str, Any]:
    """One request as a JSON line: the raw sample and its derived figures."""
    return {
        **sample.to_dict(),
        "latency_s": sample.latency_s,
        "ttft_s": sample.ttft_s,
        "itl_s": sample.itl_s,
        "tpot_s": sample.tpot_s,
        "ms_per_token": sample.ms_per_token,
        "schedule_lag_s": sample.schedule_lag_s,
    }


def requests_jsonl(samples: Iterable[RequestSample]) -> str:
    """One JSON object per line, per request, in send order."""
    ordered = sorted(samples, key=lambda sample: sample.start)
    return "".join(json.dumps(request_record(sample)) + "\n" for sample in ordered)


def export_files(
    result: BenchmarkResult,
    formats: Iterable[str],
    samples: Sequence[RequestSample] | None = None,
) -> dict[str, bytes]:
    """The exports ``formats`` asks for, by file name (see ``FILE_NAMES``); ``jsonl`` needs
    ``samples`` (default the result's kept samples)."""
    files: dict[str, bytes] = {}
    for kind in formats:
        if kind not in EXPORTS:
            raise ValueError(f"export {kind!r}: use one of {', '.join(EXPORTS)}")
        if kind == "csv":
            text = levels_csv(result.levels)
        elif kind == "jsonl":
            chosen = samples if samples is not None else result.samples
            if chosen is None:
                raise ValueError("a per-request export needs the requests' samples")
            text = requests_jsonl(chosen)
        elif kind == "chart":
            text = render_svg(result)
        else:
            text = render_markdown(result)
        files[FILE_NAMES[kind]] = text.encode("utf-8")
    return files
