"""cdk-sagemaker-llm: AWS CDK v2 constructs for serving large language models on SageMaker."""

from .benchmarking import KneeRule
from .constructs import sizing
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
    EndpointBase,
    IEndpoint,
    InferenceComponentEndpoint,
    ProductionVariant,
    RoutingStrategy,
)
from .constructs.images import ContainerFamily, ContainerImage
from .constructs.inference_component import (
    IInferenceComponent,
    InferenceComponent,
    InferenceComponentBase,
)
from .constructs.instance_type import Accelerator, AcceleratorKind, InstanceType
from .constructs.model import Model
from .constructs.model_source import ModelSource, ModelSourceKind
from .constructs.model_spec import ModelSpec, Precision
from .constructs.optimization_job import (
    CompilationTarget,
    OptimizationJob,
    OptimizationTechnique,
    QuantizationMethod,
    TechniqueKind,
)
from .constructs.pricing import DEFAULT_PRICE_LIST, PriceList
from .constructs.serving_options import DataType, LmiBackend, LmiOptions, Quantization, TgiOptions
from .constructs.sizing import SizingReport
from .constructs.speculative_decoding import DraftModelKind, SpeculativeDecoding
from .constructs.validation import ValidationError

__all__ = [
    "DEFAULT_PRICE_LIST",
    "Accelerator",
    "AcceleratorKind",
    "BenchmarkGate",
    "CompilationTarget",
    "ComponentScaling",
    "ContainerFamily",
    "ContainerImage",
    "DataCapture",
    "DataType",
    "DraftModelKind",
    "Endpoint",
    "EndpointBase",
    "EndpointBenchmark",
    "HandlerPlacement",
    "IEndpoint",
    "IInferenceComponent",
    "InferenceComponent",
    "InferenceComponentBase",
    "InferenceComponentEndpoint",
    "InstanceType",
    "KneeRule",
    "LmiBackend",
    "LmiOptions",
    "Model",
    "ModelSource",
    "ModelSourceKind",
    "ModelSpec",
    "OptimizationJob",
    "OptimizationTechnique",
    "PayloadFormat",
    "Precision",
    "PredefinedMetric",
    "PriceList",
    "ProductionVariant",
    "Quantization",
    "QuantizationMethod",
    "RollingDeployment",
    "RoutingStrategy",
    "ScaleFromZeroPolicy",
    "ScalingPolicy",
    "ScalingPolicyKind",
    "SizingReport",
    "SpeculativeDecoding",
    "StepPolicy",
    "TargetTrackingPolicy",
    "TechniqueKind",
    "TgiOptions",
    "ValidationError",
    "VariantScaling",
    "sizing",
]
