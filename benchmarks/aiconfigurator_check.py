"""AIConfigurator's committed silicon measurements, scored out of sample (issue 30 item 2).

``python benchmarks/aiconfigurator_check.py silicon_sample.csv`` reads, as rows of
``measurements/rows.csv``'s schema (``--rows`` prints them), the records of NVIDIA AIConfigurator's
``aic-core/src/aiconfigurator_core/systems/silicon_sample.csv`` (ai-dynamo/aiconfigurator,
Apache License 2.0, at ``COMMIT``) that the performance model can state: aggregated serving
(``mode`` agg, one engine serving prefill and decode) of a dense model it has a spec for, on an
H100 or H200, by an engine release the record names. Nothing is fetched: pass a copy of the
file read at ``COMMIT``. It then predicts every row with the shipped engine profiles (none was
fitted to it, so every figure is out of sample) and prints ln(measured / predicted) of the
inter-token latency, TTFT and output tokens/s per engine, model, GPU and TP degree, and the
median / p90 absolute error of each figure (benchmarks/README.md, "AIConfigurator's silicon
measurements, out of sample").

What a record holds, and how it is read (the columns are AIConfigurator's):

- ``silicon_tpot_ms`` and ``silicon_ttft_ms``: the mean time per output token after the first
  and the mean time to the first token, measured at ``silicon_concurrency`` requests in flight
  (closed loop: a client sends its next request when one ends) with ``isl`` prompt and ``osl``
  output tokens;
- ``batch_size``: the engine's batch size for the run (equal to the concurrency in every
  record read here); ``tp_size``: the GPUs of the one copy;
- ``precision`` blank: the checkpoint's own dtype (bf16 for Llama 3.1 8B Instruct and
  Qwen3-32B); ``fp8``: FP8 GEMMs (``gemm_quant_mode``).

The output tokens/s is not a column: each row derives it by Little's law over the closed loop,
``concurrency x osl / (TTFT + TPOT x (osl - 1))``, as the source's mean latencies give it.
Records without a concurrency, of mixture-of-experts models, on Blackwell or of an unstated
engine release are left out (the model cannot state them, or the release is a guess).
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import model_validation as mv
import profile_fitting as pf

from cdk_sagemaker_llm.planning.efficiency import efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile

SOURCE_ID = "aiconfigurator-silicon-sample-2026"
COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
PATH = "aic-core/src/aiconfigurator_core/systems/silicon_sample.csv"
MODELS = {
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "Qwen/Qwen3-32B": "Qwen/Qwen3-32B",
}
"""AIConfigurator's model paths -> ``rows.csv``'s model (a catalog id or the Hugging Face id
``benchmarks/profile_fitting.py`` has a spec for)."""
GPUS = {"h100_sxm": "H100-80GB", "h200_sxm": "H200"}


def _schema() -> tuple[str, ...]:
    """The columns of ``measurements/rows.csv``, read from its header: one schema."""
    with (pf.MEASUREMENTS / "rows.csv").open(newline="", encoding="utf-8") as handle:
        return tuple(next(csv.reader(handle)))


COLUMNS = _schema()
CONCURRENCY = re.compile(r"silicon_concurrency=(\d+)")


def rows(records: Sequence[Mapping[str, str]]) -> Iterator[dict[str, str]]:
    """The records ``rows.csv`` takes, in the file's order, as its rows."""
    for record in records:
        concurrency = CONCURRENCY.search(record["silicon_data_source"])
        if (
            record["mode"] != "agg"
            or record["model_path"] not in MODELS
            or record["system"] not in GPUS
            or not record["backend_version"]
            or record["backend"] not in ("vllm", "trtllm")
            or concurrency is None
        ):
            continue
        yield _row(record, int(concurrency.group(1)))


def _row(record: Mapping[str, str], concurrency: int) -> dict[str, str]:
    isl, osl = int(record["isl"]), int(record["osl"])
    tpot, ttft = float(record["silicon_tpot_ms"]), float(record["silicon_ttft_ms"])
    latency_s = (ttft + tpot * (osl - 1)) / 1000
    precision = "fp8" if record["precision"] == "fp8" else "bf16"
    engine = record["backend"]
    batch = record["batch_size"]
    limit = f"max_num_seqs {batch}" if engine == "vllm" else f"--max_batch_size {batch}"
    return {
        "source_id": SOURCE_ID,
        "citation": (
            f"https://github.com/ai-dynamo/aiconfigurator/blob/{COMMIT}/{PATH} (NVIDIA "
            f"AIConfigurator's committed silicon measurements): record id={record['id']}; "
            "columns 'silicon_ttft_ms', 'silicon_tpot_ms', 'isl', 'osl', 'batch_size', "
            "'tp_size' and the concurrency in 'silicon_data_source'"
        ),
        "engine": engine,
        "engine_version": record["backend_version"],
        "gpu": GPUS[record["system"]],
        "instance_type": "",
        "tp": record["tp_size"],
        "model": MODELS[record["model_path"]],
        "precision": precision,
        "input_tokens": str(isl),
        "output_tokens": str(osl),
        "concurrency": str(concurrency),
        "ms_per_token": f"{tpot:.3f}",
        "ttft_ms": f"{ttft:.1f}",
        "e2e_latency_s": "",
        "output_tokens_per_s": f"{concurrency * osl / latency_s:.1f}",
        "requests_per_s": "",
        "read_from_chart": "false",
        "notes": (
            f"closed loop at {concurrency} requests in flight, aggregated serving (mode agg) "
            f"of {record['model_path']} on one copy of {record['tp_size']} "
            f"{GPUS[record['system']]} GPUs; {limit} (the record's batch_size), the token "
            "budget per pass not stated; ms_per_token = mean TPOT (silicon_tpot_ms, after the "
            "first token); ttft_ms = mean TTFT; output_tokens_per_s derived by Little's law, "
            "concurrency x output tokens / (TTFT + TPOT x (output tokens - 1)); "
            f"{precision} weights"
            + (" (FP8 GEMMs, gemm_quant_mode fp8)" if precision == "fp8" else " (native dtype)")
        ),
    }


FIGURES = (("itl_ms", "ITL"), ("ttft_ms", "TTFT"), ("tokens_per_s", "tokens/s"))


def scored(records: Sequence[Mapping[str, str]]) -> list[tuple[pf.Row, dict[str, float]]]:
    """Each row of ``records`` with its errors, ln(measured / predicted), under the shipped
    engine profiles (``profile_fitting.load_rows`` reads them as it reads ``rows.csv``)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows(records))
        loaded, _ = pf.load_rows(path)
    out = []
    for row in loaded:
        profile = engine_profile(row.profile)
        predicted = pf.predict_row(row, profile, efficiency_of(profile))
        out.append((row, pf.row_errors(row, predicted)))
    return out


def report(results: Sequence[tuple[pf.Row, dict[str, float]]]) -> list[str]:
    """The per-group median ln(measured / predicted) and each figure's median / p90 |error|."""
    groups: dict[tuple[object, ...], list[dict[str, float]]] = defaultdict(list)
    for row, errors in results:
        key = (
            row.profile,
            row.model_name,
            row.gpu,
            row.precision.value,
            row.tensor_parallel_degree,
        )
        groups[key].append(errors)
    lines = [
        "| profile | model | GPU | precision | TP | rows | ITL | TTFT | tokens/s |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for (profile, model, gpu, precision, degree), group in sorted(
        groups.items(), key=lambda item: str(item[0])
    ):
        medians = [
            statistics.median(e[name] for e in group if name in e)
            if any(name in e for e in group)
            else None
            for name, _ in FIGURES
        ]
        cells = " | ".join("-" if m is None else f"{m:+.2f}" for m in medians)
        lines.append(
            f"| {profile} | {model} | {gpu} | {precision} | {degree} | {len(group)} | {cells} |"
        )
    lines.append("")
    for name, label in FIGURES:
        # |predicted / measured - 1| and its quantiles, as model_validation.py scores a row
        values = [mv._abs_pct(e[name]) for _, e in results if name in e]
        lines.append(
            f"{label}: {len(values)} rows, median |error| {mv._quantile(values, 0.5):.0%}, "
            f"p90 {mv._quantile(values, 0.9):.0%}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("silicon_sample", help=f"a copy of {PATH} at {COMMIT}")
    parser.add_argument("--rows", action="store_true", help="print the rows, do not score")
    args = parser.parse_args(argv)
    with open(args.silicon_sample, newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    if args.rows:
        writer = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
        writer.writerows(rows(records))
        return
    print("\n".join(report(scored(records))))


if __name__ == "__main__":
    main()
