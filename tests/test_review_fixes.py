"""Regression tests of the review findings: each input the planner accepted silently."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.calibration import EngineRelease
from cdk_sagemaker_llm.planning.decision import (
    ExpectedTraffic,
    Overrides,
    ServiceRequest,
    decide,
)
from cdk_sagemaker_llm.planning.optimizations import Optimization
from cdk_sagemaker_llm.planning.performance import Layout, Workload, predict
from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import LayoutOverrides, SearchSpace, Sizing
from cdk_sagemaker_llm.planning.sizing import size

SIZE = [
    "size", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge",
    "--max-total-tokens", "99999",
]  # fmt: skip
SPEC = ModelSpec.LLAMA_3_8B  # max_context 8192
TOO_LONG = Workload(input_tokens=9000, output_tokens=128)
PREDICT = [
    "predict", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge",
    "--input-tokens", "9000", "--output-tokens", "128", "--concurrency", "1",
]  # fmt: skip
RECOMMEND = [
    "recommend", "--model", "llama-3-8b", "--instance-types", "ml.g5.2xlarge",
    "--input-tokens", "9000", "--output-tokens", "128", "--requests-per-second", "1",
    "--max-ms-per-token", "100",
]  # fmt: skip


def _context_error(error: ValidationError, prop: str) -> None:
    assert error.prop == prop
    assert "9128" in str(error) and "8192" in str(error)
    assert "max_context" in error.problem
    assert "longer context" in error.fix and "max_context" in error.fix


def test_a_request_beyond_the_model_s_context_is_refused_by_every_planning_entry() -> None:
    assert SPEC.max_context == 8192
    layout = Layout(InstanceType.G5_2XLARGE, 1, 1, 1)
    with pytest.raises(ValidationError) as predicted:
        predict(SPEC, layout, TOO_LONG, [1])
    _context_error(predicted.value, "workload")
    with pytest.raises(ValidationError) as recommended:
        recommend(SPEC, TOO_LONG, Slo(max_ms_per_token=100), Traffic(requests_per_second=1))
    _context_error(recommended.value, "workload")
    with pytest.raises(ValidationError) as sized:
        size(SPEC, InstanceType.G5_2XLARGE, max_total_tokens=99999)
    assert sized.value.prop == "max_total_tokens" and sized.value.value == 99999
    assert "8192" in sized.value.problem
    request = ServiceRequest(
        spec=SPEC,
        workload=TOO_LONG,
        slo=Slo(max_ms_per_token=100),
        traffic=ExpectedTraffic.requests_per_second(1),
        search=SearchSpace(instance_types=[InstanceType.G5_2XLARGE]),
    )
    with pytest.raises(ValidationError) as decided:
        decide(request)
    _context_error(decided.value, "workload")
    # A longest sequence set beyond the context is refused too.
    fits = replace(request, workload=Workload(input_tokens=512, output_tokens=256))
    with pytest.raises(ValidationError) as overridden:
        decide(fits, Overrides(layout=LayoutOverrides(max_model_len=9128)))
    assert overridden.value.prop == "max_model_len" and overridden.value.value == 9128


def test_a_request_at_the_context_still_plans() -> None:
    layout = Layout(InstanceType.G5_2XLARGE, 1, 1, 1)
    assert predict(SPEC, layout, Workload(8064, 128), [1]).levels


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (PREDICT, "--input-tokens + --output-tokens"),
        (RECOMMEND, "--input-tokens + --output-tokens"),
        (SIZE, "--max-total-tokens"),
    ],
)
def test_the_commands_name_the_flag_of_a_request_beyond_the_context(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag}")
    assert "context of 8192 tokens" in err and "--max-context" in err


SPECULATION = Optimization.speculative_decoding()
LAYOUT = Layout(InstanceType.G5_2XLARGE, 1, 1, 1)
ORDINARY = Workload(input_tokens=512, output_tokens=128)


@pytest.mark.parametrize(
    ("engine", "named"),
    [
        (EngineRelease("tgi", "3.3.6"), "tgi 3.3.6"),
        (EngineRelease("lmi-tensorrt-llm"), "lmi-tensorrt-llm"),
        (EngineRelease("lmi", "0.26.0"), "lmi 0.26.0"),
        ("tgi-1", "tgi-1"),
        ("lmi-trtllm", "lmi-trtllm"),
    ],
)
def test_speculation_is_not_predicted_on_an_engine_that_cannot_serve_a_draft(
    engine: object, named: str
) -> None:
    with pytest.raises(ValidationError) as error:
        predict(SPEC, LAYOUT, ORDINARY, [1], engine=engine, optimization=SPECULATION)  # type: ignore[arg-type]
    assert error.value.prop == "engine" and error.value.value == named
    assert "speculative-decoding" in error.value.problem
    assert "OPTION_SPECULATIVE_DRAFT_MODEL" in error.value.problem
    assert "LMI 0.27.0 or later" in error.value.fix


@pytest.mark.parametrize("engine", [None, EngineRelease("lmi", "0.31.0"), "lmi-vllm-v0"])
def test_speculation_is_predicted_on_lmi_with_draft_options(engine: object) -> None:
    prediction = predict(SPEC, LAYOUT, ORDINARY, [1], engine=engine, optimization=SPECULATION)  # type: ignore[arg-type]
    assert prediction.levels


def test_the_predict_command_names_engine_and_optimization(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "predict", "--model", "llama-3-8b", "--instance-type", "ml.g5.2xlarge",
        "--input-tokens", "512", "--output-tokens", "128", "--concurrency", "1",
        "--optimization", "speculative-decoding", "--engine", "tgi:3.3.6",
    ]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --engine='tgi 3.3.6': cannot serve the speculative-decoding")


def test_recommend_skips_speculation_on_tgi_and_says_why() -> None:
    result = recommend(
        SPEC,
        ORDINARY,
        Slo(max_ms_per_token=100),
        Traffic(requests_per_second=1),
        search=SearchSpace(instance_types=[InstanceType.G5_2XLARGE], optimizations=[SPECULATION]),
        sizing=Sizing(engine=EngineRelease("tgi", "3.3.6")),
    )
    assert all(option.optimization is None for option in result.options)
    reasons = [r.reason for r in result.rejected]
    assert any(
        r.startswith("with speculative-decoding: the engine (tgi-2-3) cannot serve it")
        for r in reasons
    ), reasons
