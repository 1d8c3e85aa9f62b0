"""Where int4 weights have a published speed: the measured int4-over-FP16 speed-ups per
accelerator and tensor-parallel degree, and the layouts ``recommend`` therefore does not offer
int4 on.

The performance model times int4 weights as fewer bytes read at the engine's kernel speed
(``engine_profiles.KernelSpeed``), the same at every tensor-parallel degree. Measurements say
the speed-up shrinks as the degree grows (each GPU reads a smaller shard, and the step's fixed
costs and all-reduces do not shrink): at TP8 on H100, TensorRT-LLM's INT4 AWQ is faster than
FP16 only up to a batch of 4 (below). So int4 is offered only where a public measurement of
the same model in int4 and FP16, on that accelerator at that degree, shows it faster; elsewhere
the layout is rejected (``RejectionKind.PRECISION``) with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.instance_types import Accelerator, InstanceType
from ..catalog.model_specs import Precision

__all__ = ["MEASUREMENTS", "Int4Measurement", "int4_problem", "measurement_for"]


@dataclass(frozen=True)
class Int4Measurement:
    """One public measurement of int4 weights against FP16 on one accelerator and degree."""

    accelerator: str
    """The accelerator's catalog name (``Accelerator.name``)."""
    tensor_parallel_degree: int
    speedup: tuple[float, float] | None
    """Lowest and highest int4 / FP16 throughput ratio measured; None: no faster under load."""
    engine: str
    source: str

    @property
    def faster(self) -> bool:
        """Whether the measurement shows int4 faster than FP16 under load."""
        return self.speedup is not None and self.speedup[0] > 1.0

    def describe(self) -> str:
        """E.g. ``1.37-1.61x FP16's throughput (TensorRT-LLM 0.9, ...)``."""
        if self.speedup is None:
            ratio = "no faster than FP16 under load"
        else:
            low, high = self.speedup
            ratio = f"{low:g}x FP16's throughput" if low == high else f"{low:g}-{high:g}x FP16's"
        return f"{ratio} ({self.engine}; {self.source})"


MODELOPT_BENCHMARK = (
    "NVIDIA TensorRT Model Optimizer, benchmark.md (github.com/NVIDIA/TensorRT-Model-Optimizer): "
    "Llama 3 8B INT4 AWQ on one H100, TensorRT-LLM 0.9, batch 2 / 32 / 64: 1.61x / 1.43x / "
    "1.37x FP16"
)
MEASUREMENTS: tuple[Int4Measurement, ...] = (
    Int4Measurement(Accelerator.H100.name, 1, (1.37, 1.61), "TensorRT-LLM 0.9", MODELOPT_BENCHMARK),
    Int4Measurement(
        Accelerator.H100.name,
        8,
        None,
        "TensorRT-LLM 0.11",
        "NVIDIA/TensorRT-LLM issue 1722: Llama 3 70B INT4 AWQ against FP16 at TP8 on 8 x H100, "
        "faster only up to batch 4, slower beyond",
    ),
    *(
        Int4Measurement(
            a100.name,
            1,
            (1.16, 1.16),
            "TensorRT-LLM",
            "NVIDIA/TensorRT-LLM issue 2329: Gemma 2 9B on one A100 (variant not stated), "
            "4,267.62 tokens/s FP16 against 4,963.73 INT4 AWQ at batch 32",
        )
        for a100 in (Accelerator.A100_40GB, Accelerator.A100_80GB)
    ),
    Int4Measurement(
        Accelerator.L4.name,
        1,
        (3.3, 3.3),
        "vLLM 0.16 AWQ-Marlin",
        "llm-inference-bench (bench.bereketlemma.com, 2026-04-05): Mistral 7B AWQ against FP16 "
        "on one L4, batch 1-8, 3.3x throughput",
    ),
    Int4Measurement(
        Accelerator.A10G.name,
        1,
        (3.87, 3.87),
        "Marlin kernel",
        "IST-DASLab/marlin README (Frantar and Alistarh, 2024): the FP16xINT4 kernel on an A10 "
        "(the A10G's GA102 chip) near the ideal 3.87x up to batch 16-32; a kernel figure, not "
        "end-to-end",
    ),
)
"""Public int4-against-FP16 measurements (none from the held-out sources of issue 30)."""


def measurement_for(accelerator: str, tensor_parallel_degree: int) -> Int4Measurement | None:
    """The measurement on ``accelerator`` at ``tensor_parallel_degree``, or None."""
    return next(
        (
            m
            for m in MEASUREMENTS
            if m.accelerator == accelerator and m.tensor_parallel_degree == tensor_parallel_degree
        ),
        None,
    )


def int4_problem(
    instance_type: InstanceType, tensor_parallel_degree: int, precision: Precision
) -> str | None:
    """Why int4 weights are not offered on ``instance_type`` at ``tensor_parallel_degree``
    (no public measurement there, or one that shows no speed-up), or None."""
    accelerator = instance_type.accelerator
    if precision is not Precision.INT4_AWQ or accelerator is None:
        return None
    found = measurement_for(accelerator.name, tensor_parallel_degree)
    where = f"{accelerator.name} at TP{tensor_parallel_degree}"
    if found is None:
        return (
            f"no public measurement of int4 against FP16 on {where}, and the model's "
            "fewer-bytes speed-up overstates int4 as the degree grows, so int4 is not offered "
            "there; serve FP16/BF16 (or FP8 where the accelerator has it), or measure int4 "
            "there and calibrate"
        )
    if not found.faster:
        return (
            f"int4 measured {found.describe()} on {where}, so it is not offered there; serve "
            "FP16/BF16 (or FP8 where the accelerator has it)"
        )
    return None
