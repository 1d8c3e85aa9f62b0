"""cdk-sagemaker-llm: AWS CDK v2 constructs for serving large language models on SageMaker."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy exports below are, for type checkers and IDEs
    from .benchmarking import KneeRule
    from .catalog.containers import ContainerFamily
    from .catalog.instance_types import Accelerator, AcceleratorKind, InstanceType
    from .catalog.model_specs import ModelSpec, Precision
    from .catalog.prices import DEFAULT_PRICE_LIST, PriceList
    from .constructs.autoscaling import (
        ComponentScaling,
        PredefinedMetric,
        ScaleFromZeroPolicy,
        ScalingPolicy,
        ScalingPolicyKind,
        StepPolicy,
        TargetTrackingPolicy,
        VariantScaling,
    )
    from .constructs.benchmark import BenchmarkGate, EndpointBenchmark, PayloadFormat
    from .constructs.data_capture import DataCapture
    from .constructs.deploy_time import HandlerPlacement
    from .constructs.deployment import RollingDeployment
    from .constructs.endpoint import (
        Endpoint,
        InferenceComponentEndpoint,
        ProductionVariant,
        RoutingStrategy,
    )
    from .constructs.endpoint_base import EndpointBase
    from .constructs.images import ContainerImage
    from .constructs.inference_component import InferenceComponent, InferenceComponentBase
    from .constructs.interfaces import IEndpoint, IInferenceComponent
    from .constructs.model import Model
    from .constructs.model_source import ModelSource, ModelSourceKind
    from .constructs.optimization_job import (
        CompilationTarget,
        OptimizationJob,
        OptimizationTechnique,
        QuantizationMethod,
        TechniqueKind,
    )
    from .constructs.serving_options import (
        DataType,
        LmiBackend,
        LmiOptions,
        Quantization,
        TgiOptions,
    )
    from .constructs.speculative_decoding import DraftModelKind, SpeculativeDecoding
    from .errors import ValidationError
    from .planning import sizing
    from .planning.sizing import SizingReport

_EXPORTS: dict[str, str] = {
    "Accelerator": ".catalog.instance_types",
    "AcceleratorKind": ".catalog.instance_types",
    "BenchmarkGate": ".constructs.benchmark",
    "CompilationTarget": ".constructs.optimization_job",
    "ComponentScaling": ".constructs.autoscaling",
    "ContainerFamily": ".catalog.containers",
    "ContainerImage": ".constructs.images",
    "DEFAULT_PRICE_LIST": ".catalog.prices",
    "DataCapture": ".constructs.data_capture",
    "DataType": ".constructs.serving_options",
    "DraftModelKind": ".constructs.speculative_decoding",
    "Endpoint": ".constructs.endpoint",
    "EndpointBase": ".constructs.endpoint_base",
    "EndpointBenchmark": ".constructs.benchmark",
    "HandlerPlacement": ".constructs.deploy_time",
    "IEndpoint": ".constructs.interfaces",
    "IInferenceComponent": ".constructs.interfaces",
    "InferenceComponent": ".constructs.inference_component",
    "InferenceComponentBase": ".constructs.inference_component",
    "InferenceComponentEndpoint": ".constructs.endpoint",
    "InstanceType": ".catalog.instance_types",
    "KneeRule": ".benchmarking",
    "LmiBackend": ".constructs.serving_options",
    "LmiOptions": ".constructs.serving_options",
    "Model": ".constructs.model",
    "ModelSource": ".constructs.model_source",
    "ModelSourceKind": ".constructs.model_source",
    "ModelSpec": ".catalog.model_specs",
    "OptimizationJob": ".constructs.optimization_job",
    "OptimizationTechnique": ".constructs.optimization_job",
    "PayloadFormat": ".constructs.benchmark",
    "Precision": ".catalog.model_specs",
    "PredefinedMetric": ".constructs.autoscaling",
    "PriceList": ".catalog.prices",
    "ProductionVariant": ".constructs.endpoint",
    "Quantization": ".constructs.serving_options",
    "QuantizationMethod": ".constructs.optimization_job",
    "RollingDeployment": ".constructs.deployment",
    "RoutingStrategy": ".constructs.endpoint",
    "ScaleFromZeroPolicy": ".constructs.autoscaling",
    "ScalingPolicy": ".constructs.autoscaling",
    "ScalingPolicyKind": ".constructs.autoscaling",
    "SizingReport": ".planning.sizing",
    "SpeculativeDecoding": ".constructs.speculative_decoding",
    "StepPolicy": ".constructs.autoscaling",
    "TargetTrackingPolicy": ".constructs.autoscaling",
    "TechniqueKind": ".constructs.optimization_job",
    "TgiOptions": ".constructs.serving_options",
    "ValidationError": ".errors",
    "VariantScaling": ".constructs.autoscaling",
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
