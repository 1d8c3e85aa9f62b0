"""What other constructs consume: endpoints and inference components, created here or imported.

Scaling policies and benchmarks depend on these protocols, not on the concrete constructs, so
``autoscaling`` needs neither ``endpoint`` nor ``inference_component`` (which build on it).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam


@runtime_checkable
class IEndpoint(Protocol):
    """An endpoint, created here or imported: what other constructs consume."""

    @property
    def endpoint_name(self) -> str: ...
    @property
    def endpoint_arn(self) -> str: ...
    @property
    def default_variant_name(self) -> str: ...

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant: ...
    def metric(
        self,
        metric_name: str,
        *,
        variant_name: str | None = None,
        namespace: str = "AWS/SageMaker",
        statistic: str = "Sum",
        period: Duration = Duration.minutes(1),
    ) -> cloudwatch.Metric: ...


@runtime_checkable
class IInferenceComponent(Protocol):
    """A component, created here or imported: what scaling policies and benchmarks consume."""

    @property
    def inference_component_name(self) -> str: ...
    @property
    def inference_component_arn(self) -> str: ...
    @property
    def endpoint(self) -> IEndpoint: ...

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant: ...
    def metric(
        self,
        metric_name: str,
        *,
        namespace: str = "AWS/SageMaker",
        statistic: str = "Sum",
        period: Duration = Duration.minutes(1),
    ) -> cloudwatch.Metric: ...
