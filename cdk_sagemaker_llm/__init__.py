"""cdk-sagemaker-llm: AWS CDK v2 constructs for serving large language models on SageMaker."""

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
from .constructs.data_capture import DataCapture
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
from .constructs.serving_options import DataType, LmiBackend, LmiOptions, Quantization, TgiOptions
from .constructs.validation import ValidationError

__all__ = [
    "Accelerator",
    "AcceleratorKind",
    "ComponentScaling",
    "ContainerFamily",
    "ContainerImage",
    "DataCapture",
    "DataType",
    "Endpoint",
    "EndpointBase",
    "IEndpoint",
    "IInferenceComponent",
    "InferenceComponent",
    "InferenceComponentBase",
    "InferenceComponentEndpoint",
    "InstanceType",
    "LmiBackend",
    "LmiOptions",
    "Model",
    "ModelSource",
    "ModelSourceKind",
    "PredefinedMetric",
    "ProductionVariant",
    "Quantization",
    "RollingDeployment",
    "RoutingStrategy",
    "ScaleFromZeroPolicy",
    "ScalingPolicy",
    "ScalingPolicyKind",
    "StepPolicy",
    "TargetTrackingPolicy",
    "TgiOptions",
    "ValidationError",
    "VariantScaling",
]
