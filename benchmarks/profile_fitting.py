"""Shared by ``fit_profiles.py`` and ``model_validation.py``: the published measurements as the
performance model sees them, the model's prediction of each, the fit of an engine profile's
parameters, and leave-one-source-out residuals.

Everything here is deterministic: rows are read in file order, grids are fixed, coordinate
descent visits parameters in a fixed order and keeps the first of equal errors.

What a row measures (``benchmarks/measurements/README.md``):

- ``ms_per_token``: end-to-end latency / output tokens (prefill included), except rows whose
  notes say ``ITL`` or ``TPOT`` (streaming inter-token latency, prefill excluded);
  when blank, ``e2e_latency_s`` / ``output_tokens`` gives it.
- ``output_tokens_per_s``: output tokens/s of the endpoint (else requests/s x output tokens).
- ``ttft_ms``: time to first token.
- rows without a concurrency whose notes state ``batch size N`` are offline static-batch runs:
  N sequences at once, modelled as N closed-loop clients with a batch limit of N; rows whose
  notes say ``all N requests sent at once`` are offline bursts, modelled as N clients within
  the engine's own batch limit; a burst's inter-token latency (the mean TPOT such a benchmark
  reports) is predicted by replaying the burst through the engine's scheduler simulation
  (``predict_row``).
"""

from __future__ import annotations

import csv
import json
import math
import multiprocessing
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from row_batch import row_batch

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.planning.decode_attention import (
    SHARED,
    DecodeAttention,
    trtllm_decode_attention,
)
from cdk_sagemaker_llm.planning.efficiency import Efficiency, efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import (
    MIN_RESIDUAL_SOURCES,
    MIN_RESIDUALS,
    Band,
    EngineProfile,
    FittedRange,
    KernelSpeed,
    Quantiles,
    Residuals,
    engine_profile,
    row_profile_name,
)
from cdk_sagemaker_llm.planning.performance import (
    CopyModel,
    KvCachePrecision,
    Layout,
    Workload,
    copy_knee,
    kv_cache_precision_problem,
    prediction_band,
    profile_limits,
    profile_model,
)
from cdk_sagemaker_llm.planning.scheduling.copy import simulate_copy
from cdk_sagemaker_llm.planning.scheduling.limits import BatchSettings
from cdk_sagemaker_llm.planning.scheduling.load import Burst

ROOT = Path(__file__).resolve().parent
MEASUREMENTS = ROOT / "measurements"
HELD_OUT = re.compile(
    r"benchmark and optimize endpoint deployment in amazon sagemaker jumpstart|"
    r"benchmark-and-optimize-endpoint-deployment-in-amazon-sagemaker-jumpstart",
    re.IGNORECASE,
)
"""The held-out source of issue 17 (AWS Machine Learning Blog, January 2024) and its copies:
never fitted to; a row citing it is an error."""

VALIDATION_ONLY_SOURCES: Mapping[str, str] = {
    "gpustack-perf-lab-qwen3-14b-32b-2025-11": (
        "the same lab, harness (vllm bench serve, every request at once) and GPUs as the "
        "GPUStack Performance Lab's Qwen3-8B pages, which issue 30 holds out: a fit to these "
        "rows would tune the profiles to that harness, and the held-out check would no longer "
        "be out of sample. (Their vLLM runs are modelled as run, at vLLM 0.11's defaults for "
        "the GPU, row_batch.py, with the burst replayed; their trtllm-serve runs at "
        "trtllm-serve's defaults, max_batch_size 2,048 and max_num_tokens 8,192, row_batch.py.)"
    ),
}
"""Sources that score the profiles (``model_validation.py``) but do not fit them, with why:
neither ``fit_profiles.py`` nor a leave-one-source-out fold trains on their rows."""


def trains(row: Row) -> bool:
    """Whether a fit may use ``row`` (its source is not ``VALIDATION_ONLY_SOURCES``)."""
    return row.source not in VALIDATION_ONLY_SOURCES


MODEL_ALIASES = {
    "meta-llama/llama-3.3-70b-instruct": "llama-3.1-70b",  # same architecture as Llama 3.1 70B
    "llama-3.3-70b": "llama-3.1-70b",
}

INSTANCE_OF_GPU = {
    "A10G": "ml.g5.48xlarge",
    "L4": "ml.g6.48xlarge",
    "L40S": "ml.g6e.48xlarge",
    "A100-40GB": "ml.p4d.24xlarge",
    "A100-80GB": "ml.p4de.24xlarge",
    "H100-80GB": "ml.p5.48xlarge",
    "H200": "ml.p5e.48xlarge",
}
"""Rows measured outside SageMaker name a GPU only: the 8-GPU instance with that GPU."""

FITTED_PARAMETERS = (
    "memory_bandwidth",
    "step_overhead_ms",
    "per_extra_rank_ms",
    "per_layer_per_extra_rank_ms",
    "prefill_compute",
    "all_reduce_scale",
    "decode_compute",
    "per_layer_ms",
    "per_sequence_ms",
    "kv_reread_share",
)
GRIDS: Mapping[str, Sequence[float]] = {
    "memory_bandwidth": [round(0.30 + 0.025 * i, 3) for i in range(27)],  # 0.30 .. 0.95
    "step_overhead_ms": [0.5 * i for i in range(41)],  # 0 .. 20
    "per_layer_ms": [0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.12],
    "per_layer_per_extra_rank_ms": [0.005 * i for i in range(41)],  # 0 .. 0.2
    "per_extra_rank_ms": [0.25 * i for i in range(25)],  # 0 .. 6
    "decode_compute": [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8],
    "prefill_compute": [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8],
    "all_reduce_scale": [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0],
    "per_sequence_ms": [
        0.0,
        0.005,
        0.01,
        0.02,
        0.03,
        0.04,
        0.05,
        0.06,
        0.08,
        0.1,
        0.12,
        0.15,
        0.2,
        0.3,
    ],
    "kv_reread_share": [round(0.1 * i, 1) for i in range(11)],  # 0 .. 1
}
IDENTIFIED_BY: Mapping[str, str] = {
    "memory_bandwidth": "single-request latency",
    "step_overhead_ms": "single-request latency",
    "per_layer_ms": "single-request latency",
    "per_extra_rank_ms": "tensor-parallel sweep",
    "per_layer_per_extra_rank_ms": "tensor-parallel sweep",
    "all_reduce_scale": "tensor-parallel sweep",
    "decode_compute": "throughput or TTFT",
    "prefill_compute": "throughput or TTFT",
    "per_sequence_ms": "batched decode at several model sizes",
    "kv_reread_share": "batched grouped-query decode, one query head per block",
}
"""The kind of row that identifies each fitted parameter. The fit moves a parameter only when
the rows hold at least ``MIN_IDENTIFYING_ROWS`` of its kind (``identified``); otherwise it is
kept at the profile's prior. Without single-request latency rows, bandwidth efficiency and
per-step overheads trade off freely against the compute efficiencies on throughput rows (the
vLLM 0.6 blog alone moved ``lmi-vllm-v0``'s bandwidth efficiency from 0.72 to 0.55 and its
per-layer overhead to 0.08 ms, doubling its single-request latency); without a sweep over TP
degrees of one model, the TP terms are not identified at all. The host's per-sequence cost
and the decode compute efficiency both grow a step with its batch; only the compute part
grows with the model's parameters, so only batched rows (``BATCHED_CONCURRENCY`` or more
sequences) of two or more model sizes tell them apart. The share of a KV head's re-reads that
come from memory moves only a grouped-query model's decode on a kernel that runs one query head
per thread block (``DecodeAttention.per_query_head``), and only where the KV cache is a
visible part of the step: batched rows of such a release."""
BATCHED_CONCURRENCY = 16
"""A row at this many sequences or more is batched decode for ``per_sequence_ms``: at 16
sequences a host cost of 0.05 ms per sequence is 0.8 ms a step, about a tenth of a 7-8B model's
single-GPU step, so below it the term is within the rows' own noise."""
MIN_IDENTIFYING_ROWS = 3
ROUNDS = 3
LITTLE_MIN_RATIO = 0.7
"""A closed-loop row's tokens/s must be at least this share of what Little's law gives from
its own concurrency and end-to-end latency (c x output tokens / e2e); below it the source's
throughput counts idle client time (FMBench waits for each concurrent batch to finish), which
no endpoint model predicts, and only the row's latency is used. Rows dropped this way are
listed by ``model_validation.py``."""
BATCH_SYNCHRONOUS_SOURCES: Mapping[str, str] = {
    "fmbench-2024-01": (
        "FMBench 3_run_inference.ipynb (github.com/aws-samples/foundation-model-benchmarking-"
        "tool): create_combinations splits the payloads into chunks of `concurrency` requests; "
        "run_inferences sends one chunk with asyncio.gather, times it until its slowest "
        "response, and only then sends the next chunk; throughput is the chunk's tokens over "
        "that elapsed time"
    ),
}
"""Sources whose client is batch-synchronous (documented in their code): c requests at once,
the next c only when the slowest of them has answered. Their throughput counts the time the
faster requests of a chunk sit idle waiting for the slowest (max_new_tokens against the mean),
which is the client's, not the endpoint's; the endpoint's closed-loop throughput at that
concurrency is Little's law on the row's measured mean latency (c x output tokens / e2e), and
that is what the model predicts and what its rows use. The rule follows the source's method,
for every row of the source with a concurrency and an end-to-end latency."""
BURST = re.compile(r"requests (?:sent )?at once")
"""Rows whose notes say the requests of a level were sent at once (one wave): every request
arrives together, so the mean time to first token includes queueing behind the other
requests' prefills (about half the wave's prefills), which a closed-loop steady state does
not have; the model predicts the steady state, so such a row's TTFT is not used (its
latency and throughput still are). Without this rule, the four evalscope waves on H100
(vLLM 0.9, 181-459 ms TTFT for ~1,800-token prompts) pulled lmi-vllm-v1's prefill efficiency
to the bottom of its grid (15% of peak) and made its decode latency worse."""
MIN_ROWS_TO_FIT = 8
"""A profile with fewer rows (after leaving a source out) keeps its prior."""


@dataclass(frozen=True)
class Row:
    """One measurement, resolved to the model's inputs."""

    index: int
    source: str
    profile: str
    spec: ModelSpec
    instance_type: InstanceType
    gpu: str
    tensor_parallel_degree: int
    precision: Precision
    input_tokens: int
    output_tokens: int
    concurrency: int
    static_batch: bool
    ms_per_token: float | None
    itl_ms: float | None
    ttft_ms: float | None
    tokens_per_s: float | None
    model_name: str
    batch: BatchSettings | None = None
    """The batch settings the source ran its engine with (``row_batch``); None: the profile's
    documented defaults."""
    burst: bool = False
    """The source sent the row's ``concurrency`` requests at once and timed their draining
    (an offline benchmark), not a steady closed loop."""
    decode_attention: DecodeAttention = SHARED
    """How the measured release's decode attention read a grouped-query KV head
    (``decode_attention_of``)."""
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO
    """The KV cache the row is predicted with: the activation precision, unless its sweep's
    own figures prove a smaller one (``implied_kv_cache``)."""
    engine: str = ""
    """The engine the source measured, as rows.csv names it (``trtllm``, ``lmi-trtllm``)."""

    def as_run(self, profile: EngineProfile) -> EngineProfile:
        """``profile`` with the share of the memory the measured engine took by default
        (``EngineProfile.as_measured_by``: trtllm-bench's 0.9 of the free memory, where the
        LMI container the profile serves takes 0.95)."""
        return profile.as_measured_by(self.engine)

    @property
    def workload(self) -> Workload:
        return Workload(self.input_tokens, self.output_tokens)

    @property
    def layout(self) -> Layout:
        """One copy of the measured layout (a row measures one copy)."""
        return Layout(self.instance_type, self.tensor_parallel_degree, 1)

    def model(self, profile: EngineProfile, efficiency: Efficiency | None = None) -> CopyModel:
        """One copy of the row's layout as the profile (or ``efficiency``) times it, with the
        measured release's decode attention kernel."""
        return profile_model(
            self.spec,
            self.layout,
            self.precision,
            self.workload,
            profile,
            efficiency,
            decode_attention=self.decode_attention,
            kv_cache=self.kv_cache,
        )

    def sweep_key(self) -> tuple[object, ...]:
        """Rows of one sweep differ only in concurrency (and prompt length within 15 %)."""
        return (
            self.source,
            self.profile,
            self.instance_type.name,
            self.tensor_parallel_degree,
            self.model_name,
            self.precision.value,
            self.static_batch,
        )


def _float(text: str) -> float | None:
    text = (text or "").strip()
    return float(text) if text else None


EXTRA_SPECS = {
    # Qwen/Qwen3-4B config.json: 36 layers, 32 query / 8 KV heads of 128, 40,960 positions.
    "qwen/qwen3-4b": ModelSpec.custom(
        "qwen3-4b",
        parameters=4.02e9,
        layers=36,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        max_context=40_960,
    ),
    # Qwen/Qwen3-14B model card and config.json: 14.8B parameters, 40 layers, 40 query / 8 KV
    # heads of 128 (hidden 5,120), 40,960 positions.
    "qwen/qwen3-14b": ModelSpec.custom(
        "qwen3-14b",
        parameters=14.8e9,
        layers=40,
        attention_heads=40,
        kv_heads=8,
        head_dim=128,
        max_context=40_960,
    ),
    # Qwen/Qwen3-32B model card and config.json: 32.8B parameters, 64 layers, 64 query / 8 KV
    # heads of 128 (hidden 5,120: the heads are wider than the hidden size), 40,960 positions.
    "qwen/qwen3-32b": ModelSpec.custom(
        "qwen3-32b",
        parameters=32.8e9,
        layers=64,
        attention_heads=64,
        kv_heads=8,
        head_dim=128,
        max_context=40_960,
    ),
    # meta-llama/Llama-3.1-405B-Instruct config.json: 126 layers, 128 query / 8 KV heads of 128
    # (hidden 16,384), 131,072 positions; 405.9e9 parameters (the model card's 405B).
    "meta-llama/llama-3.1-405b-instruct": ModelSpec.custom(
        "llama-3.1-405b",
        parameters=405.9e9,
        layers=126,
        attention_heads=128,
        kv_heads=8,
        head_dim=128,
        max_context=131_072,
    ),
}
"""Measured models the catalog has no preset for."""


def _spec(name: str) -> ModelSpec | None:
    if name.strip().lower() in EXTRA_SPECS:
        return EXTRA_SPECS[name.strip().lower()]
    key = MODEL_ALIASES.get(name.strip().lower(), name.strip().lower())
    try:
        return ModelSpec.preset(key)
    except Exception:
        return ModelSpec.from_hugging_face_id(name)


def _precision(name: str) -> Precision:
    key = name.strip().lower()
    if key.startswith("int4"):
        return Precision.INT4_AWQ
    return Precision.of(key)


def load_rows(path: Path = MEASUREMENTS / "rows.csv") -> tuple[list[Row], list[str]]:
    """The usable rows and, for each row left out, why."""
    rows: list[Row] = []
    skipped: list[str] = []
    with path.open(newline="", encoding="utf-8") as handle:
        for index, raw in enumerate(csv.DictReader(handle), start=2):
            if HELD_OUT.search(raw["citation"]) or HELD_OUT.search(raw["notes"]):
                raise ValueError(f"row {index} cites the held-out JumpStart benchmark post")
            row, why = _row(index, raw)
            if row is None:
                skipped.append(f"line {index} ({raw['source_id']}, {raw['model']}): {why}")
            else:
                rows.append(row)
    return implied_kv_cache(rows), skipped


KV_IMPLIED_MARGIN = 1.15
"""How far a row's measured sequences decoding at once must exceed what an activation-precision
KV cache holds before its sweep is predicted with an FP8 one: past the spread of the two
figures it is read from (a published ITL and throughput, each a mean over the run)."""


def decoding_at_once(row: Row) -> float | None:
    """The sequences the row's copy decoded at once, from its own figures: tokens/s x the
    inter-token latency (Little's law over the decode phase: each decoding sequence emits one
    token per inter-token latency; queueing and prefill sit in the TTFT, not in it); None
    without both figures, or for a static batch (its batch is stated)."""
    if row.itl_ms is None or row.tokens_per_s is None or row.static_batch:
        return None
    return row.tokens_per_s * row.itl_ms / 1000


def implied_kv_cache(rows: Sequence[Row]) -> list[Row]:
    """``rows`` with each sweep predicted with an FP8 KV cache where its own figures prove
    one: a row decodes more sequences at once (``decoding_at_once``) than the activation
    precision's KV cache holds under the engine's allocation (``profile_limits``), by more
    than ``KV_IMPLIED_MARGIN``, and the FP8 cache holds them. The memory law, not the
    source's notes: NIM 1.8.0's Llama 3.3 70B FP8 at TP2 on H100 (5,000 / 500 tokens)
    decodes 85-86 sequences at 100-250 in flight where a 16-bit cache holds 53. The FP8 KV
    cache the TensorRT-LLM offline tables state stays unread (benchmarks/README.md, "FP8 KV
    cache: why the validation does not read it yet")."""
    proven: set[tuple[object, ...]] = set()
    for row in rows:
        decoding = decoding_at_once(row)
        if decoding is None or row.sweep_key() in proven:
            continue
        if kv_cache_precision_problem(row.instance_type, KvCachePrecision.FP8):
            continue
        sixteen_bit = _sequences_held(row, KvCachePrecision.AUTO)
        fp8 = _sequences_held(row, KvCachePrecision.FP8)
        if sixteen_bit * KV_IMPLIED_MARGIN < decoding <= fp8 * KV_IMPLIED_MARGIN:
            proven.add(row.sweep_key())
    return [
        replace(row, kv_cache=KvCachePrecision.FP8) if row.sweep_key() in proven else row
        for row in rows
    ]


def _sequences_held(row: Row, kv_cache: KvCachePrecision) -> int:
    """The sequences one copy of the row's layout holds with a ``kv_cache`` KV cache, under
    its engine's allocation and the row's batch settings (``_capacity``, as the fit reads it)."""
    held = replace(row, kv_cache=kv_cache)
    profile = row.as_run(engine_profile(row.profile))
    return _capacity(held, profile, held.model(profile))


TRTLLM_RELEASE = re.compile(r"(?:TensorRT-LLM|backend) (\d+)\.(\d+)|^(\d+)\.(\d+)")
"""A TensorRT-LLM release in a row's ``engine_version``: ``0.9.0``, ``DJL 0.26.0 /
TensorRT-LLM 0.7.1``, ``r24.07 (Triton TensorRT-LLM backend 0.11)``."""


def decode_attention_of(engine: str, engine_version: str, spec: ModelSpec) -> DecodeAttention:
    """The decode attention the row's engine release ran (``trtllm_decode_attention`` for a
    TensorRT-LLM release the row states); shared for any other engine, and for NIM, whose
    TensorRT-LLM release the rows do not state."""
    if engine.strip().lower() not in ("trtllm", "lmi-trtllm"):
        return DecodeAttention.shared()
    match = TRTLLM_RELEASE.search(engine_version)
    if match is None:
        return DecodeAttention.shared()
    major, minor = (int(part) for part in match.groups() if part is not None)
    return trtllm_decode_attention((major, minor), spec)


def _row(index: int, raw: Mapping[str, str]) -> tuple[Row | None, str]:
    spec = _spec(raw["model"])
    if spec is None:
        return None, "model not in the catalog"
    instance_name = raw["instance_type"].strip() or INSTANCE_OF_GPU.get(raw["gpu"])
    if not instance_name:
        return None, "no instance type or known GPU"
    instance_type = InstanceType.of(instance_name)
    output_tokens = int(float(raw["output_tokens"]))
    input_tokens = int(float(raw["input_tokens"]))
    notes = raw["notes"]
    concurrency_text = raw["concurrency"].strip()
    static = False
    burst = re.search(r"all (\d+) requests sent at once", notes)
    if concurrency_text:
        concurrency = int(float(concurrency_text))
    elif burst is not None:
        # An offline burst: N requests in flight at first, drained by the engine's batch.
        concurrency = int(burst.group(1))
    else:
        match = re.search(r"batch size (\d+)", notes)
        if match is None:
            return None, "no concurrency and no batch size"
        concurrency, static = int(match.group(1)), True
    ms = _float(raw["ms_per_token"])
    itl = None
    if ms is not None and re.search(r"\bITL\b|\bTPOT\b", notes):
        itl, ms = ms, None
    e2e = _float(raw["e2e_latency_s"])
    if ms is None and itl is None and e2e is not None and output_tokens > 1:
        ms = e2e * 1000 / output_tokens
    tokens = _tokens_per_s(raw, output_tokens, None if static else concurrency, e2e)
    ttft = _float(raw["ttft_ms"])
    if ttft is not None and BURST.search(notes):
        ttft = None  # a wave's TTFT queues behind the wave's own prefills: not a steady state
    if ms is None and itl is None and tokens is None and ttft is None:
        return None, "no metric"
    profile = row_profile_name(raw["engine"], raw["engine_version"])
    tp = int(raw["tp"])
    precision = _precision(raw["precision"])
    batch = row_batch(
        notes,
        engine_profile(profile),
        spec=spec,
        instance_type=instance_type,
        tensor_parallel_degree=tp,
        precision=precision,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )
    return (
        Row(
            index=index,
            source=raw["source_id"],
            profile=profile,
            spec=spec,
            instance_type=instance_type,
            gpu=raw["gpu"],
            tensor_parallel_degree=tp,
            precision=precision,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            concurrency=concurrency,
            static_batch=static,
            ms_per_token=ms,
            itl_ms=itl,
            ttft_ms=ttft,
            tokens_per_s=tokens,
            model_name=spec.name,
            batch=batch,
            burst=burst is not None and not concurrency_text,
            decode_attention=decode_attention_of(raw["engine"], raw["engine_version"], spec),
            engine=raw["engine"],
        ),
        "",
    )


def _tokens_per_s(
    raw: Mapping[str, str], output_tokens: int, closed_loop_clients: int | None, e2e: float | None
) -> float | None:
    """The row's output tokens/s as the endpoint served them: the source's figure (or
    requests/s x output tokens); for a closed-loop row with an end-to-end latency, Little's law
    on that latency when the source's client is batch-synchronous
    (``BATCH_SYNCHRONOUS_SOURCES``), and None when the source's figure falls below
    ``LITTLE_MIN_RATIO`` of it (not a steady state: the row's latency still counts)."""
    tokens = _float(raw["output_tokens_per_s"])
    rps = _float(raw["requests_per_s"])
    if tokens is None and rps is not None:
        tokens = rps * output_tokens
    if e2e is None or closed_loop_clients is None or not raw["concurrency"].strip():
        return tokens
    closed_loop = closed_loop_clients * output_tokens / e2e
    if raw["source_id"] in BATCH_SYNCHRONOUS_SOURCES:
        return closed_loop  # the endpoint's, not the batch-synchronous client's
    if tokens is not None and tokens < LITTLE_MIN_RATIO * closed_loop:
        return None
    return tokens


# ----- The model's prediction of a row ----------------------------------------------------------


@dataclass(frozen=True)
class Predicted:
    ms_per_token: float
    itl_ms: float
    ttft_ms: float
    tokens_per_s: float


def predict_row(row: Row, profile: EngineProfile, efficiency: Efficiency) -> Predicted:
    """The model's figures for one measured row (one copy, the row's concurrency): the closed
    form's, and for a burst's inter-token latency the burst replayed (``burst_itl_ms``), with
    the memory share the measured engine took (``Row.as_run``)."""
    profile = row.as_run(profile)
    model = row.model(profile, efficiency)
    capacity = _capacity(row, profile, model)
    at = model.level(row.concurrency, capacity)
    ms, ttft, e2e, tokens = at.ms_per_token, at.ttft_ms, at.e2e_ms, at.tokens_per_s
    decode_ms = (e2e - ttft) / max(1, row.output_tokens - 1)
    if row.burst and row.itl_ms is not None:
        decode_ms = burst_itl_ms(row, profile, model)
    return Predicted(ms, decode_ms, ttft, tokens)


def burst_itl_ms(row: Row, profile: EngineProfile, model: CopyModel) -> float:
    """The mean inter-token latency (TPOT) of the row's burst replayed through the engine's
    scheduler simulation (``scheduling.load.Burst``, under the row's batch settings), as the
    source measured it: vLLM's benchmark reports the mean over every request of (latency - TTFT)
    / (output tokens - 1) (``SimulationResult.mean_tpot_ms``; the rows store "Mean TPOT", not
    the pooled "Mean ITL"), with each engine's KV cache as it allocates it
    (``EngineProfile.engine_memory``), and in a
    burst the other requests' prefills share those steps (a chunked-prefill engine batches
    prompt chunks with the running decodes; vLLM documentation, "Optimization and Tuning",
    "Chunked Prefill"), so a request's TPOT counts them. A steady closed loop (the closed form)
    has no such wave of prefills. Only the TPOT is replayed: a burst of equal requests serves
    about the steady state's tokens/s (the batch runs full but for its last wave), so its
    throughput keeps the closed form, which the fit's hundreds of loss evaluations per fold can
    afford (benchmarks/README.md, "Bursts")."""
    result = simulate_copy(model, profile, Burst(row.concurrency), batch=row.batch)
    return result.mean_tpot_ms()


def band_of_row(row: Row, profile: EngineProfile) -> Band:
    """The band ``profile`` puts around its prediction of one copy of the row's layout."""
    return prediction_band(profile, row.spec, row.layout, row.workload, row.precision)


def banded_figures(
    row: Row, predicted: Predicted, profile: EngineProfile
) -> list[tuple[float, float, Callable[[float], tuple[float, float]]]]:
    """The row's measured figures (ms/token, inter-token latency, tokens/s), each with the
    model's figure and the p10-p90 range ``profile``'s band puts around it (one copy)."""
    band = band_of_row(row, profile)
    figures = (
        (row.ms_per_token, predicted.ms_per_token, band.ms_range),
        (row.itl_ms, predicted.itl_ms, band.ms_range),
        (row.tokens_per_s, predicted.tokens_per_s, band.tokens_range),
    )
    return [
        (measured, model, limits) for measured, model, limits in figures if measured is not None
    ]


def predicted_knee(row: Row, profile: EngineProfile, efficiency: Efficiency) -> int:
    """The knee of one copy of the row's layout and workload under the engine's batch limit
    (``copy_knee`` without an SLO: the last concurrency before doubling it buys < 10 %)."""
    profile = row.as_run(profile)
    model = row.model(profile, efficiency)
    limits, _ = profile_limits(model, profile, batch=row.batch)
    return copy_knee(model, limits).concurrency or 1  # 0 (or a sweep's None): one request


_CAPACITY: dict[tuple[object, ...], int] = {}


def _capacity(row: Row, profile: EngineProfile, model: CopyModel) -> int:
    if row.static_batch:
        return row.concurrency
    key = (row.index, profile.name, row.kv_cache)
    if key not in _CAPACITY:
        limits, _ = profile_limits(model, profile, batch=row.batch)
        _CAPACITY[key] = max(1, limits.capacity)
    return _CAPACITY[key]


def row_errors(row: Row, predicted: Predicted) -> dict[str, float]:
    """ln(measured / predicted) of each metric the row has."""
    errors = {}
    for name, measured, model in (
        ("ms_per_token", row.ms_per_token, predicted.ms_per_token),
        ("itl_ms", row.itl_ms, predicted.itl_ms),
        ("ttft_ms", row.ttft_ms, predicted.ttft_ms),
        ("tokens_per_s", row.tokens_per_s, predicted.tokens_per_s),
    ):
        if measured is not None and measured > 0 and model > 0:
            errors[name] = math.log(measured / model)
    return errors


# ----- Fitting ----------------------------------------------------------------------------------


def prior_efficiency(profile: EngineProfile) -> Efficiency:
    """The profile's hand-set prior (its JSON ``prior``), before any fit: ``efficiency_of``
    the profile with its prior values, so the step overhead is the planning layer's
    (``Efficiency.step_overhead_s``), not a second formula here."""
    prior = profile.raw.get("prior")
    if not prior:
        return efficiency_of(profile)
    return efficiency_of(
        replace(
            profile,
            memory_bandwidth=prior["memory_bandwidth"],
            decode_compute=prior["decode_compute"],
            prefill_compute=prior["prefill_compute"],
            base_overhead_ms=prior["base_ms"],
            per_layer_ms=prior["per_layer_ms"],
            per_layer_per_extra_rank_ms=prior["per_layer_per_extra_rank_ms"],
            per_extra_rank_ms=prior.get("per_extra_rank_ms", 0.0),
            all_reduce_scale=prior["all_reduce_scale"],
            per_sequence_ms=prior.get("per_sequence_ms", 0.0),
            kv_reread_share=prior.get("kv_reread_share", 0.0),
            rank_cost_over_nvlink=prior.get("rank_cost_over_nvlink", True),
        )
    )


def loss(rows: Sequence[Row], profile: EngineProfile, efficiency: Efficiency) -> float:
    """Sum of squared log errors over every metric of every row (TTFT weighted 0.5: the
    sources measure it least consistently). TTFT under load is left out for an engine that
    chunks its prefills (``Batching.chunked_prefill``: vLLM V1, TGI 3): there a new request's
    prompt is fed in chunks within each step's token budget beside the running decodes (vLLM
    documentation, "Optimization and Tuning": chunked prefill prioritises decode requests and
    batches prefill chunks into the remaining max_num_batched_tokens), so its TTFT under load
    is a count of decode steps, which the model's TTFT (its own and the other clients'
    prefills at the prefill efficiency) does not describe; fitted to it, the prefill
    efficiency of lmi-vllm-v1 ran to the bottom of its grid (15% of peak) to stand in for
    the missing steps. At one request TTFT is the prefill and still counts."""
    total = 0.0
    chunked = profile.batching.chunked_prefill
    for row in rows:
        for name, error in row_errors(row, predict_row(row, profile, efficiency)).items():
            if name == "ttft_ms" and chunked and row.concurrency > 1:
                continue
            total += error * error * (0.5 if name == "ttft_ms" else 1.0)
    return total


def rows_of_kind(rows: Sequence[Row]) -> dict[str, int]:
    """How many of ``rows`` are of each kind in ``IDENTIFIED_BY``: single-request latency
    (concurrency 1 with ms/token or ITL), tensor-parallel sweep (rows of one source, model, GPU
    and precision measured at two or more TP degrees), throughput or TTFT."""
    degrees: dict[tuple[object, ...], set[int]] = {}
    for row in rows:
        key = (row.source, row.model_name, row.gpu, row.precision.value)
        degrees.setdefault(key, set()).add(row.tensor_parallel_degree)
    return {
        "single-request latency": sum(
            row.concurrency == 1 and (row.ms_per_token or row.itl_ms) is not None for row in rows
        ),
        "tensor-parallel sweep": sum(
            len(degrees[(row.source, row.model_name, row.gpu, row.precision.value)]) > 1
            for row in rows
        ),
        "throughput or TTFT": sum(
            row.tokens_per_s is not None or row.ttft_ms is not None for row in rows
        ),
        "batched decode at several model sizes": _batched_decode_rows(rows),
        "batched grouped-query decode, one query head per block": sum(
            row.concurrency >= BATCHED_CONCURRENCY
            and row.decode_attention.kv_read_factor(row.spec, 1.0) > 1
            and (row.tokens_per_s or row.ms_per_token or row.itl_ms) is not None
            for row in rows
        ),
    }


def _batched_decode_rows(rows: Sequence[Row]) -> int:
    """Rows at ``BATCHED_CONCURRENCY`` or more sequences with a decode figure (tokens/s,
    ms/token or ITL), counted only when they span two or more model sizes (else 0)."""
    batched = [
        row
        for row in rows
        if row.concurrency >= BATCHED_CONCURRENCY
        and (row.tokens_per_s or row.ms_per_token or row.itl_ms) is not None
    ]
    return len(batched) if len({row.spec.active_parameters for row in batched}) > 1 else 0


def identified(
    rows: Sequence[Row], profile: EngineProfile | None = None
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The parameters ``rows`` identify (``FITTED_PARAMETERS`` order), and for each other one
    why it keeps its prior. A profile whose prior fixes its host per-sequence cost
    (``fixed_by_source``) never fits it."""
    counts = rows_of_kind(rows)
    fixed = fixed_by_source(profile) if profile is not None else {}
    names, kept = [], {}
    for name in FITTED_PARAMETERS:
        kind = IDENTIFIED_BY[name]
        if name in fixed:
            kept[name] = fixed[name]
        elif counts[kind] >= MIN_IDENTIFYING_ROWS:
            names.append(name)
        else:
            kept[name] = (
                f"kept at the prior: {counts[kind]} {kind} rows "
                f"(< {MIN_IDENTIFYING_ROWS}) cannot identify it"
            )
    return tuple(names), kept


def fixed_by_source(profile: EngineProfile) -> dict[str, str]:
    """Parameters the profile's sources fix rather than estimate, and why: an engine whose
    cited architecture overlaps its per-request host work with the GPU's step (the JSON
    prior's ``per_sequence_fixed``: TensorRT-LLM's C++ batch manager) has no host
    per-sequence cost to fit; a fit there only absorbs other
    misfits (fitted without NVIDIA's own C++ benchmark, lmi-trtllm's rows put 0.06 ms on it and
    predicted two of that benchmark's rows at 40% and 62% of their measured tokens/s)."""
    prior = profile.raw.get("prior") or {}
    if prior.get("per_sequence_fixed"):
        return {
            "per_sequence_ms": "kept at the prior: the engine overlaps its per-request host "
            "work with the GPU (overhead.per_sequence_source), so no row can identify it"
        }
    return {}


BOUNDED: Mapping[str, str] = {
    "memory_bandwidth": "memory_bandwidth",
    "decode_compute": "compute",
    "prefill_compute": "compute",
}
"""Efficiencies with a physical ceiling, and the ``AchievedPeak`` figure that bounds each."""
MEASURED_BY: Mapping[str, str] = {
    "memory_bandwidth": "a streaming kernel",
    "compute": "a dense GEMM",
}
"""What measured each ``AchievedPeak`` figure, as the profiles' JSON states an excess."""


@dataclass(frozen=True)
class Bound:
    """The physical ceiling of one fitted efficiency over a profile's rows: the lowest measured
    ceiling (``catalog.instance_types.AchievedPeak``) of the accelerators they ran on, since one
    efficiency serves them all."""

    parameter: str
    value: float
    gpu: str
    """The row GPU whose ceiling is the lowest."""
    source: str


def physical_bounds(rows: Sequence[Row]) -> dict[str, Bound]:
    """Each bounded efficiency's ceiling over ``rows`` (``BOUNDED``); an efficiency none of the
    rows' accelerators has a measured ceiling for is bounded by its grid only (absent)."""
    bounds: dict[str, Bound] = {}
    for row in rows:
        accelerator = row.instance_type.accelerator
        achieved = accelerator.achieved if accelerator else None
        if achieved is None:
            continue
        for parameter, figure in BOUNDED.items():
            value = getattr(achieved, figure)
            if value is not None and (parameter not in bounds or value < bounds[parameter].value):
                bounds[parameter] = Bound(parameter, value, row.gpu, achieved.source_of(figure))
    return bounds


def _within(name: str, value: float, bounds: Mapping[str, Bound]) -> bool:
    return name not in bounds or value <= bounds[name].value + 1e-9


def measured_floors(profile: EngineProfile) -> dict[str, float]:
    """Lower bounds a profile's prior reads from a measurement the rows cannot make (the JSON
    prior's ``step_overhead_floor_ms``, with its ``step_overhead_floor_source``): the fixed
    cost of one forward pass, which single-request rows of 32-80-layer models cannot tell from
    a per-layer cost, measured on a one-layer pass."""
    prior = profile.raw.get("prior") or {}
    if "step_overhead_floor_ms" not in prior:
        return {}
    return {"step_overhead_ms": float(prior["step_overhead_floor_ms"])}


def _bounded_start(start: Efficiency, bounds: Mapping[str, Bound]) -> Efficiency:
    """``start`` with each efficiency above its ceiling lowered to it."""
    lowered: dict[str, Any] = {
        name: bound.value for name, bound in bounds.items() if getattr(start, name) > bound.value
    }
    return replace(start, **lowered) if lowered else start


def exceeded_bounds(rows: Sequence[Row], efficiency: Efficiency) -> dict[str, str]:
    """For each efficiency fitted past its physical ceiling on ``rows``' accelerators
    (``physical_bounds``): by how much, in words. There the fit stands in for a term the model
    is missing; each profile's JSON says so (``fit_profiles.py``)."""
    exceeded: dict[str, str] = {}
    for name, bound in physical_bounds(rows).items():
        value = getattr(efficiency, name)
        if value > bound.value + 1e-9:
            kernel = MEASURED_BY[BOUNDED[name]]
            exceeded[name] = (
                f"fitted {value:g} of peak, past the {bound.value:g} {kernel} reaches on "
                f"{bound.gpu}: the fit stands in for a cost the model is missing"
            )
    return exceeded


KERNEL_GRID = [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
KERNEL_PER_LAYER_GRID = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6]
"""ms per layer a quantized kernel's launches may cost (``KernelSpeed.per_layer_ms``), fitted
only for a kernel whose prior cites such a cost (``per_layer_source``)."""
KERNEL_COMPUTE_GRID = [1.0, 1.2, 1.4, 1.6, 1.8, 2.0]
"""An FP8 kernel's compute against FP16's (``KernelSpeed.compute``), fitted only for a kernel
whose prior says why it may pass FP16's rate (``compute_source``): from FP16's rate to the FP8
tensor cores' dense peak, twice FP16's on every FP8 GPU of the catalog (NVIDIA H100, H200, L40S
and L4 datasheets), a physical ceiling like ``physical_bounds``'."""
MIN_ROWS_TO_FIT_KERNEL = 4
"""Quantized rows a profile needs before its kernel's weight-read speed is fitted rather than
taken from the published figure in its JSON."""


def prior_profile(profile: EngineProfile) -> EngineProfile:
    """``profile`` with its prior kernels (the JSON ``prior_kernels`` when a fit replaced
    them)."""
    prior = profile.raw.get("prior_kernels")
    if not prior:
        return profile
    return replace(
        profile,
        kernels={name: KernelSpeed.of(k) for name, k in prior.items()},
    )


def _kernel_grids(kernel: KernelSpeed) -> list[tuple[str, Sequence[float]]]:
    """The quantized kernel's fitted speeds and their grids: its weight-read speed, its
    compute where its prior says why it may pass FP16's, and its launch cost per layer where
    its prior cites one."""
    grids: list[tuple[str, Sequence[float]]] = [("weight_read", KERNEL_GRID)]
    if kernel.compute_source:
        grids.append(("compute", KERNEL_COMPUTE_GRID))
    if kernel.per_layer_source:
        grids.append(("per_layer_ms", KERNEL_PER_LAYER_GRID))
    return grids


def _with_kernel_speed(kernel: KernelSpeed, field: str, value: float) -> KernelSpeed:
    """``kernel`` with one of its fitted speeds (``_kernel_grids``) set to ``value``."""
    if field == "per_layer_ms":
        return replace(kernel, per_layer_ms=value)
    if field == "compute":
        return replace(kernel, compute=value)
    return replace(kernel, weight_read=value)


def within_ceilings(profile: EngineProfile) -> bool:
    """Whether the profile's prior asks to be fitted within the physical ceilings
    (``prior.fit_within_ceilings``, with its reason): its model has the terms the fit used
    to stand in for, so the bounded fit is what ships (``fit_profiles.py`` without
    ``--bounded``)."""
    prior = profile.raw.get("prior") or {}
    return bool(prior.get("fit_within_ceilings"))


def fit(
    rows: Sequence[Row], profile: EngineProfile, bounded: bool = False
) -> tuple[Efficiency, EngineProfile, bool]:
    """The efficiencies and overheads the rows identify (``identified``; the others keep the
    prior), and the weight-read speed of quantized kernels with enough rows, that minimise
    ``loss`` over ``rows``: coordinate descent on fixed grids from the prior; ``bounded`` (or a
    profile ``within_ceilings``): each efficiency at most its physical ceiling on the rows'
    accelerators (``physical_bounds``; ``fit_profiles.py --bounded``). Returns the
    efficiency, the profile with its kernels, and whether a fit happened (False: too few rows,
    the prior is kept)."""
    start = prior_efficiency(profile)
    profile = prior_profile(profile)
    if len(rows) < MIN_ROWS_TO_FIT:
        return start, profile, False
    kernels = sorted(
        name
        for name in profile.kernels
        if sum(row.precision.value == name for row in rows) >= MIN_ROWS_TO_FIT_KERNEL
    )
    names, _ = identified(rows, profile)
    bounds = physical_bounds(rows) if bounded or within_ceilings(profile) else {}
    floors = measured_floors(profile)
    best = _bounded_start(start, bounds)
    best_loss = loss(rows, profile, best)
    for _ in range(ROUNDS):
        improved = False
        for name in names:
            for value in (
                v
                for v in GRIDS[name]
                if _within(name, v, bounds) and v >= floors.get(name, 0.0) - 1e-9
            ):
                fitted: dict[str, Any] = {name: value}
                candidate = replace(best, **fitted)
                candidate_loss = loss(rows, profile, candidate)
                if candidate_loss < best_loss - 1e-12:
                    best, best_loss, improved = candidate, candidate_loss, True
        for kernel in kernels:
            for field, grid in _kernel_grids(profile.kernels[kernel]):
                for value in grid:
                    changed = _with_kernel_speed(profile.kernels[kernel], field, value)
                    candidate_profile = replace(
                        profile, kernels={**profile.kernels, kernel: changed}
                    )
                    candidate_loss = loss(rows, candidate_profile, best)
                    if candidate_loss < best_loss - 1e-12:
                        profile, best_loss, improved = candidate_profile, candidate_loss, True
        if not improved:
            break
    return best, profile, True


@dataclass(frozen=True)
class HeldOutPrediction:
    """A row predicted by the profile fitted without the row's source."""

    row: Row
    predicted: Predicted
    errors: dict[str, float]
    fitted: bool
    """False when the profile had too few other rows and its prior predicted the row."""
    knee: int
    """The knee of the row's copy (``copy_knee``, no SLO) as the same fit predicts it: where the
    row's load regime is read when its own sweep does not locate a measured knee."""


def leave_one_source_out(
    rows: Sequence[Row],
    profiles: Iterable[str] | None = None,
    progress: Callable[[str], None] | None = None,
    bounded: bool = False,
) -> list[HeldOutPrediction]:
    """Every row predicted by its profile fitted to the rows of all other sources (``bounded``:
    within the physical ceilings, as ``fit``). The folds (one refit per profile and source) are
    independent: they run in parallel on the cores this process may use (``_fold_workers``),
    each in a forked process, and the result does not depend on how many."""
    names = sorted({row.profile for row in rows} if profiles is None else set(profiles))
    own = {name: tuple(row for row in rows if row.profile == name) for name in names}
    folds = [
        _Fold(name, source, own[name], bounded)
        for name in names
        for source in sorted({row.source for row in own[name]})
    ]
    # The largest fits first, so that no core is left with a long one at the end.
    folds.sort(key=lambda fold: -len(fold.rows))
    results: list[HeldOutPrediction] = []
    workers = _fold_workers(len(folds))
    with ExitStack() as stack:
        outcomes: Iterable[list[HeldOutPrediction]] = map(_held_out_fold, folds)
        if workers > 1:
            # fork: a worker starts with the rows and modules already loaded, and a script that
            # calls this at its top level (no ``if __name__ == "__main__":``) works, which
            # spawn's re-import of the main module refuses. A worker writes nothing to the
            # streams that a parent's thread may hold (jsii's stderr sink, in the tests) and
            # exits without the parent's exit handlers (multiprocessing ends a forked worker
            # with os._exit).
            fork = multiprocessing.get_context("fork")
            pool = stack.enter_context(ProcessPoolExecutor(workers, mp_context=fork))
            outcomes = pool.map(_held_out_fold, folds)
        for fold, outcome in zip(folds, outcomes, strict=True):
            if progress:
                progress(f"{fold.profile}: fitted without {fold.source}")
            results.extend(outcome)
    results.sort(key=lambda held: held.row.index)
    return results


@dataclass(frozen=True)
class _Fold:
    """One fold of ``leave_one_source_out``: ``profile``'s rows, fitted without ``source``'s."""

    profile: str
    source: str
    rows: tuple[Row, ...]
    bounded: bool


def _held_out_fold(fold: _Fold) -> list[HeldOutPrediction]:
    """The rows of ``fold.source``, predicted by the profile fitted to the others' rows."""
    profile = engine_profile(fold.profile)
    train = [row for row in fold.rows if row.source != fold.source and trains(row)]
    efficiency, trained, fitted = fit(train, profile, fold.bounded)
    results = []
    for row in fold.rows:
        if row.source != fold.source:
            continue
        predicted = predict_row(row, trained, efficiency)
        knee = predicted_knee(row, trained, efficiency)
        results.append(HeldOutPrediction(row, predicted, row_errors(row, predicted), fitted, knee))
    return results


def _fold_workers(folds: int) -> int:
    """Processes for ``folds`` folds: one per core this process may run on (by affinity where
    the platform has it, else the CPU count), at most one per fold (1: in this process, no
    pool)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(folds, cores or 1))


def fitted_range(rows: Sequence[Row]) -> FittedRange:
    """What ``rows`` cover (a profile fitted to them extrapolates outside it)."""
    sizes = [row.spec.parameters / 1e9 for row in rows]
    inputs = [row.input_tokens for row in rows]
    return FittedRange(
        gpus=tuple(sorted({row.gpu for row in rows})),
        tensor_parallel_degrees=tuple(sorted({row.tensor_parallel_degree for row in rows})),
        parameters_billion=(round(min(sizes), 1), round(max(sizes), 1)),
        input_tokens=(min(inputs), max(inputs)),
        rows=len(rows),
        sources=tuple(sorted({row.source for row in rows})),
    )


def residuals_of(
    held: Sequence[HeldOutPrediction],
    source: str,
    pool: Sequence[HeldOutPrediction] = (),
) -> Residuals:
    """The band's residuals (``EngineProfile.residuals``) of ``held``; a figure with fewer
    than ``MIN_RESIDUALS`` residuals in ``held``, or with residuals of fewer than
    ``MIN_RESIDUAL_SOURCES`` sources, takes the quantiles of ``pool`` (every fitted profile's
    held-out predictions) instead, marked pooled (``band_of`` widens it)."""
    own_ms, own_tokens = residual_values(held)
    pool_ms, pool_tokens = residual_values(pool)
    ms_sources = {h.row.source for h in held if "ms_per_token" in h.errors or "itl_ms" in h.errors}
    token_sources = {h.row.source for h in held if "tokens_per_s" in h.errors}
    pooled = []
    if (len(own_ms) < MIN_RESIDUALS or len(ms_sources) < MIN_RESIDUAL_SOURCES) and pool_ms:
        own_ms = pool_ms
        pooled.append("ms_per_token")
    too_few_tokens = len(own_tokens) < MIN_RESIDUALS or len(token_sources) < MIN_RESIDUAL_SOURCES
    if too_few_tokens and pool_tokens:
        own_tokens = pool_tokens
        pooled.append("tokens_per_s")
    names = sorted({h.row.profile for h in pool})
    pooled_source = (
        f"pooled leave-one-source-out residuals of {len(pool)} rows of the fitted profiles "
        f"({', '.join(names)}), widened as an extrapolation"
        if pooled
        else ""
    )
    return Residuals(
        Quantiles.of(own_ms),
        Quantiles.of(own_tokens),
        len(held),
        source,
        tuple(pooled),
        pooled_source,
    )


def residual_values(held: Sequence[HeldOutPrediction]) -> tuple[list[float], list[float]]:
    """ln(measured / predicted) of ms/token (ITL rows included) and of tokens/s."""
    ms = [h.errors[k] for h in held for k in ("ms_per_token", "itl_ms") if k in h.errors]
    tokens = [h.errors["tokens_per_s"] for h in held if "tokens_per_s" in h.errors]
    return ms, tokens


def residual_quantiles(held: Sequence[HeldOutPrediction]) -> tuple[Quantiles, Quantiles]:
    """Quantiles of ln(measured / predicted) for ms/token (ITL rows included) and tokens/s."""
    ms, tokens = residual_values(held)
    return Quantiles.of(ms), Quantiles.of(tokens)


def sources_document() -> dict[str, dict[str, object]]:
    """``sources.json`` by id."""
    data = json.loads((MEASUREMENTS / "sources.json").read_text(encoding="utf-8"))
    items = data if isinstance(data, list) else data.get("sources", [])
    return {item["id"]: item for item in items}
