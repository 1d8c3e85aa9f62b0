"""Speculative decoding in the performance model (planning.speculation)."""

from __future__ import annotations

import pytest

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.performance import DEFAULT_EFFICIENCY, CopyModel
from cdk_sagemaker_llm.planning.speculation import Speculation, SpeculativeTiming
from cdk_sagemaker_llm.planning.workload import Workload

WORKLOAD = Workload(input_tokens=512, output_tokens=256)


def copy_model(model: str, instance_type: InstanceType, degree: int) -> CopyModel:
    return CopyModel(
        ModelSpec.preset(model), instance_type, degree, Precision.FP16, WORKLOAD, DEFAULT_EFFICIENCY
    )


def test_tokens_per_step_is_leviathans_expectation() -> None:
    # E = (1 - a^(k+1)) / (1 - a): a = 0.8, k = 5 -> 3.689...
    assert Speculation.eagle().tokens_per_step == pytest.approx((1 - 0.8**6) / 0.2)
    assert Speculation.eagle(acceptance_rate=0.5, draft_length=1).tokens_per_step == 1.5


def test_pays_while_memory_bound_and_stops_when_compute_bound() -> None:
    timing = SpeculativeTiming(
        copy_model("llama-3-8b", InstanceType.G5_2XLARGE, 1), Speculation.eagle()
    )
    assert timing.speedup(1) > 1.5
    breakeven = timing.break_even_batch(4096)
    assert breakeven is not None and breakeven > 1
    assert timing.speedup(breakeven) <= 1 < timing.speedup(breakeven - 1)
    # Per-token time falls below the plain step at batch 1 and rises above it past break-even.
    plain = timing.target
    assert timing.step_s(1) < plain.step_s(1)
    assert timing.step_s(breakeven * 2) > plain.step_s(breakeven * 2)


def test_pays_everywhere_when_the_copy_is_small() -> None:
    timing = SpeculativeTiming(
        copy_model("llama-3-70b", InstanceType.P5_48XLARGE, 4), Speculation.eagle()
    )
    assert timing.break_even_batch(8) is None
    assert "pays up to the copy's 8 sequences" in timing.describe(8)


def test_a_draft_model_costs_its_own_steps() -> None:
    target = copy_model("llama-3-70b", InstanceType.P4D_24XLARGE, 8)
    draft = copy_model("llama-3-8b", InstanceType.P4D_24XLARGE, 8)
    speculation = Speculation.draft_model(ModelSpec.preset("llama-3-8b"))
    with_draft = SpeculativeTiming(target, speculation, draft)
    eagle = SpeculativeTiming(target, Speculation.eagle(acceptance_rate=0.7))
    assert with_draft.draft_step_s(1) == draft.step_s(1)
    assert with_draft.draft_step_s(1) > eagle.draft_step_s(1)


@pytest.mark.parametrize(
    ("build", "prop"),
    [
        (lambda: Speculation.eagle(acceptance_rate=1.0), "speculation.acceptance_rate"),
        (lambda: Speculation.eagle(draft_length=0), "speculation.draft_length"),
        (
            lambda: SpeculativeTiming(
                copy_model("llama-3-8b", InstanceType.G5_2XLARGE, 1),
                Speculation.draft_model(ModelSpec.preset("llama-3-70b")),
                copy_model("llama-3-8b", InstanceType.G5_2XLARGE, 1),
            ),
            "speculation.draft",
        ),
    ],
)
def test_bad_speculation_names_the_prop(build, prop: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as raised:
        build()
    assert raised.value.prop == prop


def test_factories_check_types() -> None:
    with pytest.raises(ValidationError):
        Speculation.draft_model("llama-3-8b")  # type: ignore[arg-type]
