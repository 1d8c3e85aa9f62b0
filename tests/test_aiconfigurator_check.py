"""``benchmarks/aiconfigurator_check.py``: AIConfigurator's silicon records become rows of
``rows.csv``'s schema that ``profile_fitting`` reads as the source measured them (a closed loop
at the record's concurrency, the TPOT as the inter-token latency, the batch size as the
engine's request cap), and the records the model cannot state are left out."""

from __future__ import annotations

import math
from typing import Any

import pytest
from conftest import benchmark_module

SWEEP = "meta_llama_llama_3_1_8b_instruct_meta_llama_llama_3_1_8b_instruct_h100_sxm_trtllm_agg"
SOURCE = (
    "source_file=/Users/harrli/projects/aic-auto-gap-analysis/data/h100_sxm/trtllm/1.0.0rc3/"
    "meta-llama_Llama-3.1-8B-Instruct.csv; silicon_concurrency=8"
)


def _record(**fields: str) -> dict[str, str]:
    base = {
        "id": "",
        "silicon_data_source": SOURCE,
        "backend": "trtllm",
        "backend_version": "1.0.0rc3",
        "model_path": "meta-llama/Llama-3.1-8B-Instruct",
        "system": "h100_sxm",
        "precision": "",
        "mode": "agg",
        "isl": "1024",
        "osl": "512",
        "gemm_quant_mode": "",
        "batch_size": "8",
        "tp_size": "1",
        "silicon_ttft_ms": "550.00837404375",
        "silicon_tpot_ms": "7.41678580625",
    }
    return {**base, **fields}


# Four records of one sweep as AIConfigurator committed them (TP 1 / 2 / 4 / 8 at 8 in flight),
# then two it keeps that the model cannot state: an unstated engine release and a
# mixture-of-experts model on a Blackwell GPU.
RECORDS = [
    _record(id=f"{SWEEP}_1024x512_c8_tp1_epnone_3"),
    _record(
        id=f"{SWEEP}_1024x512_c8_tp2_epnone_45",
        tp_size="2",
        silicon_ttft_ms="367.81675156875",
        silicon_tpot_ms="4.82678796875",
    ),
    _record(
        id=f"{SWEEP}_1024x512_c8_tp4_epnone_90",
        tp_size="4",
        silicon_ttft_ms="269.9546031625",
        silicon_tpot_ms="3.29446875",
    ),
    _record(
        id=f"{SWEEP}_1024x512_c8_tp8_epnone_135",
        tp_size="8",
        silicon_ttft_ms="233.81468504375",
        silicon_tpot_ms="2.7305104125",
    ),
    _record(
        id="2026_04_06_llama_3_1_70b_h100_sxm_vllm_fp8_agg_1024x1024_c16_tp2_ep1_918",
        backend="vllm",
        backend_version="",
        model_path="meta-llama/Llama-3.1-70B",
        precision="fp8",
        tp_size="2",
    ),
    _record(
        id="minimaxm2_5_b300_vllm_fp8_agg_8192x1024_c128_cfg733",
        backend="vllm",
        backend_version="0.19.0",
        model_path="MiniMaxAI/MiniMax-M2.5",
        system="b300_sxm",
        tp_size="4",
    ),
]


@pytest.fixture(scope="module")
def check() -> Any:
    return benchmark_module("aiconfigurator_check")


def test_only_dense_models_on_hopper_with_a_stated_release_become_rows(check: Any) -> None:
    rows = list(check.rows(RECORDS))
    assert [row["tp"] for row in rows] == ["1", "2", "4", "8"]
    assert all(tuple(row) == check.COLUMNS for row in rows)  # rows.csv's own header
    first = rows[0]
    assert first["source_id"] == check.SOURCE_ID
    assert check.COMMIT in first["citation"] and RECORDS[0]["id"] in first["citation"]
    assert (first["engine"], first["engine_version"], first["gpu"]) == (
        "trtllm",
        "1.0.0rc3",
        "H100-80GB",
    )
    assert (first["model"], first["precision"], first["concurrency"]) == (
        "llama-3.1-8b",
        "bf16",
        "8",
    )
    # Little's law over the closed loop: 8 x 512 tokens / (TTFT + TPOT x 511)
    latency_s = (550.00837404375 + 7.41678580625 * 511) / 1000
    assert float(first["output_tokens_per_s"]) == pytest.approx(8 * 512 / latency_s, abs=0.05)


def test_profile_fitting_reads_the_rows_as_measured_and_the_report_scores_each(
    check: Any,
) -> None:
    results = check.scored(RECORDS)
    assert [row.tensor_parallel_degree for row, _ in results] == [1, 2, 4, 8]
    for (row, errors), record in zip(results, RECORDS, strict=False):
        assert row.profile == "lmi-trtllm"
        assert row.concurrency == 8 and not row.static_batch and not row.burst
        assert row.itl_ms == pytest.approx(float(record["silicon_tpot_ms"]), abs=1e-3)
        assert row.ms_per_token is None  # the TPOT is not an end-to-end ms/token
        assert row.batch.max_sequences == 8  # the record's batch_size as the request cap
        assert set(errors) == {"itl_ms", "ttft_ms", "tokens_per_s"}
        assert all(math.isfinite(error) for error in errors.values())
    lines = check.report(results)
    assert (
        sum(line.startswith("| lmi-trtllm | llama-3.1-8b | H100-80GB | bf16 |") for line in lines)
        == 4
    )
    assert [line.split(":")[0] for line in lines[-3:]] == ["ITL", "TTFT", "tokens/s"]
