"""Schema and coverage checks for the published serving measurements.

``benchmarks/measurements/rows.csv`` holds figures read from public benchmarks of
LLM serving engines (one citation per row); ``sources.json`` describes each source.
The performance-model fit and its leave-one-source-out validation read these files,
so their columns and vocabularies are a contract.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "measurements"

COLUMNS = [
    "source_id",
    "citation",
    "engine",
    "engine_version",
    "gpu",
    "instance_type",
    "tp",
    "model",
    "precision",
    "input_tokens",
    "output_tokens",
    "concurrency",
    "ms_per_token",
    "ttft_ms",
    "e2e_latency_s",
    "output_tokens_per_s",
    "requests_per_s",
    "read_from_chart",
    "notes",
]
METRICS = ["ms_per_token", "ttft_ms", "e2e_latency_s", "output_tokens_per_s", "requests_per_s"]
ENGINES = {"tgi", "lmi-vllm", "lmi-trtllm", "lmi-neuronx", "vllm", "trtllm", "nim"}
GPUS = {"A10G", "L4", "L40S", "A100-40GB", "A100-80GB", "H100-80GB", "H200"}
PRECISIONS = {"fp16", "bf16", "fp8", "int8", "int4-awq", "int4-gptq"}
CATALOG_MODELS = {
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3-8b",
    "llama-3-70b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "mistral-7b",
    "mixtral-8x7b",
    "falcon-7b",
    "falcon-40b",
    "falcon-180b",
}
SOURCE_KEYS = {
    "id",
    "title",
    "url",
    "published",
    "publisher",
    "engine",
    "engine_version",
    "hardware",
    "notes",
}
EXCLUDED = re.compile(r"jumpstart", re.IGNORECASE)


def _rows() -> list[dict[str, str]]:
    with (DATA / "rows.csv").open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == COLUMNS
        return list(reader)


def _sources() -> list[dict[str, object]]:
    return json.loads((DATA / "sources.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return _rows()


@pytest.fixture(scope="module")
def sources() -> list[dict[str, object]]:
    return _sources()


def test_sources_are_described(sources: list[dict[str, object]]) -> None:
    ids = [s["id"] for s in sources]
    assert len(ids) == len(set(ids))
    for source in sources:
        assert set(source) == SOURCE_KEYS, source["id"]
        assert str(source["url"]).startswith("https://"), source["id"]
        assert re.fullmatch(r"\d{4}-\d{2}", str(source["published"])), source["id"]
        assert isinstance(source["hardware"], list) and source["hardware"], source["id"]
        # The held-out check (AWS ML Blog, SageMaker JumpStart benchmark, Jan 2024) stays out.
        assert not EXCLUDED.search(str(source["url"])), source["id"]
        assert not EXCLUDED.search(str(source["title"])), source["id"]


def test_every_row_cites_a_known_source(
    rows: list[dict[str, str]], sources: list[dict[str, object]]
) -> None:
    ids = {s["id"] for s in sources}
    for number, row in enumerate(rows, start=2):
        assert row["source_id"] in ids, number
        assert row["citation"].strip(), number
        assert not EXCLUDED.search(row["citation"]), number
    used = {row["source_id"] for row in rows}
    assert used == ids, "every source contributes rows"


def test_rows_use_the_vocabularies(rows: list[dict[str, str]]) -> None:
    for number, row in enumerate(rows, start=2):
        assert row["engine"] in ENGINES, (number, row["engine"])
        assert row["gpu"] in GPUS, (number, row["gpu"])
        assert row["precision"] in PRECISIONS, (number, row["precision"])
        assert row["model"] in CATALOG_MODELS or "/" in row["model"], (number, row["model"])
        assert row["read_from_chart"] in {"true", "false"}, number
        assert row["instance_type"] == "" or re.fullmatch(
            r"(ml\.)?[a-z0-9]+\.[0-9a-z]+", row["instance_type"]
        ), number
        assert int(row["tp"]) in {1, 2, 4, 8}, number
        assert float(row["input_tokens"]) > 0 and float(row["output_tokens"]) > 0, number
        if row["concurrency"]:
            assert int(row["concurrency"]) >= 1, number
        else:
            assert "offline" in row["notes"].lower(), number


def test_every_row_has_a_positive_metric(rows: list[dict[str, str]]) -> None:
    for number, row in enumerate(rows, start=2):
        values = [float(row[m]) for m in METRICS if row[m]]
        assert values, number
        assert all(v > 0 for v in values), number


def test_coverage_meets_the_targets(
    rows: list[dict[str, str]], sources: list[dict[str, object]]
) -> None:
    assert len(sources) >= 3
    assert len(rows) >= 60
    gpus = {row["gpu"] for row in rows}
    assert {"A10G", "H100-80GB"} <= gpus
    assert gpus & {"A100-40GB", "A100-80GB"}
    assert {1, 2, 4, 8} <= {int(row["tp"]) for row in rows}
    inputs = [float(row["input_tokens"]) for row in rows]
    assert min(inputs) <= 200
    assert max(inputs) >= 3000


def test_configurations_have_several_concurrencies(rows: list[dict[str, str]]) -> None:
    sweeps: dict[tuple[str, ...], set[str]] = {}
    for row in rows:
        if row["concurrency"]:
            key = (
                row["source_id"],
                row["engine"],
                row["gpu"],
                row["tp"],
                row["model"],
                row["precision"],
            )
            sweeps.setdefault(key, set()).add(row["concurrency"])
    assert sum(1 for levels in sweeps.values() if len(levels) >= 3) >= 10
