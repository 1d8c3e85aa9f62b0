"""What ``predict``'s assumptions say about where its figures come from: the quantized
kernels' speed it used, and whether its engine profile was fitted."""

from __future__ import annotations

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
from cdk_sagemaker_llm.planning.performance import Layout, predict
from cdk_sagemaker_llm.planning.workload import Workload

LLAMA_8B = ModelSpec.preset("llama-3-8b")
LAYOUT = Layout(InstanceType.G5_12XLARGE, 4, 1)
WORKLOAD = Workload(512, 256)


def _line(assumptions: list[str], start: str) -> str:
    (line,) = [a for a in assumptions if a.startswith(start)]
    return line


def test_the_quantized_weights_note_states_the_profiles_kernel_speed() -> None:
    """It said "modeled as fewer bytes read at the same bandwidth efficiency ... calibrate",
    contradicting the profiles' kernel speeds the model used."""
    for name, precision in (("tgi-1", Precision.INT4_AWQ), ("lmi-vllm-v1", Precision.FP8)):
        kernel = engine_profile(name).kernel(precision)
        assert kernel is not None
        # FP8 needs FP8 tensor cores: L40S (g6e) has them, the A10G of LAYOUT does not.
        layout = LAYOUT if precision is not Precision.FP8 else Layout(InstanceType.G6E_XLARGE, 1, 1)
        prediction = predict(LLAMA_8B, layout, WORKLOAD, [1], engine=name, precision=precision)
        note = _line(prediction.assumptions, f"{precision.value} weights:")
        assert "the same bandwidth efficiency" not in note
        assert f"the {name} profile's {precision.value} kernels" in note
        assert f"{kernel.weight_read:.0%} of the FP16 kernels' bandwidth efficiency" in note
        assert f"{kernel.compute:.0%} of FP16 compute" in note


def test_no_calibration_note_claims_a_fit_only_for_fitted_profiles() -> None:
    """It said every profile was "fitted to published measurements", priors included."""
    prior = engine_profile("tgi-2-3")
    assert prior.fitted is None  # too few measurements of TGI 2-3 to fit: a prior
    note = _line(
        predict(LLAMA_8B, LAYOUT, WORKLOAD, [1], engine="tgi-2-3").assumptions, "no calibration:"
    )
    assert "fitted to published" not in note
    assert "the tgi-2-3 profile's prior, not fitted to measurements" in note
    fitted = engine_profile("tgi-1").fitted
    assert fitted is not None
    note = _line(
        predict(LLAMA_8B, LAYOUT, WORKLOAD, [1], engine="tgi-1").assumptions, "no calibration:"
    )
    assert f"the tgi-1 profile, fitted to {fitted.rows} published measurements from " in note
