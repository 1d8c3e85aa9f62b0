"""TGI 1.0.3's Triton GPTQ layers against exllama everywhere, as the ``tgi-1`` profile times them.

TGI before 1.1.1 loads the column-parallel products (QKV, gate/up) of a GPTQ model with the
Triton kernel and only the row-parallel ones with exllama (``reconstruct_source`` in
``tgi-1.json``). huggingface/text-generation-inference issue 1098 (N. Hill, October 2023)
measured that loading every layer with exllama (pull request 1101, released in v1.1.1) made
Llama 2 70B GPTQ "about 2.5x" faster. This script asks the profile's model the same question
at one request on an A100 80 GB (``ml.p4de.24xlarge``) at each TP degree: the step with the
profile's int4 kernel over the step with no Triton launches and the fused kernel at FP16's
efficiency (exllama everywhere), for the prior kernel and for the fitted one, and the launch
cost per layer that a 2.5x step needs at that efficiency. The prior must come out of it: the
held-out folds without the only TGI GPTQ source run at the prior.

Usage: ``python benchmarks/gptq_exllama_speedup.py`` (benchmarks/README.md, "TGI 1.0.3's
Triton GPTQ layers").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import profile_fitting as pf

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.planning.efficiency import efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import EngineProfile, KernelSpeed, engine_profile
from cdk_sagemaker_llm.planning.performance import Layout, profile_model
from cdk_sagemaker_llm.planning.workload import Workload

MEASURED_SPEEDUP = 2.5
"""Issue 1098: exllama on every layer against the Triton kernel on the column-parallel ones."""
INSTANCE = "ml.p4de.24xlarge"
"""Eight A100 80 GB: Llama 2 70B GPTQ (about 35 GB) fits from one GPU up."""
DEGREES = (1, 2, 4, 8)
WORKLOAD = Workload(input_tokens=512, output_tokens=128)
"""The issue states no lengths; at one request the step barely depends on them."""


@dataclass(frozen=True)
class Speedup:
    """One TP degree: the modelled speed-up of exllama everywhere, and the launch cost a
    measured 2.5x needs."""

    tensor_parallel_degree: int
    prior: float
    """Step with the prior int4 kernel over the step with exllama everywhere."""
    fitted: float
    """The same with the shipped (fitted) int4 kernel."""
    per_layer_ms_for_measured: float
    """Launch cost per layer at the FP16 kernels' efficiency that makes the ratio 2.5."""


def _step_ms(profile: EngineProfile, kernel: KernelSpeed, degree: int) -> float:
    model = profile_model(
        ModelSpec.preset("llama-2-70b"),
        Layout(InstanceType.of(INSTANCE), degree, 1),
        Precision.INT4_AWQ,
        WORKLOAD,
        replace(profile, kernels={**profile.kernels, "int4": kernel}),
        efficiency_of(profile),
    )
    return model.step_s(1) * 1000


def _exllama_everywhere(kernel: KernelSpeed) -> KernelSpeed:
    """``kernel`` without Triton launches, reading its bytes at FP16's efficiency."""
    return replace(kernel, per_layer_ms=0.0, weight_read=1.0)


def _per_layer_for(
    profile: EngineProfile, kernel: KernelSpeed, degree: int, exllama_ms: float
) -> float:
    """The launch cost per layer at FP16's read efficiency whose step is ``MEASURED_SPEEDUP``
    times ``exllama_ms``: a bisection (the step grows with the cost)."""
    low, high = 0.0, 5.0
    for _ in range(40):
        middle = (low + high) / 2
        step = _step_ms(profile, replace(_exllama_everywhere(kernel), per_layer_ms=middle), degree)
        low, high = (middle, high) if step / exllama_ms < MEASURED_SPEEDUP else (low, middle)
    return low


def speedups() -> list[Speedup]:
    """The modelled speed-up of exllama everywhere per TP degree (``Speedup``)."""
    profile = engine_profile("tgi-1")
    fitted = profile.kernels["int4"]
    prior = pf.prior_profile(profile).kernels["int4"]
    out = []
    for degree in DEGREES:
        exllama = _step_ms(profile, _exllama_everywhere(prior), degree)
        out.append(
            Speedup(
                degree,
                _step_ms(profile, prior, degree) / exllama,
                _step_ms(profile, fitted, degree) / exllama,
                _per_layer_for(profile, prior, degree, exllama),
            )
        )
    return out


def main() -> None:
    print(
        f"Llama 2 70B GPTQ on {INSTANCE}, one request: exllama everywhere against TGI 1.0.3's "
        f"Triton column-parallel layers (measured about {MEASURED_SPEEDUP}x, TGI issue 1098)"
    )
    print("| TP | prior kernel | fitted kernel | ms per layer for 2.5x at weight_read 1.0 |")
    print("|---:|---:|---:|---:|")
    for row in speedups():
        print(
            f"| {row.tensor_parallel_degree} | {row.prior:.2f}x | {row.fitted:.2f}x | "
            f"{row.per_layer_ms_for_measured:.2f} |"
        )


if __name__ == "__main__":
    main()
