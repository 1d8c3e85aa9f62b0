"""Application Auto Scaling for inference components (copies) and endpoint variants (instances).

``ComponentScaling`` scales the copy count of an inference component, ``VariantScaling`` the
instance count of an instance-based endpoint's variant. Both register one scalable target
(``AWS::ApplicationAutoScaling::ScalableTarget``, emitted as an L1 resource so that a minimum of
0 stays 0) and add policies to it:

- target tracking on a predefined SageMaker metric (``scale_on_concurrent_requests``,
  ``scale_on_invocations``);
- step scaling on any CloudWatch metric (``scale_on_metric``);
- scheduled capacity changes (``scale_on_schedule``);
- for components with ``min_copies=0``, the scale-from-zero recipe: a single-step policy
  (+1 copy) fired by an alarm on ``NoCapacityInvocationFailures``.

The policies are ``constructs.scaling_policies``'s. Every policy states
``expected_detection_time``: how long its alarm takes to notice that more capacity is needed
(metric period x datapoints to alarm). Scaling itself (new instance, image pull, weights,
start-up) comes on top.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Sequence
from typing import ClassVar, TypeVar, Unpack

import jsii
from aws_cdk import Annotations, CfnResource, Duration, Stack, TimeZone
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct, IValidation

from ..catalog.scaling_metrics import (
    COPY_COUNT_DIMENSION,
    INSTANCE_COUNT_DIMENSION,
    SERVICE_NAMESPACE,
)
from ..prop_types import typed_props
from .deployment import RollingDeployment
from .endpoint_base import EndpointBase
from .interfaces import IEndpoint, IInferenceComponent
from .scaling_policies import (
    PredefinedMetric,
    ScaleFromZeroPolicy,
    ScalingPolicy,
    StepPolicy,
    StepScalingOptions,
    TargetTrackingOptions,
    TargetTrackingPolicy,
    can_scale_in,
)
from .validation import ValidationError, check_range, is_unresolved

PolicyT = TypeVar("PolicyT", bound="ScalingPolicy")

_SCHEDULED_ACTION_NAME = re.compile(
    r"^[^\s:/|\x00-\x1f\x7f-\x9f](?:[^:/|\x00-\x1f\x7f-\x9f]*[^\s:/|\x00-\x1f\x7f-\x9f])?$"
)


@jsii.implements(IValidation)
class _ScaleInRequired:
    """At synth: a target that scales to zero needs a policy that can take its last copy or
    instance away (``can_scale_in``); ``error`` says which to add."""

    def __init__(self, policies: Sequence[ScalingPolicy], error: ValidationError) -> None:
        self._policies = policies
        self._error = error

    def validate(self) -> list[str]:
        return [] if any(can_scale_in(p) for p in self._policies) else [str(self._error)]


SCHEDULED_ZERO_KEPT_WARNING = "cdk-sagemaker-llm:scheduledZeroKept"
"""The id of the warning a scheduled maximum of 0 gives when no scheduled action raises the
maximum again (``Annotations`` ``acknowledge_warning`` takes it, for a target parked at 0 on
purpose)."""


@jsii.implements(IValidation)
class _ZeroMaximumRaised:
    """At synth: a scheduled maximum of 0 needs a scheduled action that raises it again."""

    def __init__(self, scaling: _Scaling) -> None:
        self._scaling = scaling

    def validate(self) -> list[str]:
        maxima = [
            (
                action.scheduled_action_name,
                getattr(action.scalable_target_action, "max_capacity", None),
            )
            for action in self._scaling.scheduled_actions
        ]
        zeros = [name for name, most in maxima if most == 0]
        if not zeros or any(
            most is not None and (is_unresolved(most) or most > 0) for _, most in maxima
        ):
            return []
        Annotations.of(self._scaling).add_warning_v2(
            SCHEDULED_ZERO_KEPT_WARNING,
            f"max_capacity=0 is scheduled ({', '.join(zeros)}) and no scheduled action raises "
            "the maximum again: once it runs, the target stays at 0 (the scale-from-zero "
            "policy cannot add capacity above a maximum of 0) until something else raises it "
            "(RegisterScalableTarget). Add an action that restores it, e.g. scale_on_schedule("
            "'mornings', schedule=Schedule.cron(hour='8', minute='0'), max_capacity=...), or "
            f"acknowledge {SCHEDULED_ZERO_KEPT_WARNING} if the target is parked on purpose.",
        )
        return []


@typed_props
class _Scaling(Construct):
    """One scalable target and the policies on it."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        resource_id: str,
        scalable_dimension: str,
        min_capacity: int,
        max_capacity: int,
        min_prop: str,
        max_prop: str,
        depends_on: CfnResource | None,
    ) -> None:
        # Checked before joining the construct tree: a rejected scaling leaves nothing behind.
        _check_capacity_range(min_capacity, max_capacity, min_prop, max_prop)
        _check_unique(scope, id, resource_id, scalable_dimension)
        super().__init__(scope, id)
        self.resource_id = resource_id
        """The Application Auto Scaling ``ResourceId``."""
        self.scalable_dimension = scalable_dimension
        """The scalable dimension."""
        self.min_capacity = min_capacity
        """Fewest copies/instances."""
        self.max_capacity = max_capacity
        """Most copies/instances."""
        self.policies: list[ScalingPolicy] = []
        """Policies added so far, in order."""
        self._tracked: dict[PredefinedMetric, TargetTrackingPolicy] = {}
        self._scheduled: list[appscaling.CfnScalableTarget.ScheduledActionProperty] = []
        # The L1 resource: CloudFormation's ScalableTarget keeps MinCapacity 0 as 0. No RoleARN:
        # Application Auto Scaling uses (and creates) its SageMaker service-linked role.
        self.scalable_target = appscaling.CfnScalableTarget(
            self,
            "Target",
            service_namespace=SERVICE_NAMESPACE,
            scalable_dimension=scalable_dimension,
            resource_id=resource_id,
            min_capacity=min_capacity,
            max_capacity=max_capacity,
        )
        """The emitted ``AWS::ApplicationAutoScaling::ScalableTarget``."""
        if depends_on is not None:
            self.scalable_target.add_resource_dependency(depends_on)
        self._target_ref = appscaling.ScalableTarget.from_scalable_target_attributes(
            self,
            "TargetRef",
            scalable_target_id=self.scalable_target.ref,
            scalable_dimension=scalable_dimension,
            service_namespace=SERVICE_NAMESPACE,
        )
        self.node.add_validation(_ZeroMaximumRaised(self))

    @property
    def expected_detection_time(self) -> Duration | None:
        """The fastest scale-out detection among the policies; None without policies."""
        times = [policy.expected_detection_time for policy in self.policies]
        if not times:
            return None
        return min(times, key=lambda time: time.to_seconds())

    def _require_scale_in(self, error: ValidationError) -> None:
        """At synth, fail with ``error`` unless a policy on this target can scale in: a target
        that scales to zero reaches 0 only through one."""
        self.node.add_validation(_ScaleInRequired(self.policies, error))

    def _added(self, policy: PolicyT) -> PolicyT:
        """``policy``, now listed among this target's policies."""
        self.policies.append(policy)
        return policy

    def _track(
        self,
        id: str,
        metric: PredefinedMetric,
        target: float,
        **options: Unpack[TargetTrackingOptions],
    ) -> TargetTrackingPolicy:
        existing = self._tracked.get(metric)
        if existing is not None:
            raise ValidationError(
                "metric",
                metric.value,
                f"{existing.node.path} already tracks this metric on the same scalable target; "
                "two target-tracking policies on one metric fight each other",
                "keep one policy per metric (change its target instead)",
            )
        try:
            policy = TargetTrackingPolicy(
                self, id, scalable_target=self.scalable_target, metric=metric, target=target,
                **options,
            )  # fmt: skip
        except ValidationError:
            # A refused policy leaves no half-built child: calling again with a valid target
            # would otherwise be jsii's "There is already a Construct with name".
            self.node.try_remove_child(id)
            raise
        self._tracked[metric] = policy
        return self._added(policy)

    def scale_on_metric(
        self,
        id: str,
        *,
        metric: cloudwatch.IMetric,
        scaling_steps: Sequence[appscaling.ScalingInterval],
        **options: Unpack[StepScalingOptions],
    ) -> StepPolicy:
        """Step scaling on any CloudWatch metric; see ``StepPolicy`` for the parameters."""
        return self._added(
            StepPolicy(
                self,
                id,
                scaling_target=self._target_ref,
                metric=metric,
                scaling_steps=scaling_steps,
                **options,
            )
        )

    def scale_on_schedule(
        self,
        name: str,
        *,
        schedule: appscaling.Schedule,
        min_capacity: int | None = None,
        max_capacity: int | None = None,
        start_time: datetime.datetime | None = None,
        end_time: datetime.datetime | None = None,
        time_zone: TimeZone | None = None,
    ) -> None:
        """Change the capacity bounds on a schedule (a scheduled action on the target).

        :param name: the scheduled action's name, unique on this target (no ``:``, ``/``, ``|``).
        :param schedule: when: ``Schedule.cron(...)``, ``Schedule.rate(...)``, ``Schedule.at(...)``.
        :param min_capacity: the new minimum; default unchanged.
        :param max_capacity: the new maximum; default unchanged. Both are at least 1, or 0
            where the target scales to zero (``ComponentScaling(min_copies=0)``,
            ``AsyncScaling(min_instances=0)``): ``min_capacity=0, max_capacity=0`` keeps it at
            0 (the scale-from-zero policy cannot add capacity above a maximum of 0) until
            another action raises the maximum.
        :param start_time: the schedule starts then; default now.
        :param end_time: the schedule ends then; default never.
        :param time_zone: the time zone a ``cron(...)`` schedule runs in; default UTC. Not with
            ``Schedule.at(...)``, whose moment is already an instant (``start_time`` and
            ``end_time`` are too).
        """
        if len(name) > 256 or not _SCHEDULED_ACTION_NAME.match(name):
            raise ValidationError(
                "name",
                name,
                "scheduled action names are 1-256 printable characters without ':', '/' or '|' "
                "and without leading or trailing spaces",
                "rename the scheduled action, e.g. 'business-hours'",
            )
        if any(action.scheduled_action_name == name for action in self._scheduled):
            raise ValidationError(
                "name", name, "another scheduled action on this target has that name", "rename it"
            )
        if min_capacity is None and max_capacity is None:
            raise ValidationError(
                "min_capacity/max_capacity",
                (None, None),
                "a scheduled action must change at least one bound",
                "pass min_capacity, max_capacity or both",
            )
        self._check_scheduled_floor("min_capacity", min_capacity)
        self._check_scheduled_floor("max_capacity", max_capacity)
        if (
            min_capacity is not None
            and max_capacity is not None
            and not is_unresolved(min_capacity)
            and not is_unresolved(max_capacity)
            and min_capacity > max_capacity
        ):
            raise ValidationError(
                "min_capacity/max_capacity",
                (min_capacity, max_capacity),
                "min_capacity must not exceed max_capacity",
                f"raise max_capacity to at least {min_capacity} or lower min_capacity",
            )
        self._check_one_sided(min_capacity, max_capacity)
        _check_time_zone(schedule, time_zone)
        for prop, moment in (("start_time", start_time), ("end_time", end_time)):
            if moment is not None and moment.tzinfo is None:  # jsii refuses naive datetimes
                raise ValidationError(
                    prop,
                    moment.isoformat(),
                    "a naive datetime: the instant it names is ambiguous",
                    f"pass {prop}=datetime(..., tzinfo=datetime.timezone.utc) (time_zone sets "
                    "the zone the schedule's cron runs in)",
                )
        if start_time is not None and end_time is not None and end_time <= start_time:
            raise ValidationError(
                "end_time", end_time.isoformat(), "ends before start_time", "move end_time later"
            )
        # Last: the endpoint remembers an accepted maximum (a refused action leaves none).
        self._check_scheduled_max(max_capacity)
        self._scheduled.append(
            appscaling.CfnScalableTarget.ScheduledActionProperty(
                scheduled_action_name=name,
                schedule=schedule.expression_string,
                scalable_target_action=appscaling.CfnScalableTarget.ScalableTargetActionProperty(
                    min_capacity=min_capacity, max_capacity=max_capacity
                ),
                start_time=start_time,
                end_time=end_time,
                timezone=time_zone.timezone_name if time_zone else None,
            )
        )
        self.scalable_target.scheduled_actions = list(self._scheduled)

    @property
    def scheduled_actions(self) -> list[appscaling.CfnScalableTarget.ScheduledActionProperty]:
        """The scheduled actions ``scale_on_schedule`` added, in order."""
        return list(self._scheduled)

    _SCHEDULED_ZERO_FIX: ClassVar[str] = "schedule at least 1"
    """What to do instead of scheduling 0 on a target that does not scale to zero."""

    @property
    def _scales_to_zero(self) -> bool:
        """Whether the target may sit at 0: it has the scale-from-zero policy that brings
        capacity back (``ComponentScaling``, ``AsyncScaling``, built with a minimum of 0)."""
        return False

    def _check_scheduled_floor(self, prop: str, capacity: int | None) -> None:
        """A scheduled bound, minimum or maximum, is at least 1, or 0 where the target scales
        to zero. Application Auto Scaling takes 0 for both (API reference,
        ``ScalableTargetAction``: ``MinCapacity`` and ``MaxCapacity`` are integers without a
        floor, botocore's service model likewise; user guide, "How scheduled scaling for
        Application Auto Scaling works": above the new maximum, it scales in to it), so a
        scheduled maximum of 0 holds the target at 0 until an action raises it."""
        to_zero = self._scales_to_zero
        check_range(
            prop,
            capacity,
            minimum=0 if to_zero else 1,
            fix=None if to_zero else self._SCHEDULED_ZERO_FIX,
        )

    def _check_scheduled_max(self, max_capacity: int | None) -> None:
        """What a scheduled maximum must also fit (the endpoint's instances, the variant's
        limit); nothing beyond the range by default."""

    def _check_one_sided(self, min_capacity: int | None, max_capacity: int | None) -> None:
        """A bound scheduled alone must fit the other one the target has (Application Auto
        Scaling's scheduled scaling: give both "to ensure that the new minimum capacity is not
        greater than the maximum capacity, or the new maximum capacity is not less than the
        minimum capacity")."""
        known = not is_unresolved(self.min_capacity) and not is_unresolved(self.max_capacity)
        if not known:
            return
        if (
            max_capacity is None
            and min_capacity is not None
            and not is_unresolved(min_capacity)
            and min_capacity > self.max_capacity
        ):
            raise ValidationError(
                "min_capacity",
                min_capacity,
                f"is above the target's maximum ({self.max_capacity}), and no max_capacity is "
                "scheduled with it",
                f"pass max_capacity={min_capacity} (or more) in the same scheduled action",
            )
        if (
            min_capacity is None
            and max_capacity is not None
            and not is_unresolved(max_capacity)
            and max_capacity < self.min_capacity
        ):
            raise ValidationError(
                "max_capacity",
                max_capacity,
                f"is below the target's minimum ({self.min_capacity}), and no min_capacity is "
                "scheduled with it",
                f"pass min_capacity={max_capacity} (or less) in the same scheduled action",
            )


@typed_props
class _VariantScaling(_Scaling):
    """A scalable target on one variant of an endpoint (``endpoint/<name>/variant/<variant>``):
    its instance count (``VariantScaling``) or provisioned concurrency (``ServerlessScaling``),
    between bounds the caller passed as ``min_<unit>`` and ``max_<unit>``."""

    _DIMENSION: ClassVar[str]
    _UNIT: ClassVar[str]

    def __init__(
        self, scope: Construct, id: str, endpoint: IEndpoint, variant: str, bounds: tuple[int, int]
    ) -> None:
        minimum, maximum = bounds
        super().__init__(
            scope,
            id,
            resource_id=f"endpoint/{endpoint.endpoint_name}/variant/{variant}",
            scalable_dimension=self._DIMENSION,
            min_capacity=minimum,
            max_capacity=maximum,
            min_prop=f"min_{self._UNIT}",
            max_prop=f"max_{self._UNIT}",
            depends_on=_explicit_dependency(
                endpoint.endpoint_name, getattr(endpoint, "resource", None)
            ),
        )
        self.endpoint = endpoint
        """The endpoint whose variant scales."""
        self.variant_name = variant
        """The variant scaled."""


@typed_props
class _RequestScaling(_Scaling):
    """A scalable target whose capacity serves requests: target tracking on SageMaker's
    predefined per-copy (component) or per-instance (variant) request metrics."""

    _CONCURRENT_REQUESTS_METRIC: ClassVar[PredefinedMetric]
    _INVOCATIONS_METRIC: ClassVar[PredefinedMetric]

    def scale_on_concurrent_requests(
        self, *, target: float, **options: Unpack[TargetTrackingOptions]
    ) -> TargetTrackingPolicy:
        """Hold in-flight requests (streaming included) per copy of a component, or per model
        of a variant, at ``target`` (high resolution: 10 s x 3 = 30 s to notice).

        :param target: concurrent requests per copy or model, e.g. the benchmark's knee; > 0
            or a token.
        :param options: cooldowns and ``disable_scale_in`` (``TargetTrackingOptions``).
        """
        self._check_request_metrics_published("scale_on_concurrent_requests")
        return self._track(
            "ConcurrentRequestsPolicy", self._CONCURRENT_REQUESTS_METRIC, target, **options
        )

    def scale_on_invocations(
        self, *, target: float, **options: Unpack[TargetTrackingOptions]
    ) -> TargetTrackingPolicy:
        """Hold requests per minute per copy of a component, or per instance of a variant, at
        ``target`` (standard resolution: 60 s x 3 = 3 minutes to notice).

        :param target: invocations per copy or instance per minute; > 0 or a token.
        :param options: cooldowns and ``disable_scale_in`` (``TargetTrackingOptions``).
        """
        self._check_request_metrics_published("scale_on_invocations")
        return self._track("InvocationsPolicy", self._INVOCATIONS_METRIC, target, **options)

    def _check_request_metrics_published(self, method: str) -> None:
        """An asynchronous endpoint's requests go through its queue: the per-instance request
        metrics these policies track are not published for it, so they would never scale
        (developer guide, "Autoscale an asynchronous endpoint": track
        ``ApproximateBacklogSizePerInstance``)."""
        endpoint = getattr(self, "endpoint", None)
        if isinstance(endpoint, Construct) and getattr(endpoint, "async_inference", None):
            raise ValidationError(
                method,
                endpoint.node.path,
                "the endpoint is asynchronous: SageMaker publishes no per-instance request "
                "metrics for it, so this policy would never scale",
                "scale it on its queue with AsyncScaling(...).scale_on_backlog(...)",
            )


@typed_props
class ComponentScaling(_RequestScaling):
    """Scale the copy count of an inference component (``DesiredCopyCount``).

    Register bounds here, then add policies: ``scale_on_concurrent_requests`` (high-resolution,
    the fastest to notice load), ``scale_on_invocations``, ``scale_on_metric`` (step scaling),
    ``scale_on_schedule``. ``min_copies=0`` adds the scale-from-zero recipe and needs the
    endpoint's managed instance scaling to allow 0 instances.

    Example::

        scaling = ComponentScaling(self, "Scaling", component=component, max_copies=8)
        scaling.scale_on_concurrent_requests(target=4)
    """

    _CONCURRENT_REQUESTS_METRIC = (
        PredefinedMetric.INFERENCE_COMPONENT_CONCURRENT_REQUESTS_PER_COPY_HIGH_RESOLUTION
    )
    _INVOCATIONS_METRIC = PredefinedMetric.INFERENCE_COMPONENT_INVOCATIONS_PER_COPY
    _SCHEDULED_ZERO_FIX = (
        "schedule at least 1 copy, or construct the ComponentScaling with min_copies=0 "
        "(endpoint min_instance_count=0): 0 copies need the scale-from-zero policy, or the "
        "component stays at 0 when requests return"
    )

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        component: IInferenceComponent,
        max_copies: int,
        min_copies: int = 1,
    ) -> None:
        """
        :param component: the component whose copies scale (created here or imported).
        :param max_copies: most copies (at least 1). Managed instance scaling must be able to
            place them beside the endpoint's other components: more than its
            max_instance_count instances hold is a ValidationError.
        :param min_copies: fewest copies; default 1. 0 scales to zero when idle and adds the
            scale-from-zero policy and alarm; it needs the endpoint's ``min_instance_count=0``.
        """
        name = component.inference_component_name
        # Before the endpoint records max_copies as placed (check_copies): a scaling refused
        # for its own bounds or a duplicate target leaves no count behind.
        _check_capacity_range(min_copies, max_copies, "min_copies", "max_copies")
        _check_unique(scope, id, f"inference-component/{name}", COPY_COUNT_DIMENSION)
        to_zero = min_copies == 0 and not is_unresolved(min_copies)
        endpoint_checked = _check_endpoint_allows_zero(component) if to_zero else True
        _check_component(component, max_copies)
        deployment = getattr(component, "deployment", None)
        if isinstance(deployment, RollingDeployment):
            deployment.check_batch_size(
                "component.deployment", min_copies, "copy count", "min_copies"
            )
        # Last: the endpoint remembers an accepted maximum (a refused scaling leaves none).
        if isinstance(component.endpoint, EndpointBase) and isinstance(component, Construct):
            component.endpoint.check_copies(component, max_copies, "max_copies")
        default_child = component.node.default_child if isinstance(component, Construct) else None
        super().__init__(
            scope,
            id,
            resource_id=f"inference-component/{name}",
            scalable_dimension=COPY_COUNT_DIMENSION,
            min_capacity=min_copies,
            max_capacity=max_copies,
            min_prop="min_copies",
            max_prop="max_copies",
            depends_on=_explicit_dependency(name, default_child),
        )
        self.component = component
        """The component scaled."""
        self.min_copies = min_copies
        """Fewest copies."""
        self.max_copies = max_copies
        """Most copies."""
        self.scale_from_zero: ScaleFromZeroPolicy | None = None
        """The scale-from-zero policy and alarm when ``min_copies`` is 0, else None."""
        if is_unresolved(min_copies):
            Annotations.of(self).add_warning_v2(
                "cdk-sagemaker-llm:min-copies-unknown",
                "min_copies is a deploy-time value: if it is 0 at deploy, the component scales "
                "in to no copies and never comes back, because the scale-from-zero policy and "
                "alarm are added only for a min_copies of 0 known at synth. Pass 0 or a number.",
            )
        if not endpoint_checked:
            Annotations.of(self).add_warning_v2(
                "cdk-sagemaker-llm:scale-to-zero-unverified",
                "min_copies=0: the component's endpoint is imported, so its managed instance "
                "scaling could not be checked; scale to zero needs MinInstanceCount 0 on it.",
            )
        if to_zero:
            self.scale_from_zero = ScaleFromZeroPolicy(
                self,
                "ScaleFromZero",
                scaling_target=self._target_ref,
                inference_component_name=name,
            )
            self.policies.append(self.scale_from_zero)
            self._require_scale_in(
                ValidationError(
                    "min_copies",
                    0,
                    "scale to zero needs a policy that scales in, but this component has none, "
                    "so it would never reach 0 copies",
                    "call scale_on_invocations(target=...) or scale_on_concurrent_requests("
                    "target=...) on it, or give a step policy a step with a negative change",
                )
            )

    def _check_scheduled_max(self, max_capacity: int | None) -> None:
        """Managed instance scaling must be able to place the scheduled maximum of copies, as
        it must ``max_copies``; once accepted, the endpoint counts this component at that
        maximum when it checks the components added after it."""
        component = self.component
        if max_capacity is None or is_unresolved(max_capacity):
            return
        if not is_unresolved(self.max_copies) and max_capacity <= self.max_copies:
            return
        if isinstance(component.endpoint, EndpointBase) and isinstance(component, Construct):
            component.endpoint.check_copies(component, max_capacity, "max_capacity")

    @property
    def _scales_to_zero(self) -> bool:
        return self.scale_from_zero is not None


@typed_props
class VariantScaling(_RequestScaling, _VariantScaling):
    """Scale the instance count of a variant of an instance-based endpoint.

    Policies: ``scale_on_invocations`` (per instance), ``scale_on_concurrent_requests``
    (per model, high resolution), ``scale_on_metric`` (step scaling on any metric),
    ``scale_on_schedule``. Inference-component endpoints scale instances themselves (managed
    instance scaling): scale their components with ``ComponentScaling`` instead.
    """

    _CONCURRENT_REQUESTS_METRIC = (
        PredefinedMetric.VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION
    )
    _INVOCATIONS_METRIC = PredefinedMetric.VARIANT_INVOCATIONS_PER_INSTANCE
    _DIMENSION = INSTANCE_COUNT_DIMENSION
    _UNIT = "instances"
    _SCALES_ASYNC: ClassVar[bool] = False
    """Whether this class scales asynchronous endpoints (``AsyncScaling`` does)."""
    _SCHEDULED_ZERO_FIX = (
        "schedule at least 1 instance; variants cannot scale to zero (asynchronous endpoints "
        "do, with AsyncScaling(min_instances=0))"
    )

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: IEndpoint,
        max_instances: int,
        min_instances: int = 1,
        variant_name: str | None = None,
    ) -> None:
        """
        :param endpoint: an instance-based ``Endpoint``, or an imported endpoint.
        :param max_instances: most instances of the variant (at least 1).
        :param min_instances: fewest instances; default 1 (variants cannot scale to zero).
        :param variant_name: the variant scaled; default the endpoint's first variant.
        """
        self._check_min_instances(min_instances)
        if (
            not self._SCALES_ASYNC
            and isinstance(endpoint, Construct)
            and getattr(endpoint, "async_inference", None) is not None
        ):
            raise ValidationError(
                "endpoint",
                endpoint.node.path,
                "is asynchronous (async_inference): instance scaling on request metrics never "
                "sees its queued requests",
                "use AsyncScaling(endpoint=..., max_instances=...) and scale_on_backlog",
            )
        variant = variant_name or endpoint.default_variant_name
        if isinstance(endpoint, EndpointBase):
            endpoint.check_variant_scaling(variant, min_instances, max_instances)
        super().__init__(scope, id, endpoint, variant, (min_instances, max_instances))
        self.min_instances = min_instances
        """Fewest instances."""
        self.max_instances = max_instances
        """Most instances."""

    @staticmethod
    def _check_min_instances(min_instances: int) -> None:
        check_range(
            "min_instances",
            min_instances,
            minimum=1,
            fix="keep at least 1 instance; scale to zero is for inference components "
            "(ComponentScaling with min_copies=0) and asynchronous endpoints (AsyncScaling)",
        )


_UTC_NAMES = frozenset({"UTC", "Etc/UTC", "GMT", "Etc/GMT"})


def _check_time_zone(schedule: appscaling.Schedule, time_zone: TimeZone | None) -> None:
    """``Schedule.at(moment)`` writes the moment's UTC wall-clock time
    (``at(yyyy-mm-ddThh:mm:ss)``), and Application Auto Scaling reads an ``at`` expression in
    the scheduled action's ``Timezone`` (API reference, ``PutScheduledAction``: "Timezone:
    the time zone used when setting a scheduled action by using an at or cron expression"):
    another zone would move the action by that zone's offset."""
    if time_zone is None or time_zone.timezone_name in _UTC_NAMES:
        return
    expression = schedule.expression_string
    if is_unresolved(expression) or not expression.startswith("at("):
        return
    raise ValidationError(
        "time_zone",
        time_zone.timezone_name,
        f"the one-time schedule {expression} is the moment's time in UTC (Schedule.at writes "
        "it so), and Application Auto Scaling reads an at() expression in the action's time "
        f"zone: it would run at that wall-clock time in {time_zone.timezone_name}, not at the "
        "moment given",
        "drop time_zone for Schedule.at (its datetime, with its tzinfo, already names the "
        "instant); time_zone is for cron(...) schedules",
    )


def _check_unique(scope: Construct, id: str, resource_id: str, dimension: str) -> None:
    """Application Auto Scaling allows one scalable target per resource and dimension."""
    for construct in Stack.of(scope).node.find_all():
        if (
            isinstance(construct, _Scaling)
            and construct.resource_id == resource_id
            and construct.scalable_dimension == dimension
        ):
            raise ValidationError(
                "scope/id",
                f"{scope.node.path}/{id}",
                f"{construct.node.path} already registers a scalable target for "
                f"{resource_id}; Application Auto Scaling allows one per resource and "
                "dimension",
                f"add the policies to {construct.node.path} instead of creating another",
            )


def _check_capacity_range(
    min_capacity: int, max_capacity: int, min_prop: str, max_prop: str
) -> None:
    """Whole numbers, at least 0 and 1, the minimum not above the maximum."""
    for prop, value in ((min_prop, min_capacity), (max_prop, max_capacity)):
        if not is_unresolved(value) and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValidationError(prop, value, "must be a whole number", f"pass an int {prop}")
    check_range(min_prop, min_capacity, minimum=0)
    check_range(max_prop, max_capacity, minimum=1)
    known = not is_unresolved(min_capacity) and not is_unresolved(max_capacity)
    if known and min_capacity > max_capacity:
        raise ValidationError(
            f"{min_prop}/{max_prop}",
            (min_capacity, max_capacity),
            f"{min_prop} must not exceed {max_prop}",
            f"raise {max_prop} to at least {min_capacity} or lower {min_prop}",
        )


def _explicit_dependency(name: str, resource: object) -> CfnResource | None:
    """The resource to depend on unless the ResourceId's name already refers to it (a Ref or
    GetAtt orders the target after it): a literal name, or a token from elsewhere (a
    CfnParameter), names the resource without ordering anything."""
    if not isinstance(resource, CfnResource):
        return None
    if is_unresolved(name):
        stack = Stack.of(resource)
        logical_id = stack.resolve(resource.logical_id)
        if f'"{logical_id}"' in json.dumps(stack.resolve(name)):
            return None
    return resource


def _check_endpoint_allows_zero(component: IInferenceComponent) -> bool:
    """Raise when the endpoint keeps instances; False when it cannot be checked (imported)."""
    endpoint = component.endpoint
    return isinstance(endpoint, EndpointBase) and endpoint.check_scale_to_zero()


def _check_component(component: IInferenceComponent, max_copies: int) -> None:
    resource = component.node.default_child if isinstance(component, Construct) else None
    if isinstance(resource, sagemaker.CfnInferenceComponent) and resource.runtime_config is None:
        raise ValidationError(
            "component",
            resource.node.path,
            "an adapter (base_component) has no copies of its own: it runs in its base "
            "component's copies",
            "scale the base component instead",
        )
    copy_count = getattr(component, "copy_count", None)
    if (
        isinstance(copy_count, int)
        and isinstance(max_copies, int)
        and not is_unresolved(copy_count)
        and not is_unresolved(max_copies)
        and copy_count > max_copies
    ):
        raise ValidationError(
            "max_copies",
            max_copies,
            f"is below the component's copy_count ({copy_count}); the first scaling action "
            "would remove copies right after the deployment",
            f"raise max_copies to at least {copy_count} or lower the component's copy_count",
        )
