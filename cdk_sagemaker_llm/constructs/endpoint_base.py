"""What every endpoint offers (invoke grants, metrics, scaling checks) and the importers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Arn, ArnFormat, CfnResource, Duration, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..prop_types import typed_props
from .validation import (
    ValidationError,
    arn_resource_name,
    check_sagemaker_name,
    is_unresolved,
)

if TYPE_CHECKING:  # imported where a metric is made: importing it costs synth time
    from aws_cdk import aws_cloudwatch as cloudwatch

INVOKE_ACTIONS = ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"]
"""What invoking a model takes: plain and streaming invocations."""

DEFAULT_VARIANT_NAME = "AllTraffic"


def sagemaker_metric(
    metric_name: str,
    dimensions: dict[str, str],
    namespace: str,
    statistic: str,
    period: Duration,
) -> cloudwatch.Metric:
    """One CloudWatch metric of an endpoint or inference component (the ``metric`` methods)."""
    from aws_cdk import aws_cloudwatch as cloudwatch

    return cloudwatch.Metric(
        namespace=namespace,
        metric_name=metric_name,
        dimensions_map=dimensions,
        statistic=statistic,
        period=period,
    )


@typed_props
class EndpointBase(Construct):
    """What every endpoint offers: invoke grants and CloudWatch metrics."""

    endpoint_name: str
    endpoint_arn: str
    default_variant_name: str = DEFAULT_VARIANT_NAME

    resource: CfnResource | None = None
    """The ``AWS::SageMaker::Endpoint`` resource; None for an imported endpoint."""

    def check_variant_scaling(
        self, variant_name: str, min_instances: int, max_instances: int
    ) -> None:
        """Raise ValidationError when ``variant_name`` cannot scale between these instance
        bounds. An imported endpoint cannot be checked, so nothing is raised."""

    def check_scale_to_zero(self) -> bool:
        """Raise ValidationError when this endpoint keeps instances that scaling a component to
        zero would need released; False when that cannot be checked (imported endpoint)."""
        return False

    def check_copies(self, component: Construct, copies: int, prop: str) -> None:
        """Raise ValidationError when this endpoint's instances cannot hold ``copies`` copies of
        ``component`` beside its other components' copies (``prop`` names the count). An
        endpoint without shared instances, or an imported one, has nothing to check."""

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to invoke this endpoint, streaming included."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=INVOKE_ACTIONS, resource_arns=[self.endpoint_arn]
        )

    def metric(
        self,
        metric_name: str,
        *,
        variant_name: str | None = None,
        namespace: str = "AWS/SageMaker",
        statistic: str = "Sum",
        period: Duration = Duration.minutes(1),
    ) -> cloudwatch.Metric:
        """Any metric of one production variant of this endpoint."""
        dimensions = {
            "EndpointName": self.endpoint_name,
            "VariantName": variant_name or self.default_variant_name,
        }
        return sagemaker_metric(metric_name, dimensions, namespace, statistic, period)

    def metric_invocations(self, *, variant_name: str | None = None) -> cloudwatch.Metric:
        """Requests sent to the variant (Sum per minute)."""
        return self.metric("Invocations", variant_name=variant_name)

    def metric_model_latency(self, *, variant_name: str | None = None) -> cloudwatch.Metric:
        """Time the container took to answer, in microseconds (p90 per minute)."""
        return self.metric("ModelLatency", variant_name=variant_name, statistic="p90")

    def metric_invocation_errors(
        self, *, variant_name: str | None = None, status_class: str = "5XX"
    ) -> cloudwatch.Metric:
        """Requests that failed with a ``4XX`` or ``5XX`` status (Sum per minute)."""
        if status_class not in ("4XX", "5XX"):
            raise ValidationError(
                "status_class", status_class, "must be 4XX or 5XX", 'pass "4XX" or "5XX"'
            )
        return self.metric(f"Invocation{status_class}Errors", variant_name=variant_name)

    def metric_concurrent_requests(self, *, variant_name: str | None = None) -> cloudwatch.Metric:
        """In-flight requests per model copy, streaming included (high resolution, 10 s)."""
        return self.metric(
            "ConcurrentRequestsPerModel",
            variant_name=variant_name,
            statistic="Maximum",
            period=Duration.seconds(10),
        )

    def metric_gpu_utilization(self, *, variant_name: str | None = None) -> cloudwatch.Metric:
        """GPU utilization of the variant's instances, percent summed over GPUs (Average)."""
        return self.metric(
            "GPUUtilization",
            variant_name=variant_name,
            namespace="/aws/sagemaker/Endpoints",
            statistic="Average",
        )


class _ImportedEndpoint(EndpointBase):
    def __init__(self, scope: Construct, id: str, *, name: str, arn: str) -> None:
        super().__init__(scope, id)
        self.endpoint_name = name
        self.endpoint_arn = arn


def import_endpoint_by_name(scope: Construct, id: str, endpoint_name: str) -> EndpointBase:
    """An existing endpoint by name."""
    check_sagemaker_name("endpoint_name", endpoint_name)
    arn = Stack.of(scope).format_arn(
        service="sagemaker", resource="endpoint", resource_name=arn_resource_name(endpoint_name)
    )
    return _ImportedEndpoint(scope, id, name=endpoint_name, arn=arn)


def import_endpoint_by_arn(scope: Construct, id: str, endpoint_arn: str) -> EndpointBase:
    """An existing endpoint by ARN."""
    literal = not is_unresolved(endpoint_arn)
    if literal and (not endpoint_arn.startswith("arn:") or endpoint_arn.count(":") < 5):
        name = None  # Arn.split would fail inside jsii with a raw error
    else:
        name = Arn.split(endpoint_arn, ArnFormat.SLASH_RESOURCE_NAME).resource_name
    if name is None:
        raise ValidationError(
            "endpoint_arn",
            endpoint_arn,
            "not an endpoint ARN",
            "pass arn:<partition>:sagemaker:<region>:<account>:endpoint/<name>",
        )
    return _ImportedEndpoint(scope, id, name=name, arn=endpoint_arn)
