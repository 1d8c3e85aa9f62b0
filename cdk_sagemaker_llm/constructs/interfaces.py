"""What other constructs consume: endpoints and inference components, created here or imported.

Scaling policies, benchmarks, components and options depend on these protocols, not on the
concrete constructs (as aws-cdk-lib's ``IEventSource.bind(target: IFunction)`` knows the
interface, not the class). So ``autoscaling`` needs neither ``endpoint`` nor
``inference_component``; and ``inference_component``, ``async_inference`` and ``serverless``,
which ``endpoint`` builds on, do not name the endpoint classes back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from aws_cdk import CfnResource, Duration
from aws_cdk import aws_iam as iam
from constructs import Node

from ..catalog.instance_types import InstanceType

if TYPE_CHECKING:  # annotations only: importing it costs synth time
    from aws_cdk import aws_cloudwatch as cloudwatch


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


class IHostedComponent(IInferenceComponent, Protocol):
    """A component as the endpoint that hosts it counts its copies (``capacity``)."""

    @property
    def node(self) -> Node: ...
    @property
    def copy_count(self) -> int: ...
    @property
    def base_component(self) -> IInferenceComponent | None: ...
    @property
    def accelerators(self) -> int: ...
    @property
    def min_memory_mib(self) -> int: ...
    @property
    def cpu_cores(self) -> float | None: ...

    def requirements_on(self, instance_type: InstanceType) -> tuple[int, int]:
        """Accelerators and MiB of host memory each copy reserves on ``instance_type`` (one of
        the endpoint's instance pools)."""
        ...

    def cpu_cores_on(self, instance_type: InstanceType) -> float | None:
        """CPU cores each copy reserves on ``instance_type``; None when it reserves none."""
        ...


@runtime_checkable
class IComponentHost(IEndpoint, Protocol):
    """An endpoint whose shared instances host components (``InferenceComponentEndpoint``):
    what an ``InferenceComponent`` needs of it."""

    @property
    def role(self) -> iam.IRole: ...
    @property
    def instance_type(self) -> InstanceType: ...
    @property
    def instance_types(self) -> Sequence[InstanceType]: ...
    @property
    def network_isolation(self) -> bool: ...

    def host(self, component: IHostedComponent) -> None:
        """Count ``component`` among the hosted ones; raise ValidationError when the instances
        can no longer hold every component's copies."""
        ...


class IServerlessConcurrency(Protocol):
    """The concurrency of a serverless variant (``ServerlessConfig``)."""

    @property
    def max_concurrency(self) -> int: ...
    @property
    def provisioned_concurrency(self) -> int | None: ...


class IServerlessEndpoint(IEndpoint, Protocol):
    """An endpoint that may have serverless variants (``Endpoint``): what
    ``ServerlessScaling`` scales."""

    @property
    def node(self) -> Node: ...
    @property
    def resource(self) -> CfnResource | None: ...

    def serverless_config(self, variant_name: str) -> IServerlessConcurrency | None: ...


class IAsyncEndpoint(IEndpoint, Protocol):
    """An endpoint that may take asynchronous invocations (``Endpoint``, asynchronous when
    created with ``async_inference``): what ``AsyncScaling`` scales."""

    @property
    def node(self) -> Node: ...

    def grant_invoke_async(self, grantee: iam.IGrantable) -> iam.Grant: ...
