"""One workload measured on two GPUs by the same source: how much faster the second ran, against
how much faster the model says it runs (issue 30 items 2 and 3).

``python benchmarks/gpu_pairs.py`` pairs the rows of ``measurements/rows.csv`` that one source
measured with the same engine profile, model, precision, tensor-parallel degree, prompt length,
concurrency and benchmark kind on two GPUs (output lengths within ``OUTPUT_TOLERANCE``: a run
without ``--ignore-eos`` stops some requests early), and prints per pair:

- the measured output tokens/s ratio (second GPU / first) and the model's, both GPUs predicted by
  the shipped engine profile (the ratio of two predictions of one profile, so a bias the profile
  shares on both GPUs cancels);
- the spec sheets' ratios of memory bandwidth and dense FP16/BF16 compute (the catalog's figures)
  for context: a decode step scales with the first, a prefill with the second, a host cost with
  neither;
- measured / predicted tokens/s on each GPU.

A GPU whose pairs sit far below the model's ratio while the other GPU's rows are predicted well
runs slower than its spec sheet in that source's setup: which GPU, and by how much, is the
finding; the rows stay in the validation as measured. ``--spec GPU=GBPS,TFLOPS`` predicts that
GPU's rows with other figures (e.g. a PCIe part's) to test an explanation, without changing the
catalog (benchmarks/README.md, "One source's H100 against its own A100").
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import profile_fitting as pf

from cdk_sagemaker_llm.catalog.instance_types import Accelerator
from cdk_sagemaker_llm.planning.efficiency import efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile

OUTPUT_TOLERANCE = 0.1
"""Two rows pair when their mean output lengths differ by at most this share."""


@dataclass(frozen=True)
class SpecFigures:
    """Spec-sheet figures one GPU's rows are predicted with instead of the catalog's."""

    memory_bandwidth_gbps: float
    tflops: float

    @staticmethod
    def parse(text: str) -> tuple[str, SpecFigures]:
        """``GPU=GBPS,TFLOPS`` (the ``gpu`` column of rows.csv, e.g. ``H100-80GB=2000,756``)."""
        gpu, _, figures = text.partition("=")
        bandwidth, _, tflops = figures.partition(",")
        try:
            return gpu, SpecFigures(float(bandwidth), float(tflops))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--spec {text!r}: expected GPU=GBPS,TFLOPS, e.g. H100-80GB=2000,756"
            ) from None

    def on(self, accelerator: Accelerator) -> Accelerator:
        """``accelerator`` with these figures (FP16 and BF16 alike)."""
        return replace(
            accelerator,
            memory_bandwidth_gbps=self.memory_bandwidth_gbps,
            fp16_tflops=self.tflops,
            bf16_tflops=self.tflops,
        )


@dataclass(frozen=True)
class Pair:
    """One workload of one source on two GPUs (``first`` < ``second`` by GPU name), each with
    the tokens/s the profile predicts for it."""

    first: pf.Row
    second: pf.Row
    first_predicted: float
    """The profile's tokens/s for ``first``."""
    second_predicted: float
    """The profile's tokens/s for ``second``."""

    @property
    def measured_ratio(self) -> float:
        """Measured tokens/s, second / first."""
        assert self.first.tokens_per_s is not None and self.second.tokens_per_s is not None
        return self.second.tokens_per_s / self.first.tokens_per_s

    @property
    def predicted_ratio(self) -> float:
        """The profile's predicted tokens/s, second / first."""
        return self.second_predicted / self.first_predicted

    @property
    def first_accuracy(self) -> float:
        """Measured / predicted tokens/s on the first GPU."""
        assert self.first.tokens_per_s is not None
        return self.first.tokens_per_s / self.first_predicted

    @property
    def second_accuracy(self) -> float:
        """Measured / predicted tokens/s on the second GPU."""
        assert self.second.tokens_per_s is not None
        return self.second.tokens_per_s / self.second_predicted

    @property
    def shortfall(self) -> float:
        """ln(measured ratio / predicted ratio): how far the second GPU falls behind (< 0) or
        pulls ahead of (> 0) what the model expects of it against the first."""
        return math.log(self.measured_ratio / self.predicted_ratio)


def _workload_key(row: pf.Row) -> tuple[object, ...]:
    return (
        row.source,
        row.profile,
        row.model_name,
        row.precision.value,
        row.tensor_parallel_degree,
        row.input_tokens,
        row.concurrency,
        row.static_batch,
    )


def _with_spec(row: pf.Row, specs: Mapping[str, SpecFigures]) -> pf.Row:
    figures = specs.get(row.gpu)
    accelerator = row.instance_type.accelerator
    if figures is None or accelerator is None:
        return row
    return replace(
        row, instance_type=replace(row.instance_type, accelerator=figures.on(accelerator))
    )


def _predicted_tokens_per_s(row: pf.Row) -> float:
    profile = engine_profile(row.profile)
    return pf.predict_row(row, profile, efficiency_of(profile)).tokens_per_s


def pairs(rows: Sequence[pf.Row], specs: Mapping[str, SpecFigures] | None = None) -> list[Pair]:
    """Every pair of rows one source measured on two GPUs with the same workload (both with a
    tokens/s figure), predicted with ``specs`` in place of the catalog's figures for their
    GPUs; a GPU in ``specs`` that no row names is refused (the figures would apply to nothing)."""
    unknown = sorted(set(specs or {}) - {row.gpu for row in rows})
    if unknown:
        raise SystemExit(
            f"--spec {', '.join(unknown)}: no row of benchmarks/measurements/rows.csv names that "
            f"GPU; pass one of its gpu column's: {', '.join(sorted({row.gpu for row in rows}))}"
        )
    groups: dict[tuple[object, ...], list[pf.Row]] = defaultdict(list)
    for row in rows:
        if row.tokens_per_s is not None:
            groups[_workload_key(row)].append(_with_spec(row, specs or {}))
    found = []
    for members in groups.values():
        members.sort(key=lambda row: row.gpu)
        for i, first in enumerate(members):
            for second in members[i + 1 :]:
                if first.gpu == second.gpu:
                    continue
                longer = max(first.output_tokens, second.output_tokens)
                if abs(first.output_tokens - second.output_tokens) > OUTPUT_TOLERANCE * longer:
                    continue
                found.append(
                    Pair(
                        first,
                        second,
                        _predicted_tokens_per_s(first),
                        _predicted_tokens_per_s(second),
                    )
                )
    return sorted(found, key=lambda pair: (pair.first.source, pair.first.gpu, pair.second.gpu))


def _spec_ratios(pair: Pair) -> tuple[float, float]:
    """The second GPU's memory bandwidth and dense FP16 compute over the first's."""
    first, second = pair.first.instance_type.accelerator, pair.second.instance_type.accelerator
    assert first is not None and second is not None
    assert first.memory_bandwidth_gbps and second.memory_bandwidth_gbps
    assert first.fp16_tflops and second.fp16_tflops
    return (
        second.memory_bandwidth_gbps / first.memory_bandwidth_gbps,
        second.fp16_tflops / first.fp16_tflops,
    )


def report(found: Sequence[Pair]) -> list[str]:
    """A table of every pair, then per source and GPU pair the median shortfall and each GPU's
    median measured / predicted tokens/s."""
    lines = [
        "| source | profile | model | precision | TP | tokens | in flight | GPUs | tokens/s "
        "ratio measured | model | bandwidth | compute | measured / predicted, each GPU |",
        "|---|---|---|---|---:|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for pair in found:
        row = pair.first
        bandwidth, compute = _spec_ratios(pair)
        lines.append(
            f"| {row.source} | {row.profile} | {row.model_name} | {row.precision.value} | "
            f"{row.tensor_parallel_degree} | {row.input_tokens}/{row.output_tokens} | "
            f"{row.concurrency} | {pair.second.gpu} / {row.gpu} | {pair.measured_ratio:.2f} | "
            f"{pair.predicted_ratio:.2f} | {bandwidth:.2f} | {compute:.2f} | "
            f"{pair.first_accuracy:.2f} / {pair.second_accuracy:.2f} |"
        )
    summary: dict[tuple[str, str, str], list[Pair]] = defaultdict(list)
    for pair in found:
        summary[(pair.first.source, pair.first.gpu, pair.second.gpu)].append(pair)
    lines += [
        "",
        "| source | GPUs | pairs | ln(measured ratio / model's), median (min..max) | "
        "measured / predicted, median: first GPU | second GPU |",
        "|---|---|---:|---|---:|---:|",
    ]
    for (source, first, second), members in sorted(summary.items()):
        shortfalls = [pair.shortfall for pair in members]
        lines.append(
            f"| {source} | {second} / {first} | {len(members)} | "
            f"{statistics.median(shortfalls):+.2f} ({min(shortfalls):+.2f}..{max(shortfalls):+.2f})"
            f" | {statistics.median(p.first_accuracy for p in members):.2f} | "
            f"{statistics.median(p.second_accuracy for p in members):.2f} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--spec",
        action="append",
        default=[],
        type=SpecFigures.parse,
        metavar="GPU=GBPS,TFLOPS",
        help="predict this GPU's rows (rows.csv's gpu column) with these figures",
    )
    args = parser.parse_args(argv)
    rows, _ = pf.load_rows()
    print("\n".join(report(pairs(rows, dict(args.spec)))))


if __name__ == "__main__":
    main()
