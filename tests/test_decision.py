"""planning.decision: the pure ServiceDecision that recommend and LlmService share, and the
DecisionRecord of it that the template holds and plan reads back."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import ModelSpec, Precision
from cdk_sagemaker_llm.cli import main
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.calibration import Calibration, EngineRelease
from cdk_sagemaker_llm.planning.decision import (
    ChoiceSource,
    ExpectedTraffic,
    Overrides,
    ServiceDecision,
    ServiceRequest,
    choose,
    decide,
)
from cdk_sagemaker_llm.planning.decision_record import DecisionRecord
from cdk_sagemaker_llm.planning.efficiency import Efficiency, efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import resolve_profile
from cdk_sagemaker_llm.planning.performance import Workload
from cdk_sagemaker_llm.planning.recommend import (
    Recommendation,
    Rejection,
    RejectionKind,
    Slo,
    recommend,
)
from cdk_sagemaker_llm.planning.service_options import (
    CopyScaling,
    LayoutOverrides,
    Pricing,
    Risk,
    SearchSpace,
    Sizing,
)
from cdk_sagemaker_llm.planning.workload import TraceRecord, check_workload_context

CANDIDATES = [InstanceType.G5_2XLARGE, InstanceType.G5_12XLARGE, InstanceType.G6E_2XLARGE]
REQUEST = ServiceRequest(
    spec=ModelSpec.LLAMA_3_8B,
    workload=Workload(input_tokens=512, output_tokens=256),
    slo=Slo(max_ms_per_token=50, max_ttft_ms=2000),
    traffic=ExpectedTraffic.requests_per_second(4, minimum=0.5),
    search=SearchSpace(instance_types=CANDIDATES, max_instance_count=4),
    pricing=Pricing(region="us-west-2"),
    # the pessimistic default meets no 50 ms/token on these candidates
    sizing=Sizing(risk=Risk.MEDIAN),
)


def test_the_decision_is_recommends_first_option_with_serving_and_scaling() -> None:
    decision = decide(REQUEST)
    first = recommend(
        REQUEST.spec,
        REQUEST.workload,
        REQUEST.slo,
        REQUEST.traffic.peak,
        search=REQUEST.search,
        top=1000,
        pricing=REQUEST.pricing,
        sizing=REQUEST.sizing,  # as REQUEST
    ).options[0]
    assert decision.option == first
    assert decision.layout == first.layout
    assert decision.serving.max_batch_size == first.max_batch_size
    assert decision.serving.max_model_len == 768
    assert decision.serving.max_batch_total_tokens == first.max_batch_size * 768
    scaling = decision.scaling
    assert 1 <= scaling.min_copies <= scaling.max_copies
    assert scaling.target_concurrency_per_copy == first.scaling_target
    assert scaling.max_instances <= REQUEST.max_instance_count
    assert decision.reasoning[1:] == tuple(first.reasoning)
    assert decision.reasoning[0] == (
        "serving engine: not stated, the default engine profile lmi-vllm-v1; a calibration's "
        "engine is assumed, not checked"
    )
    assert decision.choices["instance_type"].source is ChoiceSource.RECOMMENDED


def test_the_predictions_carry_their_sources() -> None:
    sources = decide(REQUEST).predicted.sources
    assert any(line.startswith("accelerator: NVIDIA") for line in sources)
    assert any(line.startswith("model: llama-3-8b, 32 layers") for line in sources)
    # Uncalibrated: the engine profile's efficiencies, said to be fitted only where they are.
    assert any(line.startswith("engine: engine profile lmi-vllm-v1") for line in sources)
    default = resolve_profile(None)
    efficiency = next(line for line in sources if line.startswith("efficiency: "))
    if default.fitted is None:
        assert "the lmi-vllm-v1 profile's prior, not fitted to measurements" in efficiency
        assert "fitted to published" not in efficiency
    else:
        assert f"fitted to {default.fitted.rows} published measurements" in efficiency
    tgi = decide(replace(REQUEST, sizing=Sizing(engine="tgi-1", risk=Risk.MEDIAN)))
    fitted = resolve_profile("tgi-1").fitted
    assert fitted is not None
    assert any(
        f"(the tgi-1 profile, fitted to {fitted.rows} published measurements from "
        f"{len(fitted.sources)} source" in line
        for line in tgi.predicted.sources
    )
    assert any(line.startswith("price: on-demand;") for line in sources)


def test_the_metadata_round_trips_through_the_decision_record() -> None:
    # a target above the batch limit: a warning to record
    scaling = CopyScaling(max_copies=1, target_concurrency_per_copy=1000)
    decision = decide(REQUEST, Overrides(scaling=scaling))
    metadata = json.loads(json.dumps(decision.to_metadata()))
    assert metadata == json.loads(json.dumps(decision.to_record().to_metadata()))
    again = DecisionRecord.from_metadata(metadata)
    assert again.to_metadata() == metadata
    assert again.chosen("instance_type") == decision.layout.instance_type.name
    assert again.chosen("max_copies") == 1
    assert decision.warnings and again.warnings == tuple(w.message for w in decision.warnings)
    assert again.predicted.sources == decision.predicted.sources
    assert again.predicted.ms_per_token == round(decision.predicted.ms_per_token, 2)


def test_a_record_reads_what_it_lacks_as_empty_or_zero() -> None:
    record = DecisionRecord.from_metadata(
        {"model": "m", "choices": {"max_copies": {"value": 2, "source": "derived"}}}
    )
    assert record.goal == {"model": "m"}
    assert record.chosen("max_copies") == 2 and record.chosen("min_copies") is None
    assert record.choices["max_copies"].source is ChoiceSource.DERIVED
    assert record.predicted.concurrency == 0 and record.predicted.ms_per_token == 0
    assert record.reasoning == () and record.warnings == () and record.rejected_count == 0
    assert record.optimization is None and record.calibration_change is None


def test_benchmark_defers_the_target_to_the_measured_knee() -> None:
    decision = decide(REQUEST, Overrides(benchmark=True))
    assert decision.scaling.benchmark
    assert decision.choices["target_concurrency_per_copy"].source is ChoiceSource.BENCHMARK
    knee = decision.scaling.target_concurrency_per_copy
    overridden = decide(
        REQUEST, Overrides(benchmark=True, scaling=CopyScaling(target_concurrency_per_copy=knee))
    )
    assert not overridden.scaling.benchmark


def test_deciding_is_pure_and_errors_name_the_override() -> None:
    with pytest.raises(ValidationError) as raised:
        decide(REQUEST, Overrides(layout=LayoutOverrides(tensor_parallel_degree=3)))
    assert raised.value.prop == "tensor_parallel_degree"


def test_recommend_command_shows_the_same_decision(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "256",
        "--max-ms-per-token", "50", "--max-ttft-ms", "2000", "--requests-per-second", "4",
        "--instance-types", "ml.g5.2xlarge,ml.g5.12xlarge,ml.g6e.2xlarge",
        "--max-instance-count", "4", "--region", "us-west-2", "--risk", "median",
    ]  # fmt: skip
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = decide(
        ServiceRequest(
            **{
                **REQUEST.__dict__,
                "traffic": ExpectedTraffic.requests_per_second(4),
            },
        )
    )
    assert data["decision"]["choices"] == expected.to_metadata()["choices"]
    assert data["decision"]["sources"] == list(expected.predicted.sources)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "<details><summary>As an LlmService</summary>" in out
    assert "- source: accelerator: NVIDIA" in out


def test_a_custom_model_is_cited_as_given_not_as_a_catalog_entry() -> None:
    custom = ModelSpec.custom(
        "my-8b",
        parameters=8.0e9,
        layers=32,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        max_context=8192,
    )
    request = ServiceRequest(**{**REQUEST.__dict__, "spec": custom})
    (model,) = [s for s in decide(request).predicted.sources if s.startswith("model:")]
    assert model.endswith("(given with ModelSpec.custom)")


def test_recommend_command_decides_with_the_calibration_as_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Calibrated on an A10G, recommended on an L40S: the printed decision predicts with the
    factors that transfer (the per-step overhead), not the raw fitted ones, and says so."""
    calibration = Calibration(
        efficiency=Efficiency(
            memory_bandwidth=0.4, decode_compute=0.3, prefill_compute=0.3, step_overhead_ms=12.0
        ),
        model="llama-3-8b",
        instance_type="ml.g5.2xlarge",
        tensor_parallel_degree=1,
        copies=1,
        precision="fp16",
        input_tokens=512,
        output_tokens=256,
        concurrency_range=(1, 32),
        levels=6,
        rms_error=0.04,
        engine=EngineRelease("lmi", "0.31.0"),
        accelerator="NVIDIA A10G",
    )
    calibration.to_file(tmp_path / "calibration.json")
    argv = [
        "recommend", "--model", "llama-3-8b", "--input-tokens", "512", "--output-tokens", "256",
        "--max-ms-per-token", "50", "--requests-per-second", "4",
        "--instance-types", "ml.g6e.2xlarge", "--max-instance-count", "4",
        "--calibration", str(tmp_path / "calibration.json"), "--engine", "lmi:0.31.0",
        "--risk", "median",
    ]  # fmt: skip
    assert main([*argv, "--format", "json"]) == 0
    decision = json.loads(capsys.readouterr().out)["decision"]
    (efficiency,) = [s for s in decision["sources"] if s.startswith("efficiency:")]
    # Not transferred: the factors of the target engine's profile (not the generic ones).
    profile = efficiency_of(resolve_profile(EngineRelease("lmi", "0.31.0")))
    assert efficiency.startswith(
        f"efficiency: memory bandwidth {profile.memory_bandwidth:.0%} of peak, decode compute "
        f"{profile.decode_compute:.0%}, prefill compute {profile.prefill_compute:.0%}"
    )
    assert "12 ms per-step overhead" in efficiency  # the engine-level factor transfers
    assert any(
        "only the engine-level per-step overhead" in n for n in decision["calibration_notes"]
    )
    assert decision["calibration_change"].startswith(("changed the decision", "kept the layout"))
    assert decision["reasoning"][0].startswith("serving engine: lmi 0.31.0")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "- calibration: calibrated on NVIDIA A10G, applied to NVIDIA L40S" in out


@pytest.mark.parametrize(
    ("rate", "max_ms_per_token", "candidates"),
    [
        # Ranked at the most per copy within the SLO, these ran more instances at the peak
        # than they were ranked on: the autoscaling target is the knee.
        (4, 40, [InstanceType.G5_12XLARGE, InstanceType.G6E_12XLARGE]),
        (2, 50, [InstanceType.G5_12XLARGE, InstanceType.G6E_XLARGE]),
        (8, 40, [InstanceType.P4D_24XLARGE]),
    ],
)
def test_the_instances_ranked_are_the_instances_autoscaling_runs_at_the_peak(
    rate: float, max_ms_per_token: float, candidates: list[InstanceType]
) -> None:
    """One concurrency per copy ranks a layout and sets its autoscaling target: the copies
    the peak needs at that target fit the instances the option was ranked (and priced) on."""
    request = ServiceRequest(
        spec=ModelSpec.LLAMA_3_8B,
        workload=Workload(input_tokens=512, output_tokens=256),
        slo=Slo(max_ms_per_token=max_ms_per_token),
        traffic=ExpectedTraffic.requests_per_second(rate, minimum=0.5),
        search=SearchSpace(instance_types=candidates, max_instance_count=8),
    )
    decision = decide(request)
    option = decision.option
    assert option is not None
    target = decision.scaling.target_concurrency_per_copy
    assert target == option.scaling_target
    assert option.concurrency_per_copy <= target <= option.max_concurrency_per_copy
    peak_copies = math.ceil(option.predicted.concurrency / target)
    assert peak_copies <= option.layout.copies
    assert math.ceil(decision.scaling.max_copies / option.layout.copies_per_instance) == (
        decision.scaling.max_instances
    )
    # the expected instances at the peak, within the ceiling (the band's pessimistic edge)
    assert option.layout.instance_count <= option.ceiling == decision.scaling.max_instances
    assert not [w for w in decision.warnings if w.prop == "max_instance_count"]


def test_a_layout_ranked_within_max_instance_count_autoscales_within_it() -> None:
    """The case that used to cap max_copies with a warning: ranked on two instances at the
    most per copy within the SLO, its knee asked for a third. Sized at its scaling target, the
    option autoscales within the instances it was ranked on, and the next rate that needs a
    third instance is refused up front, naming max_instance_count. The boundary rate is found
    from the model (it moves with every refit of the engine profiles), then held to the cap."""
    fields = {
        **REQUEST.__dict__,
        "sizing": replace(REQUEST.sizing, engine=EngineRelease("lmi", "0.31.0")),
    }

    def decided(rate: float, max_instance_count: int) -> ServiceDecision:
        search = SearchSpace(
            instance_types=[InstanceType.G6E_2XLARGE], max_instance_count=max_instance_count
        )
        traffic = ExpectedTraffic.requests_per_second(rate, minimum=1)
        return decide(ServiceRequest(**{**fields, "search": search, "traffic": traffic}))

    rates = [2 + step / 4 for step in range(80)]
    two = max(rate for rate in rates if decided(rate, 8).layout.instance_count == 2)
    busier = two + 0.25
    assert decided(busier, 8).layout.instance_count == 3
    decision = decided(two, 2)
    assert decision.scaling.max_instances == 2 == decision.layout.instance_count
    assert not decision.warnings
    with pytest.raises(ValidationError, match="max_instance_count=2") as error:
        decided(busier, 2)
    assert "needs 3 instances" in str(error.value)


def _trace_request(*lengths: tuple[int, int]) -> ServiceRequest:
    records = [TraceRecord(float(i), prompt, output) for i, (prompt, output) in enumerate(lengths)]
    return ServiceRequest(**{**REQUEST.__dict__, "workload": Workload.trace(records)})


def test_a_traces_longest_request_must_fit_the_context_not_its_mean() -> None:
    # mean 4128 + 128 tokens fits Llama 3 8B's 8192; the 8000-token prompt + 200 does not,
    # and vLLM would reject it at run time
    request = _trace_request((256, 56), (8000, 200))
    assert request.workload.total_tokens < 8192 < request.workload.longest_tokens == 8200
    with pytest.raises(ValidationError) as raised:
        decide(request)
    assert raised.value.prop == "workload"
    assert "longest request has 8200 in all" in str(raised.value)
    with pytest.raises(ValidationError, match="8200 tokens per sequence"):
        check_workload_context(request.spec, request.workload)


def test_max_model_len_serves_a_traces_longest_request() -> None:
    request = _trace_request((256, 56), (1000, 100), (3000, 200))
    workload = request.workload
    serving = decide(request).serving
    assert serving.max_model_len == workload.longest_tokens == 3200
    assert serving.max_input_tokens == workload.longest_input_tokens == 3000
    # TGI's batch budget stays what the KV cache was checked to hold: batch x the mean
    assert serving.max_batch_total_tokens == serving.max_batch_size * workload.total_tokens


def test_a_multi_turn_workloads_longest_request_is_its_last_turn() -> None:
    workload = Workload.multi_turn(
        conversations=2, turns=3, turn_tokens=100, output_tokens=50, system_tokens=20
    )
    # turn 3: system + three turns + two answers in, one answer out
    assert workload.longest_input_tokens == 20 + 3 * 100 + 2 * 50
    assert workload.longest_tokens == workload.longest_input_tokens + 50
    assert workload.longest_tokens > workload.total_tokens
    plain = Workload(input_tokens=512, output_tokens=256)
    assert (plain.longest_input_tokens, plain.longest_tokens) == (512, 768)


def test_an_accelerator_with_unpublished_figures_is_not_called_a_memory_problem() -> None:
    """Llama 3 8B fits one RTX PRO 4500 (ml.g7.2xlarge) many times over, but its figures are
    unpublished: the answer blames the candidates' unknown performance, typed as such, and
    does not ask for more accelerator memory."""
    request = replace(REQUEST, search=SearchSpace(instance_types=[InstanceType.G7_2XLARGE]))
    found = recommend(
        request.spec,
        request.workload,
        request.slo,
        request.traffic.peak,
        search=request.search,
        sizing=request.sizing,
    )
    assert [r.kind for r in found.rejected] == [RejectionKind.UNPREDICTABLE]
    assert found.to_dict()["rejected"][0]["kind"] == "unpredictable"
    with pytest.raises(ValidationError) as raised:
        decide(request)
    assert raised.value.prop == "instance_types"
    assert raised.value.value == ["ml.g7.2xlarge"]
    assert "performance unknown" in raised.value.problem
    assert "does not fit" not in raised.value.problem
    assert "more accelerator memory is not what is missing" in raised.value.fix


def test_int4_refused_where_unmeasured_is_not_answered_with_a_lower_precision() -> None:
    """Llama 3 70B in int4 on ml.g5.12xlarge: TP1 runs out of memory, TP2 and TP4 are refused
    int4 (no measurement on the A10G beyond TP1). The answer named a memory problem and advised
    a lower precision; it shows a reason of each kind and names where int4 is offered."""
    request = replace(
        REQUEST,
        spec=ModelSpec.LLAMA_3_70B,
        search=SearchSpace(instance_types=[InstanceType.G5_12XLARGE], precision=Precision.INT4_AWQ),
    )
    with pytest.raises(ValidationError) as raised:
        decide(request)
    error = raised.value
    assert error.prop == "instance_types"
    assert "no candidate layout serves the model (memory, precision): " in error.problem
    assert "TP1: memory: " in error.problem and "TP2: precision: " in error.problem
    assert "does not fit on any candidate" not in error.problem
    assert "lower the precision" not in error.fix
    assert "add instance types with more accelerator memory" in error.fix
    assert "serve a precision the candidates offer (each precision reason names" in error.fix
    assert "NVIDIA A10G TP1" in error.fix and "the SLO is not the cause" in error.fix


def test_an_override_refused_for_its_precision_is_not_blamed_on_the_slo_or_memory() -> None:
    """TP2 on ml.g5.12xlarge in int4 is refused for want of a measurement there, while TP1
    serves; the override's error said "within the SLO and memory"."""
    request = replace(
        REQUEST,
        search=SearchSpace(
            instance_types=[InstanceType.G5_12XLARGE],
            precision=Precision.INT4_AWQ,
            max_instance_count=4,
        ),
    )
    with pytest.raises(ValidationError) as raised:
        decide(request, Overrides(layout=LayoutOverrides(tensor_parallel_degree=2)))
    error = raised.value
    assert (error.prop, error.value) == ("tensor_parallel_degree", 2)
    assert "ml.g5.12xlarge TP2: precision: no public measurement of int4" in error.problem
    assert "SLO" not in error.problem and "memory" not in error.problem
    assert error.fix == "drop the override or use one of 1"


def test_a_model_too_big_even_in_int4_is_not_told_to_lower_the_precision() -> None:
    request = replace(
        REQUEST,
        spec=ModelSpec.LLAMA_3_70B,
        search=SearchSpace(instance_types=[InstanceType.G5_2XLARGE], precision=Precision.INT4_AWQ),
    )
    with pytest.raises(ValidationError) as raised:
        decide(request)
    assert raised.value.problem.startswith("the model does not fit on any candidate: ")
    assert "lower the precision" not in raised.value.fix
    assert "more accelerator memory" in raised.value.fix


@pytest.mark.parametrize(
    "kinds",
    [(kind,) for kind in RejectionKind] + list(itertools.combinations(RejectionKind, 2)),
    ids=lambda kinds: "+".join(kind.name for kind in kinds),
)
def test_the_no_option_advice_follows_the_rejections_kinds(
    kinds: tuple[RejectionKind, ...],
) -> None:
    """Each kind brings its own advice and reason; none brings advice another contradicts."""
    rejected = [
        Rejection("ml.g5.12xlarge", kind, f"{kind.value}: reason {i}", 1)
        for i, kind in enumerate(kinds)
    ]
    with pytest.raises(ValidationError) as raised:
        choose(
            Recommendation([], rejected),
            instance_type=None,
            tensor_parallel_degree=None,
            max_instance_count=4,
            precision=Precision.FP16,
        )
    error, present = raised.value, set(kinds)
    assert all(f"{kind.value}: reason {i}" in error.problem for i, kind in enumerate(kinds))
    slo, count = RejectionKind.SLO in present, RejectionKind.INSTANCE_COUNT in present
    memory, precision = RejectionKind.MEMORY in present, RejectionKind.PRECISION in present
    assert error.prop == ("slo" if slo else "max_instance_count" if count else "instance_types")
    assert ("relax the SLO" in error.fix) is slo
    assert ("the SLO is not the cause" in error.fix) is not slo
    assert ("raise max_instance_count" in error.fix) is count
    assert ("more accelerator memory (or more accelerators)" in error.fix) is memory
    assert ("lower the precision" in error.fix) is (memory and not precision)
    assert ("serve a precision the candidates offer" in error.fix) is precision
    assert ("more accelerator memory is not what is missing" in error.fix) is (
        not memory and not slo and not count
    )
    assert ("performance figures are published" in error.fix) is (
        RejectionKind.UNPREDICTABLE in present
    )


def test_planning_decision_re_exports_each_name_from_the_module_that_owns_it() -> None:
    import importlib

    from cdk_sagemaker_llm.planning import decision

    owners = [
        importlib.import_module(f"cdk_sagemaker_llm.planning.{name}")
        for name in ("service_request", "service_decision", "decision_record", "decider")
    ]
    for name in decision.__all__:
        found = [vars(owner)[name] for owner in owners if name in vars(owner)]
        assert found and all(value is getattr(decision, name) for value in found), name
        value = getattr(decision, name)
        if callable(value):
            assert value.__module__ in {owner.__name__ for owner in owners}, name
