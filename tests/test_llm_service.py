"""LlmService: the layout the performance model recommends, emitted, overridable, recorded."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Size
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Annotations, Match
from conftest import (
    CDK_CONTEXT,
    assert_cfn_lint_clean,
    new_stack,
    resources_of_type,
    role_statements,
)
from hub import hub_token

from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from cdk_sagemaker_llm.catalog.prices import DEFAULT_PRICE_LIST
from cdk_sagemaker_llm.constructs.images import ContainerImage
from cdk_sagemaker_llm.constructs.llm_service import ExpectedTraffic, LlmService
from cdk_sagemaker_llm.constructs.llm_service_options import (
    ComponentSettings,
    ServiceBenchmark,
    ServiceModel,
)
from cdk_sagemaker_llm.constructs.model_source import ModelSource
from cdk_sagemaker_llm.constructs.optimization_job import OptimizationJob
from cdk_sagemaker_llm.constructs.optimization_options import OptimizationOutput
from cdk_sagemaker_llm.constructs.optimization_techniques import (
    OptimizationTechnique,
    QuantizationMethod,
)
from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.calibration import Calibration, EngineRelease
from cdk_sagemaker_llm.planning.decision_record import DecisionRecord
from cdk_sagemaker_llm.planning.efficiency import Efficiency, efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import resolve_profile
from cdk_sagemaker_llm.planning.optimizations import Optimization
from cdk_sagemaker_llm.planning.performance import Workload, predict
from cdk_sagemaker_llm.planning.recommend import Option, Slo, recommend
from cdk_sagemaker_llm.planning.service_options import (
    CopyScaling,
    LayoutOverrides,
    Pricing,
    Risk,
    SearchSpace,
    Sizing,
)
from cdk_sagemaker_llm.planning.speculation import Speculation
from cdk_sagemaker_llm.review import build_plan, render_json, render_markdown
from cdk_sagemaker_llm.template_metadata import SERVICE

LLAMA = "meta-llama/Meta-Llama-3-8B-Instruct"
CANDIDATES = [
    InstanceType.G5_2XLARGE,
    InstanceType.G5_12XLARGE,
    InstanceType.G6E_2XLARGE,
    InstanceType.P4D_24XLARGE,
]
SLO = Slo(max_ms_per_token=50, max_ttft_ms=2000)
WORKLOAD = Workload(input_tokens=512, output_tokens=256)


MODEL_PROPS = ("image", "source", "spec", "environment", "loading_timeout")
SEARCH_PROPS = (
    "instance_types",
    "max_instance_count",
    "precision",
    "kv_cache_precision",
    "optimizations",
)
LAYOUT_PROPS = (
    "instance_type",
    "tensor_parallel_degree",
    "copies_per_instance",
    "max_batch_size",
    "max_model_len",
)
SCALING_PROPS = ("min_copies", "max_copies", "target_concurrency_per_copy")
COMPONENT_PROPS = ("min_memory_per_copy", "cpu_cores_per_copy", "deployment")


def grouped(flat: dict[str, Any]) -> dict[str, Any]:
    """A test shorthand: flat settings (``instance_type=...``, ``min_copies=...``) as the
    service's typed props (``overrides=LayoutOverrides(...)``, ``scaling=CopyScaling(...)``)."""

    def take(names: tuple[str, ...]) -> dict[str, Any]:
        return {name: flat.pop(name) for name in names if name in flat}

    model = take(MODEL_PROPS)
    source = model.pop("source")
    props: dict[str, Any] = {
        "model": ServiceModel.from_source(source, **model),
        "search": SearchSpace(**take(SEARCH_PROPS)),
        "sizing": Sizing(**take(("risk", "calibration"))),
        "overrides": LayoutOverrides(**take(LAYOUT_PROPS)),
        "scaling": CopyScaling(**take(SCALING_PROPS)),
        "component": ComponentSettings(**take(COMPONENT_PROPS)),
    }
    if "input_tokens" in flat:
        props["workload"] = Workload(flat.pop("input_tokens"), flat.pop("output_tokens"))
    if flat.pop("benchmark", False):
        props["benchmark"] = ServiceBenchmark.knee_search()
    return {**props, **flat}


def service(
    stack: cdk.Stack | None = None,
    *,
    traffic: ExpectedTraffic | None = None,
    slo: Slo = SLO,
    **overrides: Any,
) -> LlmService:
    flat: dict[str, Any] = {
        "image": ContainerImage.lmi("0.33.0"),
        "source": ModelSource.from_hugging_face(LLAMA, token_secret=hub_token()),
        "input_tokens": WORKLOAD.input_tokens,
        "output_tokens": WORKLOAD.output_tokens,
        "slo": slo,
        "traffic": traffic or ExpectedTraffic.requests_per_second(4, minimum=0.5),
        "instance_types": CANDIDATES,
        "max_instance_count": 4,
        # Sized at the median unless a test says otherwise: these tests check the mechanics
        # (the pessimistic default meets no 50 ms/token on these candidates).
        "risk": Risk.MEDIAN,
        **overrides,
    }
    return LlmService(stack or new_stack(), "Service", **grouped(flat))


def expected_option(traffic: ExpectedTraffic, **filters: Any) -> Option:
    """What recommend() itself ranks first (after the layout overrides in ``filters``)."""
    found = recommend(
        ModelSpec.LLAMA_3_8B,
        WORKLOAD,
        SLO,
        traffic.peak,
        search=SearchSpace(instance_types=CANDIDATES, max_instance_count=4),
        top=1000,
        pricing=Pricing(region="us-west-2"),  # the test stacks' region: the price note says so
        sizing=Sizing(
            engine=EngineRelease("lmi", "0.33.0"),  # the service's image
            risk=Risk.MEDIAN,  # as service() (LlmService's default is pessimistic)
        ),
    )
    options = [
        o
        for o in found.options
        if all(getattr(o.layout, key) == value for key, value in filters.items())
    ]
    return options[0]


def template_of(built: LlmService) -> dict[str, Any]:
    return assert_cfn_lint_clean(cdk.Stack.of(built))


def one(template: dict[str, Any], kind: str) -> dict[str, Any]:
    (found,) = resources_of_type(template, kind)
    return found


def environment_of(template: dict[str, Any]) -> dict[str, str]:
    return dict(one(template, "AWS::SageMaker::Model")["PrimaryContainer"]["Environment"])


def decision_of(template: dict[str, Any]) -> dict[str, Any]:
    (component,) = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::SageMaker::InferenceComponent"
    ]
    return dict(component["Metadata"][SERVICE])


@pytest.mark.parametrize(
    "traffic",
    [
        ExpectedTraffic.requests_per_second(4, minimum=0.5),
        ExpectedTraffic.concurrency(64, minimum=8),
    ],
    ids=["rate", "concurrency"],
)
def test_emits_the_recommended_layout(traffic: ExpectedTraffic) -> None:
    built = service(traffic=traffic)
    option = expected_option(traffic)
    layout = option.layout
    assert built.option == option
    template = template_of(built)

    config = one(template, "AWS::SageMaker::EndpointConfig")
    (variant,) = config["ProductionVariants"]
    assert variant["InstanceType"] == layout.instance_type.name
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
    per_instance = layout.copies_per_instance
    assert built.max_copies >= layout.instance_count * per_instance
    assert built.max_copies >= math.ceil(
        option.predicted.concurrency / option.knee_concurrency_per_copy
    )
    managed = variant["ManagedInstanceScaling"]
    assert managed["MaxInstanceCount"] == math.ceil(built.max_copies / per_instance) <= 4
    assert managed["MinInstanceCount"] == math.ceil(built.min_copies / per_instance)

    component = one(template, "AWS::SageMaker::InferenceComponent")
    requirements = component["Specification"]["ComputeResourceRequirements"]
    assert requirements["NumberOfAcceleratorDevicesRequired"] == layout.tensor_parallel_degree
    share = layout.instance_type.memory_mib * layout.tensor_parallel_degree
    share //= layout.instance_type.accelerator_count
    assert requirements["MinMemoryRequiredInMb"] == share // 2 // 1024 * 1024
    assert component["RuntimeConfig"]["CopyCount"] == max(1, built.min_copies)

    environment = environment_of(template)
    assert environment["OPTION_TENSOR_PARALLEL_DEGREE"] == str(layout.tensor_parallel_degree)
    assert environment["OPTION_MAX_ROLLING_BATCH_SIZE"] == str(option.max_batch_size)
    assert environment["OPTION_MAX_MODEL_LEN"] == "768"  # 512 in + 256 out
    assert environment["OPTION_DTYPE"] == "fp16"

    target = one(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert (target["MinCapacity"], target["MaxCapacity"]) == (built.min_copies, built.max_copies)
    policy = one(template, "AWS::ApplicationAutoScaling::ScalingPolicy")
    tracking = policy["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["TargetValue"] == option.scaling_target
    assert tracking["PredefinedMetricSpecification"]["PredefinedMetricType"] == (
        "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
    )


def test_more_traffic_gets_more_copies_and_the_minimum_follows_the_least_traffic() -> None:
    quiet = service(traffic=ExpectedTraffic.concurrency(4, minimum=1))
    busy = service(traffic=ExpectedTraffic.concurrency(200, minimum=100), max_instance_count=8)
    assert busy.max_copies * busy.option.knee_concurrency_per_copy >= 200
    assert busy.max_copies > quiet.max_copies
    assert quiet.min_copies == 1
    knee = busy.option.knee_concurrency_per_copy
    assert busy.min_copies == min(busy.max_copies, math.ceil(100 / knee))


def test_tgi_images_get_tgi_limits() -> None:
    built = service(image=ContainerImage.tgi("2.4.0"))
    option = built.option
    environment = environment_of(template_of(built))
    assert environment["SM_NUM_GPUS"] == str(option.layout.tensor_parallel_degree)
    assert environment["MAX_INPUT_TOKENS"] == "512"
    assert environment["MAX_TOTAL_TOKENS"] == "768"
    # TGI bounds the batch by tokens: the batch limit x the tokens of one request.
    assert environment["MAX_BATCH_TOTAL_TOKENS"] == str(option.max_batch_size * 768)
    prefill = int(environment["MAX_BATCH_PREFILL_TOKENS"])
    assert 512 <= prefill <= option.max_batch_size * 768


def test_an_optimization_jobs_output_is_served_at_its_precision_on_its_instance_type() -> None:
    stack = new_stack()
    models = s3.Bucket.from_bucket_name(stack, "Models", "models")
    job = OptimizationJob(
        stack,
        "Awq",
        source=ModelSource.from_s3(models, "llama/"),
        instance_type=InstanceType.G5_2XLARGE,
        techniques=[OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
        output=OptimizationOutput.in_bucket(models),
    )
    built = LlmService(
        stack,
        "Service",
        model=ServiceModel.from_optimization_job(job, spec=ModelSpec.LLAMA_3_8B),
        workload=Workload(input_tokens=512, output_tokens=256),
        slo=SLO,
        traffic=ExpectedTraffic.concurrency(4),
    )
    assert built.option.layout.instance_type == InstanceType.G5_2XLARGE
    template = template_of(built)
    assert environment_of(template)["OPTION_QUANTIZE"] == "awq"
    assert decision_of(template)["precision"] == Precision.INT4_AWQ.value


# ----- overrides --------------------------------------------------------------------------------


def test_layout_overrides_win_and_are_recorded() -> None:
    built = service(instance_type=InstanceType.G5_12XLARGE, tensor_parallel_degree=1)
    layout = built.option.layout
    assert (layout.instance_type, layout.tensor_parallel_degree) == (InstanceType.G5_12XLARGE, 1)
    assert built.option == expected_option(
        ExpectedTraffic.requests_per_second(4, minimum=0.5),
        instance_type=InstanceType.G5_12XLARGE,
        tensor_parallel_degree=1,
    )
    choices = decision_of(template_of(built))["choices"]
    assert choices["instance_type"] == {"value": "ml.g5.12xlarge", "source": "override"}
    assert choices["tensor_parallel_degree"] == {"value": 1, "source": "override"}
    assert choices["copies_per_instance"]["source"] == "recommended"


def test_fewer_copies_per_instance_spread_the_same_copies_over_more_instances() -> None:
    traffic = ExpectedTraffic.concurrency(64)
    full = service(
        traffic=traffic, instance_type=InstanceType.G5_12XLARGE, tensor_parallel_degree=1
    )
    spread = service(
        traffic=traffic,
        instance_type=InstanceType.G5_12XLARGE,
        tensor_parallel_degree=1,
        copies_per_instance=2,
    )
    copies = full.option.layout.copies
    layout = spread.option.layout
    assert (layout.copies_per_instance, layout.instance_count) == (2, math.ceil(copies / 2))
    # The copies serve as they did: the figures are the decision's own (at its risk and
    # traffic), not a fresh closed-loop prediction of the raw model.
    assert spread.option.predicted == full.option.predicted
    assert spread.option.concurrency_per_copy == full.option.concurrency_per_copy
    assert spread.option.price_per_hour == pytest.approx(
        DEFAULT_PRICE_LIST.prices["ml.g5.12xlarge"] * layout.instance_count
    )
    template = template_of(spread)
    (variant,) = one(template, "AWS::SageMaker::EndpointConfig")["ProductionVariants"]
    assert variant["ManagedInstanceScaling"]["MaxInstanceCount"] == math.ceil(spread.max_copies / 2)
    decision = decision_of(template)
    assert decision["choices"]["copies_per_instance"] == {"value": 2, "source": "override"}
    assert "copies_per_instance override" in decision["reasoning"][-1]
    raises("copies_per_instance", instance_type=InstanceType.G5_12XLARGE, copies_per_instance=99)


def test_scaling_and_serving_overrides_win() -> None:
    built = service(
        max_batch_size=4,
        max_model_len=1024,
        min_copies=2,
        max_copies=4,
        target_concurrency_per_copy=2,
        min_memory_per_copy=Size.gibibytes(8),
        cpu_cores_per_copy=2,
    )
    template = template_of(built)
    environment = environment_of(template)
    assert environment["OPTION_MAX_ROLLING_BATCH_SIZE"] == "4"
    assert environment["OPTION_MAX_MODEL_LEN"] == "1024"
    target = one(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert (target["MinCapacity"], target["MaxCapacity"]) == (2, 4)
    policy = one(template, "AWS::ApplicationAutoScaling::ScalingPolicy")
    assert policy["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] == 2
    requirements = one(template, "AWS::SageMaker::InferenceComponent")["Specification"][
        "ComputeResourceRequirements"
    ]
    assert requirements["MinMemoryRequiredInMb"] == 8192
    assert requirements["NumberOfCpuCoresRequired"] == 2
    choices = decision_of(template)["choices"]
    for name in ("max_batch_size", "max_model_len", "min_copies", "max_copies"):
        assert choices[name]["source"] == "override", name


def test_min_copies_zero_lets_the_endpoint_release_every_instance() -> None:
    built = service(min_copies=0)
    template = template_of(built)
    (variant,) = one(template, "AWS::SageMaker::EndpointConfig")["ProductionVariants"]
    assert variant["ManagedInstanceScaling"]["MinInstanceCount"] == 0
    assert variant["InitialInstanceCount"] == 1
    target = one(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert target["MinCapacity"] == 0
    assert built.scaling.scale_from_zero is not None


def test_a_target_the_model_predicts_breaks_the_slo_is_a_warning_naming_the_prop() -> None:
    built = service(
        slo=Slo(max_ms_per_token=50), target_concurrency_per_copy=4000, max_batch_size=1
    )
    annotations = Annotations.from_stack(cdk.Stack.of(built))
    annotations.has_warning(
        "/TestStack/Service", Match.string_like_regexp("target_concurrency_per_copy=4000")
    )
    assert any(w.prop == "target_concurrency_per_copy" for w in built.decision.warnings)


def test_min_copies_below_what_the_stated_minimum_needs_is_a_warning() -> None:
    """A stated minimum of traffic that ``min_copies`` cannot carry is a warning naming it (a
    minimum of 2 requests/s with min_copies=0 passed silently); min_copies=0 under a minimum
    of 0 is plain scale to zero, and not warned about."""
    built = service(traffic=ExpectedTraffic.requests_per_second(8, minimum=2), min_copies=0)
    (warning,) = [w for w in built.decision.warnings if w.prop == "min_copies"]
    assert warning.message.startswith("min_copies=0 is below the ")
    assert "minimum 2 requests/s" in warning.message and "first requests fail" in warning.message
    idle = service(traffic=ExpectedTraffic.requests_per_second(8, minimum=0), min_copies=0)
    assert not [w for w in idle.decision.warnings if w.prop == "min_copies"]


def test_too_few_max_copies_for_the_peak_is_a_warning() -> None:
    built = service(traffic=ExpectedTraffic.concurrency(200), max_copies=1)
    assert any(w.message.startswith("max_copies=1") for w in built.decision.warnings)


def test_too_few_max_copies_for_a_peak_rate_is_a_warning_too() -> None:
    """At a rate, the peak's mean in flight is what the option's copies carry: one copy at
    the same rate carries more. max_copies below the option's own copies at the peak is a
    warning (it was silent where the mean in flight fitted under one copy's target)."""
    free = service(traffic=ExpectedTraffic.requests_per_second(8, minimum=2))
    copies = free.option.layout.copies
    assert copies >= 2
    built = service(traffic=ExpectedTraffic.requests_per_second(8, minimum=2), max_copies=1)
    assert any(
        w.prop == "max_copies" and w.message.startswith("max_copies=1")
        for w in built.decision.warnings
    )


# ----- validation errors -------------------------------------------------------------------------


def raises(prop: str, **props: Any) -> ValidationError:
    with pytest.raises(ValidationError) as raised:
        service(**props)
    assert raised.value.prop == prop, raised.value
    return raised.value


def test_a_batch_above_what_the_kv_cache_holds_is_an_error() -> None:
    error = raises("max_batch_size", max_batch_size=100_000)
    assert "holds at most" in error.problem


def test_more_copies_than_max_instance_count_instances_hold_is_an_error() -> None:
    error = raises("max_copies", max_copies=10_000)
    assert "max_instance_count" in error.problem


def test_an_slo_nothing_meets_is_an_error_with_the_reasons() -> None:
    error = raises("slo", slo=Slo(max_ms_per_token=0.01))
    assert "relax the SLO" in error.fix


def test_an_instance_type_that_cannot_serve_is_an_error_naming_it() -> None:
    with pytest.raises(ValidationError) as raised:
        LlmService(
            new_stack(),
            "Service",
            model=ServiceModel.from_source(
                ModelSource.from_hugging_face(
                    "meta-llama/Meta-Llama-3-70B-Instruct", token_secret=hub_token()
                ),
                image=ContainerImage.lmi("0.33.0"),
            ),
            workload=Workload(input_tokens=512, output_tokens=256),
            slo=SLO,
            traffic=ExpectedTraffic.concurrency(4),
            search=SearchSpace(instance_types=[InstanceType.G5_2XLARGE, InstanceType.P4D_24XLARGE]),
            overrides=LayoutOverrides(instance_type=InstanceType.G5_2XLARGE),
            # p4d serves at the median: the override alone is at fault
            sizing=Sizing(risk=Risk.MEDIAN),
        )
    assert raised.value.prop == "instance_type"
    assert raised.value.value == "ml.g5.2xlarge"


def test_a_tensor_parallel_degree_no_layout_uses_is_an_error() -> None:
    error = raises("tensor_parallel_degree", tensor_parallel_degree=6)
    assert "drop the override" in error.fix


def test_a_degree_the_heads_do_not_divide_blames_the_degree_and_says_why() -> None:
    """TP=3 on Llama 3 8B (32 heads) said "no layout serves the peak traffic within
    the SLO", as if the SLO were at fault."""
    error = raises("tensor_parallel_degree", tensor_parallel_degree=3)
    assert error.value == 3
    assert "32 attention heads do not divide over 3" in error.problem
    assert "SLO" not in error.problem
    assert "divides the attention and KV heads" in error.fix


def test_more_copies_per_instance_than_the_instance_holds_blames_the_override() -> None:
    error = raises(
        "copies_per_instance",
        instance_type=InstanceType.G5_12XLARGE,
        tensor_parallel_degree=1,
        copies_per_instance=8,
    )
    assert error.value == 8
    assert "ml.g5.12xlarge holds 4 copies of tensor-parallel degree 1" in error.problem
    assert "at most 4 copies per instance" in error.fix


def test_a_model_no_candidate_holds_in_memory_blames_the_candidates_not_the_slo() -> None:
    """Llama 3 70B on g5s was reported as slo='unmet'."""
    error = raises(
        "instance_types",
        source=ModelSource.from_hugging_face(
            "meta-llama/Meta-Llama-3-70B-Instruct", token_secret=hub_token()
        ),
        instance_types=[InstanceType.G5_2XLARGE, InstanceType.G5_12XLARGE],
    )
    assert error.value == ["ml.g5.12xlarge", "ml.g5.2xlarge"]
    assert error.problem.startswith("the model does not fit on any candidate: ")
    assert "memory" in error.problem
    assert "more accelerator memory" in error.fix and "SLO is not the cause" in error.fix


def test_bad_inputs_name_their_prop() -> None:
    raises("spec", source=ModelSource.from_hugging_face("my-org/unknown-model"))
    raises("image", image=ContainerImage.lmi_neuronx("0.29.0"))
    raises("instance_types[0]", instance_types=[InstanceType.INF2_XLARGE])
    raises("precision", precision=Precision.INT8)
    raises("input_tokens", input_tokens=0)
    with pytest.raises(ValidationError) as raised:
        ExpectedTraffic.concurrency(4, minimum=8)
    assert raised.value.prop == "traffic.minimum (concurrency)"


# ----- the benchmark ---------------------------------------------------------------------------


def test_a_benchmark_gates_on_the_slo_and_its_knee_becomes_the_target() -> None:
    built = service(benchmark=True)
    assert built.benchmark is not None
    template = template_of(built)
    (custom,) = resources_of_type(template, "Custom::SageMakerEndpointBenchmark")
    run = custom["Run"]
    assert run["Gate"] == {
        "MaxP50MsPerToken": 50,
        "MaxP50TtftMs": SLO.max_ttft_ms,  # one request's TTFT, as its ms/token
        "MaxErrorRate": 0.05,  # failing requests fail the deploy where the figures rest
        "PeakRequestsPerS": 4,  # the traffic's peak, at the most copies autoscaling allows
        "MaxCopies": built.max_copies,
    }
    assert run["Rule"]["SloMsPerToken"] == 50
    assert (run["InputTokens"], run["OutputTokens"], run["Stream"]) == (512, 256, True)
    assert run["Copies"] == max(1, built.min_copies)
    levels = run["Concurrencies"]
    predicted = built.option.knee_concurrency_per_copy * run["Copies"]
    assert levels == [1, 4 * predicted]  # a search's range, up to 4 x the prediction
    assert run["Search"] == "knee" and run["SearchExpected"] == predicted  # starts from it
    policy = one(template, "AWS::ApplicationAutoScaling::ScalingPolicy")
    value = policy["TargetTrackingScalingPolicyConfiguration"]["TargetValue"]
    assert value["Fn::GetAtt"][1] == "KneeConcurrencyPerCopy"
    choice = decision_of(template)["choices"]["target_concurrency_per_copy"]
    assert choice == {"value": built.option.scaling_target, "source": "benchmark"}


def test_a_ttft_only_slo_benchmarks_without_a_per_token_gate() -> None:
    """A TTFT-only SLO (Slo(max_ttft_ms=...)) has no per-token limit: the sweep's knee rule
    and the gate must not carry an infinite one into the template; the knee rule holds the
    TTFT limit instead, on streamed responses."""
    built = service(slo=Slo(max_ttft_ms=2000), benchmark=True)
    template = template_of(built)
    (custom,) = resources_of_type(template, "Custom::SageMakerEndpointBenchmark")
    run = custom["Run"]
    assert "MaxP50MsPerToken" not in run["Gate"]
    # One request's TTFT is gated as its ms/token is where the SLO states one (there was no
    # single-request gate at all under a TTFT-only SLO).
    assert run["Gate"]["MaxP50TtftMs"] == 2000
    assert "SloMsPerToken" not in run["Rule"]
    assert run["Rule"]["SloTtftMs"] == 2000 and run["Stream"] is True
    assert "Infinity" not in json.dumps(template)


def test_a_benchmark_gates_on_a_concurrency_peak_at_the_most_copies_and_the_ttft_limit() -> None:
    """The service's SLO TTFT reaches the sweep's knee rule, and a peak stated as requests in
    flight reaches the gate with the autoscaling's most copies, shown by plan."""
    built = service(
        slo=Slo(max_ms_per_token=50, max_ttft_ms=1500),
        traffic=ExpectedTraffic.concurrency(24, minimum=2),
        benchmark=True,
    )
    template = template_of(built)
    (custom,) = resources_of_type(template, "Custom::SageMakerEndpointBenchmark")
    run = custom["Run"]
    assert run["Rule"] == {
        "MinGainPerDoubling": 0.1, "SloMsPerToken": 50, "SloTtftMs": 1500, "MaxErrorRate": 0.05
    }  # fmt: skip
    assert run["Stream"] is True
    assert run["Gate"] == {
        "MaxP50MsPerToken": 50,
        "MaxP50TtftMs": 1500,
        "MaxErrorRate": 0.05,
        "PeakConcurrency": 24,
        "MaxCopies": built.max_copies,
    }
    (plan,) = [
        r["Metadata"]["cdk-sagemaker-llm:benchmark"]
        for r in template["Resources"].values()
        if r["Type"] == "Custom::SageMakerEndpointBenchmark"
    ]
    assert (
        f"capacity per copy x {built.max_copies} copies >= peak 24 concurrent requests"
        in plan["Gate"]
    )


# ----- metadata and plan -----------------------------------------------------------------------


def test_the_decision_is_recorded_with_its_reasoning_and_predicted_figures() -> None:
    built = service()
    decision = decision_of(template_of(built))
    option = built.option
    assert decision["model"] == "llama-3-8b"
    assert decision["slo"] == "<= 50 ms/token, TTFT <= 2000 ms"
    assert decision["traffic"] == "peak 4 requests/s, minimum 0.5 requests/s"
    assert decision["candidates"] == [t.name for t in CANDIDATES]
    assert decision["predicted"]["ms_per_token"] == round(option.predicted.ms_per_token, 2)
    assert decision["predicted"]["knee_concurrency_per_copy"] == option.knee_concurrency_per_copy
    assert decision["price_per_hour"] == round(option.price_per_hour or 0, 4)
    assert decision["reasoning"][1:] == list(option.reasoning) and option.reasoning
    assert decision["reasoning"][0] == (
        "serving engine: lmi 0.33.0 (the image's container family and release), engine "
        "profile lmi-vllm-v1"
    )
    assert decision["calibration"] == "uncalibrated"
    assert "calibration_notes" not in decision and "calibration_change" not in decision
    assert decision["rejected_count"] == len(built.recommendation.rejected)
    assert decision["choices"]["max_model_len"] == {"value": 768, "source": "derived"}
    assert DEFAULT_PRICE_LIST.as_of in decision["prices"]


def test_plan_shows_the_decision_beside_the_cost(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path), context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Svc", env=cdk.Environment(region="us-west-2"))
    built = service(stack)
    app.synth()
    plan = build_plan(tmp_path)
    (endpoint,) = plan.stacks[0].endpoints
    (component,) = endpoint.components
    assert component.decision is not None
    assert component.decision["choices"]["instance_type"]["value"] == (
        built.option.layout.instance_type.name
    )
    markdown = render_markdown(plan)
    layout = built.option.layout
    for expected in (
        "| Service goal | llama-3-8b (fp16), 512 in / 256 out tokens",
        f"instance_type: {layout.instance_type.name} (recommended)",
        f"tensor_parallel_degree: {layout.tensor_parallel_degree} (recommended)",
        "| Predicted | at peak:",
        "| Reasoning |",
        "| Cost per hour |",
    ):
        assert expected in markdown, expected
    data = json.loads(render_json(plan))
    (component_data,) = data["stacks"][0]["endpoints"][0]["components"]
    assert component_data["decision"]["choices"]["max_model_len"]["value"] == 768


# ----- calibration: the engine, what transfers, what changed ------------------------------------

SLOW = Efficiency(
    memory_bandwidth=0.5, decode_compute=0.4, prefill_compute=0.4, step_overhead_ms=6.0
)
"""A server slower than the uncalibrated defaults (75 % bandwidth, 2 ms per step)."""
ON_G5 = {
    "instance_types": [InstanceType.G5_2XLARGE],
    "max_instance_count": 16,
    "slo": Slo(max_ms_per_token=80, max_ttft_ms=2000),
}
"""One candidate, room to add instances, and an SLO both the defaults and SLOW can meet."""


def measured(
    model: str = "llama-3-8b", engine: EngineRelease | None = None, **changes: Any
) -> Calibration:
    """A calibration of a slower server than the defaults (a deploy-time benchmark's fit)."""
    return Calibration(
        efficiency=SLOW,
        model=model,
        instance_type="ml.g5.2xlarge",
        tensor_parallel_degree=1,
        copies=1,
        precision="fp16",
        input_tokens=512,
        output_tokens=256,
        concurrency_range=(1, 32),
        levels=6,
        rms_error=0.04,
        source="s3://bench/llama/results.json",
        engine=engine or EngineRelease("lmi", "0.33.0"),
        accelerator="NVIDIA A10G",
        layers=32,
        **changes,
    )


def test_a_calibration_of_another_engine_is_an_error_naming_calibration() -> None:
    with pytest.raises(ValidationError) as caught:
        service(calibration=measured(engine=EngineRelease("tgi", "3.3.6")))
    error = caught.value
    assert error.prop == "calibration"
    assert "tgi 3.3.6" in str(error) and "lmi 0.33.0" in str(error)
    assert "calibrate" in error.fix


def test_the_service_passes_its_images_engine() -> None:
    built = service(calibration=measured(engine=EngineRelease("lmi", "0.33.0")), **ON_G5)
    assert built.decision.reasoning[0] == (
        "serving engine: lmi 0.33.0 (the image's container family and release), engine "
        "profile lmi-vllm-v1"
    )
    # the same engine and hardware: everything transfers, nothing to warn about
    assert built.decision.calibration_notes == ()
    Annotations.from_stack(cdk.Stack.of(built)).has_no_warning(
        "*", Match.string_like_regexp("calibration")
    )


def test_a_calibration_of_another_model_warns_that_only_engine_and_hardware_transfer() -> None:
    built = service(calibration=measured(model="llama-2-7b"))
    warnings = Annotations.from_stack(cdk.Stack.of(built)).find_warning(
        "*", Match.string_like_regexp("calibrated on llama-2-7b, applied to llama-3-8b")
    )
    assert len(warnings) == 1
    text = str(warnings[0].entry.data)
    assert "only the engine- and hardware-level factors transfer" in text
    assert built.decision.calibration_notes


def test_predictions_use_the_calibration_as_applied_to_the_chosen_hardware() -> None:
    calibration = measured()
    built = service(calibration=calibration, instance_types=[InstanceType.G6E_2XLARGE])
    # calibrated on an A10G, served on an L40S: only the per-step overhead transfers, over the
    # target engine's profile (lmi 0.33.0: lmi-vllm-v1), scaled to the measured 6 ms at 32 layers
    profile = efficiency_of(resolve_profile(EngineRelease("lmi", "0.33.0")))
    (source,) = [s for s in built.decision.predicted.sources if s.startswith("efficiency:")]
    assert source.startswith(
        f"efficiency: memory bandwidth {profile.memory_bandwidth:.0%} of peak, decode compute "
        f"{profile.decode_compute:.0%}, prefill compute {profile.prefill_compute:.0%}, "
    )
    assert "(calibrated on s3://bench/llama/results.json: llama-3-8b" in source
    applied = calibration.applied_to(ModelSpec.LLAMA_3_8B, InstanceType.G6E_2XLARGE)
    assert applied.efficiency.step_overhead_s(32, 1) == pytest.approx(0.006)
    assert any(
        "only the engine-level per-step overhead" in n for n in built.decision.calibration_notes
    )


def _synth(tmp_path: Path, name: str, **props: Any) -> tuple[LlmService, str]:
    out = tmp_path / name
    app = cdk.App(outdir=str(out), context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Svc", env=cdk.Environment(region="us-west-2"))
    built = service(stack, **ON_G5, **props)
    app.synth()
    return built, render_markdown(build_plan(out))


def test_a_calibration_file_re_decides_on_the_next_synth_and_plan_shows_the_change(
    tmp_path: Path,
) -> None:
    measured().to_file(tmp_path / "calibration.json")
    before, _ = _synth(tmp_path, "uncalibrated")
    after, markdown = _synth(
        tmp_path, "calibrated", calibration=Calibration.from_file(tmp_path / "calibration.json")
    )
    # slower measured figures: more instances for the same traffic
    assert after.decision.layout.instance_count > before.decision.layout.instance_count
    assert after.decision.scaling.max_instances > before.decision.scaling.max_instances
    change = after.decision.calibration_change
    assert change is not None and change.startswith("changed the decision: uncalibrated ")
    assert f"{before.decision.layout.instance_count} x ml.g5.2xlarge" in change
    assert f"{after.decision.layout.instance_count} x ml.g5.2xlarge" in change
    assert "calibrated on s3://bench/llama/results.json: llama-3-8b with lmi 0.33.0" in markdown
    assert change in markdown
    assert before.decision.calibration_change is None


# ----- risk: which side of the band ---------------------------------------------------------------


def test_the_service_pays_the_band_in_its_ceiling_by_default_and_says_what_it_costs() -> None:
    search = SearchSpace(instance_types=[InstanceType.G5_12XLARGE], max_instance_count=8)
    slo = Slo(max_ms_per_token=80, max_ttft_ms=2000)
    stack = new_stack()
    default = LlmService(
        stack,
        "Default",
        model=ServiceModel.from_source(
            ModelSource.from_hugging_face(LLAMA, token_secret=hub_token()),
            image=ContainerImage.lmi("0.33.0"),
        ),
        workload=WORKLOAD,
        slo=slo,
        traffic=ExpectedTraffic.requests_per_second(4, minimum=0.5),
        search=search,
    )
    median = service(slo=slo, instance_types=search.instance_types, max_instance_count=8)
    assert default.option.risk is Risk.PESSIMISTIC and median.option.risk is Risk.MEDIAN
    sides = [line for line in default.decision.reasoning if line.startswith("sized ")]
    assert sides and sides[0].startswith("sized at the median:")
    assert "the pessimistic edge sizes only the autoscaling ceiling" in sides[0]  # its cost
    assert "/hour at the ceiling" in sides[0]
    assert default.decision.scaling.max_instances == default.option.ceiling
    assert any(line.startswith("sized at the median:") for line in median.decision.reasoning)
    assert default.option.layout.instance_count >= median.option.layout.instance_count
    (recorded,) = [
        line for line in decision_of(template_of(default))["reasoning"] if line.startswith("sized ")
    ]
    assert recorded == sides[0]


# ----- optimizations inside the decision --------------------------------------


def optimizable(
    stack: cdk.Stack, spec: ModelSpec, *, bucket: bool = True, hugging_face: bool = False
) -> ServiceModel:
    """A model the decision may optimize: S3 weights and a bucket for the job's output."""
    models = s3.Bucket.from_bucket_name(stack, "Models", "models")
    source = (
        ModelSource.from_hugging_face(LLAMA, token_secret=hub_token())
        if hugging_face
        else ModelSource.from_s3(models, f"{spec.name}/")
    )
    return ServiceModel.from_source(
        source,
        image=ContainerImage.lmi("0.33.0"),
        spec=spec,
        optimization_output=OptimizationOutput.in_bucket(models) if bucket else None,
    )


def optimized_service(stack: cdk.Stack, spec: ModelSpec, **props: Any) -> LlmService:
    return LlmService(
        stack,
        "Service",
        model=props.pop("model", None) or optimizable(stack, spec),
        workload=WORKLOAD,
        slo=Slo(max_ms_per_token=100),
        traffic=ExpectedTraffic.concurrency(4),
        sizing=Sizing(risk=Risk.MEDIAN),
        **props,
    )


def test_an_optimized_option_that_wins_emits_its_job_and_the_model_serves_its_output() -> None:
    """Llama 2 13B fits one A10G only as INT4 (int4 is offered at TP1 on the A10G, where its
    speed-up is measured): the AWQ option wins, LlmService creates the quantization job for
    the chosen instance type and serves the job's output."""
    stack = new_stack()
    built = optimized_service(
        stack,
        ModelSpec.LLAMA_2_13B,
        search=SearchSpace(
            instance_types=[InstanceType.G5_2XLARGE], optimizations=[Optimization.awq()]
        ),
    )
    assert built.decision.optimization == Optimization.awq()
    assert built.optimization_job is not None
    template = template_of(built)
    job = one(template, "Custom::SageMakerOptimizationJob")
    definition = json.dumps(job)
    assert "ModelQuantizationConfig" in definition and "ml.g5.2xlarge" in definition
    (output_id,) = [
        name
        for name, r in template["Resources"].items()
        if r["Type"] == "Custom::SageMakerOptimizationJobOutput"
    ]
    container = one(template, "AWS::SageMaker::Model")["PrimaryContainer"]
    uri = json.dumps(container["ModelDataSource"]["S3DataSource"]["S3Uri"])
    assert output_id in uri  # the model reads the job's output folder
    assert container["Environment"]["OPTION_QUANTIZE"] == "awq"
    recorded = decision_of(template)
    assert recorded["optimization"]["name"] == "awq"
    assert recorded["optimization"]["job"]["hours"] > 0
    assert recorded["optimization"]["job"]["cost"] > 0
    assert recorded["choices"]["optimization"] == {"value": "awq", "source": "recommended"}
    (chosen,) = [line for line in recorded["reasoning"] if line.startswith("optimization chosen")]
    assert "OPTION_QUANTIZE=awq" in chosen and " h, $" in chosen
    assert "the model as given meets the SLO and memory on no candidate" in chosen
    again = DecisionRecord.from_metadata(recorded)
    assert again.optimization is not None and again.optimization.name == Optimization.awq().name
    assert again.optimization.serves == Optimization.awq().describe()
    assert (
        again.optimization.job is not None
        and again.optimization.job.hours == (recorded["optimization"]["job"]["hours"])
    )


def test_an_optimization_that_does_not_win_emits_no_job() -> None:
    """Llama 3 8B on one A10G: AWQ serves the traffic on the same instance at the same price,
    so the model is served as given (an optimization wins only where it saves money)."""
    stack = new_stack()
    built = optimized_service(
        stack,
        ModelSpec.LLAMA_3_8B,
        search=SearchSpace(
            instance_types=[InstanceType.G5_2XLARGE], optimizations=[Optimization.awq()]
        ),
    )
    assert any(o.optimization is not None for o in built.recommendation.options)
    assert built.decision.optimization is None and built.optimization_job is None
    template = cdk.assertions.Template.from_stack(stack).to_json()
    assert not resources_of_type(template, "Custom::SageMakerOptimizationJob")
    assert "OPTION_QUANTIZE" not in environment_of(template)
    assert "optimization" not in decision_of(template)


def test_optimizations_need_s3_weights_a_bucket_and_a_job_it_can_create() -> None:
    search = SearchSpace(
        instance_types=[InstanceType.G5_2XLARGE], optimizations=[Optimization.awq()]
    )
    stack = new_stack()
    with pytest.raises(ValidationError) as raised:
        optimized_service(
            stack,
            ModelSpec.LLAMA_3_8B,
            model=optimizable(stack, ModelSpec.LLAMA_3_8B, hugging_face=True),
            search=search,
        )
    assert raised.value.prop == "model" and "ModelSource.from_s3" in raised.value.fix
    stack = new_stack()
    with pytest.raises(ValidationError) as raised:
        optimized_service(
            stack,
            ModelSpec.LLAMA_3_8B,
            model=optimizable(stack, ModelSpec.LLAMA_3_8B, bucket=False),
            search=search,
        )
    assert raised.value.prop == "model" and "optimization_output" in raised.value.fix
    draft_model = Optimization.speculative_decoding(Speculation.draft_model(ModelSpec.MISTRAL_7B))
    with pytest.raises(ValidationError) as raised:
        optimized_service(
            new_stack(),
            ModelSpec.LLAMA_3_70B,
            search=replace(search, optimizations=[Optimization.awq(), draft_model]),
        )
    assert raised.value.prop == "search.optimizations[1]"
    assert "Optimization.speculative_decoding()" in raised.value.fix


# ----- speculative decoding: an EAGLE head the job trains, served as the draft ------------------

EAGLE_SEARCH = SearchSpace(
    instance_types=[InstanceType.G5_2XLARGE, InstanceType.G5_12XLARGE],
    optimizations=[Optimization.speculative_decoding()],
)


def eagle_service(stack: cdk.Stack, **props: Any) -> LlmService:
    """Llama 3 8B at 25 ms/token for 4 requests in flight: as given it needs the four A10Gs
    of a g5.12xlarge; with an EAGLE head (3.29 tokens per step) one g5.2xlarge serves it."""
    return LlmService(
        stack,
        "Service",
        model=props.pop("model", None) or optimizable(stack, ModelSpec.LLAMA_3_8B),
        workload=WORKLOAD,
        slo=props.pop("slo", Slo(max_ms_per_token=25)),
        traffic=props.pop("traffic", ExpectedTraffic.concurrency(4)),
        search=props.pop("search", EAGLE_SEARCH),
        sizing=Sizing(risk=Risk.MEDIAN),
        **props,
    )


def test_an_eagle_option_that_wins_trains_its_head_and_serves_it_as_the_draft() -> None:
    stack = new_stack()
    built = eagle_service(stack)
    assert built.decision.optimization == Optimization.speculative_decoding()
    assert built.option.layout.instance_type is InstanceType.G5_2XLARGE
    template = template_of(built)  # cfn-lint clean
    job = one(template, "Custom::SageMakerOptimizationJob")["Request"]
    assert job["OptimizationConfigs"] == [
        {"ModelSpeculativeDecodingConfig": {"Technique": "EAGLE"}}
    ]
    assert job["DeploymentInstanceType"] == "ml.g5.2xlarge"
    assert job["ModelSource"] == {"S3": {"S3Uri": "s3://models/llama-3-8b/"}}
    (output_id,) = [
        name
        for name, r in template["Resources"].items()
        if r["Type"] == "Custom::SageMakerOptimizationJobOutput"
    ]
    output = template["Resources"][output_id]["Properties"]
    assert output["RequireRecommendedImage"] == "true"
    container = one(template, "AWS::SageMaker::Model")["PrimaryContainer"]
    # SageMaker's recommended image for the optimized model, a token of the completed job
    assert container["Image"] == {"Fn::GetAtt": [output_id, "RecommendedInferenceImage"]}
    # the target's weights are served as given; the job's output folder is the draft
    assert container["ModelDataSource"]["S3DataSource"]["S3Uri"] == "s3://models/llama-3-8b/"
    environment = container["Environment"]
    assert environment["OPTION_SPECULATIVE_DRAFT_MODEL"] == {
        "Fn::Join": ["", ["s3://models/", {"Fn::GetAtt": [output_id, "OutputPrefix"]}]]
    }
    assert environment["OPTION_SPECULATIVE_LENGTH"] == "5"  # the draft length the model assumed
    assert environment["OPTION_TENSOR_PARALLEL_DEGREE"] == "1"
    assert "OPTION_QUANTIZE" not in environment
    # the model's role reads exactly the job's output folder (the draft)
    policies = json.dumps(role_statements(template))  # inline or separate policies
    assert f'"{output_id}", "OutputPrefix"' in policies
    recorded = decision_of(template)
    assert recorded["optimization"]["name"] == "speculative-decoding"
    job_estimate = recorded["optimization"]["job"]  # unknown time and cost: no figures
    assert job_estimate["technique"] == "ModelSpeculativeDecodingConfig (EAGLE)"
    assert job_estimate.get("hours") is None and job_estimate.get("cost") is None
    assert "training instances" in job_estimate["basis"]
    (chosen,) = [line for line in recorded["reasoning"] if line.startswith("optimization chosen")]
    assert "EAGLE head" in chosen and "as its draft" in chosen
    assert "time not published, cost unknown" in chosen
    assert "the model as given would take 1 x ml.g5.12xlarge" in chosen
    (paying,) = [
        line for line in recorded["reasoning"] if line.startswith("speculative decoding (")
    ]
    assert "x at one sequence" in paying and "sequences" in paying
    again = DecisionRecord.from_metadata(recorded)
    assert again.optimization is not None and again.optimization.name == "speculative-decoding"
    job = again.optimization.job  # the template leaves out null figures; the record reads None
    assert job is not None and job.hours is None and job.cost is None
    assert job.technique == job_estimate["technique"]
    assert again.to_metadata() == json.loads(json.dumps(built.decision.to_metadata()))


def test_speculation_that_stops_paying_at_high_concurrency_emits_no_job() -> None:
    """256 requests in flight on a g5.12xlarge: verifying six positions per sequence turns an
    EAGLE copy compute-bound early, so its throughput flattens past 16 in flight (the knee)
    where a plain copy's grows to 128; the EAGLE option needs no fewer instances than the
    model as given (how many more moves with the fitted lmi-vllm-v1 profile), so the service
    serves the model as given, with no optimization job to pay for."""
    stack = new_stack()
    built = eagle_service(
        stack,
        slo=Slo(max_ms_per_token=100),
        traffic=ExpectedTraffic.concurrency(256),
        search=replace(EAGLE_SEARCH, instance_types=[InstanceType.G5_12XLARGE]),
    )
    eagle = [o for o in built.recommendation.options if o.optimization is not None]
    assert eagle and built.decision.optimization is None and built.optimization_job is None
    assert eagle[0].layout.instance_count >= built.option.layout.instance_count
    assert eagle[0].knee_concurrency_per_copy < built.option.knee_concurrency_per_copy
    template = cdk.assertions.Template.from_stack(stack).to_json()
    assert not resources_of_type(template, "Custom::SageMakerOptimizationJob")
    assert "OPTION_SPECULATIVE_DRAFT_MODEL" not in environment_of(template)
    assert "optimization" not in decision_of(template)


def test_the_eagle_heads_memory_is_taken_from_the_kv_cache_the_batch_limit_counts() -> None:
    """The head's weights sit beside the target's: one copy holds fewer sequences than the
    model as given on the same layout, and the server's batch limit is that smaller count."""
    built = eagle_service(new_stack())
    layout = built.option.layout
    as_given = predict(
        ModelSpec.LLAMA_3_8B, layout, WORKLOAD, [1], engine=EngineRelease("lmi", "0.33.0")
    )
    with_head = predict(
        ModelSpec.LLAMA_3_8B,
        layout,
        WORKLOAD,
        [1],
        engine=EngineRelease("lmi", "0.33.0"),
        optimization=Optimization.speculative_decoding(),
    )
    assert with_head.max_concurrency < as_given.max_concurrency
    batch = built.decision.serving.max_batch_size
    assert batch <= with_head.max_concurrency
    template = cdk.assertions.Template.from_stack(cdk.Stack.of(built)).to_json()
    assert environment_of(template)["OPTION_MAX_ROLLING_BATCH_SIZE"] == str(batch)


def test_an_eagle_jobs_output_is_not_served_in_place_of_the_model() -> None:
    stack = new_stack()
    models = s3.Bucket.from_bucket_name(stack, "Models", "models")
    job = OptimizationJob(
        stack,
        "Eagle",
        source=ModelSource.from_s3(models, "llama-3-8b/"),
        instance_type=InstanceType.G5_2XLARGE,
        techniques=[OptimizationTechnique.speculative_decoding()],
        output=OptimizationOutput.in_bucket(models),
    )
    with pytest.raises(ValidationError) as raised:
        ServiceModel.from_optimization_job(job)
    assert raised.value.prop == "ServiceModel.from_optimization_job(job)"
    assert "as_speculative_draft" in raised.value.fix


def test_plan_shows_the_eagle_option_its_job_and_where_speculation_pays(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path), context=CDK_CONTEXT)
    eagle_service(cdk.Stack(app, "Svc", env=cdk.Environment(region="us-west-2")))
    app.synth()
    markdown = render_markdown(build_plan(tmp_path))
    for expected in (
        "optimization: speculative-decoding (recommended)",
        "optimization chosen: EAGLE head, 5 draft tokens at 75% acceptance",
        "ModelSpeculativeDecodingConfig (EAGLE): time not published, cost unknown",
        # a g5.2xlarge copy holds 25 sequences of 768 tokens beside the draft in what vLLM
        # allocates (0.9 of the A10G's memory); EAGLE still pays at 25 (it stops where the
        # verification of 6 positions per sequence turns compute-bound; planning.speculation)
        "x at one sequence; it pays up to the copy's 25 sequences",
    ):
        assert expected in markdown, expected


@pytest.mark.parametrize(
    ("image", "value"),
    [
        (ContainerImage.tgi("3.3.6"), "tgi 3.3.6"),
        (ContainerImage.lmi_tensorrt_llm("0.33.0"), "lmi-tensorrt-llm 0.33.0"),
        (ContainerImage.lmi("0.26.0-deepspeed0.12.6-cu121"), "lmi 0.26.0"),
    ],
    ids=["tgi", "tensorrt-llm", "lmi-before-0.27"],
)
def test_speculation_on_an_image_that_cannot_serve_a_draft_is_an_error(
    image: ContainerImage, value: str
) -> None:
    stack = new_stack()
    models = s3.Bucket.from_bucket_name(stack, "Models", "models")
    model = ServiceModel.from_source(
        ModelSource.from_s3(models, "llama-3-8b/"),
        image=image,
        spec=ModelSpec.LLAMA_3_8B,
        optimization_output=OptimizationOutput.in_bucket(models),
    )
    with pytest.raises(ValidationError) as raised:
        eagle_service(stack, model=model)
    assert raised.value.prop == "model.image" and raised.value.value == value
    assert "ContainerImage.lmi('0.27.0')" in raised.value.fix
    assert "search.optimizations" in raised.value.fix


def test_a_benchmark_of_the_services_component_sends_the_services_workload() -> None:
    """Given no workload, a benchmark of an LlmService's component sends the typical request
    the service was sized for (512 in, 256 out), not the generic 256/128."""
    from cdk_sagemaker_llm import EndpointBenchmark

    built = service()
    bench = EndpointBenchmark(built, "Probe", inference_component=built.component)
    (resource,) = [
        child
        for child in bench.node.find_all()
        if isinstance(child, cdk.CfnResource)
        and child.cfn_resource_type == "Custom::SageMakerEndpointBenchmark"
    ]
    run = cdk.Stack.of(built).resolve(resource._cfn_properties)["Run"]  # type: ignore[attr-defined]
    assert (run["InputTokens"], run["OutputTokens"]) == (512, 256)


def test_a_pricing_region_typo_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from cdk_sagemaker_llm.cli import main
    from cdk_sagemaker_llm.planning.service_options import Pricing

    with pytest.raises(ValidationError, match=r"Pricing\.region='eu-wset-1'.*'eu-west-1'"):
        Pricing.savings_plan_1y(region="eu-wset-1")
    with pytest.raises(ValidationError, match=r"PriceList\.region='us-east1'.*'us-east-1'"):
        DEFAULT_PRICE_LIST.with_prices({"ml.g5.xlarge": 1.5}, region="us-east1")
    Pricing.on_demand(region="eu-west-1")
    assert main(["plan", "cdk.out.missing", "--price-region", "us-wset-2"]) == 2
    assert "did you mean 'us-west-2'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("image", "variable", "value"),
    [
        (ContainerImage.lmi("0.33.0"), "OPTION_KV_CACHE_DTYPE", "fp8"),
        (ContainerImage.tgi("3.3.6"), "KV_CACHE_DTYPE", "fp8_e4m3fn"),
    ],
    ids=["lmi", "tgi"],
)
def test_an_fp8_kv_cache_is_sized_on_fp8_hardware_and_rendered_as_the_engines_setting(
    image: ContainerImage, variable: str, value: str, tmp_path: Path
) -> None:
    """``SearchSpace(kv_cache_precision=FP8)``: the A10G (no FP8) is not offered, the L40S is,
    and the container gets the engine's documented setting (LMI's vLLM pass-through
    ``OPTION_KV_CACHE_DTYPE``, TGI's launcher ``KV_CACHE_DTYPE``), recorded in the decision; an
    AUTO service renders no such variable."""
    candidates = [InstanceType.G5_2XLARGE, InstanceType.G6E_2XLARGE]
    app = cdk.App(outdir=str(tmp_path), context=CDK_CONTEXT)
    stack = cdk.Stack(app, "Svc", env=cdk.Environment(region="us-west-2"))
    built = service(
        stack, image=image, instance_types=candidates, kv_cache_precision=KvCachePrecision.FP8
    )
    assert built.option.layout.instance_type is InstanceType.G6E_2XLARGE
    assert built.option.kv_cache_precision is KvCachePrecision.FP8
    assert {
        r.kind.value for r in built.recommendation.rejected if r.instance_type == "ml.g5.2xlarge"
    } == {"kv cache precision"}
    template = template_of(built)
    assert environment_of(template)[variable] == value
    assert decision_of(template)["kv_cache_precision"] == "fp8"
    app.synth()
    assert "| Service goal | llama-3-8b (fp16, KV cache fp8)," in render_markdown(
        build_plan(tmp_path)
    )
    plain = template_of(service(image=image, instance_types=candidates))
    assert variable not in environment_of(plain)
    assert "kv_cache_precision" not in decision_of(plain)


@pytest.mark.parametrize(
    ("image", "engine"),
    [
        (ContainerImage.tgi("2.3.1"), "tgi 2.3.1"),
        (ContainerImage.lmi("0.31.0"), "lmi 0.31.0"),
        (ContainerImage.lmi_tensorrt_llm("0.33.0"), "lmi-tensorrt-llm 0.33.0"),
    ],
    ids=["tgi-before-2.4", "lmi-before-0.32", "tensorrt-llm"],
)
def test_an_fp8_kv_cache_on_an_engine_without_a_documented_setting_is_an_error(
    image: ContainerImage, engine: str
) -> None:
    """Never sized for FP8 and deployed with the activation precision's KV cache: an engine or
    release that documents no KV-cache dtype setting fails at synth, naming the prop, the
    engine and the fix."""
    with pytest.raises(ValidationError) as raised:
        service(
            image=image,
            instance_types=[InstanceType.G6E_2XLARGE],
            kv_cache_precision=KvCachePrecision.FP8,
        )
    error = raised.value
    assert (error.prop, error.value) == ("search.kv_cache_precision", "fp8")
    assert engine in error.problem
    assert "KvCachePrecision.AUTO" in error.fix and "2.4.0" in error.fix


def test_the_decision_sizes_the_memory_share_the_models_environment_gives_the_engine() -> None:
    """Before, the decision assumed vLLM's default 90% whatever the environment set: with
    ``OPTION_GPU_MEMORY_UTILIZATION=0.5`` it chose one A10G for Llama 3 8B, which the model's
    own fit check then refused ("the engine refuses to start"). Now the decision sizes the share
    the container will take: the A10G is rejected naming the setting, and the copy it chooses
    passes the fit check."""
    environment = {"OPTION_GPU_MEMORY_UTILIZATION": "0.5"}
    candidates = [InstanceType.G5_2XLARGE, InstanceType.G5_12XLARGE]
    assert service(instance_types=candidates).decision.layout.instance_type.name == (
        "ml.g5.2xlarge"
    )
    built = service(instance_types=candidates, environment=environment)
    layout = built.decision.layout
    assert (layout.instance_type.name, layout.tensor_parallel_degree) == ("ml.g5.12xlarge", 2)
    assert environment_of(template_of(built))["OPTION_GPU_MEMORY_UTILIZATION"] == "0.5"
    assert (
        "taking 50% of the accelerators' memory as OPTION_GPU_MEMORY_UTILIZATION=0.5 sets"
        in (built.decision.reasoning[0])
    )
    with pytest.raises(ValidationError) as raised:
        service(instance_types=[InstanceType.G5_2XLARGE], environment=environment)
    assert raised.value.prop == "instance_types"  # the decision's error, not the fit check's
    assert "unallocated as OPTION_GPU_MEMORY_UTILIZATION=0.5 sets" in raised.value.problem
    assert "a larger share of the memory than OPTION_GPU_MEMORY_UTILIZATION=0.5" in (
        raised.value.fix
    )


def test_a_raised_memory_share_holds_more_sequences_per_copy() -> None:
    """The share read from the environment reaches the engine profile the whole decision uses:
    a KV-bound copy (Llama 3 8B on one A10G, 4,096-token requests) holds more sequences at
    0.95 than at the default 0.9, and its knee moves with them."""
    long_requests: dict[str, Any] = {
        "input_tokens": 3584,
        "output_tokens": 512,
        "instance_types": [InstanceType.G5_2XLARGE],
        "traffic": ExpectedTraffic.requests_per_second(1, minimum=0.1),
        "max_instance_count": 16,
    }
    default = service(**long_requests)
    raised = service(environment={"OPTION_GPU_MEMORY_UTILIZATION": "0.95"}, **long_requests)
    assert (default.decision.serving.max_batch_size, raised.decision.serving.max_batch_size) == (
        6,
        8,
    )
    assert raised.target_concurrency_per_copy > default.target_concurrency_per_copy
    assert raised.max_copies < default.max_copies


@pytest.mark.parametrize(
    ("image", "name", "value", "fix"),
    [
        (ContainerImage.lmi("0.33.0"), "OPTION_MAX_ROLLING_BATCH_SIZE", "4", "max_batch_size="),
        (ContainerImage.lmi("0.33.0"), "OPTION_KV_CACHE_DTYPE", "fp8", "kv_cache_precision="),
        (ContainerImage.lmi("0.33.0"), "OPTION_QUANTIZE", "awq", "SearchSpace(precision="),
        (ContainerImage.tgi("3.3.6"), "SM_NUM_GPUS", "2", "tensor_parallel_degree="),
        (ContainerImage.tgi("3.3.6"), "KV_CACHE_DTYPE", "fp8_e4m3fn", "kv_cache_precision="),
    ],
    ids=["lmi-batch", "lmi-fp8-kv", "lmi-quantize", "tgi-degree", "tgi-fp8-kv"],
)
def test_a_variable_the_service_decides_is_refused_in_the_models_environment(
    image: ContainerImage, name: str, value: str, fix: str
) -> None:
    """The model's ``environment`` setting what the decision renders: a batch cap or degree
    reached the ``Model``'s merge, whose fix ("use the typed option") names options a service
    user does not pass; an FP8 KV cache or a quantization, which the service renders only when
    it decides them, deployed what the decision had not sized. Now each is an error naming
    the variable and the prop that sets it; the memory share stays the user's to set."""
    with pytest.raises(ValidationError) as raised:
        service(image=image, instance_types=[InstanceType.G6E_2XLARGE], environment={name: value})
    error = raised.value
    assert (error.prop, error.value) == (f"model.environment[{name!r}]", value)
    assert fix in error.fix and error.fix.startswith("drop it from the environment")
