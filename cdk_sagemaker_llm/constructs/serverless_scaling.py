"""Scaling the provisioned concurrency of a serverless variant.

Facts (SageMaker developer guide "Automatically scale Provisioned Concurrency for a serverless
endpoint"): provisioned concurrency scales on the scalable dimension
``sagemaker:variant:DesiredProvisionedConcurrency`` with target tracking on
``SageMakerVariantProvisionedConcurrencyUtilization`` (a ratio, e.g. 0.5), between 1 and the
variant's max concurrency (at most 200).
"""

from __future__ import annotations

from typing import Unpack

from constructs import Construct

from ..prop_types import typed_props
from .autoscaling import _VariantScaling
from .interfaces import IServerlessEndpoint
from .scaling_policies import PredefinedMetric, TargetTrackingOptions, TargetTrackingPolicy
from .serverless import PROVISIONED_CONCURRENCY_DIMENSION
from .validation import ValidationError, check_range, is_unresolved

__all__ = ["ServerlessScaling"]


@typed_props
class ServerlessScaling(_VariantScaling):
    """Scale the provisioned concurrency of a serverless variant (target tracking on
    ``SageMakerVariantProvisionedConcurrencyUtilization``). The variant must be created with
    ``provisioned_concurrency``.

    Example::

        scaling = ServerlessScaling(self, "Warm", endpoint=endpoint, max_concurrency=10)
        scaling.scale_on_utilization(target=0.5)
    """

    _DIMENSION = PROVISIONED_CONCURRENCY_DIMENSION
    _UNIT = "concurrency"
    _SCHEDULED_ZERO_FIX = "schedule at least 1 (provisioned concurrency has no scale to zero)"

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: IServerlessEndpoint,
        max_concurrency: int,
        min_concurrency: int = 1,
        variant_name: str | None = None,
    ) -> None:
        """
        :param endpoint: the endpoint with the serverless variant.
        :param max_concurrency: most provisioned concurrency (at most the variant's
            ``max_concurrency``).
        :param min_concurrency: least provisioned concurrency; default 1.
        :param variant_name: default the endpoint's first variant.
        """
        variant = variant_name or endpoint.default_variant_name
        config = endpoint.serverless_config(variant)
        if config is None or config.provisioned_concurrency is None:
            raise ValidationError(
                "endpoint",
                f"{endpoint.node.path}/{variant}",
                "only a serverless variant with provisioned_concurrency has provisioned "
                "concurrency to scale",
                "set ServerlessConfig(provisioned_concurrency=...) on the variant",
            )
        check_range("min_concurrency", min_concurrency, minimum=1)
        check_range(
            "max_concurrency",
            max_concurrency,
            minimum=1,
            maximum=config.max_concurrency,
            fix=f"keep max_concurrency within the variant's max_concurrency "
            f"({config.max_concurrency})",
        )
        if not is_unresolved(max_concurrency) and max_concurrency < config.provisioned_concurrency:
            raise ValidationError(
                "max_concurrency",
                max_concurrency,
                f"is below the variant's provisioned_concurrency "
                f"({config.provisioned_concurrency}), which it starts with",
                f"raise max_concurrency to at least {config.provisioned_concurrency}, or lower "
                "the variant's provisioned_concurrency",
            )
        super().__init__(scope, id, endpoint, variant, (min_concurrency, max_concurrency))
        self._variant_max_concurrency = config.max_concurrency

    def _check_scheduled_max(self, max_capacity: int | None) -> None:
        check_range(
            "max_capacity",
            max_capacity,
            maximum=self._variant_max_concurrency,
            fix=f"keep max_capacity within the variant's max_concurrency "
            f"({self._variant_max_concurrency})",
        )

    def scale_on_utilization(
        self, *, target: float = 0.5, **options: Unpack[TargetTrackingOptions]
    ) -> TargetTrackingPolicy:
        """Hold the used share of provisioned concurrency at ``target``.

        :param target: utilization ratio in (0, 1]; default 0.5 (AWS's example).
        :param options: cooldowns and ``disable_scale_in`` (``TargetTrackingOptions``).
        """
        check_range(
            "target",
            target,
            maximum=1,
            fix="pass a utilization ratio such as 0.5 (not a percentage)",
        )
        return self._track(
            "UtilizationPolicy",
            PredefinedMetric.VARIANT_PROVISIONED_CONCURRENCY_UTILIZATION,
            target,
            **options,
        )
