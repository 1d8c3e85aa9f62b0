"""What a platform engineer reads before betting a budget on
``recommend``/``predict``/``LlmService`` says what it assumed, and the acceptance tests cannot
pass vacuously."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hub import hub_token

from cdk_sagemaker_llm.cli import main


def _table_rows(markdown: str) -> list[str]:
    table = markdown.split("<details>")[0]
    return [line for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]


def test_recommend_table_names_each_options_optimization(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Was: two rows 'TP4 x 2' on the same instance, one speculative decoding at $25/hour and
    one AWQ at $101/hour, with nothing in the table saying which was which."""
    argv = [
        "recommend", "--model", "llama-3-70b", "--input-tokens", "512", "--output-tokens",
        "256", "--max-ms-per-token", "80", "--requests-per-second", "2", "--instance-types",
        "ml.g5.12xlarge,ml.p4d.24xlarge,ml.p5.48xlarge", "--optimizations",
        "awq,speculative-decoding",  # AWQ has a measured speed-up at TP1 on H100 (p5)
        "--top", "10",
    ]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = _table_rows(out)
    assert rows
    optimized = [row for row in rows if " with " in row.split("|")[3]]
    assert any("with speculative-decoding" in row for row in optimized), rows
    assert any("with awq" in row for row in optimized), rows
    # The median's cheapest option names its optimization too (70B fits 4 A10Gs only as int4).
    median = next(line for line in out.splitlines() if "at the median the cheapest" in line)
    assert "ml.g5.12xlarge" not in median or "with awq" in median, median


# ----- A profile for each image, and the user's override ---------------------------------------

SERVING_FAMILIES = {
    "tgi",
    "lmi",
    "lmi-tensorrt-llm",
    "lmi-neuronx",
    "tgi-neuronx",
    "vllm",
    "vllm-server",
    "huggingface-vllm",
}
"""The catalog's LLM serving containers: each has an engine profile of its own."""


def _catalog_images() -> list[tuple[str, str]]:
    from cdk_sagemaker_llm.catalog.containers import DLC_LINES

    return [
        (line.family.value, version) for line in DLC_LINES.values() for version in line.releases
    ]


@pytest.mark.parametrize(("family", "version"), _catalog_images())
def test_every_catalog_image_chooses_its_engines_profile_through_container_image(
    family: str, version: str
) -> None:
    """The test beside the profiles checks ``profile_for_image`` against itself; this one
    checks what a user's ``ContainerImage`` gets: the catalog's serving containers never
    fall back to the ``generic`` profile, and TGI/LMI releases land on their generation."""
    from cdk_sagemaker_llm.catalog.containers import version_tuple
    from cdk_sagemaker_llm.constructs.images import ContainerImage

    factory = getattr(ContainerImage, family.replace("-", "_"))
    name = factory(version).engine_profile.name
    if family not in SERVING_FAMILIES:
        assert name == "generic"
        return
    assert name != "generic", (family, version)
    release = version_tuple(version)
    expected = {
        "tgi": "tgi-1" if release < (2,) else "tgi-2-3",
        "lmi": "lmi-vllm-v0" if release < (0, 33) else "lmi-vllm-v1",
        "lmi-tensorrt-llm": "lmi-trtllm",
        "lmi-neuronx": "lmi-neuronx",
        "tgi-neuronx": "lmi-neuronx",
        # Every vLLM container in the catalog runs vLLM >= 0.8: the V1 engine.
        "vllm": "lmi-vllm-v1",
        "vllm-server": "lmi-vllm-v1",
        "huggingface-vllm": "lmi-vllm-v1",
    }[family]
    assert name == expected, (family, version, name)


@pytest.mark.parametrize(
    ("engine", "expected"), [(None, "lmi-vllm-v0"), ("tgi-1", "tgi-1"), ("tgi:3.3.6", "tgi-2-3")]
)
def test_the_users_engine_overrides_the_images_profile_in_llm_service(
    engine: str | None, expected: str
) -> None:
    from conftest import new_stack

    from cdk_sagemaker_llm import (
        ContainerImage,
        EngineRelease,
        ExpectedTraffic,
        InstanceType,
        LlmService,
        ModelSource,
        Risk,
        SearchSpace,
        ServiceModel,
        Sizing,
        Slo,
        Workload,
    )

    stated = EngineRelease.parse(engine) if engine and ":" in engine else engine
    built = LlmService(
        new_stack(),
        "Service",
        model=ServiceModel.from_source(
            ModelSource.from_hugging_face(
                "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
            ),
            image=ContainerImage.lmi("0.31.0"),
        ),
        workload=Workload(512, 256),
        slo=Slo(max_ms_per_token=100),
        traffic=ExpectedTraffic.requests_per_second(1),
        search=SearchSpace(instance_types=[InstanceType.G5_12XLARGE]),
        sizing=Sizing(engine=stated, risk=Risk.MEDIAN),
    )
    first = built.decision.reasoning[0]
    assert f"engine profile {expected}" in first, first
    assert any(
        line.startswith(f"engine: engine profile {expected} ")
        for line in built.decision.predicted.sources
    )


# ----- No under-provisioning, and not by refusing to answer --------------------------------------


def _first_option(row: Any, measured_ms: float, wanted_copies: int, risk: Any) -> Any:
    """The first option ``recommend`` gives for ``wanted_copies`` copies' worth of the row's
    measured request rate within its measured ms/token, on the row's instance, TP and engine
    (the question ``test_engine_profiles`` asks)."""
    from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
    from cdk_sagemaker_llm.planning.service_options import SearchSpace, Sizing

    options = recommend(
        row.spec,
        row.workload,
        Slo(measured_ms),
        Traffic(requests_per_second=row.tokens_per_s / row.output_tokens * wanted_copies),
        search=SearchSpace(
            precision=row.precision,
            instance_types=[row.instance_type],
            tensor_parallel_degrees=[row.tensor_parallel_degree],
            max_instance_count=10_000,
        ),
        sizing=Sizing(engine=row.profile, risk=risk),
    ).options
    return options[0] if options else None


def test_the_ceiling_coverage_check_is_not_passed_by_refusing_to_answer() -> None:
    """``test_recommend_ceilings_cover_the_validation_rows_as_their_edges_promise`` accepts
    "no layout" for a row. The check only means something if enough rows do get a layout at
    the default risk, their ceilings holding the copies the measurement says are needed on
    all but the one row in ten a p90 edge leaves out, and if the median would have
    under-provisioned some: the check can fail."""
    from test_engine_profiles import _fitting, _measured_ms

    from cdk_sagemaker_llm.planning.recommend import Risk

    rows, _ = _fitting().load_rows()
    checked = answered = short = under_at_median = 0
    for row in rows:
        measured_ms = _measured_ms(row)
        if row.static_batch or measured_ms is None or row.tokens_per_s is None:
            continue
        per_instance = row.instance_type.accelerator_devices // row.tensor_parallel_degree
        wanted = 4 * per_instance
        checked += 1
        pessimistic = _first_option(row, measured_ms, wanted, Risk.PESSIMISTIC)
        if pessimistic is not None:
            answered += 1
            short += pessimistic.ceiling * per_instance < wanted
        median = _first_option(row, measured_ms, wanted, Risk.MEDIAN)
        if median is not None and median.layout.copies < wanted:
            under_at_median += 1
    assert answered >= max(25, checked // 5), (answered, checked)
    assert short <= checked / 10, (short, checked)
    assert under_at_median > 0, "the median under-provisions no row: the check cannot fail"


# ----- Command-line errors name the flag a user typed ---------------------------------------------

RECOMMEND = [
    "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "256",
    "--max-ms-per-token", "60", "--requests-per-second", "4",
]  # fmt: skip
PREDICT_13B = [
    "predict", "--model", "llama-2-13b", "--instance-type", "ml.g5.48xlarge",
    "--input-tokens", "3072", "--output-tokens", "1024", "--concurrency", "1",
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            [*RECOMMEND[:-4], "--max-ms-per-token", "-5", "--requests-per-second", "4"],
            "error: --max-ms-per-token=-5.0: must be positive",
        ),
        ([*RECOMMEND[:-2], "--requests-per-second", "0"], "error: --requests-per-second=0.0"),
        ([*RECOMMEND, "--optimizations", "bogus"], "error: --optimizations='bogus'"),
        ([*RECOMMEND, "--instance-types", "ml.foo"], "error: --instance-types='ml.foo'"),
        ([*RECOMMEND, "--dtype", "int3"], "error: --dtype='int3'"),
        ([*RECOMMEND, "--max-batch-size", "0"], "error: --max-batch-size=0"),
        (
            [*RECOMMEND, "--calibration", "/nonexistent.json"],
            "error: --calibration='/nonexistent.json': cannot be read",
        ),
        (
            [*PREDICT_13B, "--tensor-parallel-degree", "1"],
            "error: --tensor-parallel-degree=1: 1 x ml.g5.48xlarge, TP1 x 8 copies each: "
            "llama-2-13b leaves",
        ),
        ([*PREDICT_13B, "--copies", "9", "--tensor-parallel-degree", "1"], "error: --copies=9"),
        ([*PREDICT_13B, "--optimization", "x"], "error: --optimization='x'"),
        ([*PREDICT_13B, "--instance-count", "0"], "error: --instance-count=0"),
        (
            ["size", "--model", "llama-2-7b", "--instance-type", "ml.g5.xlarge", "--dtype", "x"],
            "error: --dtype='x'",
        ),
    ],
)
def test_errors_name_the_flag_the_value_and_the_fix(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: the library's prop names (``max_ms_per_token=``, ``instance_type=``,
    ``optimization=`` for ``--optimizations``), and ``layout='1 x ml.g5.48xlarge, ...'`` for a
    ``--tensor-parallel-degree`` that leaves no room for the KV cache."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(expected), err
    assert "Fix: " in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([*PREDICT_13B, "--copies", "0", "--tensor-parallel-degree", "4"], "error: --copies=0"),
        (
            [
                "size",
                "--model",
                "llama-2-7b",
                "--instance-type",
                "ml.g5.xlarge",
                "--max-total-tokens",
                "0",
            ],
            "error: --max-total-tokens=0: must be positive",
        ),
    ],
)
def test_a_zero_is_an_error_not_the_default(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: ``--copies 0`` and ``--max-total-tokens 0`` silently replaced by the default."""
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(expected)


def test_a_bad_field_of_a_calibration_file_names_the_file_and_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    newer = tmp_path / "newer.json"
    newer.write_text('{"format": "cdk-sagemaker-llm/calibration", "version": 99}')
    assert main([*RECOMMEND, "--calibration", str(newer)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --calibration {newer}.version=99: "), err


def test_size_says_which_engine_its_latency_assumes(capsys: pytest.CaptureFixture[str]) -> None:
    """Was: a single-request latency and a recommended degree from the generic profile (batch
    limit 64), unstated, beside ``predict``'s ``lmi-vllm-v1`` default for the same layout; now
    ``size`` ranks with ``predict``'s default profile and names it."""
    argv = ["size", "--model", "llama-2-7b", "--instance-type", "ml.g5.xlarge", "--format", "json"]
    assert main(argv) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert data["single_request_ms_per_token"] is not None
    assert any(
        line.startswith("latency and tokens/s: the lmi-vllm-v1 engine profile")
        and "--engine" in line
        and "predict" in line
        for line in data["reasoning"]
    )


# ----- A calibration's assumed engine is the one predicted with ---------------------------------


def _tgi_calibration(path: Path) -> Path:
    from cdk_sagemaker_llm.planning.calibration import Calibration, EngineRelease
    from cdk_sagemaker_llm.planning.efficiency import Efficiency

    Calibration(
        efficiency=Efficiency(memory_bandwidth=0.45, step_overhead_ms=8.0),
        model="llama-2-7b",
        instance_type="ml.g5.2xlarge",
        tensor_parallel_degree=1,
        copies=1,
        precision="fp16",
        input_tokens=256,
        output_tokens=128,
        concurrency_range=(1, 16),
        levels=5,
        rms_error=0.02,
        engine=EngineRelease("tgi", "3.3.6"),
        accelerator="NVIDIA A10G",
    ).to_file(path)
    return path


def test_a_calibration_without_engine_predicts_with_the_calibrated_engines_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: "engine assumed to be the calibrated tgi 3.3.6", then predicted with the default
    lmi-vllm-v1 profile (a batch limit of 256 requests, its band and kernels) and an "As an
    LlmService" decision on that profile."""
    import json

    calibration = str(_tgi_calibration(tmp_path / "tgi.json"))
    predict_argv = [
        "predict", "--model", "llama-2-7b", "--instance-type", "ml.g5.2xlarge",
        "--input-tokens", "256", "--output-tokens", "128", "--concurrency", "4",
        "--calibration", calibration, "--format", "json",
    ]  # fmt: skip
    assert main(predict_argv) == 0
    captured = capsys.readouterr()
    predicted = json.loads(captured.out)
    assert predicted["engine"] == "tgi-2-3"
    assert "warning: engine assumed to be the calibrated tgi 3.3.6" in captured.err
    recommend_argv = [
        "recommend", "--model", "llama-2-7b", "--input-tokens", "256", "--output-tokens",
        "128", "--max-ms-per-token", "100", "--requests-per-second", "4", "--instance-types",
        "ml.g5.2xlarge", "--risk", "median", "--calibration", calibration, "--format", "json",
    ]  # fmt: skip
    assert main(recommend_argv) == 0
    result = json.loads(capsys.readouterr().out)
    assumptions = " / ".join(result["assumptions"])
    assert "engine profile tgi-2-3" in assumptions and "lmi-vllm-v1" not in assumptions
    assert "engine assumed to be the calibrated tgi 3.3.6" in assumptions
    decision = result["decision"]
    assert decision["reasoning"][0] == (
        "serving engine: not stated, the calibrated tgi 3.3.6 assumed (not checked), engine "
        "profile tgi-2-3"
    )
    # A stated engine still wins (and another one is still an error).
    assert main([*recommend_argv, "--engine", "lmi:0.33.0"]) == 2


@pytest.mark.parametrize("profile", ["lmi-vllm-v1", "tgi-1"])
def test_an_engine_named_by_another_profile_than_the_calibrated_one_is_an_error(
    profile: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: ``--engine lmi-vllm-v1`` with a TGI 3.3.6 calibration applied the TGI factors to
    the vLLM profile with only a warning that the engine was "assumed" to be TGI."""
    from cdk_sagemaker_llm.errors import ValidationError
    from cdk_sagemaker_llm.planning.calibration import Calibration
    from cdk_sagemaker_llm.planning.engine_profiles import engine_profile

    calibration = _tgi_calibration(tmp_path / "tgi.json")
    predict = [
        "predict", "--model", "llama-2-7b", "--instance-type", "ml.g5.2xlarge",
        "--input-tokens", "256", "--output-tokens", "128", "--concurrency", "4",
    ]  # fmt: skip
    for argv in (
        [*RECOMMEND, "--instance-types", "ml.g5.2xlarge"],
        predict,
    ):
        assert main([*argv, "--calibration", str(calibration), "--engine", profile]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --calibration='{calibration}': measures tgi 3.3.6 "), err
        assert f"engine profile tgi-2-3), but the target's engine profile is {profile}" in err
    with pytest.raises(ValidationError, match="engine profile tgi-2-3"):
        Calibration.from_file(calibration).check_profile(engine_profile(profile))
    Calibration.from_file(calibration).check_profile(engine_profile("tgi-2-3"))  # the same


def test_a_no_option_error_says_when_its_list_of_rejections_is_cut() -> None:
    """The error names the first rejection of each kind, topped up to four; where more were
    rejected it says how many and where they are (it dropped them without a word)."""
    from cdk_sagemaker_llm.catalog.instance_types import InstanceType
    from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
    from cdk_sagemaker_llm.planning.decider import no_option_error
    from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
    from cdk_sagemaker_llm.planning.service_options import SearchSpace
    from cdk_sagemaker_llm.planning.workload import Workload

    types = ["ml.g5.xlarge", "ml.g5.2xlarge", "ml.g5.4xlarge", "ml.g6.xlarge", "ml.g6.2xlarge"]
    found = recommend(
        ModelSpec.LLAMA_3_70B,
        Workload(512, 128),
        Slo(max_ms_per_token=100),
        Traffic(requests_per_second=1),
        search=SearchSpace(instance_types=[InstanceType.of(name) for name in types]),
    )
    assert not found.options and len(found.rejected) == 5
    error = no_option_error(found, 4, Precision.FP16)
    assert "(and 1 more: recommend lists every rejection)" in error.problem
