"""Hostile input: random construct props either synthesize a cfn-lint-clean template or raise
the library's own ValidationError with a fix; never a raw jsii or CloudFormation error.

Run more cases with ``HYPOTHESIS_MAX_EXAMPLES=500 pytest tests/test_hostile_props.py -s``; the
summary line counts accepted and rejected combinations.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
from collections.abc import Callable
from enum import Enum
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, Size
from aws_cdk.assertions import Template
from conftest import cfn_lint_findings, new_stack
from hub import hub_token
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import cdk_sagemaker_llm
from cdk_sagemaker_llm import (
    DEFAULT_PRICE_LIST,
    Arrival,
    AsyncInference,
    AsyncScaling,
    BacklogScaleFromZeroPolicy,
    BacklogTrackingPolicy,
    BenchmarkEngine,
    BenchmarkGate,
    BenchmarkLoad,
    BenchmarkPricing,
    BenchmarkResults,
    CapacityReservation,
    ComponentModel,
    ComponentScaling,
    ComponentScheduling,
    ComponentSettings,
    ComponentSpecification,
    ContainerImage,
    ContainerMetrics,
    ContainerNetworking,
    ContainerStartup,
    CopyResources,
    CopyScaling,
    DataCapture,
    DataType,
    DraftModelKind,
    Endpoint,
    EndpointBenchmark,
    EndpointMetrics,
    EngineRelease,
    ExpectedTraffic,
    GoodputSlo,
    HandlerPlacement,
    InferenceComponent,
    InferenceComponentEndpoint,
    InstancePool,
    InstanceType,
    KneeRule,
    LayoutOverrides,
    LlmService,
    LmiBackend,
    LmiLora,
    LmiOptions,
    ManagedInstanceScaling,
    Model,
    ModelSource,
    ModelSpec,
    OptimizationJob,
    OptimizationOutput,
    OptimizationRun,
    OptimizationSecurity,
    OptimizationTechnique,
    PeakCapacity,
    PlacementStrategy,
    PredefinedMetric,
    PrefixAwareRouting,
    Pricing,
    ProductionVariant,
    QuantizationMethod,
    RequestProtocol,
    RollingDeployment,
    RoutingStrategy,
    ScaleFromZeroPolicy,
    ScaleInPolicy,
    ScaleInStrategy,
    SearchSpace,
    ServerlessConfig,
    ServerlessScaling,
    ServiceBenchmark,
    ServiceModel,
    Sizing,
    Slo,
    SpeculativeDecoding,
    StepPolicy,
    StorageVolume,
    TargetTrackingPolicy,
    TechniqueKind,
    TgiOptions,
    ValidationError,
    VariantPlatform,
    VariantScaling,
    VllmOptions,
    Workload,
    sizing,
)
from cdk_sagemaker_llm.catalog.instance_types import CATALOG
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
from cdk_sagemaker_llm.planning.optimizations import Optimization
from cdk_sagemaker_llm.planning.speculation import Speculation
from cdk_sagemaker_llm.prop_types import unchecked_props

MAX_EXAMPLES = int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "60"))


def mostly(
    usual: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """Usual values nine times in ten, so that with a dozen props drawn, valid combinations
    stay common enough to synthesize and lint."""
    # (one_of would merge identical branches; a middle value avoids the bias to boundaries)
    return st.integers(min_value=0, max_value=9).flatmap(lambda n: hostile if n == 5 else usual)


names = mostly(st.none(), st.text(alphabet="abcXYZ019-_ .", min_size=0, max_size=70))
small_ints = mostly(st.sampled_from([1, 2, 4]), st.integers(min_value=-2, max_value=20))
optional_ints = mostly(
    st.one_of(st.none(), st.integers(min_value=1024, max_value=8192)),
    st.integers(min_value=-1, max_value=70_000),
)
# Strategies draw plain data (names, numbers, dicts); build() makes the objects, so a failing
# example prints as readable data.
instance_types = st.sampled_from([*CATALOG, "ml.c7i.4xlarge"])
IMAGES = {
    "lmi": lambda: ContainerImage.lmi("0.31.0"),
    "lmi-neuronx": lambda: ContainerImage.lmi_neuronx("0.29.0"),
    "tgi": lambda: ContainerImage.tgi("2.4.0"),
    "pytorch-cpu": lambda: ContainerImage.pytorch_cpu("2.5.1"),
    "own": lambda: ContainerImage.from_uri("111122223333.dkr.ecr.us-west-2.amazonaws.com/own:1"),
}
images = st.sampled_from(sorted(IMAGES))
dtypes = st.one_of(st.none(), st.sampled_from([d.name for d in DataType]))
lmi_options = st.fixed_dictionaries(
    {"kind": st.just("lmi")},
    optional=dict(
        tensor_parallel_degree=st.one_of(st.none(), small_ints),
        max_rolling_batch_size=optional_ints,
        max_rolling_batch_prefill_tokens=optional_ints,
        max_model_len=optional_ints,
        continuous_batching=st.booleans(),
        dtype=dtypes,
    ),
)
tgi_options = st.fixed_dictionaries(
    {"kind": st.just("tgi")},
    optional=dict(
        num_gpus=st.one_of(st.none(), small_ints),
        max_input_tokens=optional_ints,
        max_total_tokens=optional_ints,
        max_batch_total_tokens=optional_ints,
        max_concurrent_requests=optional_ints,
        dtype=dtypes,
    ),
)
seconds = st.one_of(st.none(), st.integers(min_value=0, max_value=5000))


@st.composite
def deployments(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "region": draw(
            mostly(
                st.sampled_from(["us-west-2", "eu-central-1"]),
                st.sampled_from(["cn-north-1", "af-south-1"]),
            )
        ),
        "endpoint": {
            "instance_type": draw(instance_types),
            "initial_instance_count": draw(
                mostly(st.just(1), st.integers(min_value=-1, max_value=4))
            ),
            "min_instance_count": draw(mostly(st.just(1), st.integers(min_value=-1, max_value=3))),
            "max_instance_count": draw(
                mostly(st.sampled_from([None, 2]), st.integers(min_value=0, max_value=5))
            ),
            "endpoint_name": draw(names),
            "volume_size": draw(mostly(st.none(), st.integers(min_value=0, max_value=600))),
            "startup": draw(mostly(st.none(), seconds)),
        },
        "model": {
            "image": draw(images),
            "serving": draw(mostly(st.none(), st.one_of(lmi_options, tgi_options))),
            "model_name": draw(names),
        },
        "component": {
            "accelerators": draw(mostly(st.none(), small_ints)),
            "min_memory_mib": draw(
                mostly(
                    st.integers(min_value=1024, max_value=16_384),
                    st.one_of(st.none(), st.integers(min_value=0, max_value=300_000)),
                )
            ),
            "max_memory_mib": draw(mostly(st.none(), st.integers(min_value=0, max_value=300_000))),
            "cpu_cores": draw(
                mostly(
                    st.sampled_from([None, 1, 2.5]),
                    st.floats(min_value=0, max_value=100, allow_nan=False),
                )
            ),
            "copy_count": draw(
                mostly(st.sampled_from([1, 2]), st.integers(min_value=-1, max_value=5))
            ),
            "inference_component_name": draw(names),
            "download": draw(mostly(st.none(), seconds)),
        },
    }


def serving_options(drawn: dict[str, Any] | None) -> LmiOptions | TgiOptions | None:
    if drawn is None:
        return None
    options = dict(drawn)
    kind = options.pop("kind")
    if options.get("dtype") is not None:
        options["dtype"] = DataType[options["dtype"]]
    return LmiOptions(**options) if kind == "lmi" else TgiOptions(**options)


def build(props: dict[str, Any]) -> cdk.Stack:
    stack = new_stack(props["region"])
    endpoint_props = dict(props["endpoint"])
    endpoint_props["instance_type"] = InstanceType.of(endpoint_props["instance_type"])
    volume, startup = endpoint_props.pop("volume_size"), endpoint_props.pop("startup")
    counts = ("initial_instance_count", "min_instance_count", "max_instance_count")
    instance_scaling = ManagedInstanceScaling(**{n: endpoint_props.pop(n) for n in counts})
    endpoint = InferenceComponentEndpoint(
        stack,
        "Endpoint",
        instance_scaling=instance_scaling,
        storage=StorageVolume(size=Size.gibibytes(volume) if volume is not None else None),
        startup=ContainerStartup(
            health_check_timeout=Duration.seconds(startup) if startup is not None else None
        ),
        **endpoint_props,
    )
    model_props = dict(props["model"])
    model = Model(
        stack,
        "Model",
        image=IMAGES[model_props.pop("image")](),
        serving=serving_options(model_props.pop("serving")),
        **model_props,
    )
    component = dict(props["component"])
    minimum, maximum = component.pop("min_memory_mib"), component.pop("max_memory_mib")
    download = component.pop("download")
    InferenceComponent(
        stack,
        "Component",
        endpoint=endpoint,
        serves=ComponentModel.of(model),
        resources=CopyResources(
            min_memory=Size.mebibytes(minimum) if minimum is not None else None,
            max_memory=Size.mebibytes(maximum) if maximum is not None else None,
            accelerators=component.pop("accelerators"),
            cpu_cores=component.pop("cpu_cores"),
        ),
        startup=ContainerStartup(
            download_timeout=Duration.seconds(download) if download is not None else None
        ),
        **component,
    )
    return stack


@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,  # CI runs the same examples every time: a failure reproduces
    # Every example synthesizes a stack in the one jsii kernel of the session, which keeps
    # them all: shrinking a failure through thousands of stacks would exhaust memory. The
    # failing example is printed whole instead.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(deployments())
def test_props_synthesize_cleanly_or_fail_with_our_error(props: dict[str, Any]) -> None:
    try:
        stack = build(props)
    except ValidationError as error:
        message = str(error)
        assert error.prop in message and "Fix: " in message and error.fix
        return
    template = Template.from_stack(stack).to_json()
    findings = cfn_lint_findings(template, props["region"])
    assert findings == [], "\n".join(findings)


# Wrong types: every prop of every public construct and props class, given a value of another
# type, is our ValidationError naming the prop, the value, the expected type and a fix.


@functools.cache
def _calibration() -> Any:
    """A fitted calibration, once per session: ``calibrate`` is pure and takes seconds (it
    searches the batch limit among the measured levels), and every example asks for one."""
    from test_calibration import G5, _results

    from cdk_sagemaker_llm.planning.calibration_fit import calibrate
    from cdk_sagemaker_llm.planning.performance import Layout

    return calibrate(_results([1, 2, 4, 8]), ModelSpec.LLAMA_2_7B, Layout(G5, 1, 1))


def _baselines(
    stack: cdk.Stack,
) -> dict[str, Callable[[], tuple[Callable[..., Any], dict[str, Any]]]]:
    """For each public class, a valid call: what to call and its keyword props."""
    from aws_cdk import aws_applicationautoscaling as appscaling
    from aws_cdk import aws_cloudwatch as cloudwatch
    from aws_cdk import aws_s3 as s3

    bucket = s3.Bucket.from_bucket_name(stack, "Bucket", "models")
    model = Model(stack, "BaseModel", image=ContainerImage.lmi("0.31.0"))
    shared = InferenceComponentEndpoint(
        stack,
        "BaseShared",
        instance_type=InstanceType.G5_12XLARGE,
        instance_scaling=ManagedInstanceScaling(max_instance_count=2),
    )
    component = shared.add_inference_component(
        "BaseComponent",
        serves=ComponentModel.of(model),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
    )
    variant = ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE)
    dedicated = Endpoint(stack, "BaseDedicated", variants=[variant])
    cfn_target = appscaling.CfnScalableTarget(
        stack,
        "BaseTarget",
        max_capacity=2,
        min_capacity=1,
        resource_id="inference-component/ic",
        scalable_dimension="sagemaker:inference-component:DesiredCopyCount",
        service_namespace="sagemaker",
    )
    target = appscaling.ScalableTarget(
        stack,
        "BaseScalableTarget",
        service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
        resource_id="inference-component/ic",
        scalable_dimension="sagemaker:inference-component:DesiredCopyCount",
        min_capacity=1,
        max_capacity=2,
    )
    ids = iter(range(1_000_000))

    def construct(
        cls: Any, **props: Any
    ) -> Callable[[], tuple[Callable[..., Any], dict[str, Any]]]:
        return lambda: (lambda **kw: cls(stack, f"{cls.__name__}{next(ids)}", **kw), props)

    def plain(cls: Any, **props: Any) -> Callable[[], tuple[Callable[..., Any], dict[str, Any]]]:
        return lambda: (cls, props)

    def like(instance: Any) -> Callable[[], tuple[Callable[..., Any], dict[str, Any]]]:
        """A valid call of ``instance``'s class: its own attributes as props."""
        parameters = inspect.signature(type(instance).__init__).parameters
        props = {
            p: getattr(instance, p) for p in parameters if p != "self" and hasattr(instance, p)
        }
        return plain(type(instance), **props)

    from aws_cdk import aws_sns as sns

    cpu_model = Model(stack, "BaseCpuModel", image=ContainerImage.pytorch_cpu("2.5.1"))
    serverless_variant = ProductionVariant(
        model=cpu_model,
        serverless=ServerlessConfig(
            memory_size=Size.gibibytes(4), max_concurrency=2, provisioned_concurrency=1
        ),
    )
    serverless = Endpoint(stack, "BaseServerless", variants=[serverless_variant])
    async_endpoint = Endpoint(
        stack,
        "BaseAsync",
        variants=[ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE)],
        async_inference=AsyncInference(bucket=bucket),
    )
    topic = sns.Topic.from_topic_arn(stack, "Topic", "arn:aws:sns:us-west-2:123456789012:t")
    spec = ModelSpec.preset("llama-3.1-8b")
    service_model = ServiceModel.from_source(
        ModelSource.from_hugging_face("meta-llama/Llama-3.1-8B-Instruct", token_secret=hub_token()),
        image=ContainerImage.lmi("0.31.0"),
    )
    service = LlmService(
        stack,
        "BaseService",
        model=service_model,
        slo=Slo(max_ms_per_token=60),
        traffic=ExpectedTraffic.concurrency(8),
        workload=Workload(input_tokens=512, output_tokens=128),
        search=SearchSpace(instance_types=[InstanceType.G5_12XLARGE]),
    )
    return {
        "Calibration": like(_calibration()),
        "EngineRelease": like(EngineRelease.parse("tgi:3.3.6")),
        "EngineProfile": like(engine_profile("tgi-1")),
        "Optimization": like(Optimization.speculative_decoding()),
        "Speculation": like(Speculation.eagle()),
        "ServiceDecision": like(service.decision),
        "Accelerator": like(InstanceType.G5_2XLARGE.accelerator),
        "InstanceType": like(InstanceType.G5_2XLARGE),
        "ModelSpec": like(spec),
        "PriceList": like(DEFAULT_PRICE_LIST),
        "SizingReport": like(sizing.size(spec, InstanceType.G5_12XLARGE)),
        "Slo": plain(Slo, max_ms_per_token=50),
        "ExpectedTraffic": like(ExpectedTraffic.concurrency(8, minimum=1)),
        "Arrival": like(Arrival.poisson()),
        "BenchmarkLoad": like(BenchmarkLoad.concurrency([1, 2])),
        "BenchmarkPricing": like(BenchmarkPricing.per_hour(1.0)),
        "BenchmarkEngine": like(BenchmarkEngine.lambda_workers()),
        "BenchmarkResults": like(BenchmarkResults.in_new_bucket()),
        "PeakCapacity": like(PeakCapacity.requests_per_second(4.0, max_copies=2)),
        "ContainerImage": like(ContainerImage.lmi("0.31.0")),
        "ModelSource": like(ModelSource.from_s3(bucket, "weights/")),
        "CapacityReservation": plain(
            CapacityReservation,
            ml_reservation_arn="arn:aws:sagemaker:us-west-2:123456789012:training-plan/p",
        ),
        "InstancePool": plain(InstancePool, instance_type=InstanceType.G5_2XLARGE, priority=1),
        "PrefixAwareRouting": plain(
            PrefixAwareRouting, prefix_length=2048, concurrency_threshold=8
        ),
        "ScaleInPolicy": plain(ScaleInPolicy, strategy=ScaleInStrategy.IDLE_RELEASE),
        "ComponentScheduling": plain(ComponentScheduling, placement=PlacementStrategy.SPREAD),
        "ComponentSpecification": plain(
            ComponentSpecification, instance_type=InstanceType.G5_12XLARGE
        ),
        "ContainerMetrics": plain(ContainerMetrics),
        "AsyncInference": plain(AsyncInference, bucket=bucket, success_topic=topic),
        "ServerlessConfig": plain(
            ServerlessConfig, memory_size=Size.gibibytes(4), max_concurrency=2
        ),
        "AsyncScaling": construct(AsyncScaling, endpoint=async_endpoint, max_instances=2),
        "ServerlessScaling": construct(ServerlessScaling, endpoint=serverless, max_concurrency=2),
        "BacklogTrackingPolicy": construct(
            BacklogTrackingPolicy, scalable_target=cfn_target, endpoint_name="e", target=5
        ),
        "BacklogScaleFromZeroPolicy": construct(
            BacklogScaleFromZeroPolicy, scaling_target=target, endpoint_name="e"
        ),
        "LlmService": construct(
            LlmService,
            model=service_model,
            slo=Slo(max_ms_per_token=60),
            traffic=ExpectedTraffic.concurrency(8),
            workload=Workload(input_tokens=512, output_tokens=128),
            search=SearchSpace(instance_types=[InstanceType.G5_12XLARGE]),
        ),
        "SearchSpace": plain(SearchSpace, instance_types=[InstanceType.G5_12XLARGE]),
        "Pricing": plain(Pricing),
        "Sizing": plain(Sizing),
        "LayoutOverrides": plain(LayoutOverrides),
        "CopyScaling": plain(CopyScaling),
        "ServiceModel": like(service_model),
        "ComponentSettings": plain(ComponentSettings),
        "ServiceBenchmark": like(ServiceBenchmark.knee_search()),
        "Model": construct(Model, image=ContainerImage.lmi("0.31.0")),
        "InferenceComponentEndpoint": construct(
            InferenceComponentEndpoint, instance_type=InstanceType.G5_12XLARGE
        ),
        "Endpoint": construct(Endpoint, variants=[variant]),
        "ProductionVariant": plain(
            ProductionVariant, model=model, instance_type=InstanceType.G5_2XLARGE
        ),
        "InferenceComponent": construct(
            InferenceComponent,
            endpoint=shared,
            serves=ComponentModel.of(model),
            resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
        ),
        "ComponentModel": like(ComponentModel.of(model)),
        "CopyResources": plain(CopyResources, min_memory=Size.gibibytes(16)),
        "ContainerStartup": plain(ContainerStartup, health_check_timeout=Duration.minutes(5)),
        "StorageVolume": plain(StorageVolume, size=Size.gibibytes(100)),
        "ManagedInstanceScaling": plain(ManagedInstanceScaling, max_instance_count=2),
        "VariantPlatform": plain(VariantPlatform, routing_strategy=RoutingStrategy.RANDOM),
        "ContainerNetworking": plain(ContainerNetworking, network_isolation=True),
        "ComponentScaling": construct(ComponentScaling, component=component, max_copies=2),
        "VariantScaling": construct(VariantScaling, endpoint=dedicated, max_instances=2),
        "TargetTrackingPolicy": construct(
            TargetTrackingPolicy,
            scalable_target=cfn_target,
            metric=PredefinedMetric.INFERENCE_COMPONENT_INVOCATIONS_PER_COPY,
            target=100,
        ),
        "StepPolicy": construct(
            StepPolicy,
            scaling_target=target,
            metric=cloudwatch.Metric(namespace="AWS/SageMaker", metric_name="GPUUtilization"),
            scaling_steps=[
                appscaling.ScalingInterval(upper=20, change=-1),
                appscaling.ScalingInterval(lower=70, change=1),
            ],
        ),
        "ScaleFromZeroPolicy": construct(
            ScaleFromZeroPolicy, scaling_target=target, inference_component_name="ic"
        ),
        "EndpointBenchmark": construct(EndpointBenchmark, inference_component=component),
        "BenchmarkGate": plain(BenchmarkGate),
        "OptimizationJob": construct(
            OptimizationJob,
            source=ModelSource.from_s3(bucket, "weights/"),
            instance_type=InstanceType.G5_12XLARGE,
            techniques=[OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
            output=OptimizationOutput.in_bucket(bucket),
        ),
        "OptimizationOutput": like(OptimizationOutput.in_bucket(bucket)),
        "OptimizationRun": plain(OptimizationRun),
        "OptimizationSecurity": plain(OptimizationSecurity),
        "OptimizationTechnique": plain(OptimizationTechnique, kind=TechniqueKind.SHARDING),
        "SpeculativeDecoding": plain(SpeculativeDecoding, kind=DraftModelKind.PROVIDER),
        "LmiOptions": plain(LmiOptions),
        "LmiLora": plain(LmiLora),
        "EndpointMetrics": plain(EndpointMetrics, enhanced_metrics=True),
        "TgiOptions": plain(TgiOptions),
        "VllmOptions": plain(VllmOptions),
        "RollingDeployment": plain(RollingDeployment, batch_size=1),
        "DataCapture": plain(DataCapture, bucket=bucket),
        "HandlerPlacement": plain(HandlerPlacement),
        "Workload": plain(Workload, input_tokens=512, output_tokens=128),
        "RequestProtocol": plain(RequestProtocol),
        "KneeRule": plain(KneeRule),
        "GoodputSlo": plain(GoodputSlo),
    }


PUBLIC_CLASSES = [
    "Model", "InferenceComponentEndpoint", "Endpoint", "ProductionVariant", "InferenceComponent",
    "ComponentScaling", "VariantScaling", "TargetTrackingPolicy", "StepPolicy",
    "ScaleFromZeroPolicy", "EndpointBenchmark", "BenchmarkGate", "OptimizationJob",
    "OptimizationTechnique", "SpeculativeDecoding", "LmiOptions", "TgiOptions",
    "RollingDeployment", "DataCapture", "HandlerPlacement", "Workload", "RequestProtocol",
    "KneeRule", "GoodputSlo", "LmiLora", "EndpointMetrics",
    # every public class, the newest included
    "Accelerator", "InstanceType", "ModelSpec", "PriceList", "SizingReport", "Slo",
    "ExpectedTraffic", "Arrival", "BenchmarkLoad", "BenchmarkPricing", "BenchmarkEngine",
    "BenchmarkResults", "PeakCapacity", "ContainerImage", "ModelSource", "CapacityReservation", "InstancePool",
    "PrefixAwareRouting", "ScaleInPolicy", "ComponentScheduling", "ComponentSpecification",
    "ContainerMetrics", "AsyncInference", "ServerlessConfig", "AsyncScaling",
    "ServerlessScaling", "BacklogTrackingPolicy", "BacklogScaleFromZeroPolicy", "LlmService",
    "Calibration", "EngineRelease", "ServiceDecision", "EngineProfile", "Optimization",
    "Speculation", "OptimizationOutput", "OptimizationRun", "OptimizationSecurity",
    # LlmService's and recommend's grouped props
    "SearchSpace", "Pricing", "Sizing", "LayoutOverrides", "CopyScaling", "ServiceModel",
    "ComponentSettings", "ServiceBenchmark",
    # the grouped props of InferenceComponent(Endpoint)
    "ComponentModel", "CopyResources", "ContainerStartup", "StorageVolume",
    "ManagedInstanceScaling", "VariantPlatform", "ContainerNetworking",
    # SageMaker's vLLM containers' serving options
    "VllmOptions",
]  # fmt: skip


def _props(name: str) -> list[str]:
    """The keyword props of a public class (scope and id excluded)."""
    parameters = inspect.signature(getattr(cdk_sagemaker_llm, name).__init__).parameters
    return [p for p in parameters if p not in ("self", "scope", "id")]


@pytest.fixture(scope="module")
def baselines() -> dict[str, Callable[[], tuple[Callable[..., Any], dict[str, Any]]]]:
    return _baselines(new_stack())


def test_every_public_construct_and_props_class_is_covered() -> None:
    """Each public class with props is type-checked and has a baseline here."""
    constructs_with_props = {
        name
        for name in cdk_sagemaker_llm.__all__
        if isinstance(getattr(cdk_sagemaker_llm, name), type)
        and hasattr(getattr(cdk_sagemaker_llm, name).__init__, "__wrapped__")
    }
    assert constructs_with_props == set(PUBLIC_CLASSES)
    for name in PUBLIC_CLASSES:
        assert unchecked_props(getattr(cdk_sagemaker_llm, name)) == [], name


class _Alien:
    """A value of a type no prop accepts."""

    def __repr__(self) -> str:
        return "<alien>"


@pytest.mark.parametrize(
    ("name", "prop"), [(name, prop) for name in PUBLIC_CLASSES for prop in _props(name)]
)
def test_a_value_of_a_foreign_type_names_the_prop(
    baselines: dict[str, Any], name: str, prop: str
) -> None:
    call, props = baselines[name]()
    with pytest.raises(ValidationError) as raised:
        call(**{**props, prop: _Alien()})
    assert raised.value.prop == prop and raised.value.fix
    assert f"{prop}=<alien>" in str(raised.value) and "expects" in raised.value.problem


FACTORIES: dict[Callable[..., Any], dict[str, Any]] = {
    BenchmarkLoad.concurrency: {"levels": [1, 2]},
    BenchmarkLoad.request_rates: {"rates": [1.0, 2.0]},
    BenchmarkLoad.knee_search: {"high": 8},
    BenchmarkLoad.max_rate_search: {"low": 1.0, "high": 8.0},
    Arrival.poisson: {},
    BenchmarkPricing.from_price_list: {},
    BenchmarkPricing.per_hour: {"price": 1.0},
    BenchmarkResults.in_new_bucket: {},
    PeakCapacity.requests_per_second: {"peak": 4.0, "max_copies": 2},
    PeakCapacity.concurrency: {"peak": 8, "max_copies": 2},
    BenchmarkEngine.lambda_workers: {},
    OptimizationSecurity.managed_network: {},
    Pricing.on_demand: {},
    Pricing.savings_plan_1y: {},
    ServiceBenchmark.knee_search: {},
    ServiceModel.from_source: {
        "source": ModelSource.from_hugging_face(
            "meta-llama/Llama-3.1-8B-Instruct", token_secret=hub_token()
        ),
        "image": ContainerImage.lmi("0.31.0"),
    },
    ComponentModel.from_image: {"image": ContainerImage.lmi("0.31.0")},
}
"""Each public static factory with typed arguments, and a valid call of it."""


@pytest.mark.parametrize(
    ("factory", "argument"),
    [
        (factory, argument)
        for factory in FACTORIES
        for argument in inspect.signature(factory).parameters
    ],
    ids=lambda value: getattr(value, "__qualname__", value),
)
def test_a_factory_argument_of_a_foreign_type_names_the_factory(
    factory: Callable[..., Any], argument: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        factory(**{**FACTORIES[factory], argument: _Alien()})
    assert raised.value.prop == f"{factory.__qualname__}({argument})" and raised.value.fix
    assert f"expects {argument} to be" in raised.value.problem


def _component_on_an_instance_endpoint() -> None:
    stack = new_stack()
    model = Model(stack, "Model", image=ContainerImage.lmi("0.31.0"))
    variant = ProductionVariant(model=model, instance_type=InstanceType.G5_2XLARGE)
    endpoint = Endpoint(stack, "Dedicated", variants=[variant])
    InferenceComponent(
        stack,
        "C",
        endpoint=endpoint,
        serves=ComponentModel.of(model),
        resources=CopyResources(accelerators=1, min_memory=Size.gibibytes(16)),
    )


@pytest.mark.parametrize(
    ("build_call", "prop", "fix"),
    [
        (
            lambda: InferenceComponentEndpoint(new_stack(), "E", instance_type="ml.g5.12xlarge"),
            "instance_type",
            "InstanceType.of('ml.g5.12xlarge')",
        ),
        (lambda: LmiOptions(backend="vllm"), "backend", "LmiBackend.VLLM"),
        (lambda: LmiOptions(tensor_parallel_degree="2"), "tensor_parallel_degree", "=2"),
        (lambda: TgiOptions(dtype="bf16"), "dtype", "DataType.BF16"),
        (lambda: RollingDeployment(wait_interval=60), "wait_interval", "Duration.seconds(60)"),
        (lambda: BenchmarkGate(min_knee_concurrency=True), "min_knee_concurrency", "a number"),
        (
            lambda: _component_on_an_instance_endpoint(),
            "endpoint",
            "pass an IComponentHost: An endpoint whose shared instances host components "
            "(InferenceComponentEndpoint)",
        ),
    ],
)
def test_a_common_wrong_type_gets_a_fix_that_names_the_right_one(
    build_call: Any, prop: str, fix: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        build_call()
    assert raised.value.prop == prop
    assert fix in raised.value.fix, raised.value.fix


def test_min_memory_as_a_number_suggests_size(baselines: dict[str, Any]) -> None:
    call, props = baselines["CopyResources"]()
    with pytest.raises(ValidationError, match=r"min_memory=32768: .*Size\.mebibytes\(32768\)"):
        call(**{**props, "min_memory": 32768})


def test_tokens_pass_where_strings_and_numbers_are_expected(baselines: dict[str, Any]) -> None:
    stack = new_stack()
    name = cdk.CfnParameter(stack, "Name")
    InferenceComponentEndpoint(
        stack, "Tokens", instance_type=InstanceType.G5_12XLARGE, endpoint_name=name.value_as_string
    )
    call, props = baselines["TargetTrackingPolicy"]()
    knee = cdk.Token.as_number(cdk.Fn.get_att("Benchmark", "KneeConcurrency"))
    call(**{**props, "target": knee})


def _token(kind: str) -> Any:
    """A deploy-time token (a CfnParameter's value) of ``kind`` 'Number' or 'String'."""
    parameter = cdk.CfnParameter(cdk.Stack(), "P", type=kind)
    return parameter.value_as_number if kind == "Number" else parameter.value_as_string


wrong_values = st.one_of(
    st.text(max_size=12),
    # numbers no prop takes, and deploy-time tokens where any value goes
    st.sampled_from([math.nan, math.inf, -math.inf, 10**30, -(10**30), 1e308, -0.0]),
    st.sampled_from(["Number", "String"]).map(_token),
    st.integers(min_value=-5, max_value=100_000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.lists(st.integers(min_value=0, max_value=9), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.builds(Duration.seconds, st.integers(min_value=0, max_value=4000)),
    st.builds(Size.gibibytes, st.integers(min_value=0, max_value=600)),
    st.sampled_from([*LmiBackend, *DataType, InstanceType.G5_12XLARGE]),
)


@settings(
    max_examples=MAX_EXAMPLES * 2,
    deadline=None,
    derandomize=True,  # CI runs the same examples every time: a failure reproduces
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_wrong_types_are_our_error_never_a_raw_exception(
    baselines: dict[str, Any], data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from(PUBLIC_CLASSES), label="class")
    prop = data.draw(st.sampled_from(_props(name)), label="prop")
    value = data.draw(wrong_values, label="value")
    call, props = baselines[name]()
    try:
        call(**{**props, prop: value})
    except ValidationError as error:
        # The error names the prop that was broken (alone, or as part of a wider one).
        assert prop in error.prop, (name, prop, value, error.prop)
        assert "Fix: " in str(error) and error.fix


# Every public callable: constructors, factories, class methods, public methods and
# the sizing functions, drawn with hostile values for each argument.


def _every_callable() -> dict[str, Callable[..., Any]]:
    from test_type_coverage import public_callables

    return public_callables()


EVERY_CALLABLE = sorted(_every_callable())


def _owner_instance(name: str) -> Any:
    """A valid instance of the class that defines the method ``name`` (``Class.method``), on
    a stack of its own: no earlier call can have filled it (a second scaling of the same
    endpoint would be refused), and none shares it with a later one."""
    return _build_instance(_baselines(new_stack()), name.split(".")[0].removesuffix("()"))


def _build_instance(baselines: dict[str, Any], owner: str) -> Any:
    cls = getattr(cdk_sagemaker_llm, owner, None)
    if owner in baselines:
        call, props = baselines[owner]()
        return call(**props)
    for candidate in PUBLIC_CLASSES:  # an abstract base: one of its public subclasses
        if isinstance(cls, type) and issubclass(getattr(cdk_sagemaker_llm, candidate), cls):
            call, props = baselines[candidate]()
            return call(**props)
    if isinstance(cls, type) and issubclass(cls, Enum):
        return next(iter(cls))
    return None


def _callee(name: str) -> tuple[Callable[..., Any], list[Any]]:
    """What to call for the public callable ``name`` and the positional head it takes: a
    constructor (``Class()``) is the class itself; a method, its function with a valid
    instance of its class (``_owner_instance``) first."""
    function = _every_callable()[name]
    if name.endswith("()"):
        return functools.reduce(getattr, name[:-2].split("."), cdk_sagemaker_llm), []
    if list(inspect.signature(function).parameters)[:1] == ["self"]:
        instance = _owner_instance(name)
        assert instance is not None, f"no instance of {name}'s class to call it on"
        return function, [instance]
    return function, []


def _arguments(function: Callable[..., Any]) -> list[str]:
    return [
        p.name
        for p in inspect.signature(function).parameters.values()
        if p.name not in ("self", "cls")
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]


@settings(
    max_examples=MAX_EXAMPLES * 4,
    deadline=None,
    derandomize=True,  # CI runs the same examples every time: a failure reproduces
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_hostile_values_over_every_public_callable_are_our_error(
    data: st.DataObject, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any public callable, each argument a hostile value (of a wrong type or not): it runs, or
    raises our ValidationError with the prop, the value and a fix; never a raw exception."""
    monkeypatch.chdir(tmp_path)  # a path argument (Calibration.to_file) writes here
    name = data.draw(st.sampled_from(EVERY_CALLABLE), label="callable")
    function, head = _callee(name)
    arguments = {p: data.draw(wrong_values, label=p) for p in _arguments(_every_callable()[name])}
    if "scope" in arguments:
        arguments["scope"] = new_stack()
    if "id" in arguments:
        arguments["id"] = "Hostile"  # the owner is new: no child has this id yet
    try:
        function(*head, **arguments)
    except ValidationError as error:
        assert error.prop and "Fix: " in str(error) and error.fix
        return


HOSTILE_VALUES: list[Callable[[], Any]] = [
    _Alien,
    lambda: math.nan,
    lambda: math.inf,
    lambda: -1,
    lambda: 10**30,
    lambda: True,
    lambda: "",
    lambda: _token("Number"),
    lambda: _token("String"),
]
"""Values no argument should take as they are, tried on every public callable in turn."""


@pytest.mark.parametrize("name", EVERY_CALLABLE)
def test_every_public_callable_meets_each_hostile_value_with_our_error(
    name: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a draw: every public callable (336, the coverage test's list) is called with each
    hostile value, the k-th value in the first argument and the next ones after it; it runs or
    raises our ValidationError, never a raw exception. (The property test above draws about
    half of the callables in its 240 examples.)"""
    monkeypatch.chdir(tmp_path)  # a path argument (Calibration.to_file) writes here
    arguments = _arguments(_every_callable()[name])
    function, head = _callee(name)
    for k in range(len(HOSTILE_VALUES)):
        values = {
            argument: HOSTILE_VALUES[(k + i) % len(HOSTILE_VALUES)]()
            for i, argument in enumerate(arguments)
        }
        if "scope" in values:
            values["scope"] = new_stack()
        if "id" in values:
            values["id"] = f"Hostile{k}"  # unique on the one owner this test builds
        try:
            function(*head, **values)
        except ValidationError as error:
            assert error.prop and "Fix: " in str(error) and error.fix, (name, values)
            assert "e+289" not in str(error) and "Token[" not in str(error), str(error)
