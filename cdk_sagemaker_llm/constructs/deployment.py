"""Rolling deployments with CloudWatch-alarm auto-rollback, for endpoints and components."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sagemaker as sagemaker

from .prop_types import typed_props
from .validation import ValidationError, check_range


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
    """Alarms that trigger an automatic rollback while the deployment runs (at most 10)."""

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
            self.wait_interval.to_seconds(),
            minimum=0,
            maximum=3600,
        )
        if self.maximum_execution_timeout is not None:
            check_range(
                f"{prop}.maximum_execution_timeout (seconds)",
                self.maximum_execution_timeout.to_seconds(),
                minimum=600,
                maximum=28800,
            )
        check_range(f"{prop}.rollback_alarms (count)", len(self.rollback_alarms), maximum=10)

    def for_endpoint(self) -> sagemaker.CfnEndpoint.DeploymentConfigProperty:
        """The endpoint's ``DeploymentConfig`` (batches counted in instances)."""
        cfn = sagemaker.CfnEndpoint
        batch_type, batch_value = self._batch("INSTANCE_COUNT")
        return cfn.DeploymentConfigProperty(
            rolling_update_policy=cfn.RollingUpdatePolicyProperty(
                maximum_batch_size=cfn.CapacitySizeProperty(type=batch_type, value=batch_value),
                wait_interval_in_seconds=self._wait_seconds,
                maximum_execution_timeout_in_seconds=self._timeout_seconds,
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

    @property
    def _wait_seconds(self) -> int:
        return int(self.wait_interval.to_seconds())

    @property
    def _timeout_seconds(self) -> int | None:
        timeout = self.maximum_execution_timeout
        return int(timeout.to_seconds()) if timeout else None

    def _alarm_names(self) -> list[str]:
        return [alarm.alarm_name for alarm in self.rollback_alarms]
