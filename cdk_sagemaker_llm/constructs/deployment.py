"""Rolling deployments with CloudWatch-alarm auto-rollback, for endpoints and components.

SageMaker's ranges (botocore's ``sagemaker`` service model, ``RollingUpdatePolicy`` and
``InferenceComponentRollingUpdatePolicy``; CloudFormation's ``RollingUpdatePolicy``):
``MaximumBatchSize`` 5 %-50 % of the variant's instance count or of the component's copy count,
``WaitIntervalInSeconds`` 0-3600, ``MaximumExecutionTimeoutInSeconds`` 600-28800,
``RollbackMaximumBatchSize`` a count of at least 1 or a percentage up to 100 (100 % or absent:
the whole old fleet at once), at most 10 rollback alarms. Deployment guardrails read the alarms
with the execution role, which needs ``cloudwatch:DescribeAlarms`` on them ("Auto-Rollback
Configuration and Monitoring", SageMaker developer guide).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker

from ..prop_types import typed_props
from .validation import ValidationError, check_range, is_unresolved, whole_seconds

if TYPE_CHECKING:  # annotations only: importing it costs synth time
    from aws_cdk import aws_cloudwatch as cloudwatch


@typed_props
@dataclass(frozen=True, kw_only=True)
class RollingDeployment:
    """Replace capacity in batches, watching alarms; roll back when one fires.

    Give exactly one of ``batch_percent`` and ``batch_size`` (instances for an endpoint,
    copies for an inference component). The endpoint keeps serving throughout: only one batch
    is out of service at a time.
    """

    batch_percent: int | None = None
    """Share of capacity replaced per batch (5-50 %)."""
    batch_size: int | None = None
    """Instances (endpoint) or copies (component) replaced per batch."""
    wait_interval: Duration = Duration.minutes(2)
    """Bake time after each batch before the next one starts (0-3600 s); default 2 minutes."""
    maximum_execution_timeout: Duration | None = None
    """Give up (and roll back) after this long (600-28800 s); default SageMaker's."""
    rollback_alarms: Sequence[cloudwatch.IAlarm] = ()
    """Alarms that trigger an automatic rollback while the deployment runs (at most 10). The
    execution roles the library manages are allowed ``cloudwatch:DescribeAlarms`` on them."""
    rollback_batch_percent: int | None = None
    """Share of capacity rolled back per batch (1-100 %); default (with ``rollback_batch_size``
    unset) SageMaker's: the whole old fleet at once."""
    rollback_batch_size: int | None = None
    """Instances or copies rolled back per batch (at least 1); default the whole old fleet."""

    def validate(self, prop: str) -> None:
        """Raise ValidationError on out-of-range settings."""
        if (self.batch_percent is None) == (self.batch_size is None):
            raise ValidationError(
                f"{prop}.batch_percent/batch_size",
                (self.batch_percent, self.batch_size),
                "exactly one of batch_percent and batch_size must be given",
                "set batch_percent (e.g. 25) or batch_size (e.g. 1), not both",
            )
        check_range(f"{prop}.batch_percent", self.batch_percent, minimum=5, maximum=50)
        check_range(f"{prop}.batch_size", self.batch_size, minimum=1)
        check_range(
            f"{prop}.wait_interval (seconds)",
            whole_seconds(f"{prop}.wait_interval", self.wait_interval),
            minimum=0,
            maximum=3600,
        )
        if self.maximum_execution_timeout is not None:
            check_range(
                f"{prop}.maximum_execution_timeout (seconds)",
                whole_seconds(f"{prop}.maximum_execution_timeout", self.maximum_execution_timeout),
                minimum=600,
                maximum=28800,
            )
        check_range(f"{prop}.rollback_alarms (count)", len(self.rollback_alarms), maximum=10)
        if self.rollback_batch_percent is not None and self.rollback_batch_size is not None:
            raise ValidationError(
                f"{prop}.rollback_batch_percent/rollback_batch_size",
                (self.rollback_batch_percent, self.rollback_batch_size),
                "at most one of rollback_batch_percent and rollback_batch_size may be given",
                "set one of them, or neither to roll the whole old fleet back at once",
            )
        check_range(
            f"{prop}.rollback_batch_percent", self.rollback_batch_percent, minimum=1, maximum=100
        )
        check_range(f"{prop}.rollback_batch_size", self.rollback_batch_size, minimum=1)

    def check_batch_size(self, prop: str, count: int | None, unit: str, why: str) -> None:
        """Raise ValidationError unless ``batch_size`` is 5 %-50 % of ``count`` (the fewest
        instances or copies the deployment can meet: ``why`` says where that count comes from).

        SageMaker counts whole instances or copies: the range is taken as
        ``ceil(5 % x count)`` to ``max(1, floor(50 % x count))``, so one instance or copy at a
        time is always allowed.
        """
        if self.batch_size is None or is_unresolved(count) or not isinstance(count, int):
            return
        count = max(count, 1)
        low, high = math.ceil(0.05 * count), max(1, math.floor(0.5 * count))
        if not low <= self.batch_size <= high:
            raise ValidationError(
                f"{prop}.batch_size",
                self.batch_size,
                f"SageMaker accepts a rolling batch of 5 %-50 % of the {unit} ({why}: {count}), "
                f"i.e. {low} to {high}",
                f"set batch_size between {low} and {high}, or batch_percent (5-50)",
            )

    def grant_alarm_reads(self, roles: Sequence[iam.IRole]) -> None:
        """Allow each role ``cloudwatch:DescribeAlarms`` on exactly the rollback alarms, as
        deployment guardrails need (no-op without alarms; imported roles are left alone)."""
        if not self.rollback_alarms:
            return
        statement = iam.PolicyStatement(
            actions=["cloudwatch:DescribeAlarms"],
            resources=[alarm.alarm_arn for alarm in self.rollback_alarms],
        )
        for role in roles:
            role.add_to_principal_policy(statement)

    def for_endpoint(self) -> sagemaker.CfnEndpoint.DeploymentConfigProperty:
        """The endpoint's ``DeploymentConfig`` (batches counted in instances)."""
        cfn = sagemaker.CfnEndpoint
        batch_type, batch_value = self._batch("INSTANCE_COUNT")
        return cfn.DeploymentConfigProperty(
            rolling_update_policy=cfn.RollingUpdatePolicyProperty(
                maximum_batch_size=cfn.CapacitySizeProperty(type=batch_type, value=batch_value),
                wait_interval_in_seconds=self._wait_seconds,
                maximum_execution_timeout_in_seconds=self._timeout_seconds,
                rollback_maximum_batch_size=self._rollback(
                    "INSTANCE_COUNT", cfn.CapacitySizeProperty
                ),
            ),
            auto_rollback_configuration=cfn.AutoRollbackConfigProperty(
                alarms=[cfn.AlarmProperty(alarm_name=name) for name in self._alarm_names()]
            )
            if self.rollback_alarms
            else None,
        )

    def for_component(
        self,
    ) -> sagemaker.CfnInferenceComponent.InferenceComponentDeploymentConfigProperty:
        """An inference component's ``DeploymentConfig`` (batches counted in copies)."""
        cfn = sagemaker.CfnInferenceComponent
        batch_type, batch_value = self._batch("COPY_COUNT")
        return cfn.InferenceComponentDeploymentConfigProperty(
            rolling_update_policy=cfn.InferenceComponentRollingUpdatePolicyProperty(
                maximum_batch_size=cfn.InferenceComponentCapacitySizeProperty(
                    type=batch_type, value=batch_value
                ),
                wait_interval_in_seconds=self._wait_seconds,
                maximum_execution_timeout_in_seconds=self._timeout_seconds,
                rollback_maximum_batch_size=self._rollback(
                    "COPY_COUNT", cfn.InferenceComponentCapacitySizeProperty
                ),
            ),
            auto_rollback_configuration=cfn.AutoRollbackConfigurationProperty(
                alarms=[cfn.AlarmProperty(alarm_name=name) for name in self._alarm_names()]
            )
            if self.rollback_alarms
            else None,
        )

    def _batch(self, count_type: str) -> tuple[str, int]:
        if self.batch_percent is not None:
            return "CAPACITY_PERCENT", self.batch_percent
        assert self.batch_size is not None
        return count_type, self.batch_size

    def _rollback(self, count_type: str, kind: Any) -> Any:
        if self.rollback_batch_percent is not None:
            return kind(type="CAPACITY_PERCENT", value=self.rollback_batch_percent)
        if self.rollback_batch_size is not None:
            return kind(type=count_type, value=self.rollback_batch_size)
        return None

    @property
    def _wait_seconds(self) -> int:
        return int(self.wait_interval.to_seconds())

    @property
    def _timeout_seconds(self) -> int | None:
        timeout = self.maximum_execution_timeout
        return int(timeout.to_seconds()) if timeout else None

    def _alarm_names(self) -> list[str]:
        return [alarm.alarm_name for alarm in self.rollback_alarms]
