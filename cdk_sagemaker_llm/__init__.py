"""cdk-sagemaker-llm: AWS CDK v2 constructs for serving large language models on SageMaker."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:  # what the lazy exports below are, for type checkers and IDEs
    from .benchmarking import GoodputSlo, KneeRule
    from .benchmarking.arrivals import Arrival
    from .benchmarking.benchmark_load import BenchmarkLoad
    from .benchmarking.payload import PayloadFormat, RequestProtocol
    from .benchmarking.pricing import BenchmarkPricing
    from .catalog.containers import ContainerFamily
    from .catalog.instance_types import Accelerator, AcceleratorKind, CpuArchitecture, InstanceType
    from .catalog.model_specs import KvCachePrecision, ModelSpec, Precision
    from .catalog.prices import DEFAULT_PRICE_LIST, PriceList
    from .constructs.async_inference import AsyncInference
    from .constructs.async_scaling import (
        AsyncScaling,
        BacklogScaleFromZeroPolicy,
        BacklogTrackingPolicy,
    )
    from .constructs.autoscaling import ComponentScaling, VariantScaling
    from .constructs.benchmark import EndpointBenchmark
    from .constructs.benchmark_options import (
        BenchmarkEngine,
        BenchmarkGate,
        BenchmarkResults,
        PeakCapacity,
    )
    from .constructs.component_options import (
        AzBalanceEnforcement,
        ComponentModel,
        ComponentScheduling,
        ComponentSpecification,
        ContainerMetrics,
        CopyResources,
        PlacementStrategy,
    )
    from .constructs.data_capture import DataCapture
    from .constructs.deploy_time import HandlerPlacement
    from .constructs.deployment import RollingDeployment
    from .constructs.endpoint import (
        Endpoint,
        InferenceComponentEndpoint,
        ProductionVariant,
    )
    from .constructs.endpoint_base import EndpointBase
    from .constructs.endpoint_metrics import EndpointMetrics
    from .constructs.images import ContainerImage
    from .constructs.inference_component import InferenceComponent, InferenceComponentBase
    from .constructs.interfaces import IEndpoint, IInferenceComponent
    from .constructs.llm_service import LlmService
    from .constructs.llm_service_options import ComponentSettings, ServiceBenchmark, ServiceModel
    from .constructs.model import Model, ModelBase
    from .constructs.model_source import ModelSource, ModelSourceKind
    from .constructs.networking import ContainerNetworking
    from .constructs.optimization_job import OptimizationJob
    from .constructs.optimization_options import (
        OptimizationOutput,
        OptimizationRun,
        OptimizationSecurity,
    )
    from .constructs.optimization_techniques import (
        CompilationTarget,
        OptimizationTechnique,
        QuantizationMethod,
        TechniqueKind,
    )
    from .constructs.scaling_policies import (
        PredefinedMetric,
        ScaleFromZeroPolicy,
        ScalingPolicy,
        ScalingPolicyKind,
        StepPolicy,
        TargetTrackingPolicy,
    )
    from .constructs.serverless import ServerlessConfig
    from .constructs.serverless_scaling import ServerlessScaling
    from .constructs.serving_options import (
        DataType,
        LmiBackend,
        LmiLora,
        LmiOptions,
        Quantization,
        TgiOptions,
        VllmOptions,
    )
    from .constructs.speculative_decoding import DraftModelKind, SpeculativeDecoding
    from .constructs.variant_options import (
        CapacityReservation,
        CapacityReservationPreference,
        ContainerStartup,
        InferenceAmiVersion,
        InstancePool,
        ManagedInstanceScaling,
        PrefixAwareRouting,
        RoutingStrategy,
        ScaleInPolicy,
        ScaleInStrategy,
        StorageVolume,
        VariantPlatform,
    )
    from .errors import ValidationError
    from .planning import sizing
    from .planning.calibration import Calibration, EngineRelease
    from .planning.engine_profiles import EngineProfile
    from .planning.objectives import Slo
    from .planning.optimizations import Optimization
    from .planning.service_decision import ServiceDecision
    from .planning.service_options import (
        CopyScaling,
        LayoutOverrides,
        PriceBasis,
        Pricing,
        Risk,
        SearchSpace,
        Sizing,
    )
    from .planning.service_request import ExpectedTraffic
    from .planning.sizing import SizingReport
    from .planning.speculation import Speculation
    from .planning.workload import Workload

_EXPORTS: dict[str, str] = {
    "Accelerator": ".catalog.instance_types",
    "AcceleratorKind": ".catalog.instance_types",
    "Arrival": ".benchmarking.arrivals",
    "AsyncInference": ".constructs.async_inference",
    "AsyncScaling": ".constructs.async_scaling",
    "AzBalanceEnforcement": ".constructs.component_options",
    "BacklogScaleFromZeroPolicy": ".constructs.async_scaling",
    "BacklogTrackingPolicy": ".constructs.async_scaling",
    "BenchmarkEngine": ".constructs.benchmark_options",
    "BenchmarkGate": ".constructs.benchmark_options",
    "BenchmarkLoad": ".benchmarking.benchmark_load",
    "BenchmarkPricing": ".benchmarking.pricing",
    "BenchmarkResults": ".constructs.benchmark_options",
    "Calibration": ".planning.calibration",
    "CapacityReservation": ".constructs.variant_options",
    "CapacityReservationPreference": ".constructs.variant_options",
    "CompilationTarget": ".constructs.optimization_techniques",
    "ComponentModel": ".constructs.component_options",
    "ComponentScaling": ".constructs.autoscaling",
    "ComponentScheduling": ".constructs.component_options",
    "ComponentSettings": ".constructs.llm_service_options",
    "CopyScaling": ".planning.service_options",
    "ComponentSpecification": ".constructs.component_options",
    "ContainerFamily": ".catalog.containers",
    "ContainerImage": ".constructs.images",
    "ContainerMetrics": ".constructs.component_options",
    "ContainerNetworking": ".constructs.networking",
    "ContainerStartup": ".constructs.variant_options",
    "CopyResources": ".constructs.component_options",
    "CpuArchitecture": ".catalog.instance_types",
    "DEFAULT_PRICE_LIST": ".catalog.prices",
    "DataCapture": ".constructs.data_capture",
    "DataType": ".constructs.serving_options",
    "DraftModelKind": ".constructs.speculative_decoding",
    "Endpoint": ".constructs.endpoint",
    "EndpointBase": ".constructs.endpoint_base",
    "EndpointBenchmark": ".constructs.benchmark",
    "EndpointMetrics": ".constructs.endpoint_metrics",
    "EngineProfile": ".planning.engine_profiles",
    "EngineRelease": ".planning.calibration",
    "Optimization": ".planning.optimizations",
    "Speculation": ".planning.speculation",
    "ExpectedTraffic": ".planning.service_request",
    "HandlerPlacement": ".constructs.deploy_time",
    "IEndpoint": ".constructs.interfaces",
    "IInferenceComponent": ".constructs.interfaces",
    "InferenceAmiVersion": ".constructs.variant_options",
    "InferenceComponent": ".constructs.inference_component",
    "InferenceComponentBase": ".constructs.inference_component",
    "InferenceComponentEndpoint": ".constructs.endpoint",
    "InstancePool": ".constructs.variant_options",
    "InstanceType": ".catalog.instance_types",
    "GoodputSlo": ".benchmarking",
    "KneeRule": ".benchmarking",
    "KvCachePrecision": ".catalog.model_specs",
    "LayoutOverrides": ".planning.service_options",
    "LlmService": ".constructs.llm_service",
    "LmiBackend": ".constructs.serving_options",
    "LmiLora": ".constructs.serving_options",
    "LmiOptions": ".constructs.serving_options",
    "ManagedInstanceScaling": ".constructs.variant_options",
    "Model": ".constructs.model",
    "ModelBase": ".constructs.model",
    "ModelSource": ".constructs.model_source",
    "ModelSourceKind": ".constructs.model_source",
    "ModelSpec": ".catalog.model_specs",
    "OptimizationJob": ".constructs.optimization_job",
    "OptimizationOutput": ".constructs.optimization_options",
    "OptimizationRun": ".constructs.optimization_options",
    "OptimizationSecurity": ".constructs.optimization_options",
    "OptimizationTechnique": ".constructs.optimization_techniques",
    "PayloadFormat": ".benchmarking.payload",
    "PeakCapacity": ".constructs.benchmark_options",
    "PlacementStrategy": ".constructs.component_options",
    "Precision": ".catalog.model_specs",
    "PredefinedMetric": ".constructs.scaling_policies",
    "PrefixAwareRouting": ".constructs.variant_options",
    "PriceBasis": ".planning.service_options",
    "Pricing": ".planning.service_options",
    "PriceList": ".catalog.prices",
    "ProductionVariant": ".constructs.endpoint",
    "Quantization": ".constructs.serving_options",
    "QuantizationMethod": ".constructs.optimization_techniques",
    "RequestProtocol": ".benchmarking.payload",
    "Risk": ".planning.service_options",
    "RollingDeployment": ".constructs.deployment",
    "RoutingStrategy": ".constructs.variant_options",
    "ScaleFromZeroPolicy": ".constructs.scaling_policies",
    "ScaleInPolicy": ".constructs.variant_options",
    "ScaleInStrategy": ".constructs.variant_options",
    "ScalingPolicy": ".constructs.scaling_policies",
    "ScalingPolicyKind": ".constructs.scaling_policies",
    "ServerlessConfig": ".constructs.serverless",
    "SearchSpace": ".planning.service_options",
    "ServerlessScaling": ".constructs.serverless_scaling",
    "ServiceBenchmark": ".constructs.llm_service_options",
    "ServiceModel": ".constructs.llm_service_options",
    "Sizing": ".planning.service_options",
    "SizingReport": ".planning.sizing",
    "ServiceDecision": ".planning.service_decision",
    "Slo": ".planning.objectives",
    "SpeculativeDecoding": ".constructs.speculative_decoding",
    "StepPolicy": ".constructs.scaling_policies",
    "StorageVolume": ".constructs.variant_options",
    "TargetTrackingPolicy": ".constructs.scaling_policies",
    "TechniqueKind": ".constructs.optimization_techniques",
    "TgiOptions": ".constructs.serving_options",
    "VllmOptions": ".constructs.serving_options",
    "ValidationError": ".errors",
    "VariantPlatform": ".constructs.variant_options",
    "VariantScaling": ".constructs.autoscaling",
    "Workload": ".planning.workload",
    "sizing": ".planning.sizing",
}
"""Each public name and the module that defines it."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import an export's module on first use (PEP 562): an app that builds a model and an
    endpoint does not pay for the Lambda, Step Functions and autoscaling modules."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    imported = importlib.import_module(module, __name__)
    value = imported if module.endswith(f".{name}") else getattr(imported, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
