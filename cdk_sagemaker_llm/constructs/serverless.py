"""Serverless inference: a variant with memory and concurrency instead of instances. The
scaling of its provisioned concurrency is ``serverless_scaling`` (a module of its own, so an
endpoint loads the Application Auto Scaling and CloudWatch bindings only when it scales).

Facts (SageMaker API reference ``ProductionVariantServerlessConfig``; developer guide
"Deploy models with Amazon SageMaker Serverless Inference" and "Automatically scale Provisioned
Concurrency for a serverless endpoint"): memory 1,024-6,144 MB in 1 GB steps, max concurrency
1-200, provisioned concurrency 1-200 and at most the max concurrency. Serverless endpoints run on
CPUs (no GPUs) and exclude VPC configuration, network isolation, data capture and multiple
production variants. Provisioned concurrency scales on the scalable dimension
``sagemaker:variant:DesiredProvisionedConcurrency`` with target tracking on
``SageMakerVariantProvisionedConcurrencyUtilization`` (a ratio, e.g. 0.5).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Size
from aws_cdk import aws_sagemaker as sagemaker

from ..catalog.scaling_metrics import PROVISIONED_CONCURRENCY_DIMENSION
from ..prop_types import typed_props
from .model import ModelBase
from .validation import ValidationError, check_range, is_unresolved

__all__ = ["PROVISIONED_CONCURRENCY_DIMENSION", "ServerlessConfig"]

MAX_SERVERLESS_CONCURRENCY = 200


@typed_props
@dataclass(frozen=True, kw_only=True)
class ServerlessConfig:
    """A serverless variant (``ServerlessConfig``): for small CPU models, tests and spiky,
    cold-start-tolerant traffic. Give it to ``ProductionVariant(serverless=...)`` instead of an
    instance type."""

    memory_size: Size
    """Memory of each concurrent execution: 1-6 GiB in whole GiB."""
    max_concurrency: int
    """Most concurrent invocations (1-200)."""
    provisioned_concurrency: int | None = None
    """Executions kept warm (1-200, at most ``max_concurrency``); default none (on demand,
    cold starts). ``ServerlessScaling`` scales it."""

    def render(self, prop: str) -> sagemaker.CfnEndpointConfig.ServerlessConfigProperty:
        """Check the ranges and return the L1 property."""
        mib = self.memory_size.to_mebibytes()
        if is_unresolved(mib) or mib % 1024 or not 1024 <= mib <= 6144:
            raise ValidationError(
                f"{prop}.memory_size (MiB)",
                mib,
                "serverless memory is 1 to 6 GiB in whole GiB (1024, 2048, ... 6144 MB)",
                "pass Size.gibibytes(n) with n from 1 to 6",
            )
        check_range(
            f"{prop}.max_concurrency",
            self.max_concurrency,
            minimum=1,
            maximum=MAX_SERVERLESS_CONCURRENCY,
        )
        check_range(
            f"{prop}.provisioned_concurrency",
            self.provisioned_concurrency,
            minimum=1,
            maximum=self.max_concurrency,
            fix="provision between 1 and max_concurrency executions, or omit it",
        )
        return sagemaker.CfnEndpointConfig.ServerlessConfigProperty(
            memory_size_in_mb=int(mib),
            max_concurrency=self.max_concurrency,
            provisioned_concurrency=self.provisioned_concurrency,
        )

    @staticmethod
    def check_model(model: ModelBase, prop: str) -> None:
        """Raise when the model needs what serverless lacks (accelerators, a VPC, isolation)."""
        image = model.image
        if image is not None and image.accelerator is not None:
            raise ValidationError(
                f"{prop}.model",
                image.family.value,
                "serverless inference runs on CPUs; this image needs GPUs or Neuron devices",
                "serve it on instances (instance_type=...), or use a CPU image "
                "(ContainerImage.pytorch_cpu(...))",
            )
        if getattr(model, "security_groups", None) or getattr(model, "network_isolation", False):
            raise ValidationError(
                f"{prop}.model",
                model.node.path,
                "serverless inference supports neither a VPC configuration nor network isolation",
                "create the model without vpc and network_isolation, or serve it on instances",
            )
